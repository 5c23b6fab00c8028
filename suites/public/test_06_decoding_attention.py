"""Public checks for 06_decoding_attention: small cases worked out by hand, the lesson's data and a few
fixed random cases.

Modules get the reference's weights by parameter name, so your outputs must agree with the reference's.
The cached classes are fed a sequence after ``reset_cache()``: in one call, token by token and in chunks,
each call with ``use_cache=True``; every call must give what one full pass gives for its tokens. What
your cache keeps is counted from ``cache_k`` and ``cache_v`` themselves (any layout: only the number
of elements counts). Masks are boolean and True means hidden. A class that uses your repeat_kv or
sliding_window_mask shows a mistake of theirs here too: fix the helpers first. `grade check` compares
with reference outputs recorded at release, offline.
"""
import math

import pytest
import torch

from grader.authoring import Mistake, assignment, exercise
from grader.outcomes import CheckFailed
from lesson import journey_batch

pytestmark = assignment("06_decoding_attention")
MHA = "CachedMultiHeadAttention"
GQA = "GroupedQueryAttention"
SWA = "MultiHeadAttentionWithSWA"


def picture(*rows):
    """A boolean mask drawn row by row (one query a row): 'x' hidden, '.' seen."""
    return torch.tensor([[c == "x" for c in row] for row in rows])


# --- compute_rope_params ------------------------------------------------------------------------------
@exercise("compute_rope_params")
def test_rope_params_worked_out_by_hand(grade):
    """head_dim 4, theta_base 100: the frequencies are 100^0 = 1 and 100^(-2/4) = 0.1, the same for both
    halves, so position p turns by the angles (p, 0.1 p, p, 0.1 p)."""
    angles = torch.tensor([[0.0, 0.0, 0.0, 0.0], [1.0, 0.1, 1.0, 0.1], [2.0, 0.2, 2.0, 0.2]])  # [3 positions, 4]
    reply = grade.call("compute_rope_params", 4, theta_base=100, context_length=3)
    grade.expect(reply, (angles.cos(), angles.sin()), "compute_rope_params(4, theta_base=100, context_length=3)")


@exercise("compute_rope_params", weight=2)
@pytest.mark.parametrize("head_dim,theta_base,context_length", [(8, 10_000, 32), (16, 500_000, 12), (2, 10_000, 1)],
                         ids=["hd8-L32", "hd16-theta5e5", "hd2-L1"])
def test_rope_params_of_several_sizes(grade, head_dim, theta_base, context_length):
    grade.same("compute_rope_params", head_dim, theta_base, context_length)


@exercise("compute_rope_params")
def test_rope_params_need_an_even_head_dim(grade):
    grade.raises(("ValueError", "AssertionError"), "compute_rope_params", 5)


# --- apply_rope ---------------------------------------------------------------------------------------
def quarter_turns(num_positions, head_dim=2):
    """cos and sin tables [num_positions, head_dim] where position p turns by p quarter turns (p * pi/2)."""
    angles = torch.arange(num_positions, dtype=torch.float64)[:, None].expand(num_positions, head_dim) * math.pi / 2
    return angles.cos().float(), angles.sin().float()


def random_angles(grade, num_positions, head_dim, dtype):
    """cos and sin tables of random angles, one angle a position and frequency, repeated over both halves."""
    angles = grade.rand(num_positions, head_dim // 2, dtype=dtype) * 2 * math.pi
    angles = torch.cat([angles, angles], dim=-1)  # [L, hd]
    return angles.cos(), angles.sin()


@exercise("apply_rope")
@pytest.mark.parametrize("offset,expected", [(0, [[1.0, 0.0], [-1.0, 0.0]]), (1, [[0.0, 1.0], [0.0, -1.0]])],
                         ids=["offset0", "offset1"])
def test_apply_rope_worked_out_by_hand(grade, offset, expected):
    """Two tokens, (1, 0) then (0, 1), in one head of two features: position 0 does not turn, position 1
    turns a quarter (1, 0) -> (0, 1), position 2 a half turn (0, 1) -> (0, -1)."""
    cos, sin = quarter_turns(3)
    x = torch.tensor([[[[1.0, 0.0], [0.0, 1.0]]]])  # [1, 1, 2, 2]
    reply = grade.call("apply_rope", x, cos, sin, offset=offset)
    grade.expect(reply, torch.tensor([[expected]]).to(grade.device),
                 f"apply_rope(<[1, 1, 2, 2]> tokens (1, 0) and (0, 1), quarter turns, offset={offset})")


@exercise("apply_rope", weight=2)
@pytest.mark.parametrize("shape,offset,dtype", [((2, 3, 5, 8), 0, torch.float32), ((1, 2, 1, 4), 7, torch.float64),
                                                ((2, 2, 6, 16), 3, torch.float32)],
                         ids=["B2-H3-T5", "T1-offset7-float64", "T6-offset3"])
def test_apply_rope_on_random_data(grade, shape, offset, dtype):
    cos, sin = random_angles(grade, 12, shape[-1], dtype)
    grade.same("apply_rope", grade.randn(*shape, dtype=dtype), cos, sin, offset=offset, grad=(0,))  # x only: cos and sin are constants


# --- repeat_kv ----------------------------------------------------------------------------------------
@exercise("repeat_kv")
def test_repeat_kv_repeats_each_group_in_a_row(grade):
    """Two groups, K1 (all 1) and K2 (all 2), for four query heads: [K1, K1, K2, K2]."""
    x = torch.tensor([1.0, 2.0])[None, :, None, None].expand(1, 2, 3, 2).contiguous()  # [1, G=2, T=3, hd=2]
    expected = torch.tensor([1.0, 1.0, 2.0, 2.0])[None, :, None, None].expand(1, 4, 3, 2).contiguous()
    grade.same("repeat_kv", x, 2, right=expected, mistakes=[
        Mistake("kv-heads-tiled", "your groups come out tiled ([K1, K2, K1, K2]); each must be repeated in a row "
                "([K1, K1, K2, K2])", torch.tensor([1.0, 2.0, 1.0, 2.0])[None, :, None, None].expand(1, 4, 3, 2))])


@exercise("repeat_kv", weight=2)
@pytest.mark.parametrize("shape,group_size,dtype", [((2, 2, 5, 4), 2, torch.float32), ((1, 3, 1, 2), 4, torch.float64),
                                                    ((2, 4, 3, 2), 1, torch.float32)],
                         ids=["G2-x2", "T1-G3-x4-float64", "G4-x1"])
def test_repeat_kv_on_random_data(grade, shape, group_size, dtype):
    grade.same("repeat_kv", grade.randn(*shape, dtype=dtype), group_size, grad=True)


# --- sliding_window_mask ------------------------------------------------------------------------------
WINDOW_1 = picture(".xxxx", "x.xxx", "xx.xx", "xxx.x", "xxxx.")
WINDOW_2 = picture(".xxxx", "..xxx", "x..xx", "xx..x", "xxx..")  # each token sees itself and the one before
WINDOW_3 = picture(".xxxx", "..xxx", "...xx", "x...x", "xx...")


@exercise("sliding_window_mask")
def test_sliding_window_mask_worked_out_by_hand(grade):
    grade.same("sliding_window_mask", 5, 5, 2, right=WINDOW_2, mistakes=[
        Mistake("window-off-by-one", "each query sees 3 tokens; with window 2 it sees itself and the one before",
                WINDOW_3),
        Mistake("window-off-by-one", "each query sees itself only; with window 2 it sees itself and the one before",
                WINDOW_1)])


@exercise("sliding_window_mask")
def test_sliding_window_mask_of_a_cached_call_worked_out_by_hand(grade):
    """Queries at positions 4 and 5 (q_start=4) over keys at positions 0 ... 5, window 3: query 4 sees keys
    2, 3, 4 and query 5 sees keys 3, 4, 5."""
    reply = grade.call("sliding_window_mask", 2, 6, 3, q_start=4)
    grade.expect(reply, picture("xx...x", "xxx..."), "sliding_window_mask(2, 6, 3, q_start=4)")


@exercise("sliding_window_mask", weight=2)
@pytest.mark.parametrize("args", [(7, 7, 3), (1, 1, 1), (3, 7, 2, 4, 0), (2, 4, 3, 6, 4), (4, 4, 9)],
                         ids=["T7-W3", "T1-W1", "queries-from-4", "keys-from-4", "window-beyond-T"])
def test_sliding_window_mask_of_several_cases(grade, args):
    grade.same("sliding_window_mask", *args, device=grade.device)


# --- the cached classes -------------------------------------------------------------------------------
def fed(pair, x, chunks):
    """After reset_cache(), ``x`` [B, T, d_in] fed in chunks of these sizes, each call with use_cache=True:
    each call's output must be the reference's, that is what one full pass gives for those tokens."""
    pair.method("reset_cache")
    start = 0
    for size in chunks:
        pair.same(x[:, start:start + size], use_cache=True)
        start += size


def cache_size(pair) -> int:
    """The elements the student's cache_k and cache_v hold together (None: none)."""
    count = 0
    for name, value in pair.attributes("cache_k", "cache_v").items():
        if value is not None and not isinstance(value, torch.Tensor):
            raise CheckFailed(f"{pair.name}.{name} should be a tensor (or None when the cache is empty), but is "
                              f"{value}")
        count += 0 if value is None else value.numel()
    return count


def expect_cache_size(pair, expected, what):
    got = cache_size(pair)
    if got != expected:
        raise CheckFailed(f"{pair.name}: after {what}, cache_k and cache_v hold {got} elements together, "
                          f"expected {expected}")


def expect_empty_cache(pair):
    got = cache_size(pair)
    if got:
        raise CheckFailed(f"{pair.name}: after reset_cache(), cache_k and cache_v still hold {got} elements; "
                          "reset_cache() empties the cache (None)", ("cache-not-reset",))


CHUNKS = pytest.mark.parametrize("chunks", [(1,) * 7, (3, 2, 2), (7,)], ids=["token-by-token", "chunks", "one-call"])


def small(grade, name):
    """A small instance of ``name``: d_in 6, d_out 8, 2 heads (GQA: 4 heads in 2 groups; SWA: window 3)."""
    return {MHA: lambda: grade.module(MHA, 6, 8, 12, 0.0, 2), GQA: lambda: grade.module(GQA, 6, 8, 0.0, 4, 2),
            SWA: lambda: grade.module(SWA, 6, 8, 0.0, 2, sliding_window_size=3)}[name]()


CLASSES = [pytest.param(name, marks=exercise(name), id=name) for name in (MHA, GQA, SWA)]
CLASSES_TWICE = [pytest.param(name, marks=exercise(name, weight=2), id=name)
                 for name in (MHA, GQA, SWA)]


@pytest.mark.parametrize("name", CLASSES_TWICE)
@CHUNKS
def test_cached_calls_give_the_full_pass(grade, name, chunks):
    fed(small(grade, name), grade.randn(2, 7, 6), chunks)


@pytest.mark.parametrize("name", CLASSES)
def test_reset_cache_starts_a_new_sequence(grade, name):
    pair = small(grade, name)
    fed(pair, grade.randn(2, 5, 6), (1,) * 5)
    pair.method("reset_cache")
    expect_empty_cache(pair)
    fed(pair, grade.randn(1, 5, 6), (2, 1, 2))  # another sequence (another batch size) from position 0


@pytest.mark.parametrize("name", CLASSES)
def test_without_the_cache_a_call_attends_over_its_own_input_only(grade, name):
    pair = small(grade, name)
    fed(pair, grade.randn(2, 4, 6), (2, 2))
    pair.same(grade.randn(2, 5, 6), use_cache=False)


# CachedMultiHeadAttention(d_in, d_out, context_length, dropout, num_heads, qkv_bias=False)
@exercise(MHA)
def test_mha_on_the_lesson_batch(grade):
    grade.module(MHA, 3, 4, 6, 0.0, num_heads=2).same(journey_batch(), grad=True)


@exercise(MHA)
def test_mha_on_the_lesson_batch_token_by_token(grade):
    fed(grade.module(MHA, 3, 4, 6, 0.0, num_heads=2), journey_batch(), (1,) * 6)


@exercise(MHA, weight=2)
@pytest.mark.parametrize("heads,tokens,qkv_bias,dtype", [(2, 7, False, torch.float32), (4, 5, True, torch.float64),
                                                         (1, 1, False, torch.float32)],
                         ids=["H2-T7", "H4-T5-qkv_bias-float64", "H1-T1"])
def test_mha_one_pass_on_random_data(grade, heads, tokens, qkv_bias, dtype):
    pair = grade.module(MHA, 6, 8, 12, 0.0, heads, qkv_bias=qkv_bias, dtype=dtype)
    pair.same(grade.randn(2, tokens, 6, dtype=dtype), grad=True)


@exercise(MHA)
def test_mha_cache_keeps_every_head_of_every_token(grade):
    pair = small(grade, MHA)
    fed(pair, grade.randn(2, 7, 6), (1,) * 7)
    expect_cache_size(pair, 2 * (2 * 7 * 8), "7 cached tokens of a batch of 2 (d_out = 8)")


@exercise(MHA)
def test_mha_in_eval_mode_has_no_dropout(grade):
    pair = grade.module(MHA, 4, 4, 6, 0.5, 2).train(False)
    x = grade.randn(2, 6, 4)
    first, second = pair.call(x, seed=1).out, pair.call(x, seed=2).out
    grade.expect_close(second, first, f"{MHA}(dropout=0.5) in eval mode gave two different outputs for the same "
                       "input: dropout acts in training mode only", ("dropout-in-eval",))
    pair.same(x)


@exercise(MHA)
def test_mha_needs_d_out_divisible_by_the_heads(grade):
    grade.raises(("ValueError", "AssertionError"), MHA, 4, 6, 8, 0.0, 4, new=True)


# GroupedQueryAttention(d_in, d_out, dropout, num_heads, num_kv_groups, dtype=None, qkv_bias=False)
@exercise(GQA)
def test_gqa_on_the_lesson_batch(grade):
    grade.module(GQA, 3, 4, 0.0, num_heads=2, num_kv_groups=1).same(journey_batch(), grad=True)


@exercise(GQA, weight=2)
@pytest.mark.parametrize("heads,groups,tokens,qkv_bias,dtype", [(4, 2, 7, False, torch.float32),
                                                                (6, 3, 5, True, torch.float64),
                                                                (4, 4, 6, False, torch.float32),
                                                                (2, 1, 1, False, torch.float32)],
                         ids=["H4-G2-T7", "H6-G3-qkv_bias-float64", "H4-G4-as-MHA", "H2-G1-T1"])
def test_gqa_one_pass_on_random_data(grade, heads, groups, tokens, qkv_bias, dtype):
    pair = grade.module(GQA, 6, 12, 0.0, heads, groups, qkv_bias=qkv_bias, dtype=dtype)
    pair.same(grade.randn(2, tokens, 6, dtype=dtype), grad=True)


@exercise(GQA)
def test_gqa_cache_keeps_the_groups_only(grade):
    """4 query heads of 2 features share 2 key/value groups: the cache is half the size of MHA's."""
    pair = small(grade, GQA)
    fed(pair, grade.randn(2, 7, 6), (1,) * 7)
    expect_cache_size(pair, 2 * (2 * 2 * 7 * 2), "7 cached tokens of a batch of 2 (2 groups of 2 features)")


@exercise(GQA)
@pytest.mark.parametrize("d_out,heads,groups", [(6, 4, 2), (8, 4, 3)], ids=["d_out-by-heads", "heads-by-groups"])
def test_gqa_needs_divisible_sizes(grade, d_out, heads, groups):
    grade.raises(("ValueError", "AssertionError"), GQA, 4, d_out, 0.0, heads, groups, new=True)


# MultiHeadAttentionWithSWA(d_in, d_out, dropout, num_heads, qkv_bias=False, sliding_window_size=None)
@exercise(SWA)
def test_swa_on_the_lesson_batch(grade):
    grade.module(SWA, 3, 4, 0.0, num_heads=2, sliding_window_size=2).same(journey_batch(), grad=True)


@exercise(SWA, weight=2)
@pytest.mark.parametrize("heads,window,tokens,qkv_bias,dtype", [(2, 3, 8, False, torch.float32),
                                                                (4, 1, 5, True, torch.float64),
                                                                (2, 9, 6, False, torch.float32),
                                                                (2, None, 6, False, torch.float32)],
                         ids=["H2-W3-T8", "H4-W1-qkv_bias-float64", "window-beyond-T", "no-window"])
def test_swa_one_pass_on_random_data(grade, heads, window, tokens, qkv_bias, dtype):
    pair = grade.module(SWA, 6, 8, 0.0, heads, qkv_bias=qkv_bias, sliding_window_size=window, dtype=dtype)
    pair.same(grade.randn(2, tokens, 6, dtype=dtype), grad=True)


@exercise(SWA)
@pytest.mark.parametrize("chunks", [(1,) * 7, (4, 3)], ids=["token-by-token", "chunks"])
def test_swa_cache_never_grows_past_the_window(grade, chunks):
    pair = small(grade, SWA)
    fed(pair, grade.randn(2, 7, 6), chunks)
    most, got = 2 * (2 * 3 * 8), cache_size(pair)
    if not 0 < got <= most:
        raise CheckFailed(f"{SWA}: after 7 cached tokens with sliding_window_size=3, cache_k and cache_v hold {got} "
                          f"elements together; a batch of 2 (d_out = 8) needs at most {most}: the last 3 positions")


@exercise(SWA)
def test_swa_needs_d_out_divisible_by_the_heads(grade):
    grade.raises(("ValueError", "AssertionError"), SWA, 4, 6, 0.0, 4, new=True)
