"""Hidden grading suite for 05_efficient_attention. Never shipped to students.

Every check compares the student's function with the reference on the same inputs (see
grader/harness.py). Inputs come from the check's own seed, fresh each run unless --seed is given.
The contract's rows for 05 forbid no operation (grader/forbidden.py): online_softmax must gather its
statistics block by block (more blocks, more steps), and flash_attention must stay within a memory
bound: it may never build the whole [Tq, Tk] score matrix.
"""
import pytest
import torch

from grader.authoring import Mistake, ScaleSearch, assignment, exercise
from grader.harness import CheckFailed
from lesson import journey, journey_batch, mistaken

pytestmark = assignment("05_efficient_attention")

F32, F64 = torch.float32, torch.float64


def _non_finite(out):
    if isinstance(out, torch.Tensor) and out.is_floating_point() and not torch.isfinite(out).all():
        return ("softmax-unstable", "your output has inf or NaN: subtract the running maximum before "
                                    "exponentiating (and never compute -inf - -inf)")
    return None


def matches(misconception, what, output) -> Mistake:
    """A mistake whose output the student's matches: "your output matches <what>"."""
    return Mistake(misconception, f"your output matches {what}", output)


# --- online_softmax -----------------------------------------------------------------------------------
def _softmax_without_rescaling(x, block_size):
    """The running sum accumulated against each block's own running maximum, never rescaled."""
    running_max = torch.full(x.shape[:-1], float("-inf"), dtype=x.dtype)
    running_sum = torch.zeros(x.shape[:-1], dtype=x.dtype)
    for start in range(0, x.shape[-1], block_size):
        block = x[..., start:start + block_size]
        running_max = torch.maximum(running_max, block.amax(dim=-1))
        running_sum = running_sum + torch.exp(block - running_max[..., None]).sum(dim=-1)
    return torch.exp(x - running_max[..., None]) / running_sum[..., None]


def _softmax_last_block_max(x, block_size):
    """Normalised with the statistics of the last block only (the running values overwritten)."""
    start = (x.shape[-1] - 1) // block_size * block_size
    block = x[..., start:]
    m = block.amax(dim=-1, keepdim=True)
    return torch.exp(x - m) / torch.exp(block - m).sum(dim=-1, keepdim=True)


def online_softmax_same(grade, x, block_size, grad=False):
    grade.same("online_softmax", x, block_size, grad=grad, explain=_non_finite, normalised_exponential=True, mistakes=[
        matches(None, "a running sum that is not rescaled by exp(m_old - m_new) when the running maximum grows",
                lambda: _softmax_without_rescaling(x, block_size)),
        matches(None, "a sum over the last block only: add each block's exponentials to the running sum",
                lambda: _softmax_last_block_max(x, block_size)),
        matches("softmax-wrong-dim", "a softmax over the first dimension; it is over the last",
                lambda: torch.softmax(x, dim=0))])


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
    online_softmax_same(grade, grade.randn(*shape, dtype=dtype, scale=3.0), block_size, grad=True)


@exercise("online_softmax", weight=2)
@pytest.mark.parametrize("dtype", [F32, F64], ids=["float32", "float64"])
def test_online_softmax_large_values(grade, dtype):
    x = grade.randn(3, 20, dtype=dtype, scale=1000.0)
    x[:, -1] = x.amax(dim=-1) + 100.0  # the maximum grows in the last block: every row must be rescaled
    online_softmax_same(grade, x, 6, grad=True)


@exercise("online_softmax", weight=2)
def test_online_softmax_minus_infinity(grade):
    x = grade.randn(4, 10, dtype=F64)
    x[0, 3] = float("-inf")  # one hidden entry
    x[1] = float("-inf")  # a row with nothing visible: all zeros, never NaN
    x[2, :4] = float("-inf")  # the first block all hidden, the rest visible
    x[3, 4:8] = float("-inf")  # a hidden block in the middle
    online_softmax_same(grade, x, 4, grad=True)  # zero gradients where every entry is hidden, never NaN


@exercise("online_softmax", weight=2)
def test_online_softmax_walks_over_blocks(grade):
    """The statistics are gathered block by block: more blocks, more steps (the lesson's loop over blocks)."""
    x = grade.randn(2, 64)
    one_block = grade.measured("online_softmax", x, 64).ops
    short = grade.measured("online_softmax", x[:, :8], 64).ops
    if one_block > short:  # one block either way: the steps may not grow with the row's length
        raise CheckFailed(f"online_softmax made {short} torch operations on rows of 8 but {one_block} on rows of 64, "
                          "both in one block: a Python loop over the entries; work on each block as a whole "
                          "tensor (its maximum, the sum of its exponentials)", ("not-vectorised",))
    many_blocks = grade.measured("online_softmax", x, 4).ops
    if many_blocks <= one_block:
        raise CheckFailed(f"online_softmax made {many_blocks} torch operations with 16 blocks of 4 but "
                          f"{one_block} with one block of 64: the statistics must be gathered block by block, "
                          "keeping a running maximum and a running sum that is rescaled whenever the maximum grows")


@exercise("online_softmax")
def test_online_softmax_non_contiguous(grade):
    online_softmax_same(grade, grade.randn(9, 3).T, 4)  # [3, 9], not contiguous


# --- flash_attention ----------------------------------------------------------------------------------
def _plain_attention(q, k, v, causal, *, bottom_right=False):
    """Plain attention in float64 (``bottom_right``: the causal mask aligned to the bottom-right corner)."""
    q, k, v = q.double(), k.double(), v.double()
    scores = q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5
    if causal:
        tq, tk = scores.shape[-2], scores.shape[-1]
        scores = scores.masked_fill(torch.ones(tq, tk, dtype=torch.bool).triu(tk - tq + 1 if bottom_right else 1),
                                    float("-inf"))
    weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)
    return weights @ v


def _flash_without_rescaling(q, k, v, block_size, causal, *, rescale_sum=True, rescale_acc=True):
    """Tiled attention in float64 that forgets to rescale the running sum or the running output."""
    q, k, v = q.double() / q.shape[-1] ** 0.5, k.double(), v.double()
    running_max = torch.full(q.shape[:-1], float("-inf"), dtype=q.dtype)
    running_sum = torch.zeros(q.shape[:-1], dtype=q.dtype)
    acc = torch.zeros(*q.shape[:-1], v.shape[-1], dtype=q.dtype)
    q_pos = torch.arange(q.shape[-2])
    for start in range(0, k.shape[-2], block_size):
        scores = q @ k[..., start:start + block_size, :].transpose(-2, -1)
        if causal:
            k_pos = torch.arange(start, start + scores.shape[-1])
            scores = scores.masked_fill(k_pos[None, :] > q_pos[:, None], float("-inf"))
        new_max = torch.maximum(running_max, scores.amax(dim=-1))
        shift = torch.where(new_max.isinf(), torch.zeros_like(new_max), new_max)
        rescale = torch.exp(running_max - shift)
        p = torch.exp(scores - shift[..., None])
        running_sum = (running_sum * rescale if rescale_sum else running_sum) + p.sum(dim=-1)
        acc = (acc * rescale[..., None] if rescale_acc else acc) + p @ v[..., start:start + block_size, :]
        running_max = new_max
    return acc / running_sum.clamp_min(1e-300)[..., None]


def flash_same(grade, q, k, v, block_size, causal, grad=False):
    kwargs = {"block_size": block_size, "causal": causal}
    mistakes = [
        matches(None, "a running output that is not rescaled by exp(m_old - m_new) when the running maximum grows",
                lambda: _flash_without_rescaling(q, k, v, block_size, causal, rescale_acc=False)),
        matches(None, "a running sum that is not rescaled by exp(m_old - m_new) when the running maximum grows",
                lambda: _flash_without_rescaling(q, k, v, block_size, causal, rescale_sum=False)),
    ]
    if causal:
        mistakes.append(matches(None, "a causal mask aligned to the bottom-right corner; query i sees keys j <= i, "
                                "counted from the top-left",
                                lambda: _plain_attention(q, k, v, True, bottom_right=True)))
    # attention's usual mistakes (scale, orientation, softmax dimension, mask, values), in float64
    q64, k64, v64 = q.double(), k.double(), v.double()
    future = mistaken.causal_variants(q.shape[-2], k.shape[-2])["future"] if causal else None
    mistakes += [m if isinstance(m, ScaleSearch) else matches(m.id, m.explanation.removeprefix("your "), m.output)
                 for m in mistaken.attention_mistakes(q64, k64, v64, scale=q.shape[-1] ** -0.5, hidden=future,
                                                      causal=causal, mask_fill_zero=False)]
    grade.same("flash_attention", q, k, v, grad=grad, explain=_non_finite, mistakes=mistakes,
               right=lambda: _plain_attention(q, k, v, causal), **kwargs)


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
    k = grade.randn(*batch, tk, d, dtype=dtype)
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
    tokens, dim = 512, 64
    q, k, v = grade.randn(tokens, dim), grade.randn(tokens, dim), grade.randn(tokens, dim)
    reply = grade.call("flash_attention", q, k, v, block_size=64, causal=causal, measure=True)
    limit = tokens * tokens // 4
    if reply.max_numel >= limit:
        raise CheckFailed(f"flash_attention(<[{tokens}, {dim}]> x 3, block_size=64): the largest intermediate tensor "
                          f"had {reply.max_numel} elements, but the limit is {limit} (a quarter of the {tokens} x "
                          f"{tokens} score matrix); the full score matrix must never be built: work on "
                          "[block_size, block_size] tiles of it with the online-softmax rescaling")
    # the reference in three matrix products: here, outside the student's worker, the full matrix is fine
    expected = grade.reference_value(lambda: _plain_attention(q, k, v, causal), q, k, v, causal)
    expected = expected.to(q.dtype).to(grade.device)
    grade.expect(reply, expected, f"flash_attention(<[{tokens}, {dim}]> x 3, block_size=64, causal={causal})")


@exercise("flash_attention", weight=2)
def test_flash_vectorised_within_a_block(grade):
    """Inside one block, queries and keys are whole tensors: with every token in one block of 64, the
    operations may not grow with the number of tokens (one query or key at a time in Python does)."""
    def ops(tokens):
        q, k, v = grade.randn(2, tokens, 8), grade.randn(2, tokens, 8), grade.randn(2, tokens, 8)
        return grade.measured("flash_attention", q, k, v, block_size=64, causal=True,
                              root_cause=None).ops

    short, long = ops(4), ops(32)
    if long > short:
        raise CheckFailed(f"flash_attention made {short} torch operations for 4 tokens but {long} for 32, every "
                          "token in one block of 64: a Python loop over queries or keys; compute each block's "
                          "scores as one matrix product", ("not-vectorised",))


# --- half precision, on CUDA ------------------------------------------------------------------------
HALVES = [torch.float16, torch.bfloat16]


@exercise("online_softmax")
@pytest.mark.parametrize("dtype", HALVES, ids=["float16", "bfloat16"])
def test_online_softmax_half_precision(grade, dtype):
    grade.needs_cuda()
    grade.same_low_precision("online_softmax", grade.randn(3, 100, scale=4.0), 16, dtype=dtype)


@exercise("flash_attention")
@pytest.mark.parametrize("dtype", HALVES, ids=["float16", "bfloat16"])
def test_flash_attention_half_precision(grade, dtype):
    grade.needs_cuda()
    q, k, v = grade.randn(2, 70, 32), grade.randn(2, 90, 32), grade.randn(2, 90, 16)
    grade.same_low_precision("flash_attention", q, k, v, block_size=32, causal=True, dtype=dtype)
