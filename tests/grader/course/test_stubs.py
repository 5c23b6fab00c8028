"""Stubs generated from the reference (grader/course/stubs.py)."""
import pytest

from grader.course.stubs import MarkerError, stub_source

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
