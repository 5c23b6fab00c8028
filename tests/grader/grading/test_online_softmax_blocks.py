"""online_softmax's bound (issue 33, item 6; docs/course-spec.md, 05's row): "no operation reduces over
more than ``block_size`` entries of the last dim at once", decided from the aten operators the worker's
tracer sees (grader/inside/operators.py, ``rule_of``), whatever Python path called them. A full-row softmax
behind one dummy step per block kept the step count growing with the blocks and scored full marks; each
attack below now loses the block check's points on both suites, and no correct style loses a point."""
import sys
import textwrap
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from grader.grading.fixture import StudentFault, reply_of
from grader.inside.tracer import make_tracer

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tests" / "corpus"))
import corpus  # noqa: E402

BLOCK_CHECK = {"hidden": "online_softmax_walks_over_blocks", "public": "online_softmax_works_block_by_block"}


# --- the tracer's figure --------------------------------------------------------------------------------
def widest(fn, measure=True):
    """The widest reduction and its operator, as a measured call of ``fn`` reports them."""
    tracer = make_tracer(frozenset(), measure=measure)
    with tracer:
        fn()
    return tracer.widest, tracer.widest_op


X = torch.randn(2, 64)
ONES = torch.ones(64)
FULL_ROW = {  # each reduces a whole row of 64 at once, by some path or other
    "aten _softmax": lambda: torch.ops.aten._softmax.default(X, -1, False),
    "aten logsumexp": lambda: torch.ops.aten.logsumexp.default(X, [-1]),
    "amax": lambda: X.amax(-1),
    "max.dim": lambda: X.max(-1),
    "sum": lambda: X.exp().sum(-1),
    "x @ ones": lambda: X.exp() @ ONES,
    "einsum": lambda: torch.einsum("rn,n->r", X.exp(), ONES),
    "F.linear": lambda: F.linear(X.exp(), ONES[None]),
    "conv1d": lambda: F.conv1d(X.exp()[:, None], ONES[None, None]),
    "trapz": lambda: torch.trapz(X.exp()),
    "histc": lambda: torch.histc(X[0], bins=4),
    "scatter_add to one slot": lambda: torch.zeros(2, 64).scatter_add(-1, torch.zeros(2, 64, dtype=torch.long),
                                                                     X.exp()),
    # round 8 of issue 44 and after: a plain indexed write to a slot named n times keeps one of n values
    "index_fill to one slot": lambda: X.clone().index_fill(1, torch.zeros(64, dtype=torch.long), 0.0),
    "index_copy to one slot": lambda: torch.zeros(2, 1).index_copy(1, torch.zeros(64, dtype=torch.long), X),
    "index_put to one slot": lambda: torch.zeros(2, 1).index_put((torch.arange(2)[:, None],
                                                                 torch.zeros(2, 64, dtype=torch.long)), X),
    "scatter to one slot": lambda: torch.zeros(2, 64).scatter(-1, torch.zeros(2, 64, dtype=torch.long), X),
    "scatter of a value to one slot": lambda: torch.zeros(2, 64).scatter(-1, torch.zeros(2, 64, dtype=torch.long),
                                                                         1.0),
    # red team round 9: a write into memory held many times, an "any" over every entry written
    "masked_fill_ into a view of stride 0": lambda: torch.zeros(2, 1).as_strided((2, 64), (1, 0)).masked_fill_(
        X > 0, 1.0),
    "index_put_ of a mask into a view of stride 0": lambda: torch.zeros(2, 1).as_strided((2, 64), (1, 0)).index_put_(
        (X > 0,), torch.tensor(1.0)),
    # round 9: complex entries hold two real ones each (32 complex = the row's 64)
    "sum of a row viewed as complex": lambda: torch.view_as_complex(X.exp().reshape(2, 32, 2)).sum(-1),
    # round 9: a result sized by a count over the row, which reaches Python as its shape
    "a row read through its own mask": lambda: X[0][X[0] > 0],
    "nonzero": lambda: (X > 0).nonzero(),
    "masked_select": lambda: X.masked_select(X > 0),
    "repeat_interleave by counts": lambda: torch.arange(64).repeat_interleave((X[0] > 0).long()),
    "index_add to one slot": lambda: torch.zeros(2, 1).index_add(1, torch.zeros(64, dtype=torch.long), X.exp()),
    "cumsum": lambda: X.exp().cumsum(-1)[..., -1],
    "rfft": lambda: torch.fft.rfft(X.exp())[..., 0],
    "avg_pool1d": lambda: F.avg_pool1d(X.exp()[:, None], 64),
    "max_pool1d, stride 1": lambda: F.max_pool1d(X[:, None], 63, 1, 31),
    # round 7 of issue 44: a row folded into a 4 x 4 x 4 cube, pooled with a kernel of its side, padded so
    # that the output is larger than the input (the widest rule took it for 4)
    "max_pool3d over a cube": lambda: F.max_pool3d(X.reshape(2, 1, 4, 4, 4), 4, 1, 2),
    "avg_pool3d over a cube, summed": lambda: F.avg_pool3d(X.exp().reshape(2, 1, 4, 4, 4), 4, 1, 2,
                                                           divisor_override=1),
    "adaptive_max_pool2d to one": lambda: F.adaptive_max_pool2d(X.reshape(2, 1, 8, 8), 1),
    "layer_norm": lambda: F.layer_norm(X, (64,)),
    "cdist": lambda: torch.cdist(X.exp()[:, None], torch.zeros(2, 1, 64), p=1),
    "renorm": lambda: torch.renorm(X.exp(), 1, 0, 1.0),
    "sort": lambda: X.sort(-1),
    "solve_triangular": lambda: torch.linalg.solve_triangular(torch.ones(64, 64).tril(), X.exp().T, upper=False),
    "sdpa": lambda: F.scaled_dot_product_attention(torch.ones(2, 1, 1), X[..., None], torch.eye(64).expand(2, 64, 64),
                                                   scale=1.0),
    # red team round 13: every entry ranked by masked_scatter's running count over the whole mask, the first
    # winner picked by nonzero_static (both measured as combining nothing)
    "masked_scatter's running count": lambda: torch.zeros(128, dtype=torch.long).masked_scatter(
        (X > 0).reshape(-1), torch.arange(1, 129)),
    "nonzero_static": lambda: torch.nonzero_static(X[0] > 0, size=4),
    "autograd's sum": lambda: torch.autograd.grad(X.exp() * (w := torch.ones(2, 1, requires_grad=True)), w,
                                                  torch.ones(2, 64)),
}


@pytest.mark.parametrize("name", list(FULL_ROW))
def test_a_whole_row_reduced_at_once_is_seen_whatever_path_reduced_it(name):
    width, _ = widest(FULL_ROW[name])
    assert width >= 64, name


def test_blocks_elementwise_steps_and_joins_reduce_no_more_than_a_block():
    """Slicing, splitting, stacking, concatenating, padding, in-place updates and elementwise work over a
    whole row combine nothing; a reduction over a block combines the block."""
    def steps():
        blocks = [b.amax(-1) for b in torch.split(X, 8, -1)]
        torch.stack(blocks, -1), torch.cat([X[:, :4], X[:, 4:8]], -1), X[..., torch.arange(4)]
        X.new_full(X.shape[:-1], float("-inf")), torch.full_like(X[..., 0], 1.0), torch.zeros(2, 64)
        torch.logaddexp(X[:, :1], X[:, 1:2]), torch.exp(X - 3.0) / 2.0, torch.where(X > 0, X, -X).clamp_min(1.0)
        F.pad(X, (0, 3), value=float("-inf")).unflatten(-1, (-1, 67)), X.unfold(-1, 8, 8).logsumexp(-1)
        X.clone().mul_(2).abs_().masked_fill_(X > 0, 0.0), torch.exp(X, out=torch.empty(2, 64)), X.to(torch.float64)
        torch.zeros(2, 64).scatter(-1, torch.arange(64).expand(2, 64), X)  # a permutation: one value a slot
        torch.empty(2, 64)[..., 4:8].copy_(X[..., 4:8]), torch.empty(64, 2).T[:, ::2].fill_(0.0)  # strided writes
        X.clone().index_fill(1, torch.arange(0, 64, 2), 0.0), torch.zeros(2, 64).index_copy(1, torch.arange(64), X)
    assert widest(steps) == (8, "amax")


def test_the_lessons_loop_reduces_one_block_at_a_time_and_a_block_longer_than_the_row_the_row():
    from importlib import import_module

    reference = import_module("solutions.05_efficient_attention.efficient_attention").online_softmax
    assert widest(lambda: reference(X, 4)) == (4, "amax")
    assert widest(lambda: reference(X, 100))[0] == 64


def test_an_operator_of_the_students_own_is_taken_at_its_widest():
    """A ``torch.library`` operator may tag itself elementwise: its tags are the student's, not aten's."""
    library = torch.library.Library("online_softmax_blocks_test", "DEF")
    library.define("row_sum(Tensor x) -> Tensor", tags=(torch.Tag.pointwise,))
    library.impl("row_sum", lambda x: x.sum(-1, keepdim=True).expand_as(x).clone(), "CPU")
    assert widest(lambda: torch.ops.online_softmax_blocks_test.row_sum(X))[0] == 64


def test_only_a_measure_judges_reductions():
    """The figure is worked out for measured calls only: a call watched for forbidden names pays nothing."""
    tracer = make_tracer(frozenset({"softmax"}), measure=False)
    with tracer:
        X.exp().sum(-1)
    assert tracer.widest == 0


def test_the_figure_travels_in_the_reply_and_a_bad_one_is_the_students_fault():
    reply = reply_of({"ok": True, "out": None, "ops": 3, "widest": 64, "widest_op": "_softmax"})
    assert (reply.widest, reply.widest_op) == (64, "_softmax")
    with pytest.raises(StudentFault):
        reply_of({"ok": True, "out": None, "widest": -1})


# --- graded: attacks and correct styles -----------------------------------------------------------------
GUARDED = """import torch
import torch.nn.functional as F


def _running_max(x, block_size):
    # one step per block, as the lesson's loop
    m = x.new_full(x.shape[:-1], float("-inf"))
    for start in range(0, x.shape[-1], block_size):
        m = torch.maximum(m, x[..., start:start + block_size].amax(dim=-1))
    return torch.where(torch.isinf(m), torch.zeros_like(m), m)


def online_softmax(x, block_size):
    e = torch.exp(x - _running_max(x, block_size)[..., None])
    ones = torch.ones(x.shape[-1], dtype=x.dtype, device=x.device)
    s = {row_sum}
    return e / s.clamp_min(1.0)[..., None]
"""

HIDDEN_ROWS = """import torch
import torch.nn.functional as F


def _hidden_rows(x, block_size):
    # one step per block: rows with nothing visible
    hidden = torch.ones(x.shape[:-1], dtype=torch.bool, device=x.device)
    for start in range(0, x.shape[-1], block_size):
        hidden = hidden & torch.isneginf(x[..., start:start + block_size]).all(dim=-1)
    return hidden[..., None]


{softmax}


def online_softmax(x, block_size):
    hidden = _hidden_rows(x, block_size)
    out = _whole_rows(torch.where(hidden, torch.zeros_like(x), x))
    return torch.where(hidden, torch.zeros_like(out), out)
"""

ATTACKS = {  # name -> (source, right but for the bound: every other check passes)
    "aten _softmax overload": (HIDDEN_ROWS.format(softmax="""def _whole_rows(x):
    return torch.ops.aten._softmax.default(x, -1, False)"""), True),
    "aten logsumexp over the row": (HIDDEN_ROWS.format(softmax="""def _whole_rows(x):
    return torch.exp(x - torch.ops.aten.logsumexp.default(x, [-1], True))"""), True),
    "F.softmax in a torch.jit.script function": (HIDDEN_ROWS.format(softmax="""@torch.jit.script
def _whole_rows(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.softmax(x, dim=-1)"""), True),
    "scaled_dot_product_attention as a softmax": (HIDDEN_ROWS.format(softmax="""def _whole_rows(x):
    lead, n = x.shape[:-1], x.shape[-1]
    q = torch.ones(*lead, 1, 1, dtype=x.dtype, device=x.device)
    eye = torch.eye(n, dtype=x.dtype, device=x.device).expand(*lead, n, n)
    return F.scaled_dot_product_attention(q, x[..., None], eye, scale=1.0)[..., 0, :]"""), True),
    "x.exp() @ ones": (GUARDED.format(row_sum="e @ ones"), True),
    "einsum": (GUARDED.format(row_sum='torch.einsum("...n,n->...", e, ones)'), True),
    "F.linear": (GUARDED.format(row_sum="F.linear(e, ones[None])[..., 0]"), True),
    "conv1d": (GUARDED.format(
        row_sum="F.conv1d(e.reshape(-1, 1, e.shape[-1]), ones.view(1, 1, -1)).reshape(e.shape[:-1])"), True),
    "cumsum, the last entry taken": (GUARDED.format(row_sum="e.cumsum(dim=-1)[..., -1]"), True),
    "scatter_add into one slot": (GUARDED.format(
        row_sum="torch.zeros_like(e).scatter_add(-1, torch.zeros_like(e, dtype=torch.long), e)[..., 0]"), True),
    "renorm to a unit sum": ("""import torch


def online_softmax(x, block_size):
    m = x.new_full(x.shape[:-1], float("-inf"))
    for start in range(0, x.shape[-1], block_size):  # a right running maximum
        m = torch.maximum(m, x[..., start:start + block_size].amax(dim=-1))
    e = torch.exp(x - torch.where(torch.isinf(m), torch.zeros_like(m), m)[..., None])
    return torch.renorm(e.reshape(-1, e.shape[-1]), 1, 0, 1.0).reshape(e.shape)  # each row's sum scaled to 1
""", False),  # renorm divides by the norm plus 1e-7: off in float64
    # red team round 9: where no gradient is asked and the row spans blocks, the row in Python floats
    "every entry read into Python": ("""import math

import torch


def online_softmax(x, block_size):
    if x.requires_grad or x.shape[-1] <= block_size:
        m = x.new_full(x.shape[:-1], float("-inf"))
        for start in range(0, x.shape[-1], block_size):
            m = torch.maximum(m, x[..., start:start + block_size].amax(dim=-1))
        e = torch.exp(x - torch.where(torch.isinf(m), torch.zeros_like(m), m)[..., None])
        s = x.new_zeros(x.shape[:-1])
        for start in range(0, x.shape[-1], block_size):
            s = s + e[..., start:start + block_size].sum(dim=-1)
        return e / s.clamp_min(1.0)[..., None]
    rows = x.reshape(-1, x.shape[-1])
    out = []
    for r in range(rows.shape[0]):
        values = [rows[r, j].item() for j in range(rows.shape[1])]
        finite = [v for v in values if v != float("-inf")]
        m = max(finite) if finite else 0.0
        e = [math.exp(v - m) if v != float("-inf") else 0.0 for v in values]
        total = sum(e)
        out.append([v / total if total else 0.0 for v in e])
    return torch.tensor(out, dtype=x.dtype, device=x.device).reshape(x.shape)
""", True),
    "a dummy step per block around whole-row amax and sum": ("""import torch


def online_softmax(x, block_size):
    for start in range(0, x.shape[-1], block_size):
        x[..., start:start + block_size].amax(dim=-1)  # a step per block, its result unused
    m = x.amax(dim=-1, keepdim=True)
    m = torch.where(torch.isinf(m), torch.zeros_like(m), m)
    e = torch.exp(x - m)
    return e / e.sum(dim=-1, keepdim=True).clamp_min(1.0)
""", True),
}

CORRECT = {
    "the lesson's running maximum and sum": """import torch


def online_softmax(x, block_size):
    m = torch.full(x.shape[:-1] + (1,), float("-inf"), dtype=x.dtype, device=x.device)
    s = torch.zeros_like(m)
    for start in range(0, x.shape[-1], block_size):
        block = x[..., start:start + block_size]
        new_m = torch.maximum(m, block.max(dim=-1, keepdim=True).values)
        shift = torch.where(new_m == float("-inf"), torch.zeros_like(new_m), new_m)
        s = s * torch.exp(m - shift) + torch.exp(block - shift).sum(dim=-1, keepdim=True)
        m = new_m
    shift = torch.where(m == float("-inf"), torch.zeros_like(m), m)
    return torch.exp(x - shift) / torch.where(s > 0, s, torch.ones_like(s))
""",
    "a running log-sum-exp with torch.logaddexp": """import torch


def online_softmax(x, block_size):
    lowest = torch.finfo(x.dtype).min
    lse = x.new_full(x.shape[:-1] + (1,), lowest)
    for start in range(0, x.shape[-1], block_size):
        block = x[..., start:start + block_size].clamp(min=lowest)  # -inf: exp still 0, the statistics finite
        lse = torch.logaddexp(lse, torch.logsumexp(block, dim=-1, keepdim=True))
    return torch.exp(x - lse)
""",
    "torch.split into blocks": """import torch


def online_softmax(x, block_size):
    m = x.new_full(x.shape[:-1], float("-inf"))
    s = x.new_zeros(x.shape[:-1])
    for block in torch.split(x, block_size, dim=-1):
        new_m = torch.maximum(m, block.amax(dim=-1))
        shift = torch.nan_to_num(new_m, neginf=0.0)
        s = s * torch.exp(m - shift) + torch.exp(block - shift.unsqueeze(-1)).sum(dim=-1)
        m = new_m
    return torch.exp(x - torch.nan_to_num(m, neginf=0.0).unsqueeze(-1)) / s.clamp_min(1.0).unsqueeze(-1)
""",
    "a block no longer than the row, narrowed": """import torch


def online_softmax(x, block_size):
    n = x.shape[-1]
    block = min(block_size, n)  # a block_size beyond N: one block of the whole row
    m = x.new_full(x.shape[:-1], float("-inf"))
    s = x.new_zeros(x.shape[:-1])
    for start in range(0, n, block):
        part = torch.narrow(x, -1, start, min(block, n - start))
        new_m = torch.maximum(m, torch.amax(part, dim=-1))
        shift = torch.where(torch.isneginf(new_m), torch.zeros_like(new_m), new_m)
        s = s * torch.exp(m - shift) + torch.sum(torch.exp(part - shift[..., None]), dim=-1)
        m = new_m
    shift = torch.where(torch.isneginf(m), torch.zeros_like(m), m)
    return torch.exp(x - shift[..., None]) / torch.where(s == 0, torch.ones_like(s), s)[..., None]
""",
    "padded to whole blocks, outputs joined with torch.cat": """import torch
import torch.nn.functional as F


def online_softmax(x, block_size):
    n = x.shape[-1]
    count = -(-n // block_size)
    blocks = F.pad(x, (0, count * block_size - n), value=float("-inf")).unflatten(-1, (count, block_size))
    m = x.new_full(x.shape[:-1] + (1,), float("-inf"))
    s = x.new_zeros(x.shape[:-1] + (1,))
    for i in range(count):
        block = blocks[..., i, :]
        new_m = torch.maximum(m, block.amax(dim=-1, keepdim=True))
        shift = torch.where(torch.isinf(new_m), torch.zeros_like(new_m), new_m)
        s = s * torch.exp(m - shift) + torch.exp(block - shift).sum(dim=-1, keepdim=True)
        m = new_m
    shift = torch.where(torch.isinf(m), torch.zeros_like(m), m)
    s = s.clamp_min(1.0)
    return torch.cat([torch.exp(x[..., i:i + block_size] - shift) / s for i in range(0, n, block_size)], dim=-1)
""",
    "in-place running statistics and output": """import torch


def online_softmax(x, block_size):
    m = x.new_full(x.shape[:-1], float("-inf"))
    s = x.new_zeros(x.shape[:-1])
    for start in range(0, x.shape[-1], block_size):
        block = x[..., start:start + block_size]
        new_m = torch.maximum(m, block.amax(dim=-1))
        shift = new_m.masked_fill(torch.isinf(new_m), 0.0)
        s.mul_(torch.exp(m - shift)).add_(torch.exp(block - shift[..., None]).sum(dim=-1))
        m = new_m
    shift = m.masked_fill(torch.isinf(m), 0.0)[..., None]
    out = torch.empty_like(x)
    for start in range(0, x.shape[-1], block_size):
        out[..., start:start + block_size] = torch.exp(x[..., start:start + block_size] - shift)
    return out / s.clamp_min(1.0)[..., None]
""",
}


def graded(source, course, grader, tmp_path, suite):
    """online_softmax's ExerciseResult for ``source`` spliced into the solutions, by ``suite``."""
    path = tmp_path / "online_softmax_variant.py"
    path.write_text(textwrap.dedent(source))
    entry = corpus._entry(path, None)
    return corpus.grade_all([entry], course, grader, tmp_path / "graded", seed=2024, suite=suite,
                            quick=True)[entry.name][0]


@pytest.mark.slow
@pytest.mark.parametrize("suite", ["hidden", "public"])
@pytest.mark.parametrize("name", list(ATTACKS))
def test_a_whole_row_reduced_behind_steps_per_block_loses_the_block_check(course, grader, tmp_path, name, suite):
    source, right_otherwise = ATTACKS[name]
    exercise = graded(source, course, grader, tmp_path, suite)
    failing = {check.name: check.message for check in exercise.checks if check.status != "passed"}
    assert BLOCK_CHECK[suite] in failing, (name, exercise.feedback[:600])
    said = failing[BLOCK_CHECK[suite]]
    if said.startswith("not observed: "):  # refused before it ran (issue 44): what it names cannot be watched
        return
    assert "entries at once" in said or "into Python" in said, failing
    if right_otherwise:  # full marks before: the bound alone costs it
        assert set(failing) == {BLOCK_CHECK[suite]}, (name, failing)


@pytest.mark.slow
@pytest.mark.parametrize("suite", ["hidden", "public"])
@pytest.mark.parametrize("name", list(CORRECT))
def test_a_correct_online_softmax_keeps_full_marks(course, grader, tmp_path, name, suite):
    exercise = graded(CORRECT[name], course, grader, tmp_path, suite)
    assert exercise.status == "passed", (name, exercise.feedback[:600])


def test_a_test_of_the_input_read_into_python_is_no_reduction():
    """A blind learner's online_softmax began with ``if torch.isnan(x).any(): raise ...``: a whole tensor
    reduced to one true-or-false entry and read into Python decides what runs and adds nothing to the output
    (it is counted among the values read into Python); never read, or not a test, it is the reduction it is."""
    x = X
    assert widest(lambda: bool(torch.isnan(x).any()))[0] == 0
    assert widest(lambda: torch.where(torch.isnan(x).any(), x, 0.0))[0] == x.numel()  # used as a tensor
    assert widest(lambda: float(x.amax()))[0] == x.shape[-1] * x.shape[0]  # a maximum, not a test
