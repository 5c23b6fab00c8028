"""flash_attention's block rule (issue 46; docs/course-spec.md, "Block rules are read from the code as it
runs"): no operation reduces over more than ``block_size`` entries of the key dimension at once, "a
query-block loop that takes a softmax over every key at once is not flash-style, whatever its memory".
Such a loop stays within the memory bound and scored 60/60; the check that watches its operators now
takes the block checks' points on both suites (lesson.checks_05.expect_key_tiles), in one line in the
exercise's terms, and every correct flash_attention of the corpora (blind, ports, learners) keeps full marks."""
import sys
from pathlib import Path

import pytest
import torch

from grader.inside.tracer import make_tracer

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tests" / "corpus"))
import corpus  # noqa: E402

KEY_CHECK = {"hidden": "flash_key_tiles", "public": "flash_attention_tiles_the_keys_too"}
# the blind learner's loop (tests/corpus/unnamed/): its query tiles, then each attack's work on every key at once
LEARNER = (ROOT / "tests" / "corpus" / "unnamed" / "learner_5_flash_attention_query_tiles_only.py").read_text()
QUERY_TILES = LEARNER.replace("import torch\n", "import torch\nimport torch.nn.functional as F\n", 1) \
    .partition("        scores = q @ keys")[0]
HIDDEN = "hidden = torch.arange(Tk, device=q.device)[None, :] > " \
    "torch.arange(qs, qs + q.shape[-2], device=q.device)[:, None]\n        "
ATTACKS = {  # each right, within the memory bound, and a whole block row of keys at once
    "torch.softmax over every key (the learner's)": None,  # the corpus entry as it is
    "the plain formula over every key": HIDDEN + "scores = q @ keys.transpose(-2, -1) * scale\n"
        "        if causal:\n            scores = scores.masked_fill(hidden, float('-inf'))\n"
        "        m = scores.amax(dim=-1, keepdim=True)\n        e = torch.exp(scores - m)\n"
        "        outs.append(e / e.sum(dim=-1, keepdim=True) @ values)",
    "scaled_dot_product_attention per query tile": HIDDEN + "outs.append(F.scaled_dot_product_attention(q, keys, "
        "values, attn_mask=~hidden if causal else None))",
    "an einsum per query tile after a loop over key tiles that does nothing": HIDDEN +
        "for ks in range(0, Tk, block_size):\n"
        "            keys[..., ks:ks + block_size, :].amax(dim=-1)  # a step per key tile, its result unused\n"
        "        scores = torch.einsum('...qd,...kd->...qk', q * scale, keys)\n"
        "        if causal:\n            scores = scores.masked_fill(hidden, float('-inf'))\n"
        "        outs.append(torch.einsum('...qk,...kd->...qd', scores.softmax(dim=-1), values))",
}


def attack(name):
    body = ATTACKS[name]
    return LEARNER if body is None else QUERY_TILES + "        " + body + "\n    return torch.cat(outs, dim=-2)\n"


def widest(fn):
    tracer = make_tracer(frozenset(), measure=True)
    with tracer:
        fn()
    return tracer.widest


def test_the_reference_reduces_one_key_tile_at_a_time_and_a_query_tile_loop_every_key():
    from importlib import import_module

    reference = import_module("solutions.05_efficient_attention.efficient_attention").flash_attention
    q, k, v = torch.randn(2, 32, 8), torch.randn(2, 96, 8), torch.randn(2, 96, 8)
    for causal in (False, True):
        assert widest(lambda: reference(q, k, v, 16, causal)) == 16
    namespace = {}
    exec(compile(attack("torch.softmax over every key (the learner's)"), "attack", "exec"), namespace)
    assert widest(lambda: namespace["flash_attention"](q, k, v, 16)) == 96


def graded(source, course, grader, tmp_path, suite, seed=2024):
    """flash_attention's ExerciseResult for ``source`` spliced into the solutions, by ``suite``."""
    path = tmp_path / "flash_attention_variant.py"
    path.write_text(source)
    entry = corpus._entry(path, None)
    return corpus.grade_all([entry], course, grader, tmp_path / "graded", seed=seed, suite=suite,
                            quick=True)[entry.name][0]


@pytest.mark.slow
@pytest.mark.parametrize("suite", ["hidden", "public"])
@pytest.mark.parametrize("name", list(ATTACKS))
def test_a_query_tile_loop_over_every_key_at_once_loses_the_key_tile_checks(course, grader, tmp_path, name, suite):
    exercise = graded(attack(name), course, grader, tmp_path, suite)
    failing = [(check.name, check.message) for check in exercise.checks if check.status != "passed"]
    assert [name for name, _ in failing] == [KEY_CHECK[suite]] * 2, (name, exercise.feedback)  # full and causal
    assert exercise.score == pytest.approx(exercise.max_score * (1 - 20 / sum(c.weight for c in exercise.checks)))
    said = failing[0][1]
    if said.startswith("not observed: "):  # the einsum's own names may not be watched: refused before it ran
        return
    assert "keys at once" in said or "entries at once" in said, said
    assert "is not flash attention, whatever its memory" in said and "loop over the key tiles" in said, said
    assert exercise.misconceptions == []


FLASH = [e for e in corpus.correct() + corpus.learner("correct") if e.exercise == "flash_attention"]


@pytest.mark.slow
@pytest.mark.parametrize("suite", ["hidden", "public"])
def test_every_correct_flash_attention_of_the_corpora_keeps_full_marks(course, grader, tmp_path, suite):
    assert len(FLASH) >= 7  # blind, ported (Triton, xformers) and the learners' final versions
    for seed in (3, 2024):
        results = corpus.grade_all(FLASH, course, grader, tmp_path / str(seed), seed=seed, suite=suite, quick=True)
        lost = {name: exercise.feedback[:400] for name, (exercise, _) in results.items()
                if exercise.status != "passed"}
        assert lost == {}, (seed, lost)


def test_the_widest_reduction_that_keeps_entries_leaves_whole_tile_tests_out():
    """Red team round 21: a test of a whole [16, 16] tile reduces 256 entries, as a softmax over 256 keys does,
    so the widest reduction of all cannot tell key tiles as wide as the queries from honest ones; by operators
    whose result keeps more than one entry, it can. Round 21b: a query's 96 keys folded into [6, 16] and
    reduced over both dimensions at once are 96 entries for each of its results, not 16."""
    import torch

    from grader.inside.tracer import make_tracer

    def along(fn):
        tracer = make_tracer(frozenset(), measure=True)
        with tracer:
            fn()
        return tracer.widest, tracer.widest_along, tracer.widest_along_op

    tile, rows = torch.randn(2, 16, 16), torch.randn(2, 32, 96)
    assert along(lambda: tile.isinf().all()) == (512, 0, "")  # one entry: a whole-tile reduction, kept
    assert along(lambda: bool(tile.isinf().all())) == (0, 0, "")  # read into Python: a test, no reduction
    assert along(lambda: rows.reshape(2, 32, 6, 16).amax(dim=(-2, -1))) == (96, 96, "amax")  # keys folded
    assert along(lambda: rows.softmax(-1)) == (96, 96, "_softmax")  # every key of a query at once
    assert along(lambda: rows[..., :16] @ torch.randn(16, 8))[:2] == (16, 16)  # a product over a key tile


def test_torch_equal_counts_among_the_values_read_into_python():
    """Red team round 22's p01: ``torch.equal`` compares two whole tensors into a Python bool, one bit a call that
    no width weighs (torch tags it elementwise); it counts among the values read into Python, as ``bool()`` of a
    test does (lesson.checks_05.expect_few_values_in_python)."""
    from grader.authoring import CheckFailed
    from grader.grading.fixture import Reply
    from lesson.checks_05 import expect_few_values_in_python

    x = torch.randn(4, 64)
    tracer = make_tracer(frozenset(), True)
    with tracer:
        for bound in (-3.0, -2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0):  # the maximum searched by whole comparisons
            torch.equal(x.clamp(max=bound), x)
    assert tracer.names.get("equal") == 8
    reply = Reply(out=None, op_names=dict(tracer.names))
    expect_few_values_in_python(reply, "a call", rows=4, blocks=2, block_size=32)  # 8 reads: one a block of each row
    with pytest.raises(CheckFailed, match="read 9 values"):
        expect_few_values_in_python(Reply(out=None, op_names={**tracer.names, "_local_scalar_dense": 1}), "a call",
                                    rows=4, blocks=2, block_size=32, inputs=0)
