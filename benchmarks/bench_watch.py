"""``grade check --watch``: from a save to the new report, against a bare `python -c "import torch"`.

A copy of one assignment's solution is watched; each round saves the module (a comment added or
taken away) and times until the new report is printed. Issue 24's target: a re-grade within 0.3x a
bare torch import of the save.

    python benchmarks/bench_watch.py [--assignment 01_attention_basics] [--rounds 9]
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "grader"))


def main() -> None:
    from bench_autograde import torch_import_s
    from test_watch import Watching

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--assignment", default="01_attention_basics")
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    torch_time = torch_import_s()
    with tempfile.TemporaryDirectory() as folder:
        target = Path(folder) / args.assignment
        shutil.copytree(ROOT / "solutions" / args.assignment, target, ignore=shutil.ignore_patterns("*.ipynb"))
        module = next(target.glob("*.py"))
        text = module.read_text()
        watching = Watching(target)
        try:
            watching.until("watching for saves", timeout=120)
            times = []
            for round_ in range(args.rounds):
                time.sleep(0.5)
                started = time.perf_counter()
                module.write_text(text + ("\n# saved\n" if round_ % 2 == 0 else ""))
                watching.until("watching for saves")
                times.append(time.perf_counter() - started)
        finally:
            watching.stop()
    regrade = statistics.median(times)
    print(f"import torch {torch_time:.2f} s; save to new report ({args.assignment}, median of {args.rounds}): "
          f"{regrade:.2f} s = {regrade / torch_time:.2f}x import torch (target 0.3x)")


if __name__ == "__main__":
    main()
