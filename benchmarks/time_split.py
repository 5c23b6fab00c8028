"""Where one grading's time goes, from the grading process's side (issue 47): waiting for the student's
processes to answer (their requests, by kind), waiting for a worker to start (fork, confinement, the
module's import), and the grader's own work (the reference, comparisons, diagnoses, pytest), which is what
is left of the wall time. The solutions are graded, each assignment alone, in one grading process (the
zygote started and warm), a round first that is not counted.

    python benchmarks/time_split.py [--rounds 3] [--seed 1] [ASSIGNMENT ...]

A mistaken file's diagnosis, and corpus gradings (``tests/corpus/corpus.py``), spend more of their time on the
grader's side; the solutions are the issue's benchmark.
"""
from __future__ import annotations

import argparse
import collections
import functools
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("assignments", nargs="*")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    from grader.config import load_course
    from grader.grading.grader import Grader
    from grader.sandbox import client
    from grader.submission import resolve_submission

    spent: collections.Counter = collections.Counter()
    counts: collections.Counter = collections.Counter()

    def timed(owner, name, key):
        original = getattr(owner, name)

        @functools.wraps(original)
        def wrapper(self, *a, **k):
            started = time.perf_counter()
            try:
                return original(self, *a, **k)
            finally:
                label = key(self, a, k)
                spent[label] += time.perf_counter() - started
                counts[label] += 1
        setattr(owner, name, wrapper)

    kinds = {}  # worker -> the op of the request it was sent last

    def sent(self, a, k):
        payload = a[0] if a else k.get("payload", {})
        kinds[id(self)] = f"reply to {payload.get('op', '?')}"
        return "sending"

    timed(client.Worker, "send", sent)
    timed(client.Worker, "receive", lambda self, a, k: kinds.get(id(self), "reply"))
    timed(client.ZygoteClient, "take", lambda self, a, k: "a worker's start")

    course = load_course(ROOT)
    chosen = [course.assignment(a) for a in args.assignments] if args.assignments else list(course.assignments)
    grader = Grader(course, device="cpu")
    submission = resolve_submission(ROOT / "solutions", course)
    try:
        for assignment in chosen:
            grader.grade(submission, (assignment,), seed=args.seed)  # not counted: first use of each path
            spent.clear()
            counts.clear()
            started = time.perf_counter()
            for _ in range(args.rounds):
                grader.grade(submission, (assignment,), seed=args.seed)
            wall = (time.perf_counter() - started) / args.rounds
            waits = sum(spent.values()) / args.rounds
            print(f"{assignment.id}: {wall:.3f} s a grading; the grader's own work {wall - waits:.3f} s "
                  f"({(wall - waits) / wall:.0%})")
            for label, seconds in spent.most_common():
                print(f"    {label:<22} {seconds / args.rounds:7.3f} s  {counts[label] / args.rounds:6.1f} times")
    finally:
        grader.close()


if __name__ == "__main__":
    sys.exit(main())
