"""GitHub Classroom's notices (grader/platforms/classroom.py, `grade classroom`)."""
import json

from click.testing import CliRunner

from grader.platforms.classroom import classroom_notices
from grader.cli import cli


def test_the_classroom_notices_carry_partial_points():
    assert classroom_notices({"score": 17.5, "max_score": 35.0, "assignments": []}) == [
        "::notice title=Autograding complete::Points 17.5/35",
        '::notice title=Autograding report::{"totalPoints": 17.5, "maxPoints": 35}']


def test_grade_classroom_prints_them_from_a_result_file_and_names_a_bad_one(tmp_path):
    result = tmp_path / "grade.json"
    result.write_text(json.dumps({"score": 500.0, "max_score": 500.0, "assignments": []}))
    ran = CliRunner().invoke(cli, ["classroom", str(result)])
    assert ran.exit_code == 0 and ran.output.splitlines() == [
        "::notice title=Autograding complete::Points 500/500",
        '::notice title=Autograding report::{"totalPoints": 500, "maxPoints": 500}']
    (tmp_path / "broken.json").write_text("{not json")
    ran = CliRunner().invoke(cli, ["classroom", str(tmp_path / "broken.json")])
    assert ran.exit_code == 2 and "broken.json" in ran.output and "Traceback" not in ran.output


def test_a_result_of_a_submission_that_could_not_be_read_gives_classroom_no_points(tmp_path, course):
    """Issue 45: no points notice (Classroom would keep a 0) for a result that holds no score; one line, exit 2."""
    from grader.batch.autograde import failed_result

    data = failed_result(course.assignments[:1], "jo", "error", "jo.zip is not a valid .zip file (BadZipFile)", 1)
    result = tmp_path / "grade.json"
    result.write_text(json.dumps(data.to_json()))
    ran = CliRunner().invoke(cli, ["classroom", str(result)])
    assert ran.exit_code == 2 and "::notice" not in ran.output and "Traceback" not in ran.output
    assert "could not be read" in ran.output and "jo.zip is not a valid .zip file" in ran.output
    crashed = failed_result(course.assignments[:1], "kim", "crashed", "crashed the grader twice", 1).to_json()
    assert classroom_notices(crashed)[0] == "::notice title=Autograding complete::Points 0/100"  # its code ran
