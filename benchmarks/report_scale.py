"""``grade report`` of a synthetic class of 2,000 results (issue 23's bound: under 5 s, under 5 MB of HTML).

A class this large gets each student's feedback (as ``grade check`` printed it) in a companion page
beside the report, whose size is printed too. The results are made, not graded: each student gets the course's assignments with scores, statuses and
misconceptions drawn at random (a fixed seed), written as a result folder with its manifest, as
``grade autograde`` leaves one. The time is ``grade report``'s own, in a process of its own.

    python benchmarks/report_scale.py [--students 2000]
"""
from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def make_class(out: Path, students: int, seed: int = 1) -> None:
    """``students`` results in ``out``, listed in its manifest."""
    from grader.catalogue import CATALOGUE
    from grader.config import load_course
    from grader.reporting.course_secret import course_secret
    from grader.reporting.result_folder import write_manifest

    course = load_course(ROOT)
    ids = sorted(CATALOGUE)
    rng = random.Random(seed)
    out.mkdir(parents=True)
    written = {}
    for number in range(students):
        name = f"student{number:04d}"
        assignments = []
        for assignment in course.assignments:
            exercises = []
            for exercise, points in assignment.points:
                roll = rng.random()
                status = "passed" if roll < 0.7 else "failed" if roll < 0.9 else \
                    rng.choice(["not_implemented", "timeout", "error"])
                score = points if status == "passed" else round(points * rng.choice([0, 0.25, 0.5, 0.75]), 2) \
                    if status == "failed" else 0
                named = [rng.choice(ids)] if status == "failed" and rng.random() < 0.6 else []
                exercises.append({"name": exercise, "score": score, "max_score": points, "status": status,
                                  "misconceptions": named, "feedback": "" if status == "passed" else
                                  f"{exercise}_random: {exercise}(<[2, 5, 8] float32>): the output is off at 12 of 80 "
                                  f"entries; the largest error is 0.31 at index (1, 2, 3) (seed {seed})",
                                  "hints": [], "duration_s": 0.05, "source": assignment.module, "checks": []})
            assignments.append({"id": assignment.id, "score": round(sum(e["score"] for e in exercises), 2),
                                "max_score": sum(e["max_score"] for e in exercises), "exercises": exercises})
        data = {"schema": 1, "submission": name, "seed": seed, "device": "cpu",
                "score": round(sum(a["score"] for a in assignments), 2),
                "max_score": sum(a["max_score"] for a in assignments), "duration_s": rng.uniform(2, 6),
                "started": "", "isolation": "separate-user", "assignments": assignments}
        written[name] = json.dumps(data, indent=2) + "\n"
        (out / f"{name}.json").write_text(written[name])
    write_manifest(out, written, {}, secret=course_secret(ROOT))  # keyed, as autograde writes it


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        results, page = Path(folder) / "grades", Path(folder) / "report.html"
        make_class(results, args.students)
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "grader", "report", str(results), "--out", str(page)], cwd=ROOT,
                       check=True, capture_output=True)
        elapsed = time.perf_counter() - started
        size = page.stat().st_size
        companion = page.with_name("report-students.html")
        beside = companion.stat().st_size if companion.exists() else 0
    print(f"grade report of {args.students} results: {elapsed:.2f} s (bound 5 s), "
          f"{size / 1e6:.2f} MB of HTML (bound 5 MB)"
          + (f"; each student's feedback beside it: {beside / 1e6:.2f} MB" if beside else ""))


if __name__ == "__main__":
    main()
