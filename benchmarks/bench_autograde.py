"""`grade autograde` of 40 copies of the solutions with --workers 2, per submission, against a bare
`python -c "import torch"`, as ratios measured in one run. Target (issue 47): <= 0.2x per submission (issue 24's: 0.35x),
each submission holding the module and the notebook of every assignment, as real ones do (``--modules-only``:
the modules alone).
Also reports the peak memory (RSS) of the grading processes and of the workers running student code.

    python benchmarks/bench_autograde.py [--copies 40] [--workers 2]
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


TARGET = 0.2


def make_class(folder: Path, copies: int, notebooks: bool = True, distinct: bool = False) -> None:
    """``copies`` students, each with the solutions' modules (and notebooks); ``distinct``: each student's
    files their own (a comment, a last cell of their name), as a real class's are, so that nothing the
    grading process read of one student's files serves the next."""
    for index in range(copies):
        for assignment in sorted((ROOT / "solutions").iterdir()):
            if assignment.is_dir():
                target = folder / f"student{index:03d}" / assignment.name
                target.mkdir(parents=True)
                for path in [*assignment.glob("*.py"), *(assignment.glob("*.ipynb") if notebooks else ())]:
                    shutil.copy(path, target)
                    if distinct:
                        _own(target / path.name, f"# student {index}\n")


def _own(path: Path, comment: str) -> None:
    if path.suffix == ".py":
        path.write_text(path.read_text() + "\n" + comment)
        return
    notebook = json.loads(path.read_text())
    notebook["cells"].append({"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                              "source": comment})
    path.write_text(json.dumps(notebook))


KINDS = {"grade-zygote": "zygote", "grade-submission": "submission's process", "grade-starter": "worker's starter",
         "grade-worker": "worker (student code)", "bwrap": "bubblewrap"}


def rss_by_kind(root_pid: int) -> dict[str, int]:
    """Peak-of-now resident memory (KiB) of each process under ``root_pid``, by what it runs (the
    sandbox's processes name themselves: grader/inside/zygote.py)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
        except (OSError, IndexError, ValueError):
            continue
    sizes: dict[str, int] = {}
    stack = [(root_pid, "parent")]
    while stack:
        pid, kind = stack.pop()
        try:
            rss = next(int(line.split()[1]) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                       if line.startswith("VmRSS:"))
            comm = Path(f"/proc/{pid}/comm").read_text().strip()
        except (OSError, StopIteration):
            continue
        kind = KINDS.get(comm, kind)
        sizes[kind] = max(sizes.get(kind, 0), rss)
        stack += [(child, "grading process" if kind == "parent" else kind) for child in children.get(pid, [])]
    return sizes


def torch_import_times(rounds: int = 3) -> list[float]:
    """The times of ``rounds`` bare `python -c "import torch"`."""
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import torch"], check=True)
        times.append(time.perf_counter() - started)
    return times


def torch_import_s(rounds: int = 3) -> float:
    """The median time of a bare `python -c "import torch"`: what the benchmarks' ratios divide by."""
    return statistics.median(torch_import_times(rounds))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=40)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--modules-only", action="store_true", help="copy the modules alone, no notebook")
    parser.add_argument("--distinct", action="store_true", help="each student's files their own (a comment)")
    options = parser.parse_args()
    before = torch_import_times()  # the bare import before and after the run: the machine's pace may drift
    with tempfile.TemporaryDirectory() as scratch:
        klass, out = Path(scratch) / "class", Path(scratch) / "out"
        make_class(klass, options.copies, notebooks=not options.modules_only, distinct=options.distinct)
        started = time.perf_counter()
        process = subprocess.Popen([sys.executable, "-m", "grader", "autograde", str(klass), "--out", str(out),
                                    "--workers", str(options.workers)], cwd=ROOT, stderr=subprocess.DEVNULL)
        peaks: dict[str, int] = {}

        def sample():
            while process.poll() is None:
                for kind, size in rss_by_kind(process.pid).items():
                    peaks[kind] = max(peaks.get(kind, 0), size)
                time.sleep(0.2)

        sampler = threading.Thread(target=sample)
        sampler.start()
        code = process.wait()
        sampler.join()
        elapsed = time.perf_counter() - started
        graded = len(list(out.glob("*.json")))
    torch_time = statistics.median(before + torch_import_times())
    per_submission = elapsed / options.copies
    print(f"import torch (median of 6)            {torch_time:6.2f} s")
    print(f"autograde {options.copies} submissions, --workers {options.workers}  {elapsed:6.2f} s  "
          f"(exit {code}, {graded} results)")
    verdict = "ok" if per_submission / torch_time <= TARGET else "OVER"
    print(f"per submission                        {per_submission:6.2f} s = {per_submission / torch_time:.2f}x "
          f"import torch (target <= {TARGET}x: {verdict})")
    for kind, size in peaks.items():
        print(f"peak RSS, {kind:<28}{size / 1024:6.0f} MiB")


if __name__ == "__main__":
    main()
