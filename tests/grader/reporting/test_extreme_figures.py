"""Issue 44: a figure of any values draws, in the class report and as a PNG, and never fails the report.

Finite values of any magnitude (±1.7e308) are on the colour scale; NaN and the infinities (as the
grader writes them, "nan"/"inf"/"-inf") are drawn grey, off the scale, and a note says how many there
are. A figure no grader writes (JSON's NaN or Infinity, an integer past float's range) is left out of
the page, which is still written.
"""
import warnings

import pytest
from test_class_report import _course  # a course folder holding a results folder, as autograde leaves it

from grader.reporting.figures import non_finite_note, png, svg, valid_figure

HUGE = 1.7e308


def _figure(theirs, right):
    n, m = len(theirs), len(theirs[0])
    return {"title": "attention_weights(journey @ W_query, journey @ W_key)", "kind": "weights",
            "row_labels": [f"r{i}" for i in range(n)], "col_labels": [f"c{j}" for j in range(m)],
            "theirs": theirs, "right": right, "differs": [[1] * m for _ in range(n)]}


FIGURES = {
    "huge": _figure([[HUGE, -HUGE], [0.5, 1]], [[0.1, 0.9], [0.2, 0.8]]),
    "strings": _figure([[HUGE, "nan"], ["inf", "-inf"]], [[-HUGE, 0.9], [0.2, 0.8]]),
    "all-non-finite": _figure([["nan", "inf"], ["-inf", "nan"]], [["nan", "nan"], ["inf", "-inf"]]),
    "one-huge-value": _figure([[HUGE, HUGE]], [[HUGE, HUGE]]),
}


@pytest.mark.parametrize("kind", ["weights", "values", "scores", "mask"])
@pytest.mark.parametrize("name", sorted(FIGURES))
def test_png_and_svg_draw_any_values_without_overflow(name, kind):
    figure = {**FIGURES[name], "kind": kind}
    assert valid_figure(figure)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow in a subtraction, no NaN cast to an integer
        drawn = svg(figure, "f")
        picture = png(figure)
    assert picture.startswith(b"\x89PNG")
    assert "e+308" in drawn or name == "all-non-finite"
    assert len(max(drawn.split("<"), key=len)) < 2000  # no number written out in 309 digits
    if name in ("strings", "all-non-finite"):
        assert non_finite_note(figure) and non_finite_note(figure) in drawn.replace("&#x27;", "'")
    else:
        assert non_finite_note(figure) == ""


NOT_WRITTEN = {"literals": _figure([[float("nan"), float("inf")], [-float("inf"), -HUGE]], [[0.1, HUGE], [0.2, 0.8]]),
               "past-float": _figure([[10 ** 400, 1]], [[0.5, 1]])}


def test_a_figure_no_grader_writes_is_no_figure_and_raises_nothing():
    assert not any(map(valid_figure, NOT_WRITTEN.values()))


def _result(name: str, figure: dict, misconception: str) -> dict:
    exercise = {"name": "attention_weights", "score": 5, "max_score": 20, "status": "failed",
                "misconceptions": [misconception], "feedback": "wrong", "figure": figure}
    return {"schema": 1, "submission": name, "seed": 1, "device": "cpu", "score": 5, "max_score": 20,
            "duration_s": 1.0, "assignments": [{"id": "02_self_attention", "score": 5, "max_score": 20,
                                                "exercises": [exercise]}]}


@pytest.mark.parametrize("anonymise", [False, True])
def test_grade_report_html_of_a_class_whose_figures_hold_extreme_values(tmp_path, capsys, anonymise):
    """The attacker's figure of ±1.7e308 failed the whole class's page (plain and --anonymise)."""
    from grader.api import report
    from grader.config import load_course

    ids = ["softmax-wrong-dim", "missing-scale", "wrong-scale", "scores-transposed"]
    results = [_result(f"s{index}", figure, ids[index]) for index, figure in enumerate(FIGURES.values())]
    results += [_result(f"t{index}", figure, "values-not-used") for index, figure in enumerate(NOT_WRITTEN.values())]
    root = _course(tmp_path / "course", results)
    out = tmp_path / "report.html"
    assert report(course=load_course(root), result_dirs=(root / "grades",), out=out, fmt="html",
                  anonymise=anonymise) == 0
    page = out.read_text()
    for ident in ids:
        assert f'<svg id="figure-{ident}"' in page
    assert "not finite (NaN or infinite)" in page and "e+308" in page
    assert 'id="figure-values-not-used"' not in page and "values-not-used" in page  # left out, named still
