"""What a grading process leaves when it is killed, and who removes it.

A grader makes three kinds of things that outlive a process killed with SIGKILL: scratch folders in the
temporary folder (a zygote's sandbox, an autograde run's working copies, a notebook kernel's folder),
cgroups (a hierarchy per grading process, a child per submission) and, as long as its parent lives,
grading processes themselves. Each is named after the process that made it and its PID namespace
(``<kind>-<pid>-<namespace>-...``), so that whoever finds one whose process is gone can remove it: a
pid means something only in its own namespace, so what a grader in another one made is never taken
for dead (two graders in two containers sharing /tmp or the cgroup tree keep their own); ``grade autograde`` when one of its grading
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
PID_LIMIT = 1 << 22  # Linux's PID_MAX_LIMIT: a larger number in a name is no process's
_OWNED = re.compile(r"^(?:%s)-(\d{1,7})-(\d{1,20})-" % "|".join(KINDS))
_HIERARCHY = re.compile(r"^grade-(\d{1,7})-(\d{1,20})-\d+$")  # grader/sandbox/submission_sandbox.py's cgroups


def namespace() -> int:
    """This process's PID namespace (its inode number; 0 where /proc does not say)."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def owner_prefix() -> str:
    """``<this pid>-<its PID namespace>``: what names a grader's leftovers after it."""
    return f"{os.getpid()}-{namespace()}"


def scratch(kind: str, parent: str | Path | None = None) -> Path:
    """A new private folder ``<kind>-<this pid>-<namespace>-XXXX`` in the temporary folder (or ``parent``)."""
    assert kind in KINDS
    return Path(tempfile.mkdtemp(prefix=f"{kind}-{owner_prefix()}-", dir=parent))


def _gone(found, dead) -> bool:
    """Whether the name ``found`` (pid, namespace) is a process of this namespace that ``dead`` says is gone."""
    pid, space = int(found.group(1)), int(found.group(2))
    return 0 < pid < PID_LIMIT and space == namespace() and dead(pid)


def alive(pid: int) -> bool:
    if not 0 < pid < PID_LIMIT:
        return False
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
            if found and mine and _gone(found, dead):
                shutil.rmtree(entry, ignore_errors=True)
                removed.append(entry)
    return removed + sweep_cgroups(dead)


def sweep_cgroups(dead) -> list[Path]:
    """The cgroup folders ``grade-<pid>-<namespace>-<n>`` beside this process's own (where its graders make
    them) whose pid, in this namespace, is ``dead``: anything left in them killed, then removed, children
    first."""
    from grader.sandbox.cgroups import candidate_folders, remove_tree

    removed = []
    for parent in candidate_folders():
        try:
            entries = [e for e in parent.iterdir() if e.is_dir()]
        except OSError:
            continue
        for entry in entries:
            found = _HIERARCHY.match(entry.name)
            if found and _gone(found, dead):
                if remove_tree(entry):
                    removed.append(entry)
    return removed


def die_with_parent(parent: int) -> None:
    """This process (a child of ``parent``) is killed when its parent dies, however it dies (SIGKILL
    included); Linux only."""
    from grader.inside.syscalls import PR_SET_PDEATHSIG, prctl

    try:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, RuntimeError):  # no prctl here
        return
    if os.getppid() != parent:  # the parent died before the call took effect
        os._exit(1)
