"""The suite-facing API of grader/harness.py, on paths the other tests do not take."""
from pathlib import Path

from grader.harness import Grade
from grader.submission import resolve_submission

ROOT = Path(__file__).resolve().parents[2]


def test_half_precision_checks_pass_the_solutions_and_catch_an_unstable_softmax(course, grader, submission_dir,
                                                                                monkeypatch):
    # the float16/bfloat16 checks run on CUDA only; on this CPU we lift that gate to exercise them
    monkeypatch.setattr(Grade, "needs_cuda", lambda self: None)
    chosen = course.assignments
    result = grader.grade(resolve_submission(ROOT / "solutions", course), chosen, seed=31)
    half = [(a.id, e.name, c.name, c.status) for a in result.assignments for e in a.exercises for c in e.checks
            if c.name.endswith("half_precision")]
    assert len(half) == 12 and all(status == "passed" for *_, status in half), half
    module = submission_dir / "01_attention_basics" / "attention_basics.py"
    module.write_text(module.read_text().replace("x_max = x.amax(dim=dim, keepdim=True)  # [..., 1, ...]",
                                                 "x_max = x.amax(dim=dim, keepdim=True) * 0"))
    broken = grader.grade(resolve_submission(submission_dir, course), chosen[:1], seed=31)
    softmax = next(e for e in broken.assignments[0].exercises if e.name == "softmax")
    assert any(c.name == "softmax_half_precision" and c.status == "failed" for c in softmax.checks)


def test_checks_for_cuda_only_are_skipped_without_costing_points(solutions_result):
    names = [c.name for a in solutions_result.assignments for e in a.exercises for c in e.checks]
    assert not any(name.endswith("half_precision") for name in names)
    assert solutions_result.score == 500
