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
import signal
import tempfile
from pathlib import Path

KINDS = ["grade-sandbox", "grade-autograde", "grade-sandboxes", "grade-kernel", "grade-service"]  # (a list: no misconception id)
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


def remove_tree(path: str | Path) -> bool:
    """Remove a file or a folder tree that student code may have written, however it is made: never
    following a link; folders made unreadable or unwritable to their owner opened up on the way; a tree
    nested deeper than Python's recursion, or than the longest path the kernel takes (red team round 18:
    shutil.rmtree raised RecursionError on a kernel's 5,000-deep folder, past ``ignore_errors``, and every
    later grader's start failed on it). Walked one folder at a time by descriptor, with ``..`` back up (no
    process of its owner is left to move it meanwhile). True when nothing of it is left; never raises."""
    path = str(path)
    try:
        if not os.path.isdir(path) or os.path.islink(path):
            os.unlink(path)
            return True
        os.chmod(path, 0o700)
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return True
    except OSError:
        return not os.path.lexists(path)
    levels = [(None, _emptied(fd))]  # (the folder's name in its parent, its subfolders not yet removed)
    try:
        while levels:
            name, pending = levels[-1]
            if pending:
                below = pending.pop()
                try:
                    inner = _opened(below, fd)
                except OSError:
                    continue
                os.close(fd)
                fd = inner
                levels.append((below, _emptied(fd)))
                continue
            levels.pop()
            if name is None:
                break
            parent = os.open("..", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = parent
            try:
                os.rmdir(name, dir_fd=fd)
            except OSError:
                pass
    except OSError:
        pass
    finally:
        os.close(fd)
    try:
        os.rmdir(path)
    except OSError:
        pass
    return not os.path.lexists(path)


def _opened(name: str, fd: int) -> int:
    """The folder ``name`` in the folder ``fd``, opened without following a link, and made its owner's to
    empty (a folder its owner made unreadable is opened after a chmod: as root none is needed)."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    try:
        inner = os.open(name, flags, dir_fd=fd)
    except PermissionError:  # not root, and its owner closed it: a folder (a link would fail with ELOOP)
        os.chmod(name, 0o700, dir_fd=fd)
        inner = os.open(name, flags, dir_fd=fd)
    try:
        os.fchmod(inner, 0o700)
    except OSError:
        pass
    return inner


def _emptied(fd: int) -> list[str]:
    """The folder ``fd`` with everything but its folders removed: their names."""
    folders = []
    try:
        with os.scandir(fd) as entries:
            for entry in entries:
                try:
                    if entry.is_dir(follow_symlinks=False):
                        folders.append(entry.name)
                    else:
                        os.unlink(entry.name, dir_fd=fd)
                except OSError:
                    continue
    except OSError:
        pass
    return folders


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
                remove_tree(entry)
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
