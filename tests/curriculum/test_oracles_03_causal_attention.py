"""03_causal_attention: the reference solution against F.scaled_dot_product_attention(is_causal=True).

Masks are True = hidden. The oracle's causal weights for given scores ``s [..., T, T]`` are SDPA with
``q = s``, ``k = v = I``, ``scale = 1``: then ``q kᵀ = s`` and ``weights @ I = weights``.
"""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

ID = "03_causal_attention"

SEED_123_FIRST_SEQUENCE = [
    [-0.4519, 0.2216], [-0.5874, 0.0058], [-0.6300, -0.0632], [-0.5675, -0.0843], [-0.5526, -0.0981],
    [-0.5299, -0.1081],
]
# (batch, T, d_in, d_out, context_length)
MODULE_SHAPES = [(1, 1, 3, 2, 6), (2, 6, 3, 2, 6), (3, 4, 5, 8, 10), (2, 7, 4, 4, 7)]
LEADING_DIMS = [(), (2,), (2, 3)]


@pytest.fixture
def m(solution):
    return solution(ID)


def causal_weights(scores):
    """softmax of ``scores`` with the future hidden, computed by SDPA."""
    num_tokens = scores.shape[-1]
    eye = torch.eye(num_tokens, dtype=scores.dtype).expand(*scores.shape[:-2], num_tokens, num_tokens)
    return F.scaled_dot_product_attention(scores, eye, eye, is_causal=True, scale=1.0)


def projections(module, x):
    def apply(layer):
        return x @ layer.weight.T + (0 if layer.bias is None else layer.bias)

    return apply(module.W_query), apply(module.W_key), apply(module.W_value)


# ---- oracles, written against any implementation of the module (also run on the stub below) -------------


def check_apply_causal_mask(m, randn, close, dtype, leading, num_tokens):
    scores = randn(*leading, num_tokens, num_tokens, dtype=dtype, scale=2.0)
    before = scores.clone()
    masked = m.apply_causal_mask(scores)
    assert torch.equal(scores, before), "apply_causal_mask modified its input"
    future = torch.ones(num_tokens, num_tokens, dtype=torch.bool).triu(1)
    assert masked.dtype == dtype and masked.shape == scores.shape
    assert torch.equal(masked[..., ~future], scores[..., ~future])
    assert (masked[..., future] == float("-inf")).all()
    close(torch.softmax(masked, dim=-1), causal_weights(scores))


def check_causal_attention_matches_sdpa(m, randn, close, dtype, shape, qkv_bias):
    batch, num_tokens, d_in, d_out, context_length = shape
    torch.manual_seed(0)
    module = m.CausalAttention(d_in, d_out, context_length, 0.0, qkv_bias=qkv_bias).to(dtype)
    x = randn(batch, num_tokens, d_in, dtype=dtype)
    before = x.clone()
    expected = F.scaled_dot_product_attention(*projections(module, x), is_causal=True)
    close(module(x), expected)
    assert torch.equal(x, before), "forward modified its input"


# ---- masks ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("num_tokens", [1, 2, 5, 17])
def test_causal_mask(m, num_tokens):
    mask = m.causal_mask(num_tokens)
    assert mask.dtype == torch.bool
    assert torch.equal(mask, ~torch.ones(num_tokens, num_tokens, dtype=torch.bool).tril())


@pytest.mark.parametrize("device", ["cpu", torch.device("cpu")], ids=["str", "device"])
def test_causal_mask_device(m, device):
    mask = m.causal_mask(4, device=device)
    assert mask.device.type == "cpu"
    assert torch.equal(mask, ~torch.ones(4, 4, dtype=torch.bool).tril())


@pytest.mark.parametrize("leading", LEADING_DIMS, ids=str)
@pytest.mark.parametrize("num_tokens", [1, 5])
def test_apply_causal_mask(m, randn, close, dtype, leading, num_tokens):
    check_apply_causal_mask(m, randn, close, dtype, leading, num_tokens)


def test_apply_causal_mask_returns_a_new_tensor(m, randn):
    scores = randn(3, 3)
    masked = m.apply_causal_mask(scores)
    masked.zero_()
    assert torch.isfinite(scores).all() and scores.abs().sum() > 0, "the result aliases the input"


@pytest.mark.parametrize("leading", LEADING_DIMS, ids=str)
@pytest.mark.parametrize("num_tokens", [1, 6])
def test_renormalize_equals_masking_before_the_softmax(m, randn, close, dtype, leading, num_tokens):
    scores = randn(*leading, num_tokens, num_tokens, dtype=dtype, scale=2.0)
    weights = torch.softmax(scores, dim=-1)
    before = weights.clone()
    renormalized = m.renormalize_causal_weights(weights)
    assert torch.equal(weights, before), "renormalize_causal_weights modified its input"
    close(renormalized, causal_weights(scores))
    close(renormalized, torch.softmax(m.apply_causal_mask(scores), dim=-1))
    future = torch.ones(num_tokens, num_tokens, dtype=torch.bool).triu(1)
    assert (renormalized[..., future] == 0).all()


@pytest.mark.parametrize(("lengths", "max_len"), [([3, 0, 5, 1], 5), ([1], 1), ([2, 7], 7), ([4, 2], 6)])
def test_padding_mask(m, lengths, max_len):
    mask = m.padding_mask(torch.tensor(lengths), max_len)
    expected = torch.tensor([[j >= n for j in range(max_len)] for n in lengths], dtype=torch.bool)
    assert mask.dtype == torch.bool
    assert torch.equal(mask, expected)


@pytest.mark.parametrize(("lengths", "num_tokens"), [([3, 0, 5, 1], 5), ([1], 1), ([2, 7], 7), ([4, 2], 6)])
def test_causal_padding_mask(m, lengths, num_tokens):
    mask = m.causal_padding_mask(torch.tensor(lengths), num_tokens)
    expected = torch.tensor(
        [[[j > i or j >= n for j in range(num_tokens)] for i in range(num_tokens)] for n in lengths],
        dtype=torch.bool,
    )
    assert mask.dtype == torch.bool
    assert torch.equal(mask, expected)


# ---- CausalAttention -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("qkv_bias", [False, True])
def test_causal_attention_parameters_and_buffers(m, qkv_bias):
    module = m.CausalAttention(5, 8, 10, 0.25, qkv_bias=qkv_bias)
    for name in ("W_query", "W_key", "W_value"):
        layer = getattr(module, name)
        assert isinstance(layer, nn.Linear) and tuple(layer.weight.shape) == (8, 5)
        assert (layer.bias is not None) == qkv_bias
    assert isinstance(module.dropout, nn.Dropout) and module.dropout.p == 0.25
    expected_mask = ~torch.ones(10, 10, dtype=torch.bool).tril()
    masks = [b for b in module.buffers() if b.shape == (10, 10)]
    assert any(torch.equal(b.bool(), expected_mask) for b in masks), "no causal mask buffer"


@pytest.mark.parametrize("shape", MODULE_SHAPES, ids=lambda s: "B{}-T{}-din{}-dout{}-ctx{}".format(*s))
@pytest.mark.parametrize("qkv_bias", [False, True])
def test_causal_attention_matches_sdpa(m, randn, close, dtype, shape, qkv_bias):
    check_causal_attention_matches_sdpa(m, randn, close, dtype, shape, qkv_bias)


def test_causal_attention_seed_123_gives_the_lesson_output(m, journey, dtype):
    torch.manual_seed(123)
    module = m.CausalAttention(3, 2, 6, 0.0).to(dtype)
    batch = torch.stack((journey, journey)).to(dtype)
    out = module(batch)
    assert out.shape == (2, 6, 2)
    expected = torch.tensor(SEED_123_FIRST_SEQUENCE, dtype=dtype)
    torch.testing.assert_close(out[0], expected, atol=1e-4, rtol=0)
    torch.testing.assert_close(out[1], expected, atol=1e-4, rtol=0)


def test_causal_attention_is_deterministic_in_eval_mode(m, randn, close, dtype):
    torch.manual_seed(1)
    module = m.CausalAttention(4, 6, 8, 0.5).to(dtype).eval()
    x = randn(2, 8, 4, dtype=dtype)
    first, second = module(x), module(x)
    assert torch.equal(first, second)
    close(first, F.scaled_dot_product_attention(*projections(module, x), is_causal=True))


@pytest.mark.parametrize("num_tokens", [5, 8])
def test_causal_attention_dropout_acts_on_the_weights_in_training(m, randn, close, dtype, num_tokens):
    p = 0.5
    torch.manual_seed(1)
    module = m.CausalAttention(4, 6, 8, p).to(dtype).train()
    x = randn(3, num_tokens, 4, dtype=dtype)
    torch.manual_seed(99)
    out = module(x)
    q, k, v = projections(module, x)
    eye = torch.eye(num_tokens, dtype=dtype).expand(3, num_tokens, num_tokens)
    with torch.no_grad():
        no_dropout = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        weights = F.scaled_dot_product_attention(q, k, eye, is_causal=True)  # weights @ I
    assert not torch.allclose(out, no_dropout), "dropout changed nothing in training mode"
    torch.manual_seed(99)
    expected = F.dropout(weights, p, training=True) @ v
    close(out, expected)


# ---- the oracles are not vacuous: on the stub they fail ----------------------------------------------------


def test_oracles_fail_on_the_stub(stub, randn, close):
    module = stub(ID)
    with pytest.raises(NotImplementedError):
        check_apply_causal_mask(module, randn, close, torch.float32, (2,), 5)
    with pytest.raises(NotImplementedError):
        check_causal_attention_matches_sdpa(module, randn, close, torch.float64, MODULE_SHAPES[2], True)
