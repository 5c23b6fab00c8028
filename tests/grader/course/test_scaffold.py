"""`grade new-exercise` (grader/course/scaffold.py): a new exercise in every file that needs one, graded at once."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grader.config import load_course
from grader.errors import UsageError
from grader.course.scaffold import new_exercise
from grader.course.stubs import stub_source

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def course_copy(tmp_path):
    folder = tmp_path / "course"
    folder.mkdir()
    shutil.copy(ROOT / "course.toml", folder)
    for name in ("solutions", "suites"):
        shutil.copytree(ROOT / name, folder / name, ignore=shutil.ignore_patterns("__pycache__", "*.pt"))
    return load_course(folder)


def grade_json(course, submission: Path) -> dict:
    """`grade check` of assignment 01 in a process of its own (pytest imports a suite once per process)."""
    ran = subprocess.run([sys.executable, "-m", "grader", "--course", str(course.root), "check", "01_attention_basics",
                          "--submission", str(submission), "--format", "json"], capture_output=True, text=True)
    assert ran.returncode in (0, 1), ran.stderr
    return json.loads(ran.stdout)


def test_a_new_exercise_is_in_every_file_and_graded_with_its_placeholder_mistake(course_copy, tmp_path):
    done = new_exercise(course=course_copy, assignment_id="01_attention_basics", name="double_scores", points=5)
    assert (done.points, done.total, len(done.files)) == (5.0, 105.0, 5)
    course = load_course(course_copy.root)
    assert course.assignment("01_attention_basics").points[-1] == ("double_scores", 5.0)
    module = course.layout.solution_module(course.assignment("01_attention_basics"))
    assert 'raise NotImplementedError("double_scores is not implemented yet")' in stub_source(module.read_text())
    notebook = json.loads(course.layout.solution_notebook(course.assignment("01_attention_basics")).read_text())
    grade_cell = notebook["cells"][-1]
    assert grade_cell["metadata"]["nbgrader"]["grade"] is True and grade_cell["metadata"]["nbgrader"]["points"] == 5
    assert "### BEGIN SOLUTION" in "".join(notebook["cells"][-2]["source"])

    right = grade_json(course, course.layout.solutions)  # the reference it wrote scores full marks
    assert (right["score"], right["max_score"]) == (105, 105)
    student = tmp_path / "student" / "01_attention_basics"
    shutil.copytree(course.layout.solution_folder(course.assignment("01_attention_basics")), student)
    (student / "attention_basics.py").write_text((student / "attention_basics.py").read_text()
                                                 + "\n\ndef double_scores(x):\n    return x * 2\n")
    wrong = grade_json(course, student.parent)
    exercises = {e["name"]: e for e in wrong["assignments"][0]["exercises"]}
    assert exercises["double_scores"]["score"] == 0 and "the input doubled" in exercises["double_scores"]["feedback"]
    assert all(e["status"] == "passed" for name, e in exercises.items() if name != "double_scores")


def test_a_name_taken_or_not_an_identifier_is_refused_and_nothing_is_written(course_copy):
    before = (course_copy.root / "course.toml").read_text()
    for name in ("softmax", "not-a-name", "test_x"):
        with pytest.raises(UsageError):
            new_exercise(course=course_copy, assignment_id="01_attention_basics", name=name)
    with pytest.raises(UsageError):
        new_exercise(course=course_copy, assignment_id="09_nothing", name="fine")
    assert (course_copy.root / "course.toml").read_text() == before


def test_grade_new_exercise_says_what_it_wrote(course_copy):
    ran = subprocess.run([sys.executable, "-m", "grader", "--course", str(course_copy.root), "new-exercise",
                          "02_self_attention", "attention_entropy", "--points", "10"], capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    assert "attention_entropy" in ran.stdout and "110" in ran.stdout and "grade release" in ran.stdout
    assert "attention_entropy" in load_course(course_copy.root).assignment("02_self_attention").exercises


@pytest.mark.nbgrader
def test_grade_release_then_gives_students_its_stub_and_notebook_cells(course_copy, released):
    shutil.copytree(released, course_copy.root / "assignments")  # what release writes: never the live ones
    shutil.copy(ROOT / "assignments" / ".grade-release.sha256", course_copy.root / "assignments")  # its record
    shutil.copy(ROOT / "nbgrader_config.py", course_copy.root)
    new_exercise(course=course_copy, assignment_id="01_attention_basics", name="double_scores")
    ran = subprocess.run([sys.executable, "-m", "grader", "--course", str(course_copy.root), "release",
                          "01_attention_basics"], capture_output=True, text=True, cwd=course_copy.root)
    assert ran.returncode == 0, ran.stderr
    released = course_copy.root / "assignments" / "01_attention_basics"
    assert 'raise NotImplementedError("double_scores is not implemented yet")' in \
        (released / "attention_basics.py").read_text()
    cells = json.loads((released / "attention_basics.ipynb").read_text())["cells"]
    sources = ["".join(c["source"]) for c in cells]
    assert 'check("double_scores")' in sources[-1] and "x.clone()" not in "\n".join(sources)
