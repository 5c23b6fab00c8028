"""Feedback you can see (issue 36): a wrong pictured exercise's output drawn beside the right one, on
the lesson's data, in the result (and so in check(), grade check --figures and the class report)."""
import io
import json
import re
import shutil
from html import escape
from pathlib import Path

import pytest
import torch

from grader.grading import pictures
from grader.grading.pictures import course_pictures, figure_of
from grader.reporting.figures import png, svg, valid_figure

ROOT = Path(__file__).resolve().parents[3]
WORDS = ["Your", "journey", "starts", "with", "one", "step"]

# the three mistakes the issue names: (assignment, module, right text, wrong text, exercise, misconception)
MUTANTS = (
    ("02_self_attention", "self_attention.py", "torch.softmax(scores, dim=-1)", "torch.softmax(scores, dim=-2)",
     "attention_weights", "softmax-wrong-dim"),
    ("03_causal_attention", "causal_attention.py", "torch.triu(ones, diagonal=1)", "torch.tril(ones, diagonal=-1)",
     "causal_mask", "mask-inverted"),
    ("04_multi_head_attention", "multi_head_attention.py",
     "    x = x.transpose(1, 2)  # [B, T, H, hd], no longer contiguous\n", "", "merge_heads",
     "heads-merged-without-transpose"),
)
PICTURED = tuple(m[0] for m in MUTANTS)


def mutated(folder: Path, mutants=MUTANTS) -> Path:
    """The solutions of the three assignments in ``folder``, with ``mutants``' mistakes made."""
    for assignment, *_ in MUTANTS:
        shutil.copytree(ROOT / "solutions" / assignment, folder / assignment, ignore=shutil.ignore_patterns("*.ipynb"))
    for assignment, module, right, wrong, *_ in mutants:
        path = folder / assignment / module
        text = path.read_text()
        assert right in text
        path.write_text(text.replace(right, wrong))
    return folder


@pytest.fixture(scope="module")
def wrong_result(course, grader, tmp_path_factory):
    from grader.submission import resolve_submission

    folder = mutated(tmp_path_factory.mktemp("figures") / "assignments")
    return grader.grade(resolve_submission(folder, course), course.select(PICTURED), seed=5)


def exercise_of(result, name):
    return next(e for a in result.assignments for e in a.exercises if e.name == name)


def test_the_three_mistakes_each_get_their_figure_and_nothing_else_does(wrong_result):
    drawn = {e.name for a in wrong_result.assignments for e in a.exercises if e.figure}
    assert drawn == {"attention_weights", "causal_mask", "merge_heads"}
    for _, _, _, _, name, misconception in MUTANTS:
        exercise = exercise_of(wrong_result, name)
        assert exercise.status == "failed" and misconception in exercise.misconceptions
        assert valid_figure(exercise.figure) and exercise.figure["row_labels"] == WORDS
        assert any(any(row) for row in exercise.figure["differs"])
    mask = exercise_of(wrong_result, "causal_mask").figure
    assert mask["kind"] == "mask" and mask["col_labels"] == WORDS
    assert mask["right"] == torch.triu(torch.ones(6, 6), 1).int().tolist()
    assert mask["theirs"] == torch.tril(torch.ones(6, 6), -1).int().tolist()
    assert mask["differs"] == (torch.eye(6) == 0).int().tolist()  # only the diagonal agrees
    weights = exercise_of(wrong_result, "attention_weights").figure
    assert all(sum(row) == pytest.approx(1, abs=1e-3) for row in weights["right"])  # the rows are the weights
    assert not all(sum(row) == pytest.approx(1, abs=1e-3) for row in weights["theirs"])
    merged = exercise_of(wrong_result, "merge_heads").figure
    journey = lesson_data_words()
    assert merged["right"][1] == journey[1] + journey[1]  # token "journey" of head 0, then of head 1
    assert merged["theirs"][0] == journey[0] + journey[1]  # no transpose: two tokens of head 0


def lesson_data_words():
    from lesson import JOURNEY

    return [list(row) for row in JOURNEY]


def test_the_json_result_holds_the_figure_as_plain_numbers(wrong_result):
    data = json.loads(json.dumps(wrong_result.to_json(), allow_nan=False))  # no NaN or inf as numbers
    by_name = {e["name"]: e for a in data["assignments"] for e in a["exercises"]}
    assert by_name["causal_mask"]["figure"] == exercise_of(wrong_result, "causal_mask").figure
    assert "figure" not in by_name["split_heads"] and "figure" not in by_name["scaled_dot_product_attention"]


def test_a_right_submission_draws_nothing_and_runs_no_picture_case(course, grader, monkeypatch):
    from grader.submission import resolve_submission

    calls = []
    original = pictures._picture
    monkeypatch.setattr(pictures, "_picture", lambda *a, **k: calls.append(a[1:3]) or original(*a, **k))
    result = grader.grade(resolve_submission(ROOT / "solutions", course), course.select(PICTURED), seed=5)
    assert result.full_marks and calls == []
    assert all("figure" not in e for a in result.to_json()["assignments"] for e in a["exercises"])


def test_the_public_recording_holds_the_picture_cases_and_a_distribution_draws_from_it(course, grader, tmp_path):
    """Without the reference (a student distribution), the right output is the one recorded at release."""
    from grader.course.distribution import record_public_suites
    from grader.grading.recorded_outputs import Recording
    from grader.submission import resolve_submission

    assignment = course.assignment("03_causal_attention")
    recording, _ = record_public_suites(course, (assignment,))
    assert {k for k in recording.events if k.startswith("picture:")} == {
        pictures._key(a, e, n) for (a, e), case in pictured().items() if a == assignment.id
        for n, _ in enumerate(case.each())}
    assert "picture:03_causal_attention:CausalAttention" in recording.events
    recording.save(tmp_path / "reference.pt")
    replayed = Recording.load(tmp_path / "reference.pt")
    folder = mutated(tmp_path / "assignments", MUTANTS[1:2])
    result = grader.grade(resolve_submission(folder / assignment.id, course), (assignment,), recording=replayed,
                          suite="public")
    assert exercise_of(result, "causal_mask").figure["right"] == torch.triu(torch.ones(6, 6), 1).int().tolist()


def test_a_figure_is_bounded_rounded_and_says_nothing_of_a_right_or_misshapen_output():
    from lesson import journey_scores

    case = pictured()[("03_causal_attention", "apply_causal_mask")]
    right = journey_scores().masked_fill(torch.triu(torch.ones(6, 6, dtype=torch.bool), 1), float("-inf"))
    assert figure_of(case, right.clone(), right, rtol=1e-4, atol=1e-5) is None  # right: no figure
    assert figure_of(case, right[:5], right, rtol=1e-4, atol=1e-5) is None  # another shape
    assert figure_of(case, "a string", right, rtol=1e-4, atol=1e-5) is None
    theirs = right.clone()
    theirs[0, 1], theirs[2, 2] = float("nan"), float("inf")
    figure = figure_of(case, theirs, right, rtol=1e-4, atol=1e-5)
    assert figure["theirs"][0][1] == "nan" and figure["theirs"][2][2] == "inf" and figure["right"][0][5] == "-inf"
    assert sum(map(sum, figure["differs"])) == 2 and valid_figure(figure)
    assert json.loads(json.dumps(figure, allow_nan=False)) == figure
    assert all(isinstance(v, str) or round(v, 4) == v for row in figure["right"] for v in row)
    big = pictures.Picture("big", lambda: (), lambda: [str(i) for i in range(40)], lambda: [str(i) for i in range(40)])
    cut = figure_of(big, torch.zeros(40, 40), torch.ones(40, 40), rtol=0, atol=0)
    assert len(cut["theirs"]) == 16 and len(cut["right"][0]) == 16 and len(cut["row_labels"]) == 16
    assert not valid_figure({**figure, "theirs": figure["theirs"][:3]})
    assert not valid_figure({**figure, "right": [[float("nan")] * 6] * 6})


def pictured():
    """The course's pictures (course.toml's [course] figures: suites/lesson/figures.py)."""
    from grader.config import load_course

    return course_pictures(load_course(ROOT))


def test_png_and_svg_draw_both_matrices_labelled(wrong_result):
    from PIL import Image

    figure = exercise_of(wrong_result, "attention_weights").figure
    image = Image.open(io.BytesIO(png(figure)))
    assert image.format == "PNG" and image.width > 2 * image.height and len(image.convert("RGB").getcolors(1 << 20)) > 20
    drawn = svg(figure, "figure-x", "softmax-wrong-dim: alice's 02_self_attention:attention_weights")
    for word in WORDS:
        assert f">{word}</text>" in drawn
    assert escape(figure["title"]) in drawn and ">yours</text>" in drawn and ">right</text>" in drawn
    for key in ("theirs", "right", "differs"):
        for i, row in enumerate(figure[key]):
            for j, value in enumerate(row):
                assert f'data-panel="{key}" data-row="{i}" data-col="{j}" data-value="{value}"' in drawn


def test_grade_check_figures_writes_a_png_for_each_wrong_pictured_exercise_only(tmp_path):
    """`grade check` writes no figure unless asked; --figures DIR writes one PNG per wrong pictured
    exercise, and a run where it is right again takes its PNG away."""
    import os
    import subprocess
    import sys

    folder = mutated(tmp_path / "assignments", MUTANTS[1:2])

    def grade(*args):
        return subprocess.run([sys.executable, "-m", "grader", "--course", str(ROOT), "check", "03_causal_attention", "--submission",
                               str(folder / "03_causal_attention"), "--seed", "5", *args], cwd=tmp_path,
                              capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "120"})

    plain = grade()
    assert plain.returncode == 1 and "figure" not in plain.stdout + plain.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["assignments"]
    drawn = grade("--figures", str(tmp_path / "figs"))
    timeless = lambda text: re.sub(r"\d+\.\d+ s\b", "", text)  # noqa: E731 - the table's durations
    assert drawn.returncode == 1 and timeless(drawn.stdout) == timeless(plain.stdout)
    assert [p.name for p in (tmp_path / "figs").iterdir()] == ["03_causal_attention-causal_mask.png"]
    assert (tmp_path / "figs" / "03_causal_attention-causal_mask.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    shutil.copy(ROOT / "solutions" / "03_causal_attention" / "causal_attention.py", folder / "03_causal_attention")
    fixed = grade("--figures", str(tmp_path / "figs"))
    assert fixed.returncode == 0 and list((tmp_path / "figs").iterdir()) == []


def test_the_picture_cases_ship_to_students_without_a_line_of_a_solution(course):
    """The course's pictures (suites/lesson/figures.py) and the grader's code that runs them go into the student
    distribution: their inputs may not be built with solution code."""
    from grader.course.leaks import solution_lines

    lines = solution_lines(course)
    for path in (ROOT / course.figures_file, Path(pictures.__file__)):
        assert [line for line in path.read_text().splitlines() if line.strip() in lines] == [], path


# --- issue 46: pictures where the code is wrong ------------------------------------------------------
SELF_ATTENTION = ROOT / "solutions" / "02_self_attention" / "self_attention.py"
CAUSAL_ATTENTION = ROOT / "solutions" / "03_causal_attention" / "causal_attention.py"
WRONG_WEIGHTS = {  # attention_weights: (right text, wrong text), each replaced wherever it stands
    "inverted mask": ('scores = scores.masked_fill(mask, float("-inf"))',
                      'scores = scores.masked_fill(~mask, float("-inf"))'),
    "wrong softmax dim": ("torch.softmax(scores, dim=-1)", "torch.softmax(scores, dim=-2)"),
    "wrong scale": ("/ math.sqrt(keys.shape[-1])", "/ keys.shape[-1]"),
}
WRONG_CAUSAL = {  # CausalAttention.forward
    "inverted mask": ("scores.masked_fill(self.mask[:num_tokens, :num_tokens]",
                      "scores.masked_fill(~self.mask[:num_tokens, :num_tokens]"),
    "no mask": ('scores = scores.masked_fill(self.mask[:num_tokens, :num_tokens], float("-inf"))', "pass"),
    "wrong scale": ("torch.softmax(scores / keys.shape[-1] ** 0.5", "torch.softmax(scores / keys.shape[-1]"),
    "dropout in eval mode": ("weights = self.dropout(weights)",
                             "weights = torch.nn.functional.dropout(weights, self.dropout.p, training=True)"),
}


def _one_wrong(folder: Path, source: Path, right: str, wrong: str) -> Path:
    """``source``'s assignment folder (its module only) in ``folder``, with ``right`` made ``wrong``."""
    target = folder / source.parent.name
    target.mkdir(parents=True)
    text = source.read_text()
    assert right in text
    (target / source.name).write_text(text.replace(right, wrong))
    return target


@pytest.mark.parametrize("mistake", WRONG_WEIGHTS)
def test_grade_check_figures_draws_a_wrong_attention_weights_on_a_case_where_it_fails(course, grader, tmp_path,
                                                                                       mistake):
    """An inverted mask is right where nothing is hidden: it is drawn on the lesson's data with 02's mask."""
    from grader.reporting.figures import write_pngs
    from grader.submission import resolve_submission

    folder = _one_wrong(tmp_path / "assignments", SELF_ATTENTION, *WRONG_WEIGHTS[mistake])
    result = grader.grade(resolve_submission(folder, course), (course.assignment("02_self_attention"),), seed=5)
    exercise = exercise_of(result, "attention_weights")
    assert exercise.status == "failed" and valid_figure(exercise.figure), exercise.feedback
    figure = exercise.figure
    assert any(any(row) for row in figure["differs"]) and figure["row_labels"] == WORDS
    if mistake == "inverted mask":
        assert "mask" in figure["title"]
        assert [row[4:] for row in figure["right"]] == [[0, 0]] * 6 and figure["right"][5] == [0] * 6
    assert [p.name for p in write_pngs(result, tmp_path / "figs")] == ["02_self_attention-attention_weights.png"]


@pytest.mark.parametrize("mistake", WRONG_CAUSAL)
def test_a_wrong_causal_attention_is_drawn_as_its_attention_weights(course, grader, tmp_path, mistake):
    """The class runs in its worker with weights under which its output is its weights (one-hot values), in
    evaluation mode: the right ones hide the future, row by row."""
    from grader.submission import resolve_submission

    folder = _one_wrong(tmp_path / "assignments", CAUSAL_ATTENTION, *WRONG_CAUSAL[mistake])
    result = grader.grade(resolve_submission(folder, course), (course.assignment("03_causal_attention"),), seed=5)
    exercise = exercise_of(result, "CausalAttention")
    assert exercise.status == "failed" and valid_figure(exercise.figure), exercise.feedback
    figure = exercise.figure
    assert figure["row_labels"] == figure["col_labels"] == WORDS and figure["kind"] == "weights"
    right = torch.tensor(figure["right"], dtype=torch.float64)
    assert torch.equal(right.triu(1), torch.zeros(6, 6))
    assert torch.allclose(right.sum(-1), torch.ones(6, dtype=torch.float64), atol=1e-3)
    assert any(any(row) for row in figure["differs"])
    assert {e.name for e in result.assignments[0].exercises if e.figure} == {"CausalAttention"}


def test_grade_check_figures_writes_the_inverted_mask_and_the_class_report_draws_it(course, grader, tmp_path):
    """The issue's run: `grade check --figures` on an inverted-mask attention_weights and CausalAttention said
    "no figures: no pictured exercise is wrong"; and the class report's picture of mask-inverted."""
    import os
    import subprocess
    import sys

    from grader.reporting.class_report import render, summarise
    from grader.submission import resolve_submission

    folder = tmp_path / "assignments"
    _one_wrong(folder, SELF_ATTENTION, *WRONG_WEIGHTS["inverted mask"])
    _one_wrong(folder, CAUSAL_ATTENTION, *WRONG_CAUSAL["inverted mask"])
    done = subprocess.run([sys.executable, "-m", "grader", "--course", str(ROOT), "check", "--submission", str(folder),
                           "--seed", "5", "--figures", str(tmp_path / "figs")], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "COLUMNS": "120"})
    assert done.returncode == 1 and "2 figure(s) of wrong exercises" in done.stderr, done.stderr
    assert sorted(p.name for p in (tmp_path / "figs").iterdir()) == [
        "02_self_attention-attention_weights.png", "03_causal_attention-CausalAttention.png"]
    results = []
    for student in ("ann", "ben"):
        graded = grader.grade(resolve_submission(folder, course), course.select(("02_self_attention",)), seed=5)
        results.append({**graded.to_json(), "submission": student})
    summary = summarise(results)
    inverted = next(m for m in summary["misconceptions"] if m["id"] == "mask-inverted")
    assert valid_figure(inverted["figure"]) and "mask" in inverted["figure"]["title"]
    assert '<svg id="figure-mask-inverted"' in render(summary, "html")


WRONG_KERNEL = """
import math

import torch
from torch import nn


def attention_weights(queries, keys, mask=None):
    scores = queries @ keys.transpose(-2, -1) / math.sqrt(keys.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))  # the visible keys hidden: inverted
    return torch.softmax(scores, dim=-1)
"""


def test_check_draws_an_inverted_mask_where_it_fails(course, grader, tmp_path):
    """A notebook's check() on the inverted-mask attention_weights: what it grades (the kernel's cells, as
    grade_cells takes them) carries the figure that check() shows (it had none)."""
    from grader.platforms.notebook_grading import grade_cells

    result = grade_cells(course, course.assignment("02_self_attention"), "attention_weights", ["", WRONG_KERNEL],
                         cwd=tmp_path, seed=5, grader=grader)
    [graded] = result.assignments[0].exercises
    assert graded.status == "failed" and "mask-inverted" in graded.misconceptions, graded.feedback
    assert valid_figure(graded.figure) and "mask" in graded.figure["title"]
    assert png(graded.figure)[:8] == b"\x89PNG\r\n\x1a\n"


def test_each_picture_title_calls_with_the_lesson_notebooks_own_names():
    """A title names its call's data as the lesson notebook does (04's `inputs[None]`, never the grader's
    `journey[None]`, which a learner read as the token "journey")."""
    import ast
    import json

    for (aid, exercise), first in pictured().items():
        defined = set()
        for notebook in (ROOT / "solutions" / aid).glob("*.ipynb"):
            for cell in json.loads(notebook.read_text())["cells"]:
                source = "".join(cell["source"])
                if cell["cell_type"] == "code" and not source.lstrip().startswith(("%", "!")):
                    defined |= {node.id for node in ast.walk(ast.parse(source))
                                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)}
        for case in first.each():
            call = case.title.split(": ")[0]
            assert call.startswith(exercise + "("), case.title
            used = set(re.findall(r"\b([A-Za-z_]\w*)(?=\[|\s*@|\.T\b)", call))
            assert used <= defined, f"{aid}:{exercise}: {sorted(used - defined)} in {case.title!r}"
