"""Hostile submissions against the grading process: what each costs it, as a ratio to a clean run.

Each attack is a right solution with something hostile added: a module that rewrites its worker's
replies (the worker runs in the student's process, so it can send anything the protocol carries),
or a notebook beside the module. Each is graded by ``grade check`` in a process of its own, whose
peak memory (VmHWM) is read as it exits; the clean run is the same assignment's solution. Issue 21's
target: no attack costs the grading process more than twice a clean run's peak, and every one ends
in a result (exit 0 or 1), never a traceback.

    python benchmarks/red_team.py [--only NAME ...]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="attack names containing any of these")
    args = parser.parse_args()
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
