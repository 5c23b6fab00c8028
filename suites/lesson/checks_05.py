"""The checks of 05_efficient_attention, shared by its hidden and its public suite: each suite gives its
own cases, these say what is checked and which mistakes are named (so both sides diagnose alike).

Every wrong computation here is computed from the inputs alone, in plain torch (the lesson's formulas),
never from the reference: a replayed run (a student distribution) names the same mistakes as live
grading. The contract's rows for 05 forbid no operation (grader/inside/forbidden.py): online_softmax must
gather its statistics block by block (no operation reduces more than a block's entries at once; more
blocks, more steps), and flash_attention must stay within a memory bound: it may never build the whole
[Tq, Tk] score matrix.
"""
from __future__ import annotations


from grader.authoring import CheckFailed, Mistake, RaisedFailure, StudentFault, model, shape_mismatch, shape_str
from lesson import LAYOUT_OPS, VECTORISED, carried, doubled_blocks, mistaken, vectorised_on
from lesson.mistaken import ScaleSearch


def non_finite(out):
    """softmax-unstable for an output with inf or NaN (the cases' right answers are finite)."""
    import torch

    if isinstance(out, torch.Tensor) and out.is_floating_point() and not torch.isfinite(out).all():
        return ("softmax-unstable", "your output has inf or NaN: subtract the running maximum before "
                                    "exponentiating (and never compute -inf - -inf)")
    return None


# the rules the tracer reads (grader.grading.rules_read): the checks that read them say so (Grade.reads_rule),
# and every comparing call reads them too, so that no function keeps a rule only where it is read
BLOCK_RULE, SCORE_MATRIX, KEY_TILES = "block rule", "score matrix", "key tiles"


def matching(misconception, what, output) -> Mistake:
    """A mistake whose output the student's matches: "your output matches <what>"."""
    return Mistake(misconception, f"your output matches {what}", output)


# --- online_softmax -----------------------------------------------------------------------------------
@model
def softmax_not_rescaled(x, block_size):
    """The running sum accumulated against each block's own running maximum, never rescaled."""
    import torch

    running_max = torch.full(x.shape[:-1], float("-inf"), dtype=x.dtype)
    running_sum = torch.zeros(x.shape[:-1], dtype=x.dtype)
    for first in range(0, x.shape[-1], block_size):
        block = x[..., first:first + block_size]
        running_max = torch.maximum(running_max, block.amax(dim=-1))
        running_sum = running_sum + torch.exp(block - running_max[..., None]).sum(dim=-1)
    return torch.exp(x - running_max[..., None]) / running_sum[..., None]


@model
def rescaled_without_shift(x, block_size):
    """The running sum rescaled by exp(m_old - m_new) with no _shift: NaN (exp(-inf - -inf)) on a row
    whose running maximum is still -inf when a block is added (its first blocks all -inf)."""
    import torch

    running_max = torch.full(x.shape[:-1], float("-inf"), dtype=x.dtype)
    running_sum = torch.zeros(x.shape[:-1], dtype=x.dtype)
    for first in range(0, x.shape[-1], block_size):
        block = x[..., first:first + block_size]
        new_max = torch.maximum(running_max, block.amax(dim=-1))
        shift = torch.where(torch.isinf(new_max), torch.zeros_like(new_max), new_max)
        running_sum = running_sum * torch.exp(running_max - new_max) + torch.exp(block - shift[..., None]).sum(dim=-1)
        running_max = new_max
    shift = torch.where(torch.isinf(running_max), torch.zeros_like(running_max), running_max)
    return torch.exp(x - shift[..., None]) / running_sum.clamp_min(1.0)[..., None]


RESCALE_WITHOUT_SHIFT = (
    "a running sum rescaled by exp(m_old - m_new) without _shift: while a row's running maximum is still -inf "
    "(its first blocks all -inf), that rescale computes exp(-inf - -inf) = NaN, which stays in the sum. Rescale "
    "by exp(m_old - _shift(m_new)), as the block's own terms are shifted (it is 0 until something is visible)")


@model
def shift_nan_rows_zeroed(x, block_size):
    """rescaled_without_shift with its NaN rows given zeros, as a final torch.where(s > 0, ...) or
    nan_to_num gives them: the rows whose first blocks are all -inf lose every weight. None where no
    row's first block is all -inf (the same output as the right one)."""
    import torch

    out = rescaled_without_shift(x, block_size)
    lost = out.isnan().any(dim=-1, keepdim=True)
    return torch.where(lost, torch.zeros_like(out), out)


@model
def maximum_overwritten_by_shift(x, block_size):
    """The running maximum overwritten by its _shift-ed value (m = _shift(m_new), as flash-attention's
    sm90 softmax did, Dao-AILab/flash-attention#2082): a row whose first block is all -inf keeps a running
    maximum of 0 until an entry above 0 comes, so where its other entries are all below 0 they are
    shifted by 0, not by their maximum, and those below the exp range (about -88 in float32) underflow:
    the row's sum is 0 and the row comes out as zeros. Computed in ``x``'s dtype (the underflow is its).
    None where no row has its first block all -inf and every other entry below 0 (the same output as the
    right one)."""
    import torch

    first = x[..., :block_size]
    if not bool((torch.isneginf(first).all(dim=-1) & (x.amax(dim=-1) < 0)).any()):
        return None
    running_max = torch.full(x.shape[:-1], float("-inf"), dtype=x.dtype)
    running_sum = torch.zeros(x.shape[:-1], dtype=x.dtype)
    for first in range(0, x.shape[-1], block_size):
        block = x[..., first:first + block_size]
        new_max = torch.maximum(running_max, block.amax(dim=-1))
        new_max = torch.where(torch.isinf(new_max), torch.zeros_like(new_max), new_max)  # overwritten
        running_sum = running_sum * torch.exp(running_max - new_max) + \
            torch.exp(block - new_max[..., None]).sum(dim=-1)
        running_max = new_max
    total = torch.where(running_sum > 0, running_sum, torch.ones_like(running_sum))
    return torch.exp(x - running_max[..., None]) / total[..., None]


MAXIMUM_OVERWRITTEN = (
    "the rows whose first block is all -inf and whose other entries are all far below 0 come out as zeros: "
    "your running maximum is overwritten by its _shift-ed value (m = _shift(m_new), 0 while nothing is "
    "visible), so such a row keeps a running maximum of 0 instead of its own, its entries are shifted by 0, "
    "and exp(x - 0) underflows to 0 below about -88 (float32's exp range): the running sum stays 0. Keep the "
    "true running maximum, m = m_new (-inf until something is visible), and use _shift(m_new) only where "
    "you subtract it, in the rescale exp(m_old - _shift(m_new)) and in exp(block - _shift(m_new))")


@model
def full_blocks_only(x, block_size):
    """The running statistics of the whole blocks only (range(N // block_size)): the last, shorter block
    of N % block_size entries never reaches the running maximum and sum; every entry is then divided by
    them (a row of fewer entries than a block: all zeros, nothing summed)."""
    import torch

    full = x.shape[-1] // block_size * block_size
    if full == 0:
        return torch.zeros_like(x)
    seen = x[..., :full]
    m = seen.amax(dim=-1, keepdim=True)
    shift = torch.where(m.isinf(), torch.zeros_like(m), m)
    total = torch.exp(seen - shift).sum(dim=-1, keepdim=True)
    out = torch.exp(x - shift) / torch.where(total > 0, total, torch.ones_like(total))
    return torch.where(total > 0, out, torch.zeros_like(out))


@model
def stale_numerators(x, block_size, stale_sum=False):
    """Each block's exponentials kept as they were computed, against the running maximum of that moment,
    and never brought up to the final maximum: the running sum right (``stale_sum``: each block divided by
    the running sum of that moment too). The entries before the row's maximum grew come out too large."""
    import torch

    running_max = torch.full(x.shape[:-1], float("-inf"), dtype=x.dtype)
    running_sum = torch.zeros(x.shape[:-1], dtype=x.dtype)
    numerators, sums = [], []
    for first in range(0, x.shape[-1], block_size):
        block = x[..., first:first + block_size]
        new_max = torch.maximum(running_max, block.amax(dim=-1))
        shift = torch.where(torch.isinf(new_max), torch.zeros_like(new_max), new_max)
        running_sum = running_sum * torch.exp(running_max - shift) + torch.exp(block - shift[..., None]).sum(dim=-1)
        running_max = new_max
        numerators.append(torch.exp(block - shift[..., None]))
        sums.append(running_sum.clamp_min(1.0)[..., None].expand_as(block))
    total = torch.cat(sums, dim=-1) if stale_sum else running_sum.clamp_min(1.0)[..., None]
    return torch.cat(numerators, dim=-1) / total


STALE_NUMERATORS = (
    "each block's exponentials are kept as computed against the running maximum of that moment: when the "
    "maximum grows later, the earlier blocks' exp(x - m_old) are never rescaled by exp(m_old - m_new), so "
    "the entries before the maximum grew come out too large. Gather the statistics first and compute "
    "exp(x - m_final) / s_final in a second pass (or rescale what you kept whenever m grows)")


@model
def maximum_not_running(x, block_size):
    """The running maximum replaced by each block's own maximum (m_new = block.amax(-1), the old maximum
    forgotten): the sum is rescaled by exp(m_old - m_new) even when the new block's maximum is lower (a factor
    above 1), and the final exponentials are shifted by the last block's maximum. Computed in ``x``'s dtype,
    guarded as the lesson's _shift and a zero sum (divided by 1)."""
    import torch

    def shifted(m):
        return torch.where(torch.isinf(m), torch.zeros_like(m), m)

    running_max = torch.full(x.shape[:-1], float("-inf"), dtype=x.dtype)
    running_sum = torch.zeros(x.shape[:-1], dtype=x.dtype)
    for first in range(0, x.shape[-1], block_size):
        block = x[..., first:first + block_size]
        new_max = block.amax(dim=-1)
        running_sum = running_sum * torch.exp(running_max - shifted(new_max)) + \
            torch.exp(block - shifted(new_max)[..., None]).sum(dim=-1)
        running_max = new_max
    total = torch.where(running_sum == 0, torch.ones_like(running_sum), running_sum)
    return torch.exp(x - shifted(running_max)[..., None]) / total[..., None]


MAXIMUM_NOT_RUNNING = (
    "your running maximum is each block's own maximum (block.amax(-1)), not the largest so far: when a block's "
    "maximum is lower than an earlier one, exp(m_old - m_new) is above 1 (it overflows for a far lower block) and "
    "the final shift is the last block's maximum, not the row's. Keep m = torch.maximum(m_old, block.amax(-1))")


@model
def softmax_of_last_block(x, block_size):
    """Normalised with the statistics of the last block only (the running values overwritten)."""
    import torch

    start = (x.shape[-1] - 1) // block_size * block_size
    block = x[..., start:]
    m = block.amax(dim=-1, keepdim=True)
    return torch.exp(x - m) / torch.exp(block - m).sum(dim=-1, keepdim=True)


@model
def rescale_inverted(x, block_size):
    """The running sum rescaled upside down, by exp(m_new - m_old) (each maximum _shift-ed, so the first
    block's -inf gives 0): when the maximum grows, the old sum grows with it instead of shrinking."""
    import torch

    def shifted(m):
        return torch.where(torch.isinf(m), torch.zeros_like(m), m)

    running_max = torch.full(x.shape[:-1], float("-inf"), dtype=x.dtype)
    running_sum = torch.zeros(x.shape[:-1], dtype=x.dtype)
    for first in range(0, x.shape[-1], block_size):
        block = x[..., first:first + block_size]
        new_max = torch.maximum(running_max, block.amax(dim=-1))
        running_sum = running_sum * torch.exp(shifted(new_max) - shifted(running_max)) + \
            torch.exp(block - shifted(new_max)[..., None]).sum(dim=-1)
        running_max = new_max
    total = torch.where(running_sum == 0, torch.ones_like(running_sum), running_sum)
    return torch.exp(x - shifted(running_max)[..., None]) / total[..., None]


@model
def one_maximum_for_all_rows(x, block_size):
    """The running maximum taken over the whole block, every row at once (block.max(), not
    block.amax(dim=-1)): each row is shifted by the largest entry of all rows, and a row far below it
    underflows (its sum 0: zeros). None where x has one row (the same output as the right one)."""
    import torch

    if x.dim() < 2 or x[..., 0].numel() < 2:
        return None
    running_max = torch.full(x.shape[:-1], float("-inf"), dtype=x.dtype)
    running_sum = torch.zeros(x.shape[:-1], dtype=x.dtype)
    for first in range(0, x.shape[-1], block_size):
        block = x[..., first:first + block_size]
        new_max = torch.maximum(running_max, block.max().expand_as(running_max))
        shift = torch.where(torch.isinf(new_max), torch.zeros_like(new_max), new_max)
        running_sum = running_sum * torch.exp(running_max - shift) + torch.exp(block - shift[..., None]).sum(dim=-1)
        running_max = new_max
    shift = torch.where(torch.isinf(running_max), torch.zeros_like(running_max), running_max)
    total = torch.where(running_sum == 0, torch.ones_like(running_sum), running_sum)
    return torch.exp(x - shift[..., None]) / total[..., None]


@model
def softmax_in_float64(x):
    """torch.softmax of ``x`` over its last dimension, in float64 (its all -inf rows NaN)."""
    import torch

    return torch.softmax(x.double(), dim=-1)


@model
def softmax_over_first_dim(x):
    """torch.softmax of ``x`` over its first dimension (softmax-wrong-dim)."""
    import torch

    return torch.softmax(x, dim=0)


def growing_maximum(x):
    """``x`` with its first row's largest entry placed last (``x`` changed in place, a view too), so that
    the running maximum grows in that row's last block on every seed: a running sum left unrescaled then
    shows in every case, not only where the random draw put some row's maximum after its first block."""
    first = x[(0,) * (x.dim() - 1)]  # [N], a view
    first[-1] = first.amax() + 1.0
    return x


def growing_scores(queries, keys, causal):
    """``keys`` changed in place so that the last query's largest score is with the last key it sees
    (the last key; with ``causal``, top-left aligned, key Tq - 1 where there are more keys): that query's
    running maximum grows in its last block on every seed, so an accumulator left unrescaled shows in
    every case longer than a block, not only where the random draw happened to make it grow."""
    import torch

    last = queries[..., -1, :]  # [..., d]
    seen = min(queries.shape[-2], keys.shape[-2]) if causal else keys.shape[-2]
    top = (last.norm(dim=-1, keepdim=True) * keys[..., :seen, :].norm(dim=-1).amax(dim=-1, keepdim=True))
    scale = (top + 1.0) / last.pow(2).sum(dim=-1, keepdim=True).clamp_min(torch.finfo(last.dtype).tiny)
    keys[..., seen - 1, :] = last * scale  # q . k = |q| max|k| + 1: above every other score of that query
    return keys


def online_softmax_same(grade, x, block_size, grad=False):
    """The student's online_softmax(x, block_size) against the reference's, its usual mistakes named."""
    import torch

    counted = []
    grade.same("online_softmax", x, block_size, grad=grad, explain=non_finite, normalised_exponential=True,
               rules=[*online_softmax_rules(x, block_size), (VECTORISED, lambda reply: counted.append(reply.ops))],
               mistakes=[
        matching(None, "a running sum that is not rescaled by exp(m_old - m_new) when the running maximum grows",
                 lambda: softmax_not_rescaled(x, block_size)),
        Mistake(None, MAXIMUM_NOT_RUNNING, lambda: maximum_not_running(x, block_size)),
        Mistake(None, STALE_NUMERATORS, lambda: stale_numerators(x, block_size)),
        Mistake(None, STALE_NUMERATORS.replace("come out too large.", "come out too large, and you divide each block "
                "by the running sum of its moment, not the final one."), lambda: stale_numerators(x, block_size, True)),
        matching(None, "a sum over the last block only: add each block's exponentials to the running sum",
                 lambda: softmax_of_last_block(x, block_size)),
        matching(None, "a running sum rescaled upside down, by exp(m_new - m_old): when the running maximum grows, "
                 "the old sum must shrink, running_sum * exp(m_old - m_new) (a factor at most 1)",
                 lambda: rescale_inverted(x, block_size)),
        matching(None, "one maximum shared by every row: block.max() takes the largest entry of the whole block, all "
                 "rows at once, so a row far below it underflows to exp(...) = 0; take each row's own maximum, "
                 "block.amax(dim=-1)", lambda: one_maximum_for_all_rows(x, block_size)),
        matching("softmax-unstable", RESCALE_WITHOUT_SHIFT, lambda: rescaled_without_shift(x, block_size)),
        Mistake("softmax-unstable", "your output is right but on the rows whose entries are all -inf: there the "
                "running sum stays 0, and 0/0 gives NaN; such a row must come out as zeros, as 01's softmax: divide "
                "only where the sum is > 0 (torch.where, or sum.clamp_min(tiny))",
                lambda: softmax_in_float64(x)),
        Mistake("softmax-unstable", MAXIMUM_OVERWRITTEN, lambda: maximum_overwritten_by_shift(x, block_size)),
        Mistake(None, "the rows whose first blocks are all -inf come out as zeros: your running sum is rescaled "
                "by exp(m_old - m_new) without _shift, which is exp(-inf - -inf) = NaN while the running maximum "
                "is still -inf, and the NaN sum then counts as no sum at all. Rescale by exp(m_old - "
                "_shift(m_new)), as the block's own terms are shifted", lambda: shift_nan_rows_zeroed(x, block_size)),
        *([matching(None, f"statistics gathered over the whole blocks only: the last {x.shape[-1] % block_size} "
                          f"entr{'y' if x.shape[-1] % block_size == 1 else 'ies'} of each row (a shorter last block, {x.shape[-1]} not being a multiple of "
                          f"block_size = {block_size}) never reach the running maximum and sum; loop over "
                          f"range(0, N, block_size), whose last block x[..., start:start + block_size] is shorter",
                    lambda: full_blocks_only(x, block_size))] if x.shape[-1] % block_size else []),
        matching("softmax-wrong-dim", "a softmax over the first dimension; it is over the last",
                 lambda: softmax_over_first_dim(x))])
    generator = torch.Generator().manual_seed(grade.seed ^ (x.shape[-1] * 7919 + block_size))

    def scaled(seen):
        longer = carried(x, doubled_blocks(x.shape[-1], block_size, generator), generator, dim=-1)
        grade.same("online_softmax", longer, 2 * block_size, grad=grad, normalised_exponential=True,
                   rules=[*online_softmax_rules(longer, 2 * block_size),
                          (VECTORISED, lambda reply: seen.append(reply.ops))])

    vectorised_in_blocks(grade, "online_softmax", f"online_softmax(<{shape_str(x.shape)}>, {block_size})",
                         x.shape[-1], counted, scaled, (x, block_size), blocks=-(-x.shape[-1] // block_size),
                         block_size=block_size)


def expect_blockwise_statistics(grade, x, short, small_block):
    """online_softmax gathers its statistics block by block: on rows of ``x`` (one block of their whole
    length) it makes no more torch operations than on their first ``short`` entries (no Python loop
    over entries); with blocks of ``small_block`` no operation it runs reduces more entries than a block
    at once (see :func:`expect_reductions_within`), and it makes more operations than with one block
    (the lesson's loop over blocks, ``block_size`` heeded). Its count is read on comparing calls too
    (:func:`vectorised_in_blocks`)."""
    grade.reads_rule(BLOCK_RULE)
    grade.reads_rule(VECTORISED)
    length = x.shape[-1]
    one_block = grade.measured("online_softmax", x, length).ops
    fewer = grade.measured("online_softmax", x[..., :short], length).ops
    # one block either way: the steps may not grow with the row's length
    grade.expect_not_growing("online_softmax", fewer, one_block, cases=(f"on rows of {short}", f"on rows of {length}, "
                             "both in one block"), hint="a Python loop over the entries; work on each block as a whole "
                             "tensor (its maximum, the sum of its exponentials)")
    reply = grade.measured("online_softmax", x, small_block)
    expect_reductions_within(reply, x, small_block)
    if reply.ops <= one_block:
        raise CheckFailed(f"online_softmax made {reply.ops} torch operations with {-(-length // small_block)} "
                          f"blocks of {small_block} but {one_block} with one block of {length}: the statistics must "
                          "be gathered block by block, keeping a running maximum and a running sum that is rescaled "
                          "whenever the maximum grows")


GUARDS = 3  # tests of a whole block read into Python: skip a hidden block, rescale only where the maximum grew, ...


def expect_few_values_in_python(reply, what: str, rows: int, blocks: int, block_size: int, inputs: int = 1):
    """Values read into Python (``.item()``, ``float()``, ``bool()`` of a tensor; the worker's tracer counts
    each) are entries Python may combine where no operator is seen: at most one per block of each row
    (a test per tile, as a loop that skips masked tiles makes; GUARDS a block where there are fewer rows: red team
    round 23b's honest online_softmax tested each block twice on a call of one row), and a test of each of the
    ``inputs`` (``if not torch.isfinite(keys).all()``: a learner's input checks read three on a call of one row
    and one block),
    never one per entry (red team round 9: a whole row's softmax computed in Python floats, one ``.item()`` an
    entry, measured as reducing one). ``torch.equal`` compares two whole tensors into a Python bool: a read too
    (red team round 22's p01: torch tags it elementwise, so no width weighs it)."""
    names = reply.op_names or {}
    read = int(names.get("_local_scalar_dense", 0)) + int(names.get("equal", 0))
    if read > max(rows, GUARDS) * blocks + inputs:
        raise CheckFailed(f"{what}: your code read {read} values of its tensors into Python (.item(), float(), "
                          f"bool() of a tensor) where {rows} rows of {blocks} blocks of {block_size} need at most "
                          f"{max(rows, GUARDS) * blocks} (and a test of each input): what Python computes from them is a "
                          "reduction the grader does not see; work on each block as a tensor")


def broken_by(expect, *args):
    """A rule's judge for Grade.same's ``rules``: how ``expect(reply, *args)`` found the call's rule broken
    (its CheckFailed's message), or None where the call kept it."""
    def judge(reply):
        try:
            expect(reply, *args)
        except CheckFailed as failure:
            return failure.message
        return None
    return judge


PER_BLOCK_OPS = 8  # operations a block may run or skip by its values (a rescale only where the maximum grew)


def vectorised_in_blocks(grade, name, what, tokens, counted, scaled, args, kwargs=None, blocks=1, block_size=2):
    """``name``'s vectorised rule read on a right comparing call (``what``, its length ``tokens``, its count in
    ``counted``; lesson.vectorised_on): ``scaled(seen)`` makes the same call with every length and the block
    twice as long, as many blocks, each block of its own entries twice (lesson.doubled_blocks: a tell on the values,
    a block all -inf, is carried), right too, and puts its count in ``seen``; a loop over blocks makes as many
    operations on both (within PER_BLOCK_OPS for each of its ``blocks``: code may branch on a block's values, and a
    causal tile the mask leaves whole may be cut by it twice as large), a loop over entries or tokens inside a block
    twice as many. Red team round 23: the checks that read the rule were told apart (by inputs that require grad)
    and a loop over single queries or entries ran everywhere else; round 23b: by -inf entries, a loop padded
    within the bound, and the rule-abiding code's slip run on the scaled call."""
    if not counted or counted[0] is None or block_size < 2:  # a block of one token holds no loop over tokens
        return

    def call_with(other):
        seen = []
        scaled(seen)
        return seen[0] if seen else None

    vectorised_on(grade, name, what, tokens, counted[0],
                  lambda: grade.count_reference(name, lambda: getattr(grade.ref, name), args, kwargs or {}),
                  call_with, lengthen=lambda length: 2 * length, slack=LAYOUT_OPS + PER_BLOCK_OPS * blocks)


def online_softmax_rules(x, block_size) -> list:
    """online_softmax's block rule read on any call (Grade.same's ``rules``), as its check reads it."""
    return [(BLOCK_RULE, broken_by(expect_reductions_within, x, block_size))]


def expect_reductions_within(reply, x, block_size):
    """The contract's bound, from the widest reduction the worker's tracer saw among the aten operators
    the call ran, whatever Python called them (``torch.ops.aten``, TorchScript, ``F.linear``): no
    operation combined more than ``block_size`` entries into one (a maximum, a sum, a log-sum-exp or a
    softmax over them, a cumulative sum, a matrix product over its contracted dimension); nor did more
    than a value a block reach Python (:func:`expect_few_values_in_python`)."""
    rows, length = x.numel() // x.shape[-1], x.shape[-1]
    expect_few_values_in_python(reply, f"online_softmax(<{shape_str(x.shape)}>, {block_size})", rows,
                                -(-length // block_size), block_size)
    if (reply.widest or 0) > block_size:
        raise CheckFailed(f"online_softmax(<{shape_str(x.shape)}>, {block_size}): an operation ({reply.widest_op}, "
                          f"as torch runs it) reduced {reply.widest} entries at once; with block_size={block_size} "
                          f"each may reduce at most {block_size} entries of the last dim: take the maximum and the "
                          "sum of one block x[..., start:start + block_size] at a time, keeping a running maximum "
                          "and a running sum")


# --- flash_attention ----------------------------------------------------------------------------------
@model
def plain_attention(q, k, v, causal, *, bottom_right=False):
    """Plain attention in float64 (``bottom_right``: the causal mask aligned to the bottom-right corner)."""
    import torch

    tq, tk = q.shape[-2], k.shape[-2]
    future = torch.ones(tq, tk, dtype=torch.bool).triu(tk - tq + 1 if bottom_right else 1) if causal else None
    return masked_attention(q, k, v, future)


@model
def tiled_without_rescaling(q, k, v, block_size, causal, *, rescale_sum=True, rescale_acc=True):
    """Tiled attention in float64 that forgets to rescale the running sum or the running output."""
    import torch

    q, k, v = q.double() / q.shape[-1] ** 0.5, k.double(), v.double()
    running_max = torch.full(q.shape[:-1], float("-inf"), dtype=q.dtype)
    running_sum = torch.zeros(q.shape[:-1], dtype=q.dtype)
    acc = torch.zeros(*q.shape[:-1], v.shape[-1], dtype=q.dtype)
    q_pos = torch.arange(q.shape[-2])
    for start in range(0, k.shape[-2], block_size):
        scores = q @ k[..., start:start + block_size, :].transpose(-2, -1)
        if causal:
            k_pos = torch.arange(start, start + scores.shape[-1])
            scores = scores.masked_fill(q_pos[:, None] < k_pos[None, :], float("-inf"))  # the future
        new_max = torch.maximum(running_max, scores.amax(dim=-1))
        shift = torch.where(new_max.isinf(), torch.zeros_like(new_max), new_max)
        rescale = torch.exp(running_max - shift)
        p = torch.exp(scores - shift[..., None])
        running_sum = (running_sum * rescale if rescale_sum else running_sum) + p.sum(dim=-1)
        acc = (acc * rescale[..., None] if rescale_acc else acc) + p @ v[..., start:start + block_size, :]
        running_max = new_max
    return acc / running_sum.clamp_min(1e-300)[..., None]


@model
def masked_attention(q, k, v, hidden):
    """Plain attention in float64 with ``hidden`` [Tq, Tk] removed; a row with nothing left is zeros."""
    return mistaken.attend(q.double(), k.double(), v.double(), scale=q.shape[-1] ** -0.5, hidden=hidden)


@model
def tile_positions(tq, tk, block_size):
    """Each query's and key's place in its tile, its tile's first position, and the last key tile the
    causal loop visits for its query tile (key tiles after its last query are skipped): [Tq] or [Tk]."""
    import torch

    qi, kj = torch.arange(tq), torch.arange(tk)
    q_first, k_first = qi // block_size * block_size, kj // block_size * block_size
    q_last = torch.minimum(q_first + block_size - 1, torch.tensor(tq - 1))
    last_tile = torch.minimum(q_last, torch.tensor(tk - 1)) // block_size * block_size
    return qi - q_first, kj - k_first, q_last, k_first, last_tile


@model
def tile_local_causal(q, k, v, block_size, *, skip):
    """A causal mask built inside each tile from tile-local indices (key j % bs after query i % bs hidden),
    the key tiles past the query tile's last query skipped (``skip``) or not."""
    q_local, k_local, q_last, k_first, _ = tile_positions(q.shape[-2], k.shape[-2], block_size)
    hidden = k_local[None, :] > q_local[:, None]
    if skip:
        hidden = hidden | (k_first[None, :] > q_last[:, None])
    return masked_attention(q, k, v, hidden)


@model
def last_key_tile_dropped(q, k, v, block_size, causal):
    """Attention over the whole key tiles only: the keys of a shorter last tile never attended (a query that
    then sees no key gets zeros, as a loop dividing by a zero sum guarded gives)."""
    import torch

    tq, tk = q.shape[-2], k.shape[-2]
    hidden = (torch.arange(tk) >= tk // block_size * block_size)[None, :].expand(tq, tk)
    if causal:
        hidden = hidden | (torch.arange(tk)[None, :] > torch.arange(tq)[:, None])
    return masked_attention(q, k, v, hidden)


@model
def diagonal_tile_skipped(q, k, v, block_size, *, first_tile_kept):
    """A causal loop that stops at the key tile on the diagonal (break when ks >= qs) instead of after
    it: each query tile sees only the key tiles before its own, the first query tile (qs = 0) its own
    keys causally (``first_tile_kept``, as "and ks > 0" keeps it) or none at all (zeros)."""
    import torch

    q_local, _, _, k_first, _ = tile_positions(q.shape[-2], k.shape[-2], block_size)
    q_first = torch.arange(q.shape[-2]) - q_local
    hidden = (torch.arange(k.shape[-2])[None, :] > torch.arange(q.shape[-2])[:, None]) | \
        (k_first[None, :] >= q_first[:, None])
    if first_tile_kept:
        hidden = hidden & ~((q_first[:, None] == 0) & (k_first[None, :] == 0) &
                            (torch.arange(k.shape[-2])[None, :] <= torch.arange(q.shape[-2])[:, None]))
    return masked_attention(q, k, v, hidden)


@model
def diagonal_hidden_in_masked_tiles(q, k, v, block_size):
    """The diagonal hidden (keys j >= i) in the tiles the causal loop masks, those holding a key after the
    tile's first query (if ke - 1 > qs: a tile of earlier keys only is left unmasked, its last key
    seen even where it is the query's own): mask-hides-diagonal, as a loop that masks only the tiles it
    must writes it. None where every query's own key is in a masked tile (the plain diagonal mistake)."""
    import torch

    tq, tk = q.shape[-2], k.shape[-2]
    _, _, _, k_first, _ = tile_positions(tq, tk, block_size)
    q_first = torch.arange(tq) // block_size * block_size
    k_last = torch.minimum(k_first + block_size - 1, torch.tensor(tk - 1))
    qi, kj = torch.arange(tq)[:, None], torch.arange(tk)[None, :]
    masked_tile = k_last[None, :] > q_first[:, None]
    hidden = (kj > qi) | ((kj == qi) & masked_tile)
    if bool(((kj == qi) & ~masked_tile).sum() == 0):
        return None
    return masked_attention(q, k, v, hidden)


@model
def normalised_every_tile(q, k, v, block_size, causal):
    """Tiled attention in float64 that divides the running output by the running sum after every key
    tile (acc = acc / l; l = 1) and goes on gathering: the tiles before count as a sum of 1, not l."""
    import torch

    q, k, v = q.double() / q.shape[-1] ** 0.5, k.double(), v.double()
    running_max = torch.full(q.shape[:-1], float("-inf"), dtype=q.dtype)
    running_sum = torch.zeros(q.shape[:-1], dtype=q.dtype)
    acc = torch.zeros(*q.shape[:-1], v.shape[-1], dtype=q.dtype)
    q_pos = torch.arange(q.shape[-2])
    for start in range(0, k.shape[-2], block_size):
        scores = q @ k[..., start:start + block_size, :].transpose(-2, -1)
        if causal:
            k_pos = torch.arange(start, start + scores.shape[-1])
            scores = scores.masked_fill(q_pos[:, None] < k_pos[None, :], float("-inf"))
        new_max = torch.maximum(running_max, scores.amax(dim=-1))
        shift = torch.where(new_max.isinf(), torch.zeros_like(new_max), new_max)
        rescale = torch.exp(running_max - shift)
        p = torch.exp(scores - shift[..., None])
        running_sum = rescale * running_sum + p.sum(dim=-1)  # (the sum, as a right loop keeps it)
        acc = acc * rescale[..., None] + p @ v[..., start:start + block_size, :]
        running_max = new_max
        seen = running_sum > 0
        acc = torch.where(seen[..., None], acc / running_sum.clamp_min(1e-300)[..., None], acc)
        running_sum = torch.where(seen, torch.ones_like(running_sum), running_sum)
    return acc / torch.where(running_sum == 0, torch.ones_like(running_sum), running_sum)[..., None]


@model
def last_key_tile_only(q, k, v, block_size, causal):
    """What a loop whose running maximum is never updated (m = m_new forgotten) gives: m stays -inf, so
    each key tile's rescale exp(m - m_new) is 0 and wipes the sum and output before it; each query tile
    ends with the last key tile it visits (causal: the one holding its last query)."""
    import torch

    tq, tk = q.shape[-2], k.shape[-2]
    _, _, _, k_first, last_tile = tile_positions(tq, tk, block_size)
    if not causal:
        last_tile = torch.full((tq,), (tk - 1) // block_size * block_size)
    hidden = k_first[None, :] != last_tile[:, None]
    if causal:
        hidden = hidden | (torch.arange(tk)[None, :] > torch.arange(tq)[:, None])
    return masked_attention(q, k, v, hidden)


@model
def query_blocks_on_dim0(q, k, v, block_size, causal):
    """The right outputs of the query tiles concatenated with torch.cat(outs), along dim 0."""
    import torch

    right = plain_attention(q, k, v, causal)
    return torch.cat(list(right.split(block_size, dim=-2)))


def flash_crash(q, block_size, k=None, v=None):
    """What a raise of flash_attention shows, read from its error: torch.cat joining the query tiles'
    outputs along another dimension than the queries' (torch.cat(outs), dim 0: "except in dimension d.
    Expected size <block_size> but got size <Tq % block_size>"); a tile's size taken as block_size where
    the last tile is shorter (a mismatch of block_size and Tq % block_size, or Tk % block_size); the
    accumulator of the queries' width d where the values' is dv (a mismatch of d and dv); a key tile
    transposed with .T, which reverses every dimension of a batched tensor (the line that raised)."""
    import re

    def sizes(message):
        found = shape_mismatch(message, "broadcast")
        return None if found is None else set(found.sizes)

    def root_cause(failure, out):
        if not isinstance(failure, RaisedFailure):
            return None
        lines = failure.message.strip().splitlines()
        last = lines[-1] if lines else ""
        tq, rest = q.shape[-2], q.shape[-2] % block_size
        found = shape_mismatch(last, "cat")
        if found is not None and found.sizes == (block_size, rest) and found.dim % q.dim() != q.dim() - 2:
            return CheckFailed(f"{failure.message}\ntorch.cat joined the query tiles' outputs along dimension "
                               f"{found.dim}, where they all have the same size; they differ in their number of "
                               f"queries ({block_size}, and {rest} in the last of the {tq}): concatenate them along "
                               "the queries, torch.cat(outs, dim=-2)")
        pair = sizes(last) if "RuntimeError" in last else None
        if pair is None:
            return None
        code = lines[-2].strip() if len(lines) > 1 else ""
        if k is not None and q.dim() > 2 and re.search(r"\.T(?!\w)", code):
            return CheckFailed(f"{failure.message}\nthe line that raised transposes with .T, which reverses every "
                               f"dimension of a tensor of more than two (keys of shape "
                               f"[{', '.join(map(str, k.shape))}] would become "
                               f"[{', '.join(map(str, reversed(k.shape)))}]): swap only the last two, "
                               "k.transpose(-2, -1) (or k.mT)")
        tk = k.shape[-2] if k is not None else None
        short = {n for n in (rest, tk % block_size if tk is not None else 0) if n}
        if any(pair == {block_size, n} for n in short):
            as_query, as_key = pair == {block_size, rest}, tk is not None and pair == {block_size, tk % block_size}
            which = "query (or key)" if as_query and as_key else "query" if as_query else "key"
            return CheckFailed(f"{failure.message}\na tile's size taken as block_size = {block_size}: the last "
                               f"{which} tile is shorter ({' or '.join(map(str, sorted(short)))} rows, "
                               f"Tq = {tq}{f', Tk = {tk}' if tk is not None else ''} not being multiples of "
                               f"{block_size}); clamp its end, qe = min(qs + block_size, Tq) (ke likewise), and size "
                               "the running maximum, sum and output from the tile itself, bq = q.shape[-2]")
        if v is not None and q.shape[-1] != v.shape[-1] and pair == {q.shape[-1], v.shape[-1]}:
            return CheckFailed(f"{failure.message}\na tensor of the queries' width d = {q.shape[-1]} met one of the "
                               f"values' width dv = {v.shape[-1]}: the running output (and the result) has the "
                               "values' width, zeros(..., bq, values.shape[-1]), and gathers p @ v with v the "
                               "values' tile")
        return None
    return root_cause


DIAGONAL_SKIPPED = ("a causal loop that skips the key tile on the diagonal: it stops at ks >= qs, but that tile holds "
                    "each query's own key and the earlier keys of its tile; only the key tiles after the query tile's "
                    "last query are all future: stop when ks > qs + bq - 1 (ks >= qe), and mask inside the diagonal "
                    "tile")


def _same(a, b) -> bool:
    """Two candidates' outputs alike (zeros where a query sees nothing in both)."""
    import torch

    return a.shape == b.shape and bool(torch.allclose(a, b, rtol=1e-9, atol=1e-12, equal_nan=True))


def flash_mistakes(q, k, v, block_size, causal) -> list:
    """What flash_attention's usual mistakes give on these inputs, each computed in float64."""
    mistakes = [
        matching(None, "a running output that is not rescaled by exp(m_old - m_new) when the running maximum grows",
                 lambda: tiled_without_rescaling(q, k, v, block_size, causal, rescale_acc=False)),
        matching(None, "a running sum that is not rescaled by exp(m_old - m_new) when the running maximum grows",
                 lambda: tiled_without_rescaling(q, k, v, block_size, causal, rescale_sum=False)),
        matching(None, "an output divided by the running sum inside the key loop (acc / l after each tile) that "
                 "goes on gathering: the tiles before then weigh as a sum of 1 instead of l; keep acc and l "
                 "unnormalised across the key tiles and divide once, acc / l, after the key loop",
                 lambda: normalised_every_tile(q, k, v, block_size, causal)),
    ]
    if k.shape[-2] % block_size:  # a shorter last key tile never attended
        said = (f"a key loop over the whole tiles only (range(0, Tk - block_size + 1, ...) or Tk // block_size "
                f"tiles): the last {k.shape[-2] % block_size} key(s), a shorter last tile ({k.shape[-2]} keys not "
                f"being a multiple of block_size = {block_size}), are never attended; loop over range(0, Tk, "
                f"block_size), whose last tile keys[..., ks:ks + block_size, :] is shorter")
        if causal and _same(last_key_tile_dropped(q, k, v, block_size, causal),
                            diagonal_tile_skipped(q, k, v, block_size, first_tile_kept=True)):
            said = f"{DIAGONAL_SKIPPED}; or, the same on these inputs, {said}"  # (6 tokens in tiles of 4)
        mistakes.append(matching(None, said, lambda: last_key_tile_dropped(q, k, v, block_size, causal)))
    if causal:
        mistakes.append(matching(None, "a causal mask aligned to the bottom-right corner; query i sees keys j <= i, "
                                 "counted from the top-left", lambda: plain_attention(q, k, v, True, bottom_right=True)))
        mistakes += [matching(None, "a causal mask built inside each tile from the tile's own indices (arange of "
                              "the tile's size): it hides keys of earlier tiles too; compare the queries' and keys' "
                              "positions in the whole sequence, qs + i against ks + j",
                              lambda skip=skip: tile_local_causal(q, k, v, block_size, skip=skip))
                     for skip in (True, False)]
        mistakes += [matching(None, DIAGONAL_SKIPPED,
                              lambda kept=kept: diagonal_tile_skipped(q, k, v, block_size, first_tile_kept=kept))
                     for kept in (True, False)]
        mistakes.append(matching("mask-hides-diagonal", "a causal mask inside the tiles that hides the diagonal too "
                                 "(k >= q): a query may see its own key, hide only k > q",
                                 lambda: diagonal_hidden_in_masked_tiles(q, k, v, block_size)))
    mistakes.append(matching(None, "attention over each query tile's last key tile only, as when the running maximum "
                             "is never updated (m = m_new forgotten): m stays -inf, so every rescale exp(m - m_new) "
                             "is 0 and wipes the sum and output gathered before",
                             lambda: last_key_tile_only(q, k, v, block_size, causal)))
    if q.shape[-2] % block_size == 0 and q.shape[-2] > block_size:
        mistakes.append(matching(None, "the query tiles' outputs concatenated along dimension 0 (torch.cat(outs)) "
                                 "instead of along the queries, torch.cat(outs, dim=-2)",
                                 lambda: query_blocks_on_dim0(q, k, v, block_size, causal)))
    # attention's usual mistakes (scale, orientation, softmax dimension, mask, values), in float64
    q64, k64, v64 = q.double(), k.double(), v.double()
    future = mistaken.causal_variants(q.shape[-2], k.shape[-2])["future"] if causal else None
    mistakes += [m if isinstance(m, ScaleSearch) else Mistake(m.id, f"your output matches attention in which "
                                                               f"{m.explanation}", m.output)
                 for m in mistaken.attention_mistakes(q64, k64, v64, scale=q.shape[-1] ** -0.5, hidden=future,
                                                      causal=causal, mask_fill_zero=False)]
    return mistakes


def flash_explain(q, block_size):
    """non_finite, and an output of block_size rows for every query tile, the last one too where it is
    shorter: the last tile's end left unclamped (qe = qs + block_size), its size taken as block_size."""
    tq = q.shape[-2]
    padded = -(-tq // block_size) * block_size

    def explain(out):
        import torch

        if isinstance(out, torch.Tensor) and out.dim() >= 2 and padded != tq and out.shape[-2] == padded:
            return (None, f"your output has {padded} queries for the {tq} asked: every query tile gave "
                          f"block_size = {block_size} rows, the last one too, which holds only {tq % block_size}; "
                          "clamp its end, qe = min(qs + block_size, Tq), and size the running maximum, sum and "
                          "output from the tile itself, bq = q.shape[-2]")
        return non_finite(out)
    return explain


def flash_same(grade, q, k, v, block_size, causal, grad=False):
    """The student's flash_attention against the reference's, its usual mistakes named."""
    import torch

    counted = []
    grade.same("flash_attention", q, k, v, grad=grad, explain=flash_explain(q, block_size),
               mistakes=flash_mistakes(q, k, v, block_size, causal), root_cause=flash_crash(q, block_size, k, v),
               right=lambda: plain_attention(q, k, v, causal), block_size=block_size, causal=causal,
               rules=[*flash_rules(q, k, v, block_size, causal), (VECTORISED, lambda reply: counted.append(reply.ops))])
    tq, tk = q.shape[-2], k.shape[-2]
    generator = torch.Generator().manual_seed(grade.seed ^ (tq * 7919 + tk * 31 + block_size))

    def scaled(seen):
        queries, keys = doubled_blocks(tq, block_size, generator), doubled_blocks(tk, block_size, generator)
        q2, k2, v2 = (carried(t, index, generator) for t, index in ((q, queries), (k, keys), (v, keys)))
        grade.same("flash_attention", q2, k2, v2, grad=grad, right=lambda: plain_attention(q2, k2, v2, causal),
                   block_size=2 * block_size, causal=causal,
                   rules=[*flash_rules(q2, k2, v2, 2 * block_size, causal),
                          (VECTORISED, lambda reply: seen.append(reply.ops))])

    vectorised_in_blocks(grade, "flash_attention", f"flash_attention(<{shape_str(q.shape)}> queries, "
                         f"<{shape_str(k.shape)}> keys, block_size={block_size}, causal={causal})", max(tq, tk), counted,
                         scaled, (q, k, v), {"block_size": block_size, "causal": causal},
                         blocks=-(-tq // block_size) * -(-tk // block_size), block_size=block_size)


def flash_rules(q, k, v, block_size, causal) -> list:
    """flash_attention's rules read on any call (Grade.same's ``rules``), as the checks that read them read
    them, each only where this call's sizes can tell it broken from what a flash-style computation may hold
    or reduce. The score matrix: a tensor of a quarter of it or more (the memory check's bound) that is
    larger than the inputs stacked three times, the inputs and the output with a column more, a block row or
    column of scores, all padded to whole blocks. Key tiles (see :func:`expect_key_tiles`): more entries
    than a block or the features reduced at once by an operator whose result keeps more than one entry
    (a query's keys, however their dimensions are folded), and values read into Python beyond one a block
    of each row and a test of each input. A whole tensor reduced to one entry is left to the key-tile
    check's growth (red team round 21b: a test that the queries are finite reduces as many entries as the
    keys of a small call)."""
    batch = q.numel() // max(1, q.shape[-2] * q.shape[-1])
    tq, tk, d, dv = q.shape[-2], k.shape[-2], q.shape[-1], v.shape[-1]
    whole = batch * tq * tk
    padded_q, padded_k = -(-tq // block_size) * block_size, -(-tk // block_size) * block_size
    allowed = max(3 * max(q.numel(), k.numel(), v.numel()),  # the inputs stacked, padded, or given a column more
                  batch * max(padded_q, padded_k) * (max(d, dv) + 1),  # (the running sum beside the values')
                  batch * min(block_size, padded_q) * padded_k, batch * padded_q * min(block_size, padded_k))
    limit = max(whole // 4, allowed + 1)
    call = (f"flash_attention(<{shape_str(q.shape)}> queries, <{shape_str(k.shape)}> keys, block_size={block_size}, "
            f"causal={causal})")

    def score_matrix(reply):
        if (reply.max_numel or 0) >= limit:
            return (f"{call}: an intermediate tensor had {reply.max_numel} elements, {reply.max_numel / whole:.0%} of "
                    f"the whole score matrix ({batch} x {tq} x {tk}); the score matrix must never be built: work "
                    "on [block_size, block_size] tiles of it with the online-softmax rescaling")
        return None

    def key_tiles(reply):
        try:
            expect_few_values_in_python(reply, call, batch * tq, -(-tk // block_size), block_size, inputs=3)
            expect_keys_reduced_within(reply, call, block_size, d)
        except CheckFailed as failure:
            return failure.message
        return None

    return [(SCORE_MATRIX, score_matrix), (KEY_TILES, key_tiles)]


def expect_within_memory_bound(grade, tokens, dim, block_size, causal):
    """flash_attention on ``tokens`` queries and keys in blocks of ``block_size``: no intermediate tensor
    may hold tokens*tokens/4 elements or more (a whole [Tq, Tk] causal mask neither), and its output
    is right (the expected output worked out here, outside the student's worker, in three products)."""
    grade.reads_rule(SCORE_MATRIX)
    q, k, v = grade.randn(tokens, dim), grade.randn(tokens, dim), grade.randn(tokens, dim)
    reply = grade.call("flash_attention", q, k, v, block_size=block_size, causal=causal, measure=True)
    limit = tokens * tokens // 4
    if reply.max_numel >= limit:
        raise CheckFailed(f"flash_attention(<[{tokens}, {dim}]> x 3, block_size={block_size}): the largest "
                          f"intermediate tensor had {reply.max_numel} elements, but the limit is {limit} (a quarter "
                          f"of the {tokens} x {tokens} score matrix); the full score matrix must never be built: work "
                          "on [block_size, block_size] tiles of it with the online-softmax rescaling")
    expected = grade.reference_value(lambda: plain_attention(q, k, v, causal), q, k, v, causal)
    expected = expected.to(q.dtype).to(grade.device)
    grade.expect(reply, expected, f"flash_attention(<[{tokens}, {dim}]> x 3, block_size={block_size}, "
                                  f"causal={causal})")


def expect_key_tiles(grade, queries, short, long, block_size, causal, dim=8):
    """flash_attention tiles the keys too: no operation it runs reduces over more than ``block_size``
    keys at once (the contract's block rule; a reduction over the feature dimension d is free, and d is
    kept within a block here). Read from the aten operators the worker's tracer sees (the widest reduction,
    as :func:`expect_reductions_within` reads it) on ``queries`` queries against ``short`` and then
    ``long`` keys: a query-block loop that takes a softmax (or the maximum, the sum, the product with the
    values) over every key at once reduces more than a block, and more as the keys grow, whatever its
    memory; a tile's own work (a maximum over its keys, a test of the whole tile) does not grow. Nor may any
    operation whose result keeps more than one entry reduce more than a block (or the features) for each of
    them, on either call (:func:`expect_keys_reduced_within`; red team round 21: key tiles as wide as the
    queries grow with neither; a test of a whole tile reduces it to one entry). Both outputs must be right
    (a measured property earns only with a right answer)."""
    grade.reads_rule(KEY_TILES)
    q = grade.randn(2, queries, dim)

    def measured(keys):
        k, v = grade.randn(2, keys, dim), grade.randn(2, keys, dim)
        return grade.measured("flash_attention", q, k, v, block_size=block_size, causal=causal,
                              root_cause=flash_crash(q, block_size, k, v))

    few, many = measured(short), measured(long)
    expect_few_values_in_python(many, f"flash_attention(<[2, {queries}, {dim}]> queries, <[2, {long}, {dim}]> keys "
                                f"and values, block_size={block_size}, causal={causal})", 2 * queries,
                                -(-long // block_size), block_size, inputs=3)
    narrow, wide = few.widest or 0, many.widest or 0
    if wide > block_size and wide > narrow:
        every = f"every one of the {long} keys" if wide == long else f"{wide} entries"
        raise CheckFailed(f"flash_attention(<[2, {queries}, {dim}]> queries, <[2, {long}, {dim}]> keys and values, "
                          f"block_size={block_size}, causal={causal}): an operation ({many.widest_op}, as torch runs "
                          f"it) reduced {every} at once ({narrow} with {short} keys): a softmax, a maximum, a sum or "
                          "a product with the values over every key of a query at once is not flash attention, "
                          f"whatever its memory. With block_size={block_size} each operation may reduce at most "
                          f"{block_size} keys: inside each query tile, loop over the key tiles "
                          "keys[..., ks:ks + block_size, :], keeping each query's running maximum, running sum and "
                          "running output, rescaled by exp(m_old - m_new) whenever the maximum grows")
    # a tile as wide as the queries, or any width but a block's, on either call
    expect_keys_reduced_within(max(few, many, key=lambda reply: reply.widest_along or 0),
                               f"flash_attention(<[2, {queries}, {dim}]> queries, <[2, {long}, {dim}]> keys and "
                               f"values, block_size={block_size}, causal={causal})", block_size, dim)


def expect_keys_reduced_within(reply, what: str, block_size: int, dim: int):
    """The key-tile rule on one call, read from the widest reduction by an operator whose result keeps more
    than one entry (grader.inside.tracer's ``widest_along``): at most a block of keys, or the ``dim``
    features, for each entry it keeps."""
    along = reply.widest_along or 0
    if along > max(block_size, dim):
        raise CheckFailed(f"{what}: an operation ({reply.widest_along_op}, as torch runs it) reduced {along} entries "
                          f"at once for each entry of its result; with block_size={block_size} each operation may "
                          f"reduce at most {block_size} keys (a reduction over the {dim} features is free): inside "
                          "each query tile, loop over the key tiles keys[..., ks:ks + block_size, :], keeping each "
                          "query's running maximum, running sum and running output, rescaled by exp(m_old - m_new) "
                          "whenever the maximum grows")


def expect_vectorised_within_a_block(grade, short, long, block_size, dim=8):
    """Inside one block, queries and keys are whole tensors: with every token in one block of
    ``block_size``, flash_attention makes as many operations for ``long`` tokens as for ``short``. The rule is
    read on comparing calls too (:func:`vectorised_in_blocks`)."""
    grade.reads_rule(VECTORISED)
    def ops(tokens):
        q, k, v = grade.randn(2, tokens, dim), grade.randn(2, tokens, dim), grade.randn(2, tokens, dim)
        try:
            return grade.measured("flash_attention", q, k, v, block_size=block_size, causal=True).ops
        except StudentFault as fault:  # a raise its error explains (flash_crash), as flash_same explains it
            if fault.kind == "error" and fault.exception and \
                    (said := flash_crash(q, block_size, k, v)(RaisedFailure(fault), None)) is not None:
                raise said from None
            raise

    few, many = ops(short), ops(long)
    grade.expect_not_growing("flash_attention", few, many, cases=(f"for {short} tokens", f"for {long}, every token in "
                             f"one block of {block_size}"), hint="a Python loop over queries or keys; compute each "
                             "block's scores as one matrix product")
