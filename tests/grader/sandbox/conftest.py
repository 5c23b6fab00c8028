"""The sandbox's tests grade hostile modules (os._exit, forks, threads, huge replies) to show that the
kernel's boundary holds. Since issue 44 the grading process also refuses the checks that watch a
computation for a file that names os, sys or threading (grader/grading/observable.py; tested in
tests/grader/grading/test_observable.py). Here that first line is set aside (tests/conftest.py's
boundary_alone), so that what these tests assert (an exercise the attack does not touch keeps its points)
shows the boundary holding alone."""
import pytest


@pytest.fixture(autouse=True)
def _boundary_alone(boundary_alone):
    yield
