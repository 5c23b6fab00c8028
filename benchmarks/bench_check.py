"""`grade check` against a bare `python -c "import torch"`, as ratios measured in one run.

Runs are interleaved (torch, one assignment, whole course, torch, ...) so that a noisy machine
slows every kind alike, and the median of each kind is compared. Targets (issue 47, with student
code in its sandbox, on the solutions, which hold the module and the notebook of each assignment): one
assignment (01, and 06 with its KV-cache classes) <= 1.0x, the whole course (six assignments) <= 1.4x
the bare torch import (issue 24's were 1.3x and 2.0x).

    python benchmarks/bench_check.py [--rounds 7]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KINDS = {
    "import torch": [sys.executable, "-c", "import torch"],
    "grade check 01 (one assignment)": [sys.executable, "-m", "grader", "check", "01_attention_basics",
                                        "--submission", "solutions", "--format", "json"],
    "grade check 06 (one assignment)": [sys.executable, "-m", "grader", "check", "06_decoding_attention",
                                        "--submission", "solutions", "--format", "json"],
    "grade check (whole course)": [sys.executable, "-m", "grader", "check", "--submission", "solutions",
                                   "--format", "json"],
    "grade check (course, one process)": [sys.executable, "-m", "grader", "check", "--submission", "solutions",
                                          "--format", "json"],
}
# the course graded by one process, as before issue 47's second grading process (grader/grading/twins.py)
ENVIRONMENTS = {"grade check (course, one process)": {"GRADE_TWINS": "0"}}
TARGETS = {"grade check 01 (one assignment)": 1.0, "grade check 06 (one assignment)": 1.0,
           "grade check (whole course)": 1.4}


def timed(command, environment=None) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True,
                          env=None if environment is None else {**os.environ, **environment})
    elapsed = time.perf_counter() - started
    if done.returncode not in (0,):
        sys.exit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    rounds = parser.parse_args().rounds
    for kind, command in KINDS.items():  # warm the file cache once
        timed(command, ENVIRONMENTS.get(kind))
    times = {kind: [] for kind in KINDS}
    for _ in range(rounds):
        for kind, command in KINDS.items():
            times[kind].append(timed(command, ENVIRONMENTS.get(kind)))
    base = statistics.median(times["import torch"])
    print(f"{'':34}{'median s':>10}{'ratio':>8}{'target':>8}")
    for kind, values in times.items():
        ratio = statistics.median(values) / base
        target = TARGETS.get(kind)
        verdict = "" if target is None else (f"{target:>7}x" + ("  ok" if ratio <= target else "  OVER"))
        print(f"{kind:34}{statistics.median(values):>10.2f}{ratio:>7.2f}x{verdict}")
    print(f"({rounds} interleaved rounds, median of each)")


if __name__ == "__main__":
    main()
