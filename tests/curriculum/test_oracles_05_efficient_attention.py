"""05_efficient_attention: the reference solution against torch.softmax and F.scaled_dot_product_attention.

The memory check runs flash_attention under a TorchDispatchMode that records the size of every tensor an
operator produces: at Tq = Tk = 1024 with block_size = 64 none may hold Tq * Tk / 4 elements (per batch
element) or more, so no [Tq, Tk] score matrix (nor a quarter of one) is ever built.
"""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

ID = "05_efficient_attention"

SEQUENCE_SHAPES = [(1, 1), (1, 200), (200, 1), (100, 70), (70, 100), (130, 130), (1024, 1024)]
BLOCK_SIZES = [1, 7, 64, 128]
MAX_TILES = 400  # keeps block_size 1 and 7 to the shapes where the Python loop stays fast


def _flash_cases():
    cases = []
    for num_queries, num_keys in SEQUENCE_SHAPES:
        for block_size in BLOCK_SIZES:
            if math.ceil(num_queries / block_size) * math.ceil(num_keys / block_size) > MAX_TILES:
                continue
            for dtype in (torch.float32, torch.float64):
                if num_queries * num_keys > 100_000 and dtype == torch.float64:
                    continue  # the long sequence in float32 only
                for causal in (False, True):
                    name = f"Tq{num_queries}-Tk{num_keys}-b{block_size}-{str(dtype)[6:]}-{'causal' if causal else 'full'}"
                    cases.append(pytest.param(num_queries, num_keys, block_size, dtype, causal, id=name))
    return cases


FLASH_CASES = _flash_cases()


@pytest.fixture
def m(solution):
    return solution(ID)


def attention_inputs(randn, leading, num_queries, num_keys, d, dv, dtype, scale=1.0):
    return (
        randn(*leading, num_queries, d, dtype=dtype, scale=scale),
        randn(*leading, num_keys, d, dtype=dtype, scale=scale),
        randn(*leading, num_keys, dv, dtype=dtype),
    )


# ---- oracles, written against any implementation of the module (also run on the stub below) -------------


def check_online_softmax(m, randn, close, dtype, n, block_size, leading=(2, 3)):
    x = randn(*leading, n, dtype=dtype, scale=3.0)
    before = x.clone()
    close(m.online_softmax(x, block_size), torch.softmax(x, dim=-1))
    assert torch.equal(x, before), "online_softmax modified its input"


def check_flash(m, randn, close, leading, num_queries, num_keys, block_size, dtype, causal, d=8, dv=5):
    q, k, v = attention_inputs(randn, leading, num_queries, num_keys, d, dv, dtype)
    originals = [t.clone() for t in (q, k, v)]
    out = m.flash_attention(q, k, v, block_size=block_size, causal=causal)
    close(out, F.scaled_dot_product_attention(q, k, v, is_causal=causal))
    for after, before in zip((q, k, v), originals):
        assert torch.equal(after, before), "an input was modified"


def check_flash_memory(m, randn, dispatch_recorder, leading=(), causal=False):
    q, k, v = attention_inputs(randn, leading, 1024, 1024, 64, 64, torch.float32)
    with torch.no_grad(), dispatch_recorder() as rec:
        out = m.flash_attention(q, k, v, block_size=64, causal=causal)
    per_element = math.prod(leading)
    op, numel = rec.largest()
    assert numel // per_element < 1024 * 1024 // 4, f"{op} produced a tensor of {numel} elements"
    return out


# ---- online_softmax ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 5, 13, 64, 100])
@pytest.mark.parametrize("block_size", [1, 3, 7, 64, 128])
def test_online_softmax_matches_torch(m, randn, close, dtype, n, block_size):
    check_online_softmax(m, randn, close, dtype, n, block_size)


@pytest.mark.parametrize("leading", [(), (4,), (2, 3)], ids=str)
def test_online_softmax_leading_dims(m, randn, close, dtype, leading):
    check_online_softmax(m, randn, close, dtype, 10, 4, leading=leading)


@pytest.mark.parametrize("block_size", [1, 4, 16])
def test_online_softmax_minus_inf_and_all_minus_inf_rows(m, randn, close, dtype, block_size):
    x = randn(5, 12, dtype=dtype)
    x[0, 3] = float("-inf")
    x[1] = float("-inf")  # all hidden: zeros
    x[2, :4] = float("-inf")  # a first block with nothing visible
    x[3, 4:] = float("-inf")  # only the first block visible
    out = m.online_softmax(x, block_size)
    assert not torch.isnan(out).any()
    assert torch.equal(out[1], torch.zeros_like(out[1]))
    expected = torch.softmax(x, dim=-1)
    expected[1] = 0.0  # torch gives nan there
    close(out, expected)


@pytest.mark.parametrize("block_size", [1, 5, 64])
def test_online_softmax_large_values(m, randn, close, dtype, block_size):
    x = randn(4, 20, dtype=dtype, scale=1e4)
    x[0] = torch.arange(20, dtype=dtype) * 1e3  # the maximum grows in every block
    x[1] = -torch.arange(20, dtype=dtype) * 1e3  # the maximum is in the first block
    out = m.online_softmax(x, block_size)
    assert torch.isfinite(out).all()
    close(out, torch.softmax(x, dim=-1))


# ---- flash_attention --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("num_queries", "num_keys", "block_size", "dtype_", "causal"), FLASH_CASES)
def test_flash_matches_sdpa(m, randn, close, num_queries, num_keys, block_size, dtype_, causal):
    leading = () if num_queries * num_keys > 100_000 else (2,)
    check_flash(m, randn, close, leading, num_queries, num_keys, block_size, dtype_, causal)


@pytest.mark.parametrize("leading", [(), (1,), (2,), (2, 3)], ids=str)
@pytest.mark.parametrize(("num_queries", "num_keys", "block_size"), [(70, 100, 64), (100, 70, 7), (9, 9, 4)])
@pytest.mark.parametrize("causal", [False, True])
def test_flash_batch_dims(m, randn, close, dtype, leading, num_queries, num_keys, block_size, causal):
    check_flash(m, randn, close, leading, num_queries, num_keys, block_size, dtype, causal, d=6, dv=11)


def test_flash_defaults_are_block_64_and_not_causal(m, randn, close, dtype):
    q, k, v = attention_inputs(randn, (2,), 150, 130, 8, 4, dtype)
    close(m.flash_attention(q, k, v), F.scaled_dot_product_attention(q, k, v))


@pytest.mark.parametrize("causal", [False, True])
def test_flash_is_stable_for_large_scores(m, randn, close, causal):
    q, k, v = attention_inputs(randn, (2,), 90, 90, 8, 4, torch.float64, scale=30.0)
    out = m.flash_attention(q, k, v, block_size=16, causal=causal)
    assert torch.isfinite(out).all()
    close(out, F.scaled_dot_product_attention(q, k, v, is_causal=causal))


@pytest.mark.parametrize(("num_queries", "num_keys", "block_size", "causal"),
                         [(100, 70, 7, False), (70, 100, 16, True), (1, 200, 64, False), (130, 130, 64, True)])
def test_flash_gradients_match_sdpa(m, randn, close, num_queries, num_keys, block_size, causal):
    inputs = attention_inputs(randn, (2,), num_queries, num_keys, 8, 5, torch.float64)
    upstream = randn(2, num_queries, 5, dtype=torch.float64)
    ours = [t.clone().requires_grad_(True) for t in inputs]
    (m.flash_attention(*ours, block_size=block_size, causal=causal) * upstream).sum().backward()
    theirs = [t.clone().requires_grad_(True) for t in inputs]
    (F.scaled_dot_product_attention(*theirs, is_causal=causal) * upstream).sum().backward()
    for name, a, b in zip("qkv", ours, theirs):
        assert a.grad is not None, f"no gradient reaches {name}"
        close(a.grad, b.grad)


@pytest.mark.parametrize("causal", [False, True])
def test_flash_never_materialises_the_score_matrix(m, randn, dispatch_recorder, causal):
    q, k = randn(1024, 64), randn(1024, 64)
    with dispatch_recorder() as control:  # plain attention: the recorder must see its [Tq, Tk] matrix
        (q @ k.T).softmax(dim=-1)
    assert control.largest()[1] >= 1024 * 1024, "the recorder misses the score matrix of plain attention"
    out = check_flash_memory(m, randn, dispatch_recorder, causal=causal)
    assert out.shape == (1024, 64)


def test_flash_never_materialises_the_score_matrix_per_batch_element(m, randn, dispatch_recorder):
    out = check_flash_memory(m, randn, dispatch_recorder, leading=(2,))
    assert out.shape == (2, 1024, 64)


# ---- the oracles are not vacuous: on the stub they fail ----------------------------------------------------


def test_oracles_fail_on_the_stub(stub, randn, close, dispatch_recorder):
    module = stub(ID)
    with pytest.raises(NotImplementedError):
        check_online_softmax(module, randn, close, torch.float32, 13, 4)
    with pytest.raises(NotImplementedError):
        check_flash(module, randn, close, (2,), 100, 70, 7, torch.float64, True)
    with pytest.raises(NotImplementedError):
        check_flash_memory(module, randn, dispatch_recorder)
