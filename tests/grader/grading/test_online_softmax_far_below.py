"""online_softmax on a row whose first block is all -inf and whose other entries lie far below float32's
exp range (issue 46; Dao-AILab/flash-attention#2082): an online_softmax that overwrites its running maximum
with the 0 that _shift gives -inf keeps that 0 as the row's maximum, and exp(x - 0) underflows to zeros.
No check built such a row, so it scored 40/40 on every seed; both suites now have one, with the right
answer, and name it (softmax-unstable, said in the terms of the running maximum and the rescale), on
every seed alike, while every correct online_softmax of the corpora keeps full marks."""
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tests" / "corpus"))
import corpus  # noqa: E402

FAR_BELOW = {"hidden": "online_softmax_hidden_first_block_then_far_below",
             "public": "online_softmax_when_the_first_block_is_hidden_and_the_rest_far_below"}
OVERWRITTEN = "softmax-unstable/online_softmax_maximum_overwritten_by_shift"


@pytest.mark.slow
@pytest.mark.parametrize("suite", ["hidden", "public"])
def test_a_running_maximum_overwritten_by_its_shift_is_caught_and_named_on_every_seed(course, grader, tmp_path,
                                                                                       suite):
    entry = next(e for e in corpus.mistakes() if e.name == OVERWRITTEN)
    scores = set()
    for seed in (1, 2, 8, 2024):
        exercise, _ = corpus.grade_all([entry], course, grader, tmp_path / str(seed), seed=seed,
                                       suite=suite)[entry.name]
        failing = [check for check in exercise.checks if check.status != "passed"]
        assert [check.name for check in failing] == [FAR_BELOW[suite]], (seed, exercise.feedback[:600])
        assert exercise.misconceptions == ["softmax-unstable"], (seed, exercise.feedback[:600])
        said = failing[0].message
        assert "running maximum is overwritten by its _shift-ed value" in said and "m = m_new" in said, said
        assert "exp(m_old - _shift(m_new))" in said, said
        scores.add(exercise.score)
    assert len(scores) == 1 and scores.pop() < 40, scores


def styles():
    """The correct styles of test_online_softmax_blocks.py (a running log-sum-exp from the dtype's lowest value
    among them), besides the corpora's."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("online_softmax_blocks", Path(__file__).with_name(
        "test_online_softmax_blocks.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.CORRECT


@pytest.mark.slow
@pytest.mark.parametrize("suite", ["hidden", "public"])
def test_every_correct_online_softmax_keeps_full_marks(course, grader, tmp_path, suite):
    entries = [e for e in corpus.correct() + corpus.learner("correct") if e.exercise == "online_softmax"]
    assert len(entries) >= 6
    for number, source in enumerate(styles().values()):
        path = tmp_path / f"style_{number}.py"
        path.write_text(textwrap.dedent(source))
        entries.append(corpus._entry(path, None))
    for seed in (3, 2024):
        results = corpus.grade_all(entries, course, grader, tmp_path / str(seed), seed=seed, suite=suite, quick=True)
        lost = {name: exercise.feedback[:400] for name, (exercise, _) in results.items()
                if exercise.status != "passed"}
        assert lost == {}, (seed, lost)
