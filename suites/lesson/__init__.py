"""The lesson's own data, shared by the hidden and the public suites (and the lesson notebooks' numbers).

"Your journey starts with one step": six tokens embedded in 3-d, as chapter 3 of "Build a Large
Language Model (From Scratch)" embeds them; row 2 ("journey") attends with weights
``[0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581]`` and gets the context ``[0.4419, 0.6515, 0.5683]``.
"Life is short, eat dessert first": six words embedded to 16-d by a seeded embedding table.
"""
from __future__ import annotations

from grader.authoring import (CheckFailed, RightGivenHelper, StudentFault, model, operations_allowed, runs, stand_ins,
                              uses)

VECTORISED = "vectorised"  # the rule the vectorised checks read (Grade.reads_rule), read on comparing calls too
# operations a vectorised computation may make more or fewer on one input than on another of the same batch: a
# copy of a non-contiguous input before a view (measured: one); a loop over the tokens makes a few a token (a
# product, a softmax, a slice) for each token more or fewer
LAYOUT_OPS = 4

JOURNEY = ((0.43, 0.15, 0.89), (0.55, 0.87, 0.66), (0.57, 0.85, 0.64),
           (0.22, 0.58, 0.33), (0.77, 0.25, 0.10), (0.05, 0.80, 0.55))
JOURNEY_WORDS = ("Your", "journey", "starts", "with", "one", "step")
DESSERT_WORDS = ("Life", "is", "short", "eat", "dessert", "first")


def journey(dtype=None):
    """The six journey embeddings, [6, 3] (float32 unless ``dtype``)."""
    import torch

    return torch.tensor(JOURNEY, dtype=dtype or torch.float32)


def journey_batch(dtype=None):
    """Two copies of the journey, [2, 6, 3], the lesson's batch."""
    import torch

    inputs = journey(dtype)  # [6, 3]
    return torch.stack((inputs, inputs))  # [2, 6, 3]


@model
def journey_scores(dtype=None):
    """The journey's attention scores scaled by 1/sqrt(d), [6, 6]."""
    inputs = journey(dtype)  # [6, 3]
    return inputs @ inputs.T * inputs.shape[-1] ** -0.5  # [6, 6]


@model
def projected(x, *weights):
    """``x`` projected by each of ``weights`` (x @ W): the lesson's queries, keys and values from its data."""
    return tuple(x @ w for w in weights)


def near_one_another(grade, batch, tokens, width, *, norm, spread, dtype=None):
    """[batch, tokens, width] tokens close to one another, drawn from the check's generator: one vector of
    length ``norm`` per sequence, plus noise of size ``spread``. Their dot products are about norm² (past
    where exp() overflows: 88 in float32, 709 in float64, for a norm of 30 or more) yet differ within a
    row by about norm·spread, so a softmax of them is spread, never one-hot, on every seed: a wrong scale
    shows on every seed, not only on those whose random tokens happen to tie."""
    centre = grade.randn(batch, 1, width, dtype=dtype)  # [B, 1, d]
    centre = centre / centre.norm(dim=-1, keepdim=True) * norm
    return centre + grade.randn(batch, tokens, width, dtype=dtype, scale=spread)  # [B, T, d]


def dessert():
    """"Life is short, eat dessert first", each word embedded to 16-d, [6, 16], and the generator
    (seeded 123, as nn.Embedding(6, 16) would start from it) that goes on to draw the lesson's
    projection matrices."""
    import torch

    index = {word: i for i, word in enumerate(sorted(DESSERT_WORDS))}
    generator = torch.Generator().manual_seed(123)
    table = torch.randn(len(index), 16, generator=generator)  # [6, 16]
    return table[torch.tensor([index[word] for word in DESSERT_WORDS])], generator


def every_call(grade, check_one, calls):
    """``check_one(grade, *args)`` on every call in ``calls``, each graded: a helper graded as the other
    exercises call it (a case of theirs is kept as right given the helper only on a call its own exercise
    grades). The first wrong call is reported, named with what every wrong one shares."""
    from grader.authoring import CheckFailed, StudentFault

    failures = []
    for args in calls:
        try:
            check_one(grade, *args)
        except CheckFailed as failure:
            failures.append(failure)
        except StudentFault as fault:
            if fault.kind != "error":  # timed out, crashed: nothing more can be asked of this worker
                raise
            failures.append(CheckFailed(fault.message))
    if failures:
        first = failures[0]
        shared = set(first.misconceptions).intersection(*(f.misconceptions for f in failures[1:]))
        if shared != set(first.misconceptions):
            first.misconceptions, first.message = tuple(m for m in first.misconceptions if m in shared), first.unexplained
        first.ruled_out = tuple(sorted(set().union(*(f.ruled_out for f in failures))))
        raise first


# the helper exercises a case kept as "right, given your helper" is verified with (grader.grading.stand_ins):
# names only; each call's right result comes from the grader's side (the reference, or its recording)
stand_ins("attention_scores_for_query", "softmax_naive", "softmax", "attention_scores", "attention_weights",
          "scaled_dot_product_attention", "causal_mask", "apply_causal_mask", "renormalize_causal_weights",
          "padding_mask", "causal_padding_mask", "split_heads", "merge_heads", "split_qkv", "compute_rope_params",
          "apply_rope", "repeat_kv", "sliding_window_mask", "SelfAttention_v1", "SelfAttention_v2", "CausalAttention")
# the student's own helpers an exercise calls by name: each call counts their share apart (Reply.within)
uses("simple_self_attention", "attention_scores", "softmax")
# the student's other exercises a check runs: a helper they call may be put right for its case (grader.grading.chains)
runs("copy_v2_weights_into_v1", "SelfAttention_v1", "SelfAttention_v2")


def layout_of(x) -> tuple:
    """``x``'s dimensions in their order in memory, the outermost first (a transposed ``x``: its dimensions swapped)."""
    return tuple(sorted(range(x.dim()), key=lambda d: -x.stride(d)))


@model
def in_layout_of(x, made):
    """``made`` (``x``'s dimensions, other sizes) laid out in memory as ``x`` is (a transposed ``x``: transposed)."""
    order = layout_of(x)
    return made.permute(order).contiguous().permute([order.index(d) for d in range(x.dim())])


@model
def strided(x, dims, *then):
    """``x.transpose(*dims)``, then each pair of ``then`` swapped in turn: the view itself, not contiguous (a check's
    input made strided on purpose), laid out so in a replay too (grader.grading.models keeps a result's layout)."""
    for pair in (dims, *then):
        x = x.transpose(*pair)
    return x


# how far each entry of a reading call moves from the checked call's (relative): the tokens repeated are never the
# same twice, so a loop over the distinct tokens of a reading call makes more rounds than on the checked call
JITTER = 2.0 ** -7


def carried(x, index, generator, dim=-2):
    """``x``'s entries at ``index`` along ``dim``, each moved by a small random share of itself (JITTER: a
    value's sign, scale, a zero and an infinity stay as they are), in ``x``'s dtype and layout: a reading call of
    the checked call's own values (red team round 23b: a loop padded under the bound behind a tell on the values,
    which a reading call drawn afresh never carried)."""
    import torch

    made = x.detach().index_select(dim, index)
    moved = 1.0 + JITTER * torch.randn(made.shape, generator=generator, dtype=torch.float64).clamp(-4.0, 4.0)
    return in_layout_of(x, made * moved.to(made.dtype))


def lengthened(x, length, generator, dim=-2):
    """``x`` with ``length`` entries along ``dim`` (:func:`carried`), each ``x``'s own along it, in turns of a
    shuffled order: the checked call's values, their scale, its -inf entries and its layout on another number of
    tokens."""
    import torch

    tokens = x.shape[dim]
    turns = [torch.randperm(tokens, generator=generator) for _ in range(-(-length // tokens))]
    return carried(x, torch.cat(turns)[:length], generator, dim)


def doubled_blocks(tokens, block_size, generator):
    """The index that makes each block of ``tokens`` entries (blocks of ``block_size``, the last shorter) a block
    twice as long of its own entries, each twice, shuffled within the block: a block all -inf stays all -inf."""
    import torch

    blocks = []
    for start in range(0, tokens, block_size):
        size = min(block_size, tokens - start)
        blocks += [start + torch.randperm(size, generator=generator), start + torch.randperm(size, generator=generator)]
    return torch.cat(blocks)


def kept_with_right_helper(call_with, tokens, other, broken) -> bool:
    """Whether, with a right helper in place of the student's (Grade.read_given_right), a call of ``tokens``
    tokens and the reading call of ``other`` (``call_with``, each of the checked call's own values) are both right
    and keep the rule (``broken(counts)`` is None). Code that computes otherwise when its helper is the grader's gains
    nothing by it: the checks that read the rule are then kept given that helper, and their points move to it
    (grader.grading.rules_read, grader.grading.charges)."""
    counts = [call_with(tokens), call_with(other)]
    return None not in counts and broken(counts) is None


def _first_line(failure) -> str:
    text = str(getattr(failure, "message", "") or failure).strip()
    return text.splitlines()[0][:300] if text else type(failure).__name__


def vectorised_on(grade, name, what, tokens, ops, count_reference, call_with, limit=None, lengthen=None,
                  slack=LAYOUT_OPS, helpers=None):
    """The vectorised rule read on a comparing call (``what``, of ``tokens`` tokens) that made ``ops`` torch
    operations and was right: its count and that of the same call on another number of tokens, also right, are
    as many (within ``slack``), and within what the reference's count allows (``count_reference()`` counts it;
    Grade.expect_few_operations) where either is more than any vectorised call may make. The other call, the
    reading call, is made for this call (``call_with(other)``, giving its count: twice the tokens and at least 80,
    within ``limit``; 2 where that is not longer; ``lengthen(tokens)`` where given), of this call's own values
    (:func:`lengthened`): whatever told this call apart, but its length, it carries. Where its answer is wrong,
    the rule is not read on this call (``Grade.rules_unverified``, which fails the checks that read the rule); where
    it is wrong only by a helper of the student's (``call_with`` judges it with the exercise's root cause: a
    RightGivenHelper), the rule is read on that call and on one as long as this one with a right helper in its place
    (:func:`kept_with_right_helper`, once the check has run: Grade.read_given_right), and where it holds there, it
    is recorded as unverified by that helper (``(rule, why, (helper,))``): grader.grading.rules_read keeps the
    checks that read it as right given that helper, whose own
    exercise then pays for them (issue 44's blind parity round: a split_heads wrong on long sequences alone cost
    MultiHeadAttention its rule check too, where the student's side, which makes no such call, charged it once).
    ``helpers(other)``: the names of the student's own functions the call uses, and the operators that ran inside
    them on this call and on the reading call (``Reply.within``, lesson.checks_01.helpers_inside); a rule those
    alone break is theirs (recorded as ``(rule, how, names)``: grader.grading.rules_read charges it here unless
    they lose it in their own exercise). Red team rounds 22 to 24d: a loop over the queries wherever the vectorised code, right on the vectorised check's inputs,
    was wrong; a loop padded to as many rounds at every length; a loop padded under the bound on short calls told
    apart by their values, the vectorised code's slip run on the other call; a loop of the caller's own behind a
    helper that loops everywhere. A broken rule fails the checks that read it. Only where the reference runs here
    (Grade.live_reference)."""
    if not grade.live_reference or ops is None:
        return
    # longer than any loop over the tokens padded within the least bound may cover (red team round 23: a loop
    # padded to 40 rounds, 64 operations at most, on every call shorter than the 32 tokens read)
    longest = max(2 * tokens, operations_allowed(0) + 16)
    other = longest if limit is None else min(longest, limit)
    if other < tokens + 4:  # a sequence as long as it may be: a shorter one
        other = 2
    if lengthen is not None:
        other = lengthen(tokens)
    if abs(other - tokens) < 2:
        return

    def broken(counts):
        try:
            if max(counts) > operations_allowed(0):  # more than the least any vectorised call may make
                count_reference()
                grade.expect_few_operations(name, *counts)
        except CheckFailed as failure:
            return f"{what}: {failure.message}"
        if len(counts) == 2 and abs(counts[1] - counts[0]) > slack:
            return (f"{what} made {counts[0]} torch operations, and the same call {counts[1]} on {other} tokens "
                    "of the same batch: its code loops over tokens on calls like this one")
        return None

    try:
        longer = call_with(other)
    except (CheckFailed, StudentFault, RightGivenHelper) as failure:  # wrong there: the rule was not read on this call
        longer = None
        why = (f"{what}: the same call on {other} tokens (its own values, repeated) was not right, so how it computes "
               f"could not be read: {_first_line(failure)}")
        if isinstance(failure, RightGivenHelper):  # by the student's helper alone: read again with a right one
            grade.read_given_right(failure.helper.split(" (", 1)[0], VECTORISED, why,
                                   lambda: kept_with_right_helper(call_with, tokens, other, broken))
        else:
            grade.rules_unverified.append((VECTORISED, why))
    counts = [ops] + ([longer] if longer is not None else [])
    how = broken(counts)
    if how and helpers is not None and len(counts) == 2:
        # the student's own helpers' operations on the same two calls (red team round 24c): where the rest does
        # not break the rule, it is broken by those helpers, theirs to charge where they lose it themselves
        names, short_ops, long_ops = helpers(other)
        if names and broken([counts[0] - short_ops, counts[1] - long_ops]) is None:
            grade.rules_broken.append((VECTORISED, how, tuple(names)))
            return
    if how:
        grade.rules_broken.append((VECTORISED, how))
