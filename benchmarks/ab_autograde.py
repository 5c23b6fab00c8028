"""`grade autograde` of this checkout against another checkout of the course (an earlier commit: `git
worktree add /tmp/base COMMIT`), interleaved in one run on one class (the batch benchmark's: copies of
the solutions, module and notebook), as ratios per submission to a bare `python -c "import torch"`
measured in each round: whether a change made batch grading faster, on a machine too noisy for
absolute times. Each side imports its own grader (it is run from its own folder).

    python benchmarks/ab_autograde.py --base /tmp/base [--rounds 3] [--copies 40] [--workers 2] [--distinct]
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))


def main() -> int:
    from bench_autograde import TARGET, make_class

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True, help="the other checkout's folder")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--copies", type=int, default=40)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--distinct", action="store_true", help="each student's files their own (a comment)")
    args = parser.parse_args()
    sides = {"base": args.base.resolve(), "this": ROOT}
    times: dict[str, list[float]] = {"import torch": [], **{side: [] for side in sides}}
    with tempfile.TemporaryDirectory() as scratch:
        klass = Path(scratch) / "class"
        make_class(klass, args.copies, distinct=args.distinct)
        for round_ in range(args.rounds):
            order = list(sides) if round_ % 2 == 0 else list(reversed(sides))  # neither side always first
            started = time.monotonic()
            subprocess.run([sys.executable, "-c", "import torch"], check=True)
            times["import torch"].append(time.monotonic() - started)
            for side in order:
                out = Path(scratch) / f"out-{side}-{round_}"
                started = time.monotonic()
                ran = subprocess.run([sys.executable, "-m", "grader", "autograde", str(klass), "--out", str(out),
                                      "--workers", str(args.workers)], cwd=sides[side], capture_output=True)
                times[side].append(time.monotonic() - started)
                if ran.returncode != 0:
                    print(f"{side}: exit {ran.returncode}\n{ran.stderr.decode(errors='replace')[-2000:]}",
                          file=sys.stderr)
                    return 1
    torch_s = statistics.median(times["import torch"])
    print(f"import torch (median of {args.rounds})   {torch_s:6.2f} s")
    for side in sides:
        each = [t / args.copies / torch_s for t in times[side]]
        print(f"{side:<5} {statistics.median(times[side]):6.2f} s for {args.copies}: "
              f"{statistics.median(each):.3f}x import torch per submission "
              f"(rounds: {', '.join(f'{x:.3f}' for x in each)}; target <= {TARGET}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
