"""Fairness over seeds: every correct formulation in tests/corpus/correct (and any folder given with
--extra, laid out the same way) graded with the real grader on N seeds; prints each entry that lost
points on some seed, and the count.

    python benchmarks/fairness.py --seeds 50
    python benchmarks/fairness.py --seeds 3 --extra /path/to/blind/correct
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "corpus"))


def main() -> int:
    import corpus
    from grader.config import load_course
    from grader.grading.grader import Grader

    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--extra", type=Path, action="append", default=[])
    parser.add_argument("--only", default="", help="only entries whose exercise starts with this")
    options = parser.parse_args()
    entries = corpus.correct() + [corpus._entry(p, None) for folder in options.extra for p in sorted(folder.glob("*.py"))]
    entries = [e for e in entries if e.exercise.startswith(options.only)]
    course = load_course(ROOT)
    grader = Grader(course, device="cpu", batch=True)
    lost: dict[str, list] = {}
    started = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for seed in range(options.first_seed, options.first_seed + options.seeds):
                results = corpus.grade_all(entries, course, grader, Path(tmp) / f"seed{seed}", seed=seed)
                for name, (exercise, _) in results.items():
                    if exercise.status != "passed":
                        lost.setdefault(name, []).append((seed, exercise.score, exercise.feedback.splitlines()[0][:300]))
    finally:
        grader.close()
    for name, losses in sorted(lost.items()):
        print(f"{name}: lost points on {len(losses)} seed(s); first: seed {losses[0][0]}: {losses[0][2]}")
    print(f"{len(entries) - len(lost)} of {len(entries)} correct formulations lost nothing on {options.seeds} seeds "
          f"({time.perf_counter() - started:.0f} s)")
    return 1 if lost else 0


if __name__ == "__main__":
    raise SystemExit(main())
