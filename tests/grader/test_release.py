import pytest

import shutil

from grader.config import load_course
from grader.release import MarkerError, leaks, release, stub_source

SOLUTION = '''import torch


def f(x):
    """Doc."""
    ### BEGIN SOLUTION
    return x + 1
    ### END SOLUTION


class M(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        ### BEGIN SOLUTION
        self.w = torch.nn.Parameter(torch.ones(n))
        ### END SOLUTION
'''


def test_a_stub_keeps_signatures_and_docstrings_and_raises():
    stub = stub_source(SOLUTION)
    assert "return x + 1" not in stub and "self.w" not in stub
    assert 'raise NotImplementedError("f is not implemented yet")' in stub
    assert 'raise NotImplementedError("M.__init__ is not implemented yet")' in stub
    assert '"""Doc."""' in stub and "super().__init__()" in stub
    namespace = {}
    exec(stub, namespace)
    with pytest.raises(NotImplementedError):
        namespace["f"](1)


@pytest.mark.parametrize("text,message", [
    ("### BEGIN SOLUTION\nx = 1\n", "never closed"),
    ("x = 1\n### END SOLUTION\n", "without"),
    ("### BEGIN SOLUTION\n### BEGIN SOLUTION\n### END SOLUTION\n", "inside another"),
])
def test_unpaired_markers_are_errors(text, message):
    with pytest.raises(MarkerError, match=message):
        stub_source(text)


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


def test_leaks_of_solutions_hidden_tests_and_reference_paths_are_found(tmp_path):
    (tmp_path / "a.py").write_text("### BEGIN SOLUTION\n")
    (tmp_path / "b.ipynb").write_text('{"source": "### BEGIN HIDDEN TESTS"}')
    (tmp_path / "c.py").write_text("open('../solutions/01/x.py')")
    (tmp_path / "d.py").write_text("print('fine')")
    assert [s.path.name for s in leaks(tmp_path)] == ["a.py", "b.ipynb", "c.py"]
