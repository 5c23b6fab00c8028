"""02_self_attention: the reference solution against F.scaled_dot_product_attention and the lesson's numbers.

Our masks are True = hidden; F.scaled_dot_product_attention's boolean attn_mask is True = attend, so the
oracle passes ``~mask``. The oracle's weights are SDPA applied to identity values (weights @ I = weights).
"""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

ID = "02_self_attention"

V1_SEED_123 = [[0.2996, 0.8053], [0.3061, 0.8210], [0.3058, 0.8203], [0.2948, 0.7939], [0.2927, 0.7891], [0.2990, 0.8040]]
V2_SEED_789 = [
    [-0.0739, 0.0713], [-0.0748, 0.0703], [-0.0749, 0.0702], [-0.0760, 0.0685], [-0.0763, 0.0679], [-0.0754, 0.0693],
]
FORBIDDEN = {F.scaled_dot_product_attention, F.multi_head_attention_forward, torch._native_multi_head_attention}

# (leading dims, Tq, Tk, dk, dv)
SHAPES = [
    ((), 1, 1, 4, 4),
    ((), 5, 7, 8, 3),
    ((2,), 6, 6, 3, 5),
    ((2, 3), 4, 9, 6, 2),
    ((3,), 9, 1, 4, 4),
    ((2,), 1, 8, 5, 7),
]
MASKS = ["none", "full", "tq_tk", "key_padding"]


@pytest.fixture
def m(solution):
    return solution(ID)


def life_embeddings():
    """ "Life is short, eat dessert first" embedded to 16-d, as in the lesson."""
    words = "Life is short, eat dessert first".replace(",", "").split()
    vocab = {w: i for i, w in enumerate(sorted(words))}
    torch.manual_seed(123)
    return torch.nn.Embedding(6, 16)(torch.tensor([vocab[w] for w in words])).detach()


def reference_attention(q, k, v, mask=None):
    """F.scaled_dot_product_attention with our mask convention; fully hidden query rows give zeros."""
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=None if mask is None else ~mask)
    if mask is not None:
        out = out.masked_fill(mask.all(dim=-1, keepdim=True), 0.0)  # SDPA may give NaN there
    return out


def reference_weights(q, k, mask=None):
    num_keys = k.shape[-2]
    eye = torch.eye(num_keys, dtype=q.dtype).expand(*k.shape[:-2], num_keys, num_keys)
    return reference_attention(q, k, eye, mask)


def make_mask(kind, leading, num_queries, num_keys, generator):
    if kind == "none":
        return None
    shape = {"full": (*leading, num_queries, num_keys), "tq_tk": (num_queries, num_keys),
             "key_padding": (*leading, 1, num_keys)}[kind]
    return torch.rand(shape, generator=generator) < 0.3


def linear(x, layer):
    return x @ layer.weight.T + (0 if layer.bias is None else layer.bias)


# ---- oracles, written against any implementation of the module (also run on the stub below) -------------


def check_sdpa(m, randn, close, dtype, shape, mask_kind):
    leading, num_queries, num_keys, dk, dv = shape
    q, k, v = randn(*leading, num_queries, dk, dtype=dtype), randn(*leading, num_keys, dk, dtype=dtype), \
        randn(*leading, num_keys, dv, dtype=dtype)
    mask = make_mask(mask_kind, leading, num_queries, num_keys, torch.Generator().manual_seed(7))
    originals = [t.clone() for t in (q, k, v)]
    close(m.attention_weights(q, k, mask), reference_weights(q, k, mask))
    close(m.attention_weights(q, k, mask=mask), reference_weights(q, k, mask))
    close(m.scaled_dot_product_attention(q, k, v, mask), reference_attention(q, k, v, mask))
    for after, before in zip((q, k, v), originals):
        assert torch.equal(after, before), "an input was modified"


def check_v1_seed(m, journey, dtype):
    torch.manual_seed(123)
    module = m.SelfAttention_v1(3, 2).to(dtype)
    out = module(journey.to(dtype))
    torch.testing.assert_close(out, torch.tensor(V1_SEED_123, dtype=dtype), atol=1e-4, rtol=0)


def check_cross_attention(m, randn, close, dtype, leading, qkv_bias):
    torch.manual_seed(0)
    module = m.CrossAttention(5, 3, 4, 6, qkv_bias=qkv_bias).to(dtype)
    x_q, x_kv = randn(*leading, 7, 5, dtype=dtype), randn(*leading, 4, 3, dtype=dtype)
    expected = reference_attention(linear(x_q, module.W_query), linear(x_kv, module.W_key), linear(x_kv, module.W_value))
    close(module(x_q, x_kv), expected)


# ---- attention_weights and scaled_dot_product_attention -----------------------------------------------------


@pytest.mark.parametrize("mask_kind", MASKS)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"lead{len(s[0])}-Tq{s[1]}-Tk{s[2]}-dk{s[3]}-dv{s[4]}")
def test_matches_sdpa(m, randn, close, dtype, shape, mask_kind):
    check_sdpa(m, randn, close, dtype, shape, mask_kind)


def test_weights_rows_sum_to_one_and_hidden_keys_get_zero(m, randn, dtype):
    q, k = randn(2, 5, 4, dtype=dtype), randn(2, 6, 4, dtype=dtype)
    mask = torch.zeros(5, 6, dtype=torch.bool)
    mask[0, 1:] = True
    mask[3, :3] = True
    weights = m.attention_weights(q, k, mask)
    assert torch.equal(weights[..., mask], torch.zeros_like(weights[..., mask]))
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 5, dtype=dtype))
    torch.testing.assert_close(weights[:, 0, 0], torch.ones(2, dtype=dtype))


def test_scores_are_scaled_by_sqrt_dk(m, dtype):
    q = torch.tensor([[2.0, 0.0, 0.0, 0.0]], dtype=dtype)  # dk = 4: scores [2, 0] scaled to [1, 0]
    k = torch.tensor([[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]], dtype=dtype)
    expected = torch.softmax(torch.tensor([[1.0, 0.0]], dtype=dtype), dim=-1)
    torch.testing.assert_close(m.attention_weights(q, k), expected)


@pytest.mark.parametrize("mask_shape", ["tq_tk", "batched"])
def test_fully_hidden_rows_give_zeros(m, randn, close, dtype, mask_shape):
    q, k, v = randn(2, 4, 3, dtype=dtype), randn(2, 5, 3, dtype=dtype), randn(2, 5, 2, dtype=dtype)
    mask = torch.zeros(4, 5, dtype=torch.bool)
    mask[2] = True
    mask[0, 3] = True
    if mask_shape == "batched":
        mask = torch.stack([mask, torch.zeros_like(mask)])  # row 2 hidden in the first sequence only
    weights = m.attention_weights(q, k, mask)
    out = m.scaled_dot_product_attention(q, k, v, mask)
    assert not torch.isnan(weights).any() and not torch.isnan(out).any()
    assert torch.equal(weights[0, 2], torch.zeros_like(weights[0, 2]))
    assert torch.equal(out[0, 2], torch.zeros_like(out[0, 2]))
    close(weights, reference_weights(q, k, mask))
    close(out, reference_attention(q, k, v, mask))


def test_gradients_are_finite_with_fully_hidden_rows_and_match_sdpa(m, randn, close, dtype):
    q, k, v = randn(2, 4, 3, dtype=dtype), randn(2, 5, 3, dtype=dtype), randn(2, 5, 2, dtype=dtype)
    upstream = randn(2, 4, 2, dtype=dtype)
    mask = torch.rand(4, 5, generator=torch.Generator().manual_seed(3)) < 0.3
    mask[1] = True
    mask[3] = False

    ours = [t.clone().requires_grad_(True) for t in (q, k, v)]
    (m.scaled_dot_product_attention(*ours, mask) * upstream).sum().backward()
    for t in ours:
        assert torch.isfinite(t.grad).all(), "a gradient has NaN or inf"

    # Oracle: SDPA with the hidden row made visible, its output row then zeroed (so no gradient flows from it).
    theirs = [t.clone().requires_grad_(True) for t in (q, k, v)]
    visible_mask = mask.clone()
    visible_mask[1] = False
    keep = torch.ones(4, 1, dtype=dtype)
    keep[1] = 0.0
    (F.scaled_dot_product_attention(*theirs, attn_mask=~visible_mask) * keep * upstream).sum().backward()
    for a, b in zip(ours, theirs):
        close(a.grad, b.grad)


def test_sdpa_calls_no_library_attention(m, randn, function_recorder):
    q, k, v = randn(2, 3, 4), randn(2, 5, 4), randn(2, 5, 4)
    with function_recorder() as control:
        F.scaled_dot_product_attention(q, k, v)
    assert FORBIDDEN & set(control.funcs), "the recorder does not see F.scaled_dot_product_attention"
    with function_recorder() as rec:
        m.scaled_dot_product_attention(q, k, v)
        m.scaled_dot_product_attention(q, k, v, torch.eye(3, 5, dtype=torch.bool))
    assert rec.funcs, "no torch function was called"
    assert not FORBIDDEN & set(rec.funcs)


# ---- SelfAttention_v1, SelfAttention_v2, copy_v2_weights_into_v1 -------------------------------------------


def test_v1_seed_123_gives_the_lesson_output(m, journey, dtype):
    check_v1_seed(m, journey, dtype)


def test_v2_seed_789_gives_the_lesson_output(m, journey, dtype):
    torch.manual_seed(789)
    module = m.SelfAttention_v2(3, 2).to(dtype)
    out = module(journey.to(dtype))
    torch.testing.assert_close(out, torch.tensor(V2_SEED_789, dtype=dtype), atol=1e-4, rtol=0)


@pytest.mark.parametrize(("d_in", "d_out"), [(3, 2), (4, 4), (5, 8)])
@pytest.mark.parametrize("T", [1, 6])
def test_v1_matches_sdpa_on_its_parameters(m, randn, close, dtype, d_in, d_out, T):
    torch.manual_seed(1)
    module = m.SelfAttention_v1(d_in, d_out).to(dtype)
    shapes = {name: tuple(p.shape) for name, p in module.named_parameters()}
    assert shapes == {"W_query": (d_in, d_out), "W_key": (d_in, d_out), "W_value": (d_in, d_out)}
    assert all(isinstance(getattr(module, n), nn.Parameter) for n in shapes)
    x = randn(T, d_in, dtype=dtype)
    expected = reference_attention(x @ module.W_query, x @ module.W_key, x @ module.W_value)
    close(module(x), expected)


@pytest.mark.parametrize(("d_in", "d_out"), [(3, 2), (4, 4), (5, 8)])
@pytest.mark.parametrize("qkv_bias", [False, True])
@pytest.mark.parametrize("T", [1, 6])
def test_v2_matches_sdpa_on_its_parameters(m, randn, close, dtype, d_in, d_out, qkv_bias, T):
    torch.manual_seed(2)
    module = m.SelfAttention_v2(d_in, d_out, qkv_bias=qkv_bias).to(dtype)
    for name in ("W_query", "W_key", "W_value"):
        layer = getattr(module, name)
        assert isinstance(layer, nn.Linear) and tuple(layer.weight.shape) == (d_out, d_in)
        assert (layer.bias is not None) == qkv_bias
    x = randn(T, d_in, dtype=dtype)
    expected = reference_attention(linear(x, module.W_query), linear(x, module.W_key), linear(x, module.W_value))
    close(module(x), expected)


@pytest.mark.parametrize(("d_in", "d_out"), [(3, 2), (5, 8)])
def test_copy_v2_weights_into_v1(m, randn, close, dtype, d_in, d_out):
    torch.manual_seed(3)
    v2 = m.SelfAttention_v2(d_in, d_out).to(dtype)
    v1 = m.SelfAttention_v1(d_in, d_out).to(dtype)
    v2_before = {n: p.detach().clone() for n, p in v2.named_parameters()}
    x = randn(6, d_in, dtype=dtype)
    assert not torch.allclose(v1(x), v2(x)), "the two modules agree before the copy: the test proves nothing"
    assert m.copy_v2_weights_into_v1(v2, v1) is None
    close(v1(x), v2(x))
    for name in ("W_query", "W_key", "W_value"):
        assert torch.equal(getattr(v1, name).detach(), getattr(v2, name).weight.detach().T)
    for name, p in v2.named_parameters():
        assert torch.equal(p.detach(), v2_before[name]), "the v2 module was modified"


def test_copy_from_a_biased_v2_is_refused(m):
    with pytest.raises(ValueError):
        m.copy_v2_weights_into_v1(m.SelfAttention_v2(3, 2, qkv_bias=True), m.SelfAttention_v1(3, 2))


# ---- CrossAttention ------------------------------------------------------------------------------------------


def test_cross_attention_on_the_lesson_sentence(m, close, dtype):
    emb = life_embeddings().to(dtype)
    assert emb.shape == (6, 16)
    torch.manual_seed(123)
    module = m.CrossAttention(16, 16, 24, 28).to(dtype)
    assert tuple(module.W_query.weight.shape) == (24, 16)
    assert tuple(module.W_key.weight.shape) == (24, 16)
    assert tuple(module.W_value.weight.shape) == (28, 16)
    out = module(emb, emb)
    assert out.shape == (6, 28)
    close(out, reference_attention(module.W_query(emb), module.W_key(emb), module.W_value(emb)))
    other = emb[[5, 0, 2, 3]] * 0.5  # Tq = 6 != Tk = 4
    out = module(emb, other)
    assert out.shape == (6, 28)
    close(out, reference_attention(module.W_query(emb), module.W_key(other), module.W_value(other)))


@pytest.mark.parametrize("leading", [(), (2,), (2, 3)], ids=str)
@pytest.mark.parametrize("qkv_bias", [False, True])
def test_cross_attention_matches_sdpa_on_its_projections(m, randn, close, dtype, leading, qkv_bias):
    check_cross_attention(m, randn, close, dtype, leading, qkv_bias)


def test_cross_attention_single_query_and_key(m, randn, close, dtype):
    torch.manual_seed(4)
    module = m.CrossAttention(3, 5, 2, 4, qkv_bias=True).to(dtype)
    x_q, x_kv = randn(2, 1, 3, dtype=dtype), randn(2, 1, 5, dtype=dtype)
    close(module(x_q, x_kv), linear(x_kv, module.W_value))  # one key: its value, whatever the score


# ---- the oracles are not vacuous: on the stub they fail ----------------------------------------------------


def test_oracles_fail_on_the_stub(stub, journey, randn, close):
    module = stub(ID)
    with pytest.raises(NotImplementedError):
        check_sdpa(module, randn, close, torch.float32, SHAPES[3], "full")
    with pytest.raises(NotImplementedError):
        check_v1_seed(module, journey, torch.float64)
    with pytest.raises(NotImplementedError):
        check_cross_attention(module, randn, close, torch.float32, (2,), True)
