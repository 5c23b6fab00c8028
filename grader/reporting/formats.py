"""Rendering a :class:`~grader.results.SubmissionResult` in each ``--format``.

``table`` is for people (colour on a terminal), ``json`` is the course spec's schema, ``gradescope``
is Gradescope's results.json, ``junit`` is read by GitLab and Jenkins, ``markdown`` suits
``$GITHUB_STEP_SUMMARY``.
"""
from __future__ import annotations

import csv
import html
import io
import json
import re
from xml.etree import ElementTree as ET

from grader.results import SubmissionResult

FORMATS = ("table", "json", "gradescope", "junit", "markdown")
_MARK = {"passed": "✓", "failed": "✗", "error": "!", "timeout": "⧗", "not_implemented": "·", "forbidden": "⊘",
         "crashed": "☠", "grader-error": "?"}
_COLOUR = {"passed": "green", "failed": "red", "error": "red", "timeout": "yellow", "not_implemented": "dim",
           "forbidden": "magenta", "crashed": "red", "grader-error": "yellow"}
_SHORT = {"not_implemented": "not attempted yet", "grader-error": "grader error (not yours)"}


WIDTH = 80  # a terminal's width: tables and wrapped feedback fit it

# what Markdown would read as markup in a line of text: HTML (written as an entity), and, given a
# backslash, a link's or an image's brackets, code, emphasis (an underscore inside a word is none), a
# table's bar, a heading, and a list's marker where the text starts ("-", "+", "1.")
_MARKUP = re.compile(r"[\\`*\[\]()!|#~<>&]|(?<![^\W_])_|_(?![^\W_])|^[-+=]|^[0-9]{1,9}\.")
_ENTITIES = {"<": "&lt;", ">": "&gt;", "&": "&amp;"}
# what a spreadsheet would run as a formula where it starts a cell (OWASP's "CSV injection")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def wants_colour(stream) -> bool:
    """Colour for a terminal, unless ``NO_COLOR`` is set (no-color.org); ``FORCE_COLOR`` asks for it
    anywhere (a CI log that shows colour)."""
    import os

    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return stream.isatty()


def render(result: SubmissionResult, fmt: str, *, colour: bool = False) -> str:
    if fmt == "table":
        return _table(result, colour)
    return {"json": _json, "gradescope": _gradescope, "junit": _junit, "markdown": _markdown}[fmt](result)


def _points(value: float) -> str:
    return f"{value:g}"


def markdown_text(text: str) -> str:
    """``text`` (a name, feedback: anyone's words) as Markdown that shows it as written, on one line:
    no HTML, link, image, code, emphasis, heading, list or table cell of its own."""
    return _MARKUP.sub(_unmarked, " ".join(str(text).splitlines()))


def _unmarked(found: re.Match) -> str:
    mark = found[0]
    return _ENTITIES.get(mark) or f"{mark[:-1]}\\{mark[-1]}"


def csv_text(rows) -> str:
    """``rows`` as CSV, each text cell as data (OWASP): one that a spreadsheet would take for a formula
    (it starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return) begins with a ``'``. Numbers
    stay numbers. Every CSV the grader writes goes through here."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerows([_cell(value) for value in row] for row in rows)
    return buffer.getvalue()


def _cell(value):
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return f"'{value}"
    return value


def _table(result: SubmissionResult, colour: bool = False) -> str:
    assignments = [{"id": a.id, "score": a.score, "max_score": a.max_score, "sources": a.sources,
                    "feedback": a.feedback_said_once(),
                    "exercises": [{"name": e.name, "status": e.status, "score": e.score, "max_score": e.max_score,
                                   "misconceptions": e.misconceptions} for e in a.exercises]}
                   for a in result.assignments]
    total = "–" if result.grader_error else _points(result.score)
    return _draw(assignments, f"total {total}/{_points(result.max_score)}   seed {result.seed}   "
                              f"device {result.device}   {result.duration_s:.1f} s\n"
                              f"{isolation_line(result.isolation)}", colour)


ISOLATION = {"separate-user": "sandboxed (bubblewrap), as a user of its own",
             "user-namespace": "sandboxed (bubblewrap, user namespaces), as your user",
             "separate-user-only": "as a user of its own, with no sandbox"}


def isolation_line(mode: str) -> str:
    """How the student code ran, in one line under the table (issue 35: only JSON said it)."""
    return f"your code ran {ISOLATION.get(mode, 'as your own user, with no sandbox')}"


def table_of(data: dict) -> str:
    """The table ``grade check`` printed, from its JSON result: under each exercise what the table
    showed (its ``shown``: feedback said once, and a passed exercise's "right, given your ..." notes).
    A result written before ``shown`` was kept gets each failing exercise's feedback whole, and a passed
    one's notes (its feedback's lines after "all N checks passed")."""
    from collections import Counter

    assignments = []
    for a in data.get("assignments", ()):
        exercises = a.get("exercises", [])
        feedback = {e["name"]: text for e in exercises if (text := _shown(e))}
        sources = [name for name, _ in Counter(e.get("source") for e in exercises if e.get("source")).most_common()]
        assignments.append({"id": a.get("id", ""), "score": a.get("score", 0), "max_score": a.get("max_score", 0),
                            "sources": sources, "feedback": feedback, "exercises": exercises})
    total = "–" if data.get("grader_error") else _points(data.get("score", 0))
    return _draw(assignments, f"total {total}/{_points(data.get('max_score', 0))}   seed {data.get('seed')}   "
                              f"device {data.get('device')}   {data.get('duration_s', 0):.1f} s\n"
                              f"{isolation_line(str(data.get('isolation', '')))}", False)


def _shown(exercise: dict) -> str:
    """What grade check's table showed under ``exercise``, a JSON exercise (see :func:`table_of`)."""
    if "shown" in exercise:
        return str(exercise["shown"] or "")
    status, text = exercise.get("status"), str(exercise.get("feedback") or "")
    if status == "passed":
        return text if "\n" in text else ""  # "all N checks passed" and its notes, or nothing
    return "" if status == "not_implemented" else text


def _draw(assignments: list[dict], footer: str, colour: bool) -> str:
    if not colour:
        return _draw_plain(assignments, footer)
    return _draw_rich(assignments, footer, colour)


def _cells(exercise: dict) -> tuple[str, str, str, str]:
    status = exercise.get("status", "error")
    points = f"{'–' if status == 'grader-error' else _points(exercise.get('score', 0))}/" \
             f"{_points(exercise.get('max_score', 0))}"
    return _MARK.get(status, "!"), exercise["name"], points, _SHORT.get(status, status)


def _draw_plain(assignments: list[dict], footer: str) -> str:
    """What :func:`_draw_rich` prints without colour, character for character, written out directly:
    a class report draws thousands of these (tests/grader/reporting/test_formats.py compares the two)."""
    lines = []
    for assignment in assignments:
        rows = [_cells(e) for e in assignment["exercises"]]
        widths = [1, max([26, len("exercise")] + [len(r[1]) for r in rows]),
                  max([len("points")] + [len(r[2]) for r in rows]), max([len("status")] + [len(r[3]) for r in rows])]
        table = sum(widths) + 2 * 3
        title = f"{assignment['id']}  {_points(assignment['score'])}/{_points(assignment['max_score'])}"
        if len(title) > table or any(len(r[1]) > WIDTH // 2 for r in rows) or table > WIDTH:
            return _draw_rich(assignments, footer, False)  # rich wraps what does not fit: let it
        lines.append(title.ljust(table))
        for mark, name, points, status in [(" ", "exercise", "points", "status"), *rows]:
            lines.append(f"{mark.ljust(1)}  {name.ljust(widths[1])}  {points.rjust(widths[2])}  "
                         f"{status.ljust(widths[3])}")
        if assignment["sources"]:
            lines.append(f"graded from {' and '.join(assignment['sources'])}")
        feedback = assignment["feedback"]
        for exercise in assignment["exercises"]:
            if exercise["name"] not in feedback:
                continue
            ids = exercise.get("misconceptions") or []
            lines.append(exercise["name"] + (f" [{', '.join(ids)}]" if ids else ""))
            lines.append(_indent(feedback[exercise["name"]]))
        lines.append("")
    lines.append(footer)
    return "\n".join(lines) + "\n"


def _draw_rich(assignments: list[dict], footer: str, colour: bool) -> str:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=colour, no_color=not colour, width=WIDTH, highlight=False)
    for assignment in assignments:
        table = Table(title=f"{assignment['id']}  {_points(assignment['score'])}/{_points(assignment['max_score'])}",
                      title_justify="left", show_edge=False, box=None, pad_edge=False)
        table.add_column("", width=1)
        table.add_column("exercise", min_width=26)
        table.add_column("points", justify="right")
        table.add_column("status")
        for exercise in assignment["exercises"]:
            status = exercise.get("status", "error")
            style = _COLOUR.get(status, "red")
            table.add_row(f"[{style}]{_MARK.get(status, '!')}[/]", escape(exercise["name"]),
                          f"{'–' if status == 'grader-error' else _points(exercise.get('score', 0))}/"
                          f"{_points(exercise.get('max_score', 0))}",
                          f"[{style}]{_SHORT.get(status, status)}[/]")
        console.print(table)
        if assignment["sources"]:
            console.print(f"graded from {' and '.join(assignment['sources'])}", markup=False, highlight=False)
        feedback = assignment["feedback"]
        for exercise in assignment["exercises"]:
            if exercise["name"] not in feedback:
                continue
            ids = exercise.get("misconceptions") or []
            tags = escape(f" [{', '.join(ids)}]") if ids else ""
            console.print(f"[bold]{escape(exercise['name'])}[/]{tags}", highlight=False)
            console.print(_indent(feedback[exercise["name"]]), markup=False, highlight=False, soft_wrap=True)
        console.print()
    console.print(f"[bold]{escape(footer)}[/]")
    return buffer.getvalue()


def _indent(text: str, width: int = 0) -> str:
    """``text`` indented by four spaces; long prose lines wrapped, with their continuation indented
    like the line itself (code, such as a traceback, is rarely that long and stays as it is)."""
    import textwrap

    width = width or WIDTH
    lines = []
    for line in text.splitlines():
        lead = " " * (4 + len(line) - len(line.lstrip()))
        lines.append(textwrap.fill(line.strip(), width, initial_indent=lead, subsequent_indent=lead + "  ",
                                   break_long_words=False, break_on_hyphens=False) if line.strip() else "")
    return "\n".join(lines)


def _json(result: SubmissionResult) -> str:
    return json.dumps(result.to_json(), indent=2) + "\n"


def _gradescope(result: SubmissionResult) -> str:
    tests = []
    for assignment in result.assignments:
        for exercise in assignment.exercises:
            tests.append({
                "name": f"{assignment.id}: {exercise.name}",
                "score": exercise.score,
                "max_score": exercise.max_score,
                "status": "passed" if exercise.status == "passed" else "failed",
                "output": exercise.feedback,
                "tags": exercise.misconceptions,
                "visibility": "visible",
            })
    payload = {"score": result.score, "execution_time": max(1, round(result.duration_s)),
               "output": f"seed {result.seed} on {result.device}; {result.rerun}",
               "visibility": "visible", "stdout_visibility": "hidden", "tests": tests}
    return json.dumps(payload, indent=2) + "\n"


def _junit(result: SubmissionResult) -> str:
    suites = ET.Element("testsuites", name=result.submission)
    total = failures = errors = 0
    for assignment in result.assignments:
        suite = ET.SubElement(suites, "testsuite", name=assignment.id,
                              time=f"{sum(e.duration_s for e in assignment.exercises):.3f}")
        if result.started:
            suite.set("timestamp", result.started)
        counts = {"tests": 0, "failures": 0, "errors": 0}
        for exercise in assignment.exercises:
            case = ET.SubElement(suite, "testcase", classname=assignment.id, name=exercise.name,
                                 time=f"{exercise.duration_s:.3f}")  # its own checks' time
            if exercise.source:
                case.set("file", exercise.source)
            counts["tests"] += 1
            if exercise.status == "passed":
                continue
            # the message says what failed, in one line: points, then the feedback's first line
            said = f"{_points(exercise.score)}/{_points(exercise.max_score)} points: " \
                   f"{exercise.feedback.splitlines()[0][:300]}"
            kind = "failure" if exercise.status in ("failed", "not_implemented", "forbidden") else "error"
            counts["failures" if kind == "failure" else "errors"] += 1
            node = ET.SubElement(case, kind, type=exercise.status, message=said)
            node.text = exercise.feedback
        suite.set("tests", str(counts["tests"]))
        suite.set("failures", str(counts["failures"]))
        suite.set("errors", str(counts["errors"]))
        total, failures, errors = total + counts["tests"], failures + counts["failures"], errors + counts["errors"]
    suites.set("tests", str(total))
    suites.set("failures", str(failures))
    suites.set("errors", str(errors))
    suites.set("time", f"{result.duration_s:.3f}")
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


def _markdown(result: SubmissionResult) -> str:
    lines = [f"## Attention course: {_points(result.score)} / {_points(result.max_score)} points", ""]
    for assignment in result.assignments:
        graded_from = f" (graded from {' and '.join(f'`{n}`' for n in assignment.sources)})" if assignment.sources else ""
        lines += [f"### {assignment.id}: {_points(assignment.score)} / {_points(assignment.max_score)}{graded_from}", "",
                  "| | exercise | points | status | feedback |", "|---|---|---:|---|---|"]
        explained: set[str] = set()
        for exercise in assignment.exercises:
            if exercise.status == "passed":
                feedback = exercise.notes[0] if exercise.notes else ""
            else:
                feedback = exercise.feedback.splitlines()[0]
            feedback = markdown_text(feedback)  # the submission's words (an exception it raised): data
            if exercise.misconceptions:
                feedback = f"`{'`, `'.join(exercise.misconceptions)}` {feedback}"
                feedback += "".join(f"<br>**{e.id}**: {e.explanation} *Hint:* {e.hint}" for e in exercise.explanations
                                    if e.id not in explained).replace("|", "\\|")  # each explained once per assignment
                explained.update(exercise.misconceptions)
            lines.append(f"| {_MARK[exercise.status]} | `{exercise.name}` | {_points(exercise.score)}/"
                         f"{_points(exercise.max_score)} | {_SHORT.get(exercise.status, exercise.status)} | {feedback} |")
        lines.append("")
        # a message of more than one line (an exception and its frames), whole, folded: once each
        shown: set[str] = set()
        for exercise in assignment.exercises:
            first = next((c for c in exercise.checks if c.status == exercise.status != "passed"), None)
            if first is None or "\n" not in first.message or first.message in shown:
                continue
            shown.add(first.message)
            text = f"{first.name}: {first.message}"
            fence = "~" * max(4, 1 + max((len(run) for run in re.findall(r"~+", text)), default=0))
            lines += [f"<details><summary><code>{html.escape(exercise.name)}</code>: the whole message</summary>",
                      "", f"{fence}text", text, fence, "", "</details>", ""]
    lines.append(f"Seed {result.seed} on {result.device}: {result.rerun}.")
    return "\n".join(lines) + "\n"
