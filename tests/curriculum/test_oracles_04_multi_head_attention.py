"""04_multi_head_attention: the reference solution against nn.MultiheadAttention, per-head SDPA and einsum.

``MultiHeadAttentionWrapper`` imports ``causal_attention``: the ``solution`` fixture makes the
03_causal_attention module of the same folder importable under that name for the test's duration.
"""
from __future__ import annotations

import sys

import pytest
import torch
import torch.nn.functional as F
from torch import nn

ID = "04_multi_head_attention"

MHA_SEED_123 = [[0.3190, 0.4858], [0.2943, 0.3897], [0.2856, 0.3593], [0.2693, 0.3873], [0.2639, 0.3928], [0.2575, 0.4028]]
WRAPPER_SEED_123 = [
    [-0.4519, 0.2216, 0.4772, 0.1063],
    [-0.5874, 0.0058, 0.5891, 0.3257],
    [-0.6300, -0.0632, 0.6202, 0.3860],
    [-0.5675, -0.0843, 0.5478, 0.3589],
    [-0.5526, -0.0981, 0.5321, 0.3428],
    [-0.5299, -0.1081, 0.5077, 0.3493],
]
# (B, T, D, H)
SPLIT_SHAPES = [(1, 1, 4, 1), (2, 5, 8, 2), (3, 4, 12, 4), (2, 3, 6, 3)]
# (B, T, d_in, d_out, context_length, num_heads)
MHA_SHAPES = [(1, 1, 3, 4, 6, 2), (2, 6, 3, 2, 6, 2), (2, 5, 6, 8, 8, 4), (3, 7, 5, 12, 10, 3), (2, 4, 4, 4, 4, 1)]
# (B, N, dim, chan, num_heads, qkv_bias, qk_scale)
FUSED_SHAPES = [
    (2, 5, 8, 12, 3, False, None),
    (1, 4, 6, 6, 1, True, None),
    (2, 6, 5, 16, 4, True, 0.3),
    (3, 1, 4, 8, 2, False, None),
    (2, 7, 8, 8, 2, True, 2.0),
]


@pytest.fixture
def m(solution):
    return solution(ID)


def linear(x, layer):
    return x @ layer.weight.T + (0 if layer.bias is None else layer.bias)


def causal_hidden(num_tokens):
    return torch.ones(num_tokens, num_tokens, dtype=torch.bool).triu(1)


def per_head_reference(module, x, num_heads):
    """Causal multi-head attention written head by head with F.scaled_dot_product_attention."""
    q, k, v = linear(x, module.W_query), linear(x, module.W_key), linear(x, module.W_value)
    head_dim = q.shape[-1] // num_heads
    heads = [
        F.scaled_dot_product_attention(*(t[..., h * head_dim : (h + 1) * head_dim] for t in (q, k, v)), is_causal=True)
        for h in range(num_heads)
    ]
    return linear(torch.cat(heads, dim=-1), module.out_proj)


def fused_reference(module, x, num_heads, scale):
    """FusedQKVAttention with einsum: proj(softmax(q kᵀ * scale) v) + v, v merged back to [B, N, chan]."""
    batch, num_tokens, _ = x.shape
    qkv = linear(x, module.qkv)  # [B, N, 3 * chan]
    chan = qkv.shape[-1] // 3
    qkv = qkv.reshape(batch, num_tokens, 3, num_heads, chan // num_heads)
    q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]  # [B, N, H, hd]
    weights = torch.softmax(torch.einsum("bnhd,bmhd->bhnm", q, k) * scale, dim=-1)
    attended = torch.einsum("bhnm,bmhd->bnhd", weights, v).reshape(batch, num_tokens, chan)
    return linear(attended, module.proj) + v.reshape(batch, num_tokens, chan)


# ---- oracles, written against any implementation of the module (also run on the stub below) -------------


def check_split_heads(m, randn, dtype, shape):
    batch, num_tokens, dim, num_heads = shape
    head_dim = dim // num_heads
    x = randn(batch, num_tokens, dim, dtype=dtype)
    heads = m.split_heads(x, num_heads)
    assert heads.shape == (batch, num_heads, num_tokens, head_dim)
    for h in range(num_heads):
        assert torch.equal(heads[:, h], x[..., h * head_dim : (h + 1) * head_dim]), f"head {h}"
    assert torch.equal(m.merge_heads(heads), x)


def check_mha_against_torch(m, randn, close, dtype, batch, num_tokens, dim, num_heads, qkv_bias):
    torch.manual_seed(0)
    module = m.MultiHeadAttention(dim, dim, 8, 0.0, num_heads=num_heads, qkv_bias=qkv_bias).to(dtype)
    reference = nn.MultiheadAttention(dim, num_heads, bias=True, batch_first=True).to(dtype)
    with torch.no_grad():
        reference.in_proj_weight.copy_(torch.cat([module.W_query.weight, module.W_key.weight, module.W_value.weight]))
        if qkv_bias:
            reference.in_proj_bias.copy_(torch.cat([module.W_query.bias, module.W_key.bias, module.W_value.bias]))
        else:
            reference.in_proj_bias.zero_()
        reference.out_proj.weight.copy_(module.out_proj.weight)
        reference.out_proj.bias.copy_(module.out_proj.bias)
    x = randn(batch, num_tokens, dim, dtype=dtype)
    expected, _ = reference(x, x, x, attn_mask=causal_hidden(num_tokens), need_weights=False)
    close(module(x), expected)


def check_fused(m, randn, close, dtype, shape):
    batch, num_tokens, dim, chan, num_heads, qkv_bias, qk_scale = shape
    torch.manual_seed(0)
    module = m.FusedQKVAttention(dim, chan, num_heads=num_heads, qkv_bias=qkv_bias, qk_scale=qk_scale).to(dtype)
    x = randn(batch, num_tokens, dim, dtype=dtype)
    scale = qk_scale if qk_scale is not None else (chan // num_heads) ** -0.5
    close(module(x), fused_reference(module, x, num_heads, scale))


# ---- split_heads, merge_heads, split_qkv ----------------------------------------------------------------------


@pytest.mark.parametrize("shape", SPLIT_SHAPES, ids=lambda s: "B{}-T{}-D{}-H{}".format(*s))
def test_split_heads_takes_consecutive_features_and_round_trips(m, randn, dtype, shape):
    check_split_heads(m, randn, dtype, shape)


@pytest.mark.parametrize("layout", ["transposed", "strided"])
def test_split_heads_on_non_contiguous_input(m, randn, layout):
    if layout == "transposed":
        x = randn(5, 2, 8).transpose(0, 1)  # [2, 5, 8]
    else:
        x = randn(2, 5, 16)[..., ::2]  # [2, 5, 8]
    assert not x.is_contiguous()
    heads = m.split_heads(x, 4)
    assert heads.shape == (2, 4, 5, 2)
    for h in range(4):
        assert torch.equal(heads[:, h], x[..., 2 * h : 2 * h + 2])
    assert torch.equal(m.merge_heads(heads), x)


@pytest.mark.parametrize(("dim", "num_heads"), [(10, 4), (6, 4), (3, 2)])
def test_split_heads_rejects_indivisible_sizes(m, randn, dim, num_heads):
    with pytest.raises(ValueError):
        m.split_heads(randn(2, 3, dim), num_heads)


@pytest.mark.parametrize("shape", SPLIT_SHAPES, ids=lambda s: "B{}-T{}-D{}-H{}".format(*s))
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided"])
def test_merge_heads_concatenates_heads_in_order(m, randn, dtype, shape, layout):
    batch, num_tokens, dim, num_heads = shape
    head_dim = dim // num_heads
    if layout == "contiguous":
        x = randn(batch, num_heads, num_tokens, head_dim, dtype=dtype)
    elif layout == "transposed":
        x = randn(batch, num_tokens, num_heads, head_dim, dtype=dtype).transpose(1, 2)
    else:
        x = randn(batch, num_heads, head_dim, num_tokens, dtype=dtype).transpose(-1, -2)
    expected = torch.cat([x[:, h] for h in range(num_heads)], dim=-1)
    merged = m.merge_heads(x)
    assert merged.shape == (batch, num_tokens, dim)
    assert torch.equal(merged, expected)


@pytest.mark.parametrize("shape", SPLIT_SHAPES, ids=lambda s: "B{}-T{}-D{}-H{}".format(*s))
def test_split_qkv_layout(m, randn, dtype, shape):
    batch, num_tokens, dim, num_heads = shape
    qkv = randn(batch, num_tokens, 3 * dim, dtype=dtype)
    expected = qkv.reshape(batch, num_tokens, 3, num_heads, dim // num_heads).permute(2, 0, 3, 1, 4)
    q, k, v = m.split_qkv(qkv, num_heads)
    for actual, reference in zip((q, k, v), expected):
        assert torch.equal(actual, reference)
    assert torch.equal(q[:, 0, :, :], qkv[..., : dim // num_heads])  # head 0 of q: the first features


def test_split_qkv_on_non_contiguous_input(m, randn):
    qkv = randn(5, 2, 24).transpose(0, 1)
    q, k, v = m.split_qkv(qkv, 2)
    expected = qkv.reshape(2, 5, 3, 2, 4).permute(2, 0, 3, 1, 4)
    assert all(torch.equal(a, b) for a, b in zip((q, k, v), expected))


def test_split_qkv_rejects_indivisible_sizes(m, randn):
    with pytest.raises(ValueError):
        m.split_qkv(randn(2, 3, 12), 3)


# ---- MultiHeadAttention ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("batch", "num_tokens", "dim", "num_heads"), [(1, 1, 4, 2), (2, 6, 8, 2), (3, 5, 8, 4), (2, 7, 6, 1)])
@pytest.mark.parametrize("qkv_bias", [True, False])
def test_mha_matches_torch_multihead_attention(m, randn, close, dtype, batch, num_tokens, dim, num_heads, qkv_bias):
    check_mha_against_torch(m, randn, close, dtype, batch, num_tokens, dim, num_heads, qkv_bias)


@pytest.mark.parametrize("shape", MHA_SHAPES, ids=lambda s: "B{}-T{}-din{}-dout{}-ctx{}-H{}".format(*s))
@pytest.mark.parametrize("qkv_bias", [False, True])
def test_mha_matches_per_head_sdpa(m, randn, close, dtype, shape, qkv_bias):
    batch, num_tokens, d_in, d_out, context_length, num_heads = shape
    torch.manual_seed(1)
    module = m.MultiHeadAttention(d_in, d_out, context_length, 0.0, num_heads=num_heads, qkv_bias=qkv_bias).to(dtype)
    x = randn(batch, num_tokens, d_in, dtype=dtype)
    before = x.clone()
    close(module(x), per_head_reference(module, x, num_heads))
    assert torch.equal(x, before)


@pytest.mark.parametrize("qkv_bias", [False, True])
def test_mha_parameters(m, qkv_bias):
    module = m.MultiHeadAttention(5, 8, 10, 0.1, num_heads=2, qkv_bias=qkv_bias)
    for name in ("W_query", "W_key", "W_value"):
        layer = getattr(module, name)
        assert isinstance(layer, nn.Linear) and tuple(layer.weight.shape) == (8, 5)
        assert (layer.bias is not None) == qkv_bias
    assert isinstance(module.out_proj, nn.Linear) and tuple(module.out_proj.weight.shape) == (8, 8)
    assert module.out_proj.bias is not None


def test_mha_seed_123_gives_the_lesson_output(m, journey, dtype):
    torch.manual_seed(123)
    module = m.MultiHeadAttention(3, 2, 6, 0.0, num_heads=2).to(dtype)
    out = module(torch.stack((journey, journey)).to(dtype))
    assert out.shape == (2, 6, 2)
    expected = torch.tensor(MHA_SEED_123, dtype=dtype)
    torch.testing.assert_close(out[0], expected, atol=1e-4, rtol=0)
    torch.testing.assert_close(out[1], expected, atol=1e-4, rtol=0)


@pytest.mark.parametrize(("d_out", "num_heads"), [(6, 4), (5, 2), (3, 2)])
def test_mha_rejects_indivisible_sizes(m, d_out, num_heads):
    with pytest.raises(ValueError):
        m.MultiHeadAttention(3, d_out, 6, 0.0, num_heads=num_heads)


def test_mha_is_deterministic_in_eval_mode(m, randn, close, dtype):
    torch.manual_seed(2)
    module = m.MultiHeadAttention(4, 8, 8, 0.5, num_heads=2).to(dtype).eval()
    x = randn(2, 6, 4, dtype=dtype)
    first = module(x)
    assert torch.equal(first, module(x))
    close(first, per_head_reference(module, x, 2))


# ---- MultiHeadAttentionWrapper -------------------------------------------------------------------------------


@pytest.mark.parametrize(("batch", "num_tokens", "d_in", "d_out", "context_length", "num_heads"),
                         [(2, 6, 3, 2, 6, 2), (1, 1, 4, 3, 5, 3), (3, 4, 5, 4, 8, 1)])
def test_wrapper_concatenates_its_heads_in_order(m, randn, close, dtype, batch, num_tokens, d_in, d_out,
                                                 context_length, num_heads):
    causal_attention = sys.modules["causal_attention"]
    torch.manual_seed(3)
    module = m.MultiHeadAttentionWrapper(d_in, d_out, context_length, 0.0, num_heads=num_heads).to(dtype)
    assert isinstance(module.heads, nn.ModuleList) and len(module.heads) == num_heads
    assert all(isinstance(head, causal_attention.CausalAttention) for head in module.heads)
    x = randn(batch, num_tokens, d_in, dtype=dtype)
    out = module(x)
    assert out.shape == (batch, num_tokens, num_heads * d_out)
    close(out, torch.cat([head(x) for head in module.heads], dim=-1))
    for h, head in enumerate(module.heads):  # and each head is causal attention on its own projections
        q, k, v = linear(x, head.W_query), linear(x, head.W_key), linear(x, head.W_value)
        close(out[..., h * d_out : (h + 1) * d_out], F.scaled_dot_product_attention(q, k, v, is_causal=True))


def test_wrapper_passes_qkv_bias_to_its_heads(m):
    module = m.MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2, qkv_bias=True)
    assert all(head.W_query.bias is not None for head in module.heads)
    module = m.MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2)
    assert all(head.W_query.bias is None for head in module.heads)


def test_wrapper_seed_123_gives_the_lesson_output(m, journey, dtype):
    torch.manual_seed(123)
    module = m.MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2).to(dtype)
    out = module(torch.stack((journey, journey)).to(dtype))
    assert out.shape == (2, 6, 4)
    torch.testing.assert_close(out[0], torch.tensor(WRAPPER_SEED_123, dtype=dtype), atol=1e-4, rtol=0)


# ---- FusedQKVAttention ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", FUSED_SHAPES, ids=lambda s: "B{}-N{}-dim{}-chan{}-H{}-bias{}-scale{}".format(*s))
def test_fused_qkv_matches_einsum(m, randn, close, dtype, shape):
    check_fused(m, randn, close, dtype, shape)


@pytest.mark.parametrize("qkv_bias", [False, True])
def test_fused_qkv_parameters(m, qkv_bias):
    module = m.FusedQKVAttention(6, 12, num_heads=3, qkv_bias=qkv_bias)
    assert isinstance(module.qkv, nn.Linear) and tuple(module.qkv.weight.shape) == (36, 6)
    assert (module.qkv.bias is not None) == qkv_bias
    assert isinstance(module.proj, nn.Linear) and tuple(module.proj.weight.shape) == (12, 12)
    assert module.proj.bias is not None


@pytest.mark.parametrize(("chan", "num_heads"), [(10, 4), (6, 4), (5, 2)])
def test_fused_qkv_rejects_indivisible_sizes(m, chan, num_heads):
    with pytest.raises(ValueError):
        m.FusedQKVAttention(4, chan, num_heads=num_heads)


# ---- the oracles are not vacuous: on the stub they fail ----------------------------------------------------


def test_oracles_fail_on_the_stub(stub, randn, close):
    module = stub(ID)
    with pytest.raises(NotImplementedError):
        check_split_heads(module, randn, torch.float32, SPLIT_SHAPES[2])
    with pytest.raises(NotImplementedError):
        check_mha_against_torch(module, randn, close, torch.float64, 2, 5, 8, 2, True)
    with pytest.raises(NotImplementedError):
        check_fused(module, randn, close, torch.float32, FUSED_SHAPES[2])
