"""A class as it comes in: `grade autograde` of a mixed class against the same number of correct copies.

The mixed class (issue 11): 10% stubs (the student distribution's assignments/ as released), 10% with
a module that hangs at import, 10% with an infinite loop in one function, the rest each with one
mistake from the corpus (tests/corpus/mistakes). Prints the wall time of both runs and their ratio,
the slowest submission of each kind, and whether a hang cost at most one time limit per module
(course.toml's exercise_timeout_s) above a correct submission's time.

    python benchmarks/class_mix.py [--size 40] [--workers 2]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

HANG_AT_IMPORT = "import time\ntime.sleep(10_000)  # waits for something that never comes\n"
LOOP = '''
def attention_weights(queries, keys, mask=None):
    while True:  # a loop whose condition never changes
        pass
'''


def load_corpus():
    spec = importlib.util.spec_from_file_location("corpus", ROOT / "tests" / "corpus" / "corpus.py")
    module = sys.modules["corpus"] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def copy_of(source: Path, target: Path) -> None:
    for folder in sorted(source.iterdir()):
        if folder.is_dir():
            (target / folder.name).mkdir(parents=True)
            for module in folder.glob("*.py"):
                shutil.copy(module, target / folder.name / module.name)


def make_classes(base: Path, size: int, course) -> dict[str, str]:
    """``base/mixed`` and ``base/correct``; returns each mixed submission's kind."""
    corpus = load_corpus()
    mistakes = [e for e in corpus.mistakes() if e.misconception != "wrong-device"]
    tenth = max(1, size // 10)
    kinds = {}
    for index in range(size):
        name = f"student{index:03d}"
        copy_of(ROOT / "solutions", base / "correct" / name)
        target = base / "mixed" / name
        if index < tenth:
            kind = "stub"
            copy_of(ROOT / "assignments", target)
        else:
            copy_of(ROOT / "solutions", target)
            if index < 2 * tenth:
                kind = "hang at import"
                module = target / "02_self_attention" / course.assignment("02_self_attention").module
                module.write_text(HANG_AT_IMPORT + module.read_text())
            elif index < 3 * tenth:
                kind = "infinite loop"
                module = target / "02_self_attention" / course.assignment("02_self_attention").module
                module.write_text(corpus.splice(module.read_text(), LOOP))
            else:
                kind = "one mistake"
                entry = mistakes[(index * 7) % len(mistakes)]
                assignment = course.assignment(corpus.assignment_of(course, entry.exercise))
                module = target / assignment.id / assignment.module
                module.write_text(corpus.splice(module.read_text(), entry.source))
        kinds[name] = kind
    return kinds


def autograde(folder: Path, out: Path, workers: int) -> tuple[float, dict[str, float], int]:
    started = time.perf_counter()
    code = subprocess.run([sys.executable, "-m", "grader", "autograde", str(folder), "--out", str(out),
                           "--workers", str(workers)], cwd=ROOT, stderr=subprocess.DEVNULL,
                          stdout=subprocess.DEVNULL).returncode
    elapsed = time.perf_counter() - started
    durations = {p.stem: json.loads(p.read_text())["duration_s"] for p in out.glob("*.json")}
    return elapsed, durations, code


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=40)
    parser.add_argument("--workers", type=int, default=2)
    options = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from grader.config import load_course

    course = load_course(ROOT)
    limit = course.limits.exercise_timeout_s
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch)
        kinds = make_classes(base, options.size, course)
        correct_time, correct, _ = autograde(base / "correct", base / "out-correct", options.workers)
        mixed_time, mixed, code = autograde(base / "mixed", base / "out-mixed", options.workers)
    typical = sorted(correct.values())[len(correct) // 2]
    print(f"class of {options.size}, --workers {options.workers}, exercise time limit {limit:g} s")
    print(f"all correct   {correct_time:7.1f} s  ({len(correct)} results; a submission takes {typical:.2f} s, median)")
    print(f"mixed         {mixed_time:7.1f} s  ({len(mixed)} results, exit {code}) = "
          f"{mixed_time / correct_time:.2f}x the correct class")
    verdicts = []
    for kind in ("stub", "hang at import", "infinite loop", "one mistake"):
        names = [n for n, k in kinds.items() if k == kind]
        slowest = max(mixed.get(n, float("inf")) for n in names)
        budget = typical + limit  # one module that hangs: one time limit above a correct submission
        within = slowest <= budget + 2.0 if kind in ("hang at import", "infinite loop") else True
        verdicts.append(within)
        print(f"  {kind:<15} {len(names):3d} submissions, slowest {slowest:6.2f} s"
              + (f"  (target <= {budget:.1f} s + 2 s slack: {'ok' if within else 'OVER'})"
                 if kind in ("hang at import", "infinite loop") else ""))
    print(f"slowest submission of the mixed class: {max(mixed.values()):.2f} s; "
          f"a hang costs at most one time limit per module: {'ok' if all(verdicts) else 'OVER'}")


if __name__ == "__main__":
    main()
