"""06_decoding_attention: the reference solution against hand-derived facts and independent attention.

The independent attention (``attention_oracle``) projects with the module's own weights, gives query head
``h`` the key/value group ``h // (num_heads / num_kv_groups)`` by indexing, and attends with
``F.scaled_dot_product_attention`` under a boolean mask built from ``tril``/``triu`` (there True means
*attend*, the inverse of the course's masks). RoPE is checked against its definition as a complex
multiplication: feature ``i`` and ``i + hd/2`` form the number ``x_i + j x_{i+hd/2}``, turned by
``exp(j * pos * theta^(-2i/hd))``. The cached classes are fed a sequence in one call, token by token and in
chunks after ``reset_cache()``; the cache is measured by the element count of ``cache_k`` and ``cache_v``.
"""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

ID = "06_decoding_attention"
MHA, GQA, SWA = "CachedMultiHeadAttention", "GroupedQueryAttention", "MultiHeadAttentionWithSWA"

# (name, d_in, d_out, num_heads, num_kv_groups, window); num_kv_groups only for GQA, window only for SWA
CONFIGS = [
    (MHA, 6, 8, 2, None, None),
    (MHA, 5, 12, 3, None, None),
    (GQA, 6, 8, 4, 2, None),
    (GQA, 5, 12, 6, 3, None),
    (GQA, 4, 8, 4, 1, None),
    (SWA, 6, 8, 2, None, 3),
    (SWA, 5, 12, 3, None, 1),
    (SWA, 6, 8, 2, None, 4),
]
CONFIG_IDS = [f"{ {MHA: 'MHA', GQA: 'GQA', SWA: 'SWA'}[n]}-din{a}-dout{b}-H{h}" + (f"-G{g}" if g else "")
              + (f"-W{w}" if w else "") for n, a, b, h, g, w in CONFIGS]
ONE_OF_EACH = [pytest.param(CONFIGS[i], id=CONFIG_IDS[i]) for i in (0, 2, 5)]
CHUNKINGS = {"one-call": (9,), "token-by-token": (1,) * 9, "chunks": (4, 3, 2), "long-chunk-first": (7, 1, 1)}


@pytest.fixture
def m(solution):
    return solution(ID)


def picture(*rows):
    """A boolean mask drawn row by row: 'x' hidden (True), '.' seen."""
    return torch.tensor([[c == "x" for c in row] for row in rows])


def linear(x, layer):
    return x @ layer.weight.T + (0 if layer.bias is None else layer.bias)


def build(m, name, d_in, d_out, num_heads, num_kv_groups=None, window=None, *, dtype=torch.float32, seed=0,
          qkv_bias=False, dropout=0.0):
    torch.manual_seed(seed)
    if name == MHA:
        module = m.CachedMultiHeadAttention(d_in, d_out, 16, dropout, num_heads, qkv_bias=qkv_bias)
    elif name == GQA:
        module = m.GroupedQueryAttention(d_in, d_out, dropout, num_heads, num_kv_groups, qkv_bias=qkv_bias)
    else:
        module = m.MultiHeadAttentionWithSWA(d_in, d_out, dropout, num_heads, qkv_bias=qkv_bias,
                                             sliding_window_size=window)
    return module.to(dtype).eval()


def attention_oracle(module, x, num_heads, num_kv_groups=None, window=None):
    """Causal (and windowed) attention of ``x`` [B, T, d_in] with the module's weights, by SDPA."""
    batch, num_tokens, _ = x.shape
    groups = num_kv_groups or num_heads
    q, k, v = linear(x, module.W_query), linear(x, module.W_key), linear(x, module.W_value)
    head_dim = q.shape[-1] // num_heads
    q = q.reshape(batch, num_tokens, num_heads, head_dim).transpose(1, 2)  # [B, H, T, hd]
    group_of_head = torch.arange(num_heads) // (num_heads // groups)  # head h -> group h // group_size
    k = k.reshape(batch, num_tokens, groups, head_dim).transpose(1, 2)[:, group_of_head]  # [B, H, T, hd]
    v = v.reshape(batch, num_tokens, groups, head_dim).transpose(1, 2)[:, group_of_head]
    seen = torch.ones(num_tokens, num_tokens, dtype=torch.bool).tril()
    if window is not None:
        seen &= torch.ones(num_tokens, num_tokens, dtype=torch.bool).triu(-(window - 1))
    context = F.scaled_dot_product_attention(q, k, v, attn_mask=seen)  # [B, H, T, hd]
    return linear(context.transpose(1, 2).reshape(batch, num_tokens, num_heads * head_dim), module.out_proj)


def cache_numel(module) -> int:
    return sum(t.numel() for t in (module.cache_k, module.cache_v) if t is not None)


def decode(module, x, chunks):
    """``x`` fed after reset_cache() in chunks of these sizes with use_cache=True; the outputs joined."""
    assert sum(chunks) == x.shape[1]
    module.reset_cache()
    outputs, start = [], 0
    for size in chunks:
        outputs.append(module(x[:, start:start + size], use_cache=True))
        start += size
    return torch.cat(outputs, dim=1)


def rope_by_complex_numbers(x, positions, theta_base=10_000):
    """x [..., T, hd] turned as complex numbers x_i + j x_{i+hd/2} by exp(j * position * theta^(-2i/hd))."""
    half = x.shape[-1] // 2
    frequencies = theta_base ** (-torch.arange(half, dtype=torch.float64) * 2 / x.shape[-1])  # [hd/2]
    angles = torch.as_tensor(positions, dtype=torch.float64)[:, None] * frequencies  # [T, hd/2]
    z = torch.complex(x[..., :half].double(), x[..., half:].double()) * torch.polar(torch.ones_like(angles), angles)
    return torch.cat([z.real, z.imag], dim=-1).to(x.dtype)


def rope_tables(head_dim, context_length, dtype, theta_base=10_000):
    """cos and sin [context_length, head_dim] of the rotary angles, computed in float64, then cast."""
    half = head_dim // 2
    frequencies = theta_base ** (-torch.arange(half, dtype=torch.float64) * 2 / head_dim)
    angles = torch.arange(context_length, dtype=torch.float64)[:, None] * frequencies
    angles = torch.cat([angles, angles], dim=-1)
    return angles.cos().to(dtype), angles.sin().to(dtype)


def window_by_loops(num_queries, num_keys, window, q_start=0, k_start=0):
    """The sliding-window mask from its definition, one entry at a time."""
    hidden = torch.zeros(num_queries, num_keys, dtype=torch.bool)
    for i in range(num_queries):
        for j in range(num_keys):
            query, key = q_start + i, k_start + j
            hidden[i, j] = key > query or (window is not None and query - key >= window)
    return hidden


# ---- oracles, written against any implementation of the module (also run on the stub below) -------------


def check_rope_params(m, head_dim, theta_base, context_length):
    cos, sin = m.compute_rope_params(head_dim, theta_base=theta_base, context_length=context_length)
    assert cos.shape == sin.shape == (context_length, head_dim)
    assert cos.dtype == sin.dtype == torch.float32
    frequencies = theta_base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)  # [hd/2]
    angles = torch.arange(context_length, dtype=torch.float64)[:, None] * frequencies  # [L, hd/2]
    angles = torch.cat([angles, angles], dim=-1)
    slack = 4 * context_length * 2.0**-24  # the float32 rounding of angles that grow with the position
    torch.testing.assert_close(cos.double(), angles.cos(), atol=slack + 1e-6, rtol=0)
    torch.testing.assert_close(sin.double(), angles.sin(), atol=slack + 1e-6, rtol=0)


def check_rope_matches_complex_rotation(m, randn, close, dtype, shape, offset):
    x = randn(*shape, dtype=dtype)
    before = x.clone()
    cos, sin = rope_tables(shape[-1], offset + shape[-2] + 3, dtype)  # apply_rope alone: tables of our own
    out = m.apply_rope(x, cos, sin, offset=offset)
    assert out.dtype == dtype and out.shape == x.shape
    close(out, rope_by_complex_numbers(x, torch.arange(offset, offset + shape[-2])))
    assert torch.equal(x, before), "apply_rope modified its input"


def check_repeat_kv(m, randn, dtype, shape, group_size):
    x = randn(*shape, dtype=dtype)
    out = m.repeat_kv(x, group_size)
    batch, groups, num_tokens, head_dim = shape
    assert out.shape == (batch, groups * group_size, num_tokens, head_dim)
    for head in range(groups * group_size):
        assert torch.equal(out[:, head], x[:, head // group_size]), f"query head {head}"


def check_window_mask(m, args):
    mask = m.sliding_window_mask(*args)
    assert mask.dtype == torch.bool
    assert torch.equal(mask, window_by_loops(*args))


def check_cached_matches_the_oracle(m, randn, close, dtype, config, chunks):
    name, d_in, d_out, num_heads, groups, window = config
    module = build(m, name, d_in, d_out, num_heads, groups, window, dtype=dtype, qkv_bias=True)
    x = randn(2, sum(chunks), d_in, dtype=dtype)
    with torch.no_grad():
        expected = attention_oracle(module, x, num_heads, groups, window)
        close(module(x), expected)
        close(decode(module, x, chunks), expected)


# ---- compute_rope_params -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("head_dim", "theta_base", "context_length"),
                         [(2, 10_000, 5), (8, 10_000, 64), (16, 500_000, 32), (64, 10_000, 4096)],
                         ids=["hd2-L5", "hd8-L64", "hd16-theta5e5", "hd64-L4096"])
def test_rope_params_are_the_angles_of_the_definition(m, head_dim, theta_base, context_length):
    check_rope_params(m, head_dim, theta_base, context_length)


def test_rope_params_worked_out_by_hand(m):
    """head_dim 4, theta_base 100: frequencies 1 and 100^(-1/2) = 0.1, the same for both halves."""
    cos, sin = m.compute_rope_params(4, theta_base=100, context_length=3)
    angles = torch.tensor([[0.0, 0.0, 0.0, 0.0], [1.0, 0.1, 1.0, 0.1], [2.0, 0.2, 2.0, 0.2]], dtype=torch.float64)
    torch.testing.assert_close(cos.double(), angles.cos(), atol=1e-6, rtol=0)
    torch.testing.assert_close(sin.double(), angles.sin(), atol=1e-6, rtol=0)


def test_rope_params_defaults_and_the_first_position(m):
    cos, sin = m.compute_rope_params(6)
    assert cos.shape == sin.shape == (4096, 6)  # context_length=4096 by default
    assert torch.equal(cos[0], torch.ones(6)) and torch.equal(sin[0], torch.zeros(6))  # position 0: no turn
    assert torch.equal(cos[:, :3], cos[:, 3:]) and torch.equal(sin[:, :3], sin[:, 3:])  # both halves alike
    torch.testing.assert_close(cos[:, 0].double(), torch.arange(4096, dtype=torch.float64).cos(), atol=1e-3, rtol=0)
    torch.testing.assert_close(cos**2 + sin**2, torch.ones(4096, 6), atol=1e-6, rtol=0)


@pytest.mark.parametrize("head_dim", [1, 7, 33])
def test_rope_params_reject_an_odd_head_dim(m, head_dim):
    with pytest.raises((ValueError, AssertionError)):  # ValueError; the book's AssertionError is accepted
        m.compute_rope_params(head_dim)


# ---- apply_rope ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("shape", "offset"), [((2, 3, 5, 8), 0), ((1, 2, 1, 4), 9), ((2, 4, 6, 16), 17),
                                               ((3, 1, 7, 2), 2)], ids=["B2-H3-T5", "T1-offset9", "offset17", "hd2"])
def test_apply_rope_is_a_complex_rotation(m, randn, close, dtype, shape, offset):
    check_rope_matches_complex_rotation(m, randn, close, dtype, shape, offset)


def test_apply_rope_worked_out_by_hand(m):
    """One head of two features with quarter turns per position: (1, 0) at position 1 becomes (0, 1),
    (0, 1) at position 2 becomes (0, -1); position 0 does not turn."""
    angles = torch.arange(3, dtype=torch.float64)[:, None].expand(3, 2) * math.pi / 2
    cos, sin = angles.cos(), angles.sin()
    x = torch.tensor([[[[1.0, 0.0], [0.0, 1.0]]]], dtype=torch.float64)  # [1, 1, 2, 2]
    from_0 = torch.tensor([[[[1.0, 0.0], [-1.0, 0.0]]]], dtype=torch.float64)  # positions 0 and 1
    from_1 = torch.tensor([[[[0.0, 1.0], [0.0, -1.0]]]], dtype=torch.float64)  # positions 1 and 2
    torch.testing.assert_close(m.apply_rope(x, cos, sin), from_0, atol=1e-12, rtol=0)
    torch.testing.assert_close(m.apply_rope(x, cos, sin, offset=1), from_1, atol=1e-12, rtol=0)


def test_apply_rope_at_position_zero_is_the_identity(m, randn, close, dtype):
    cos, sin = m.compute_rope_params(8, context_length=16)
    x = randn(2, 3, 1, 8, dtype=dtype)
    close(m.apply_rope(x, cos, sin), x)
    x = randn(2, 3, 6, 8, dtype=dtype)
    out = m.apply_rope(x, cos, sin)
    close(out[:, :, 0], x[:, :, 0])  # the first token of a pass from 0
    assert not torch.allclose(out[:, :, 1:], x[:, :, 1:])  # the others turn


def test_apply_rope_preserves_the_norm_of_each_pair(m, randn):
    cos, sin = m.compute_rope_params(8, context_length=64)
    x = randn(2, 3, 20, 8, dtype=torch.float64)
    out = m.apply_rope(x, cos, sin, offset=40)
    pairs_in = x[..., :4] ** 2 + x[..., 4:] ** 2  # feature i turns with feature i + hd/2
    torch.testing.assert_close(out[..., :4] ** 2 + out[..., 4:] ** 2, pairs_in, atol=1e-6, rtol=1e-6)
    assert not torch.allclose(out, x)  # and it did turn


@pytest.mark.parametrize("head_dim", [4, 16])
def test_apply_rope_scores_depend_on_the_distance_only(m, randn, head_dim):
    """q at position a and k at position b: the score q(a)·k(b) depends on a - b only."""
    cos, sin = m.compute_rope_params(head_dim, context_length=128)
    cos, sin = cos.double(), sin.double()
    q, k = randn(1, 1, 1, head_dim, dtype=torch.float64), randn(1, 1, 1, head_dim, dtype=torch.float64)

    def score(a, b):
        return (m.apply_rope(q, cos, sin, offset=a) * m.apply_rope(k, cos, sin, offset=b)).sum().item()

    for distance in (0, 1, 5):
        scores = [score(b + distance, b) for b in (0, 3, 40, 100)]
        assert max(scores) - min(scores) < 1e-6, (distance, scores)  # float32 tables
    assert abs(score(5, 0) - score(0, 0)) > 1e-6  # the distance itself does change it
    assert abs(score(0, 0) - (q * k).sum().item()) < 1e-12  # position 0 for both: the plain dot product


def test_apply_rope_with_an_offset_is_a_slice_of_a_longer_pass(m, randn, close):
    cos, sin = m.compute_rope_params(8, context_length=32)
    x = randn(2, 2, 12, 8)
    whole = m.apply_rope(x, cos, sin)
    close(m.apply_rope(x[:, :, 7:], cos, sin, offset=7), whole[:, :, 7:])
    close(m.apply_rope(x[:, :, 11:], cos, sin, offset=11), whole[:, :, 11:])


def test_apply_rope_turned_back_gives_the_input(m, randn, close):
    cos, sin = m.compute_rope_params(16, context_length=50)
    x = randn(2, 3, 9, 16, dtype=torch.float64)
    turned = m.apply_rope(x, cos.double(), sin.double(), offset=30)
    close(m.apply_rope(turned, cos.double(), -sin.double(), offset=30), x, atol=1e-6)  # cos² + sin² = 1 in float32


@pytest.mark.parametrize("low", [torch.float16, torch.bfloat16])
def test_apply_rope_keeps_a_low_precision_dtype(m, randn, low):
    cos, sin = m.compute_rope_params(8, context_length=16)  # float32 tables
    x = randn(1, 2, 5, 8).to(low)
    out = m.apply_rope(x, cos, sin, offset=3)
    assert out.dtype == low
    torch.testing.assert_close(out.float(), rope_by_complex_numbers(x.float(), torch.arange(3, 8)),
                               atol=2e-2, rtol=2e-2)


# ---- repeat_kv ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("shape", "group_size"), [((2, 2, 5, 4), 2), ((1, 3, 1, 2), 4), ((2, 1, 7, 8), 3),
                                                   ((2, 4, 3, 2), 1)], ids=["G2x2", "T1-G3x4", "G1x3", "G4x1"])
def test_repeat_kv_gives_query_head_h_the_group_h_over_group_size(m, randn, dtype, shape, group_size):
    check_repeat_kv(m, randn, dtype, shape, group_size)


def test_repeat_kv_repeats_each_group_in_a_row_not_tiled(m):
    x = torch.tensor([1.0, 2.0])[None, :, None, None].expand(1, 2, 3, 2)  # K1 = 1, K2 = 2
    heads = m.repeat_kv(x, 2)[0, :, 0, 0]
    assert heads.tolist() == [1.0, 1.0, 2.0, 2.0]  # [K1, K1, K2, K2], not [K1, K2, K1, K2]


def test_repeat_kv_on_non_contiguous_input(m, randn):
    x = randn(2, 5, 3, 4).transpose(1, 2)  # [B, G=3, T=5, hd=4]
    assert not x.is_contiguous()
    out = m.repeat_kv(x, 2)
    assert out.shape == (2, 6, 5, 4)
    assert all(torch.equal(out[:, h], x[:, h // 2]) for h in range(6))


# ---- sliding_window_mask ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("window", "expected"), [
    (1, picture(".xxxx", "x.xxx", "xx.xx", "xxx.x", "xxxx.")),
    (2, picture(".xxxx", "..xxx", "x..xx", "xx..x", "xxx..")),
    (3, picture(".xxxx", "..xxx", "...xx", "x...x", "xx...")),
    (5, picture(".xxxx", "..xxx", "...xx", "....x", ".....")),
], ids=["W1", "W2", "W3", "W5"])
def test_sliding_window_mask_worked_out_by_hand(m, window, expected):
    assert torch.equal(m.sliding_window_mask(5, 5, window), expected)


def test_sliding_window_mask_of_cached_calls_worked_out_by_hand(m):
    # queries at positions 4 and 5 over keys 0 ... 5, window 3
    assert torch.equal(m.sliding_window_mask(2, 6, 3, q_start=4), picture("xx...x", "xxx..."))
    # queries at positions 6 and 7 over the keys 4 ... 7 a window cache keeps, window 3
    assert torch.equal(m.sliding_window_mask(2, 4, 3, q_start=6, k_start=4), picture("...x", "x..."))
    # one query at position 9 over keys 7, 8, 9: all in its window
    assert torch.equal(m.sliding_window_mask(1, 3, 3, q_start=9, k_start=7), picture("..."))


@pytest.mark.parametrize("args", [(6, 6, 3), (1, 1, 1), (4, 9, 2, 5, 0), (3, 5, 4, 8, 6), (7, 7, 1), (5, 8, 3, 3, 0),
                                  (4, 4, None), (3, 7, None, 4, 0)],
                         ids=["T6-W3", "T1-W1", "chunk-at-5", "cached-keys-from-6", "W1", "Tq5-Tk8",
                              "no-window", "no-window-chunk"])
def test_sliding_window_mask_matches_its_definition(m, args):
    check_window_mask(m, args)


@pytest.mark.parametrize("num_tokens", [1, 4, 9])
def test_sliding_window_mask_wider_than_the_sequence_is_causal(m, num_tokens):
    causal = torch.ones(num_tokens, num_tokens, dtype=torch.bool).triu(1)
    assert torch.equal(m.sliding_window_mask(num_tokens, num_tokens, num_tokens), causal)
    assert torch.equal(m.sliding_window_mask(num_tokens, num_tokens, 100), causal)


def test_sliding_window_mask_every_query_sees_at_most_window_keys(m):
    mask = m.sliding_window_mask(12, 12, 4)
    seen = (~mask).sum(dim=-1)
    assert seen.tolist() == [1, 2, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4]
    assert (~mask).diagonal().all()  # each query sees itself


# ---- the cached classes: one pass, cached calls, the cache -----------------------------------------------------


@pytest.mark.parametrize("config", CONFIGS, ids=CONFIG_IDS)
@pytest.mark.parametrize("chunks", list(CHUNKINGS.values()), ids=list(CHUNKINGS))
def test_cached_calls_give_the_independent_full_pass(m, randn, close, config, chunks):
    check_cached_matches_the_oracle(m, randn, close, torch.float32, config, chunks)


@pytest.mark.parametrize("config", ONE_OF_EACH)
def test_cached_calls_in_float64(m, randn, close, config):
    check_cached_matches_the_oracle(m, randn, close, torch.float64, config, (2, 1, 3, 3))


@pytest.mark.parametrize("config", ONE_OF_EACH)
def test_one_token_sees_only_itself(m, randn, close, config):
    """A sequence of one token (or window 1) attends to itself with weight 1: out_proj(value(x))."""
    name, d_in, d_out, num_heads, groups, window = config
    module = build(m, name, d_in, d_out, num_heads, groups, window, qkv_bias=True)
    x = randn(3, 1, d_in)
    values = linear(x, module.W_value)  # [B, 1, G*hd]
    head_dim = d_out // num_heads
    per_head = values.reshape(3, 1, groups or num_heads, head_dim)[:, :, torch.arange(num_heads) //
                                                                   (num_heads // (groups or num_heads))]
    with torch.no_grad():
        close(module(x), linear(per_head.reshape(3, 1, d_out), module.out_proj))


def test_window_one_sees_only_itself(m, randn, close):
    module = build(m, SWA, 5, 6, 3, window=1, qkv_bias=True)
    x = randn(2, 7, 5)
    with torch.no_grad():
        expected = linear(linear(x, module.W_value), module.out_proj)
        close(module(x), expected)
        close(decode(module, x, (1,) * 7), expected)
        close(decode(module, x, (3, 4)), expected)


@pytest.mark.parametrize(("name", "window"), [(MHA, None), (SWA, 3)])
def test_each_output_depends_on_its_window_of_inputs_only(m, randn, name, window):
    """d out[t] / d x[s] is nonzero exactly for the s that query t sees: s <= t (and t - s < window)."""
    module = build(m, name, 4, 6, 2, window=window, dtype=torch.float64)
    x = randn(1, 8, 4, dtype=torch.float64)
    jacobian = torch.autograd.functional.jacobian(lambda inp: module(inp), x)  # [1, 8, 6, 1, 8, 4]
    reaches = jacobian[0, :, :, 0].abs().sum(dim=(1, 3)) > 0  # [t, s]
    seen = ~window_by_loops(8, 8, window)
    assert torch.equal(reaches, seen)


@pytest.mark.parametrize("config", CONFIGS, ids=CONFIG_IDS)
def test_keys_and_values_of_a_token_are_computed_once(m, randn, config):
    """With the cache, W_key and W_value see each token exactly once, however the sequence is split."""
    name, d_in, d_out, num_heads, groups, window = config
    module = build(m, name, d_in, d_out, num_heads, groups, window)
    seen = {"W_key": 0, "W_value": 0}
    for layer in seen:
        getattr(module, layer).register_forward_pre_hook(
            lambda mod, args, layer=layer: seen.__setitem__(layer, seen[layer] + args[0].shape[1]))
    with torch.no_grad():
        decode(module, randn(2, 9, d_in), (1, 3, 1, 4))
    assert seen == {"W_key": 9, "W_value": 9}


@pytest.mark.parametrize("config", CONFIGS, ids=CONFIG_IDS)
def test_the_cache_holds_what_the_spec_says(m, randn, config):
    """After t cached tokens of a batch of B: MHA keeps 2*B*t*d_out elements, GQA 2*B*t*G*hd (its groups
    only), SWA 2*B*min(t, window)*d_out (never more than the window)."""
    name, d_in, d_out, num_heads, groups, window = config
    module = build(m, name, d_in, d_out, num_heads, groups, window)
    x = randn(2, 9, d_in)
    per_token = 2 * 2 * (groups * (d_out // num_heads) if name == GQA else d_out)  # K and V, batch of 2
    module.reset_cache()
    assert cache_numel(module) == 0
    with torch.no_grad():
        for t in range(1, 10):
            module(x[:, t - 1:t], use_cache=True)
            kept = t if window is None else min(t, window)
            assert cache_numel(module) == per_token * kept, f"after {t} tokens"
        decode(module, x, (4, 5))
        assert cache_numel(module) == per_token * (9 if window is None else min(9, window)), "after chunks"


def test_gqa_cache_is_smaller_than_mha_cache_by_the_group_ratio(m, randn):
    mha = build(m, MHA, 6, 12, 6)
    gqa = build(m, GQA, 6, 12, 6, 2)
    swa = build(m, SWA, 6, 12, 6, window=3)
    x = randn(2, 9, 6)
    with torch.no_grad():
        for module in (mha, gqa, swa):
            decode(module, x, (1,) * 9)
    assert cache_numel(mha) == 2 * 2 * 9 * 12
    assert cache_numel(gqa) * 3 == cache_numel(mha)  # 6 heads share 2 groups
    assert cache_numel(swa) * 3 == cache_numel(mha)  # 3 of 9 positions kept


@pytest.mark.parametrize("config", CONFIGS, ids=CONFIG_IDS)
def test_reset_cache_empties_the_cache_and_starts_over(m, randn, close, config):
    name, d_in, d_out, num_heads, groups, window = config
    module = build(m, name, d_in, d_out, num_heads, groups, window)
    with torch.no_grad():
        decode(module, randn(2, 5, d_in), (1,) * 5)
        assert cache_numel(module) > 0
        module.reset_cache()
        assert module.cache_k is None and module.cache_v is None
        other = randn(1, 6, d_in)  # another sequence and batch size, from position 0
        outputs = [module(other[:, :2], use_cache=True), module(other[:, 2:3], use_cache=True),
                   module(other[:, 3:], use_cache=True)]
        close(torch.cat(outputs, dim=1), attention_oracle(module, other, num_heads, groups, window))


@pytest.mark.parametrize("config", CONFIGS, ids=CONFIG_IDS)
def test_without_the_cache_a_call_attends_over_its_own_input_only(m, randn, close, config):
    name, d_in, d_out, num_heads, groups, window = config
    module = build(m, name, d_in, d_out, num_heads, groups, window)
    y = randn(2, 4, d_in)
    with torch.no_grad():
        decode(module, randn(2, 5, d_in), (3, 2))
        close(module(y), attention_oracle(module, y, num_heads, groups, window))
        close(module(y, use_cache=False), attention_oracle(module, y, num_heads, groups, window))


# ---- the classes against each other ----------------------------------------------------------------------------


def test_cached_mha_is_04s_multi_head_attention(m, solution, randn, close):
    module = build(m, MHA, 6, 8, 2, qkv_bias=True)
    torch.manual_seed(5)
    plain = solution("04_multi_head_attention").MultiHeadAttention(6, 8, 16, 0.0, 2, qkv_bias=True).eval()
    missing, unexpected = plain.load_state_dict(module.state_dict(), strict=False)  # same names and shapes
    assert not unexpected and set(missing) <= {name for name, _ in plain.named_buffers()}  # 04's mask buffer
    x = randn(2, 9, 6)
    with torch.no_grad():
        close(module(x), plain(x))
        close(decode(module, x, (1,) * 9), plain(x))


@pytest.mark.parametrize("window", [9, 12, None])
def test_swa_with_a_window_as_long_as_the_sequence_is_causal_mha(m, randn, close, window):
    swa = build(m, SWA, 6, 8, 2, window=window, qkv_bias=True, seed=3)
    mha = build(m, MHA, 6, 8, 2, seed=4, qkv_bias=True)
    mha.load_state_dict(swa.state_dict())
    x = randn(2, 9, 6)
    with torch.no_grad():
        expected = mha(x)
        close(swa(x), expected)
        close(decode(swa, x, (1,) * 9), expected)
        close(decode(swa, x, (5, 4)), decode(mha, x, (5, 4)))


def test_swa_with_a_short_window_is_not_causal_mha(m, randn):
    swa = build(m, SWA, 6, 8, 2, window=2, seed=3)
    mha = build(m, MHA, 6, 8, 2, seed=4)
    mha.load_state_dict(swa.state_dict())
    x = randn(2, 9, 6)
    with torch.no_grad():
        a, b = swa(x), mha(x)
    torch.testing.assert_close(a[:, :2], b[:, :2])  # the first two tokens see no more than the window
    assert not torch.allclose(a[:, 2:], b[:, 2:], atol=1e-4)


@pytest.mark.parametrize("num_heads", [1, 2, 4])
def test_gqa_with_a_group_per_head_is_mha(m, randn, close, num_heads):
    gqa = build(m, GQA, 6, 8, num_heads, num_heads, qkv_bias=True, seed=6)
    mha = build(m, MHA, 6, 8, num_heads, qkv_bias=True, seed=7)
    state = dict(gqa.state_dict())
    state["out_proj.bias"] = torch.zeros(8)  # GQA's out_proj has no bias
    mha.load_state_dict(state)
    x = randn(2, 9, 6)
    with torch.no_grad():
        expected = mha(x)
        close(gqa(x), expected)
        close(decode(gqa, x, (1,) * 9), expected)
        close(decode(gqa, x, (2, 7)), expected)


def test_gqa_with_one_group_shares_one_key_and_value_head(m, randn, close):
    """Multi-query attention: every query head attends over the same keys and values."""
    gqa = build(m, GQA, 6, 12, 4, 1, seed=8)
    x = randn(2, 7, 6)
    k, v = linear(x, gqa.W_key), linear(x, gqa.W_value)  # [B, T, 3]: one head of 3 features
    q = linear(x, gqa.W_query).reshape(2, 7, 4, 3).transpose(1, 2)  # [B, 4, T, 3]
    context = F.scaled_dot_product_attention(q, k[:, None].expand(2, 4, 7, 3), v[:, None].expand(2, 4, 7, 3),
                                             is_causal=True)
    with torch.no_grad():
        close(gqa(x), linear(context.transpose(1, 2).reshape(2, 7, 12), gqa.out_proj))


# ---- parameters and construction -------------------------------------------------------------------------------


@pytest.mark.parametrize("qkv_bias", [False, True])
def test_parameters_are_named_and_shaped_as_the_book(m, qkv_bias):
    mha = m.CachedMultiHeadAttention(5, 8, 10, 0.1, 2, qkv_bias=qkv_bias)
    swa = m.MultiHeadAttentionWithSWA(5, 8, 0.1, 2, qkv_bias=qkv_bias, sliding_window_size=3)
    gqa = m.GroupedQueryAttention(5, 12, 0.1, 6, 2, qkv_bias=qkv_bias)
    for module in (mha, swa):
        shapes = {n: tuple(p.shape) for n, p in module.named_parameters()}
        expected = {"W_query.weight": (8, 5), "W_key.weight": (8, 5), "W_value.weight": (8, 5),
                    "out_proj.weight": (8, 8), "out_proj.bias": (8,)}
        if qkv_bias:
            expected |= {"W_query.bias": (8,), "W_key.bias": (8,), "W_value.bias": (8,)}
        assert shapes == expected, type(module).__name__
        assert isinstance(module.dropout, nn.Dropout)
    shapes = {n: tuple(p.shape) for n, p in gqa.named_parameters()}
    expected = {"W_query.weight": (12, 5), "W_key.weight": (4, 5), "W_value.weight": (4, 5),  # 2 groups of 2
                "out_proj.weight": (12, 12)}  # no bias, as in the book
    if qkv_bias:
        expected |= {"W_query.bias": (12,), "W_key.bias": (4,), "W_value.bias": (4,)}
    assert shapes == expected
    assert mha.cache_k is None and mha.cache_v is None and gqa.cache_k is None and swa.cache_v is None


def test_gqa_takes_a_dtype(m):
    gqa = m.GroupedQueryAttention(4, 8, 0.0, 4, 2, dtype=torch.float64)
    assert {p.dtype for p in gqa.parameters()} == {torch.float64}
    assert gqa(torch.ones(1, 3, 4, dtype=torch.float64)).dtype == torch.float64


@pytest.mark.parametrize(("name", "args"), [
    (MHA, (4, 6, 8, 0.0, 4)), (SWA, (4, 6, 0.0, 4)), (GQA, (4, 6, 0.0, 4, 2)), (GQA, (4, 8, 0.0, 4, 3)),
], ids=["MHA-d_out", "SWA-d_out", "GQA-d_out", "GQA-groups"])
def test_indivisible_sizes_are_refused_at_construction(m, name, args):
    with pytest.raises((ValueError, AssertionError)):  # ValueError; the book's AssertionError is accepted
        getattr(m, name)(*args)


@pytest.mark.parametrize("config", ONE_OF_EACH)
def test_eval_mode_has_no_dropout_and_training_mode_has(m, randn, close, config):
    name, d_in, d_out, num_heads, groups, window = config
    module = build(m, name, d_in, d_out, num_heads, groups, window, dropout=0.5)
    x = randn(2, 9, d_in)
    before = x.clone()
    with torch.no_grad():
        close(module(x), attention_oracle(module, x, num_heads, groups, window))
        module.train()
        torch.manual_seed(0)
        assert not torch.allclose(module(x), attention_oracle(module, x, num_heads, groups, window))
    assert torch.equal(x, before)


# ---- the oracles are not vacuous: on the stub they fail ----------------------------------------------------


def test_oracles_fail_on_the_stub(stub, randn, close):
    module = stub(ID)
    with pytest.raises(NotImplementedError):
        check_rope_params(module, 8, 10_000, 64)
    with pytest.raises(NotImplementedError):
        check_rope_matches_complex_rotation(module, randn, close, torch.float32, (2, 3, 5, 8), 3)
    with pytest.raises(NotImplementedError):
        check_repeat_kv(module, randn, torch.float32, (2, 2, 5, 4), 2)
    with pytest.raises(NotImplementedError):
        check_window_mask(module, (4, 9, 2, 5, 0))
    for config in (CONFIGS[0], CONFIGS[2], CONFIGS[5]):
        with pytest.raises(NotImplementedError):
            check_cached_matches_the_oracle(module, randn, close, torch.float32, config, (4, 3, 2))
