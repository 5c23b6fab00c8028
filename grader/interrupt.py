"""Ctrl-C on a ``grade`` command: exit 130 with one line, whatever the process was doing.

Python's own handler raises KeyboardInterrupt wherever the main thread is, and a grader spends its time
in torch. Raised in a Python callback that torch's C++ made (through pybind11), it aborted the process
(exit 134, once in six); raised elsewhere, Click turned it into "Aborted!" and exit 1, the code for
"points missing", which the CI templates accept as a success. So this handler raises nothing: it ends
the processes this one started (each in a session of its own: the sandbox dies with its group), removes
the scratch named after this process (as a grader that was killed is swept, grader/sandbox/leftovers.py),
says one line and leaves with ``os._exit(130)``, which unwinds no C++ frame and runs nothing that was
interrupted half-way. It holds from the command's start; ``grade autograde``'s run and ``--watch`` put
their own in place for their stretch (an interrupted run puts its results folder in order first, and
Ctrl-C is how a watch ends) and give this one back after.
"""
from __future__ import annotations

import os
import signal

from grader.sandbox import cgroups, leftovers  # noqa: F401 - cgroups: imported now, never inside the handler

EXIT_CODE = 130  # 128 + SIGINT: what a shell reports for a command Ctrl-C ended
LINE = "grade: interrupted"


def install() -> None:
    """Ctrl-C ends this process as the module says, from now on (in the main thread, where Python
    allows a handler)."""
    signal.signal(signal.SIGINT, _stop)


def _stop(signum, frame) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C waits for the first to be done
    try:
        os.write(2, f"{LINE}\n".encode())
        end_children()
        leftovers.sweep(pids={os.getpid()})
    except BaseException:  # noqa: BLE001 - nothing may stop the exit; what is left is swept by the next grader
        pass
    finally:
        os._exit(EXIT_CODE)


def end_children(wait_s: float = 2.0) -> None:
    """Kill every process this one started, with its process group where it leads one (a zygote, started
    in a session of its own, takes its sandbox with it), and wait for them to be gone, ``wait_s`` at most
    (a child that could not be killed is not waited for forever)."""
    import time

    pending = set(children())
    for pid in pending:
        try:
            os.killpg(pid, signal.SIGKILL) if os.getpgid(pid) == pid else os.kill(pid, signal.SIGKILL)
        except OSError:
            continue
    deadline = time.monotonic() + wait_s
    while pending and time.monotonic() < deadline:
        for pid in list(pending):
            try:
                if os.waitpid(pid, os.WNOHANG)[0] == 0:
                    continue
            except OSError:  # reaped already
                pass
            pending.discard(pid)
        if pending:
            time.sleep(0.01)


def children() -> list[int]:
    """This process's children, from each of its threads' list in /proc (Linux; none elsewhere)."""
    found = []
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return found
    for task in tasks:
        try:
            with open(f"/proc/self/task/{task}/children", encoding="ascii") as listed:
                found += [int(pid) for pid in listed.read().split()]
        except (OSError, ValueError):
            continue
    return found
