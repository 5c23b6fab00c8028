"""A cgroup per submission: memory and process count limited for all its processes together.

Where the grader runs as root and finds a writable cgroup hierarchy (v1 ``memory`` and ``pids``
controllers, or v2 with both enabled below the grader's own cgroup), each grading process makes a
folder of its own under its cgroup and, per submission, a child folder with the limits; every
worker of the submission joins it before it runs anything of the student's. Elsewhere the memory
limit is the worker's own address-space limit (per process), and :func:`available` says why.
"""
from __future__ import annotations

import itertools
import os
from dataclasses import dataclass
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
_HIERARCHIES = itertools.count(1)  # hierarchies of this process (a grading process's, its notebook kernels')


@dataclass(frozen=True)
class Hierarchy:
    """Where this grading process's cgroups go: one folder per controller (v1) or one (v2)."""

    folders: tuple[Path, ...]  # this grading process's own, created by :func:`make_hierarchy`
    v2: bool


def _own_cgroups() -> dict[str, str]:
    found = {}
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            number, controllers, path = line.split(":", 2)
            for name in controllers.split(",") if controllers else [""]:
                found[name] = path
    except (OSError, ValueError):
        pass
    return found


def _candidates() -> tuple[list[Path], bool] | None:
    own = _own_cgroups()
    if "memory" in own and "pids" in own and (ROOT / "memory").is_dir() and (ROOT / "pids").is_dir():
        return [ROOT / "memory" / own["memory"].lstrip("/"), ROOT / "pids" / own["pids"].lstrip("/")], False
    if "" in own and (ROOT / "cgroup.controllers").is_file():
        return [ROOT / own[""].lstrip("/")], True
    return None


def candidate_folders() -> list[Path]:
    """Where this process's graders make their hierarchies (:func:`make_hierarchy`), if anywhere."""
    if os.geteuid() != 0:
        return []
    found = _candidates()
    return found[0] if found else []


def available() -> str | None:
    """None where per-submission cgroups can be made here, else why not, in words."""
    if os.geteuid() != 0:
        return "memory is limited per process, not per submission (cgroups need root)"
    found = _candidates()
    if found is None:
        return "memory is limited per process, not per submission (no cgroup memory and pids controllers)"
    folders, v2 = found
    for folder in folders:
        if not os.access(folder, os.W_OK):
            return f"memory is limited per process, not per submission ({folder} is not writable)"
    if v2:
        enabled = (folders[0] / "cgroup.subtree_control").read_text().split()
        if not {"memory", "pids"} <= set(enabled):
            return "memory is limited per process, not per submission (cgroup v2 without memory and pids here)"
    return None


def hierarchy_name(owner: str) -> str:
    """A new name for a hierarchy of this process's, ``grade-<owner>-<n>`` (``owner``: leftovers.owner_prefix(),
    the name its leftovers are swept by, should this process die before it removes it)."""
    return f"grade-{owner}-{next(_HIERARCHIES)}"


def make_hierarchy(name: str) -> Hierarchy:
    folders, v2 = _candidates()
    made = []
    for folder in folders:
        path = folder / name
        path.mkdir()  # never one that exists: another grader's (FileExistsError: no cgroups for this one)
        made.append(path)
    if v2:
        (made[0] / "cgroup.subtree_control").write_text("+memory +pids")
    return Hierarchy(tuple(made), v2)


class SubmissionCgroup:
    """The cgroup of one submission: made with its limits, emptied and removed at its end."""

    def __init__(self, hierarchy: Hierarchy, name: str, *, memory_bytes: int, pids: int):
        self.folders = tuple(folder / name for folder in hierarchy.folders)
        self.v2 = hierarchy.v2
        for folder in self.folders:
            folder.mkdir(exist_ok=True)
        if self.v2:
            (self.folders[0] / "memory.max").write_text(str(memory_bytes))
            (self.folders[0] / "memory.swap.max").write_text("0") if (self.folders[0] / "memory.swap.max").exists() else None
            (self.folders[0] / "pids.max").write_text(str(pids))
        else:
            (self.folders[0] / "memory.limit_in_bytes").write_text(str(memory_bytes))
            (self.folders[1] / "pids.max").write_text(str(pids))

    def procs_files(self, inside: dict[Path, str]) -> tuple[str, ...]:
        """The ``cgroup.procs`` files as the sandbox sees them (``inside``: hierarchy folder -> path)."""
        return tuple(f"{inside[folder.parent]}/{folder.name}/cgroup.procs" for folder in self.folders)

    def pids(self) -> list[int]:
        found = set()
        for folder in self.folders:
            try:
                found |= {int(p) for p in (folder / "cgroup.procs").read_text().split()}
            except OSError:
                pass
        return sorted(found)

    def peak_bytes(self) -> int | None:
        name = "memory.peak" if self.v2 else "memory.max_usage_in_bytes"
        try:
            return int((self.folders[0] / name).read_text())
        except (OSError, ValueError):
            return None

    def joining(self, command: list[str]) -> list[str]:
        """``command`` started in this cgroup: a shell that moves itself into it, then becomes ``command``
        (whatever it starts is in the cgroup from its first instruction)."""
        moves = " && ".join(f'echo $$ > "${i + 1}"' for i in range(len(self.folders)))
        procs = [str(folder / "cgroup.procs") for folder in self.folders]
        return ["/bin/sh", "-c", f'{moves} && shift {len(procs)} && exec "$@"', "sh", *procs, *command]

    def remove(self, timeout_s: float = 0.5) -> bool:
        """Kill whatever is left in it (nothing, normally: the namespaces took it down), then remove it; False
        where a folder is still there after ``timeout_s``."""
        return all([remove_tree(folder, timeout_s=timeout_s) for folder in self.folders])


def remove_hierarchy(hierarchy: Hierarchy | None) -> None:
    """Remove a hierarchy's folders, once its cgroups are gone (one still in use stays)."""
    for folder in hierarchy.folders if hierarchy else ():
        try:
            folder.rmdir()
        except OSError:
            pass


def remove_tree(root: Path, timeout_s: float = 5.0) -> bool:
    """Kill every process in the cgroup ``root`` and the cgroups below it, then remove them all, children
    first; False if one is still there after ``timeout_s`` (a cgroup cannot go while a process is in it)."""
    import signal
    import time

    folders = sorted((p for p in root.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True)
    deadline = time.monotonic() + timeout_s
    for folder in [*folders, root]:
        while True:
            try:
                pids = [int(p) for p in (folder / "cgroup.procs").read_text().split()]
            except (OSError, ValueError):
                pids = []
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            try:
                folder.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.01)
    return True
