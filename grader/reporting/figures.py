"""A figure drawn: a wrong exercise's output beside the right one (grader/grading/pictures.py makes the
figure, ``ExerciseResult.figure``), checked as it is read back from a result file (:func:`valid_figure`),
drawn as PNG (:func:`png`, matplotlib's Agg) for ``grade check --figures`` and a notebook's ``check()``,
and as SVG (:func:`svg`, hand-made, each cell's number in ``data-value``) for the class report."""
from __future__ import annotations

import math
import os
from html import escape
from pathlib import Path

from grader.results import FIGURE_LIMIT as LIMIT


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
def write_pngs(result, folder: Path, pictured=()) -> list[Path]:
    """One PNG per pictured exercise of ``result`` (a SubmissionResult) that has a figure, in ``folder``
    as ``<assignment>-<exercise>.png``; the paths written. A pictured exercise (``pictured``: the
    course's ``(assignment, exercise)`` pairs) graded right now loses the PNG an earlier run wrote for it."""
    from grader.reporting.result_folder import output_folder, write_output

    written, checked = [], None
    for assignment in result.assignments:
        for exercise in assignment.exercises:
            path = folder / f"{assignment.id}-{exercise.name}.png"
            if exercise.figure and exercise.status != "passed":
                # (a folder another user could write or link elsewhere refused, as every file written: round 32)
                checked = checked or output_folder(folder, "--figures")
                write_output(checked / path.name, png(exercise.figure), "--figures", ancestors=False)
                written.append(path)
            elif (assignment.id, exercise.name) in pictured and os.path.lexists(folder):
                # (removed only from a folder of the grader's: a link to another's folder, or a folder another user
                # can write, is refused before anything in it is removed)
                checked = checked or output_folder(folder, "--figures")
                (checked / path.name).unlink(missing_ok=True)
    return written


def show(figure: dict | None) -> None:
    """Display the figure in a notebook (an ``image/png`` output), if there is one."""
    if not figure:
        return
    from IPython.display import Image, display

    display(Image(data=png(figure), format="png"))
