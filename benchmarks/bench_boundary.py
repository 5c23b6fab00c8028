"""The per-submission cost of the boundary itself, against a bare `python -c "import torch"`.

For each mode this machine offers (the sandbox as planned here, and no sandbox), one grading
process grades a one-module submission many times and times the boundary's own steps: the working
copy handed to the submission's uid, its cgroup made and removed, a worker started in its
namespaces (fork, unshare, mounts, capabilities and uid dropped, the student's import), and the
teardown (every process of the submission killed and confirmed gone). Also the zygote's start and
the peak memory (RSS) of the grading process and of the zygote. A cell (grader/sandbox/cells.py) is
the working copy, handed to the submission's uid, and its cgroup.

    python benchmarks/bench_boundary.py [--rounds 30]
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
sys.path.insert(0, str(ROOT))


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def measure(course, confinement, rounds: int) -> dict[str, float]:
    from grader.grading.grader import Grader
    from grader.sandbox.confine import blocked_paths
    from grader.grading.pytest_session import GradingSession
    from grader.submission import resolve_submission

    started = time.perf_counter()
    grader = Grader(course, device="cpu", confinement=confinement)
    grader.zygote.wait_ready()
    times = {"zygote start (s)": time.perf_counter() - started}
    assignment = course.assignment("01_attention_basics")
    submission = resolve_submission(ROOT / "solutions" / "01_attention_basics", course)
    steps: dict[str, list[float]] = {"cell made": [], "worker started": [], "teardown": [], "cell removed": []}
    for _ in range(rounds):
        t0 = time.perf_counter()
        cell = grader.sandbox.cell(submission)  # working copy handed to its uid, its cgroup
        t1 = time.perf_counter()
        session = GradingSession(course, (assignment,), cell.copy, grader.zygote, seed=1, device="cpu",
                                 references={}, uid=cell.uid, cgroups=cell.cgroups, blocked=blocked_paths(course))
        worker = grader.zygote.spawn(session.worker_spec(assignment, cell.copy.sources[assignment.id]), timeout=10)
        assert worker.import_error is None, worker.import_error
        t2 = time.perf_counter()
        worker.kill()
        assert session.close()
        t3 = time.perf_counter()
        grader.sandbox.end(cell, gone=True)
        t4 = time.perf_counter()
        for name, value in zip(steps, (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
            steps[name].append(value)
    for name, values in steps.items():
        times[f"{name} (ms)"] = 1000 * statistics.median(values)
    times["grading process RSS (MiB)"] = rss_kib(subprocess.os.getpid()) / 1024
    times["zygote RSS (MiB)"] = max(rss_kib(pid) for pid in _zygote_pids(grader.zygote.process.pid)) / 1024
    grader.close()
    return times


def _zygote_pids(root: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if b"grader.inside.zygote" in stat.read_bytes() and b"bwrap" not in stat.read_bytes().split(b"\0")[0]:
                found.append(int(stat.parent.name))
        except OSError:
            pass
    return found or [root]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    rounds = parser.parse_args().rounds
    from grader.config import load_course
    from grader.sandbox.confine import Confinement, plan

    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import torch"], check=True)
    torch_time = time.perf_counter() - started
    course = load_course(ROOT)
    planned = plan("auto")
    results = {f"sandbox ({planned.mode})": measure(course, planned, rounds)}
    results["no sandbox"] = measure(course, Confinement(), rounds)
    print(f"import torch: {torch_time:.2f} s; {rounds} submissions of one module per mode, medians")
    names = list(next(iter(results.values())))
    print(f"{'':32}" + "".join(f"{mode:>28}" for mode in results))
    for name in names:
        print(f"{name:32}" + "".join(f"{values[name]:>28.2f}" for values in results.values()))
    for mode, values in results.items():
        boundary = sum(values[f"{n} (ms)"] for n in ("cell made", "teardown", "cell removed"))
        print(f"{mode}: setup and teardown {boundary:.1f} ms per submission = "
              f"{boundary / 1000 / torch_time:.3f}x import torch (the worker's start and import not counted)")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory():
        main()
