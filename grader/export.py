"""``grade export``: one CSV of all grades, merging the result folders of every autograde shard."""
from __future__ import annotations

import csv
import io
from pathlib import Path

from grader.autograde import read_result
from grader.config import Course
from grader.errors import UsageError


def collect(result_dirs: list[Path]) -> dict[str, dict]:
    """Every result by submission; where shards overlap, the most recent result of a name wins."""
    found: dict[str, tuple[float, dict]] = {}
    for folder in result_dirs:
        if not folder.is_dir():
            raise UsageError(f"no such result folder: {folder}")
        for path in folder.glob("*.json"):
            data = read_result(path)
            if data is not None:
                stamp = path.stat().st_mtime
                if data["submission"] not in found or stamp > found[data["submission"]][0]:
                    found[data["submission"]] = (stamp, data)
    return {name: data for name, (_, data) in sorted(found.items())}


def export_csv(course: Course, result_dirs: list[Path]) -> str:
    """A row per submission: total, each assignment, each exercise."""
    assignments = [a.id for a in course.assignments]
    exercises = [f"{a.id}:{name}" for a in course.assignments for name in a.exercises]
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["submission", "score", "max_score", *assignments, *exercises])
    for name, data in collect(result_dirs).items():
        by_assignment = {a["id"]: a for a in data["assignments"]}
        scores = {f"{a['id']}:{e['name']}": e["score"] for a in data["assignments"] for e in a["exercises"]}
        writer.writerow([name, data["score"], data["max_score"],
                         *[by_assignment[a]["score"] if a in by_assignment else "" for a in assignments],
                         *[scores.get(e, "") for e in exercises]])
    return buffer.getvalue()
