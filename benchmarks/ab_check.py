"""`grade check` of this checkout against another checkout of the course (an earlier commit: `git
worktree add /tmp/base COMMIT`), interleaved in one run with one interpreter, as ratios to a bare
`python -c "import torch"`: whether a change made grading slower, on a machine too noisy for
absolute times. Each side imports its own grader (it is run from its own folder).

    python benchmarks/ab_check.py --base /tmp/base [--rounds 7]
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNS = {"01": ["01_attention_basics"], "06": ["06_decoding_attention"], "course": []}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True, help="the other checkout's folder")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    kinds = {"import torch": ([sys.executable, "-c", "import torch"], ROOT)}
    for name, assignments in RUNS.items():
        for side, folder in (("base", args.base.resolve()), ("this", ROOT)):
            kinds[f"{name} {side}"] = ([sys.executable, "-m", "grader", "check", *assignments, "--submission",
                                        "solutions", "--format", "json"], folder)
    times: dict[str, list[float]] = {kind: [] for kind in kinds}
    for _ in range(args.rounds):
        for kind, (command, folder) in kinds.items():
            started = time.monotonic()
            ran = subprocess.run(command, cwd=folder, capture_output=True)
            times[kind].append(time.monotonic() - started)
            if ran.returncode != 0:
                print(f"{kind}: exit {ran.returncode}\n{ran.stderr.decode(errors='replace')[-2000:]}", file=sys.stderr)
                return 1
    torch = statistics.median(times["import torch"])
    for kind, measured in times.items():
        median = statistics.median(measured)
        print(f"{kind:14s} median {median:5.2f} s   {median / torch:4.2f}x import torch")
    return 0


if __name__ == "__main__":
    sys.exit(main())
