"""Ctrl-C on `grade check` and `grade autograde` (grader/interrupt.py), as a terminal sends it: to the whole
process group, at moments spread over a run. It exited 1 ("Aborted!", the code for points missing, which
the CI templates accept as a success) or 2, and once in six aborted with 134 (issue 45)."""
import glob
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def start(*args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "grader", *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def children(pid: int) -> list[int]:
    found = []
    for listed in glob.glob(f"/proc/{pid}/task/*/children"):
        try:
            found += [int(child) for child in Path(listed).read_text().split()]
        except OSError:
            pass
    return found


def gone(pids, within_s: float = 5.0) -> bool:
    deadline = time.monotonic() + within_s
    while any(Path(f"/proc/{pid}").exists() for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not any(Path(f"/proc/{pid}").exists() for pid in pids)


def scratch(pid: int, kind: str = "grade-*") -> list[str]:
    """What the grading process ``pid`` made in the temporary folder: ``<kind>-<pid>-<namespace>-...``
    (grader/sandbox/leftovers.py)."""
    return glob.glob(os.path.join(tempfile.gettempdir(), f"{kind}-{pid}-*"))


def interrupt(process: subprocess.Popen, after_s: float, *, once=None) -> tuple[str, list[int]]:
    """Ctrl-C twice (a user who presses it again) ``after_s`` into the run (or after ``once()`` holds); its
    stderr and the processes it had started."""
    deadline = time.monotonic() + 120
    while once is not None and not once() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(after_s)
    assert process.poll() is None, f"the run ended before {after_s:.2f} s: choose an earlier moment"
    started = children(process.pid)
    os.killpg(process.pid, signal.SIGINT)
    time.sleep(0.05)
    try:
        os.killpg(process.pid, signal.SIGINT)
    except ProcessLookupError:  # already gone
        pass
    _, err = process.communicate(timeout=120)
    return err, started


def said_interrupted_once(process, err: str) -> None:
    assert process.returncode == 130, (process.returncode, err[-2000:])
    assert "Traceback" not in err and "Aborted" not in err and "terminate called" not in err, err[-2000:]
    assert err.count("interrupted") == 1 and err.splitlines()[-1].startswith("grade: "), err[-2000:]


@pytest.fixture
def hanging(tmp_path) -> Path:
    """The reference modules as a submission whose last module hangs at import: whatever the machine's
    speed, a run is still going at any moment a clean run of the reference would be."""
    folder = tmp_path / "hanging"
    for source in sorted((ROOT / "solutions").glob("*/*.py")):
        (folder / source.parent.name).mkdir(parents=True, exist_ok=True)
        shutil.copy(source, folder / source.parent.name / source.name)
    last = sorted(folder.glob("06_*/*.py"))[0]
    last.write_text("import time\ntime.sleep(60)\n" + last.read_text())
    return folder


@pytest.mark.slow  # a clean run and five interrupted ones
def test_ctrl_c_on_grade_check_exits_130_with_one_line_at_any_moment_and_leaves_nothing(hanging):
    began = time.monotonic()
    clean = start("check", "--submission", "solutions")
    clean.communicate(timeout=300)
    assert clean.returncode == 0
    took = time.monotonic() - began
    # the start (imports), torch's import and the sandbox's start, the checks as they run in the grader and
    # in the student's process
    for after in (0.5, 0.25 * took, 0.5 * took, 0.75 * took, 0.9 * took):
        process = start("check", "--submission", str(hanging))
        err, started = interrupt(process, after)
        said_interrupted_once(process, err)
        assert err.splitlines()[-1] == "grade: interrupted", err
        assert gone(started), f"{after:.2f} s: a process the grader started outlived it"
        assert not scratch(process.pid), f"{after:.2f} s: its scratch was left behind"


@pytest.mark.slow  # two interrupted runs
def test_ctrl_c_on_grade_autograde_exits_130_before_and_during_the_run(hanging, tmp_path):
    """Before the run's own handler was in place (torch's import, the sandbox's plan) it exited 1; during
    the run it keeps what was graded and says how to resume, exit 130 as before."""
    klass = tmp_path / "class"
    for student in ("ada", "bo"):
        shutil.copytree(hanging, klass / student)
    for during, says in ((False, "grade: interrupted"), (True, "--resume")):
        out = tmp_path / f"out-{during}"
        process = start("autograde", str(klass), "--out", str(out), "--workers", "1")
        # during: once the run has made its grading processes' folder, inside its own handler's stretch
        err, started = interrupt(process, 1.0 if during else 0.5,
                                 once=(lambda: scratch(process.pid, "grade-sandboxes")) if during else None)
        said_interrupted_once(process, err)
        assert says in err.splitlines()[-1], err
        assert gone(started)
