"""A notebook's kernel started ahead, in its sandbox (grader.sandbox.kernel_boundary): warm before its notebook is known.

``python -m grader.inside.kernel_start SEED WORK QUOTA MODE MEMORY`` gives up every capability, limits its
processes (MODE: ``uid``, a uid of its own, or ``namespace``) and what it maps (MEMORY bytes of address space
per process beyond the kernel's own; 0 as root, where its cgroup bounds all of its memory), imports what a
lesson notebook's first cells import (torch, matplotlib's pyplot) and what Jupyter's kernel is made of
(ipykernel), as the kernel's own user, then
waits on its stdin for the grader's one line: the kernel's command (``{"argv": [...]}``), sent once a notebook
is given to it, when SEED holds a copy of that notebook's folder. It copies SEED into WORK (a file system of
QUOTA bytes that bubblewrap mounted there, the kernel's working folder), sets the largest file it may write to
QUOTA, and becomes the kernel: ipykernel's, in this process (what it imported is imported), or any other
kernel's command by exec. An end of input without a line (the grader's run ended first) ends it.

Nothing of a notebook runs before that line: the imports are the grader's own, the same for every
notebook, as a kernel that had imported them in its first cell.
"""
from __future__ import annotations

import json
import os
import sys

LAUNCHER = "ipykernel_launcher"


def warm_up() -> None:
    """What every lesson notebook imports, and the kernel itself; whatever is missing is left to the notebook."""
    for name in ("torch", "matplotlib.pyplot", "ipykernel.kernelapp"):
        try:
            __import__(name)
        except Exception:  # noqa: BLE001 - absent or broken here: the notebook meets it as it would have
            pass


def limit_processes(*, per_uid: bool) -> None:
    """At most NPROC_LIMIT processes and threads of the notebook's own, as a submission's (red team round 19
    started 300): as root the kernel's uid is its own; for an ordinary user, where the kernel counts the limit
    per user namespace (Linux 5.14 and later), those of the sandbox; elsewhere it would count the grader's user's
    every process, and none is set."""
    import resource

    from grader.inside.zygote import NPROC_LIMIT, _tasks_here, counts_per_user_namespace

    if per_uid or counts_per_user_namespace():
        limit = NPROC_LIMIT + _tasks_here()  # beyond bubblewrap's and this process's own
        resource.setrlimit(resource.RLIMIT_NPROC, (limit, limit))


def limit_memory(memory: int) -> None:
    """No more than ``memory`` bytes of address space (every mapping: the heap, tensors, shared memory) beyond
    what this process has mapped after its imports, in it and each process it starts, where the machine gives
    no cgroup (an ordinary user's). Red team round 20: a data limit let a notebook hold 7 GiB of shared memory
    in one process. Where the sandbox shows an NVIDIA device, CUDA reserves address space far beyond its use: a
    data limit there."""
    import resource

    if memory > 0:
        cuda = os.path.exists("/dev/nvidiactl")
        key = "VmData" if cuda else "VmSize"
        with open("/proc/self/status") as status:
            mapped = next(int(line.split()[1]) << 10 for line in status if line.startswith(key + ":"))
        limit = mapped + memory
        resource.setrlimit(resource.RLIMIT_DATA if cuda else resource.RLIMIT_AS, (limit, limit))


def seed(source: str, work: str, quota: int) -> None:
    """SOURCE's contents (the notebook's folder, as the grader copied it) into WORK, as this process's user,
    and no file larger than QUOTA from now on."""
    import resource
    import shutil

    for folder, _, files in os.walk(source):  # contents only: WORK itself is bubblewrap's mount, not ours
        relative = os.path.relpath(folder, source)
        target = work if relative == "." else os.path.join(work, relative)
        os.makedirs(target, exist_ok=True)
        for name in files:
            path = os.path.join(folder, name)
            if os.path.isfile(path) and not os.path.islink(path):
                shutil.copyfile(path, os.path.join(target, name))
    if quota > 0:
        resource.setrlimit(resource.RLIMIT_FSIZE, (quota, quota))


def become(argv: list[str]) -> None:
    """Run the kernel's command: ipykernel's launcher in this process, anything else by exec."""
    if len(argv) >= 3 and argv[1:3] == ["-m", LAUNCHER]:
        if sys.path and (sys.path[0] in ("", os.getcwd())):
            del sys.path[0]  # as the launcher does: IPython puts the working folder back itself
        sys.argv = [LAUNCHER, *argv[3:]]
        from ipykernel import kernelapp

        kernelapp.launch_new_instance()
        return
    os.execv(argv[0], argv)


def main() -> None:
    from grader.inside.syscalls import drop_privileges

    # no capability, before anything: bubblewrap leaves an ordinary user's sandbox every one in its user
    # namespace, with which the kernel could make the runtime's read-only folders writable (as root the
    # zygote has already switched to the kernel's uid)
    drop_privileges(None, os.getgid())
    source, work, quota, mode, memory = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
    limit_processes(per_uid=mode == "uid")
    warm_up()
    limit_memory(memory)
    line = sys.stdin.buffer.readline()
    if not line.strip():
        return  # no notebook came
    argv = json.loads(line)["argv"]
    seed(source, work, quota)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)  # the grader's line was all this input held
    os.close(devnull)
    become(argv)


if __name__ == "__main__":
    main()
