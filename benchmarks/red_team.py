"""Hostile submissions against the grading process: what each costs it, as a ratio to a clean run.

Each attack is a right solution with something hostile added: a module that rewrites its worker's
replies (the worker runs in the student's process, so it can send anything the protocol carries),
or a notebook beside the module. Each is graded by ``grade check`` in a process of its own, whose
peak memory (VmHWM) is read as it exits; the clean run is the same assignment's solution. Issue 21's
target: no attack costs the grading process more than twice a clean run's peak, and every one ends
in a result (exit 0 or 1), never a traceback.

    python benchmarks/red_team.py [--only NAME ...]

``--batch``: attacks on what a batch's submissions share (issue 33): processes and threads, the disk.
Each (:data:`BATCH_ATTACKS`: a name and what is appended to 01's solution; add one there) is graded by
``grade autograde CLASS --seed 7 --workers 2`` beside two honest bystanders, ``alice`` and ``bob``, who
hand in every assignment's solution (so that each is graded for seconds; the attacker's name sorts
first, so alice is graded beside it and bob after her, while it holds what it took). Printed for
each: whether both bystanders' results (score and each exercise's status) are those of the same batch
without the attacker, the attacker's own result (a score, never ``grader-error``), the grading
processes' peak memory against the clean batch's, and whether the batch finished (every result
written, no traceback). The grader's temporary folder and the results go on a small file system of the run's
own (``--disk``; as root, by default a tmpfs of ``--disk-mib`` mounted for the run), so that a disk
filled by a grader without a quota is never the machine's; an ordinary user's run without one leaves
the disk attacks out. ``--tree`` grades with another checkout's grader (``git archive HEAD``: the
figures before a change). A grader without a process limit for an ordinary user's sandbox (before
issue 33) leaves a fork bomb no limit but the user's own: run it under ``ulimit -u``, or in a cgroup.

    python benchmarks/red_team.py --batch [--only NAME ...] [--disk PATH] [--tree PATH]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODULES = {"01": ("01_attention_basics", "attention_basics.py"), "02": ("02_self_attention", "self_attention.py"),
           "03": ("03_causal_attention", "causal_attention.py"), "04": ("04_multi_head_attention",
                                                                      "multi_head_attention.py"),
           "05": ("05_efficient_attention", "efficient_attention.py"),
           "06": ("06_decoding_attention", "decoding_attention.py")}

# appended to a right module: every tensor its worker sends back, where ``cond`` holds, is ``make``
FORGED_REPLIES = '''
import sys as _sys, torch as _torch
_worker = _sys.modules["grader.inside.worker"]
_call = _worker.Server.call
def _forged(self, request):
    reply = _call(self, request)
    out = reply.get("out")
    if isinstance(out, _torch.Tensor) and {cond}:
        reply["out"] = {make}
    return reply
_worker.Server.call = _forged
'''
# appended to a right module: every tensor of every reply (outputs, gradients, parameters, buffers, a KV
# cache's attributes) is ``make``
FORGED_EVERYTHING = '''
import sys as _sys, torch as _torch
_worker = _sys.modules["grader.inside.worker"]
_handle = _worker.Server._handle
def _swap(out):
    if isinstance(out, _torch.Tensor):
        return {make}
    if isinstance(out, dict):
        return {{k: _swap(v) for k, v in out.items()}}
    if isinstance(out, (list, tuple)):
        return type(out)(_swap(v) for v in out)
    return out
def _forged(self, request):
    return _swap(_handle(self, request))
_worker.Server._handle = _forged
'''
STRIDE_0 = ("True", "_torch.zeros(1, dtype=out.dtype).expand(12000, 10000)")  # 4 bytes sent, 480 MB meant
BROADCAST = ("True", "_torch.zeros((100000,) + (1,) * out.dim(), dtype=out.dtype)")  # 400 kB, broadcast by others
MASK = ("out.dtype == _torch.bool", "_torch.zeros(100000, 1, 1, 1, 1, dtype=_torch.bool)")  # issue 21's mask
UNDER_LIMIT = ("True", "_torch.zeros(1, dtype=out.dtype).expand(4000, 4000)")  # 64 MB, just under the limit
DEEP_SUM = "def softmax(x, dim=-1):\n    return torch.softmax(x, dim) + (" + " + ".join(["0 * x"] * 1600) + ")\n"


def attacks() -> dict[str, tuple[str, dict]]:
    """name -> (assignment key, what to build: {"forge": (cond, make)} or {"notebook": code})."""
    found = {}
    for key in MODULES:
        found[f"stride-0 replies ({key})"] = (key, {"forge": STRIDE_0})
        found[f"broadcastable replies ({key})"] = (key, {"forge": BROADCAST})
        found[f"64 MB replies ({key})"] = (key, {"forge": UNDER_LIMIT})
        found[f"every tensor of every reply broadcastable ({key})"] = (key, {"forge_all": BROADCAST[1]})
    found["a [100000, 1, 1, 1, 1] mask (06)"] = ("06", {"forge": MASK})
    found["a notebook with a 1,600-term sum beside the module (01)"] = ("01", {"notebook": DEEP_SUM})
    return found


def build(folder: Path, key: str, attack: dict | None) -> Path:
    """A submission folder for one assignment: its solution, with ``attack`` added."""
    assignment, module = MODULES[key]
    target = folder / assignment
    target.mkdir(parents=True, exist_ok=True)
    text = (ROOT / "solutions" / assignment / module).read_text()
    if attack and "forge" in attack:
        cond, make = attack["forge"]
        text += FORGED_REPLIES.format(cond=cond, make=make)
    if attack and "forge_all" in attack:
        text += FORGED_EVERYTHING.format(make=attack["forge_all"])
    (target / module).write_text(text)
    if attack and "notebook" in attack:
        import nbformat

        notebook = nbformat.v4.new_notebook()
        notebook.cells = [nbformat.v4.new_code_cell(text), nbformat.v4.new_code_cell(attack["notebook"])]
        nbformat.write(notebook, target / module.replace(".py", ".ipynb"))
    return target


MEASURED = """
import atexit, sys
def peak():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            sys.stderr.write("PEAK_KIB " + line.split()[1] + "\\n")
atexit.register(peak)
sys.argv = ["grade", "check", *sys.argv[1:]]
from grader.cli import main
main()
"""


def graded(submission: Path, seed: int = 3) -> dict:
    """``grade check`` of ``submission`` in a process of its own: exit code, score, peak memory (MiB),
    and whether it ended in a traceback."""
    done = subprocess.run([sys.executable, "-c", MEASURED, "--submission", str(submission), "--seed", str(seed),
                           "--format", "json"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    peak = next((int(line.split()[1]) for line in done.stderr.splitlines() if line.startswith("PEAK_KIB")), 0)
    try:
        score = json.loads(done.stdout)["score"]
    except ValueError:
        score = None
    return {"code": done.returncode, "score": score, "peak_mib": peak / 1024,
            "traceback": "Traceback (most recent call last)" in done.stderr, "stderr": done.stderr[-3000:]}


# --- attacks on what a batch shares (--batch) ---------------------------------------------------------
@dataclass(frozen=True)
class BatchAttack:
    """One attack on what a batch's submissions share: ``source`` is appended to 01's solution (its later
    definitions win); ``others``: the assignments (keys of MODULES) whose plain solution the attacker
    hands in too; ``disk``: it writes to the disk, and runs only where the disk is a small one of the
    run's own (``--disk``)."""

    name: str
    source: str
    others: tuple[str, ...] = ()
    disk: bool = False


HOLD_S = 6  # how long an attack holds what it took at import (the import's time limit is 10 s)
FILL_THREADS = """
import threading as _threading, time as _time
def _fill_threads():
    while True:
        try:
            _threading.Thread(target=_time.sleep, args=(600,), daemon=True).start()
        except Exception:
            return
_fill_threads()
"""
BATCH_ATTACKS = [
    BatchAttack("thread exhaustion: threads held while its 02 module starts", FILL_THREADS, others=("02",)),
    BatchAttack("thread exhaustion: threads at import, then a timeout", FILL_THREADS + """
_right_softmax, _calls = softmax, [0]
def softmax(x, dim=-1):  # its third call never returns: the worker is killed and another one started
    _calls[0] += 1
    while _calls[0] == 3:
        pass
    return _right_softmax(x, dim)
"""),
    BatchAttack("process exhaustion: sleeps spawned until it fails, held", f"""
import os as _os, time as _time
def _spawn_sleepers():  # posix_spawn (a vfork): thousands a second, where a fork of torch's process takes ms
    while True:
        try:
            _os.posix_spawn("/bin/sleep", ["sleep", "600"], {{}})
        except OSError:
            return
_spawn_sleepers()
_time.sleep({HOLD_S})
"""),
    BatchAttack("CPU flood: spinners, each in a session of its own and unpinned, held (issue 44, round 5)", """
import os as _os, time as _time
for _ in range(110):  # each its own scheduling group (setsid), free of the grading process's processor
    try:
        if _os.fork() == 0:
            _time.sleep(3.0)
            try:
                _os.setsid()
                _os.sched_setaffinity(0, set(range(_os.cpu_count() or 2)))
            except OSError:
                pass
            while True:
                pass
    except OSError:
        break
_right_softmax = softmax
def softmax(x, dim=-1):  # every call holds the worker, and its spinners, for 9 s (the limit is 10)
    _time.sleep(9.0)
    return _right_softmax(x, dim)
"""),
    BatchAttack("fork bomb at import", """
import os as _os, time as _time
while True:  # every process forks until it cannot, then waits: until the import's time limit
    try:
        _os.fork()
    except OSError:
        _time.sleep(600)
"""),
    BatchAttack("disk fill: files in its working folder until ENOSPC, held", f"""
import time as _time
def _fill_disk():
    block, number = b"x" * (1 << 20), 0
    while True:
        try:
            with open(f"fill-{{number}}.bin", "wb") as out:
                for _ in range(64):
                    out.write(block)
        except OSError:
            return
        number += 1
_fill_disk()
_time.sleep({HOLD_S})
""", disk=True),
    BatchAttack("big single file: one until it fails, and a sparse 1 TiB one", f"""
import time as _time
try:
    with open("big.bin", "wb") as _out:
        while True:
            _out.write(b"x" * (1 << 20))
except OSError:
    pass
try:
    with open("sparse.bin", "wb") as _out:
        _out.seek(1 << 40)
        _out.write(b"x")
except OSError:
    pass
_time.sleep({HOLD_S})
""", disk=True),
]

MEASURED_BATCH = """
import sys
def peak():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
import grader.batch.autograde as autograde
graded = autograde._grading_process
def measured(*args, **kwargs):
    try:
        return graded(*args, **kwargs)
    finally:
        sys.stderr.write(f"PEAK_KIB grading {peak()}\\n")
        sys.stderr.flush()
autograde._grading_process = measured
import atexit
atexit.register(lambda: sys.stderr.write(f"PEAK_KIB run {peak()}\\n"))
sys.argv = ["grade", "autograde", *sys.argv[1:]]
from grader.cli import main
main()
"""
BYSTANDERS = ("alice", "bob")  # each hands in every assignment's solution: graded for seconds, not a moment
ATTACKER = "abel"  # sorts first: graded beside alice, and holding what it took while bob is graded after her


def batch_class(folder: Path, attack: BatchAttack | None) -> Path:
    """A class folder: the bystanders, and the attacker with ``attack`` (None: none)."""
    for name in BYSTANDERS:
        for key in MODULES:
            build(folder / name, key, None)
    if attack is not None:
        target = build(folder / ATTACKER, "01", None) / MODULES["01"][1]
        target.write_text(target.read_text() + "\n" + attack.source)
        for key in attack.others:
            build(folder / ATTACKER, key, None)
    return folder


def graded_batch(klass: Path, out: Path, *, tree: Path, tmp: Path, timeout: float = 900) -> dict:
    """``grade autograde`` of ``klass`` into ``out``, its temporary folder ``tmp``: exit code, each
    submission's (score, {exercise: status}) or None, the grading processes' peak memory (MiB), and
    whether it ended in a traceback."""
    tmp.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "TMPDIR": str(tmp), "COLUMNS": "200"}
    argv = [sys.executable, "-c", MEASURED_BATCH, str(klass), "--out", str(out), "--seed", "7", "--workers", "2",
            "--device", "cpu"]
    try:
        done = subprocess.run(argv, cwd=tree, capture_output=True, text=True, timeout=timeout, env=env)
        code, stderr = done.returncode, done.stderr
    except subprocess.TimeoutExpired as late:
        code, stderr = "timeout", late.stderr.decode(errors="replace") if isinstance(late.stderr, bytes) else ""
    peaks = [int(line.split()[2]) for line in stderr.splitlines() if line.startswith("PEAK_KIB grading")]
    results = {}
    for folder in sorted(klass.iterdir()):
        try:
            data = json.loads((out / f"{folder.name}.json").read_text())
        except (OSError, ValueError):
            results[folder.name] = None
            continue
        statuses = {e["name"]: e["status"] for a in data.get("assignments", []) for e in a["exercises"]}
        results[folder.name] = (data.get("score"), statuses)
    return {"code": code, "results": results, "peak_mib": max(peaks, default=0) / 1024,
            "traceback": "Traceback (most recent call last)" in stderr, "stderr": stderr[-3000:]}


def said(result) -> str:
    """A submission's result in a few words."""
    if result is None:
        return "no result"
    score, statuses = result
    if "grader-error" in statuses.values():
        return "grader-error"
    kinds = sorted({status for status in statuses.values() if status not in ("passed", "not_implemented")})
    return f"{score:g}" + (f" ({', '.join(kinds)})" if kinds else "")


class SmallDisk:
    """The run's own small file system for the grader's temporary folder and the results: ``path`` as
    given, else as root a tmpfs of ``mib`` MiB mounted for the run (unmounted after), else None."""

    def __init__(self, path: str | None, mib: int):
        self.path, self.mounted = (Path(path) if path else None), False
        if self.path is None and os.geteuid() == 0:
            self.path = Path(tempfile.mkdtemp(prefix="red-team-disk-"))
            subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={mib}m,mode=0755", "tmpfs", str(self.path)],
                           check=True)
            self.mounted = True

    def folder(self, name: str) -> Path:
        path = self.path / name
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
        return path

    def close(self) -> None:
        if self.mounted:
            subprocess.run(["umount", "-l", str(self.path)], check=False)
            os.rmdir(self.path)


def main_batch(args) -> None:
    tree = Path(args.tree).resolve() if args.tree else ROOT
    chosen = [a for a in BATCH_ATTACKS if not args.only or any(o in a.name for o in args.only)]
    disk = SmallDisk(args.disk, args.disk_mib)
    try:
        with tempfile.TemporaryDirectory() as folder:
            work = Path(folder)
            place = disk.folder("clean") if disk.path else work / "clean-disk"
            clean = graded_batch(batch_class(work / "clean", None), place / "out", tree=tree, tmp=place / "tmp")
            who = "root" if os.geteuid() == 0 else f"uid {os.getuid()}"
            print(f"grader: {tree}; as {who}; disk: {disk.path or 'none of its own (disk attacks left out)'}")
            print(f"clean batch: exit {clean['code']}, "
                  + ", ".join(f"{n} {said(clean['results'].get(n))}" for n in BYSTANDERS)
                  + f", grading processes' peak {clean['peak_mib']:.0f} MiB")
            held = 0
            print(f"{'attack':<62}{'bystanders':>11}{'attacker':>24}{'peak MiB':>10}{'x clean':>9}  finished")
            for number, attack in enumerate(chosen):
                if attack.disk and disk.path is None:
                    print(f"{attack.name:<62}  left out: no small disk of the run's own (--disk)")
                    continue
                place = disk.folder(f"attack-{number}") if disk.path else work / f"attack-{number}"
                got = graded_batch(batch_class(work / f"class-{number}", attack), place / "out", tree=tree,
                                   tmp=place / "tmp")
                same = all(got["results"].get(n) == clean["results"].get(n) for n in BYSTANDERS)
                own = said(got["results"].get(ATTACKER))
                finished = not got["traceback"] and got["code"] != "timeout" and all(
                    got["results"].get(n) is not None for n in (*BYSTANDERS, ATTACKER))
                ratio = got["peak_mib"] / clean["peak_mib"] if clean["peak_mib"] else 0.0
                ok = same and own not in ("grader-error", "no result") and finished and ratio <= 2.0
                held += ok
                print(f"{attack.name:<62}{'same' if same else 'CHANGED':>11}{own:>24}{got['peak_mib']:>10.0f}"
                      f"{ratio:>8.2f}x  {'yes' if finished else 'NO'} (exit {got['code']})"
                      f"{'' if ok else '  NOT HELD'}")
                for name in BYSTANDERS if not same else ():
                    print(f"    {name}: {said(got['results'].get(name))} (clean: {said(clean['results'].get(name))})")
                if args.verbose and not ok:
                    print("    " + got["stderr"][-1500:].replace("\n", "\n    "))
            print(f"held: {held} of {len(chosen)} (bystanders unchanged, the attacker scored, the batch finished, "
                  "at most 2x the clean batch's peak memory)")
    finally:
        disk.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="attack names containing any of these")
    parser.add_argument("--batch", action="store_true", help="the attacks on what a batch shares (issue 33)")
    parser.add_argument("--disk", help="--batch: a small file system for the grader's temporary folder and results")
    parser.add_argument("--disk-mib", type=int, default=1024, help="--batch as root: the size of the tmpfs mounted")
    parser.add_argument("--tree", help="--batch: the checkout whose grader grades (default: this one)")
    parser.add_argument("--verbose", action="store_true", help="--batch: the end of stderr of a batch not held")
    args = parser.parse_args()
    if args.batch:
        main_batch(args)
        return
    chosen = {n: a for n, a in attacks().items() if not args.only or any(o in n for o in args.only)}
    with tempfile.TemporaryDirectory() as folder:
        clean = {key: graded(build(Path(folder) / f"clean-{key}", key, None))
                 for key in sorted({key for key, _ in chosen.values()})}
        held = 0
        print(f"{'attack':<58}{'exit':>5}{'score':>8}{'peak MiB':>10}{'x clean':>9}")
        for name, (key, attack) in chosen.items():
            got = graded(build(Path(folder) / name.replace(" ", "_").replace("/", "_"), key, attack))
            ratio = got["peak_mib"] / clean[key]["peak_mib"]
            ok = got["code"] in (0, 1) and not got["traceback"] and ratio <= 2.0
            held += ok
            print(f"{name:<58}{got['code']:>5}{got['score'] if got['score'] is not None else '-':>8}"
                  f"{got['peak_mib']:>10.0f}{ratio:>8.2f}x{'' if ok else '  NOT HELD'}")
        for key, got in clean.items():
            print(f"clean run ({key}): peak {got['peak_mib']:.0f} MiB, score {got['score']}")
        print(f"held: {held} of {len(chosen)} (each ends in a result, at most 2x a clean run's peak memory)")


if __name__ == "__main__":
    main()
