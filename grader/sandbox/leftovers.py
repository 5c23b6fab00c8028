"""What a grading process leaves when it is killed, and who removes it.

A grader makes three kinds of things that outlive a process killed with SIGKILL: scratch folders in the
temporary folder (a zygote's sandbox, an autograde run's working copies, a notebook kernel's folder),
cgroups (a hierarchy per grading process, a child per submission) and, as long as its parent lives,
grading processes themselves. Each is named after the process that made it (``<kind>-<pid>-...``), so
that whoever finds one whose process is gone can remove it: ``grade autograde`` when one of its grading
processes dies, and every grader as it starts (:func:`sweep`), for whatever a killed run left. The
processes of a submission die with their sandbox (bubblewrap's ``--die-with-parent`` and the PID
namespace), and an autograde run's grading processes with the run (:func:`die_with_parent`).
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import tempfile
from pathlib import Path

KINDS = ["grade-sandbox", "grade-autograde", "grade-sandboxes", "grade-kernel"]  # (a list: no misconception id)
_OWNED = re.compile(r"^(?:%s)-(\d+)-" % "|".join(KINDS))
_HIERARCHY = re.compile(r"^grade-(\d+)-\d+$")  # grader.grading.run's cgroup folders: grade-<pid>-<n>


def scratch(kind: str, parent: str | Path | None = None) -> Path:
    """A new private folder ``<kind>-<this pid>-XXXX`` in the temporary folder (or ``parent``)."""
    assert kind in KINDS
    return Path(tempfile.mkdtemp(prefix=f"{kind}-{os.getpid()}-", dir=parent))


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep(folders=None, *, pids=None) -> list[Path]:
    """Remove what the graders of ``pids`` (default: every process no longer alive) left: their scratch
    folders in ``folders`` (default: the temporary folder) and their cgroups. Only this user's folders
    are touched. Returns what was removed."""
    removed = []
    dead = (lambda pid: pid in pids) if pids is not None else (lambda pid: not alive(pid))
    for folder in folders or [Path(tempfile.gettempdir())]:
        try:
            entries = list(Path(folder).iterdir())
        except OSError:
            continue
        for entry in entries:
            found = _OWNED.match(entry.name)
            try:
                mine = entry.lstat().st_uid == os.geteuid() and entry.is_dir() and not entry.is_symlink()
            except OSError:
                continue
            if found and mine and dead(int(found.group(1))):
                shutil.rmtree(entry, ignore_errors=True)
                removed.append(entry)
    return removed + sweep_cgroups(dead)


def sweep_cgroups(dead) -> list[Path]:
    """The cgroup folders ``grade-<pid>-<n>`` beside this process's own (where its graders make them)
    whose pid is ``dead``: anything left in them killed, then removed, children first."""
    from grader.sandbox.cgroups import candidate_folders, remove_tree

    removed = []
    for parent in candidate_folders():
        try:
            entries = [e for e in parent.iterdir() if e.is_dir()]
        except OSError:
            continue
        for entry in entries:
            found = _HIERARCHY.match(entry.name)
            if found and dead(int(found.group(1))):
                if remove_tree(entry):
                    removed.append(entry)
    return removed


def die_with_parent(parent: int) -> None:
    """This process (a child of ``parent``) is killed when its parent dies, however it dies (SIGKILL
    included); Linux only."""
    from grader.inside.zygote import PR_SET_PDEATHSIG, prctl

    try:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, RuntimeError):  # no prctl here
        return
    if os.getppid() != parent:  # the parent died before the call took effect
        os._exit(1)
