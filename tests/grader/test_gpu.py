"""Grading on CUDA (skipped, and reported as skipped, where there is no GPU)."""
from pathlib import Path

import pytest

from grader.submission import resolve_submission

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.gpu
def test_the_solutions_get_full_marks_on_cuda(course):
    from grader.grading.run import Grader

    grader = Grader(course, device="cuda")
    try:
        result = grader.grade(resolve_submission(ROOT / "solutions", course), course.assignments, seed=77)
    finally:
        grader.close()
    assert result.device == "cuda"
    failing = [(a.id, e.name, e.feedback) for a in result.assignments for e in a.exercises if e.status != "passed"]
    assert failing == []


@pytest.mark.gpu
def test_auto_picks_cuda_when_present():
    from grader.grading.run import pick_device

    assert pick_device("auto") == "cuda"
