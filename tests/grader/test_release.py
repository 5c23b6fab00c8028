import pytest

from grader.release import MarkerError, release_modules, stub_source

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


def test_the_committed_stubs_are_up_to_date(course):
    assert release_modules(course, course.assignments, check=True) == []


def test_a_stale_stub_is_reported_and_then_regenerated(course, tmp_path):
    import shutil

    root = tmp_path / "course"
    shutil.copytree(course.root / "solutions", root / "solutions", ignore=shutil.ignore_patterns("*.ipynb"))
    shutil.copy(course.root / "course.toml", root)
    from grader.config import load_course

    copy = load_course(root)
    stale = release_modules(copy, copy.assignments, check=True)
    assert len(stale) == 5 and all(s.reason == "missing" for s in stale)
    release_modules(copy, copy.assignments, check=False)
    assert release_modules(copy, copy.assignments, check=True) == []
    target = root / "assignments" / "01_attention_basics" / "attention_basics.py"
    target.write_text(target.read_text() + "\n# edited\n")
    assert [s.path for s in release_modules(copy, copy.assignments, check=True)] == [target]
