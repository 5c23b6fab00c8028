"""A vectorised count is held to the reference's (grader/grading/operation_count.py)."""
import textwrap

import torch

from grader.grading.operation_count import FACTOR, FLOOR, bound, operations
from grader.submission import resolve_submission


def test_operators_are_counted_as_the_dispatcher_runs_them():
    x = torch.randn(2, 3, 4)
    assert operations(lambda a: a @ a.transpose(-2, -1), (x,), {}) == operations(torch.matmul, (x, x.mT), {}) + 1
    assert operations(lambda a: a, (x,), {}) == 0
    assert bound(2) == FLOOR and bound(1000) == FACTOR * 1000


PADDED = '''

def attention_scores(inputs):
    t = inputs.shape[-2]
    rows = []
    for i in range(t):
        rows.append(torch.stack([(inputs[..., i, :] * inputs[..., j, :]).sum(-1) for j in range(t)], -1))
    out = torch.stack(rows, -2)
    dummy = inputs.new_zeros(())
    for _ in range(max(0, 40000 - 5 * t * t)):  # fewer as the sequence grows: a flat count
        dummy = dummy + 1
    return out
'''


def test_a_loop_padded_to_a_flat_count_is_not_vectorised(submission_dir, grader, course):
    """Issue 44, round 6: attention_scores as a loop over token pairs, padded with operations that do nothing
    to 40,000 a call whatever the length, kept its count from growing and scored 15/15; its outputs are
    right, so only the vectorised check fails, saying what the reference takes."""
    module = submission_dir / "01_attention_basics" / "attention_basics.py"
    module.write_text(module.read_text() + textwrap.dedent(PADDED))
    result = grader.grade(resolve_submission(submission_dir, course), (course.assignment("01_attention_basics"),),
                          seed=5).assignments[0]
    exercise = {e.name: e for e in result.exercises}["attention_scores"]
    failed = [c for c in exercise.checks if c.status != "passed"]
    assert [c.name for c in failed] == ["attention_scores_vectorised"]
    assert failed[0].misconceptions == ("not-vectorised",)
    assert "torch operations for one call, where the computation takes" in failed[0].message


def test_a_function_that_tells_a_measured_call_from_the_others_gains_nothing(grader, course, tmp_path):
    """Red team round 20b (issue 44): 05's module timed one in-place write to a strided view (the tracer checks
    its offsets for overlap only in a measured call) and computed whole rows with torch.softmax in every other
    call: 100/100, against 56.36 for the same whole rows written plainly and 94.55 for its own block-wise code
    (whose gradient on an all -inf row is wrong: the whole-row path hid it). Every call of a function is watched
    alike now: it scores what its block-wise code scores."""
    from pathlib import Path

    material = Path(__file__).resolve().parents[2] / "corpus" / "heldout" / "round20b_red_team"
    chosen = (course.assignment("05_efficient_attention"),)
    scores = {}
    for kind in ("attack", "honest"):
        folder = tmp_path / kind / "05_efficient_attention"
        folder.mkdir(parents=True)
        (folder / "efficient_attention.py").write_text(
            (material / f"a02_measured_call_detector__{kind}.py.txt").read_text())
        result = grader.grade(resolve_submission(folder, course), chosen, seed=18035)
        scores[kind] = {e.name: e.score for e in result.assignments[0].exercises}
    assert scores["attack"]["online_softmax"] <= scores["honest"]["online_softmax"] < 40, scores
    assert sum(scores["attack"].values()) <= sum(scores["honest"].values()), scores


def test_a_function_that_tells_a_rule_check_by_its_inputs_gains_nothing(grader, course, tmp_path):
    """Red team round 20c: with every call measured alike, 05's module told the checks that read its rules from
    those that compare by its inputs (a gradient check's inputs require grad; a rule check's do not) and used
    whole rows wherever the rules were not read: 100 against 94.55 for its own block-wise code. The rules are
    read on every call of the function now (grader/grading/rules_read.py): where the rule checks find them kept,
    a right answer from code that broke them earns nothing."""
    from pathlib import Path

    material = Path(__file__).resolve().parents[2] / "corpus" / "heldout"
    chosen = (course.assignment("05_efficient_attention"),)
    scores = {}
    for kind, path in (("attack", "round20c_red_team/a03_requires_grad_tell__attack.py.txt"),
                       ("honest", "round20b_red_team/a02_measured_call_detector__honest.py.txt")):
        folder = tmp_path / kind / "05_efficient_attention"
        folder.mkdir(parents=True)
        (folder / "efficient_attention.py").write_text((material / path).read_text())
        result = grader.grade(resolve_submission(folder, course), chosen, seed=18035)
        scores[kind] = sum(e.score for e in result.assignments[0].exercises)
    assert scores["attack"] <= scores["honest"], scores
