"""``grade report``: what a class got wrong, from its autograde results, for the instructor after a deadline.

It reads result folders as ``grade export`` does (shards merged, only results the manifest verifies),
and answers four questions. How did each assignment and exercise go? Which misconceptions cost the
class the most points, so what should be taught again? Who needs help? How did the run go? The
numbers are computed once (:func:`summarise`) and rendered as JSON, CSV (a row per exercise and
misconception), Markdown (``$GITHUB_STEP_SUMMARY``) or one self-contained HTML page
(grader/class_report_html.py).

A misconception's cost is the points its exercises lost, shared among the misconceptions each
exercise names. Students are counted once per misconception. ``--anonymise`` replaces every name
with a stable pseudonym, derived from the name alone, so that two reports of one class agree.
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
import statistics
from pathlib import Path

from grader.catalogue import CATALOGUE

FORMATS = ("html", "json", "csv", "markdown")
OUTCOMES = ("full", "partial", "zero", "not_attempted", "timeout", "error", "grader_error")
BINS = 10  # histogram bars: tenths of the assignment's points


def gather(result_dirs: list[Path], warnings: list[str], *, mixed_seeds: bool = False) -> list[dict]:
    """Every verified result of ``result_dirs``, shards merged (see :func:`grader.export.collect`)."""
    from grader.export import collect

    return list(collect(result_dirs, warnings, mixed_seeds=mixed_seeds).values())


def pseudonym(name: str) -> str:
    """A stable stand-in for a student's name: the same name always gives the same pseudonym."""
    digest = hashlib.sha256(f"grade-report:{name}".encode("utf-8", "backslashreplace")).hexdigest()
    return f"student-{digest[:8]}"


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


def summarise(results: list[dict], *, anonymise: bool = False) -> dict:
    """The report's numbers, as plain data (what ``--format json`` writes)."""
    named = [(pseudonym(r["submission"]), _anonymised(r)) if anonymise else (r["submission"], r) for r in results]
    named.sort(key=lambda item: item[0])
    order: dict[str, dict] = {}
    for _, data in named:
        for assignment in data.get("assignments", ()):
            entry = order.setdefault(assignment["id"], {"id": assignment["id"], "exercises": {}})
            for exercise in assignment.get("exercises", ()):
                entry["exercises"].setdefault(exercise["name"], exercise.get("max_score", 0))
    assignments = [_assignment(spec, named) for spec in order.values()]
    return {"schema": 1, "students": len(named), "assignments": assignments,
            "misconceptions": _misconceptions(named), "help": _help(named), "run": _run(named),
            "feedback": [{"student": name, "score": data.get("score", 0), "max_score": data.get("max_score", 0),
                          "text": student_text(data)} for name, data in named]}


def _anonymised(data: dict) -> dict:
    """``data`` with the student's name replaced wherever it stands as a word (paths in tracebacks)."""
    import re

    escaped = json.dumps(data["submission"])[1:-1]  # the name as it stands inside the JSON text
    if not escaped:
        return data
    pattern = re.compile(rf"(?<![\w.-]){re.escape(escaped)}(?![\w-])")
    return json.loads(pattern.sub(pseudonym(data["submission"]), json.dumps(data)))


def _of(data: dict, assignment_id: str) -> list[dict]:
    return next((a.get("exercises", []) for a in data.get("assignments", ()) if a.get("id") == assignment_id), [])


def _counts(outcomes: list[str]) -> dict[str, int]:
    return {kind: outcomes.count(kind) for kind in OUTCOMES}


def _assignment(spec: dict, named) -> dict:
    top = sum(spec["exercises"].values())
    taking = [(name, _of(data, spec["id"])) for name, data in named if _of(data, spec["id"])]
    scores = [sum(e.get("score", 0) for e in exercises) for _, exercises in taking]
    histogram = [0] * BINS
    for score in scores:
        histogram[min(int(BINS * score / top), BINS - 1) if top else 0] += 1
    exercises = []
    for name, points in spec["exercises"].items():
        graded = [e for _, ex in taking for e in ex if e.get("name") == name]
        lost = sum(e.get("max_score", 0) - e.get("score", 0) for e in graded if e.get("status") != "grader-error")
        exercises.append({"name": name, "points": points, "counts": _counts([_outcome([e]) for e in graded]),
                          "points_lost": round(lost, 2),
                          "mean": round(statistics.fmean([e.get("score", 0) for e in graded]), 2) if graded else 0})
    return {"id": spec["id"], "max_score": top, "students": len(taking),
            "median": round(statistics.median(scores), 2) if scores else 0, "histogram": histogram,
            "counts": _counts([_outcome(ex) for _, ex in taking]), "exercises": exercises}


def _misconceptions(named) -> list[dict]:
    found: dict[str, dict] = {}
    for student, data in named:
        for assignment in data.get("assignments", ()):
            for exercise in assignment.get("exercises", ()):
                ids = list(dict.fromkeys(exercise.get("misconceptions") or ()))
                if not ids or exercise.get("status") == "grader-error":
                    continue
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
    ranked = []
    for entry in found.values():
        known = CATALOGUE.get(entry["id"])
        ranked.append({"id": entry["id"], "points_lost": round(entry["points_lost"], 2),
                       "students": len(entry["students"]), "names": sorted(entry["students"]),
                       "exercises": [{"exercise": where, "students": n["students"],
                                      "points_lost": round(n["points_lost"], 2)}
                                     for where, n in sorted(entry["exercises"].items())],
                       "explanation": known.explanation if known else "", "hint": known.hint if known else "",
                       "section": _section(known.hint) if known else ""})
    return sorted(ranked, key=lambda e: (-e["points_lost"], -e["students"], e["id"]))


def _section(hint: str) -> str:
    """The lesson section a catalogue hint points to (``03 section 2, "Masking with -inf"``), if it names one."""
    import re

    found = re.search(r"\b(0\d) section (\d+)(?:, \"([^\"]+)\")?", hint)
    if not found:
        return ""
    return f"{found.group(1)} section {found.group(2)}" + (f": {found.group(3)}" if found.group(3) else "")


def _help(named) -> list[dict]:
    """Students to look at: 0 points, stubs only, crashed or grader errors, timeouts."""
    rows = []
    for student, data in named:
        exercises = [e for a in data.get("assignments", ()) for e in a.get("exercises", ())]
        statuses = {e.get("status") for e in exercises}
        what = []
        if "grader-error" in statuses:
            what.append("grader error: not a score, grade again")
        if exercises and statuses == {"not_implemented"}:
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
    durations = sorted(((data.get("duration_s") or 0.0, student) for student, data in named), reverse=True)
    return {"seeds": sorted({data.get("seed") for _, data in named if data.get("seed") is not None}),
            "isolation": sorted({data.get("isolation", "") for _, data in named} - {""}),
            "devices": sorted({data.get("device", "") for _, data in named} - {""}),
            "median_duration_s": round(statistics.median([d for d, _ in durations]), 2) if durations else 0,
            "slowest": [{"student": s, "duration_s": round(d, 2)} for d, s in durations[:5]]}


def student_text(data: dict) -> str:
    """What ``grade check`` printed for this result (its table format), rebuilt from the JSON result."""
    from grader.report import table_of

    return table_of(data)


# --- the formats -----------------------------------------------------------------------------------------
def render(summary: dict, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(summary, indent=1) + "\n"
    if fmt == "csv":
        return _csv(summary)
    if fmt == "markdown":
        return _markdown(summary)
    from grader.class_report_html import page

    return page(summary)


def _csv(summary: dict) -> str:
    """One row per exercise and misconception (and one per exercise with none, its counts)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["assignment", "exercise", "misconception", "students", "points_lost", *OUTCOMES])
    named = {(m["id"], e["exercise"]): e for m in summary["misconceptions"] for e in m["exercises"]}
    for assignment in summary["assignments"]:
        for exercise in assignment["exercises"]:
            where = f"{assignment['id']}:{exercise['name']}"
            counts = [exercise["counts"][k] for k in OUTCOMES]
            writer.writerow([assignment["id"], exercise["name"], "", "", f"{exercise['points_lost']:g}", *counts])
            for (misconception, at), entry in sorted(named.items()):
                if at == where:  # the points this misconception cost in this exercise
                    writer.writerow([assignment["id"], exercise["name"], misconception, entry["students"],
                                     f"{entry['points_lost']:g}", *[""] * len(OUTCOMES)])
    return buffer.getvalue()


def _markdown(summary: dict) -> str:
    lines = [f"## What the class got wrong ({summary['students']} students)", ""]
    lines += ["| assignment | students | median | full | partial | zero | not attempted | timeout | error "
              "| grader error |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for a in summary["assignments"]:
        c = a["counts"]
        lines.append(f"| {a['id']} | {a['students']} | {a['median']:g}/{a['max_score']:g} | "
                     + " | ".join(str(c[k]) for k in OUTCOMES) + " |")
    lines += ["", "| exercise | points lost | mean |", "|---|---:|---:|"]
    lines += [f"| {a['id']}:{e['name']} | {e['points_lost']:g} | {e['mean']:g}/{e['points']:g} |"
              for a in summary["assignments"] for e in a["exercises"]]
    lines += ["", "### What to teach again", "", "| misconception | points lost | students | exercises | hint |",
              "|---|---:|---:|---|---|"]
    for m in summary["misconceptions"]:
        where = ", ".join(e["exercise"] for e in m["exercises"])
        lines.append(f"| `{m['id']}` | {m['points_lost']:g} | {m['students']} | {where} | {_cell(m['hint'])} |")
    if summary["help"]:
        lines += ["", "### Who needs help", ""] + [f"- {h['student']}: {h['what']}" for h in summary["help"]]
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
