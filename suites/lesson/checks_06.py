"""The checks of 06_decoding_attention, shared by its hidden and its public suite: each suite gives its
own cases, these say what is checked, which mistakes are named and which helper is blamed (so both
sides diagnose and forgive alike).

Every wrong computation here, and every "right, given your helper" judgement, is computed from the
lesson's formulas, the student's own calls (grader.grading.diagnose.their) and the weights both instances of a
module pair hold (``pair.weights``), never from the reference itself: a replayed run (a student
distribution) names and forgives as live grading does. The cached classes are fed a sequence in one
call, token by token and in chunks (``use_cache=True`` after ``reset_cache()``); each call's output
must be the reference's, and what the student's cache keeps is measured by the grader (the outputs
under changed weights, the memory the kernel counts), never read from what the student's code reports.
"""
from __future__ import annotations


from grader.authoring import (CheckFailed, HandleRef, Mistake, StudentFault, diagnose, model, shape_mismatch,
                              shape_str)
from lesson import LAYOUT_OPS, VECTORISED, every_call, lengthened, mistaken, vectorised_on
from lesson.dropout import expect_dropout_on_weights

MHA, GQA, SWA = "CachedMultiHeadAttention", "GroupedQueryAttention", "MultiHeadAttentionWithSWA"


def _torch():
    import torch

    return torch


# --- rotary positions --------------------------------------------------------------------------------
@model
def rope_angles(head_dim, theta_base, context_length, *, interleaved=False, frequencies="2i/hd"):
    """The angles in float64: halves (the course's layout), or pairs repeated in place (interleaved).
    ``frequencies``: the lesson's theta_base^(-2i/hd), or a mistaken exponent: "i/hd" (the factor 2
    lost: i counted 0, 1, 2, ... over hd) or "+2i/hd" (the sign lost: frequencies that grow)."""
    torch = _torch()
    exponent = {"2i/hd": -torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim,
                "i/hd": -torch.arange(head_dim // 2, dtype=torch.float64) / head_dim,
                "+2i/hd": torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim}[frequencies]
    inv_freq = float(theta_base) ** exponent  # [hd/2]
    angles = torch.arange(context_length, dtype=torch.float64)[:, None] * inv_freq[None, :]  # [L, hd/2]
    return angles.repeat_interleave(2, dim=-1) if interleaved else torch.cat([angles, angles], dim=-1)


# how apply_rope may mistake the course's layout (the two halves) for adjacent pairs (2i, 2i+1):
# "pairs" rotates each pair by its angle (the RoPE paper's, Meta's Llama's layout), "every-two" is GPT-J's
# rotate_every_two with the course's tables (x*cos + stack(-x_odd, x_even)*sin), "even-odd-halves" splits
# x[..., ::2] and x[..., 1::2] but keeps the halves' formula (x*cos + cat(-x_odd, x_even)*sin), and
# "pairs-every-other-angle" rotates the pairs by the tables' columns 0, 2, 4, ... (cos[..., ::2])
PAIR_LAYOUTS = ("pairs", "every-two", "even-odd-halves", "pairs-every-other-angle")


@model
def rope(x, cos, sin, offset=0, *, pairs=False, layout=None):
    """x rotated by the angles of positions offset...: the two halves, or (``pairs``) adjacent pairs;
    ``layout``: one of PAIR_LAYOUTS."""
    torch = _torch()
    layout = layout or ("pairs" if pairs else "halves")
    half, num_tokens = x.shape[-1] // 2, x.shape[-2]
    cos, sin = cos[offset:offset + num_tokens], sin[offset:offset + num_tokens]  # [T, hd]
    even, odd = x[..., 0::2], x[..., 1::2]
    if layout == "halves":
        return (x * cos + torch.cat([-x[..., half:], x[..., :half]], dim=-1) * sin).to(x.dtype)
    if layout == "halves-reversed":  # rotate_half as cat(x2, -x1): each pair turned by -angle
        return (x * cos + torch.cat([x[..., half:], -x[..., :half]], dim=-1) * sin).to(x.dtype)
    if layout == "every-two":
        return (x * cos + torch.stack([-odd, even], dim=-1).flatten(-2) * sin).to(x.dtype)
    if layout == "even-odd-halves":
        return (x * cos + torch.cat([-odd, even], dim=-1) * sin).to(x.dtype)
    # angle i for the pair (2i, 2i+1): the tables' first half, or every other column
    c, s = (cos[:, :half], sin[:, :half]) if layout == "pairs" else (cos[:, 0::2], sin[:, 0::2])  # [T, hd/2]
    return torch.stack([even * c - odd * s, odd * c + even * s], dim=-1).flatten(-2).to(x.dtype)


@model
def angle_rounding(head_dim, theta_base, context_length) -> float:
    """How far cosines and sines of float32 angles land from float64 ones, times 8: the angles grow with
    the position (thousands of radians at 4096), so another correct order of float32 operations, or
    float64 angles rounded at the end, may differ from the reference's by about as much."""
    torch = _torch()
    exact = rope_angles(head_dim, theta_base, context_length)
    inv_freq = theta_base ** -(torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
    rounded = (torch.arange(context_length, dtype=torch.float32)[:, None] * inv_freq[None, :]).repeat(1, 2).double()
    return 8 * max(float((f(rounded) - f(exact)).abs().max()) for f in (torch.cos, torch.sin))


def rope_params_same(grade, head_dim, theta_base=10_000, context_length=64):
    """compute_rope_params(head_dim, theta_base, context_length) against the reference's."""
    args = (head_dim, theta_base, context_length)

    def tables(**how):
        return lambda: rope_tables_of(*args, **how)

    counted = []
    grade.same("compute_rope_params", *args, slack=angle_rounding(*args),
               rules=[(VECTORISED, lambda reply: counted.append(reply.ops))], mistakes=[
        Mistake("rope-pairs-interleaved", "your angles repeat each frequency in place (i, i, i+1, i+1, ...); "
                "RoPE here uses the same angles for both halves: cat([angles, angles])", tables(interleaved=True)),
        Mistake("rope-frequencies-wrong", "your frequencies are theta_base^(-i/head_dim) for i = 0, 1, 2, ...: the "
                "exponent of pair i is 2i/head_dim (torch.arange(0, head_dim, 2) / head_dim), so the slowest pair "
                "turns head_dim/2 times too fast", tables(frequencies="i/hd")),
        Mistake("rope-frequencies-wrong", "your frequencies grow with i (theta_base^(+2i/head_dim)): each pair's "
                "angle is pos * theta_base^(-2i/head_dim), 1.0 / theta_base ** (2i / head_dim)",
                tables(frequencies="+2i/hd")),
        *([Mistake(None, f"your tables are those of theta_base = 10000, not of the theta_base = {theta_base} passed: "
                   "use the argument, 1.0 / theta_base ** (torch.arange(0, head_dim, 2) / head_dim)",
                   lambda: rope_tables_of(head_dim, 10_000, context_length))] if theta_base != 10_000 else [])])
    vectorised_here(grade, "compute_rope_params", args, counted, context_length,
                    lambda other: ((head_dim, theta_base, other), {"slack": angle_rounding(head_dim, theta_base, other)}))


@model
def rope_tables_of(head_dim, theta_base, context_length, *, interleaved=False, frequencies="2i/hd"):
    """compute_rope_params' float32 cos and sin [context_length, head_dim] of rope_angles' angles (the lesson's,
    or mistaken ones: ``interleaved``, ``frequencies``)."""
    torch = _torch()
    how = {"interleaved": interleaved, "frequencies": frequencies}
    return tuple(f(rope_angles(head_dim, theta_base, context_length, **how)).float() for f in (torch.cos, torch.sin))


@model
def rope_tables(head_dim, context_length=64, dtype=None):
    """cos and sin [context_length, head_dim] of the course's angles (theta_base 10 000), in ``dtype``."""
    angles = rope_angles(head_dim, 10_000, context_length)
    torch = _torch()
    return angles.cos().to(dtype or torch.float32), angles.sin().to(dtype or torch.float32)


def rope_same(grade, x, cos, sin, offset=0, grad=False):
    """apply_rope(x, cos, sin, offset=offset) against the reference's (gradients for x only)."""
    said = {"pairs": "your code rotates adjacent pairs (x[2i], x[2i+1])",
            "every-two": "your code rotates adjacent pairs (x[2i], x[2i+1]), GPT-J's rotate_every_two: "
                         "stack(-x[..., 1::2], x[..., ::2]), with the tables' angles of the halves",
            "even-odd-halves": "your code splits the features into even and odd ones (x[..., ::2], x[..., 1::2]) "
                               "where the formula's x1 and x2 are the first and second half",
            "pairs-every-other-angle": "your code rotates adjacent pairs (x[2i], x[2i+1]) by every other column of "
                                       "the tables (cos[..., ::2])"}
    mistakes = [Mistake("rope-pairs-interleaved", f"{said[layout]}; RoPE here rotates the two halves, x[i] with "
                        "x[i + hd/2]: x*cos + cat(-x2, x1)*sin", lambda layout=layout: rope(x, cos, sin, offset,
                                                                                          layout=layout))
                for layout in PAIR_LAYOUTS]
    mistakes.append(Mistake(None, "your rotate-half is cat(x2, -x1), which turns each pair by -angle (the other "
                            "way round): the formula is x*cos + cat(-x2, x1)*sin, the second half negated and put "
                            "first", lambda: rope(x, cos, sin, offset, layout="halves-reversed")))
    if offset + 1 + x.shape[-2] <= cos.shape[0]:
        mistakes.append(Mistake(None, f"your rotation starts at position offset + 1 = {offset + 1}, one too far: the "
                                f"first token of x sits at position offset = {offset}, so its rows are "
                                "cos[offset:offset + T] and sin[offset:offset + T]",
                                lambda: rope(x, cos, sin, offset + 1)))
    if x.dim() == 4 and offset + x.shape[1] <= cos.shape[0]:  # open_lm #4: [B, T, H, hd] read as [B, H, T, hd]
        mistakes.append(Mistake(None, "your rotation is along the heads, not the tokens: x is [B, H, T, hd] and each "
                                "token t of it takes the rows cos[offset + t], sin[offset + t]; your code gives head h "
                                "the angles of position offset + h (a permute to [B, T, H, hd], or a sequence "
                                "dimension of 1, reads the heads as positions)",
                                lambda: rope_along_heads(x, cos, sin, offset)))
    if offset:
        mistakes.append(Mistake("cache-position-not-advanced", f"your rotation starts at position 0, not at offset "
                                f"{offset}: the tokens of a cached call sit after the cached ones",
                                lambda: rope(x, cos, sin, 0)))
    counted = []
    grade.same("apply_rope", x, cos, sin, offset=offset, grad=(0,) if grad else False, mistakes=mistakes,
               rules=[(VECTORISED, lambda reply: counted.append(reply.ops))])
    if x.dim() >= 2:
        generator = _torch().Generator().manual_seed(grade.seed ^ (x.shape[-2] * 7919 + x.dim()))

        def longer(other):  # x's values and layout (keys come transposed) on another number of tokens
            torch = _torch()
            rows = table_rows(cos.shape[0])
            if offset + other > cos.shape[0]:  # the tables' own rows after theirs: never a shorter call at their end
                rows = torch.cat([rows, torch.randint(0, cos.shape[0], (offset + other - cos.shape[0],),
                                                      generator=generator)])  # (red team round 24b)
            return (lengthened(x, other, generator), cos.index_select(0, rows), sin.index_select(0, rows)), \
                {"offset": offset, "grad": (0,) if grad else False}

        vectorised_here(grade, "apply_rope", (x, cos, sin), counted, x.shape[-2], longer, {"offset": offset})


@model
def rope_along_heads(x, cos, sin, offset):
    """apply_rope on x [B, H, T, hd] read as [B, T, H, hd]: head h turned by the angles of position offset + h."""
    return rope(x.transpose(1, 2), cos, sin, offset).transpose(1, 2)


@model
def table_rows(count):
    """The index of every row of a table of ``count`` rows, in order."""
    return _torch().arange(count)


# --- repeat_kv ---------------------------------------------------------------------------------------
def repeat_kv_same(grade, x, group_size, grad=False):
    """repeat_kv(x, group_size) against the reference's."""
    grade.same("repeat_kv", x, group_size, grad=grad, mistakes=[
        Mistake("kv-heads-tiled", "your groups come out tiled ([K1, K2, K1, K2]); each must be repeated in a row "
                "([K1, K1, K2, K2]): repeat_interleave, not repeat", lambda: kv_repeated(x, group_size, tiled=True)),
        Mistake(None, "your copies are made along dimension 2, the tokens; each group is repeated along dimension 1, "
                "the heads: x.repeat_interleave(group_size, dim=1)", lambda: kv_repeated(x, group_size, dim=2))])


@model
def kv_repeated(x, group_size, dim=1, *, tiled=False):
    """repeat_kv(x, group_size) as the lesson computes it: each group repeated in a row along ``dim`` (1, the
    heads; 2, the tokens: a mistake), or ``tiled`` (the groups repeated as a whole, [K1, K2, K1, K2]: a mistake)."""
    return x.repeat(1, group_size, 1, 1) if tiled else x.repeat_interleave(group_size, dim=dim)


# --- sliding_window_mask -----------------------------------------------------------------------------
@model
def window_mask(num_queries, num_keys, window, q_start=0, k_start=0):
    """The lesson's mask (True = hidden) of queries at q_start... over keys at k_start..."""
    torch = _torch()
    query_at = torch.arange(q_start, q_start + num_queries)[:, None]  # [Tq, 1]
    key_at = torch.arange(k_start, k_start + num_keys)[None, :]  # [1, Tk]
    future = key_at > query_at
    return future if window is None else future | (query_at - key_at >= window)


@model
def window_mask_mistakes(num_queries, num_keys, window, q_start=0, k_start=0):
    """sliding_window_mask done wrong (True = hidden), as mask_same names it: "inverted" (True where a query
    may look), "mirrored" (the past hidden, the tokens after each query shown), "diagonal" (each query's own
    position hidden too) and, for a window of more than 1, "near-future" (the window cut on the wrong side of
    the causal mask: tril)."""
    torch = _torch()
    right = window_mask(num_queries, num_keys, window, q_start, k_start)
    queries = torch.arange(num_queries)[:, None] + q_start
    keys = torch.arange(num_keys)[None, :] + k_start
    wrong = {"inverted": ~right,
             "mirrored": keys < queries if window is None else (keys < queries) | (keys - queries >= window),
             "diagonal": right | (queries == keys)}
    if window and window > 1:
        wrong["near-future"] = (keys > queries) & (keys - queries <= window)
    return wrong


def mask_same(grade, *args):
    """sliding_window_mask(*args) against the reference's, its usual mistakes named."""
    args = (*args, *(0,) * (5 - len(args)))  # every start given: the classes' calls name both (charged_once)
    num_queries, num_keys, window, *starts = args
    wrong = window_mask_mistakes(*args)
    mistakes = [Mistake("cache-position-not-advanced", "your positions start at 0: queries sit at q_start, keys at "
                        "k_start", lambda: window_mask(num_queries, num_keys, window)),
                Mistake("mask-inverted", "your mask is True where a query may look; True means hidden",
                        wrong["inverted"]),
                Mistake("mask-inverted", "your mask hides the past and shows the tokens after each query: the "
                        "distance is the query's position minus the key's", wrong["mirrored"]),
                Mistake("mask-hides-diagonal", "your mask hides each query's own position: a token sees itself",
                        wrong["diagonal"])]
    if len(starts) > 1 and starts[1]:
        mistakes.append(Mistake(None, f"your keys' positions start at 0, not at k_start = {starts[1]}: key j sits at "
                                "position k_start + j (the queries at q_start + i), torch.arange(k_start, k_start + "
                                "num_keys)", lambda: window_mask(num_queries, num_keys, window, starts[0], 0)))
    if starts and starts[0] and not (len(starts) > 1 and starts[1] and bool(
            (window_mask(num_queries, num_keys, window, 0, *starts[1:]) ==
             window_mask(num_queries, num_keys, window, starts[0], 0)).all())):  # (where the keys' slip is not alike)
        mistakes.append(Mistake("cache-position-not-advanced", f"your queries' positions start at 0, not at q_start = "
                                f"{starts[0]}: query i "
                                "sits at position q_start + i (the keys at k_start + j), torch.arange(q_start, "
                                "q_start + num_queries)", lambda: window_mask(num_queries, num_keys, window, 0,
                                                                              *starts[1:])))
    if window:
        mistakes += [
            Mistake("mask-not-applied", "your mask is the causal mask alone: the window is not applied (was the "
                    "result of a non-in-place | or logical_or dropped?)", lambda: window_mask(num_queries, num_keys,
                                                                                              None, *starts)),
            Mistake("window-off-by-one", "each query sees window + 1 tokens: itself and the window - 1 before it "
                    "make window", lambda: window_mask(num_queries, num_keys, window + 1, *starts)),
            Mistake("window-off-by-one", "each query sees window - 1 tokens: itself and the window - 1 before it "
                    "make window", lambda: window_mask(num_queries, num_keys, window - 1, *starts))]
        if window > 1:  # tril on the causal mask (transformers PR #41228): the far future shown, the past kept
            mistakes.append(Mistake(None, f"your mask shows future keys: those more than window = {window} "
                                    "positions after a query are visible, and no past key is hidden. The window "
                                    "was cut on the wrong side of the causal mask (tril keeps the entries below a "
                                    "diagonal, the near future): hide the keys after the query and those window or "
                                    "more positions before it", wrong["near-future"]))
    counted = []
    grade.same("sliding_window_mask", *args, mistakes=mistakes,
               rules=[(VECTORISED, lambda reply: counted.append(reply.ops))])

    def longer(other):  # as many more queries as keys (one query: more keys), the last query as far from the last key
        more = other - (num_queries + num_keys)
        queries_more = 0 if num_queries == 1 else more // 2
        q_start, k_start = starts
        return (num_queries + queries_more, num_keys + more - queries_more, window,
                q_start + more - 2 * queries_more, k_start), {}

    vectorised_here(grade, "sliding_window_mask", args, counted, num_queries + num_keys, longer)


def masks_as_called(grade, calls):
    """sliding_window_mask on every call the classes' cases make of it, (num_queries, num_keys, window,
    q_start, k_start) each: a class case is kept as right given the student's helper only on a call its
    own exercise grades (the contract's "forgiveness never hides a mistake"), so the exercise grades
    those (lesson.every_call)."""
    every_call(grade, mask_same, calls)


def vectorised_here(grade, name, args, counted, tokens, longer, kwargs=None, limit=None):
    """``name``'s vectorised rule read on a right comparing call of ``args`` (its count in ``counted``;
    lesson.vectorised_on), as 01's functions and 04's classes read it: the same function on another number of
    tokens (``longer(other)`` gives its arguments and Grade.same's keywords, the checked call's values carried;
    ``kwargs``: the checked call's keywords).
    Red team round 22b's mechanism on 06's functions: code that loops over positions wherever the vectorised check's
    own inputs are not."""
    if not counted:
        return

    def call_with(other):
        seen = []
        other_args, options = longer(other)
        grade.same(name, *other_args, **options, rules=[(VECTORISED, lambda reply: seen.append(reply.ops))])
        return seen[0] if seen else None

    vectorised_on(grade, name, f"{name}({', '.join(_shown(a) for a in args)})", tokens, counted[0],
                  lambda: grade.count_reference(name, lambda: getattr(grade.ref, name), args, kwargs or {}), call_with,
                  limit)


def _shown(value) -> str:
    return f"<{shape_str(value.shape)}>" if hasattr(value, "shape") else repr(value)


def expect_vectorised(grade, name, short_args, long_args, what):
    """The operations of ``name`` may not grow from ``short_args`` to ``long_args`` (more tokens), and
    both outputs are right (grade.measured). The rule this check reads is read on the comparing calls too
    (:func:`vectorised_here`)."""
    grade.reads_rule(VECTORISED)
    short = grade.measured(name, *short_args).ops
    long = grade.measured(name, *long_args).ops
    grade.expect_not_growing(name, short, long, cases=(f"for {what[0]}", f"for {what[1]}"),
                             hint="a Python loop over positions; build the whole tensor at once (arange, broadcasting)")


# --- the cached classes: the lesson's attention from the weights both instances hold --------------------
def design(pair):
    """(num_heads, num_kv_groups, sliding_window_size) of a pair, read from its constructor's arguments
    (not from the reference, which a replayed check does not have)."""
    args, kwargs = pair.args, pair.kwargs
    if pair.name == MHA:
        return kwargs.get("num_heads", args[4] if len(args) > 4 else None), \
            kwargs.get("num_heads", args[4] if len(args) > 4 else None), None
    if pair.name == GQA:
        heads = kwargs.get("num_heads", args[3] if len(args) > 3 else None)
        return heads, kwargs.get("num_kv_groups", args[4] if len(args) > 4 else None), None
    heads = kwargs.get("num_heads", args[3] if len(args) > 3 else None)
    return heads, heads, kwargs.get("sliding_window_size", args[5] if len(args) > 5 else None)


class Model:
    """A pair's class as the lesson computes it, from ``weights`` (default: those both instances hold now,
    ``pair.weights``), on the CPU."""

    def __init__(self, pair, weights=None):
        self.num_heads, self.groups, self.window = design(pair)
        # copies: a pair's weights may share storage with the reference's, which new_weights changes in place
        self.weights = {n: t.clone() for n, t in (pair.weights if weights is None else weights).items()}
        self.d_out = self.weights["out_proj.weight"].shape[1]
        self.head_dim = self.d_out // self.num_heads

    @staticmethod
    def d_out_of(pair) -> int:
        """The model's width, read off the weights the pair holds (no copy)."""
        return pair.weights["out_proj.weight"].shape[1]


# The Model's computations: the flow functions below (projected, last_keys, attend_masked, attention_of,
# variant_of) take a Model and hand its data (weights, num_heads, groups) to the @model function that computes.
@model
def heads(x, num_heads):
    batch, tokens, dim = x.shape
    return x.view(batch, tokens, num_heads, dim // num_heads).transpose(1, 2)  # [B, heads, T, hd]


def _stale(stale):
    """projected's ``stale`` (an old Model, a count) as data: (its weights, the count)."""
    return None if stale is None else (stale[0].weights, stale[1])


def projected(model, x, start, size, first=0, stale=None):
    """The queries of the chunk x[:, start:start+size] and the keys and values of x[:, first:start+size]:
    [B, H, size, hd] and [B, G, start+size-first, hd] twice. ``stale``: ``(old, count)``, the first
    ``count`` tokens of the sequence were cached under the weights of ``old`` (a Model), which changed
    since: their keys and values are what was computed then."""
    return projected_by(model.weights, model.num_heads, model.groups, x, start, size, first, _stale(stale))


@model
def projected_by(weights, num_heads, groups, x, start, size, first=0, stale=None):
    """:func:`projected` from a Model's ``weights``, ``num_heads`` and ``groups`` (on the CPU); ``stale``:
    ``(old weights, count)``."""
    torch = _torch()

    def project(these, name, t):
        return mistaken.linear(these, name, t.cpu())

    def keys_values(these, tokens):  # [B, G, T, hd] keys and values of ``tokens`` [B, T, d_in]
        return heads(project(these, "W_key", tokens), groups), heads(project(these, "W_value", tokens), groups)

    queries = heads(project(weights, "W_query", x[:, start:start + size]), num_heads)
    tokens = x[:, first:start + size]
    if stale is None or stale[1] <= first:
        return (queries, *keys_values(weights, tokens))
    old, count = stale
    earlier, later = keys_values(old, tokens[:, :count - first]), keys_values(weights, tokens[:, count - first:])
    return queries, torch.cat([earlier[0], later[0]], dim=2), torch.cat([earlier[1], later[1]], dim=2)


def last_keys(model, x, start, size, kept, stale=None):
    """The queries of the chunk x[:, start:start+size] and the last ``kept`` keys and values before its
    end, repeated to the query heads (GQA's groups): [B, H, size, hd] and [B, H, kept, hd] twice."""
    return last_keys_by(model.weights, model.num_heads, model.groups, x, start, size, kept, _stale(stale))


@model
def last_keys_by(weights, num_heads, groups, x, start, size, kept, stale=None):
    """:func:`last_keys` from a Model's data (see :func:`projected_by`)."""
    queries, keys, values = projected_by(weights, num_heads, groups, x, start, size, first=start + size - kept,
                                         stale=stale)
    group_size = queries.shape[1] // keys.shape[1]
    return queries, keys.repeat_interleave(group_size, dim=1), values.repeat_interleave(group_size, dim=1)


def attend_masked(model, queries, keys, values, hidden, scale=None):
    """The chunk's output from these queries, keys and values (heads already matched), ``hidden`` [Tq, Tk]
    removed, through out_proj."""
    return attend_masked_by(model.weights, queries, keys, values, hidden, scale)


@model
def attend_masked_by(weights, queries, keys, values, hidden, scale=None):
    """:func:`attend_masked` with a Model's ``weights`` (its out_proj)."""
    scale = keys.shape[-1] ** -0.5 if scale is None else scale
    # a row with every key hidden is NaN, as torch.softmax gives it (a mistake's own rows, as the student's code)
    context = mistaken.attend(queries, keys, values, scale=scale, hidden=hidden.cpu(), rows="nan")  # [B, H, size, hd]
    # [B, size, d_out] through out_proj
    return mistaken.linear(weights, "out_proj", context.transpose(1, 2).flatten(2).cpu())


def attention_of(model, prefix, size, *, q_start, k_start=None, window=None, tiled=False, scale=None):
    """The model applied to the last ``size`` tokens of ``prefix`` (queries at ``q_start``...) over every
    token of it as keys, with a causal (and window) mask: how a mistaken cache attends."""
    return attention_by(model.weights, model.num_heads, model.groups, prefix, size, q_start=q_start,
                        k_start=k_start, window=window, tiled=tiled, scale=scale)


@model
def attention_by(weights, num_heads, groups, prefix, size, *, q_start, k_start=None, window=None, tiled=False,
                 scale=None):
    """:func:`attention_of` from a Model's data (see :func:`projected_by`)."""
    queries, keys, values = projected_by(weights, num_heads, groups, prefix, prefix.shape[1] - size, size)
    group_size = queries.shape[1] // keys.shape[1]
    if group_size > 1:
        repeat = (lambda t: t.repeat(1, group_size, 1, 1)) if tiled else \
            (lambda t: t.repeat_interleave(group_size, dim=1))
        keys, values = repeat(keys), repeat(values)
    k_start = q_start + size - prefix.shape[1] if k_start is None else k_start
    return attend_masked_by(weights, queries, keys, values,
                            window_mask(size, keys.shape[2], window, q_start, k_start), scale=scale)


# --- right, given the student's own helper ------------------------------------------------------------
def repeat_kv_root_cause(grade, pair, x, start, size, stale=None):
    """GroupedQueryAttention right but for the student's own repeat_kv (cascade "once": its points kept)."""
    def root_cause(failure, out):
        torch = _torch()
        model = Model(pair)
        with torch.no_grad():
            try:
                queries, keys, values = projected(model, x, start, size, 0, stale)
            except diagnose.NotReplayable:  # a large case's keys, not on record in a student distribution
                return diagnose.unseen_helper(grade, failure, "repeat_kv")
            group_size = queries.shape[1] // keys.shape[1]
            theirs_k = diagnose.their(grade, "repeat_kv", keys, group_size)
            theirs_v = diagnose.their(grade, "repeat_kv", values, group_size)
        raised = next((t for t in (theirs_k, theirs_v) if isinstance(t, diagnose.Raised)), None)
        if raised or not isinstance(theirs_v, torch.Tensor):
            return raised and mistaken.blame(grade, failure, out, "repeat_kv", raised, None, None)
        theirs_v = theirs_v.cpu()  # in its own dtype, as the student's class was given it
        return mistaken.blame(
            grade, failure, out, "repeat_kv", theirs_k, kv_repeated(keys, group_size),
            lambda k: attend_masked(model, queries, k, theirs_v, window_mask(size, k.shape[2], None, start)),
            [Mistake("kv-heads-tiled", "it tiles the groups ([K1, K2, K1, K2]) instead of repeating each in a row",
                     kv_repeated(keys, group_size, tiled=True))])
    return root_cause


def window_mask_root_cause(grade, pair, x, start, size, stale=None):
    """A windowed or causal class right but for the student's own sliding_window_mask."""
    def root_cause(failure, out):
        torch = _torch()
        model = Model(pair)
        window = model.window
        num_keys = start + size if window is None else min(start + size, window + size - 1)
        k_start = start + size - num_keys  # the first of the keys this call attends
        theirs = diagnose.their(grade, "sliding_window_mask", size, num_keys, window, start, k_start)

        kept = []  # the chunk's keys, made only when needed: a student distribution keeps a small case's only

        def composed(hidden):
            kept[:] = kept or [last_keys(model, x, start, size, num_keys, stale)]
            return attend_masked(model, *kept[0], hidden)

        with torch.no_grad():
            right = window_mask(size, num_keys, window, start, k_start)
            return mistaken.blame(grade, failure, out, "sliding_window_mask", theirs, right, composed,
                                  call=(size, num_keys, window, start, k_start), helper_mistakes=[
                Mistake("window-off-by-one", "it shows window + 1 tokens", window_mask(size, num_keys, window + 1,
                                                                                      start, k_start))]
                if window else [])
    return root_cause


def cached_mask_crash(grade, pair, x, start, size):
    """A cached call of ``size`` > 1 tokens after ``start`` cached ones that crashes on a shape mismatch
    naming both T = ``size`` and a key count past it: the [T, T] causal mask of an uncached call laid on
    the [T, cached + T] scores (``mask[:T, :T]``, a square mask as in LLMs-from-scratch PR #697 and
    llama issue 899). Its first call and its one-token calls run (a [1, 1] mask broadcasts), and so does an
    uncached call of those T tokens, rightly: a class whose own uncached call is wrong (scores K Qᵀ, laid
    [cached + T, T] against a right mask, crash on the same sizes) has another mistake, which its other
    checks name."""
    def root_cause(failure, out):
        fault = getattr(failure, "fault", None)
        if fault is None or not start or size < 2 or not diagnose.mentions(fault, size):
            return None
        keys = next((n for n in range(start + size, size, -1) if diagnose.mentions(fault, n)), None)
        if keys is None or not uncached_right(grade, pair, x[:, start:start + size]):
            return None
        return CheckFailed(f"a call of T = {size} new tokens after {start} cached ones crashed on a shape that "
                           f"names {size} and {keys}: its scores are [T, cached + T] = [{size}, {keys}] (the "
                           f"new queries against every key kept), but the causal mask is laid out as for an "
                           f"uncached call, [T, T]. Build the mask for the keys this call attends, its queries "
                           f"starting at position {start}. Your code raised:\n{fault.message}",
                           ("cache-position-not-advanced",))
    return root_cause


def cache_appended_crash(pair, start, size):
    """A cached call of ``size`` tokens after ``start`` cached ones that crashes as a cache extended
    along another dimension than the tokens' does (the LLM's 3-d habit, torch.cat(..., dim=1), on
    [B, H, T, hd]): torch.cat itself refuses cached and new keys whose token counts differ ("except in
    dimension d. Expected size <cached> but got size <size>"), or, where the counts agree, the keys come
    out with twice the heads, which the queries' H heads cannot be multiplied with."""
    def root_cause(failure, out):
        fault = getattr(failure, "fault", None)
        if fault is None or not start or fault.kind != "error":
            return None
        heads_ = design(pair)[0]
        last = diagnose.last_line(fault.message)
        refused = shape_mismatch(last, "cat")
        if refused and refused.sizes[1] == size and 0 < refused.sizes[0] <= start and refused.sizes[0] != size:
            told = (f"torch.cat along dimension {refused.dim} refused the {refused.sizes[0]} cached and the {size} new "
                    f"tokens' keys, whose dimension of tokens differs")
        elif start == size and diagnose.mentions(fault, heads_) and diagnose.mentions(fault, 2 * heads_):
            told = (f"the keys of this call came out with {2 * heads_} heads for the queries' {heads_}: the "
                    f"{start} cached and {size} new tokens' keys were stacked as further heads")
        else:
            return None
        return CheckFailed(f"a call of {size} new token{'s' * (size != 1)} after {start} cached ones crashed: {told}. Your cache is "
                           f"extended along another dimension than the tokens': append the new keys and values "
                           f"along the positions, torch.cat([self.cache_k, keys], dim=2) for [B, H, T, hd] (dim=1 "
                           f"is the heads there). Your code raised:\n{fault.message}")
    return root_cause


def helper_faults(grade, pair, x, start, size, stale=None):
    """The chunk x[:, start:start+size] right but for the student's own sliding_window_mask, or (GQA)
    repeat_kv: the first of these root causes that explains the output (cascade "once"); else a crash
    that shows a mask laid out for an uncached call. ``stale``: see :func:`projected`."""
    causes = [window_mask_root_cause(grade, pair, x, start, size, stale)]
    if pair.name == GQA:
        causes.append(repeat_kv_root_cause(grade, pair, x, start, size, stale))
    causes += [cache_appended_crash(pair, start, size), cached_mask_crash(grade, pair, x, start, size)]
    return lambda failure, out: next((found for cause in causes if (found := cause(failure, out))), None)


# --- the mistakes of 04's classes, made in a cached class ---------------------------------------------
@model
def relation_mask(num_queries, num_keys, relation, window, q_start, k_start):
    """True (hidden) where a key stands in ``relation`` to a query, by absolute position: "future" (the
    right causal mask, with the window), "past", "past-and-diagonal", "future-and-diagonal" (the window
    kept), "inverted" (the right mask's complement), None (nothing hidden)."""
    torch = _torch()
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


def variant_of(model, prefix, size, *, q_start, **how):
    """attention_of with one of the usual mistakes of 04's classes made in a cached class: the scale,
    the mask (``relation``, see relation_mask), mistaken.attend's ``changes`` (softmax dimension, scores
    transposed, mask after the softmax, rows with nothing visible), heads split or merged without the
    transpose, no out_proj, projections in the wrong roles; None where the mistake cannot give an output
    of the right shape (a GQA query from the narrower key weight). ``how``: :func:`variant_by`'s settings."""
    return variant_by(model.weights, model.num_heads, model.groups, prefix, size, q_start=q_start, **how)


@model
def variant_by(weights, num_heads, groups, prefix, size, *, q_start, window=None, relation="future", scale="head",
               split_transpose=True, merge_transpose=True, out_proj=True, roles=mistaken.ROLES, **changes):
    """:func:`variant_of` from a Model's data (see :func:`projected_by`)."""
    prefix = prefix.cpu()
    batch, total, _ = prefix.shape
    d_out = weights["out_proj.weight"].shape[1]
    head_dim = d_out // num_heads
    names = {"query": "W_query", "key": "W_key", "value": "W_value"}
    wanted = {"query": (num_heads, size), "key": (groups, total), "value": (groups, total)}

    def split(role, source):
        count, tokens = wanted[role]
        t = mistaken.linear(weights, names[source], prefix[:, -tokens:].cpu())  # [B, tokens, features]
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
    context = mistaken.attend(q, k, v, scale=multiplier, hidden=hidden, **changes)  # [B, H, size, hd]
    context = context.transpose(1, 2) if merge_transpose else context
    context = context.reshape(batch, size, d_out)
    return mistaken.linear(weights, "out_proj", context.cpu()) if out_proj else context


KEYS_AS_VALUES = ("query", "key", "key")


def keys_as_values(pair, output):
    """The weights times W_key's projection (``output()``): values computed with W_key (qkv-swapped) and
    the keys used as values (values-not-used) give the same output; what the student's cache holds
    tells them apart (cache_v holding just what cache_k holds: the values came from W_key). For naming
    only, never for points; nothing while the cache holds nothing."""
    torch = _torch()

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


def chunk_mistakes(pair, x, start, size, cached=False):
    """What a mistaken cache, or a mistake of 04's classes, gives for the chunk x[:, start:start+size]
    after x[:, :start] was fed (each computed with the weights both instances hold, only when the check
    failed). ``cached``: the chunk was fed with use_cache=True (see :func:`unmasked_or_misplaced`)."""
    prefix = x[:, :start + size].cpu()
    window = design(pair)[2]
    model = Model(pair)
    num_heads, groups = model.num_heads, model.groups
    table = CLASS_MISTAKES + (FIRST_CHUNK_MISTAKES if start == 0 else ())
    if cached and window is None:  # "no mask" is also what queries placed after every key give
        table = tuple(row for row in table if row[2] != {"relation": None})
    found = [Mistake(m, what, lambda changes=changes: variant_of(model, prefix, size, q_start=start, window=window,
                                                                 **changes)) for m, what, changes in table]
    if cached and window is None:
        found += unmasked_or_misplaced(pair, model, prefix, start, size)
    found += keys_as_values(pair, lambda: variant_of(model, prefix, size, q_start=start, window=window,
                                                     roles=KEYS_AS_VALUES))
    if start:
        found.append(Mistake("cache-position-not-advanced", "the mask of a cached call starts again at position 0: "
                             "its queries come after the cached tokens",
                             lambda: attention_of(model, prefix, size, q_start=0, k_start=0, window=window)))
        found += [Mistake("cache-position-not-advanced", f"the mask of this cached call places its queries at "
                          f"position {at}, not after the {start} cached tokens: a position that counts calls, not "
                          "tokens (advance it by T, the number of tokens each call adds)",
                          lambda at=at: attention_of(model, prefix, size, q_start=at, k_start=0, window=window))
                  for at in range(1, start)]
        if window:
            found += kept_keys_from_zero(model, prefix, start, size)
        found += cache_overwritten(model, prefix, start, size)
    if groups not in (1, num_heads):
        found.append(Mistake("kv-heads-tiled", "your key/value groups are tiled over the heads ([K1, K2, K1, K2]); "
                             "query head h uses group h // group_size: repeat_interleave",
                             lambda: attention_of(model, prefix, size, q_start=start, window=window, tiled=True)))
    if window:
        found += [Mistake("window-off-by-one", f"each query sees {w} tokens, not sliding_window_size = {window}",
                          lambda w=w: attention_of(model, prefix, size, q_start=start, window=w))
                  for w in (window + 1, window - 1) if w > 0]
        found += window_off_by_one_over_the_kept_keys(model, prefix, start, size)
        found += window_cache_too_small(model, prefix, start, size)
    return found


def unmasked_or_misplaced(pair, model, prefix, start, size):
    """A cached call whose every query sees every key (its own future included): the same instance's call
    without the cache, on the same tokens, says which case this is. Where that one is wrong too, no mask
    is applied at all. Where it is right, the class masks, and only the cached path hides nothing: its
    mask is skipped there, or its queries sit after every key (a position read after this call advanced
    it, or counted too far). Those two give one output, so the message says both, positions first, with
    no id (issue 46: a position read after it was advanced was told only masked_fill's hint; round 7's
    learner and porter still read mask-not-applied's hint, about masked_fill, as the wrong cause)."""
    said = {}

    def uncached_right() -> bool:
        if "right" not in said:
            try:
                theirs = pair.call(prefix.to(pair.grade.device), use_cache=False).out
                said["right"] = diagnose.matches(pair.grade, theirs, attention_of(model, prefix, prefix.shape[1],
                                                                                  q_start=0))
            except Exception:  # noqa: BLE001 - a call without the cache that fails tells nothing here
                said["right"] = False
        return said["right"]

    def unmasked(want):
        def output():
            if uncached_right() is not want:
                raise RuntimeError("not this case's explanation")  # diagnose.first_match: no output here
            return variant_of(model, prefix, size, q_start=start, relation=None)
        return output

    end = start + size
    return [Mistake("mask-not-applied", "no mask: every token sees the tokens after it", unmasked(False)),
            Mistake(None, f"with use_cache=True your mask has no effect: this call's queries see "
                    f"every key, their own future included, though the same tokens without the cache are masked "
                    f"right. Either the mask places its queries after every key (at position {end} or later: a "
                    f"position read after this call advanced it, or counted too far), where they sit at {start} "
                    f"to {end - 1} (q_start = the number of tokens cached before this call), or the cached path "
                    f"skips the mask", unmasked(True))]


def cache_overwritten(model, prefix, start, size):
    """A cache that holds only the previous call's keys and values (the cache replaced by each call's own,
    not appended to): the chunk attends over the last ``last`` cached keys (the previous call's, of any
    size ``last`` < start) and its own, masked at their true positions or as if they sat at 0, 1, ...; none
    for a sliding window, whose cache keeps the last keys only (kept_keys_from_zero, window_cache_too_small)."""
    found = []
    if model.window:  # a window's cache keeps the last keys only: its own mistakes say what a short cache gives
        return found
    for last in range(1, start):
        kept = last + size
        for k_start in sorted({start - last, 0}):
            found.append(Mistake(None, "your cache holds only the previous call's keys and values: each call with "
                                 "use_cache=True replaced cache_k and cache_v with its own instead of appending to "
                                 "them; keep them all, self.cache_k = torch.cat([self.cache_k, k], dim=2) (the "
                                 "keys attended, the cached ones and this call's)",
                                 lambda kept=kept, k_start=k_start: attend_masked(
                                     model, *last_keys(model, prefix, start, size, kept),
                                     window_mask(size, kept, model.window, start, k_start))))
    return found


def window_off_by_one_over_the_kept_keys(model, prefix, start, size):
    """The window's mask off by one (window + 1 or window - 1) over the keys a right cache keeps (the last
    window + size - 1): the cache is trimmed right and only the mask is wrong, so on a chunk after the
    cache was trimmed its first queries see fewer keys than the mask would show them. Nothing where no key
    was dropped (the candidate over every key then says the same)."""
    window, total = model.window, start + size
    kept = min(total, window + size - 1)
    if kept == total:
        return []
    return [Mistake("window-off-by-one", f"each query sees {w} tokens, not sliding_window_size = {window}",
                    lambda w=w: attend_masked(model, *last_keys(model, prefix, start, size, kept),
                                              window_mask(size, kept, w, start, total - kept)))
            for w in (window + 1, window - 1) if w > 0]


def kept_keys_from_zero(model, prefix, start, size):
    """A sliding-window cached call that attends over the last keys only (those its queries may see, or
    the cache's ``window``) but masks them as if they sat at positions 0, 1, ... (k_start = 0): the keys
    kept are at start + size - kept ... start + size - 1. Each of the three ways to treat a query left
    no key (mistaken.HIDDEN_ROWS); nothing where no key was dropped (then k_start = 0 is right)."""
    window, total = model.window, start + size
    found = []
    for kept in sorted({min(total, window + size - 1), min(total, window)}):
        if kept == total:
            continue
        def output(kept=kept, rows="zero"):  # computed only when the check failed
            return kept_from_zero(model.weights, model.num_heads, model.groups, prefix, start, size, kept, window,
                                  rows)

        found += [Mistake("cache-position-not-advanced", f"your cached call keeps the last {kept} keys but masks "
                          f"them as if they sat at positions 0 to {kept - 1}; they sit at {total - kept} to "
                          f"{total - 1} (k_start = {total - kept}: the positions of the keys kept, not 0)",
                          lambda output=output, rows=rows: output(rows=rows)) for rows in mistaken.HIDDEN_ROWS]
    return found


@model
def kept_from_zero(weights, num_heads, groups, prefix, start, size, kept, window, rows="zero"):
    """:func:`kept_keys_from_zero`'s output from a Model's data (see :func:`projected_by`): the last ``kept``
    keys masked as if they sat at positions 0, 1, ..., a query left no key treated as ``rows``."""
    d_out = weights["out_proj.weight"].shape[1]
    q, k, v = last_keys_by(weights, num_heads, groups, prefix, start, size, kept)
    context = mistaken.attend(q, k, v, scale=(d_out // num_heads) ** -0.5,
                              hidden=window_mask(size, kept, window, start, 0), rows=rows)
    return mistaken.linear(weights, "out_proj", context.transpose(1, 2).reshape(q.shape[0], size, d_out).cpu())


def window_cache_too_small(model, prefix, start, size):
    """A sliding-window cache that keeps, and attends over, only the last ``window`` keys (the new ones
    included): the chunk of the last ``size`` tokens of ``prefix`` (queries at ``start``...) then loses the
    keys its earlier queries still see (a row with none left is NaN, as the student's softmax gives it).
    Nothing where it gives the right output (one token, or a sequence still within the window)."""
    window = model.window
    kept = min(window, start + size)
    if size == 1 or kept == start + size:
        return []

    def output():
        return attend_masked(model, *last_keys(model, prefix, start, size, kept),
                             window_mask(size, kept, window, start, start + size - kept))

    return [Mistake("window-cache-too-small", f"your cached call attends over the last {kept} keys only "
                    f"(sliding_window_size = {window}): the first of its {size} queries still sees the "
                    f"{window - 1} tokens before it, so it needs the last {min(window + size - 1, start + size)}",
                    output)]


# --- feeding a sequence -------------------------------------------------------------------------------
def fed(grade, pair, x, start, size, also=(), recomputed=True, stale=None):
    """The chunk x[:, start:start+size] fed with use_cache=True after x[:, :start]: its output must be the
    reference's (which the reference's own cache gives); ``also``: further mistakes to look for;
    ``recomputed=False`` where the usual mistakes cannot be recomputed from the inputs (the weights
    changed since the cached tokens came: ``stale``, see :func:`projected`)."""
    torch = _torch()
    found = [*chunk_mistakes(pair, x, start, size, cached=True)] if recomputed else []
    counted = []
    with torch.no_grad():
        pair.same(x[:, start:start + size], use_cache=True, mistakes=[*found, *also],
                  root_cause=helper_faults(grade, pair, x, start, size, stale),
                  rules=[*window_rules(pair, x, start, size), *keys_once_rules(pair, x, start, size),
                         ("", lambda reply: counted.append(reply.ops))])
    window_kept(grade, pair, x, start, size)
    if counted and counted[0] is not None:
        not_growing(grade, pair, x, start, size, counted[0])


WINDOW = "the sliding window"  # the rule expect_window_attended reads (Grade.reads_rule)
# operators whose reduction in attention is over the keys (a softmax and its parts), and attention in one operator
KEY_REDUCTIONS = frozenset({
    "_softmax", "_safe_softmax", "_log_softmax", "logsumexp", "amax", "max", "sum", "_scaled_dot_product_flash_attention_for_cpu",
    "_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_cudnn_attention", "_scaled_dot_product_fused_attention_overrideable",
    "_native_multi_head_attention", "_transformer_encoder_layer_fwd", "_masked_softmax",
    "_scaled_dot_product_attention_math_for_mps", "_flash_attention_forward", "_efficient_attention_forward",
    "_cudnn_attention_forward", "_flash_attention_forward_no_dropout_inplace", "_triton_scaled_dot_attention",
    "_triton_multi_head_attention"})


def window_kept(grade, pair, x, start, size):
    """SWA's window read after a right cached call of the chunk x[:, start:start+size], as
    expect_window_cache_trimmed reads it: cache_k and cache_v hold at most the last sliding_window_size
    positions (counted by their elements, any layout). A cache kept whole where the window is not read (red
    team round 22: told apart by the sizes of the calls that read it) breaks it here (grader.grading.rules_read)."""
    window = design(pair)[2]
    if pair.name != SWA or not window:
        return
    batch, d_out = x.shape[0], Model(pair).d_out
    try:
        held = cache_elements(pair)
    except StudentFault as fault:
        how = f"its cache_k and cache_v could not be read after the call ({fault.kind})"
    else:
        if held <= batch * window * d_out * 2:
            return
        how = f"its cache_k and cache_v hold {held / (batch * d_out * 2):g} positions after it"
    grade.rules_broken.append((WINDOW, f"{pair.what} forward(<tokens {start} to {start + size - 1}>, use_cache=True), "
                                       f"after {start} earlier tokens: {how}, where the cache keeps the last "
                                       f"sliding_window_size = {window} positions only"))


def attention_product(key: str, projections: set) -> bool:
    """Whether the tracer's ``key`` ("bmm@6": the operator and the length it contracted) is a matrix product that
    contracts neither of the ``projections``' lengths (the input's and the model's features): attention's."""
    name, _, width = key.partition("@")
    return name in PRODUCTS and width.isdigit() and int(width) not in projections


def window_rules(pair, x, start, size) -> list:
    """SWA's window read on a cached call of the chunk x[:, start:start+size] (Pair.same's ``rules``), as
    expect_window_attended reads it: a reduction wider than the window and the call's own tokens, where the
    batch and the features are narrower than that, and whatever the features' width, one by an operator that
    reduces over the keys in attention (KEY_REDUCTIONS). Red team rounds 22 and 22b: a class that told the call
    reading the window from the others (by the watching's cost, then by the features' width) attended its whole
    history under a mask elsewhere."""
    heads, _, window = design(pair)
    if pair.name != SWA or not window:
        return []
    model = Model(pair)
    allowed = max(window + size, x.shape[0], x.shape[-1], model.d_out)
    # a softmax, a maximum, a sum over the keys (or attention in one operator), whatever the features' width: the
    # keys, or the batch, the heads or a head's features of an operator that takes them all (round 22b's e01: a
    # history kept beside a trimmed cache and attended whole where the features are wider than it)
    over_keys = max(window + size, x.shape[0], heads, model.head_dim)
    what = f"{pair.what} forward(<tokens {start} to {start + size - 1}: {shape_str((x.shape[0], size, x.shape[-1]))}>, " \
           "use_cache=True)"

    # attention's batched products: the scores of every head over the keys kept, or a head's weights times its
    # values (red team round 23: a history attended by products and cumulative maxima, no reduction over the keys)
    # by the length they contract (the tracer's "bmm@6"): not the projections, which contract the input's or the
    # model's features, whatever operator torch runs them as (queries, keys and values in one product of the
    # stacked weights run as a batched product on a chunk that is not contiguous: red team round 23b's false alarm)
    scores = x.shape[0] * heads * size * max(window + size, model.head_dim + 1)
    projections = {x.shape[-1], model.d_out}

    def judge(reply):
        widest, name = max(((width or 0, name) for name, width in reply.widths.items() if name in KEY_REDUCTIONS),
                           default=(0, ""))
        if widest <= over_keys:
            widest, name = reply.widest or 0, reply.widest_op
            if widest <= allowed:
                largest, name = max(((made or 0, name) for name, made in reply.sizes.items()
                                     if attention_product(name, projections)), default=(0, ""))
                if largest <= scores:
                    return None
                return (f"{what}: a batched matrix product ({name}, as torch runs it) made {largest} entries, after "
                        f"{start} earlier tokens, where the scores of its {size} tokens' queries over the "
                        f"sliding_window_size = {window} positions kept before it and its own make "
                        f"{x.shape[0] * heads * size * (window + size)}: it attends over more keys than the window")
        return (f"{what}: an operation ({name}, as torch runs it) reduced {widest} entries at once, "
                f"after {start} earlier tokens: it attends over more keys than the sliding_window_size = {window} "
                f"positions kept before it and its own {size} tokens (at most {window + size})")

    return [(WINDOW, judge)]


KEYS_ONCE = "keys and values computed once"  # the rule expect_inputs_not_projected_again reads (Grade.reads_rule)
# the operators nn.Linear runs as (a projection of every input kept is one of them), and attention's batched products
PROJECTIONS = frozenset({"addmm", "mm", "linear", "_addmm_activation", "addmv", "mv"})
BATCHED_PRODUCTS = frozenset({"bmm", "baddbmm", "matmul"})
PRODUCTS = PROJECTIONS | BATCHED_PRODUCTS
FUSED_PROJECTIONS = 3  # a chunk's queries, keys and values may be projected by one product of the stacked weights


def keys_once_rules(pair, x, start, size) -> list:
    """The keys-once rule read on a cached call of the chunk x[:, start:start+size] (Pair.same's ``rules``), as
    expect_inputs_not_projected_again reads it: no matrix product makes more entries than projecting the chunk's
    tokens (their features or the model's) or than the scores of its queries over every key it may hold (the
    cache's positions, or the context a class's buffer is made for). A class that keeps its inputs and projects
    them all again makes a product of every earlier token's keys (red team round 23: on calls told apart by
    their dtype, where the rule's own check is float32)."""
    if pair.name not in (MHA, GQA, SWA) or not start:
        return []
    heads, _, _ = design(pair)
    d_out = Model.d_out_of(pair)
    batch, d_in = x.shape[0], x.shape[-1]
    context = pair.kwargs.get("context_length", pair.args[2] if len(pair.args) > 2 else 0) if pair.name == MHA else 0
    keys = max(start + size, context if isinstance(context, int) else 0)
    # a projection of the chunk's tokens, or one head's scores over every key as a plain matrix product; attention's
    # batched products: the scores of every head
    projected = batch * size * max(d_in, FUSED_PROJECTIONS * d_out)  # queries, keys and values in one product
    allowed = {**dict.fromkeys(PROJECTIONS, max(projected, size * keys)),
               **dict.fromkeys(BATCHED_PRODUCTS, max(projected, batch * (heads or 1) * size * keys))}
    what = f"{pair.what} forward(<tokens {start} to {start + size - 1}: {shape_str((batch, size, d_in))}>, " \
           "use_cache=True)"

    def judge(reply):
        largest, name = max(((made or 0, name) for name, made in reply.sizes.items()
                             if name in allowed and (made or 0) > allowed[name]), default=(0, ""))
        if not largest:
            return None
        return (f"{what}: a matrix product ({name}, as torch runs it) made {largest} entries, after {start} earlier "
                f"tokens, where projecting its {size} new tokens makes {batch * size * d_out}: the call projects the "
                "earlier tokens' inputs again; a KV cache keeps the keys and values themselves, each computed once, "
                "when its token arrives")

    return [(KEYS_ONCE, judge)]


BRANCH_OPS = 8  # operations a cached call may add as its cache grows (a cache trimmed once it holds the window)


def not_growing(grade, pair, x, start, size, ops):
    """The keys-once rule read by a right cached call's count (``ops``, the chunk x[:, start:start+size] after
    ``start`` tokens): no more operations than a right call of the same instance and chunk after fewer tokens (the
    first call, with nothing cached, apart), seen in this submission's checks, but for what a branch on the cache
    may add (LAYOUT_OPS and BRANCH_OPS; an honest class's count may go down as well: a loop over the groups ran 81
    operations after one token and 75 after two), nor one an earlier token or more. A
    class that projects the inputs it kept again one token at a time makes more the more it kept (red team round
    23b: on calls told apart by their dtype, where no product is larger than one token's)."""
    if pair.name not in (MHA, GQA, SWA):
        return
    seen = grade.counts_seen.setdefault((pair.name, "cached", pair.what, x.shape[0], x.shape[-1], size, start == 0), [])
    earlier = min(seen, default=None)  # the call after the fewest tokens
    seen.append((start, ops))
    if earlier is not None and start > earlier[0] and ops - earlier[1] > LAYOUT_OPS + BRANCH_OPS and \
            ops - earlier[1] >= start - earlier[0]:  # more, and by one an earlier token or more
        grade.rules_broken.append((KEYS_ONCE, f"{pair.what} forward(<tokens {start} to {start + size - 1}>, "
                                              f"use_cache=True) made {ops} torch operations after {start} earlier "
                                              f"tokens and {earlier[1]} after {earlier[0]}: each call works on the "
                                              "earlier tokens again; a KV cache keeps the keys and values "
                                              "themselves, each computed once, and attends over them at once"))


def decoded(grade, pair, x, chunks, also=lambda start, size: ()):
    """Feed ``x`` to a new instance (or one just reset) in chunks of the given sizes, each with use_cache=True."""
    start = 0
    for size in chunks:
        fed(grade, pair, x, start, size, also(start, size))
        start += size


def cache_elements(pair) -> int:
    """The elements of the student's cache_k and cache_v, counted from the tensors received."""
    torch = _torch()
    kept = pair.attributes("cache_k", "cache_v")
    return sum(t.numel() for t in kept.values() if isinstance(t, torch.Tensor))


def make(grade, name, d_in, d_out, heads_, groups, window, context, dtype=None):
    """The reference's and the student's instance in evaluation mode, as a decoder generates."""
    if name == MHA:
        return grade.module(MHA, d_in, d_out, context, 0.0, heads_, dtype=dtype, training=False)
    if name == GQA:
        return grade.module(GQA, d_in, d_out, 0.0, heads_, groups, dtype=dtype, training=False)
    return grade.module(SWA, d_in, d_out, 0.0, heads_, sliding_window_size=window, dtype=dtype, training=False)


def uncached_right(grade, pair, tokens) -> bool:
    """Whether the student's class, a new instance with the weights both instances hold, gives the lesson's
    output for ``tokens`` in one uncached call (a diagnosis's question: no use of the reference)."""
    torch = _torch()
    try:
        with torch.no_grad():
            out = students_alone(grade, pair, tokens)
    except StudentFault:
        return False
    with torch.no_grad():
        expected = attention_of(Model(pair), tokens, tokens.shape[1], q_start=0, window=design(pair)[2])
    return isinstance(out, torch.Tensor) and out.shape == expected.shape and \
        torch.allclose(out.detach().cpu().double(), expected.double(), rtol=1e-3, atol=1e-4)


def students_alone(grade, pair, x, args=None):
    """The output of the student's class, a new instance in evaluation mode with the weights both instances
    hold (built with ``args``, by default the pair's), called on ``x``; raises StudentFault. The student's
    instance alone: no use of the reference, which a replayed run does not have."""
    state = grade.student.request({"op": "new", "name": pair.name, "args": pair.args if args is None else args,
                                   "kwargs": pair.kwargs, "dtype": pair.dtype, "training": False,
                                   "params": pair.weights})
    return grade.call(HandleRef(state["handle"]), x, label=pair.name).out


def runs_built_as_long(grade, pair, x):
    """The student's class built for a context of exactly x's tokens, run on ``x`` (students_alone): raises
    StudentFault if that fails too."""
    students_alone(grade, pair, x, (*pair.args[:2], x.shape[1], *pair.args[3:]))


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
        raise mistaken.not_truncated(fault, x.shape[1], pair.args[2],
                                     lambda: runs_built_as_long(grade, pair, x)) from None


# --- the checks of the cached classes -----------------------------------------------------------------
def expect_held_memory(grade, pair, batch, chunk, chunks, d_in):
    """A cached sequence wide enough to weigh (float64; what the process freed is given back to the kernel
    before each reading, grader/inside/heap.py): over the chunks after the first two, the
    memory the student's processes hold, as the kernel counts it (grade.held_bytes), grows by the keys
    and values of the key/value groups only (GQA), and not with the sequence at all for SWA, whose
    cache stays within its window. Never read from cache_k or cache_v, which a property could show
    trimmed while the whole sequence is kept; the last chunk's output must be right too. However it
    ends, the instance is let go of: a cache that keeps too much costs this check, never the next class's
    reading of what the module's worker holds (each mistake costs once)."""
    try:
        _expect_held_memory(grade, pair, batch, chunk, chunks, d_in)
    except BaseException:
        try:
            pair.release()
        except StudentFault:  # the worker is gone: nothing of it is held
            pass
        raise


def _expect_held_memory(grade, pair, batch, chunk, chunks, d_in):
    torch = _torch()
    x = grade.randn(batch, chunk * chunks, d_in, dtype=torch.float64)
    pieces = [x[:, start:start + chunk].contiguous() for start in range(0, x.shape[1], chunk)]
    model = Model(pair)
    last = chunk * (chunks - 1)
    with torch.no_grad():  # the last chunk's output, right only if the cache gave it the right keys and values
        expected = grade.worked_out_ahead(lambda: attention_of(model, x, chunk, q_start=last, window=model.window),
                                          model.weights, model.num_heads, model.groups, model.window, x, chunk, last)
    for number, piece in enumerate(pieces):
        if number == 2:  # after two calls of this size: what a call leaves behind is in both readings
            before = grade.held_bytes()
        with torch.no_grad():  # as a decoder generates (a raise judged given the student's own helpers)
            reply = pair.call(piece, use_cache=True, unwatched=True,
                              root_cause=helper_faults(grade, pair, x, chunk * number, chunk))
    grown = grade.held_bytes() - before
    try:
        grade.expect_right(reply, expected().to(grade.device),
                           f"{pair.what} forward(<the last of {chunks} chunks: [{batch}, {chunk}, {d_in}] float64>, "
                           "use_cache=True)", helper_faults(grade, pair, x, last, chunk))
    except CheckFailed as failure:  # a window cache too small for a chunk of more tokens than the window
        if failure.misconceptions or not model.window:
            raise
        raise diagnose.name_mistake(grade, failure, reply.out, window_cache_too_small(model, x, last, chunk)) from None
    every_head = batch * chunk * (chunks - 2) * 2 * model.d_out * 8  # every head's keys and values of those tokens
    share = model.groups / model.num_heads
    # GQA's groups hold `share` of it (honest: share + 0.0 to 0.13), SWA none (honest: 0 on every seed measured,
    # at most 0.0025 of it over 23 correct classes on three seeds; a float16 copy of every token grows by 0.13 to
    # 0.19 of it, an int8 copy of every token's input by 0.065: red team round 30's M1, under the 0.1 this was)
    if grown > every_head * (0.35 + share if pair.name == GQA else SWA_GROWTH):
        kept = (f"the keys and values of its {model.groups} key/value group(s), not of the {model.num_heads} query "
                "heads they serve (repeat them only when attending)") if pair.name == GQA else \
            f"only the last sliding_window_size = {model.window} positions" + (
                " (a slice such as keys[:, :, -(window - 1):] keeps them all when the window is 1: -0 is 0)"
                if model.window == 1 else "")
        raise CheckFailed(f"{pair.name}: over {chunk * (chunks - 2)} more cached tokens of a batch of {batch} your "
                          f"process grew by {grown / 2**20:.1f} MiB (every head's keys and values of those tokens "
                          f"take {every_head / 2**20:.0f} MiB): the cache should keep {kept}")
    if model.window:
        expect_window_cache_trimmed(pair, model, batch, chunk)
    expect_held_in_all(grade, pair, model, batch, chunk, chunk * chunks)
    expect_given_back(grade, pair, model, batch, chunk, chunk * chunks, every_head)
    if model.window:
        expect_window_attended(grade, model.window)


def expect_window_attended(grade, window, batch=2, chunk=4, chunks=8, d=4):
    """SWA: a cached call of T tokens attends over at most sliding_window_size + T keys (the window the
    cache keeps and the call's own; course-spec: up to window + T - 1 of them are seen), however long
    the sequence before it. Read from the widest reduction the worker's tracer saw in the last of
    ``chunks`` cached calls (a softmax, a maximum, a sum, a product with the values over the keys), on
    a batch, features and heads narrower than that, so that only the keys can be wider: a history kept
    whole where no memory reading shows it (a buffer allocated at import, written in place) and
    attended under a mask is seen by what it attends (issue 44). The last output must be right too."""
    grade.reads_rule(WINDOW)
    pair = make(grade, SWA, d, d, 2, None, window, None)
    last = chunk * (chunks - 1)
    what = f"{pair.what} forward(<the last of {chunks} chunks: {shape_str((batch, chunk, d))}>, use_cache=True)"
    reply = measured_last_call(grade, pair, grade.randn(batch, chunk * chunks, d), (chunk,) * chunks, what)
    allowed = window + chunk
    if (reply.widest or 0) > max(allowed, batch, d):
        raise CheckFailed(f"{what}: an operation ({reply.widest_op}, as torch runs it) reduced {reply.widest} "
                          f"entries at once, after {last} earlier tokens: the call attends over more keys than the "
                          f"sliding_window_size = {window} positions kept before it and its own {chunk} tokens "
                          f"(at most {allowed}). Keep only the last sliding_window_size positions' keys and values "
                          "and attend over those and the new tokens' own, rather than over the whole history "
                          "under a mask")


SWA_GROWTH = 0.02  # of every head's keys and values: what a window cache may grow by, or give back past its window
# (honest: at most 0.0025 grown and 0.0022 given back past the right cache, 23 correct classes on three seeds; a
# history kept at fewer than 2 bits a feature stays under it, the residual of red team round 30's M1)
OWN_ROOM = 6 << 20  # what an honest worker holds beyond its cache and weights (its module, torch's first calls:
# 0.6 to 2 MiB measured, lesson notebooks included), with room to spare


def measured_last_call(grade, pair, x, sizes, what):
    """``x`` fed to ``pair`` in cached calls of ``sizes`` tokens, as a decoder generates; the last one
    measured (grade.call(measure=True)) and its output checked right, said as ``what``: its reply."""
    torch = _torch()
    start = 0
    with torch.no_grad():
        for size in sizes[:-1]:
            pair.call(x[:, start:start + size], use_cache=True, root_cause=helper_faults(grade, pair, x, start, size))
            start += size
        reply = pair.call(x[:, start:], use_cache=True, measure=True,
                          root_cause=helper_faults(grade, pair, x, start, sizes[-1]))
        expected = attention_of(Model(pair), x, sizes[-1], q_start=start, window=design(pair)[2]).to(grade.device)
    grade.expect_right(reply, expected, what, helper_faults(grade, pair, x, start, sizes[-1]))
    return reply


def weight_bytes(pair) -> int:
    """What the weights both instances hold take in float64."""
    return sum(w.numel() for w in pair.weights.values()) * 8


def right_cache_bytes(pair, model, batch, chunk, tokens) -> int:
    """The float64 keys and values the right cache holds after ``tokens`` tokens in chunks of ``chunk`` (GQA:
    its groups'; SWA: the window, as a slice of the last call's window + chunk keys)."""
    kept_tokens = min(tokens, model.window + chunk) if model.window else tokens
    heads_kept = model.groups if pair.name == GQA else model.num_heads
    return batch * kept_tokens * 2 * model.head_dim * heads_kept * 8


def expect_held_in_all(grade, pair, model, batch, chunk, tokens):
    """What the worker holds of its own after ``tokens`` cached tokens (grade.own_bytes: the kernel's
    account of it, however long it has held it, not growth): at most the right cache, the weights and
    OWN_ROOM. A cache kept in a pool allocated and written at import grew in no reading and is given back by
    no instance (red team round 9: every head's keys for GQA, every token's for SWA); this reading holds it."""
    held = grade.own_bytes()
    if held is None:  # no account of the worker to read here: the readings of growth stand alone
        return
    right, weights = right_cache_bytes(pair, model, batch, chunk, tokens), weight_bytes(pair)
    if held > right + weights + OWN_ROOM:
        kept = (f"the keys and values of its {model.groups} key/value group(s)" if pair.name == GQA else
                f"the last sliding_window_size = {model.window} positions")
        raise CheckFailed(f"{pair.name}: after {tokens} cached tokens of a batch of {batch} your process holds "
                          f"{held / 2**20:.1f} MiB of its own (the right cache takes {right / 2**20:.1f} MiB, the "
                          f"weights {weights / 2**20:.1f} MiB): the cache should keep {kept}, and nothing else "
                          "should hold them (a tensor your module makes at import counts too)")


def expect_given_back(grade, pair, model, batch, chunk, tokens, every_head):
    """What the instance gives back when the student's process lets go of it (grade.held_bytes before and
    after: the kernel's account, not growth): at most the right cache after ``tokens`` tokens in chunks of
    ``chunk`` (GQA: its groups' keys and values; SWA: the window, as a slice of the last call's window +
    chunk keys), its weights, and the same room as the growth's. A cache that hides its growth behind a
    reserve the instance shrinks as it grows gives back both (issue 44)."""
    held = grade.held_bytes()
    pair.release()
    given_back = held - grade.held_bytes()
    right, weights = right_cache_bytes(pair, model, batch, chunk, tokens), weight_bytes(pair)
    if given_back > right + weights + every_head * (0.1 if pair.name == GQA else SWA_GROWTH):
        raise CheckFailed(f"{pair.name}: letting go of your instance after {tokens} cached tokens of a batch of "
                          f"{batch} gave back {given_back / 2**20:.1f} MiB; its cache should hold at most "
                          f"{right / 2**20:.1f} MiB (the keys and values of "
                          + (f"its {model.groups} key/value group(s)" if pair.name == GQA else
                             f"the last sliding_window_size = {model.window} positions") + ")")


def expect_window_cache_trimmed(pair, model, batch, chunk):
    """SWA after a cached call of ``chunk`` tokens, more than the window: within the call up to
    sliding_window_size + chunk - 1 keys are attended, but the cache it leaves (cache_k and cache_v,
    counted by their elements in any layout, course-spec: a view's slice counts as what it shows) holds
    the last sliding_window_size positions only. Outputs cannot show it (the mask hides the keys kept
    past the window), the kernel cannot either where the trimmed cache is a slice of the attended keys."""
    held, allowed = cache_elements(pair), batch * model.window * model.d_out * 2
    if held > allowed:
        positions = held / (batch * model.d_out * 2)
        raise CheckFailed(f"{pair.name}: after a cached call of T = {chunk} tokens your cache_k and cache_v hold "
                          f"{positions:g} positions (sliding_window_size = {model.window}): the keys and values the "
                          f"call attended (up to sliding_window_size + T - 1 = {model.window + chunk - 1}) are kept. "
                          f"After the call the cache must keep only the last sliding_window_size positions "
                          f"(e.g. keys[:, :, -window:]), so that it never grows past the window")


def expect_cache_used(grade, pair, x, first, later):
    """Keys and values are computed once, when their token arrives: after the first ``first`` tokens of
    ``x`` are fed in one call, the key and value weights change; each cached call of ``later`` sizes
    still attends over the earlier tokens' keys and values as they were computed (the reference's cache
    keeps them). Read from the outputs alone."""
    decoded(grade, pair, x[:, :first], (first,))
    old = Model(pair)
    pair.new_weights("W_key", "W_value")
    start = first
    for size in later:
        def again(prefix=x[:, :start + size], size=size, start=start):
            return attention_of(Model(pair), prefix, size, q_start=start, window=design(pair)[2])

        fed(grade, pair, x, start, size, [Mistake(
            "cache-not-used", "the keys and values of earlier tokens are computed again at every call (from "
            "the inputs you keep); a KV cache keeps the keys and values themselves, each computed once", again)],
            recomputed=False, stale=(old, first))
        start += size
    if pair.name != SWA:  # a window's keys are few, whatever is done with them
        expect_inputs_not_projected_again(grade, pair.name)


def expect_inputs_not_projected_again(grade, name, d_in=256):
    """Keys and values are computed once, read from what the call does too: a cached call of one token,
    with input features (``d_in``) far wider than the model's (4), after 31 and after 63 earlier tokens,
    makes as many operations either way, and neither it nor any of its operators' operands comes near the
    size of the earlier tokens' inputs (``tokens * d_in`` entries; the right call's largest is a mask of
    ``tokens``² at most, the book's buffer of context_length = ``tokens``), as the worker's tracer sees
    them. A cache that keeps the inputs and projects them all again at every call, with the weights each
    token came with (so that its outputs under new weights are right), does one or the other (red team
    rounds 9 and 10: 100/100, the inputs kept as one tensor, then kept per call). The rule is read on every
    cached call too (:func:`keys_once_rules`)."""
    grade.reads_rule(KEYS_ONCE)

    def one_token_after(tokens):
        pair = make(grade, name, d_in, 4, 2, 1, None, tokens)
        what = f"{pair.what} forward(<token {tokens} of a sequence: [1, 1, {d_in}]>, use_cache=True)"
        return measured_last_call(grade, pair, grade.randn(1, tokens, d_in), (tokens - 1, 1), what), what

    def chunk_after(tokens, size, batch):  # a chunk of several tokens of a batch too, as cached sequences feed
        # them (red team rounds 22 and 22b: code that works on the inputs it kept where these calls did not look)
        pair = make(grade, name, d_in, 4, 2, 1, None, tokens)
        what = (f"{pair.what} forward(<tokens {tokens - size + 1} to {tokens} of a sequence: {shape_str((batch, size, d_in))}>, "
                "use_cache=True)")
        return measured_last_call(grade, pair, grade.randn(batch, tokens, d_in), (tokens - size, size), what), what

    short, tokens = 32, 64
    short_reply, _ = one_token_after(short)
    reply, what = one_token_after(tokens)
    for batch, (measured, said) in ((1, (reply, what)), (2, chunk_after(tokens, 3, 2))):
        span = batch * tokens * d_in
        largest = max(measured.max_numel or 0, measured.max_operand or 0)
        if largest * 2 > span:
            raise CheckFailed(f"{said}: it worked on a tensor of {largest} entries (the inputs of all {tokens} tokens "
                              f"take {span}): the call works on the inputs of the earlier tokens, so their keys and "
                              "values are computed again; a KV cache keeps the keys and values themselves, each "
                              "computed once, when its token arrives", ("cache-not-used",))
    if (reply.ops or 0) > (short_reply.ops or 0):
        raise CheckFailed(f"{what}: it made {reply.ops} torch operations after {tokens - 1} tokens but "
                          f"{short_reply.ops} after {short - 1}: each call works on the earlier tokens one by one "
                          "again; a KV cache keeps the keys and values themselves, each computed once, when its "
                          "token arrives, and attends over them at once", ("cache-not-used",))


def expect_reset_starts_anew(grade, pair, first, uncached, then, chunks):
    """use_cache=False after a cached call attends over its own tokens only (the cache may be kept or
    cleared); reset_cache() then empties cache_k and cache_v, and the next cached sequence ``then``
    (another batch size) starts at position 0."""
    torch = _torch()
    decoded(grade, pair, first, (first.shape[1],))
    with torch.no_grad():
        uncached_same(grade, pair, uncached, use_cache=False)
    pair.method("reset_cache")
    if cache_elements(pair):
        raise CheckFailed(f"{pair.name}.reset_cache() leaves the keys and values of the last sequence in cache_k or "
                          f"cache_v: the next sequence would attend over them", ("cache-not-reset",))
    window = design(pair)[2]

    def position_kept(start, size):
        prefix = then[:, :start + size]
        return [Mistake("cache-not-reset", f"reset_cache() empties the cache but keeps the position: the new "
                        f"sequence's queries sit after the {kept} tokens before it",
                        lambda kept=kept: attention_of(Model(pair), prefix, size, q_start=kept + start, k_start=0,
                                                       window=window))
                for kept in (first.shape[1], first.shape[1] + uncached.shape[1])]  # the uncached call's counted too

    decoded(grade, pair, then, chunks, also=position_kept)


def expect_dropout(grade, pair, tokens):
    """Dropout 0.5 by its effect (lesson/dropout.py): one-hot tokens, heads of 2 * tokens features; any
    draws, in any order (one call, one per head or group, SDPA's dropout_p), pass. An evaluation-mode
    output that is the right one with weights dropped is dropout-in-eval (judged against the lesson's
    attention on the weights both instances hold)."""
    expect_dropout_on_weights(grade, pair, tokens=tokens, p=0.5, eval_same=lambda x: uncached_same(grade, pair, x),
                              right=lambda x: attention_of(Model(pair), x, x.shape[1], q_start=0, window=design(pair)[2]))


def expect_float64_cache(grade, pair, x, first, later):
    """The cache keeps the keys' and values' dtype: after a first float64 chunk of ``first`` tokens cache_k
    and cache_v hold float64 tensors, and the chunks of ``later`` sizes get float64 outputs of float64
    precision."""
    torch = _torch()
    fed(grade, pair, x, 0, first)
    kept = pair.attributes("cache_k", "cache_v")
    lowered = sorted({str(t.dtype).replace("torch.", "") for t in kept.values()
                      if isinstance(t, torch.Tensor) and t.dtype != torch.float64})
    if lowered:
        raise CheckFailed(f"{pair.name}: a float64 sequence is cached as {', '.join(lowered)}: the cache keeps the "
                          "dtype of the keys and values (create it from them, e.g. torch.cat or new tensors with "
                          "dtype=keys.dtype)", ("wrong-dtype",))
    start = first
    for size in later:
        fed(grade, pair, x, start, size)
        start += size


def expect_large_scores(grade, pair, x):
    """Scores in the thousands, past where a float64 exp overflows (about 709): the output is still
    finite and right, as a softmax that subtracts each row's maximum gives."""
    torch = _torch()
    with torch.no_grad():
        mistaken.unstable_unless_named(lambda: uncached_same(grade, pair, x))


def expect_layers_in_dtype(grade, pair, x):
    """A class given dtype=torch.float64 builds its layers in float64 (nn.Linear(..., dtype=dtype)); a
    float64 batch then gets a float64 output of float64 precision."""
    torch = _torch()
    lowered = sorted({str(p.dtype).replace("torch.", "") for p in pair.state["params"].values()
                      if isinstance(p, torch.Tensor) and p.dtype != torch.float64})
    if lowered:
        raise CheckFailed(f"{pair.what}: its parameters are {', '.join(lowered)}, not float64: pass dtype to each "
                          "layer, nn.Linear(..., dtype=dtype)", ("wrong-dtype",))
    uncached_same(grade, pair, x)


def groups_of_another_size(run, heads_, groups):
    """``run()`` for a GroupedQueryAttention of ``heads_`` heads in ``groups`` groups whose group size
    (heads_ // groups) is not its number of groups: a raise whose error sets the heads against
    groups * groups key/value heads is each group repeated num_kv_groups times, not num_heads //
    num_kv_groups (repeat_kv's group_size)."""
    try:
        return run()
    except (StudentFault, CheckFailed) as failure:
        last = diagnose.last_line(failure.message)
        found = shape_mismatch(last, "broadcast")
        if found is None or set(found.sizes) != {heads_, groups * groups} or \
                heads_ == groups * groups:
            raise
        raise CheckFailed(f"{failure}\nyour keys and values have num_kv_groups x num_kv_groups = {groups * groups} "
                          f"heads for the {heads_} query heads ({heads_} heads in {groups} groups): each group serves "
                          f"num_heads // num_kv_groups = {heads_ // groups} query heads, so repeat each "
                          f"{heads_ // groups} times, repeat_kv(k, num_heads // num_kv_groups), not num_kv_groups "
                          "times") from None


def decoded_in_groups_of_another_size(grade, pair, x, chunks, heads_, groups):
    """``decoded`` for a GroupedQueryAttention whose group size is not its number of groups (see
    :func:`groups_of_another_size`)."""
    groups_of_another_size(lambda: decoded(grade, pair, x, chunks), heads_, groups)


def decoded_without_a_window(grade, pair, x, chunks):
    """``decoded`` for a MultiHeadAttentionWithSWA made with sliding_window_size=None (the contract: every
    earlier key, the cache kept whole): a TypeError about None is the window used as a number."""
    try:
        decoded(grade, pair, x, chunks)
    except (StudentFault, CheckFailed) as failure:
        last = diagnose.last_line(failure.message)
        if "TypeError" not in last or "NoneType" not in last:
            raise
        raise CheckFailed(f"{failure}\nsliding_window_size=None means no window: each query sees every earlier key, "
                          "and with use_cache=True the cache keeps every position; your cached call used None as a "
                          "number (the window's length): when it is None, keep the whole cache and pass None on to "
                          "sliding_window_mask") from None
