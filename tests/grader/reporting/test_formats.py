import json
from pathlib import Path
from xml.etree import ElementTree

import pytest

from grader.config import load_course
from grader.reporting.formats import FORMATS, render
from grader.results import AssignmentResult, CheckOutcome, SubmissionResult
from grader.results import ExerciseResult as _ExerciseResult

CATALOGUE = load_course(Path(__file__).resolve().parents[3]).catalogue  # the course's words, as grading gives them


def ExerciseResult(*args, **kwargs):  # noqa: N802 - as the grader makes them for this course
    return _ExerciseResult(*args, known=CATALOGUE, **kwargs)


@pytest.fixture
def result():
    softmax = ExerciseResult("softmax", 10.0, [
        CheckOutcome("softmax_random", 3, "passed"),
        CheckOutcome("softmax_large_values", 1, "failed", "the output has NaN at 4 entries",
                     ("softmax-unstable",))])
    scores = ExerciseResult("attention_scores", 15.0, [CheckOutcome("attention_scores_random", 1, "passed")])
    stub = ExerciseResult("context_vector_loop", 5.0, [CheckOutcome("x", 1, "not_implemented", "not attempted yet")])
    return SubmissionResult("alice", 8121, "cpu", 1.9, [
        AssignmentResult("01_attention_basics", "Basics", [softmax, scores, stub])])


def test_partial_credit_and_statuses(result):
    softmax, scores, stub = result.assignments[0].exercises
    assert softmax.score == 7.5 and softmax.status == "failed"
    assert scores.score == 15 and scores.status == "passed"
    assert stub.score == 0 and stub.status == "not_implemented"
    assert result.score == 22.5 and result.max_score == 30 and not result.full_marks


def test_json_follows_the_spec_schema(result):
    data = json.loads(render(result, "json"))
    assert {"schema", "submission", "seed", "device", "score", "max_score", "duration_s", "assignments"} <= set(data)
    assert data["schema"] == 1 and data["seed"] == 8121 and data["score"] == 22.5
    exercise = data["assignments"][0]["exercises"][0]
    assert {"name", "score", "max_score", "status", "misconceptions", "feedback"} <= set(exercise)
    assert exercise["misconceptions"] == ["softmax-unstable"] and exercise["status"] == "failed"


def test_gradescope_results_have_the_required_fields(result):
    data = json.loads(render(result, "gradescope"))
    assert data["score"] == 22.5 and isinstance(data["execution_time"], int)
    assert len(data["tests"]) == 3
    for test in data["tests"]:
        assert {"name", "score", "max_score", "status", "output", "visibility"} <= set(test)
        assert test["status"] in ("passed", "failed")


def test_junit_parses_with_one_testcase_per_exercise(result):
    root = ElementTree.fromstring(render(result, "junit").split("?>", 1)[1])
    cases = root.findall("./testsuite/testcase")
    assert [c.get("name") for c in cases] == ["softmax", "attention_scores", "context_vector_loop"]
    assert cases[0].find("failure") is not None and cases[1].find("failure") is None
    assert root.get("tests") == "3" and root.get("failures") == "2"


def test_junit_times_are_each_exercises_own_and_messages_say_what_failed(result):
    softmax, scores, _ = result.assignments[0].exercises
    softmax.checks[0].duration_s, softmax.checks[1].duration_s, scores.checks[0].duration_s = 0.25, 0.5, 0.125
    result.started = "2026-11-23T10:00:00+00:00"
    root = ElementTree.fromstring(render(result, "junit").split("?>", 1)[1])
    suite = root.find("./testsuite")
    cases = suite.findall("testcase")
    assert [c.get("time") for c in cases] == ["0.750", "0.125", "0.000"]  # not the run split evenly
    assert suite.get("time") == "0.875" and suite.get("timestamp") == "2026-11-23T10:00:00+00:00"
    message = cases[0].find("failure").get("message")
    assert message.startswith("7.5/10 points: softmax_large_values: the output has NaN at 4 entries"), message
    error = ExerciseResult("softmax", 10.0, [CheckOutcome("softmax_random", 1, "timeout", "ran out of time")])
    broken = SubmissionResult("bob", 1, "cpu", 1.0, [AssignmentResult("01_attention_basics", "Basics", [error])])
    node = ElementTree.fromstring(render(broken, "junit").split("?>", 1)[1]).find("./testsuite/testcase/error")
    assert node.get("type") == "timeout" and "ran out of time" in node.get("message")


def test_colour_follows_no_color_and_force_color(monkeypatch):
    from grader.reporting.formats import wants_colour

    class Terminal:
        def __init__(self, tty):
            self.tty = tty

        def isatty(self):
            return self.tty

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    assert wants_colour(Terminal(True)) and not wants_colour(Terminal(False))
    monkeypatch.setenv("NO_COLOR", "1")
    assert not wants_colour(Terminal(True))
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert wants_colour(Terminal(False))


def test_the_table_fits_80_columns_with_long_feedback(result):
    long = ExerciseResult("scaled_dot_product_attention_with_a_long_name", 20.0, [CheckOutcome(
        "a_check_with_a_long_name", 1, "failed", "the output is off " * 40, ("softmax-unstable",))])
    result.assignments[0].exercises.append(long)
    table = render(result, "table")
    assert max(len(line) for line in table.splitlines()) <= 80, table


def test_markdown_folds_the_whole_feedback_under_the_table_so_an_exception_is_seen(result):
    raised = ExerciseResult("attention_scores", 15.0, [CheckOutcome(
        "attention_scores_random", 1, "error", "attention_scores(<[2, 5, 3] float32>) raised:\n"
        "  File \"attention_basics.py\", line 3, in attention_scores\n    rows, cols = inputs.shape\n"
        "ValueError: too many values to unpack (expected 2)")])
    result.assignments[0].exercises[1] = raised
    text = render(result, "markdown")
    table_row = next(line for line in text.splitlines() if "`attention_scores`" in line)
    assert "ValueError" not in table_row  # the table keeps one line
    folded = text.split("<details><summary><code>attention_scores</code>", 1)[1].split("</details>", 1)[0]
    assert "ValueError: too many values to unpack (expected 2)" in folded and "rows, cols = inputs.shape" in folded


def test_markdown_and_table_name_the_misconception(result):
    assert "`softmax-unstable`" in render(result, "markdown")
    table = render(result, "table")
    assert "softmax-unstable" in table and "22.5/30" in table and "not attempted yet" in table


def test_every_format_renders(result):
    for fmt in FORMATS:
        assert render(result, fmt).strip()


def test_feedback_explains_each_named_mistake_with_a_hint(result):
    softmax = result.assignments[0].exercises[0]
    entry = CATALOGUE["softmax-unstable"]
    assert softmax.feedback.startswith("softmax_large_values: the output has NaN at 4 entries")
    assert entry.explanation in softmax.feedback and entry.hint in softmax.feedback
    exercise = json.loads(render(result, "json"))["assignments"][0]["exercises"][0]
    assert exercise["hints"] == [{"misconception": "softmax-unstable", "explanation": entry.explanation,
                                  "hint": entry.hint, "example": entry.example}]
    table = " ".join(render(result, "table").split())  # as read, whatever the wrapping
    assert f"softmax-unstable: {entry.explanation}" in table and f"Hint: {entry.hint}" in table
    assert f"**softmax-unstable**: {entry.explanation}" in render(result, "markdown")


def test_feedback_without_a_named_mistake_adds_no_hint():
    exercise = ExerciseResult("softmax", 10.0, [CheckOutcome("softmax_random", 1, "failed", "the output is off")])
    assert exercise.feedback == "softmax_random: the output is off"
    assert exercise.to_json()["hints"] == []


def test_odd_and_huge_messages_render_in_every_format_and_stay_bounded():
    """Issue 10, item 8: a lone surrogate or control characters in an exception message crash no
    report; one check's message and one exercise's feedback are bounded."""
    from grader.results import FEEDBACK_LIMIT, MESSAGE_LIMIT

    odd = "bad byte \udcff, a NUL \x00, a bell \x07 and an escape \x1b[31m" + "x" * 10 * MESSAGE_LIMIT
    exercise = ExerciseResult("softmax", 10.0, [CheckOutcome("softmax_random", 1, "error", odd)])
    result = SubmissionResult("mallory", 1, "cpu", 0.1, [AssignmentResult("01_attention_basics", "Basics", [exercise])])
    for fmt in FORMATS:
        text = render(result, fmt)
        text.encode("utf-8")
        assert "\x00" not in text and "\x07" not in text
    ElementTree.fromstring(render(result, "junit"))
    assert len(exercise.checks[0].message) <= MESSAGE_LIMIT + 40 and "characters cut" in exercise.checks[0].message
    assert len(exercise.feedback) <= FEEDBACK_LIMIT + 40
    assert "\\udcff" in exercise.checks[0].message  # shown, as an escape


def test_a_non_character_and_an_odd_submission_name_still_make_valid_junit_and_utf8():
    """U+FFFF is valid UTF-8 but not XML: a JUnit reader would refuse the whole report."""
    exercise = ExerciseResult("softmax", 10.0, [CheckOutcome("softmax_random", 1, "failed", "got \uffff\ufffe")])
    result = SubmissionResult("mal\x00lory\udcff", 1, "cpu", 0.1,
                              [AssignmentResult("01_attention_basics", "Basics", [exercise])])
    ElementTree.fromstring(render(result, "junit"))
    for fmt in FORMATS:
        render(result, fmt).encode("utf-8")


def test_an_explanation_and_a_traceback_are_said_once_per_assignment():
    """Issue 11, item 8: one import error behind every exercise, one misconception behind several."""
    traceback = 'importing your module failed:\n  File "m.py", line 3\n    def f(:\nSyntaxError: invalid syntax'
    broken = [ExerciseResult(name, 5.0, [CheckOutcome(f"{name}_random", 1, "error", traceback)])
              for name in ("softmax", "attention_scores", "context_vector_loop")]
    masked = [ExerciseResult(name, 5.0, [CheckOutcome(f"{name}_mask", 1, "failed", f"{name}: off at 3 entries",
                                                      ("mask-inverted",))]) for name in ("a", "b")]
    result = SubmissionResult("alice", 1, "cpu", 0.1, [AssignmentResult("01_attention_basics", "Basics", broken + masked)])
    text = render(result, "table")
    assert text.count("SyntaxError: invalid syntax") == 1 and text.count("the same as softmax, above") == 2
    explanation = CATALOGUE["mask-inverted"].explanation.split(".")[0]
    assert text.count(explanation[:40]) == 1 and "mask-inverted: explained under a, above" in text
    assert render(result, "markdown").count(explanation[:40]) == 1
    assert all("SyntaxError" in e["feedback"] for e in json.loads(render(result, "json"))["assignments"][0]["exercises"][:3])


def test_the_table_drawn_directly_is_the_one_rich_draws_character_for_character(tmp_path):
    """report.table_of draws a JSON result as grade check's table without rich (a class report draws
    thousands): the same text as rich's, on synthetic results of every status and on a long name."""
    import json
    import sys

    import grader.reporting.formats as report

    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
    import report_scale

    report_scale.make_class(tmp_path / "g", 60, seed=4)
    results = [json.loads(p.read_text()) for p in sorted((tmp_path / "g").glob("*.json"))]
    results[0]["assignments"][0]["exercises"][0].update(status="grader-error", name="x" * 70)
    results[1]["grader_error"] = "01: softmax: it failed"
    for data in results:
        plain = report.table_of(data)
        assert plain == report._draw_rich(*_parts(report, data)), data["submission"]


def _parts(report, data):
    """table_of's own arguments to _draw, captured."""
    seen = []
    original = report._draw
    report._draw = lambda assignments, footer, colour: seen.append((assignments, footer)) or ""
    try:
        report.table_of(data)
    finally:
        report._draw = original
    return (*seen[0], False)


def _rendered(markdown: str) -> str:
    """``markdown`` as HTML, the way a CommonMark reader with GitHub's tables renders it (raw HTML on)."""
    markdown_it = pytest.importorskip("markdown_it")
    return markdown_it.MarkdownIt("commonmark").enable("table").render(markdown)


def test_text_in_markdown_is_shown_as_written_never_as_html_an_image_or_a_link():
    from html import unescape

    from grader.reporting.formats import markdown_text

    for text in ("<img src=x onerror=alert(1)>", "![p](http://evil/p.png)", "[x](javascript:alert(1))",
                 "<a href='http://evil'>me</a>", "*a* __b__ `c` # d", "- e | f", "1. g", "&lt; h"):
        shown = _rendered(f"| name |\n|---|\n| {markdown_text(text)} |\n\n- {markdown_text(text)}\n")
        assert "<img" not in shown and "<a " not in shown and "<em>" not in shown and "<code>" not in shown
        assert shown.count("<li>") == 1 and shown.count("<td>") == 1  # one cell, one item: no more, no less
        cell = shown.split("<td>")[1].split("</td>")[0]
        item = shown.split("<li>")[1].split("</li>")[0]
        assert unescape(cell) == unescape(item) == text, text
    assert markdown_text("01_attention_basics:softmax") == "01_attention_basics:softmax"  # readable as it was


def test_a_cell_a_spreadsheet_would_run_as_a_formula_begins_with_a_quote_and_numbers_stay_numbers():
    import csv
    import io

    from grader.reporting.formats import csv_text

    texts = ['=HYPERLINK("http://x","y")', "+600+0", "@SUM(A1)", "-1+601", "\tx", "\rx"]
    (row,) = csv.reader(io.StringIO(csv_text([[*texts, "ann", -1.5, 0, ""]])))
    assert row == [f"'{text}" for text in texts] + ["ann", "-1.5", "0", ""]


def test_markdown_shows_feedback_a_submission_wrote_as_text():
    """An exception a submission raises is its own words: its first line stands in the table."""
    exercise = ExerciseResult("softmax", 10.0, [CheckOutcome(
        "softmax_random", 1, "error", "softmax raised: ValueError: <img src=x onerror=alert(1)> ![p](http://evil/p.png)")])
    result = SubmissionResult("alice", 1, "cpu", 0.1, [AssignmentResult("01_attention_basics", "Basics", [exercise])])
    shown = _rendered(render(result, "markdown"))
    assert "<img" not in shown and "<a " not in shown
    assert "ValueError: &lt;img src=x onerror=alert(1)&gt; ![p](http://evil/p.png)" in shown


@pytest.mark.parametrize("mode,said", [("separate-user", "sandboxed (bubblewrap), as a user of its own"),
                                       ("user-namespace", "sandboxed (bubblewrap, user namespaces), as your user"),
                                       ("none", "as your own user, with no sandbox")])
def test_the_table_says_how_the_code_was_isolated_in_one_line(result, mode, said):
    """Issue 35: only JSON said how the student's code ran; the table a student reads says it too,
    drawn from the result or from its JSON alike."""
    from grader.reporting.formats import table_of

    result.isolation = mode
    drawn = render(result, "table")
    assert f"your code ran {said}" in drawn.splitlines()
    assert f"your code ran {said}" in table_of(json.loads(render(result, "json"))).splitlines()


def _noted_class_result() -> SubmissionResult:
    """A result whose table shows what JSON's feedback alone did not: a passed exercise's "right, given
    your ..." note, a traceback and an explanation said once and then pointed to, a stub."""
    traceback = 'importing your module failed:\n  File "m.py", line 3\n    def f(:\nSyntaxError: invalid syntax'
    note = "right, given your softmax, which this uses; but your softmax is wrong (see softmax, above)"
    noted = ExerciseResult("attention_weights", 10.0, [CheckOutcome("attention_weights_random", 1, "passed", note)])
    masked = [ExerciseResult(name, 5.0, [CheckOutcome(f"{name}_mask", 1, "failed", f"{name}: off at 3 entries",
                                                      ("mask-inverted",))]) for name in ("a", "b")]
    broken = [ExerciseResult(name, 5.0, [CheckOutcome(f"{name}_random", 1, "error", traceback)]) for name in ("c", "d")]
    stub = ExerciseResult("e", 5.0, [CheckOutcome("e_random", 1, "not_implemented", "not attempted yet")])
    return SubmissionResult("alice", 1, "cpu", 0.5, [
        AssignmentResult("01_attention_basics", "Basics", [noted, *masked, *broken, stub])], isolation="separate-user")


def test_the_table_drawn_from_json_is_what_grade_check_printed_notes_and_pointers_included():
    """Issue 35: table_of dropped a passed exercise's "right, given your ..." note and printed whole what
    grade check's table had pointed to ("the same as c, above"): a class report's "as grade check showed
    it" was not. Each exercise's JSON keeps what the table showed (``shown``), and an older result
    without it still shows its notes."""
    from grader.reporting.formats import table_of

    result = _noted_class_result()
    printed = render(result, "table")
    assert "right, given your softmax" in printed and "the same as c, above" in printed
    data = json.loads(render(result, "json"))
    assert table_of(data) == printed
    shown = {e["name"]: e["shown"] for e in data["assignments"][0]["exercises"]}
    assert shown["attention_weights"].startswith("all 1 checks passed\nright, given your softmax")
    assert shown["b"].endswith("mask-inverted: explained under a, above") and shown["e"] == ""
    assert "SyntaxError" in data["assignments"][0]["exercises"][4]["feedback"]  # JSON's feedback stays whole
    for exercise in data["assignments"][0]["exercises"]:
        del exercise["shown"]  # a result written before issue 35
    older = table_of(data)
    assert "right, given your softmax" in older and older.count("SyntaxError") == 2
