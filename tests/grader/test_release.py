import pytest

import shutil

from grader.config import load_course
from grader.release import release

@pytest.mark.nbgrader
def test_the_committed_assignments_are_up_to_date_and_leak_nothing(course):
    assert release(course, course.assignments, check=True) == []


@pytest.fixture
def course_copy(course, tmp_path):
    root = tmp_path / "course"
    shutil.copytree(course.root / "solutions" / "01_attention_basics", root / "solutions" / "01_attention_basics")
    shutil.copy(course.root / "course.toml", root)
    return load_course(root)


@pytest.mark.nbgrader
def test_release_writes_stub_and_notebook_and_check_reports_what_drifts(course_copy):
    basics = (course_copy.assignment("01_attention_basics"),)
    stale = release(course_copy, basics, check=True)
    assert {s.path.name for s in stale} == {"attention_basics.py", "attention_basics.ipynb"}
    assert all(s.reason == "missing" for s in stale)
    release(course_copy, basics, check=False)
    assert release(course_copy, basics, check=True) == []
    folder = course_copy.root / "assignments" / "01_attention_basics"
    notebook = (folder / "attention_basics.ipynb").read_text()
    assert "### BEGIN SOLUTION" not in notebook and "### BEGIN HIDDEN TESTS" not in notebook
    assert "raise NotImplementedError" in notebook
    target = folder / "attention_basics.py"
    target.write_text(target.read_text() + "\n# edited\n")
    (folder / "notes.txt").write_text("mine")
    assert {(s.path.name, s.reason.split()[0]) for s in release(course_copy, basics, check=True)} == {
        ("attention_basics.py", "differs"), ("notes.txt", "is")}
