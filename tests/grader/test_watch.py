"""``grade check --watch`` (grader/watch.py): a save re-grades from a warm grader, only what changed."""
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from grader.watch import changes

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = ROOT / "solutions"
WRONG_NAIVE = "\n\ndef softmax_naive(x, dim=-1):\n    return torch.exp(x) / torch.exp(x).sum(dim=0, keepdim=True)\n"


class Watching:
    """``grade check --watch`` in a process of its own, its output read a line at a time."""

    def __init__(self, submission: Path, *assignments: str):
        self.process = subprocess.Popen([sys.executable, "-m", "grader", "check", "--watch", "--seed", "3",
                                         "--submission", str(submission), *assignments], cwd=ROOT,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            self.lines.put(line)

    def until(self, marker: str, timeout: float = 60.0) -> str:
        """Everything printed up to and including a line holding ``marker``."""
        seen, deadline = [], time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.2)
            except queue.Empty:
                continue
            seen.append(line)
            if marker in line:
                return "".join(seen)
        raise AssertionError(f"no {marker!r} in:\n{''.join(seen)}")

    def stop(self) -> int:
        self.process.send_signal(signal.SIGINT)
        return self.process.wait(timeout=20)


def _save(path: Path, text: str) -> None:
    time.sleep(0.3)  # a save after the watcher has settled
    path.write_text(text)


def _zygotes(of: int) -> set[int]:
    """The sandbox zygotes that process ``of`` started (its descendants): never another grading's, which
    may run beside this test on the same machine (issue 35)."""
    found = set()
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if b"grader.inside.zygote" in cmdline.read_bytes() and _descends(int(cmdline.parent.name), of):
                found.add(int(cmdline.parent.name))
        except OSError:
            pass
    return found


def _descends(pid: int, ancestor: int) -> bool:
    while pid > 1:
        if pid == ancestor:
            return True
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return False
        pid = int(next(line.split()[1] for line in status.splitlines() if line.startswith("PPid:")))
    return False


def _alive(pids: set[int]) -> set[int]:
    """Those of ``pids`` still running as a zygote."""
    alive = set()
    for pid in pids:
        try:
            if b"grader.inside.zygote" in Path(f"/proc/{pid}/cmdline").read_bytes():
                alive.add(pid)
        except OSError:
            pass
    return alive


@pytest.mark.slow
def test_a_save_regrades_and_says_what_changed_and_ctrl_c_leaves_nothing(tmp_path):
    folder = tmp_path / "01_attention_basics"
    shutil.copytree(SOLUTIONS / "01_attention_basics", folder, ignore=shutil.ignore_patterns("*.ipynb"))
    module = folder / "attention_basics.py"
    right = module.read_text()
    watching = Watching(folder)
    try:
        assert "total 100/100" in watching.until("watching for saves")
        ours = _zygotes(watching.process.pid)  # the warm grader's sandbox
        assert ours, "the watcher keeps no sandbox warm: nothing to see go"
        _save(module, right + WRONG_NAIVE)
        second = watching.until("watching for saves")
        assert "softmax_naive: newly failed" in second and "total 100/100" not in second
        _save(module, right + "\ndef broken(:\n    pass\n")
        said = watching.until("SyntaxError")
        assert "attention_basics.py, line" in said and "total" not in said  # at once, nothing graded
        _save(module, right)
        assert "softmax_naive: newly passed" in watching.until("watching for saves")
    finally:
        code = watching.stop()
    assert code == 0
    deadline = time.monotonic() + 10
    while _alive(ours) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(ours)  # the sandbox went with it


@pytest.mark.slow
def test_a_notebook_save_regrades_it(tmp_path):
    import nbformat

    folder = tmp_path / "01_attention_basics"
    folder.mkdir()
    notebook = nbformat.v4.new_notebook()
    source = (SOLUTIONS / "01_attention_basics" / "attention_basics.py").read_text()
    notebook.cells = [nbformat.v4.new_code_cell(source)]
    path = folder / "attention_basics.ipynb"
    nbformat.write(notebook, path)
    watching = Watching(folder)
    try:
        assert "total 100/100" in watching.until("watching for saves")
        notebook.cells.append(nbformat.v4.new_code_cell(WRONG_NAIVE))
        time.sleep(0.3)
        nbformat.write(notebook, path)
        assert "softmax_naive: newly failed" in watching.until("watching for saves")
    finally:
        assert watching.stop() == 0


@pytest.mark.slow
def test_04_is_regraded_when_03_changes_and_03_alone_when_nothing_imports_it(tmp_path):
    for assignment in ("03_causal_attention", "04_multi_head_attention"):
        shutil.copytree(SOLUTIONS / assignment, tmp_path / assignment, ignore=shutil.ignore_patterns("*.ipynb"))
    watching = Watching(tmp_path, "03_causal_attention", "04_multi_head_attention")
    try:
        first = watching.until("watching for saves", timeout=120)
        assert "03_causal_attention  100/100" in first and "04_multi_head_attention  100/100" in first
        module = tmp_path / "03_causal_attention" / "causal_attention.py"
        _save(module, module.read_text() + "\n")
        again = watching.until("watching for saves", timeout=120)
        assert "03_causal_attention" in again and "04_multi_head_attention" in again  # 04 imports 03's module
        other = tmp_path / "04_multi_head_attention" / "multi_head_attention.py"
        _save(other, other.read_text() + "\n")
        alone = watching.until("watching for saves", timeout=120)
        assert "04_multi_head_attention" in alone and "03_causal_attention  " not in alone
    finally:
        assert watching.stop() == 0


def test_changes_name_what_passed_failed_or_moved():
    before = {("01", "softmax"): ("failed", 0.0), ("01", "scores"): ("passed", 15.0), ("01", "loop"): ("failed", 5.0)}
    after = {("01", "softmax"): ("passed", 25.0), ("01", "scores"): ("failed", 10.0), ("01", "loop"): ("failed", 7.5)}
    assert changes(before, after) == ["✓ 01: softmax: newly passed (0 -> 25)", "✗ 01: scores: newly failed (15 -> 10)",
                                      "↑ 01: loop: 5 -> 7.5 points"]
    assert changes(after, after) == []


def test_watch_refuses_a_format_or_an_output_file(tmp_path):
    done = subprocess.run([sys.executable, "-m", "grader", "check", "--watch", "--format", "json", "--submission",
                           str(SOLUTIONS / "01_attention_basics")], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, env={**os.environ})
    assert done.returncode == 2 and "--watch" in done.stderr and "Traceback" not in done.stderr
