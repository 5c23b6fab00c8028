"""Public checks for 05_efficient_attention: the lesson's data and fixed random cases, checked as the
instructor's grading checks them (the same kinds of checks, weights and named mistakes: lesson.checks_05),
on cases of their own.

online_softmax gathers its statistics block by block (more blocks, more steps, no loop over entries),
and flash_attention stays within its memory bound (no quarter of the [Tq, Tk] score matrix at once).
`grade check` compares with reference outputs recorded at release, offline.
"""
import pytest
import torch

from grader.authoring import assignment, exercise
from lesson import checks_05 as checks
from lesson import journey_batch, journey_scores, strided

pytestmark = assignment("05_efficient_attention")
FLOAT, DOUBLE = torch.float32, torch.float64


# online_softmax(x, block_size)
@exercise("online_softmax")
def test_online_softmax_on_the_lesson_scores(grade):
    checks.online_softmax_same(grade, journey_scores(), 5)  # [6, 6] scaled scores in blocks of 5 and 1


@exercise("online_softmax", weight=2)
@pytest.mark.parametrize("shape,block_size,dtype", [
    pytest.param((12,), 5, FLOAT, id="N12-block5-one-row"),
    pytest.param((5, 14), 7, DOUBLE, id="N14-block7-float64"),
    pytest.param((3, 2, 6), 1, FLOAT, id="block1-batch3x2"),
    pytest.param((2, 4), 10, DOUBLE, id="block-longer-than-N-float64"),
    pytest.param((3, 110), 12, FLOAT, id="long-N110-block12"),
])
def test_online_softmax_on_random_data(grade, shape, block_size, dtype):
    x = checks.growing_maximum(grade.randn(*shape, dtype=dtype, scale=3.0))
    checks.online_softmax_same(grade, x, block_size, grad=True)


@exercise("online_softmax", weight=2)
@pytest.mark.parametrize("dtype", [FLOAT, DOUBLE], ids=["f32", "f64"])
def test_online_softmax_rescales_when_the_maximum_grows(grade, dtype):
    x = grade.randn(2, 22, dtype=dtype, scale=800.0)
    x[0, :5] = x[0, :5] - 4000.0  # a first block far below the rest: its rescale factor underflows
    x[:, -1] = x.amax(dim=-1) + 80.0  # the largest entry comes last: every row's statistics must be rescaled
    checks.online_softmax_same(grade, x, 5, grad=True)


@exercise("online_softmax", weight=2)
def test_online_softmax_with_hidden_entries(grade):
    x = grade.randn(5, 12, dtype=DOUBLE)
    x[0, 7] = float("-inf")  # one hidden entry
    x[1, :3] = float("-inf")  # a whole first block hidden
    x[2] = float("-inf")  # nothing visible: zeros (and zero gradients), not NaN
    x[3, 6:9] = float("-inf")  # a hidden block in the middle
    x[4, 9:] = float("-inf")  # the last block hidden
    for row in (0, 1, 3):  # and the maximum grows in the last block: the running sum must be rescaled
        x[row, -1] = x[row].amax() + 1.0
    checks.online_softmax_same(grade, x, 3, grad=True)


@exercise("online_softmax", weight=2)
def test_online_softmax_when_the_first_block_is_hidden_and_the_rest_far_below(grade):
    """The first block all -inf, every other entry below float32's exp range (about -88): the running maximum
    must be the row's own, not the 0 that _shift gives -inf, or exp underflows and the row is all zeros."""
    x = grade.randn(4, 15, scale=2.0)  # float32
    x[0, :5] = float("-inf")  # a hidden first block,
    x[0, 5:] = x[0, 5:] - 200.0  # then entries far below 0, on every seed
    x[1] = x[1] - 130.0  # far below, nothing hidden: the first block sets the running maximum
    x[2, :10] = float("-inf")  # two hidden blocks, then far below
    x[2, 10:] = x[2, 10:] - 120.0
    x[3, :5] = float("-inf")  # a hidden first block, then ordinary entries
    checks.online_softmax_same(grade, x, 5, grad=True)


@exercise("online_softmax", weight=10)  # the exercise's rule: a third of its points (red team round 21)
def test_online_softmax_works_block_by_block(grade):
    """One block of 48 costs no more operations than one of 6 (no loop over entries); blocks of 6 cost more."""
    checks.expect_blockwise_statistics(grade, grade.randn(3, 48), 6, 6)


@exercise("online_softmax")
def test_online_softmax_on_a_transposed_input(grade):
    checks.online_softmax_same(grade, checks.growing_maximum(grade.randn(11, 4).T), 3)  # [4, 11], not contiguous


# flash_attention(queries, keys, values, block_size=64, causal=False)
@exercise("flash_attention")
def test_flash_attention_on_the_lesson_batch(grade):
    inputs = journey_batch()  # [2, 6, 3]
    checks.flash_same(grade, inputs, inputs, inputs, 5, True)


@exercise("flash_attention", weight=2)
@pytest.mark.parametrize("tq,tk,d,dv,block_size,causal,batch,dtype", [
    pytest.param(1, 1, 6, 3, 2, False, (3,), FLOAT, id="T1-batch3"),
    pytest.param(6, 9, 4, 5, 1, True, (2,), DOUBLE, id="Tq6-Tk9-block1-causal-float64"),
    pytest.param(1, 90, 8, 6, 12, False, (2,), DOUBLE, id="Tq1-Tk90-block12-float64"),
    pytest.param(90, 1, 8, 8, 12, True, (), FLOAT, id="Tq90-Tk1-block12-causal"),
    pytest.param(60, 90, 16, 8, 48, True, (2,), FLOAT, id="Tq60-Tk90-block48-causal"),
    pytest.param(120, 120, 8, 10, 48, False, (3, 2), DOUBLE, id="T120-block48-batch3x2-float64"),
    pytest.param(120, 120, 8, 8, 24, True, (), FLOAT, id="T120-block24-causal"),
])
def test_flash_attention_on_random_data(grade, tq, tk, d, dv, block_size, causal, batch, dtype):
    queries, keys = grade.randn(*batch, tq, d, dtype=dtype), grade.randn(*batch, tk, d, dtype=dtype)
    keys = checks.growing_scores(queries, keys, causal)
    values = grade.randn(*batch, tk, dv, dtype=dtype)
    checks.flash_same(grade, queries, keys, values, block_size, causal, grad=True)


@exercise("flash_attention", weight=2)
def test_flash_attention_with_scores_in_the_hundreds(grade):
    """Scaled scores of a few hundred: exp() overflows unless the running maximum is subtracted first."""
    q = grade.randn(2, 36, 12, dtype=DOUBLE, scale=400.0)
    k = grade.randn(2, 36, 12, dtype=DOUBLE)
    checks.flash_same(grade, q, k, grade.randn(2, 36, 6, dtype=DOUBLE), 12, False)


@exercise("flash_attention")
def test_flash_attention_on_transposed_inputs(grade):
    q = strided(grade.randn(29, 2, 6), (0, 1))  # [2, 29, 6], not contiguous
    k = strided(grade.randn(6, 2, 35), (0, 2), (0, 1))  # [2, 35, 6], not contiguous
    v = strided(grade.randn(2, 4, 35), (1, 2))  # [2, 35, 4], not contiguous
    checks.flash_same(grade, q, k, v, 12, True, grad=True)


@exercise("flash_attention", weight=10)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_flash_attention_never_builds_the_score_matrix(grade, causal):
    """384 tokens in blocks of 48: no intermediate tensor may hold 384*384/4 elements or more (a whole
    causal mask neither); one block row of scores, [48, 384], is half of that."""
    checks.expect_within_memory_bound(grade, 384, 32, 48, causal)


@exercise("flash_attention", weight=10)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_flash_attention_tiles_the_keys_too(grade, causal):
    """24 queries against 24 and then 72 keys, in blocks of 12: no operation may reduce more than 12 keys
    at once (a query-block loop with one softmax over every key is not flash-style, whatever its memory)."""
    checks.expect_key_tiles(grade, 24, 24, 72, 12, causal, dim=6)


@exercise("flash_attention", weight=2)
def test_flash_attention_is_vectorised_within_a_block(grade):
    """3 or 24 tokens, all in one block of 32: as many operations for either (no loop over tokens)."""
    checks.expect_vectorised_within_a_block(grade, 3, 24, 32)
