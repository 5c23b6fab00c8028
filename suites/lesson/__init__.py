"""The lesson's own data, shared by the hidden and the public suites (and the lesson notebooks' numbers).

"Your journey starts with one step": six tokens embedded in 3-d, as chapter 3 of "Build a Large
Language Model (From Scratch)" embeds them; row 2 ("journey") attends with weights
``[0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581]`` and gets the context ``[0.4419, 0.6515, 0.5683]``.
"Life is short, eat dessert first": six words embedded to 16-d by a seeded embedding table.
"""
from __future__ import annotations

from grader.authoring import CheckFailed, StudentFault, operations_allowed, stand_ins

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


def journey_scores(dtype=None):
    """The journey's attention scores scaled by 1/sqrt(d), [6, 6]."""
    inputs = journey(dtype)  # [6, 3]
    return inputs @ inputs.T * inputs.shape[-1] ** -0.5  # [6, 6]


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
stand_ins("softmax", "attention_scores", "attention_weights", "scaled_dot_product_attention", "causal_mask",
          "padding_mask", "split_heads", "merge_heads", "split_qkv", "repeat_kv", "sliding_window_mask",
          "SelfAttention_v1", "SelfAttention_v2")


def shaped_like(x, shape, generator):
    """A float64 normal tensor of ``shape`` (``x``'s but for lengths) in ``x``'s layout (its dimensions' order in
    memory: a transposed ``x`` gives a transposed tensor) and dtype, drawn from ``generator``."""
    import torch

    order = sorted(range(x.dim()), key=lambda d: -x.stride(d))
    made = torch.randn([shape[d] for d in order], generator=generator, dtype=torch.float64)
    return made.permute([order.index(d) for d in range(x.dim())]).to(x.dtype)


def vectorised_on(grade, name, what, tokens, ops, count_reference, call_with, kind, limit=None, lengthen=None,
                  slack=LAYOUT_OPS):
    """The vectorised rule read on a comparing call (``what``, of ``tokens`` tokens) that made ``ops`` torch
    operations and was right: its count and that of a call of the same ``kind`` (the function or instance, and
    the call's sizes but the tokens) on another number of tokens, also right, are as many (within ``slack``),
    and within what the reference's count allows (``count_reference()`` counts it; Grade.expect_few_operations)
    where either is more than any vectorised call may make (where the other call's answer is wrong, a mistake its
    own cases charge, the count is held to the bound alone). The other call is one seen before in this
    submission's checks (Grade.counts_seen), or made now (``call_with(other)``, giving its count: twice the tokens
    and at least 80, within ``limit``; 2 where that is not longer; ``lengthen(tokens)`` where given). Code that
    loops over the tokens where the rule is not read breaks it here (red team rounds 22, 22b and 23: a loop over
    the queries wherever the vectorised code, right on the vectorised check's inputs, was wrong; a loop padded to
    as many rounds at every length); a broken rule fails the checks that read it (grader.grading.rules_read).
    Only where the reference runs here (Grade.live_reference)."""
    if not grade.live_reference or ops is None:
        return
    seen = grade.counts_seen.setdefault((name, kind), [])
    earlier = next(((t, count) for t, count in seen if abs(t - tokens) >= 2), None)
    how = None
    if earlier is None:
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
        try:
            earlier = (other, call_with(other))
        except (CheckFailed, StudentFault):  # a wrong answer there is a mistake its own cases charge, not the rule's:
            earlier = None  # the count is held to the bound alone (the student's side, which makes no such call,
        else:  # then grades a wrong file as the instructor's does; a slip run there is round 23's residual, a01pad)
            seen.append(earlier)
    seen.append((tokens, ops))
    counts = [ops] + ([earlier[1]] if earlier is not None and earlier[1] is not None else [])
    try:
        if max(counts) > operations_allowed(0):  # more than the least any vectorised call may make
            count_reference()
            grade.expect_few_operations(name, *counts)
    except CheckFailed as failure:
        how = f"{what}: {failure.message}"
    else:
        if len(counts) == 2 and abs(counts[1] - ops) > slack:
            how = (f"{what} made {ops} torch operations, and the same call {counts[1]} on {earlier[0]} tokens of the "
                   "same batch: its code loops over tokens on calls like this one")
    if how:
        grade.rules_broken.append((VECTORISED, how))
