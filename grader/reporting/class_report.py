"""``grade report``: what a class got wrong, from its autograde results, for the instructor after a deadline.

It reads result folders as ``grade export`` does (shards merged, only results the manifest verifies),
and answers four questions. How did each assignment and exercise go? Which misconceptions cost the
class the most points, so what should be taught again? Who needs help? How did the run go? The
numbers are computed once (:func:`summarise`) and rendered as JSON, CSV (a row per exercise and
misconception), Markdown (``$GITHUB_STEP_SUMMARY``) or one self-contained HTML page
(grader/reporting/class_page.py).

A misconception's cost is the points its exercises lost, shared among the misconceptions each
exercise names. Students are counted once per misconception. Points lost are lost to mistakes: an
exercise not attempted (``not_implemented``: a stub, or no file handed in) is counted apart, as points
not attempted, never as a mistake (nor are the points of a submission that could not be read).
``--anonymise`` replaces every name with a stable pseudonym, keyed by a secret the course keeps
(``.grade-secret`` in the course folder, made on first use and never printed), so that two reports of
one class agree and no roster recomputes them. Names are data everywhere: a result's name field, and
the name wherever it stands in any text of the result (feedback, messages, the file graded from, a
path in a traceback, "jo.zip is not a valid .zip file"), in every form it took (the raw name before
it was cleaned, a collision's shared name), is replaced, all of it in one place (:func:`_anonymised`),
before anything is rendered; keys, ids, exercise names, statuses and numbers never are.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import re
import statistics
from pathlib import Path

from grader.reporting.figures import valid_figure
from grader.reporting.course_secret import SECRET_FILE, course_secret  # noqa: F401 - the report's secret
from grader.reporting.formats import csv_text, markdown_text
from grader.reporting.result_folder import never_ran, not_graded
from grader.results import collision_of

FORMATS = ("html", "json", "csv", "markdown")
OUTCOMES = ("full", "partial", "zero", "not_attempted", "timeout", "error", "grader_error")
BINS = 10  # histogram bars: tenths of the assignment's points, then full marks in a bar of its own
# the fields of a result that are its structure, never text: ids, exercise and check names, statuses,
# misconception ids, the catalogue's hints, a figure's lesson labels and numbers ("nan", "inf"), how it
# ran. Every other string of a result (feedback, what grade check showed, the file graded from, the
# grader's error, any field added later) is text in which a student's name may stand
_STRUCTURE = frozenset({"id", "name", "status", "misconceptions", "hints", "figure", "device", "isolation",
                        "started", "schema"})
# what discover.safe_name writes as "_": a control character (a text shows it as U+FFFD), one that hides
# or reorders text (shown as <U+202E>), "/", "\\" and "~"; a byte that is not UTF-8 is "_xNN", which a
# text shows as "\\xNN" (discover's messages) or "\\udcNN" (a path as Python decoded it)
_CLEANED = r"(?:[_/\\~\ufffd\x00-\x1f\x7f]|<U\+[0-9A-F]{4,6}>)"


def gather(result_dirs: list[Path], warnings: list[str], *, secret: bytes | None,
           mixed_seeds: bool = False) -> list[dict]:
    """Every result of ``result_dirs`` that the course's ``secret`` verifies, shards merged (see
    :func:`grader.reporting.result_folder.collect`)."""
    from grader.reporting.result_folder import collect

    return list(collect(result_dirs, warnings, secret=secret, mixed_seeds=mixed_seeds).values())


def pseudonym(name: str, secret: bytes) -> str:
    """A student's stand-in: one name and one course's secret always give the same one; without the
    secret (:func:`course_secret`) no list of names recomputes it."""
    digest = hmac.new(secret, name.encode("utf-8", "backslashreplace"), hashlib.sha256).hexdigest()
    return f"student-{digest[:10]}"


def _outcome(exercises: list[dict]) -> str:
    """How a student did on an assignment (or one exercise): the first that applies of OUTCOMES."""
    statuses = {e.get("status") for e in exercises}
    score = sum(e.get("score", 0) for e in exercises)
    top = sum(e.get("max_score", 0) for e in exercises)
    if "grader-error" in statuses:
        return "grader_error"
    if statuses == {"not_implemented"}:
        return "not_attempted"
    if "timeout" in statuses:  # whatever the score: the code did not finish somewhere
        return "timeout"
    if statuses & {"error", "crashed"}:
        return "error"
    if top and score >= top:
        return "full"
    return "partial" if score > 0 else "zero"


def summarise(results: list[dict], *, secret: bytes | None = None) -> dict:
    """The report's numbers, as plain data (what ``--format json`` writes). With ``secret``, the
    course's (``--anonymise``), every name is its pseudonym."""
    named = [_named(r, secret) for r in results]
    named.sort(key=lambda item: item[0])
    collided = {name: collision_of(data, names=secret is None) for name, data in named}
    order: dict[str, dict] = {}
    for _, data in named:
        for assignment in data.get("assignments", ()):
            entry = order.setdefault(assignment["id"], {"id": assignment["id"], "exercises": {}})
            for exercise in assignment.get("exercises", ()):
                entry["exercises"].setdefault(exercise["name"], exercise.get("max_score", 0))
    assignments = [_assignment(spec, named) for spec in order.values()]
    return {"schema": 1, "students": len(named), "assignments": assignments,
            "misconceptions": _misconceptions(named), "help": _help(named, collided), "run": _run(named),
            "feedback": [{"student": name, "score": data.get("score", 0), "max_score": data.get("max_score", 0),
                          "text": student_text(data)} for name, data in named]}


def _named(data: dict, secret: bytes | None) -> tuple[str, dict]:
    """A result and the name the report gives it: its own, or with ``secret`` its pseudonym."""
    name = str(data["submission"])
    if secret is None:
        return name, data
    alias = pseudonym(name, secret)
    return alias, _anonymised(data, name, alias)


def _anonymised(data: dict, name: str, alias: str) -> dict:
    """``data`` with ``name`` replaced by ``alias`` in its name field and, in each of its forms
    (:func:`name_pattern`), in every text it holds. Keys, ids and numbers stay as they are: a student named
    ``0``, ``id`` or after an exercise changes nothing else. The one place a report hides a name: each
    message that could carry one (an archive's, a folder's, a notebook's path, a collision) is caught
    here, whatever said it, rather than in each message."""
    word = name_pattern(data, name)
    hidden = {"name_collision": {}} if "name_collision" in data else {}  # it holds other students' raw names
    return {**_replaced(data, word, alias), "submission": alias, **hidden}


def name_pattern(data: dict, name: str) -> re.Pattern | None:
    """Where the name of the submission ``data`` is a result of stands in a text, in any of its forms: the
    name it was graded under (``bob~collided-…``), the raw name and the name it cleaned to where it
    collided with another's (``bob.zip``, ``bob``), and the raw forms of a cleaned name (``jo~x`` for
    ``jo_x``, ``caf\\xe9`` for ``caf_xe9``). It stands where no letter, digit, "." or "-" is before
    it and no letter, digit or "-" after it: ``jo.zip``, ``/tmp/…/jo/``, ``jo_week1.ipynb`` hide
    ``jo``; ``john``, ``1.0`` (a student named ``0``) and ``not-vectorised`` (a student named ``not``)
    keep theirs."""
    found = data.get("name_collision") if isinstance(data.get("name_collision"), dict) else {}
    forms = {name, str(found.get("name") or ""), str(found.get("raw") or "")}
    forms = sorted((form for form in forms if form.strip()), key=len, reverse=True)  # the longest first
    if not forms:
        return None
    return re.compile(rf"(?<![^\W_]|[.-])(?:{'|'.join(map(_raw_forms, forms))})(?![^\W_]|-)")


def _raw_forms(name: str) -> str:
    """A regular expression of ``name`` and each raw name that cleans to it (see _CLEANED)."""
    parts = []
    for token in re.findall(r"_x[0-9a-f]{2}|.", name, re.DOTALL):
        if len(token) == 4:  # _xNN
            parts.append(rf"(?:{_CLEANED}x{token[2:]}|\\udc{token[2:]})")
        else:
            parts.append(_CLEANED if token == "_" else re.escape(token))
    if name.startswith("_."):  # ".hidden" was written "_.hidden"
        parts[0] += "?"
    return "".join(parts)


def _replaced(value, word: re.Pattern | None, alias: str, key: str = ""):
    """``value`` copied, ``word`` replaced by ``alias`` in every string but those of its structure."""
    if key in _STRUCTURE or word is None:
        return value
    if isinstance(value, dict):
        return {k: _replaced(v, word, alias, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_replaced(v, word, alias, key) for v in value]
    if isinstance(value, str):
        return word.sub(lambda _: alias, value)
    return value


def _of(data: dict, assignment_id: str) -> list[dict]:
    return next((a.get("exercises", []) for a in data.get("assignments", ()) if a.get("id") == assignment_id), [])


def _counts(outcomes: list[str]) -> dict[str, int]:
    return {kind: outcomes.count(kind) for kind in OUTCOMES}


def _assignment(spec: dict, named) -> dict:
    top = sum(spec["exercises"].values())
    # a submission that could not be read has no score (exported empty, never a 0): it is counted apart,
    # never in the median, the histogram or the means (a newcomer's class of 13 showed three such as 0/100)
    unread = [name for name, data in named if _of(data, spec["id"]) and not_graded(data)]
    taking = [(name, _of(data, spec["id"])) for name, data in named if _of(data, spec["id"]) and not not_graded(data)]
    scores = [sum(e.get("score", 0) for e in exercises) for _, exercises in taking]
    histogram = [0] * (BINS + 1)
    for score in scores:
        histogram[_bin(score, top)] += 1
    exercises = []
    for name, points in spec["exercises"].items():
        graded = [e for _, ex in taking for e in ex if e.get("name") == name]
        missed = {kind: round(sum(e.get("max_score", 0) - e.get("score", 0) for e in graded if _missed(e) == kind), 2)
                  for kind in ("mistake", "not_attempted")}
        exercises.append({"name": name, "points": points, "counts": _counts([_outcome([e]) for e in graded]),
                          "points_lost": missed["mistake"], "points_not_attempted": missed["not_attempted"],
                          "mean": round(statistics.fmean([e.get("score", 0) for e in graded]), 2) if graded else 0})
    return {"id": spec["id"], "max_score": top, "students": len(taking), "not_graded": len(unread),
            "median": round(statistics.median(scores), 2) if scores else 0, "histogram": histogram,
            "bins": bin_labels(top), "counts": _counts([_outcome(ex) for _, ex in taking]), "exercises": exercises}


def _missed(exercise: dict) -> str:
    """Why an exercise's missing points are missing: ``not_attempted`` (a stub, or no file handed in),
    ``mistake``, or ``""`` where the grader could not grade it (no valid score, so no points lost): it
    failed, or the submission could not be read (its one check, ``submission``, an ``error``)."""
    status = exercise.get("status")
    unread = status == "error" and [c.get("name") for c in exercise.get("checks", ())] == ["submission"]
    if status == "grader-error" or unread:
        return ""
    return "not_attempted" if status == "not_implemented" else "mistake"


def _bin(score: float, top: float) -> int:
    """The histogram bar of ``score`` out of ``top``: its tenth of the points (a tenth holds its start,
    not its end), or the last bar, full marks, of its own."""
    if not top:
        return 0
    if score >= top:
        return BINS
    return max(0, min(int(BINS * score / top), BINS - 1))


def bin_labels(top: float) -> list[str]:
    """Each bar's label, as the range of scores it holds: ``0–9`` ... ``90–99`` and ``100`` for 100
    points (whole bounds), ``0–<2.5`` where a tenth is not whole or is a single point."""
    edges = [top * i / BINS for i in range(BINS + 1)]
    whole = all(float(edge).is_integer() and edge > 0 for edge in edges[1:])
    labels = [f"{start:g}–{end - 1:g}" if whole and end - start > 1 else f"{start:g}–<{end:g}"
              for start, end in zip(edges, edges[1:])]
    return [*labels, f"{top:g}"]


def _misconceptions(named) -> list[dict]:
    """Each id named, with the points it cost, the students and exercises, and its words as the results
    recorded them (the course's catalogue when it was graded: ``hints``)."""
    found: dict[str, dict] = {}
    words: dict[str, dict] = {}
    for student, data in named:
        for assignment in data.get("assignments", ()):
            for exercise in assignment.get("exercises", ()):
                ids = list(dict.fromkeys(exercise.get("misconceptions") or ()))
                if not ids or _missed(exercise) != "mistake":
                    continue
                for hint in exercise.get("hints") or ():
                    if isinstance(hint, dict) and isinstance(hint.get("misconception"), str):
                        words.setdefault(hint["misconception"], {k: str(hint.get(k) or "") for k in
                                                                 ("explanation", "hint")})
                lost = (exercise.get("max_score", 0) - exercise.get("score", 0)) / len(ids)
                for misconception in ids:
                    entry = found.setdefault(misconception, {"id": misconception, "points_lost": 0.0,
                                                             "students": set(), "exercises": {}})
                    entry["points_lost"] += lost
                    entry["students"].add(student)
                    where = entry["exercises"].setdefault(f"{assignment.get('id')}:{exercise.get('name')}",
                                                          {"students": 0, "points_lost": 0.0})
                    where["students"] += 1
                    where["points_lost"] += lost
                    if valid_figure(exercise.get("figure")):  # theirs beside the right one (grader/reporting/figures.py)
                        entry.setdefault("figures", []).append((student, assignment.get("id"), exercise))
    ranked = []
    for entry in found.values():
        known = words.get(entry["id"]) or {}
        ranked.append({"id": entry["id"], "points_lost": round(entry["points_lost"], 2),
                       "students": len(entry["students"]), "names": sorted(entry["students"]),
                       "exercises": [{"exercise": where, "students": n["students"],
                                      "points_lost": round(n["points_lost"], 2)}
                                     for where, n in sorted(entry["exercises"].items())],
                       "explanation": known.get("explanation", ""), "hint": known.get("hint", ""),
                       "section": _section(known.get("hint", "")),
                       **({"figure": _typical(entry["figures"])} if entry.get("figures") else {})})
    return sorted(ranked, key=lambda e: (-e["points_lost"], -e["students"], e["id"]))


def _typical(found: list) -> dict:
    """The figure of a typical student with the misconception: the output most of them gave (the first
    such student by name, on a tie), with who gave it and how many gave the same."""
    from collections import Counter

    def output(item):
        return json.dumps([item[1], item[2]["name"], item[2]["figure"]["theirs"]])

    alike = Counter(map(output, found))
    most = max(alike.values())
    student, assignment, exercise = next(item for item in found if alike[output(item)] == most)  # found: by name
    return {**exercise["figure"], "student": student, "exercise": f"{assignment}:{exercise['name']}",
            "students_alike": most}


def _section(hint: str) -> str:
    """The lesson section a catalogue hint points to (``03 section 2, "Masking with -inf"``), if it names one."""
    found = re.search(r"\b(0\d) section (\d+)(?:, \"([^\"]+)\")?", hint)
    if not found:
        return ""
    return f"{found.group(1)} section {found.group(2)}" + (f": {found.group(3)}" if found.group(3) else "")


def _help(named, collided: dict[str, str]) -> list[dict]:
    """Students to look at: a name that collided with another's (whose result is whose?), 0 points,
    stubs only, crashed or grader errors, timeouts."""
    rows = []
    for student, data in named:
        exercises = [e for a in data.get("assignments", ()) for e in a.get("exercises", ())]
        statuses = {e.get("status") for e in exercises}
        what = [collided[student]] if collided.get(student) else []
        unread = not_graded(data)
        if "grader-error" in statuses:
            what.append("grader error: not a score, grade again")
        if unread:
            what.append(f"not graded, its submission could not be read: {unread}")
        elif exercises and statuses == {"not_implemented"}:
            what.append("stubs only: nothing attempted")
        elif data.get("score", 0) == 0 and "grader-error" not in statuses:
            what.append("0 points")
        if "crashed" in statuses:
            what.append("its code crashed the grading process twice (not a grader fault)")
        if "timeout" in statuses:
            what.append(f"timed out in {sum(e.get('status') == 'timeout' for e in exercises)} exercise(s)")
        if what:
            rows.append({"student": student, "score": data.get("score", 0), "max_score": data.get("max_score", 0),
                         "what": "; ".join(what)})
    return rows


def _run(named) -> dict:
    """How the run went: its seeds, and, of the submissions whose code ran (never_ran: a result made
    without grading, such as a corrupt zip's, holds placeholders), how and where it ran and how long."""
    ran = [(student, data) for student, data in named if not never_ran(data)]
    durations = sorted(((data.get("duration_s") or 0.0, student) for student, data in ran), reverse=True)
    return {"seeds": sorted({data.get("seed") for _, data in named if data.get("seed") is not None}),
            "isolation": sorted({data.get("isolation", "") for _, data in ran} - {""}),
            "devices": sorted({data.get("device", "") for _, data in ran} - {""}),
            "median_duration_s": round(statistics.median([d for d, _ in durations]), 2) if durations else 0,
            "slowest": [{"student": s, "duration_s": round(d, 2)} for d, s in durations[:5]]}


def student_text(data: dict) -> str:
    """What ``grade check`` printed for this result (its table format), rebuilt from the JSON result."""
    from grader.reporting.formats import table_of

    return table_of(data)


# --- the formats -----------------------------------------------------------------------------------------
def render(summary: dict, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(summary, indent=1) + "\n"
    if fmt == "csv":
        return _csv(summary)
    if fmt == "markdown":
        return _markdown(summary)
    from grader.reporting.class_page import page

    return page(summary)


def _csv(summary: dict) -> str:
    """One row per exercise and misconception (and one per exercise with none, its counts)."""
    rows = [["assignment", "exercise", "misconception", "students", "points_lost", "points_not_attempted",
             *OUTCOMES]]
    named = {(m["id"], e["exercise"]): e for m in summary["misconceptions"] for e in m["exercises"]}
    for assignment in summary["assignments"]:
        for exercise in assignment["exercises"]:
            where = f"{assignment['id']}:{exercise['name']}"
            counts = [exercise["counts"][k] for k in OUTCOMES]
            rows.append([assignment["id"], exercise["name"], "", "", _number(exercise["points_lost"]),
                         _number(exercise.get("points_not_attempted", 0)), *counts])
            for (misconception, at), entry in sorted(named.items()):
                if at == where:  # the points this misconception cost in this exercise
                    rows.append([assignment["id"], exercise["name"], misconception, entry["students"],
                                 _number(entry["points_lost"]), "", *[""] * len(OUTCOMES)])
    return csv_text(rows)


def _number(points: float) -> float | int:
    """Points as a number a spreadsheet reads as one: 15, not 15.0."""
    return int(points) if float(points).is_integer() else points


def _markdown(summary: dict) -> str:
    """The report for ``$GITHUB_STEP_SUMMARY``: every name and text in it shown as written, never as
    Markdown or HTML of its own (grader.reporting.formats.markdown_text)."""
    md = markdown_text
    lines = [f"## What the class got wrong ({summary['students']} students)", ""]
    lines += ["| assignment | students | median | full | partial | zero | not attempted | timeout | error "
              "| grader error |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for a in summary["assignments"]:
        c = a["counts"]
        unread = f" (+{a['not_graded']} not graded)" if a.get("not_graded") else ""
        lines.append(f"| {md(a['id'])} | {a['students']}{unread} | {a['median']:g}/{a['max_score']:g} | "
                     + " | ".join(str(c[k]) for k in OUTCOMES) + " |")
    lines += ["", "| exercise | points lost to mistakes | points not attempted | mean |", "|---|---:|---:|---:|"]
    lines += [f"| {md(a['id'])}:{md(e['name'])} | {e['points_lost']:g} | {e.get('points_not_attempted', 0):g} | "
              f"{e['mean']:g}/{e['points']:g} |" for a in summary["assignments"] for e in a["exercises"]]
    lines += ["", "### What to teach again", "", "| misconception | points lost | students | exercises | hint |",
              "|---|---:|---:|---|---|"]
    for m in summary["misconceptions"]:
        where = ", ".join(md(e["exercise"]) for e in m["exercises"])
        lines.append(f"| {_code(m['id'])} | {m['points_lost']:g} | {m['students']} | {where} | {md(m['hint'])} |")
    if summary["help"]:
        lines += ["", "### Who needs help", ""] + [f"- {md(h['student'])}: {md(h['what'])}" for h in summary["help"]]
    return "\n".join(lines) + "\n"


def _code(text: str) -> str:
    """``text`` as code in a table's cell, whole: fenced by more backticks than it holds in a row."""
    text = " ".join(str(text).splitlines()).replace("|", "\\|")
    fence = "`" * (1 + max((len(run) for run in re.findall(r"`+", text)), default=0))
    pad = " " if text[:1] in ("`", " ") or text[-1:] in ("`", " ") else ""
    return f"{fence}{pad}{text}{pad}{fence}"
