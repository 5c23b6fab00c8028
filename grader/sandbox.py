"""Running student code in isolation: the zygote and the workers it forks.

The grader imports torch, then forks a *zygote* before it imports any reference solution or hidden
suite. For each submission module the zygote forks a *worker* (:mod:`grader.worker`), which starts
in milliseconds with torch already loaded and with nothing of the reference in its memory. The
grader talks to a worker over a socket: it sends inputs, the worker replies with plain tensors
that the grader loads with ``weights_only=True``. A worker that overruns its time is killed with
its whole process group; one that dies is reported as crashed; another can be forked at once.
"""
from __future__ import annotations

import os
import signal
import socket

from grader import wire
from grader.worker import WorkerSpec, serve


class WorkerFault(Exception):
    """The worker did not answer properly; ``kind`` is a result status (timeout, crashed, error)."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind
        self.message = message


class Zygote:
    """A torch-loaded process that forks workers on request."""

    def __init__(self, blocked: tuple[str, ...]):
        import torch  # noqa: F401 - loaded once here, inherited by every worker

        self._control, theirs = socket.socketpair()
        self.pid = os.fork()
        if self.pid == 0:  # the zygote
            code = 0
            try:
                self._control.close()
                _zygote_loop(theirs, tuple(os.path.realpath(p) for p in blocked))
            except BaseException:  # noqa: BLE001
                code = 1
            finally:
                os._exit(code)
        theirs.close()

    def spawn(self, spec: WorkerSpec, *, timeout: float) -> Worker:
        """A new worker that has imported the submission module (or failed to: see ``import_error``)."""
        wire.send_bytes(self._control, wire.dump_request(spec))
        message, fds, _, _ = socket.recv_fds(self._control, 64, 1)
        worker = Worker(int(message), socket.socket(fileno=fds[0]), spec)
        reply = worker.receive(timeout=timeout)
        if not reply.get("ok"):
            worker.import_error = reply
        return worker

    def sweep(self) -> None:
        """Kill every process left from the workers so far (the next submission starts clean)."""
        try:
            wire.send_bytes(self._control, wire.dump_request("sweep"))
            socket.recv_fds(self._control, 64, 1)
        except (OSError, wire.ChannelClosed):
            pass

    def close(self) -> None:
        self._control.close()
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass


def _zygote_loop(control: socket.socket, blocked: tuple[str, ...]) -> None:
    # What a worker uses after it may have given up its user (grader.confine), imported while it can.
    import ctypes  # noqa: F401

    import grader.confine  # noqa: F401
    import grader.mounts  # noqa: F401
    import grader.notebook_source  # noqa: F401
    from grader.worker import _die_with_parent, _prctl

    _die_with_parent()
    _prctl(36, 1)  # PR_SET_CHILD_SUBREAPER: orphans of student code become ours, not init's
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # and the kernel reaps them, workers included
    _forget_reference(blocked)
    _warm_up()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        try:
            spec = wire.load_request(wire.recv_bytes(control, limit=1 << 20))
        except wire.ChannelClosed:
            return
        if spec == "sweep":
            _kill_children()
            socket.send_fds(control, [b"0"], [])
            continue
        ours, theirs = socket.socketpair()
        pid = os.fork()
        if pid == 0:  # the worker
            code = 0
            try:
                control.close()
                ours.close()
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                serve(theirs, spec, blocked)
            except BaseException:  # noqa: BLE001
                code = 1
            finally:
                os._exit(code)
        theirs.close()
        socket.send_fds(control, [str(pid).encode()], [ours.fileno()])
        ours.close()


def _kill_children() -> None:
    """Kill every process whose parent is this zygote: workers, and what student code started and
    left behind (a subreaper adopts processes that escaped their worker's group with setsid)."""
    import time

    me = str(os.getpid())
    for _ in range(3):  # processes killed now may orphan others, adopted a moment later
        killed = 0
        for stat in os.listdir("/proc"):
            if not stat.isdigit():
                continue
            try:
                with open(f"/proc/{stat}/stat") as handle:
                    parent = handle.read().rsplit(")", 1)[1].split()[1]
            except (OSError, IndexError):
                continue
            if parent == me:
                try:
                    os.kill(int(stat), signal.SIGKILL)
                    killed += 1
                except (ProcessLookupError, PermissionError):
                    pass
        if not killed:
            return
        time.sleep(0.01)


# The grader's modules a worker runs on; every other one (the harness, diagnose with its textbook
# attention, the catalogue...) is forgotten here and refused to student code (worker.GraderShield).
WORKER_MODULES = frozenset({"grader", "grader.worker", "grader.wire", "grader.sandbox", "grader.confine",
                            "grader.mounts", "grader.notebook_source", "grader.errors"})


def _forget_reference(blocked: tuple[str, ...]) -> None:
    """Drop modules loaded from the reference or the suites, and the grader's own but those a worker
    runs on, in case this process had imported them before forking (a test session, a long-lived
    grader): a worker can then not import them by name, nor find them in ``sys.modules``."""
    import gc
    import sys

    from grader.worker import _under

    package = sys.modules["grader"]
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        ours = name.startswith("grader.") and name not in WORKER_MODULES
        if ours or (path and _under(path, blocked)):
            del sys.modules[name]
            if ours and "." not in name[len("grader."):]:
                package.__dict__.pop(name[len("grader."):], None)
    gc.collect()


def _warm_up() -> None:
    """Pay torch's lazy first-use costs (dispatch, autograd, a traced call, torch.save) once, here,
    instead of in every worker: a fresh worker's first backward otherwise takes a quarter second."""
    import io

    import torch

    from grader.worker import _make_tracer

    torch.set_num_threads(1)
    layer = torch.nn.Linear(5, 3)
    x = torch.randn(4, 5, requires_grad=True)
    with _make_tracer(frozenset()):
        scores = layer(x).masked_fill(torch.ones(4, 3, dtype=torch.bool).triu(1), float("-inf"))
        out = torch.softmax(scores, dim=-1) @ torch.randn(3, 2)
    (out * torch.ones_like(out)).sum().backward()
    wire.dump_reply({"out": out.detach(), "n": 1})
    torch.load(io.BytesIO(wire.dump_reply({"x": x.detach()})), weights_only=True)


class Worker:
    """The grader's end of one worker."""

    def __init__(self, pid: int, sock: socket.socket, spec: WorkerSpec):
        self.pid = pid
        self.sock = sock
        self.spec = spec
        self.alive = True
        self.import_error: dict | None = None

    def request(self, payload: dict, *, timeout: float) -> dict:
        if not self.alive:
            raise WorkerFault("crashed", "the process running your code had already stopped")
        try:
            wire.send_bytes(self.sock, wire.dump_request(payload))
        except wire.ChannelClosed:
            self.kill()
            raise WorkerFault("crashed", "the process running your code stopped unexpectedly") from None
        return self.receive(timeout=timeout)

    def receive(self, *, timeout: float) -> dict:
        try:
            payload = wire.recv_bytes(self.sock, limit=self.spec.reply_limit, timeout=timeout)
        except wire.ChannelTimeout:
            self.kill()
            raise WorkerFault("timeout", f"your code did not finish within {timeout:g} s") from None
        except wire.ChannelClosed:
            self.kill()
            raise WorkerFault("crashed", "the process running your code stopped unexpectedly "
                                         "(it exited, was killed, or ran out of memory)") from None
        except wire.MessageTooLarge as exc:
            self.kill()
            raise WorkerFault("error", f"your code returned too much data ({exc})") from None
        try:
            reply = wire.load_reply(payload)
        except Exception:  # noqa: BLE001 - anything but plain data is refused
            raise WorkerFault("error", "your code returned something other than plain tensors") from None
        if not isinstance(reply, dict):
            raise WorkerFault("error", "your code returned something other than plain tensors")
        return reply

    def kill(self) -> None:
        if self.alive:
            self.alive = False
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self.sock.close()
