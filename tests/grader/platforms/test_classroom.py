"""GitHub Classroom's notices (grader/platforms/classroom.py, `grade classroom`)."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from grader.platforms.classroom import classroom_notices
from grader.cli import cli

ROOT = Path(__file__).resolve().parents[3]


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


def test_the_classroom_workflow_scores_a_week_out_of_its_points_not_the_courses(tmp_path):
    """Classroom showed "37.35/600" for a week of 100 (issue 45): the workflow graded all six assignments.
    Its Points step, run as CI runs it: a repository of 01 and 02 is scored out of their 200 (what it holds),
    and with the workflow's ASSIGNMENTS set to the week, out of that week's 100."""
    yaml = pytest.importorskip("yaml")  # PyYAML comes with the test extras (nbgrader requires it)
    template = ROOT / "templates" / "distribution" / ".github" / "workflows" / "classroom.yml"
    workflow = yaml.safe_load(template.read_text())
    (step,) = [s for s in workflow["jobs"]["run-autograding-tests"]["steps"] if s.get("id") == "grade"]
    for name in ("course.toml", "solutions", "suites"):
        (tmp_path / name).symlink_to(ROOT / name)
    for assignment in ("01_attention_basics", "02_self_attention"):
        shutil.copytree(ROOT / "solutions" / assignment, tmp_path / "assignments" / assignment,
                        ignore=shutil.ignore_patterns("*.ipynb"))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "grade").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m grader "$@"\n')
    (bin_dir / "grade").chmod(0o755)
    for week, points in (("", "200/200"), ("01_attention_basics", "100/100")):
        env = {**os.environ, **workflow["env"], "ASSIGNMENTS": week, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
        ran = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]], cwd=tmp_path,
                             capture_output=True, text=True, timeout=300, env=env)
        assert ran.returncode == 0, ran.stderr
        assert ran.stdout.splitlines()[0] == f"::notice title=Autograding complete::Points {points}", ran.stdout
