"""Feedback you can see: a wrong exercise's output drawn beside the right one, on the lesson's data.

An exercise whose output is attention weights, scores, a mask, or a context built from them is
*pictured*: after grading, for each such exercise that failed, the student's function runs once more
in its worker (the same sandbox and requests as every graded call) on its *picture cases*, calls on
the lesson's own data ("Your journey starts with one step", see suites/lesson), never a hidden case,
tried in order until one shows the output wrong: the plain call first, then the lesson's data with its
mask (02's mask, a causal one), so that a mistake that shows only once something is hidden (an inverted
mask, a fully hidden row) is drawn where it shows. A class (``CausalAttention``, ``MultiHeadAttention``)
is built with weights under which its output *is* its attention weights (one-hot values), and called in
evaluation mode. The right output comes from the reference where it is present, else from the public
recording (``grade release --out`` records every picture case beside the public suites' uses, under
``picture:<assignment>:<exercise>``, the later cases numbered ``...:<exercise>:1``). Where the two differ
beyond the float32 tolerance, the exercise's result carries a small figure (``ExerciseResult.figure``,
at most 16 x 16 entries, numbers rounded, NaN and infinities as strings): a notebook's ``check()``
shows it, ``grade check --figures DIR`` writes it as PNG files, and the class report draws one per
misconception. A right answer on every case, a call that raises or times out, an output of another
shape, or a class whose parameters are not the contract's draws nothing. Grading that finds nothing
wrong does no extra work.

Drawing is here too: :func:`png` (matplotlib, Agg) and :func:`svg` (hand-made, for the HTML report,
each cell's number in ``data-value``).
"""
from __future__ import annotations

import importlib.util
import math
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Callable

LIMIT = 16  # rows and columns of a figure at most
DIGITS = 4  # decimals kept of each number
PICTURED_STATUSES = ("failed", "error")  # a wrong output, or a raise on some other case


@dataclass(frozen=True)
class Case:
    """One picture case of a pictured exercise: its call on the lesson's data, and how its output is drawn.
    ``also``: further cases, tried in order where the student's output is right on this one (the lesson's
    data with its mask, where the code is wrong only once something is hidden). A class's case
    (``module``) builds the class with these constructor arguments, loads ``weights`` by parameter name,
    and calls ``forward(*inputs)`` in evaluation mode."""

    title: str  # the call, as the student reads it: the lesson notebook's own names
    inputs: Callable  # lesson package -> the call's positional arguments
    rows: Callable  # lesson -> row labels
    cols: Callable  # lesson -> column labels
    kind: str = "weights"  # weights, scores, mask or values: how it is coloured
    view: Callable = None  # the output -> the 2-D matrix drawn (None: the output itself)
    kwargs: Callable = None  # lesson -> the call's keyword arguments (None: none)
    module: tuple = None  # a class's case: (constructor args, constructor kwargs)
    weights: Callable = None  # lesson -> {parameter name: tensor}, every parameter of the class
    also: tuple = ()  # the cases tried next, in order, while this one shows nothing wrong

    def each(self):
        """This case, then those tried after it."""
        yield self
        for case in self.also:
            yield from case.each()


def _words(lesson):
    return list(lesson.JOURNEY_WORDS)


def _weights_of(lesson):  # the lesson's projections (02 section 1: W_query, W_key, W_value; suites/public/test_02)
    import torch

    generator = torch.Generator().manual_seed(123)
    w_query, w_key, w_value = (torch.rand(3, 2, generator=generator) for _ in range(3))
    x = lesson.journey()
    return x @ w_query, x @ w_key, x @ w_value


def _lesson_mask(lesson):
    """02 section 2's mask (True = hidden): the keys "one" and "step" hidden from every query, and every key
    from the query "step" (a row with nothing visible, whose weights are all zero)."""
    import torch

    mask = torch.zeros(6, 6, dtype=torch.bool)  # [6, 6]
    mask[:, 4:] = True
    mask[5, :] = True
    return mask


def _causal(lesson):
    import torch

    return torch.ones(6, 6, dtype=torch.bool).triu(1)  # [6, 6], True above the diagonal: the future


def _softmaxed(scores):
    return scores.softmax(-1)  # the input of renormalize_causal_weights: weights whose rows sum to 1


# A class's picture: the output shows the attention weights. Each token is its 3 features followed by a
# one-hot of its position ([1, 6, 9]); queries and keys read the features through the lesson's projections
# (02 section 1, doubled so that the weights are not all alike), each head's values are the one-hot part,
# and out_proj is the identity, so row i of the output is query i's weights over the six keys, head by head.
_SHOWN_TOKENS, _SHARPER = 6, 2.0


def _shown_inputs(lesson):
    import torch

    return (torch.cat((lesson.journey(), torch.eye(_SHOWN_TOKENS)), dim=-1)[None],)  # [1, 6, 3 + 6]


def _shown_weights(num_heads: int, out_proj: bool):
    def weights(lesson):
        import torch

        generator = torch.Generator().manual_seed(123)
        w_query, w_key = (torch.rand(3, 2, generator=generator) for _ in range(2))  # [3, 2] each
        d_out = _SHOWN_TOKENS * num_heads
        query, key, value = (torch.zeros(d_out, 3 + _SHOWN_TOKENS) for _ in range(3))  # nn.Linear's [out, in]
        for h in range(num_heads):
            sign = 1.0 if h % 2 == 0 else -1.0  # head 1 prefers the keys head 0 likes least
            start = h * _SHOWN_TOKENS
            query[start:start + 2, :3] = sign * _SHARPER * w_query.T
            key[start:start + 2, :3] = _SHARPER * w_key.T
            value[start:start + _SHOWN_TOKENS, 3:] = torch.eye(_SHOWN_TOKENS)
        found = {"W_query.weight": query, "W_key.weight": key, "W_value.weight": value}
        if out_proj:
            found.update({"out_proj.weight": torch.eye(d_out), "out_proj.bias": torch.zeros(d_out)})
        return found

    return weights


_FEATURES = lambda n: (lambda lesson: [f"dim {i}" for i in range(n)])  # noqa: E731
_SCORES = dict(rows=_words, cols=_words, kind="scores")
_WEIGHTS = dict(rows=_words, cols=_words, kind="weights")
_MASKED = "with the lesson's mask (02 section 2: \"one\" and \"step\" hidden, and all from \"step\")"

CASES: dict[tuple[str, str], Case] = {
    ("01_attention_basics", "attention_scores_for_query"): Case(
        'attention_scores_for_query(inputs, inputs[1]): the query "journey" against each token',
        lambda lesson: (lesson.journey(), lesson.journey()[1]), lambda lesson: ["journey"], _words,
        kind="scores", view=lambda out: out.reshape(1, -1)),
    ("01_attention_basics", "attention_scores_loop"): Case(
        "attention_scores_loop(inputs): each query (row) against each key (column)",
        lambda lesson: (lesson.journey(),), **_SCORES),
    ("01_attention_basics", "attention_scores"): Case(
        "attention_scores(inputs): each query (row) against each key (column)",
        lambda lesson: (lesson.journey(),), **_SCORES),
    ("01_attention_basics", "softmax_naive"): Case(
        "softmax_naive(inputs @ inputs.T): each row's weights should sum to 1",
        lambda lesson: (lesson.journey() @ lesson.journey().T,), **_WEIGHTS),
    ("01_attention_basics", "softmax"): Case(
        "softmax(inputs @ inputs.T): each row's weights should sum to 1",
        lambda lesson: (lesson.journey() @ lesson.journey().T,), **_WEIGHTS),
    ("01_attention_basics", "simple_self_attention"): Case(
        "simple_self_attention(inputs): each token's context vector",
        lambda lesson: (lesson.journey(),), _words, _FEATURES(3), kind="values"),
    ("02_self_attention", "attention_weights"): Case(
        "attention_weights(queries, keys): each query's weights over the keys",
        lambda lesson: _weights_of(lesson)[:2], **_WEIGHTS,
        also=(Case(f"attention_weights(queries, keys, mask) {_MASKED}: each query's weights over the keys",
                   lambda lesson: _weights_of(lesson)[:2], **_WEIGHTS,
                   kwargs=lambda lesson: {"mask": _lesson_mask(lesson)}),)),
    ("02_self_attention", "scaled_dot_product_attention"): Case(
        "scaled_dot_product_attention(queries, keys, values): each token's context",
        _weights_of, _words, _FEATURES(2), kind="values",
        also=(Case(f"scaled_dot_product_attention(queries, keys, values, mask) {_MASKED}: each token's context",
                   _weights_of, _words, _FEATURES(2), kind="values",
                   kwargs=lambda lesson: {"mask": _lesson_mask(lesson)}),)),
    ("03_causal_attention", "causal_mask"): Case(
        "causal_mask(6): True (dark) where a query (row) may not see a key (column)",
        lambda lesson: (6,), _words, _words, kind="mask"),
    ("03_causal_attention", "apply_causal_mask"): Case(
        "apply_causal_mask(the sentence's scaled scores): the future set to -inf",
        lambda lesson: (lesson.journey_scores(),), **_SCORES),
    ("03_causal_attention", "renormalize_causal_weights"): Case(
        "renormalize_causal_weights(softmax of the sentence's scaled scores)",
        lambda lesson: (_softmaxed(lesson.journey_scores()),), **_WEIGHTS),
    ("03_causal_attention", "padding_mask"): Case(
        "padding_mask(lengths=[6, 4], max_len=6): True (dark) at padded positions",
        lambda lesson: (_lengths(), 6), lambda lesson: ["length 6", "length 4"], _words, kind="mask"),
    ("03_causal_attention", "causal_padding_mask"): Case(
        "causal_padding_mask(lengths=[6, 4], 6), the sequence of length 4: True (dark) where hidden",
        lambda lesson: (_lengths(), 6), _words, _words, kind="mask", view=lambda out: out[1]),
    ("03_causal_attention", "CausalAttention"): Case(
        "CausalAttention(9, 6, context_length=8, dropout=0.5) in eval mode on the sentence, each token's 3 "
        "features followed by a one-hot of its position; its values are that one-hot, so each output row is "
        "one query's attention weights",
        _shown_inputs, **_WEIGHTS, view=lambda out: out[0],
        module=((3 + _SHOWN_TOKENS, _SHOWN_TOKENS), {"context_length": 8, "dropout": 0.5}),
        weights=_shown_weights(1, out_proj=False)),
    ("04_multi_head_attention", "split_heads"): Case(
        "split_heads(inputs[None], num_heads=3): the whole sentence as a batch of one; head (row) by token "
        "(column), one feature each",
        lambda lesson: (lesson.journey()[None], 3), lambda lesson: ["head 0", "head 1", "head 2"], _words,
        kind="values", view=lambda out: out[0, :, :, 0]),
    ("04_multi_head_attention", "merge_heads"): Case(
        "merge_heads(batch[None]): the lesson's batch (two copies of the sentence) merged as two heads, token "
        "(row) by feature",
        lambda lesson: (lesson.journey_batch()[None],), _words,
        lambda lesson: [f"h{h}·{i}" for h in range(2) for i in range(3)], kind="values",
        view=lambda out: out[0]),
    ("04_multi_head_attention", "MultiHeadAttention"): Case(
        "MultiHeadAttention(9, 12, context_length=8, dropout=0.5, num_heads=2) in eval mode on the sentence, "
        "each token's 3 features followed by a one-hot of its position; each head's values are that one-hot "
        "and out_proj is the identity, so each output row is one query's weights in head 0, then head 1",
        _shown_inputs, _words, lambda lesson: [f"h{h}·{w}" for h in range(2) for w in _words(lesson)],
        view=lambda out: out[0],
        module=((3 + _SHOWN_TOKENS, 2 * _SHOWN_TOKENS), {"context_length": 8, "dropout": 0.5, "num_heads": 2}),
        weights=_shown_weights(2, out_proj=True)),
    ("05_efficient_attention", "online_softmax"): Case(
        "online_softmax(inputs @ inputs.T, block_size=2): each row's weights should sum to 1",
        lambda lesson: (lesson.journey() @ lesson.journey().T, 2), **_WEIGHTS,
        also=(Case("online_softmax(masked, block_size=2), the scores with the future set to -inf: each row's "
                   "weights over the keys it sees",
                   lambda lesson: ((lesson.journey() @ lesson.journey().T).masked_fill(_causal(lesson), float("-inf")),
                                   2), **_WEIGHTS),
              Case("online_softmax(inputs @ inputs.T with the keys \"one\" and \"step\" set to -inf, and every key "
                   "of the query \"step\", block_size=2): a row with nothing visible gets zeros",
                   lambda lesson: ((lesson.journey() @ lesson.journey().T).masked_fill(_lesson_mask(lesson),
                                                                                       float("-inf")), 2),
                   **_WEIGHTS))),
    ("05_efficient_attention", "flash_attention"): Case(
        "flash_attention(inputs, inputs, inputs, block_size=2): each token's context",
        lambda lesson: (lesson.journey(), lesson.journey(), lesson.journey()), _words, _FEATURES(3),
        kind="values", kwargs=lambda lesson: {"block_size": 2},
        also=(Case("flash_attention(inputs, inputs, inputs, block_size=2, causal=True): each token's context",
                   lambda lesson: (lesson.journey(), lesson.journey(), lesson.journey()), _words, _FEATURES(3),
                   kind="values", kwargs=lambda lesson: {"block_size": 2, "causal": True}),)),
}


def _lengths():
    import torch

    return torch.tensor([6, 4])


def lesson_data(course):
    """The course's lesson package (suites/lesson/__init__.py), loaded without touching sys.path."""
    import sys

    module = sys.modules.get("lesson")
    if module is not None and hasattr(module, "journey_batch"):
        return module
    path = course.layout.suites / "lesson" / "__init__.py"
    spec = importlib.util.spec_from_file_location("grader_lesson_data", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- the picture case, after grading ---------------------------------------------------------------
def pictures(session, outcomes, assignments, only=None) -> dict[tuple[str, str], dict]:
    """``{(assignment, exercise): figure}`` for the pictured exercises that ``outcomes`` (the plugin's
    ``(assignment, exercise, CheckOutcome)``) show wrong, each drawn on its first picture case where the
    student's output is wrong (a mask the code gets wrong, where it is right without one); while the
    public suites are being recorded (``grade release --out``), the right output of every picture case
    is recorded too. Student code runs in its worker, through the session's own requests; nothing here
    costs a grade."""
    recording = session.recording
    recording_now = recording is not None and not recording.replaying
    wrong = {(a, e) for a, e, check in outcomes
             if check.status in PICTURED_STATUSES or (check.status == "passed" and check.forgiven_by)}
    found = {}
    for assignment in assignments:
        for (aid, exercise), first in CASES.items():
            if aid != assignment.id or (only is not None and exercise not in only):
                continue
            draw = (aid, exercise) in wrong
            if not draw and not recording_now:
                continue
            for number, case in enumerate(first.each()):
                try:
                    figure = _picture(session, aid, exercise, case, draw=draw, key=_key(aid, exercise, number))
                except Exception:  # noqa: BLE001 - a figure is a courtesy: it never costs a grade
                    if session.debug:
                        raise
                    figure = None
                if figure is not None:
                    found[(aid, exercise)] = figure
                    if not recording_now:
                        break
    return found


def _key(aid: str, exercise: str, number: int) -> str:
    """A picture case's name in the public recording: the first case's as it always was, the others numbered."""
    return f"picture:{aid}:{exercise}" + (f":{number}" if number else "")


def _picture(session, aid, exercise, case, *, draw, key) -> dict | None:
    import torch

    from grader.grading.outcomes import GraderFault, StudentFault
    from grader.grading.recorded_outputs import NotReplayable, _on_cpu

    lesson = lesson_data(session.course)
    args = case.inputs(lesson)
    kwargs = case.kwargs(lesson) if case.kwargs else {}
    weights = case.weights(lesson) if case.module else None

    def compute():
        target = getattr(session.references[aid], exercise)
        with torch.no_grad():
            if case.module:
                with torch.random.fork_rng(devices=[]):  # its random initial weights, all replaced below
                    instance = target(*case.module[0], **case.module[1])
                for name, parameter in instance.named_parameters():
                    parameter.copy_(weights[name])
                target = instance.train(False)
            return _on_cpu(target(*args, **kwargs), copy=True)

    try:
        right = session.recording.event(key, compute) if session.recording else compute()
    except (NotReplayable, KeyError, AttributeError):  # an older recording, or no reference at hand
        return None
    if not draw:
        return None
    try:
        theirs = _their_output(session.student(aid), exercise, case, args, kwargs, weights)
    except (StudentFault, GraderFault):
        return None
    if theirs is None:
        return None
    tolerance = session.course.tolerance("float32")
    return figure_of(case, lesson, theirs, right, rtol=tolerance.rtol, atol=tolerance.atol)


def _their_output(student, exercise, case, args, kwargs, weights):
    """The student's output on the picture case, from its worker: a function's call, or (a class) an
    instance holding the case's weights, in evaluation mode, called once and let go. None where the
    instance's parameters are not the contract's (names, shapes): its checks say so in words."""
    from grader.grading.fixture import reply_of
    from grader.inside.protocol import HandleRef

    if not case.module:
        reply = student.request({"op": "call", "target": exercise, "args": args, "kwargs": kwargs,
                                 "grad_enabled": False})
        return reply_of(reply).out
    made = student.request({"op": "new", "name": exercise, "args": case.module[0], "kwargs": case.module[1],
                            "dtype": None, "state": True, "training": False, "params": weights})
    handle = made.get("handle")
    if not isinstance(handle, int):
        return None
    try:
        params = made.get("params") if isinstance(made.get("params"), dict) else {}
        shapes = {name: tuple(getattr(value, "shape", ())) for name, value in params.items()}
        if made.get("loaded") is not True or shapes != {name: tuple(w.shape) for name, w in weights.items()}:
            return None
        reply = student.request({"op": "call", "target": HandleRef(handle), "args": args, "kwargs": kwargs,
                                 "name": exercise, "grad_enabled": False, "seed": 0})
        return reply_of(reply).out
    finally:
        student.request({"op": "drop", "handle": handle})


def figure_of(case: Case, lesson, theirs, right, *, rtol: float, atol: float) -> dict | None:
    """The figure's data: the two matrices (cut to LIMIT x LIMIT), their labels and where they differ;
    None when the output is right, not a tensor, or not of the right one's shape."""
    import torch

    if not isinstance(theirs, torch.Tensor) or not isinstance(right, torch.Tensor) or theirs.shape != right.shape:
        return None
    try:
        view = case.view or (lambda out: out)
        mine, good = view(theirs.detach().cpu()), view(right.detach().cpu())
    except (IndexError, RuntimeError):
        return None
    if mine.dim() != 2 or mine.shape != good.shape:
        return None
    mine, good = mine.to(torch.float64), good.to(torch.float64)
    close = (mine - good).abs() <= atol + rtol * good.abs()
    same = close | (mine == good) | (mine.isnan() & good.isnan())  # == holds equal infinities
    if bool(same.all()):
        return None
    rows, cols = list(case.rows(lesson)), list(case.cols(lesson))
    n, m = min(mine.shape[0], LIMIT), min(mine.shape[1], LIMIT)
    return {"title": case.title, "kind": case.kind,
            "row_labels": [str(r) for r in rows[:n]], "col_labels": [str(c) for c in cols[:m]],
            "theirs": _cells(mine[:n, :m]), "right": _cells(good[:n, :m]),
            "differs": [[int(not v) for v in row] for row in same[:n, :m].tolist()]}


def _cells(matrix) -> list[list]:
    return [[number(v) for v in row] for row in matrix.tolist()]


def number(value: float):
    """A number JSON holds: rounded to DIGITS decimals, or "nan", "inf", "-inf"."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    rounded = round(value, DIGITS)
    return int(rounded) if rounded.is_integer() and abs(rounded) < 1e15 else rounded


def valid_figure(figure) -> bool:
    """Whether ``figure`` (read from a result file) is one :func:`figure_of` makes: labels of strings, and
    three matrices of their size, at most LIMIT x LIMIT, of numbers or "nan", "inf", "-inf"."""
    if not isinstance(figure, dict) or not isinstance(figure.get("title"), str):
        return False
    rows, cols = figure.get("row_labels"), figure.get("col_labels")
    if not (isinstance(rows, list) and isinstance(cols, list) and 0 < len(rows) <= LIMIT and 0 < len(cols) <= LIMIT
            and all(isinstance(label, str) for label in rows + cols)):
        return False

    def cell(value):  # a finite number of any size, or "nan", "inf", "-inf" as figure_of writes them
        if value in ("nan", "inf", "-inf"):
            return True
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return False
        try:
            return math.isfinite(float(value))  # an integer past float's range is no value a figure holds
        except OverflowError:
            return False

    return all(isinstance(figure.get(key), list) and len(figure[key]) == len(rows)
               and all(isinstance(row, list) and len(row) == len(cols) and all(map(cell, row)) for row in figure[key])
               for key in ("theirs", "right", "differs"))


def value_of(cell) -> float:
    return float(cell)  # float("nan"), float("-inf") read the strings back


# --- drawing ----------------------------------------------------------------------------------------
PANELS = (("theirs", "yours"), ("right", "right"))


def _scale(figure):
    finite = [value_of(c) for key, _ in PANELS for row in figure[key] for c in row if math.isfinite(value_of(c))]
    low, high = (min(finite), max(finite)) if finite else (0.0, 1.0)
    if figure.get("kind", "values") == "mask":
        low, high = 0.0, 1.0
    elif figure.get("kind", "values") == "weights":
        low = min(low, 0.0)  # weights from 0; to their largest, so that small differences still show
    return low, (high if high > low else low + 1.0)  # at 1e308, low + 1.0 is low: _fraction takes that


def _fraction(value: float, low: float, high: float) -> float | None:
    """Where ``value`` lies on the colour scale from ``low`` (0) to ``high`` (1), clamped; None where it
    is not finite (drawn grey, off the scale). Every term is halved first, so that no difference of two
    finite floats overflows (1.7e308 - -1.7e308 is infinite; 0.85e308 + 0.85e308 is not)."""
    if not math.isfinite(value):
        return None
    span = high / 2 - low / 2
    if not span > 0:  # one value only, too large for low + 1.0 to differ from it
        return 0.0
    return min(max((value / 2 - low / 2) / span, 0.0), 1.0)


def non_finite_note(figure: dict) -> str:
    """A sentence saying how many entries of the two matrices are not finite (NaN, infinities), which
    are drawn grey and left off the colour scale; "" where all are finite."""
    left_out = sum(not math.isfinite(value_of(c)) for key, _ in PANELS for row in figure[key] for c in row)
    if not left_out:
        return ""
    return (f"{left_out} {'entry is' if left_out == 1 else 'entries are'} not finite (NaN or infinite): "
            f"drawn grey, left off the colour scale.")


def png(figure: dict) -> bytes:
    """The figure as PNG bytes: yours and the right one side by side on one colour scale, entries that
    differ outlined in red, and a third panel marking where they differ."""
    import io

    import matplotlib

    matplotlib.use("Agg", force=False)
    import numpy
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    rows, cols = figure["row_labels"], figure["col_labels"]
    n, m = len(rows), len(cols)
    low, high = _scale(figure)
    cmap = matplotlib.colormaps["Greys" if figure.get("kind", "values") == "mask" else "Blues"].with_extremes(
        bad="#d9d9d9")
    cell = 0.5 if max(n, m) <= 8 else 0.3
    width = 3 * (m * cell + 1.4)
    title = _wrapped(figure["title"], width)
    fig = Figure(figsize=(width, n * cell + 1.6 + 0.17 * title.count("\n")), dpi=100, layout="constrained")
    axes = fig.subplots(1, 3)
    differs = numpy.array(figure["differs"], dtype=bool)
    for axis, (key, name) in zip(axes, (*PANELS, ("differs", "where they differ"))):
        if key == "differs":
            axis.imshow(differs, cmap=matplotlib.colors.ListedColormap(["#ffffff", "#d62728"]), vmin=0, vmax=1)
        else:
            values = [[value_of(c) for c in row] for row in figure[key]]
            # placed on the scale here, not by matplotlib, whose normalising overflows at 1e308
            placed = numpy.array([[_fraction(v, low, high) for v in row] for row in values], dtype=float)
            axis.imshow(numpy.ma.masked_invalid(placed), cmap=cmap, vmin=0.0, vmax=1.0)
            if max(n, m) <= 8:
                for i in range(n):
                    for j in range(m):
                        axis.text(j, i, _short(figure[key][i][j]), ha="center", va="center", fontsize=7,
                                  color="white" if _dark(values[i][j], low, high) else "black")
            if key == "theirs":
                for i, j in zip(*numpy.nonzero(differs)):
                    axis.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="#d62728", linewidth=2))
        axis.set_title(name, fontsize=10)
        axis.set_xticks(range(m), cols, rotation=45, ha="right", fontsize=8)
        axis.set_yticks(range(n), rows if key == "theirs" else [""] * n, fontsize=8)
    fig.suptitle(title, fontsize=9)
    if note := non_finite_note(figure):
        fig.supxlabel(note, fontsize=8)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def _wrapped(title: str, inches: float) -> str:
    """The title in lines that fit a figure ``inches`` wide at 9 points (about 15 characters an inch)."""
    import textwrap

    return "\n".join(textwrap.wrap(title, width=max(40, int(inches * 15)))) or title


def _dark(value, low, high) -> bool:
    return (_fraction(value, low, high) or 0.0) > 0.6


def _short(cell) -> str:
    """A cell's number as written in it: two decimals, or three digits and a power of ten where two
    decimals would not fit a cell (1.7e+308, 1.23e-05)."""
    value = value_of(cell)
    if not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("∞" if value > 0 else "−∞")
    if isinstance(cell, float) or abs(value) >= 1e6:
        return f"{value:.3g}" if value and not 1e-2 <= abs(value) < 1e6 else f"{value:.2f}"
    return str(cell)


def _colour(value: float, low: float, high: float, kind: str) -> str:
    t = _fraction(value, low, high)
    if t is None:
        return "#d9d9d9"
    end = (37, 37, 37) if kind == "mask" else (8, 69, 148)
    return "#" + "".join(f"{round(255 + (e - 255) * t):02x}" for e in end)


def svg(figure: dict, ident: str, caption: str = "") -> str:
    """The figure as an inline SVG, for the HTML report: three grids (yours, right, where they differ)
    with the row and column labels; each cell a ``rect.cell`` with ``data-panel``, ``data-row``,
    ``data-col`` and ``data-value`` (the JSON's number or string), and its number in its title."""
    rows, cols = figure["row_labels"], figure["col_labels"]
    n, m = len(rows), len(cols)
    low, high = _scale(figure)
    numbers = max(n, m) <= 8  # each cell's number written in it, where there is room
    size = 40 if numbers else 26
    left = 9 * max((len(r) for r in rows), default=1) + 12
    top = 40
    width_grid = m * size
    step = width_grid + 40
    shapes = []
    for p, (key, name) in enumerate((*PANELS, ("differs", "where they differ"))):
        x0 = left + p * step
        shapes.append(f"<text class=\"panel\" x=\"{x0}\" y=\"{top - 24}\">{escape(name)}</text>")
        for i in range(n):
            for j in range(m):
                cell = figure[key][i][j]
                if key == "differs":
                    fill = "#d62728" if cell else "#ffffff"
                else:
                    fill = _colour(value_of(cell), low, high, figure.get("kind", "values"))
                edge = "#d62728\" stroke-width=\"2" if key == "theirs" and figure["differs"][i][j] else "#bbbbbb"
                shapes.append(f"<rect class=\"cell\" data-panel=\"{key}\" data-row=\"{i}\" data-col=\"{j}\" "
                              f"data-value=\"{escape(str(cell), quote=True)}\" x=\"{x0 + j * size}\" "
                              f"y=\"{top + i * size}\" width=\"{size}\" height=\"{size}\" fill=\"{fill}\" "
                              f"stroke=\"{edge}\"><title>{escape(name)}: {escape(rows[i])} × {escape(cols[j])} = "
                              f"{escape(str(cell))}</title></rect>")
                if numbers and key != "differs":
                    ink = "#ffffff" if _dark(value_of(cell), low, high) else "#1a1a1a"
                    shapes.append(f"<text class=\"num\" x=\"{x0 + j * size + size / 2:.0f}\" y=\"{top + i * size + 24}\" "
                                  f"text-anchor=\"middle\" style=\"font-size:11px;fill:{ink}\">"
                                  f"{escape(_short(cell))}</text>")
        for j, label in enumerate(cols):
            x, y = x0 + j * size + size / 2, top + n * size + 6
            shapes.append(f"<text class=\"col\" x=\"{x:.0f}\" y=\"{y}\" transform=\"rotate(45 {x:.0f} {y})\">"
                          f"{escape(label)}</text>")
    for i, label in enumerate(rows):
        shapes.append(f"<text class=\"row\" x=\"{left - 6}\" y=\"{top + i * size + size / 2 + 5:.0f}\" "
                      f"text-anchor=\"end\">"
                      f"{escape(label)}</text>")
    longest = 7 * max((len(c) for c in cols), default=1)
    width, height = left + 3 * step, top + n * size + longest + 16
    key = escape(ident, quote=True)
    note = non_finite_note(figure)
    description = (f"{caption} Yours beside the right one on the lesson's data; the entries that differ are "
                   f"outlined in red and marked in the third grid. {note}").strip()
    return (f"<figure class=\"attention-figure\"><svg id=\"{key}\" class=\"heatmap\" role=\"img\" "
            f"aria-labelledby=\"{key}-t {key}-d\" width=\"{width}\" height=\"{height}\" "
            f"viewBox=\"0 0 {width} {height}\" xmlns=\"http://www.w3.org/2000/svg\">"
            f"<title id=\"{key}-t\">{escape(figure['title'])}</title><desc id=\"{key}-d\">{escape(description)}</desc>"
            f"{''.join(shapes)}</svg><figcaption class=\"muted\">{escape(figure['title'])}"
            f"{(' — ' + escape(caption)) if caption else ''}{(' ' + escape(note)) if note else ''}</figcaption>"
            f"</figure>")


# --- where figures go -------------------------------------------------------------------------------
def write_pngs(result, folder: Path) -> list[Path]:
    """One PNG per pictured exercise of ``result`` (a SubmissionResult) that has a figure, in ``folder``
    as ``<assignment>-<exercise>.png``; the paths written. A pictured exercise graded right now loses
    the PNG an earlier run wrote for it."""
    written = []
    for assignment in result.assignments:
        for exercise in assignment.exercises:
            path = folder / f"{assignment.id}-{exercise.name}.png"
            if exercise.figure and exercise.status != "passed":
                folder.mkdir(parents=True, exist_ok=True)
                path.write_bytes(png(exercise.figure))
                written.append(path)
            elif (assignment.id, exercise.name) in CASES:
                path.unlink(missing_ok=True)
    return written


def show(figure: dict | None) -> None:
    """Display the figure in a notebook (an ``image/png`` output), if there is one."""
    if not figure:
        return
    from IPython.display import Image, display

    display(Image(data=png(figure), format="png"))
