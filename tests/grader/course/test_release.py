import pytest

import shutil

from grader.config import load_course
from grader.course.release import release

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


def test_a_release_that_fails_leaves_the_assignments_as_they_were(course, course_copy, monkeypatch):
    """Run without nbgrader's tools on PATH, `grade release` emptied 01's folder and stopped: every
    notebook is generated aside first, and a failure changes nothing."""
    from grader.errors import GraderError

    folder = course_copy.layout.assignments / "01_attention_basics"
    shutil.copytree(course.layout.assignments / "01_attention_basics", folder)
    before = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    assert before

    def failing(course, assignments, release_root):
        (release_root / "01_attention_basics").mkdir(parents=True, exist_ok=True)
        (release_root / "01_attention_basics" / "half.ipynb").write_text("{}")
        raise GraderError("nbgrader could not generate 01_attention_basics: (a missing tool)")

    monkeypatch.setattr("grader.course.notebooks.generate_release_notebooks", failing)
    with pytest.raises(GraderError):
        release(course_copy, course_copy.assignments, check=False)
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()} == before
