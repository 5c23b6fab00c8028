"""Hidden grading suite for 05_efficient_attention. Never shipped to students.

Every check compares the student's function with the reference on the same inputs (see
grader/grading/fixture.py). Inputs come from the check's own seed, fresh each run unless --seed is given.
The contract's rows for 05 forbid no operation (grader/inside/forbidden.py): online_softmax must gather its
statistics block by block (more blocks, more steps), and flash_attention must stay within a memory
bound: it may never build the whole [Tq, Tk] score matrix.
"""
import pytest
import torch

from grader.authoring import assignment, exercise
from lesson import journey, journey_batch
from lesson.checks_05 import (expect_blockwise_statistics, expect_key_tiles, expect_vectorised_within_a_block,
                              expect_within_memory_bound, flash_rules, flash_same, growing_maximum, growing_scores,
                              online_softmax_rules, online_softmax_same)

pytestmark = assignment("05_efficient_attention")

F32, F64 = torch.float32, torch.float64


# --- online_softmax -----------------------------------------------------------------------------------
@exercise("online_softmax")
def test_online_softmax_lesson_scores(grade):
    inputs = journey()
    online_softmax_same(grade, inputs @ inputs.T, 4)  # [6, 6] scores, N = 6 not a multiple of 4


@exercise("online_softmax", weight=2)
@pytest.mark.parametrize("shape,block_size,dtype", [
    pytest.param((10,), 3, F32, id="N10-block3-no-batch-float32"),
    pytest.param((4, 16), 4, F64, id="N16-block4-float64"),
    pytest.param((2, 3, 7), 1, F32, id="block1-batch2x3-float32"),
    pytest.param((3, 5), 8, F64, id="block-over-N-float64"),
    pytest.param((2, 130), 16, F32, id="long-N130-block16-float32"),
])
def test_online_softmax_random(grade, shape, block_size, dtype):
    online_softmax_same(grade, growing_maximum(grade.randn(*shape, dtype=dtype, scale=3.0)), block_size, grad=True)


@exercise("online_softmax", weight=2)
@pytest.mark.parametrize("dtype", [F32, F64], ids=["float32", "float64"])
def test_online_softmax_large_values(grade, dtype):
    x = grade.randn(3, 20, dtype=dtype, scale=1000.0)
    x[1, :6] = x[1, :6] - 5000.0  # a first block far below the rest: exp(m_old - m_new) underflows, on every seed
    x[:, -1] = x.amax(dim=-1) + 100.0  # the maximum grows in the last block: every row must be rescaled
    online_softmax_same(grade, x, 6, grad=True)


@exercise("online_softmax", weight=2)
def test_online_softmax_minus_infinity(grade):
    x = grade.randn(4, 10, dtype=F64)
    x[0, 3] = float("-inf")  # one hidden entry
    x[1] = float("-inf")  # a row with nothing visible: all zeros, never NaN
    x[2, :4] = float("-inf")  # the first block all hidden, the rest visible
    x[3, 4:8] = float("-inf")  # a hidden block in the middle
    for row in (0, 2, 3):  # and the maximum grows in the last block, on every seed: the sum must be rescaled
        x[row, -1] = x[row].amax() + 1.0
    online_softmax_same(grade, x, 4, grad=True)  # zero gradients where every entry is hidden, never NaN


@exercise("online_softmax", weight=2)
def test_online_softmax_hidden_first_block_then_far_below(grade):
    """A row whose first block is all -inf and whose other entries lie far below float32's exp range (about
    -88): its running maximum must become its own, never stay at the 0 that _shift gives -inf
    (flash-attention#2082: the running maximum overwritten by its shift gives such a row zeros)."""
    x = grade.randn(4, 14, scale=3.0)  # float32, as the underflow is float32's
    x[0, :4] = float("-inf")  # the first block all hidden,
    x[0, 4:] = x[0, 4:] - 150.0  # the rest far below 0 on every seed: exp(x - 0) underflows, exp(x - m) does not
    x[1, :8] = float("-inf")  # the first two blocks hidden, the rest far below
    x[1, 8:] = x[1, 8:] - 150.0
    x[2, :4] = float("-inf")  # the first block hidden, the rest ordinary
    x[3] = x[3] - 150.0  # far below with nothing hidden: the first block sets the running maximum
    online_softmax_same(grade, x, 4, grad=True)


@exercise("online_softmax", weight=10)  # the exercise's rule: a third of its points (red team round 21)
def test_online_softmax_walks_over_blocks(grade):
    """The statistics are gathered block by block: more blocks, more steps (the lesson's loop over blocks)."""
    expect_blockwise_statistics(grade, grade.randn(2, 64), 8, 4)


@exercise("online_softmax")
def test_online_softmax_non_contiguous(grade):
    online_softmax_same(grade, growing_maximum(grade.randn(9, 3).T), 4)  # [3, 9], not contiguous


# --- flash_attention ----------------------------------------------------------------------------------
@exercise("flash_attention")
def test_flash_lesson_data(grade):
    inputs = journey_batch()  # [2, 6, 3]
    flash_same(grade, inputs, inputs, inputs, 4, True)


@exercise("flash_attention", weight=2)
@pytest.mark.parametrize("tq,tk,d,dv,block_size,causal,batch,dtype", [
    pytest.param(1, 1, 4, 4, 1, False, (), F32, id="Tq1-Tk1-block1-float32"),
    pytest.param(5, 7, 4, 6, 1, True, (2,), F64, id="Tq5-Tk7-block1-causal-dv6-float64"),
    pytest.param(1, 100, 8, 8, 16, False, (2,), F64, id="Tq1-Tk100-block16-float64"),
    pytest.param(100, 1, 8, 8, 16, True, (), F32, id="Tq100-Tk1-block16-causal-float32"),
    pytest.param(70, 100, 16, 8, 64, True, (2,), F32, id="Tq70-Tk100-block64-causal-dv8-float32"),
    pytest.param(130, 130, 8, 12, 64, False, (2, 3), F64, id="T130-block64-batch2x3-dv12-float64"),
    pytest.param(130, 130, 8, 8, 16, True, (), F32, id="T130-block16-causal-float32"),
])
def test_flash_random(grade, tq, tk, d, dv, block_size, causal, batch, dtype):
    q = grade.randn(*batch, tq, d, dtype=dtype)
    k = growing_scores(q, grade.randn(*batch, tk, d, dtype=dtype), causal)
    v = grade.randn(*batch, tk, dv, dtype=dtype)
    flash_same(grade, q, k, v, block_size, causal, grad=True)


@exercise("flash_attention", weight=2)
def test_flash_large_scores(grade):
    """Scores in the hundreds overflow exp() unless the running maximum is subtracted first."""
    q = grade.randn(2, 40, 16, dtype=F64, scale=400.0)  # scores of about +-1000: exp() overflows even in float64
    k = grade.randn(2, 40, 16, dtype=F64)
    flash_same(grade, q, k, grade.randn(2, 40, 8, dtype=F64), 16, False)


@exercise("flash_attention")
def test_flash_non_contiguous(grade):
    q = grade.randn(33, 2, 8).transpose(0, 1)  # [2, 33, 8], not contiguous
    k = grade.randn(8, 2, 40).transpose(0, 2).transpose(0, 1)  # [2, 40, 8], not contiguous
    v = grade.randn(2, 6, 40).transpose(1, 2)  # [2, 40, 6], not contiguous
    flash_same(grade, q, k, v, 16, True, grad=True)


@exercise("flash_attention", weight=10)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_flash_memory_bound(grade, causal):
    """Tq = Tk = 512, block_size 64: no intermediate tensor may hold Tq*Tk/4 elements or more (a whole
    [Tq, Tk] causal mask neither); one block row of scores, [64, 512], is half of that. (64 tiles: every
    operation is watched, so the tiles, not the sizes, set this check's cost.)"""
    expect_within_memory_bound(grade, 512, 64, 64, causal)


@exercise("flash_attention", weight=10)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_flash_key_tiles(grade, causal):
    """32 queries against 32 and then 96 keys, in blocks of 16: no operation may reduce more than 16 keys
    at once (the contract's block rule: a query-block loop with a softmax over every key at once is not
    flash-style, whatever its memory)."""
    expect_key_tiles(grade, 32, 32, 96, 16, causal)


@exercise("flash_attention", weight=2)
def test_flash_vectorised_within_a_block(grade):
    """Inside one block, queries and keys are whole tensors: with every token in one block of 64, the
    operations may not grow with the number of tokens (one query or key at a time in Python does)."""
    expect_vectorised_within_a_block(grade, 4, 32, 64)


# --- half precision, on CUDA ------------------------------------------------------------------------
HALVES = [torch.float16, torch.bfloat16]


@exercise("online_softmax")
@pytest.mark.parametrize("dtype", HALVES, ids=["float16", "bfloat16"])
def test_online_softmax_half_precision(grade, dtype):
    grade.needs_cuda()
    x = grade.randn(3, 100, scale=4.0)
    grade.same_low_precision("online_softmax", x, 16, dtype=dtype,
                             rules=online_softmax_rules(x, 16))


@exercise("flash_attention")
@pytest.mark.parametrize("dtype", HALVES, ids=["float16", "bfloat16"])
def test_flash_attention_half_precision(grade, dtype):
    grade.needs_cuda()
    q, k, v = grade.randn(2, 70, 32), grade.randn(2, 90, 32), grade.randn(2, 90, 16)
    grade.same_low_precision("flash_attention", q, k, v, block_size=32, causal=True, dtype=dtype,
                             rules=flash_rules(q, k, v, 32, True))
