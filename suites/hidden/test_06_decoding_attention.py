"""Hidden grading suite for 06_decoding_attention. Never shipped to students.

Every check compares the student's code with the reference on the same inputs. The cached classes are
fed a sequence in one call, token by token and in chunks (``use_cache=True`` after ``reset_cache()``);
each call's output must be the reference's, and the cache the student keeps is measured from the
tensors themselves. Mistakes are recomputed with the reference's weights and named.
"""
import pytest
import torch

from grader import diagnose
from grader.authoring import Mistake, assignment, exercise
from grader.compare import manual_seed
from grader.dropout import expect_dropout_on_weights
from grader.harness import CheckFailed, StudentFault
from lesson import journey_batch, mistaken

pytestmark = assignment("06_decoding_attention")
F32, F64 = torch.float32, torch.float64
MHA, GQA, SWA = "CachedMultiHeadAttention", "GroupedQueryAttention", "MultiHeadAttentionWithSWA"


# --- rotary positions --------------------------------------------------------------------------------
def rope_angles(head_dim, theta_base, context_length, *, interleaved=False):
    """The angles in float64: halves (the course's layout), or pairs repeated in place (interleaved)."""
    inv_freq = theta_base ** -(torch.arange(0, head_dim, 2, dtype=F64) / head_dim)  # [hd/2]
    angles = torch.arange(context_length, dtype=F64)[:, None] * inv_freq[None, :]  # [L, hd/2]
    return angles.repeat_interleave(2, dim=-1) if interleaved else torch.cat([angles, angles], dim=-1)


def rope(x, cos, sin, offset=0, *, pairs=False):
    """x rotated by the angles of positions offset...: the two halves, or (``pairs``) adjacent pairs."""
    num_tokens, half = x.shape[-2], x.shape[-1] // 2
    cos, sin = cos[offset:offset + num_tokens], sin[offset:offset + num_tokens]  # [T, hd]
    if not pairs:
        return (x * cos + torch.cat([-x[..., half:], x[..., :half]], dim=-1) * sin).to(x.dtype)
    c, s = cos[:, :half], sin[:, :half]  # [T, hd/2]: angle i for the pair (2i, 2i+1)
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.stack([even * c - odd * s, odd * c + even * s], dim=-1).flatten(-2).to(x.dtype)


def angle_rounding(head_dim, theta_base, context_length) -> float:
    """How far cosines and sines of float32 angles land from float64 ones, times 8: the angles grow with
    the position (thousands of radians at 4096), so another correct order of float32 operations, or
    float64 angles rounded at the end, may differ from the reference's by about as much."""
    exact = rope_angles(head_dim, theta_base, context_length)
    inv_freq = theta_base ** -(torch.arange(0, head_dim, 2, dtype=F32) / head_dim)
    rounded = (torch.arange(context_length, dtype=F32)[:, None] * inv_freq[None, :]).repeat(1, 2).double()
    return 8 * max(float((f(rounded) - f(exact)).abs().max()) for f in (torch.cos, torch.sin))


def rope_params_same(grade, head_dim, theta_base=10_000, context_length=64):
    args = (head_dim, theta_base, context_length)
    grade.same("compute_rope_params", *args, slack=angle_rounding(*args), mistakes=[
        Mistake("rope-pairs-interleaved", "your angles repeat each frequency in place (i, i, i+1, i+1, ...); "
                "RoPE here uses the same angles for both halves: cat([angles, angles])",
                lambda: tuple(f(rope_angles(*args, interleaved=True)).float() for f in (torch.cos, torch.sin)))])


@exercise("compute_rope_params")
@pytest.mark.parametrize("head_dim,theta_base,context_length", [(8, 10_000, 64), (16, 500_000, 32), (2, 10_000, 5),
                                                              (16, 10_000, 4096)],
                         ids=["hd8", "hd16-theta5e5", "hd2-L5", "hd16-L4096"])
def test_rope_params(grade, head_dim, theta_base, context_length):
    rope_params_same(grade, head_dim, theta_base, context_length)


@exercise("compute_rope_params")
def test_rope_params_odd_head_dim(grade):
    grade.raises(("ValueError", "AssertionError"), "compute_rope_params", 7)


def rope_same(grade, x, cos, sin, offset=0, grad=False):
    mistakes = [Mistake("rope-pairs-interleaved", "your code rotates adjacent pairs (x[2i], x[2i+1]); RoPE here "
                        "rotates the two halves, x[i] with x[i + hd/2]", lambda: rope(x, cos, sin, offset, pairs=True))]
    if offset:
        mistakes.append(Mistake("cache-position-not-advanced", f"your rotation starts at position 0, not at offset "
                                f"{offset}: the tokens of a cached call sit after the cached ones",
                                lambda: rope(x, cos, sin, 0)))
    grade.same("apply_rope", x, cos, sin, offset=offset, grad=(0,) if grad else False, mistakes=mistakes)  # x only


@exercise("apply_rope", weight=2)
@pytest.mark.parametrize("shape,offset,dtype,tables", [((2, 3, 5, 8), 0, F32, F32), ((1, 2, 1, 4), 9, F64, F64),
                                                       ((2, 4, 6, 16), 17, F32, F32), ((2, 2, 5, 8), 3, F64, F32)],
                         ids=["B2-H3-T5", "T1-offset9-f64", "offset17", "f64-x-f32-tables"])
def test_apply_rope(grade, shape, offset, dtype, tables):
    """The last case: float64 x with the float32 tables compute_rope_params makes keeps x's dtype."""
    angles = rope_angles(shape[-1], 10_000, 64)
    cos, sin = angles.cos().to(tables), angles.sin().to(tables)
    rope_same(grade, grade.randn(*shape, dtype=dtype), cos, sin, offset, grad=True)


@exercise("apply_rope")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
def test_apply_rope_half_precision(grade, dtype):
    grade.needs_cuda()
    angles = rope_angles(16, 10_000, 64)
    grade.same_low_precision("apply_rope", grade.randn(2, 4, 6, 16), angles.cos().float(), angles.sin().float(), 3,
                             dtype=dtype)


# --- repeat_kv ---------------------------------------------------------------------------------------
def repeat_kv_same(grade, x, group_size, grad=False):
    grade.same("repeat_kv", x, group_size, grad=grad, mistakes=[
        Mistake("kv-heads-tiled", "your groups come out tiled ([K1, K2, K1, K2]); each must be repeated in a row "
                "([K1, K1, K2, K2]): repeat_interleave, not repeat", lambda: x.repeat(1, group_size, 1, 1))])


@exercise("repeat_kv", weight=2)
@pytest.mark.parametrize("shape,group_size,dtype", [((2, 2, 5, 4), 2, F32), ((1, 3, 1, 2), 4, F64),
                                                    ((2, 1, 7, 8), 3, F32)], ids=["G2x2", "T1-G3x4-f64", "G1x3"])
def test_repeat_kv(grade, shape, group_size, dtype):
    repeat_kv_same(grade, grade.randn(*shape, dtype=dtype), group_size, grad=True)


@exercise("repeat_kv")
def test_repeat_kv_non_contiguous(grade):
    """Keys and values come transposed from [B, T, G, hd], as the classes make them: not contiguous."""
    repeat_kv_same(grade, grade.randn(2, 5, 2, 4).transpose(1, 2), 3, grad=True)


@exercise("repeat_kv")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
def test_repeat_kv_half_precision(grade, dtype):
    grade.needs_cuda()
    grade.same_low_precision("repeat_kv", grade.randn(2, 2, 5, 8), 3, dtype=dtype)


# --- sliding_window_mask -----------------------------------------------------------------------------
def window_mask(num_queries, num_keys, window, q_start=0, k_start=0):
    queries = torch.arange(q_start, q_start + num_queries)[:, None]  # [Tq, 1]
    keys = torch.arange(k_start, k_start + num_keys)[None, :]  # [1, Tk]
    hidden = keys > queries
    return hidden if window is None else hidden | (queries - keys >= window)


def mask_same(grade, *args):
    num_queries, num_keys, window, *starts = args
    right = window_mask(*args)
    queries = torch.arange(num_queries)[:, None] + (starts[0] if starts else 0)
    keys = torch.arange(num_keys)[None, :] + (starts[1] if len(starts) > 1 else 0)
    mirrored = keys < queries if window is None else (keys < queries) | (keys - queries >= window)
    mistakes = [Mistake("cache-position-not-advanced", "your positions start at 0: queries sit at q_start, keys at "
                        "k_start", lambda: window_mask(num_queries, num_keys, window)),
                Mistake("mask-inverted", "your mask is True where a query may look; True means hidden", ~right),
                Mistake("mask-inverted", "your mask hides the past and shows the tokens after each query: the "
                        "distance is the query's position minus the key's", mirrored),
                Mistake("mask-hides-diagonal", "your mask hides each query's own position: a token sees itself",
                        right | (queries == keys))]
    if window is not None:
        mistakes += [
            Mistake("mask-not-applied", "your mask is the causal mask alone: the window is not applied (was the "
                    "result of a non-in-place | or logical_or dropped?)", lambda: window_mask(num_queries, num_keys,
                                                                                              None, *starts)),
            Mistake("window-off-by-one", "each query sees window + 1 tokens: itself and the window - 1 before it "
                    "make window", lambda: window_mask(num_queries, num_keys, window + 1, *starts)),
            Mistake("window-off-by-one", "each query sees window - 1 tokens: itself and the window - 1 before it "
                    "make window", lambda: window_mask(num_queries, num_keys, window - 1, *starts))]
    grade.same("sliding_window_mask", *args, mistakes=mistakes)


@exercise("sliding_window_mask", weight=2)
@pytest.mark.parametrize("args", [(6, 6, 3), (1, 1, 1), (4, 9, 2, 5, 0), (3, 5, 4, 8, 6), (5, 5, None),
                                  (2, 7, None, 5, 0), (3, 5, None, 6, 0)],
                         ids=["T6-W3", "T1-W1", "chunk-at-5", "cached-keys-from-6", "no-window", "no-window-cached",
                              "no-window-keys-far-back"])
def test_sliding_window_mask(grade, args):
    mask_same(grade, *args)


def expect_vectorised(grade, name, short_args, long_args, what):
    """The operations of ``name`` may not grow from ``short_args`` to ``long_args`` (more tokens), and
    both outputs are right (grade.measured)."""
    short = grade.measured(name, *short_args).ops
    long = grade.measured(name, *long_args).ops
    if long > short:
        raise CheckFailed(f"{name} made {short} torch operations for {what[0]} but {long} for {what[1]}: a Python "
                          "loop over positions; build the whole tensor at once (arange, broadcasting)",
                          ("not-vectorised",))


@exercise("sliding_window_mask")
def test_sliding_window_mask_vectorised(grade):
    expect_vectorised(grade, "sliding_window_mask", (4, 4, 2), (32, 40, 2, 8, 0), ("4 x 4 positions", "32 x 40"))


@exercise("compute_rope_params")
def test_rope_params_vectorised(grade):
    expect_vectorised(grade, "compute_rope_params", (8, 10_000, 8), (8, 10_000, 128),
                      ("context_length 8", "context_length 128"))


@exercise("apply_rope")
def test_apply_rope_vectorised_and_non_contiguous(grade):
    """Keys come to apply_rope transposed from [B, T, H, hd], as the classes make them: not contiguous."""
    angles = rope_angles(8, 10_000, 64)
    cos, sin = angles.cos().float(), angles.sin().float()
    x_short, x_long = grade.randn(2, 4, 3, 8).transpose(1, 2), grade.randn(2, 32, 3, 8).transpose(1, 2)
    expect_vectorised(grade, "apply_rope", (x_short, cos, sin, 2), (x_long, cos, sin, 2), ("4 tokens", "32 tokens"))
    rope_same(grade, x_long, cos, sin, 5, grad=True)


# --- the cached classes --------------------------------------------------------------------------------
def heads(x, num_heads):
    batch, tokens, dim = x.shape
    return x.view(batch, tokens, num_heads, dim // num_heads).transpose(1, 2)  # [B, heads, T, hd]


def projected(ref, prefix, size, cached=None):
    """The reference's queries of the last ``size`` tokens of ``prefix`` and keys and values of all of it:
    [B, H, size, hd] and [B, G, T_prefix, hd] twice. ``cached``: the keys and values the reference's
    cache held before this chunk (computed with earlier weights), in place of the earlier tokens'."""
    num_heads = ref.num_heads
    groups = getattr(ref, "num_kv_groups", num_heads)
    queries = heads(ref.W_query(prefix[:, -size:]), num_heads)
    if cached is None:
        return queries, heads(ref.W_key(prefix), groups), heads(ref.W_value(prefix), groups)
    chunk = prefix[:, -size:]
    keys = torch.cat([cached[0], heads(ref.W_key(chunk), groups)], dim=2)[:, :, -prefix.shape[1]:]
    values = torch.cat([cached[1], heads(ref.W_value(chunk), groups)], dim=2)[:, :, -prefix.shape[1]:]
    return queries, keys, values


def attend_masked(ref, queries, keys, values, hidden, seed=None, scale=None):
    """The chunk's output from these queries, keys and values (heads already matched), ``hidden`` [Tq, Tk]
    removed, through the reference's out_proj; in training mode, the reference's dropout on the weights
    drawn after seeding with ``seed`` (as the student's call was)."""
    scale = keys.shape[-1] ** -0.5 if scale is None else scale
    scores = (queries @ keys.transpose(2, 3) * scale).masked_fill(
        hidden.to(queries.device), float("-inf"))  # [B, H, size, Tk]
    weights = torch.softmax(scores, dim=-1)  # [B, H, size, Tk]
    if ref.training and seed is not None:
        manual_seed(seed)
        weights = ref.dropout(weights)
    context = (weights @ values).transpose(1, 2).flatten(2)  # [B, size, d_out]
    return ref.out_proj(context)


def attention_of(ref, prefix, size, *, q_start, k_start=None, window=None, tiled=False, scale=None):
    """The reference's weights applied to the last ``size`` tokens of ``prefix`` (queries at ``q_start``...)
    over every token of it as keys, with a causal (and window) mask: how a mistaken cache attends."""
    queries, keys, values = projected(ref, prefix, size)
    group_size = queries.shape[1] // keys.shape[1]
    if group_size > 1:
        repeat = (lambda t: t.repeat(1, group_size, 1, 1)) if tiled else \
            (lambda t: t.repeat_interleave(group_size, dim=1))
        keys, values = repeat(keys), repeat(values)
    k_start = q_start + size - prefix.shape[1] if k_start is None else k_start
    return attend_masked(ref, queries, keys, values, window_mask(size, keys.shape[2], window, q_start, k_start),
                         scale=scale)


def repeat_kv_root_cause(grade, pair, x, start, size, seed=None, cached=None):
    """GroupedQueryAttention right but for the student's own repeat_kv (cascade "once": its points kept)."""
    def root_cause(failure, out):
        ref, prefix = pair.ref, x[:, :start + size].to(grade.device)
        with torch.no_grad():
            queries, keys, values = projected(ref, prefix, size, cached)
            group_size = queries.shape[1] // keys.shape[1]
            theirs_k = diagnose.their(grade, "repeat_kv", keys.cpu(), group_size)
            theirs_v = diagnose.their(grade, "repeat_kv", values.cpu(), group_size)
        raised = next((t for t in (theirs_k, theirs_v) if isinstance(t, diagnose.Raised)), None)
        if raised or not isinstance(theirs_v, torch.Tensor):
            return raised and diagnose.blame(grade, failure, out, "repeat_kv", raised, None, None)
        theirs_v = theirs_v.to(grade.device)  # in its own dtype, as the student's class was given it
        return diagnose.blame(
            grade, failure, out, "repeat_kv", theirs_k, keys.repeat_interleave(group_size, dim=1),
            lambda k: attend_masked(ref, queries, k, theirs_v, window_mask(size, k.shape[2], None, start), seed),
            [Mistake("kv-heads-tiled", "it tiles the groups ([K1, K2, K1, K2]) instead of repeating each in a row",
                     keys.repeat(1, group_size, 1, 1))])
    return root_cause


def window_mask_root_cause(grade, pair, x, start, size, seed=None, cached=None):
    """A windowed or causal class right but for the student's own sliding_window_mask."""
    def root_cause(failure, out):
        ref, window = pair.ref, design(pair)[2]
        num_keys = start + size if window is None else min(start + size, window + size - 1)
        prefix = x[:, start + size - num_keys:start + size].to(grade.device)  # the keys this call attends
        k_start = start + size - num_keys
        theirs = diagnose.their(grade, "sliding_window_mask", size, num_keys, window, start, k_start)
        with torch.no_grad():
            queries, keys, values = projected(ref, prefix, size, cached)
            group_size = queries.shape[1] // keys.shape[1]
            keys, values = keys.repeat_interleave(group_size, dim=1), values.repeat_interleave(group_size, dim=1)
            right = window_mask(size, num_keys, window, start, k_start)
            return diagnose.blame(grade, failure, out, "sliding_window_mask", theirs, right,
                                  lambda hidden: attend_masked(ref, queries, keys, values, hidden, seed), [
                Mistake("window-off-by-one", "it shows window + 1 tokens", window_mask(size, num_keys, window + 1,
                                                                                      start, k_start))]
                if window else [])
    return root_cause


def helper_faults(grade, pair, x, start, size, seed=None, cached=None):
    """The chunk x[:, start:start+size] right but for the student's own sliding_window_mask, or (GQA)
    repeat_kv: the first of these root causes that explains the output (cascade "once"). ``cached``:
    the reference's cache before the chunk, when the weights changed since (see :func:`projected`)."""
    causes = [window_mask_root_cause(grade, pair, x, start, size, seed, cached)]
    if pair.name == GQA:
        causes.append(repeat_kv_root_cause(grade, pair, x, start, size, seed, cached))
    return lambda failure, out: next((found for cause in causes if (found := cause(failure, out))), None)


def design(pair):
    """(num_heads, num_kv_groups, sliding_window_size) of a pair made by ``make``, read from its arguments
    (not from the reference, which a replayed check does not have)."""
    args, kwargs = pair.args, pair.kwargs
    if pair.name == MHA:
        return args[4], args[4], None
    if pair.name == GQA:
        return args[3], args[4], None
    return args[3], args[3], kwargs.get("sliding_window_size")


def relation_mask(num_queries, num_keys, relation, window, q_start, k_start):
    """True (hidden) where a key stands in ``relation`` to a query, by absolute position: "future" (the
    right causal mask, with the window), "past", "past-and-diagonal", "future-and-diagonal" (the window
    kept), "inverted" (the right mask's complement), None (nothing hidden)."""
    if relation is None:
        return None
    right = window_mask(num_queries, num_keys, window, q_start, k_start)
    if relation in ("future", "inverted"):
        return right if relation == "future" else ~right
    queries = torch.arange(q_start, q_start + num_queries)[:, None]  # [Tq, 1]
    keys = torch.arange(k_start, k_start + num_keys)[None, :]  # [1, Tk]
    if relation == "future-and-diagonal":
        return right | (keys == queries)
    return keys < queries if relation == "past" else keys <= queries


def variant_of(ref, prefix, size, *, q_start, window=None, relation="future", scale="head", split_transpose=True,
               merge_transpose=True, out_proj=True, roles=mistaken.ROLES, **changes):
    """attention_of with one of the usual mistakes of 04's classes made in a cached class: the scale,
    the mask (``relation``, see relation_mask), mistaken.attend's ``changes`` (softmax dimension, scores
    transposed, mask after the softmax, rows with nothing visible), heads split or merged without the
    transpose, no out_proj, projections in the wrong roles; None where the mistake cannot give an output
    of the right shape (a GQA query from the narrower key weight)."""
    batch, total, _ = prefix.shape
    num_heads = ref.num_heads
    groups = getattr(ref, "num_kv_groups", num_heads)
    d_out = ref.out_proj.in_features
    head_dim = d_out // num_heads
    weights = {"query": ref.W_query, "key": ref.W_key, "value": ref.W_value}
    wanted = {"query": (num_heads, size), "key": (groups, total), "value": (groups, total)}

    def split(role, source):
        count, tokens = wanted[role]
        t = weights[source](prefix[:, -tokens:])  # [B, tokens, features]
        if t.shape[-1] != count * head_dim:
            return None
        if split_transpose:
            return t.view(batch, tokens, count, head_dim).transpose(1, 2)  # [B, count, tokens, hd]
        return t.reshape(batch, count, tokens, head_dim)

    q, k, v = (split(role, source) for role, source in zip(mistaken.ROLES, roles))
    if q is None or k is None or v is None:
        return None
    k, v = k.repeat_interleave(num_heads // groups, dim=1), v.repeat_interleave(num_heads // groups, dim=1)
    multiplier = scale if not isinstance(scale, str) else 1.0 / {
        "head": head_dim ** 0.5, "model": d_out ** 0.5, "head-not-sqrt": float(head_dim), "none": 1.0,
        "multiplied": head_dim ** -0.5}[scale]
    hidden = relation_mask(size, total, relation, window, q_start, q_start + size - total)
    context = mistaken.attend(q, k, v, scale=multiplier, hidden=None if hidden is None else hidden.to(q.device),
                              **changes)  # [B, H, size, hd]
    context = context.transpose(1, 2) if merge_transpose else context
    context = context.reshape(batch, size, d_out)
    return ref.out_proj(context) if out_proj else context


KEYS_AS_VALUES = ("query", "key", "key")


def keys_as_values(pair, output):
    """The weights times W_key's projection (``output()``): values computed with W_key (qkv-swapped) and
    the keys used as values (values-not-used) give the same output; what the student's cache holds
    tells them apart (cache_v holding just what cache_k holds: the values came from W_key). For naming
    only, never for points; nothing while the cache holds nothing."""
    def told(swapped):
        def candidate():
            try:
                kept = pair.attributes("cache_k", "cache_v")
            except (StudentFault, CheckFailed):  # a cache that cannot be read tells nothing
                return None
            k, v = kept.get("cache_k"), kept.get("cache_v")
            if not isinstance(k, torch.Tensor) or not isinstance(v, torch.Tensor) or not k.numel():
                return None
            return output() if (k.shape == v.shape and bool(torch.equal(k, v))) == swapped else None
        return candidate

    return [Mistake("qkv-swapped", "your values come from W_key: cache_v holds just what cache_k holds", told(True)),
            Mistake("values-not-used", "your weights multiply the keys, not the values (cache_v holds other "
                                       "values)", told(False))]


# the mistakes of 04's classes, as variant_of's arguments; the FIRST_CHUNK ones only when the chunk is the whole
# sequence (a wrong split mixes tokens of one call, which chunks fed one by one would mix otherwise)
CLASS_MISTAKES = (
    ("wrong-scale", "scores scaled by 1/sqrt(d_out), the model width; the scale is 1/sqrt(head_dim), the head "
                    "size d_out/num_heads", {"scale": "model"}),
    ("wrong-scale", "scores divided by head_dim instead of sqrt(head_dim)", {"scale": "head-not-sqrt"}),
    ("wrong-scale", "scores multiplied by sqrt(head_dim) instead of divided", {"scale": "multiplied"}),
    ("missing-scale", "unscaled scores: divide by sqrt(head_dim)", {"scale": "none"}),
    ("mask-not-applied", "no mask: every token sees the tokens after it", {"relation": None}),
    ("mask-inverted", "the past hidden instead of the future", {"relation": "past"}),
    ("mask-after-softmax-not-renormalized", "the hidden weights zeroed after the softmax without renormalising",
     {"mask": "after"}),
    ("softmax-wrong-dim", "a softmax over the queries, not the keys", {"dim": -2}),
    ("softmax-wrong-dim", "a softmax over the heads, not the keys", {"dim": 1}),
    ("heads-merged-without-transpose", "heads merged back without transposing [B, H, T, hd] to [B, T, H, hd]",
     {"merge_transpose": False}),
    ("out-proj-missing", "the heads' context without the output projection out_proj", {"out_proj": False}),
) + tuple((m, what, {"relation": relation, "rows": rows}) for rows in mistaken.HIDDEN_ROWS for m, what, relation in (
    ("mask-inverted", "the past and the token itself hidden, and the future shown", "past-and-diagonal"),
    ("mask-inverted", "the positions a query may see hidden, and the others shown", "inverted"),
    ("mask-hides-diagonal", "the token itself hidden too: a token may attend to itself", "future-and-diagonal"))
) + tuple((m, what.removeprefix("your "), {"roles": roles}) for roles, (m, what) in mistaken.wrong_roles()
          if roles != KEYS_AS_VALUES)  # told apart by the cache: keys_as_values
FIRST_CHUNK_MISTAKES = (
    ("heads-split-without-transpose", "heads split with view(B, H, T, hd) straight from [B, T, d_out]",
     {"split_transpose": False}),
    ("scores-transposed", "scores K Qᵀ in place of Q Kᵀ", {"transposed": True}),
)


def chunk_mistakes(pair, x, start, size):
    """What a mistaken cache, or a mistake of 04's classes, gives for the chunk x[:, start:start+size]
    after x[:, :start] was fed (each computed with the reference's weights, only when the check failed)."""
    prefix = x[:, :start + size].to(pair.grade.device)
    num_heads, groups, window = design(pair)
    table = CLASS_MISTAKES + (FIRST_CHUNK_MISTAKES if start == 0 else ())
    found = [Mistake(m, what, lambda changes=changes: variant_of(pair.ref, prefix, size, q_start=start, window=window,
                                                                 **changes)) for m, what, changes in table]
    found += keys_as_values(pair, lambda: variant_of(pair.ref, prefix, size, q_start=start, window=window,
                                                     roles=KEYS_AS_VALUES))
    if start:
        found.append(Mistake("cache-position-not-advanced", "the mask of a cached call starts again at position 0: "
                             "its queries come after the cached tokens",
                             lambda: attention_of(pair.ref, prefix, size, q_start=0, k_start=0, window=window)))
    if groups not in (1, num_heads):
        found.append(Mistake("kv-heads-tiled", "your key/value groups are tiled over the heads ([K1, K2, K1, K2]); "
                             "query head h uses group h // group_size: repeat_interleave",
                             lambda: attention_of(pair.ref, prefix, size, q_start=start, window=window, tiled=True)))
    if window is not None:
        found += [Mistake("window-off-by-one", f"each query sees {w} tokens, not sliding_window_size = {window}",
                          lambda w=w: attention_of(pair.ref, prefix, size, q_start=start, window=w))
                  for w in (window + 1, window - 1) if w > 0]
    return found


def fed(grade, pair, x, start, size, also=(), recomputed=True):
    """The chunk x[:, start:start+size] fed with use_cache=True after x[:, :start]: its output must be the
    reference's (which the reference's own cache gives); ``also``: further mistakes to look for;
    ``recomputed=False`` where the usual mistakes cannot be recomputed from the inputs (the weights
    changed since the cached tokens came)."""
    found = [*chunk_mistakes(pair, x, start, size)] if recomputed else []
    cached = None
    if not recomputed and not grade.replaying and pair.ref.cache_k is not None:  # the reference's, as computed
        cached = (pair.ref.cache_k.clone(), pair.ref.cache_v.clone())
    with torch.no_grad():
        pair.same(x[:, start:start + size], use_cache=True, mistakes=[*found, *also],
                  root_cause=helper_faults(grade, pair, x, start, size, cached=cached))


def decoded(grade, pair, x, chunks, also=lambda start, size: ()):
    """Feed ``x`` to a new instance (or one just reset) in chunks of the given sizes, each with use_cache=True."""
    start = 0
    for size in chunks:
        fed(grade, pair, x, start, size, also(start, size))
        start += size


def cache_elements(pair) -> int:
    """The elements of the student's cache_k and cache_v, counted from the tensors received."""
    kept = pair.attributes("cache_k", "cache_v")
    return sum(t.numel() for t in kept.values() if isinstance(t, torch.Tensor))


def make(grade, name, d_in=16, d_out=24, heads_=4, groups=2, window=3, context=64, dtype=None):
    """The reference's and the student's instance in evaluation mode, as a decoder generates."""
    if name == MHA:
        return grade.module(MHA, d_in, d_out, context, 0.0, heads_, dtype=dtype, training=False)
    if name == GQA:
        return grade.module(GQA, d_in, d_out, 0.0, heads_, groups, dtype=dtype, training=False)
    return grade.module(SWA, d_in, d_out, 0.0, heads_, sliding_window_size=window, dtype=dtype, training=False)


def uncached_same(grade, pair, x, **kwargs):
    """pair.same(x, **kwargs) of a call without the cache, its mistakes named; for the MHA, whose mask
    buffer spans context_length, a crash on fewer tokens that goes away with a class built for just as
    many is mask-not-truncated."""
    try:
        return pair.same(x, mistakes=chunk_mistakes(pair, x, 0, x.shape[1]),
                         root_cause=helper_faults(grade, pair, x, 0, x.shape[1]), **kwargs)
    except StudentFault as fault:
        if pair.name != MHA:
            raise
        args = pair.args
        raise diagnose.not_truncated(fault, x.shape[1], args[2], lambda: grade.module(
            MHA, args[0], args[1], x.shape[1], *args[3:], dtype=pair.dtype, training=False, **pair.kwargs).call(x)
        ) from None


@exercise(MHA)
def test_mha_lesson_batch_in_one_call(grade):
    pair, x = make(grade, MHA, d_in=3, d_out=4, heads_=2), journey_batch()
    uncached_same(grade, pair, x, grad=True)


CLASSES = [pytest.param(name, marks=exercise(name, weight=3), id=name)
           for name in (MHA, GQA, SWA)]


@pytest.mark.parametrize("name", CLASSES)
@pytest.mark.parametrize("chunks", [(1,) * 4, (2, 2, 1), (5,)], ids=["token-by-token", "chunks", "one-call"])
def test_cached_calls_give_the_full_pass(grade, name, chunks):
    """Each cached call gives what one full pass gives for its tokens (what the cache holds is measured
    by the memory it takes: test_the_cache_holds_what_it_should_as_the_kernel_counts_it)."""
    pair = make(grade, name)
    decoded(grade, pair, grade.randn(2, sum(chunks), 16), chunks)


@pytest.mark.parametrize("name", [pytest.param(name, marks=exercise(name, weight=2), id=name) for name in (GQA, SWA)])
def test_the_cache_holds_what_it_should_as_the_kernel_counts_it(grade, name):
    """A cached sequence wide enough to weigh (a batch of 32, 64 tokens in chunks of 16, d_out 128,
    float64: every tensor of the cache past glibc's 128 KiB mmap threshold, so that the kernel sees
    what is freed): over the last two chunks, the memory the student's processes hold, as the kernel
    counts it (grader.sandbox.client.held_bytes), grows by the keys and values of the key/value group only
    (GQA: one group for 4 heads, a quarter of the 2 MiB that every head's would take; measured: exactly
    0.25 of it, and 0.0 for SWA, at batches of 32 and 64), and not with the sequence for
    SWA, whose cache stays within its window of 4. Never read from cache_k or cache_v, which a property
    could show trimmed while the whole sequence is kept; the last chunk's output must be right too."""
    pair = (grade.module(GQA, 16, 128, 0.0, 4, 1, dtype=F64, training=False) if name == GQA else
            grade.module(SWA, 16, 128, 0.0, 2, sliding_window_size=4, dtype=F64, training=False))
    x = grade.randn(32, 64, 16, dtype=F64)
    chunks = [x[:, start:start + 16].contiguous() for start in range(0, x.shape[1], 16)]  # [32, 16, 16] each
    for number, chunk in enumerate(chunks):
        if number == 2:  # after two calls of this size: what a call leaves behind is in both readings
            before = grade.held_bytes()
        with torch.no_grad():  # as a decoder generates (a raise judged given the student's own helpers)
            reply = pair.call(chunk, use_cache=True, root_cause=helper_faults(grade, pair, x, 16 * number, 16))
    grown = grade.held_bytes() - before
    window = design(pair)[2]
    with torch.no_grad():  # the last chunk's output, right only if the cache gave it the right keys and values
        expected = grade.reference_value(lambda: attention_of(pair.ref, x.to(grade.device), 16, q_start=48,
                                                              window=window), pair.ref, x, window, unchanged=pair.ref)
    grade.expect_right(reply, expected, f"{pair.what} forward(<the last of {len(chunks)} chunks: [32, 16, 16] "
                                        "float64>, use_cache=True)", helper_faults(grade, pair, x, 48, 16))
    every_head = x.shape[0] * 16 * (len(chunks) - 2) * 2 * 128 * 8  # every head's keys and values of those tokens
    if grown > every_head * (0.6 if name == GQA else 0.5):  # GQA's group holds a quarter of it, SWA's window none
        kept = ("the keys and values of its key/value group, not of the 4 query heads it serves (repeat it only "
                "when attending)") if name == GQA else "only the last sliding_window_size positions"
        raise CheckFailed(f"{name}: over {16 * (len(chunks) - 2)} more cached tokens of a batch of {x.shape[0]} your "
                          f"process grew by {grown / 2**20:.1f} MiB (every head's keys and values of those tokens "
                          f"take {every_head / 2**20:.0f} MiB): the cache should keep {kept}")


@pytest.mark.parametrize("name", CLASSES)
def test_cached_keys_are_not_computed_again(grade, name):
    """Keys and values are computed once, when their token arrives: after the key and value weights
    change, a cached call still attends over the earlier tokens' keys and values as they were
    computed (the reference's cache keeps them). Read from the outputs alone."""
    pair = make(grade, name)
    x = grade.randn(2, 7, 16)
    decoded(grade, pair, x[:, :4], (4,))
    pair.new_weights("W_key", "W_value")
    start = 4
    for size in (2, 1):
        def again(pair=pair, prefix=x[:, :start + size].to(grade.device), size=size, start=start):
            return attention_of(pair.ref, prefix, size, q_start=start, window=design(pair)[2])

        fed(grade, pair, x, start, size, [Mistake(
            "cache-not-used", "the keys and values of earlier tokens are computed again at every call (from "
            "the inputs you keep); a KV cache keeps the keys and values themselves, each computed once", again)],
            recomputed=False)
        start += size


@pytest.mark.parametrize("name", CLASSES)
def test_an_uncached_call_then_reset_cache_starts_a_new_sequence(grade, name):
    """use_cache=False after a cached call attends over its own tokens only (the cache may be kept or
    cleared); reset_cache() then empties cache_k and cache_v, and the next cached sequence (another batch
    size) starts at position 0."""
    pair = make(grade, name)
    decoded(grade, pair, grade.randn(2, 5, 16), (5,))
    with torch.no_grad():
        uncached_same(grade, pair, grade.randn(2, 4, 16), use_cache=False)
    pair.method("reset_cache")
    if cache_elements(pair):
        raise CheckFailed(f"{name}.reset_cache() leaves the keys and values of the last sequence in cache_k or "
                          f"cache_v: the next sequence would attend over them", ("cache-not-reset",))
    window = design(pair)[2]
    y = grade.randn(1, 12, 16)  # long enough that a position kept from before still hides some keys

    def position_kept(start, size):
        prefix = y[:, :start + size].to(grade.device)
        return [Mistake("cache-not-reset", f"reset_cache() empties the cache but keeps the position: the new "
                        f"sequence's queries sit after the {kept} tokens before it",
                        lambda kept=kept: attention_of(pair.ref, prefix, size, q_start=kept + start, k_start=0,
                                                       window=window))
                for kept in (5, 9)]  # the cached sequence's tokens, or with the uncached call's counted too

    decoded(grade, pair, y, (11, 1), also=position_kept)


@pytest.mark.parametrize("name", CLASSES)
def test_float64_training_mode_with_gradients(grade, name):
    """One uncached pass in float64 on a non-contiguous batch, in training mode (dropout 0: gradients are
    graded on single calls, dropout by its effect below): outputs, input and weight gradients."""
    args = {MHA: (16, 24, 64, 0.0, 4), GQA: (16, 24, 0.0, 4, 2), SWA: (16, 24, 0.0, 4)}[name]
    pair = grade.module(name, *args, dtype=F64, **({"sliding_window_size": 3} if name == SWA else {}))
    x = grade.randn(2, 16, 7, dtype=F64).transpose(1, 2)
    uncached_same(grade, pair, x, grad=True)


@pytest.mark.parametrize("name", CLASSES)
def test_dropout_on_the_attention_weights(grade, name):
    """Dropout 0.5 by its effect (grader/dropout.py): T = 6 one-hot tokens, heads of 2T = 12 features;
    any draws, in any order (one call, one per head or group, SDPA's dropout_p), pass."""
    args = {MHA: (6, 24, 8, 0.5, 2), GQA: (6, 48, 0.5, 4, 2), SWA: (6, 24, 0.5, 2)}[name]
    pair = grade.module(name, *args, dtype=F64, **({"sliding_window_size": 3} if name == SWA else {}))
    expect_dropout_on_weights(grade, pair, tokens=6, p=0.5, eval_same=lambda x: uncached_same(grade, pair, x))


@pytest.mark.parametrize("name", CLASSES)
def test_a_float64_sequence_is_cached_in_float64(grade, name):
    """The cache keeps the keys' and values' dtype: after a first float64 chunk cache_k and cache_v hold
    float64 tensors, and the tokens after it get float64 outputs of float64 precision."""
    pair = make(grade, name, dtype=F64)
    x = grade.randn(2, 4, 16, dtype=F64, scale=30.0)
    fed(grade, pair, x, 0, 2)
    kept = pair.attributes("cache_k", "cache_v")
    lowered = sorted({str(t.dtype).replace("torch.", "") for t in kept.values()
                      if isinstance(t, torch.Tensor) and t.dtype != F64})
    if lowered:
        raise CheckFailed(f"{name}: a float64 sequence is cached as {', '.join(lowered)}: the cache keeps the dtype of "
                          "the keys and values (create it from them, e.g. torch.cat or new tensors with "
                          "dtype=keys.dtype)", ("wrong-dtype",))
    fed(grade, pair, x, 2, 1)
    fed(grade, pair, x, 3, 1)


@pytest.mark.parametrize("name", [pytest.param(name, marks=exercise(name), id=name) for name in (MHA, GQA, SWA)])
def test_large_scores(grade, name):
    """Scores in the thousands, past where a float64 exp overflows (about 709): the output is still
    finite and right, as a softmax that subtracts each row's maximum gives (float64 throughout, so that
    the rounding of so large scores stays far below the tolerance)."""
    pair = make(grade, name, dtype=F64)
    with torch.no_grad():
        x = grade.randn(2, 5, 16, dtype=F64, scale=100.0)
        diagnose.unstable_unless_named(lambda: uncached_same(grade, pair, x))


@exercise(GQA)
def test_gqa_dtype_builds_its_layers_in_that_dtype(grade):
    """GroupedQueryAttention(..., dtype=torch.float64) builds its layers in float64, as the book's does
    (nn.Linear(..., dtype=dtype)); a float64 batch then gets a float64 output of float64 precision."""
    pair = grade.module(GQA, 16, 24, 0.0, 4, 2, F64, training=False)  # dtype given to the constructor
    lowered = sorted({str(p.dtype).replace("torch.", "") for p in pair.state["params"].values()
                      if isinstance(p, torch.Tensor) and p.dtype != F64})
    if lowered:
        raise CheckFailed(f"{pair.what}: its parameters are {', '.join(lowered)}, not float64: pass dtype to each "
                          "layer, nn.Linear(..., dtype=dtype)", ("wrong-dtype",))
    uncached_same(grade, pair, grade.randn(2, 5, 16, dtype=F64))


@pytest.mark.parametrize("name,args", [
    pytest.param(MHA, (16, 18, 64, 0.0, 4), marks=exercise(MHA), id="MHA-18-by-4"),
    pytest.param(GQA, (16, 24, 0.0, 4, 3), marks=exercise(GQA), id="GQA-4-heads-3-groups"),
    pytest.param(SWA, (16, 18, 0.0, 4), marks=exercise(SWA), id="SWA-18-by-4")])
def test_indivisible_sizes_raise(grade, name, args):
    grade.raises(("ValueError", "AssertionError"), name, *args, new=True)
