"""Grading on CUDA (skipped, and reported as skipped, where there is no GPU)."""
from pathlib import Path

import pytest

from grader.submission import resolve_submission

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.gpu
def test_the_solutions_get_full_marks_on_cuda(course):
    from grader.grading.grader import Grader

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
    from grader.grading.grader import pick_device

    assert pick_device("auto") == "cuda"


# a helper's mistake in these costs its own exercise only, on CUDA as on the CPU: the half-precision cases
# blame the helper too, and a helper that leaves its result on the CPU is blamed once the grader has seen
# the exercise right on the CPU (the CPU copies of these cases are in tests/grader/grading/test_diagnose.py)
ONCE_ON_CUDA = ["wrong-scale/hand_written_eighth", "missing-scale/plain_softmax_of_scores",
                "scores-transposed/keys_times_queries", "wrong-dtype/blind_01_attention_scores_float_cast",
                "wrong-device/mask_on_cpu", "wrong-device/blind_03_padding_mask_arange_on_cpu"]


@pytest.mark.gpu
def test_a_helper_s_mistake_costs_once_on_cuda(course, tmp_path):
    import importlib.util
    import sys

    from grader.grading.grader import Grader

    spec = importlib.util.spec_from_file_location("corpus", ROOT / "tests" / "corpus" / "corpus.py")
    corpus = sys.modules["corpus"] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(corpus)
    entries = [e for e in corpus.mistakes() if e.name in ONCE_ON_CUDA]
    assert len(entries) == len(ONCE_ON_CUDA)
    cuda = Grader(course, device="cuda")
    try:
        results = corpus.grade_all(entries, course, cuda, tmp_path)
    finally:
        cuda.close()
    charged = {e.name: [(x.name, x.feedback[:300]) for x in results[e.name][1].exercises
                        if x.score < x.max_score and x.name != e.exercise] for e in entries}
    assert charged == {e.name: [] for e in entries}
    assert all(e.misconception in results[e.name][0].misconceptions for e in entries)
