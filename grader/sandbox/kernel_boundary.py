"""nbgrader's kernels in a sandbox: whatever a notebook runs, it sees neither ``solutions/`` nor ``suites/``.

``nbgrader autograde`` runs each submitted notebook in a Jupyter kernel, and the notebook's graded cells
call :func:`grader.notebook_checks.check`. Were the grader inside that kernel, a notebook could replace
``check``, read the reference and the hidden suite, and print them into its own feedback. So here the
kernel runs in a bubblewrap sandbox of its own, started before its notebook was known and warm by then
(grader.sandbox.kernel_sandbox: a view of the Python runtime only, no network, its own PID namespace; as root
a uid of its own and no capabilities; its sockets on a file system that only the sandbox has, reached by
Jupyter through the sandbox's root). Its working folder is a copy of the notebook's, on a file system of
WORK_QUOTA bytes of its own (a notebook that fills it fills its own). A grading service outside the sandbox
(:mod:`grader.platforms.notebook_service`, one process for every kernel this process starts, each kernel on a
socket of its own that only its sandbox shows) holds the grader: ``check`` sends it the kernel's cells and
prints what it answers, points, misconceptions and the student's own feedback, nothing else. The score in nbgrader's gradebook is still what the cell showed, so
``grade export`` compares it with a grade of its own (see grader.reporting.export).

Where no sandbox can be made (no bubblewrap, no user namespaces), the kernel runs as nbgrader's would,
and the log says so; ``separate_user = "required"`` refuses.
"""
from __future__ import annotations

import asyncio
import atexit
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager
from nbgrader.preprocessors import Execute


class ConfinedExecute(Execute):
    """nbgrader's Execute preprocessor, with each notebook's kernel in the sandbox (the next one's started ahead:
    ``nbgrader autograde`` runs a class's notebooks one after another)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("kernel_manager_class", AheadKernelManager)
        super().__init__(*args, **kwargs)


class ConfinedKernelManager(AsyncKernelManager):
    """Starts the kernel in its sandbox (grader.sandbox.kernel_sandbox), answered by the run's grading service
    outside, on a socket of its own."""

    start_ahead = False  # whether to start the next kernel's sandbox while this one's notebook runs

    async def _async_pre_start_kernel(self, **kw):
        from grader.config import find_course_root, load_course
        from grader.sandbox.confine import confinement_for

        self._sandbox = None
        self._service = None
        course = load_course(find_course_root())
        confinement = confinement_for(course)
        if not confinement.sandboxed:
            from grader.sandbox.confine import describe

            self.log.warning("%s: the notebook's kernel runs unconfined", describe(confinement))
            return await super()._async_pre_start_kernel(**kw)
        from grader.sandbox.kernel_sandbox import AHEAD

        self._sandbox = sandbox = AHEAD.take(course, confinement, ahead=self.start_ahead)
        self.transport = "ipc"
        self.ip = sandbox.socket
        self.connection_file = sandbox.connection_file
        cmd, kw = await super()._async_pre_start_kernel(**kw)
        os.chmod(self.connection_file, 0o644)
        self._notebook_folder = Path(kw.get("cwd") or os.getcwd()).resolve()
        self._service = _SERVICE.open(course, sandbox.folder / "service", self._notebook_folder)
        return cmd, kw

    async def _async_launch_kernel(self, kernel_cmd: list[str], **kw) -> None:
        sandbox = getattr(self, "_sandbox", None)
        if sandbox is None:
            return await super()._async_launch_kernel(kernel_cmd, **kw)
        sandbox.start(kernel_cmd, self._notebook_folder)
        provisioner = self.provisioner  # Jupyter's own, given the sandbox's process as if it had started it
        provisioner.process, provisioner.pid, provisioner.pgid = sandbox.process, sandbox.process.pid, sandbox.process.pid
        provisioner.cwd = str(sandbox.folder)
        pid = await asyncio.get_running_loop().run_in_executor(None, sandbox.sandbox_pid)
        # the kernel binds its sockets at the path it was given, in its own file system; Jupyter connects
        # through the sandbox's root. Until bubblewrap has entered that root, the path is the empty folder here
        self.ip = f"/proc/{pid}/root{sandbox.socket}"

    async def _async_signal_kernel(self, signum: int) -> None:
        sandbox = getattr(self, "_sandbox", None)
        if signum == signal.SIGINT and sandbox is not None and sandbox.interrupt():
            return  # to the kernel inside (Jupyter's own signal reaches bubblewrap's process group only)
        await super()._async_signal_kernel(signum)

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        sandbox = getattr(self, "_sandbox", None)
        if sandbox is not None:
            self.ip = sandbox.socket  # Jupyter removes its ipc files here: the empty folder, never another root
        await super()._async_cleanup_resources(restart=restart)
        if restart:
            return
        socket_path, self._service = getattr(self, "_service", None), None
        if socket_path is not None:
            _SERVICE.close(socket_path)  # its socket, connections and waiting requests go; the service stays
        self._sandbox = None
        if sandbox is not None:
            sandbox.close()


class AheadKernelManager(ConfinedKernelManager):
    """nbgrader's: each kernel's sandbox taken warm, the next started while this notebook runs."""

    start_ahead = True


class _Service:
    """The grading service of the kernels this process starts (grader.platforms.notebook_service): started with
    the first, kept for the next (its grader's sandbox warm, the reference's results kept for the class's
    seed), started again should it have stopped; it ends when this process does (its control socket closes)."""

    def __init__(self):
        self.process: subprocess.Popen | None = None
        self.control: socket.socket | None = None
        self.root: Path | None = None

    def open(self, course, folder: Path, cwd: Path) -> str:
        """A socket in ``folder`` on which the service answers the kernel started in the notebook folder ``cwd``."""
        path = str(folder / "grade.sock")
        for _ in range(2):  # a service that stopped since the last kernel is started again, once
            if self.process is None or self.process.poll() is not None or self.root != course.root:
                self._start(course)
            try:
                reply = self._ask({"open": path, "cwd": str(cwd)})
            except OSError:
                self._stop()
                continue
            if reply.get("ok") is True:
                return path
            raise RuntimeError(f"the grading service for the notebook's kernel could not start: {reply.get('error')}")
        raise RuntimeError("the grading service for the notebook's kernel could not start")

    def close(self, path: str) -> None:
        if self.process is not None and self.process.poll() is None:
            try:
                self._ask({"close": path})
            except OSError:
                self._stop()

    def _ask(self, message: dict) -> dict:
        from grader.inside import protocol

        try:
            protocol.send(self.control, protocol.encode(message), timeout=30)
            reply = protocol.decode(protocol.recv(self.control, limit=1 << 16, timeout=30), limit=0)
        except (protocol.ChannelClosed, protocol.ChannelTimeout, protocol.MalformedMessage,
                protocol.MessageTooLarge) as error:
            raise OSError(str(error)) from None
        return reply if isinstance(reply, dict) else {}

    def _start(self, course) -> None:
        self._stop()
        ours, theirs = socket.socketpair()
        self.process = subprocess.Popen([sys.executable, "-m", "grader.platforms.notebook_service", str(course.root),
                                         str(theirs.fileno())], pass_fds=[theirs.fileno()], cwd=str(course.root),
                                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True)
        theirs.close()
        self.control, self.root = ours, course.root

    def _stop(self) -> None:
        if self.control is not None:
            self.control.close()  # the service's signal to end
            self.control = None
        if self.process is not None:
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.process = None


_SERVICE = _Service()
atexit.register(_SERVICE._stop)
