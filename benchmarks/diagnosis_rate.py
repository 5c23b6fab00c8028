"""The diagnosis rate: how many of the corpus's mistaken implementations the feedback names rightly.

Grades every file of ``tests/corpus/mistakes/<misconception>/`` (and the correct implementations of
``tests/corpus/correct/``) with the real grader and prints, per misconception, how many were named
with their id, then the totals. ``wrong-device`` needs a GPU (``--device cuda``); on a CPU it is left
out. Several seeds show that the diagnosis does not hang on one draw of the random inputs.

    python benchmarks/diagnosis_rate.py [--seeds 2024 7 31337] [--device cpu]
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def load_corpus():
    spec = importlib.util.spec_from_file_location("corpus", ROOT / "tests" / "corpus" / "corpus.py")
    module = sys.modules["corpus"] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[2024])
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    options = parser.parse_args()

    from grader.config import load_course
    from grader.runner import Grader

    corpus = load_corpus()
    course = load_course(ROOT)
    grader = Grader(course, device=options.device)
    mistakes = [e for e in corpus.mistakes() if options.device == "cuda" or e.misconception != "wrong-device"]
    correct = corpus.correct()
    named = total = flagged = others = 0
    try:
        for seed in options.seeds:
            with tempfile.TemporaryDirectory() as folder:
                results = corpus.grade_all(mistakes, course, grader, Path(folder) / "mistakes", seed=seed)
                results.update(corpus.grade_all(correct, course, grader, Path(folder) / "correct", seed=seed))
            right, count, missed = corpus.diagnosis_rate(mistakes, results)
            named, total = named + right, total + count
            wrongly = [e.name for e in correct if results[e.name][0].status != "passed"
                       or any(x.misconceptions for x in results[e.name][1].exercises)]
            flagged += len(wrongly)
            # precision: an id beside the right one is a name the student's mistake does not have
            extra = [e.name for e in mistakes if set(results[e.name][0].misconceptions) - {e.misconception}]
            others += len(extra)
            print(f"seed {seed}: {right}/{count} mistakes named with the right id; "
                  f"{len(correct) - len(wrongly)}/{len(correct)} correct implementations with full marks and "
                  f"no misconception; {len(extra)} mistakes also named with another id")
            for name in missed + wrongly + extra:
                exercise = results[name][0]
                print(f"  {name}: {exercise.status} {exercise.misconceptions} {exercise.feedback.splitlines()[0]}")
        per_id = {}
        for entry in mistakes:
            per_id.setdefault(entry.misconception, 0)
            per_id[entry.misconception] += 1
        print(f"{len(per_id)} misconceptions, {len(mistakes)} mistaken implementations "
              f"({', '.join(f'{m} {n}' for m, n in sorted(per_id.items()))})")
        print(f"diagnosis rate: {named}/{total} = {named / max(total, 1):.1%}; correct implementations flagged: "
              f"{flagged}; mistakes also given another id: {others}")
    finally:
        grader.close()
    return 0 if named == total and not flagged else 1


if __name__ == "__main__":
    sys.exit(main())
