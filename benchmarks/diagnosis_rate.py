"""The diagnosis rate: how many mistaken implementations the feedback names rightly, and how many correct
ones lose nothing.

Grades a corpus laid out as ``tests/corpus`` (``correct/``, ``mistakes/<misconception>/``, and
``unnamed/`` or ``mistakes/unnamed/`` for mistakes no id describes) with the real grader, on each seed,
and prints per seed and in total:

- mistakes caught (lost points), named with their id, and given a wrong id (one that is not theirs);
- unnamed mistakes caught, and given any id (a wrong name);
- correct implementations that lost points or were given an id (false alarms);
- collateral: an exercise that no mistake of a grading run is in, yet lost points (beside correct
  entries such losses are shown, not counted: the contract may take them, e.g. a looping softmax).

``wrong-device`` needs a GPU (``--device cuda``); on a CPU it is left out. ``--corpus`` grades another
corpus laid out the same way (a blind one, written from the contract alone).

    python benchmarks/diagnosis_rate.py [--seeds 2024 7 31337] [--device cpu] [--corpus DIR] [--only PREFIX]
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
    parser.add_argument("--corpus", type=Path, default=ROOT / "tests" / "corpus")
    parser.add_argument("--only", default="", help="only entries whose exercise starts with this")
    options = parser.parse_args()

    from grader.config import load_course
    from grader.grading.grader import Grader

    corpus = load_corpus()
    course = load_course(ROOT)
    grader = Grader(course, device=options.device, batch=True)
    wanted = lambda e: e.exercise.startswith(options.only)  # noqa: E731
    mistakes = [e for e in corpus.mistakes(options.corpus) if wanted(e)
                and (options.device == "cuda" or e.misconception != "wrong-device")]
    unnamed = [e for e in corpus.unnamed(options.corpus) if wanted(e)]
    correct = [e for e in corpus.correct(options.corpus) if wanted(e)]
    totals = dict(caught=0, named=0, wrong=0, unnamed_caught=0, unnamed_named=0, false_alarms=0, collateral=0)
    try:
        for seed in options.seeds:
            results = {}
            with tempfile.TemporaryDirectory() as folder:
                for kind, entries in (("mistakes", mistakes), ("unnamed", unnamed), ("correct", correct)):
                    results.update(corpus.grade_all(entries, course, grader, Path(folder) / kind, seed=seed))
            problems = []
            caught = [e for e in mistakes if results[e.name][0].status != "passed"]
            named = [e for e in mistakes if e.misconception in results[e.name][0].misconceptions]
            wrong = [e for e in mistakes if set(results[e.name][0].misconceptions) - {e.misconception}]
            u_caught = [e for e in unnamed if results[e.name][0].status != "passed"]
            u_named = [e for e in unnamed if results[e.name][0].misconceptions]
            alarms = [e for e in correct if results[e.name][0].status != "passed" or results[e.name][0].misconceptions]
            problems += [(e, "not caught") for e in mistakes if e not in caught]
            problems += [(e, "not named") for e in caught if e not in named]
            problems += [(e, "wrong name") for e in wrong]
            problems += [(e, "not caught") for e in unnamed if e not in u_caught]
            problems += [(e, "given an id") for e in u_named]
            problems += [(e, "false alarm") for e in alarms]
            collateral = _collateral(mistakes + unnamed, results)
            # beside a correct entry, an exercise may still lose points by the contract (a softmax may loop
            # over tokens, a simple_self_attention using it is then not vectorised): shown, not counted
            for line in _collateral(correct, results):
                print(f"  beside a correct entry: {line}")
            for key, value in dict(caught=caught, named=named, wrong=wrong, unnamed_caught=u_caught,
                                   unnamed_named=u_named, false_alarms=alarms, collateral=collateral).items():
                totals[key] += len(value)
            print(f"seed {seed}: mistakes caught {len(caught)}/{len(mistakes)}, named {len(named)}, wrong ids "
                  f"{len(wrong)}; unnamed caught {len(u_caught)}/{len(unnamed)}, given an id {len(u_named)}; "
                  f"false alarms {len(alarms)}/{len(correct)}; collateral {len(collateral)}")
            for entry, what in problems:
                exercise = results[entry.name][0]
                print(f"  {what}: {entry.name} [{entry.exercise}] expected {entry.misconception}: {exercise.status} "
                      f"{exercise.score:g}/{exercise.max_score:g} {exercise.misconceptions} "
                      f"{exercise.feedback.splitlines()[0][:240] if exercise.feedback else ''}")
            for line in collateral:
                print(f"  collateral: {line}")
        runs = len(options.seeds)
        print(f"over {runs} seed(s): mistakes caught {totals['caught']}/{len(mistakes) * runs}, named "
              f"{totals['named']} ({totals['named'] / max(len(mistakes) * runs, 1):.1%}), wrong ids {totals['wrong']}; "
              f"unnamed caught {totals['unnamed_caught']}/{len(unnamed) * runs}, given an id {totals['unnamed_named']}; "
              f"false alarms {totals['false_alarms']}/{len(correct) * runs}; collateral {totals['collateral']}")
    finally:
        grader.close()
    clean = (totals["caught"] == len(mistakes) * len(options.seeds) and not totals["wrong"]
             and not totals["false_alarms"] and not totals["collateral"] and not totals["unnamed_named"])
    return 0 if clean else 1


def _collateral(entries, results) -> list[str]:
    """Exercises that lost points in a grading run where no entry was on them."""
    runs: dict[int, tuple[object, set[str]]] = {}
    for entry in entries:
        assignment = results[entry.name][1]
        runs.setdefault(id(assignment), (assignment, {}))[1][entry.exercise] = entry.name
    lines = []
    for assignment, touched in runs.values():
        for exercise in assignment.exercises:
            if exercise.name not in touched and exercise.status != "passed":
                lines.append(f"{exercise.name} lost points beside {sorted(touched.values())}: {exercise.status} "
                             f"{exercise.feedback.splitlines()[0][:200] if exercise.feedback else ''}")
    return lines


if __name__ == "__main__":
    sys.exit(main())
