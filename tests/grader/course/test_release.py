import pytest

import shutil
from pathlib import Path

from grader.config import load_course
from grader.course.release import release

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.nbgrader
def test_the_committed_assignments_are_up_to_date_and_leak_nothing(course, released):
    """What release writes now is what its committed record says it last wrote, file for file, and leaks
    nothing. The record, not the files, is compared: a course folder in use holds a student's or an
    instructor's edits in assignments/ (issue 45), which `grade release --check` reports there as it should."""
    import hashlib

    from grader.course.leaks import leaks
    from grader.course.release import RECORD, read_record

    written = {path.relative_to(released).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
               for path in sorted(released.rglob("*")) if path.is_file()}
    assert read_record(course.layout.assignments) == written, f"run `grade release` and commit {RECORD}"
    assert leaks(released) == []


@pytest.fixture
def course_copy(course, tmp_path, course_toml):
    root = tmp_path / "course"
    shutil.copytree(course.root / "solutions" / "01_attention_basics", root / "solutions" / "01_attention_basics")
    course_toml(root)
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


@pytest.fixture
def quick_notebooks(monkeypatch):
    """nbgrader's generation stood in for by a fixed notebook (seconds each release; the notebook's making
    is tested above): what these tests ask is what release does with the files it writes."""
    def generate(course, assignments, release_root):
        for assignment in assignments:
            (release_root / assignment.id).mkdir(parents=True, exist_ok=True)
            (release_root / assignment.id / assignment.notebook).write_text('{"cells": []}\n')

    monkeypatch.setattr("grader.course.notebooks.generate_release_notebooks", generate)


def test_release_writes_into_an_empty_folder_and_over_its_own_stubs_silently_and_records_them(course_copy,
                                                                                             quick_notebooks):
    import hashlib

    from grader.course.release import RECORD, read_record

    basics = (course_copy.assignment("01_attention_basics"),)
    assert release(course_copy, basics, check=False) == []  # assignments/ did not exist
    folder = course_copy.layout.assignments / "01_attention_basics"
    module = folder / "attention_basics.py"
    assert read_record(course_copy.layout.assignments) == {
        f"01_attention_basics/{p.name}": hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()}
    assert release(course_copy, basics, check=False) == []  # over its own, untouched
    (course_copy.layout.assignments / RECORD).unlink()  # a checkout from before the record: what release writes
    assert release(course_copy, basics, check=False) == []
    assert "raise NotImplementedError" in module.read_text() and not (course_copy.root / ".grade-kept").exists()


def test_release_refuses_to_overwrite_edits_naming_them_and_force_keeps_a_copy(course_copy, quick_notebooks):
    """`grade release` overwrote a student's edits in assignments/ without a word (issue 45)."""
    from grader.course.release import WorkWouldBeLost

    basics = (course_copy.assignment("01_attention_basics"),)
    release(course_copy, basics, check=False)
    folder = course_copy.layout.assignments / "01_attention_basics"
    module = folder / "attention_basics.py"
    mine = module.read_text().replace('raise NotImplementedError("softmax', 'return x  # mine\n    raise ("softmax')
    module.write_text(mine)
    (folder / "notes.txt").write_text("my notes")
    (folder / "__pycache__").mkdir()
    (folder / "__pycache__" / "attention_basics.cpython-311.pyc").write_bytes(b"\0")  # no one's work
    with pytest.raises(WorkWouldBeLost) as refused:
        release(course_copy, basics, check=False)
    assert "01_attention_basics/attention_basics.py, 01_attention_basics/notes.txt;" in str(refused.value)
    assert "--force" in str(refused.value) and "\n" not in str(refused.value) and "pycache" not in str(refused.value)
    assert module.read_text() == mine and (folder / "notes.txt").read_text() == "my notes"  # nothing touched
    kept = release(course_copy, basics, check=False, force=True)
    assert sorted(k.original.name for k in kept) == ["attention_basics.py", "notes.txt"]
    copies = kept[0].folder
    assert copies.parent == course_copy.root / ".grade-kept"
    assert (copies / "01_attention_basics" / "attention_basics.py").read_text() == mine
    assert (copies / "01_attention_basics" / "notes.txt").read_text() == "my notes"
    assert "# mine" not in module.read_text() and not (folder / "notes.txt").exists()
    assert release(course_copy, basics, check=False) == []  # what --force wrote is release's own again


def test_a_stub_release_changed_since_is_overwritten_but_an_edit_of_the_old_one_is_not(course_copy, quick_notebooks):
    """The instructor's flow: a solution changes, and release rewrites the stub it wrote before; the same
    change over a stub someone edited is refused."""
    from grader.course.release import WorkWouldBeLost

    basics = (course_copy.assignment("01_attention_basics"),)
    release(course_copy, basics, check=False)
    solution = course_copy.layout.solution_module(basics[0])
    solution.write_text(solution.read_text().replace('"""', '"""Changed. ', 1))
    assert release(course_copy, basics, check=False) == []
    module = course_copy.layout.release_module(basics[0])
    assert "Changed." in module.read_text()
    module.write_text(module.read_text() + "\n# mine\n")
    solution.write_text(solution.read_text().replace("Changed. ", "Changed again. ", 1))
    with pytest.raises(WorkWouldBeLost):
        release(course_copy, basics, check=False)
    assert module.read_text().endswith("# mine\n")


def test_grade_release_says_the_refusal_in_one_line_exit_2_and_where_force_kept_the_copy(course_copy, quick_notebooks):
    from click.testing import CliRunner

    from grader.cli import cli

    def grade(*args):
        return CliRunner().invoke(cli, ["--course", str(course_copy.root), "release", *args, "01_attention_basics"])

    shutil.rmtree(course_copy.root / "suites")  # the misconceptions file alone: the course's suites in its place
    (course_copy.root / "suites").symlink_to(ROOT / "suites")  # a course with its reference: release runs there

    assert grade().exit_code == 0
    module = course_copy.layout.assignments / "01_attention_basics" / "attention_basics.py"
    module.write_text(module.read_text() + "# mine\n")
    refused = grade()
    assert refused.exit_code == 2 and refused.stderr.count("\n") == 1 and "Traceback" not in refused.output
    assert refused.stderr.startswith("grade: error: ") and "01_attention_basics/attention_basics.py" in refused.stderr
    assert grade("--check", "--force").exit_code == 2  # --force writes, or it means nothing
    forced = grade("--force")
    assert forced.exit_code == 0, forced.output
    said = forced.stderr.splitlines()[0]
    assert said.startswith("grade: kept a copy of assignments/01_attention_basics/attention_basics.py in .grade-kept/")
    folder = course_copy.root / said.split(" in ")[-1].split()[0]
    assert (folder / "01_attention_basics" / "attention_basics.py").read_text().endswith("# mine\n")


def test_release_without_nbgrader_says_what_to_install_in_one_line(course_copy, monkeypatch):
    """A newcomer's `grade release` after the Quickstart's first command (no notebook extras) ended in a
    ModuleNotFoundError traceback."""
    import importlib.util

    from grader.course.release import ReleaseNeedsNbgrader

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "nbgrader" else real(name, *a))
    for check in (True, False):
        with pytest.raises(ReleaseNeedsNbgrader, match=r"pip install -e '\.\[notebooks\]'"):
            release(course_copy, course_copy.assignments, check=check)
    assert not (course_copy.root / "assignments").exists()  # nothing written
