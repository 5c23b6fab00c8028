"""nbgrader's kernels in their sandbox (grader/sandbox/kernel_boundary.py): a notebook that hunts for the
reference and the hidden suite, and replaces check(), prints neither; an honest check() still grades."""
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SOLUTION = ROOT / "solutions" / "01_attention_basics" / "attention_basics.py"
SUITE = ROOT / "suites" / "hidden" / "test_01_attention_basics.py"

HUNT = f"""
import glob, os
found = []
for path in [{str(SOLUTION)!r}, {str(SUITE)!r}, "/proc/1/root" + {str(SOLUTION)!r},
             os.path.join(os.path.dirname(os.__file__), "..", "..", "..", "..", "solutions")]:
    try:
        with open(path) as handle:
            found.append(handle.read())
    except OSError as error:
        print("refused:", type(error).__name__)
for top in sorted(set(os.listdir("/")) - set(("proc", "sys", "dev", "usr", "lib", "lib32", "lib64", "libx32", "bin", "sbin", "etc"))):
    for name in ("test_01_attention_basics.py", "attention_basics.py", "course.toml"):
        found += [p for p in glob.glob(f"/{{top}}/**/{{name}}", recursive=True)
                  if "/second_course/" not in p]  # tests/second_course: another course, not this one's
print("FOUND", len(found), found[:3])
"""
REPLACE_CHECK = f"""
import grader.notebook_checks as nc
def check(exercise, **_):
    print(open({str(SUITE)!r}).read())
    return 25.0
nc.check = check
"""
SOFTMAX = """
import torch
def softmax(x, dim=-1):
    shifted = x - x.amax(dim=dim, keepdim=True).nan_to_num(neginf=0.0)
    exp = shifted.exp()
    return exp / exp.sum(dim=dim, keepdim=True).clamp_min(1e-30)
"""


def run(tmp_path, *sources, timeout=120):
    import nbformat
    from nbclient import NotebookClient

    from grader.sandbox.kernel_boundary import ConfinedKernelManager

    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    folder = tmp_path / "01_attention_basics"
    folder.mkdir()
    client = NotebookClient(notebook, timeout=timeout, kernel_name="python3", allow_errors=True,
                            interrupt_on_timeout=True, kernel_manager_class=ConfinedKernelManager,
                            resources={"metadata": {"path": str(folder)}})
    client.execute()
    return ["".join(o.get("text", "") + "".join(o.get("traceback", [])) + json.dumps(o.get("data", {}))
                    for o in cell.outputs) for cell in notebook.cells]


def confine(monkeypatch, mode):
    """The kernel's sandbox, and the grading service's, in ``mode``: as root a uid of the kernel's own
    ("separate-user"), or what an ordinary user gets ("user-namespace"); skipped where the machine has neither."""
    import os

    import grader.grading.grader
    import grader.sandbox.confine
    from grader.sandbox.confine import Confinement, find_bwrap, plan

    planned = plan("auto")
    if not planned.sandboxed or (mode == "separate-user" and os.geteuid() != 0):
        pytest.skip(f"{mode}: not available on this machine (no bubblewrap or not root)")
    chosen = planned if mode == planned.mode else Confinement("user-namespace", find_bwrap())
    for module in (grader.sandbox.confine, grader.grading.grader):
        monkeypatch.setattr(module, "confinement_for", lambda course, private=(): chosen)
    monkeypatch.chdir(ROOT)


def secret_lines():
    lines = {line.strip() for path in (SOLUTION, SUITE) for line in path.read_text().splitlines()
             if len(line.strip()) > 25}
    assert lines
    return lines


@pytest.mark.nbgrader
@pytest.mark.slow
@pytest.mark.parametrize("mode", ["separate-user", "user-namespace"])
def test_a_notebook_that_hunts_for_the_reference_and_replaces_check_prints_neither(tmp_path, monkeypatch, mode):
    """As root (a uid of the kernel's own) and as an ordinary user gets it (a user namespace)."""
    confine(monkeypatch, mode)
    monkeypatch.setenv("GRADE_DEVICE", "cpu")
    outputs = run(tmp_path, HUNT, SOFTMAX, "from grader.notebook_checks import check\ncheck('softmax')",
                  REPLACE_CHECK, "from grader.notebook_checks import check\ncheck('softmax')")
    text = "\n".join(outputs)
    assert "FOUND 0 []" in outputs[0], outputs[0]
    assert [line for line in secret_lines() if line in text] == []
    assert "softmax: 25/25 points, passed" in outputs[2], outputs[2]  # the honest bystander: graded outside
    assert "FileNotFoundError" in outputs[4] or "PermissionError" in outputs[4], outputs[4]


WRITE_UNTIL_REFUSED = """
written = 0
try:
    with open({path}, "wb") as handle:
        while written < {limit}:
            handle.write(b"x" * (1 << 20))
            written += 1 << 20
except OSError as error:
    print("stopped:", type(error).__name__, error.errno)
print("WROTE", written >> 20, "MiB")
"""  # a cell that writes a file of ``limit`` bytes at ``path`` (Python expressions), MiB by MiB, or what it may
FILL = ("import os" + WRITE_UNTIL_REFUSED.format(path='"big.bin"', limit="(1 << 30)")
        + 'print("SEED", sorted(os.listdir(".")))\n')


@pytest.mark.nbgrader
@pytest.mark.slow
@pytest.mark.parametrize("mode", ["separate-user", "user-namespace"])
def test_a_notebook_that_fills_its_working_folder_fills_its_own_quota(tmp_path, monkeypatch, mode):
    """Red team (issue 33): the kernel's working folder was a folder on the grader's disk, with no quota:
    a notebook could fill the disk nbgrader and every other kernel write to. It is now a file system of
    WORK_QUOTA bytes holding a copy of the notebook's folder, as the kernel's own user."""
    from grader.sandbox.confine import WORK_QUOTA

    confine(monkeypatch, mode)
    (output,) = run(tmp_path, FILL)
    written = int(output.split("WROTE ")[1].split()[0])
    assert "stopped:" in output and written <= WORK_QUOTA >> 20, output
    assert "big.bin" in output  # the copy of the notebook's folder, and what it wrote, in its working folder
