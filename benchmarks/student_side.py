"""Student side vs instructor side: does `grade check` in a student distribution agree with the instructor?

Writes a student distribution once (what `grade release --out` writes: public suites, recorded reference
outputs, no solutions/ nor hidden suites) into a temporary folder. Then, for every corpus entry (the
reference solutions with the entry's definitions spliced in, as tests/corpus/corpus.py grades them), grades
the same submission twice: with the instructor's course (hidden suites, the reference, seed 2024) and with
the distribution's (public suites replayed from the recording). Compares, for every exercise of the entry's
assignment, the status and the misconception ids named, and the assignment's score as % of its points
(issue 32 wants equal statuses and ids, and scores within 5%).

Prints each entry that differs (worst score gap first), then the totals; exits 1 if any entry differs.

    python benchmarks/student_side.py [--assignment ID ...] [--only PREFIX] [--limit N] [--extra DIR ...]
                                      [--tolerance 5]

``--assignment ID``: that assignment's entries only, and a distribution of that assignment alone.

``--extra DIR``: more entries, each .py file of DIR whose docstring's first line is ``<exercise>: ...``.
"""
from __future__ import annotations

import argparse
import importlib.util
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def load_corpus():
    spec = importlib.util.spec_from_file_location("corpus", ROOT / "tests" / "corpus" / "corpus.py")
    module = sys.modules["corpus"] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def submission_of(entry, course, corpus, folder: Path) -> Path:
    """``folder/assignments``: the reference solutions, with ``entry`` spliced into its assignment's module."""
    target = folder / "assignments"
    for source in (ROOT / "solutions").iterdir():
        if source.is_dir():
            (target / source.name).mkdir(parents=True)
            for module in source.glob("*.py"):
                shutil.copy(module, target / source.name / module.name)
    assignment = course.assignment(corpus.assignment_of(course, entry.exercise))
    path = target / assignment.id / assignment.module
    path.write_text(corpus.splice(path.read_text(), entry.source))
    return target


def summary(assignment) -> dict:
    """``{exercise: (status, ids, score)}`` and the assignment's score."""
    return {e.name: (e.status, tuple(sorted(e.misconceptions)), e.score) for e in assignment.exercises}


def grade(grader, course, target: Path, assignment_id: str, seed: int | None):
    from grader.submission import resolve_submission

    assignment = course.assignment(assignment_id)
    result = grader.grade(resolve_submission(target, course), (assignment,), seed=seed).assignments[0]
    return summary(result), result.score, assignment.max_score


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--assignment", action="append", default=[], help="only this assignment (repeatable)")
    parser.add_argument("--only", default="", help="only entries whose exercise starts with this")
    parser.add_argument("--limit", type=int, default=0, help="grade at most N entries")
    parser.add_argument("--extra", type=Path, action="append", default=[], help="a folder of more entries")
    parser.add_argument("--tolerance", type=float, default=5.0, help="score gap allowed, %% of the points")
    options = parser.parse_args()

    from grader.config import load_course
    from grader.grading.grader import Grader

    started = time.monotonic()
    corpus = load_corpus()
    course = load_course(ROOT)
    entries = corpus.mistakes() + corpus.unnamed() + corpus.correct()
    for folder in options.extra:
        entries += [corpus._entry(path, None) for path in sorted(folder.glob("*.py"))]
    entries = [e for e in entries if e.exercise.startswith(options.only) and
               (not options.assignment or corpus.assignment_of(course, e.exercise) in options.assignment)]
    entries = entries[:options.limit] if options.limit else entries

    with tempfile.TemporaryDirectory(prefix="student-side-") as scratch:
        scratch = Path(scratch)
        # in another process: recording imports the course's own public suites, which would then shadow
        # the distribution's (same module names) in this one
        subprocess.run([sys.executable, "-m", "grader", "release", *options.assignment, "--out",
                        str(scratch / "distribution")], cwd=ROOT, check=True)
        student_course = load_course(scratch / "distribution")
        print(f"distribution written in {time.monotonic() - started:.0f} s; grading {len(entries)} entries",
              file=sys.stderr)
        graders = {}
        rows = []  # (gap %, entry, differing exercises, instructor score, student score, points)
        try:
            graders["instructor"] = Grader(course, device="cpu", batch=True)
            graders["student"] = Grader(student_course, device="cpu")
            for number, entry in enumerate(entries):
                target = submission_of(entry, course, corpus, scratch / f"entry{number}")
                assignment_id = corpus.assignment_of(course, entry.exercise)
                ours, our_score, points = grade(graders["instructor"], course, target, assignment_id, 2024)
                theirs, their_score, _ = grade(graders["student"], student_course, target, assignment_id, None)
                shutil.rmtree(target.parent)
                differ = [name for name in ours if ours[name][:2] != theirs.get(name, (None, None))[:2]]
                gap = 100 * abs(our_score - their_score) / points
                rows.append((gap, entry, differ, ours, theirs, our_score, their_score, points))
                if (number + 1) % 25 == 0:
                    print(f"  {number + 1}/{len(entries)} in {time.monotonic() - started:.0f} s", file=sys.stderr)
        finally:
            for grader in graders.values():
                grader.close()

    def cell(outcome) -> str:
        status, ids, score = outcome
        return f"{status} [{','.join(ids)}] {score:g}"

    bad = sorted((r for r in rows if r[2] or r[0] > options.tolerance), key=lambda r: (-r[0], r[1].name))
    for gap, entry, differ, ours, theirs, our_score, their_score, points in bad:
        shown = differ or [entry.exercise]
        parts = "; ".join(f"{name}: {cell(ours[name])} vs {cell(theirs.get(name, ('missing', (), 0)))}"
                          for name in shown)
        print(f"{entry.name} ({entry.exercise}) score {our_score:g} vs {their_score:g}/{points:g} "
              f"gap {gap:.1f}% | {parts}")
    status_diff = sum(any(r[3][n][0] != r[4].get(n, ("",))[0] for n in r[3]) for r in rows)
    names_diff = sum(any(r[3][n][1] != r[4].get(n, ("", ()))[1] for n in r[3]) for r in rows)
    over = sum(r[0] > options.tolerance for r in rows)
    worst = max(rows, key=lambda r: r[0], default=None)
    print(f"\nentries compared: {len(rows)}")
    print(f"with a status difference: {status_diff}")
    print(f"with a names difference: {names_diff}")
    print(f"with a score gap > {options.tolerance:g}%: {over}")
    if worst:
        print(f"worst gap: {worst[0]:.1f}% ({worst[1].name})")
    print(f"wall time: {time.monotonic() - started:.0f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
