"""nbgrader's kernels in a sandbox: whatever a notebook runs, it sees neither ``solutions/`` nor ``suites/``.

``nbgrader autograde`` runs each submitted notebook in a Jupyter kernel, and the notebook's graded cells
call :func:`grader.notebook_checks.check`. Were the grader inside that kernel, a notebook could replace
``check``, read the reference and the hidden suite, and print them into its own feedback. So here the
kernel runs in a bubblewrap sandbox like the zygote's (a view of the Python runtime only, no network, its
own PID namespace; as root a uid of its own and no capabilities), talking to Jupyter over Unix sockets
(ZeroMQ's ``ipc`` transport) in a folder of its own: a file system of IPC_QUOTA bytes that only the sandbox
has, which Jupyter reaches through the sandbox's root (``/proc/PID/root``), so that nothing the kernel writes
there lands on the grader's disk (red team round 18 wrote 1.5 GiB). Its working folder is a copy of the notebook's, on a
file system of WORK_QUOTA bytes of its own (a notebook that fills it fills its own). A
grading service outside the sandbox (:mod:`grader.platforms.notebook_service`, one process for every kernel this
process starts, each kernel on a socket of its own that only its sandbox shows) holds the grader: ``check`` sends it the kernel's cells and prints what it answers, points, misconceptions and the
student's own feedback, nothing else. The score in nbgrader's gradebook is still what the cell showed, so
``grade export`` compares it with a grade of its own (see grader.reporting.export).

Where no sandbox can be made (no bubblewrap, no user namespaces), the kernel runs as nbgrader's would,
and the log says so; ``separate_user = "required"`` refuses.
"""
from __future__ import annotations

import asyncio
import atexit
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager
from nbgrader.preprocessors import Execute

# the grader's modules a confined kernel holds: check() as a client of the service, and what it imports
KERNEL_SIDE = ("errors.py", "notebook_checks.py")
SERVICE_ENV = "GRADE_SERVICE"  # where check() finds the grading service, inside the sandbox
IPC_QUOTA = 1 << 20  # bytes of the kernel's socket folder: sockets take none, and nothing else belongs there


class ConfinedExecute(Execute):
    """nbgrader's Execute preprocessor, with each notebook's kernel in the sandbox."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("kernel_manager_class", ConfinedKernelManager)
        super().__init__(*args, **kwargs)


class ConfinedKernelManager(AsyncKernelManager):
    """Starts the kernel in bubblewrap, answered by the run's grading service outside (on a socket of its own)."""

    async def _async_pre_start_kernel(self, **kw):
        from grader.config import find_course_root, load_course
        from grader.sandbox.confine import confinement_for

        self._folder = None
        self._service = None
        course = load_course(find_course_root())
        confinement = confinement_for(course)
        if not confinement.sandboxed:
            from grader.sandbox.confine import describe

            self.log.warning("%s: the notebook's kernel runs unconfined", describe(confinement))
            return await super()._async_pre_start_kernel(**kw)
        from grader.sandbox.leftovers import scratch

        self._folder = scratch("grade-kernel")
        self._folder.chmod(0o711)
        uid = _kernel_uid(confinement)
        ipc = self._folder / "ipc"
        ipc.mkdir(mode=0o700)  # stays empty here: the sandbox mounts the kernel's own over it
        self.transport = "ipc"
        self.ip = self._inside = str(ipc / "kernel")
        self.connection_file = str(self._folder / "kernel.json")
        cmd, kw = await super()._async_pre_start_kernel(**kw)
        os.chmod(self.connection_file, 0o644)
        cwd = Path(kw.get("cwd") or os.getcwd()).resolve()
        work = self._folder / "work"
        shutil.copytree(cwd, work, symlinks=False, ignore=shutil.ignore_patterns(".*"), ignore_dangling_symlinks=True)
        if uid is not None:
            from grader.sandbox.confine import prepare_workdir

            prepare_workdir(str(work), uid, uid)
        self._service = _SERVICE.open(course, self._folder / "service", cwd)
        self._info, info = os.pipe()
        try:
            cmd = sandboxed(cmd, confinement=confinement, course=course, folder=self._folder, cwd=cwd, uid=uid,
                            info_fd=info)
        except BaseException:
            os.close(info)
            raise
        self._info_write = info
        kw["env"] = {}
        kw["cwd"] = str(self._folder)
        kw["pass_fds"] = (info,)  # Popen's, through Jupyter's launcher: for bubblewrap only
        return cmd, kw

    async def _async_launch_kernel(self, kernel_cmd: list[str], **kw) -> None:
        info, self._info_write = getattr(self, "_info_write", None), None
        if info is None:
            return await super()._async_launch_kernel(kernel_cmd, **kw)
        try:
            await super()._async_launch_kernel(kernel_cmd, **kw)
        finally:
            os.close(info)
        pid = await asyncio.get_running_loop().run_in_executor(None, _sandbox_pid, self._info)
        # the kernel binds its sockets at the path it was given, in its own file system; Jupyter connects
        # through the sandbox's root. Until bubblewrap has entered that root, the path is the empty folder here
        self.ip = f"/proc/{pid}/root{self._inside}"

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        if getattr(self, "_inside", None) is not None:
            self.ip = self._inside  # Jupyter removes its ipc files here: the empty folder, never another root
        await super()._async_cleanup_resources(restart=restart)
        if restart:
            return
        socket_path, self._service = getattr(self, "_service", None), None
        if socket_path is not None:
            _SERVICE.close(socket_path)  # its socket, connections and waiting requests go; the service stays
        for name in ("_info", "_info_write"):
            descriptor = getattr(self, name, None)
            setattr(self, name, None)
            if descriptor is not None:
                os.close(descriptor)
        folder, self._folder = getattr(self, "_folder", None), None
        if folder is not None:
            from grader.sandbox.leftovers import remove_tree

            remove_tree(folder)  # the kernel may have written its ipc folder: any depth (red team round 18)


def _sandbox_pid(info: int) -> int:
    """The pid (in this PID namespace) of the sandbox's first process, from bubblewrap's ``--info-fd``."""
    import json
    import select

    data = b""
    while b"}" not in data:
        if not select.select([info], [], [], 30)[0]:
            raise RuntimeError("the notebook's sandbox did not start")
        chunk = os.read(info, 4096)
        if not chunk:
            raise RuntimeError("the notebook's sandbox did not start")
        data += chunk
    try:
        pid = json.JSONDecoder().raw_decode(data.decode())[0]["child-pid"]
    except (ValueError, KeyError, TypeError):
        pid = None
    if not isinstance(pid, int) or pid <= 0:
        raise RuntimeError("the notebook's sandbox did not start")
    return pid


def _kernel_uid(confinement) -> int | None:
    """As root, a uid of the kernel's own (from the same range as the submissions'), else None."""
    if not confinement.root:
        return None
    from grader.sandbox.confine import submission_uid

    return submission_uid()


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
        folder.mkdir(mode=0o711)
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


def sandboxed(cmd: list[str], *, confinement, course, folder: Path, cwd: Path, uid: int | None,
              info_fd: int) -> list[str]:
    """bubblewrap's command line around the kernel's: the zygote's view of the runtime, a file system of
    IPC_QUOTA bytes for the kernel's sockets, its connection file, the copy of the notebook's folder where
    the notebook was; bubblewrap writes the sandbox's pid to ``info_fd``."""
    from grader.sandbox.confine import WORK_QUOTA, SANDBOX_ROOT, copy_student_side, namespace_args, view_args
    from grader.sandbox.confine import blocked_paths, interpreter, python_env, setenv_args

    lib = folder / "lib"
    copy_student_side(lib, extra=KERNEL_SIDE)
    args = [confinement.bwrap, "--info-fd", str(info_fd), *namespace_args(confinement.root),
            *view_args(lib=str(lib), work=str(folder / "work"), blocked=blocked_paths(course))]
    args = args[:args.index("--remount-ro")]  # the view's end: chdir and environment come below
    args += [*_open_folders(folder / "ipc"), "--size", str(IPC_QUOTA), "--perms", "1777", "--tmpfs", str(folder / "ipc"),
             "--ro-bind", str(folder / "service"), f"{SANDBOX_ROOT}/service",
             "--ro-bind", str(folder / "kernel.json"), str(folder / "kernel.json"),
             "--ro-bind", str(folder / "work"), f"{SANDBOX_ROOT}/seed",  # copied into a quota below
             *_open_folders(cwd), "--size", str(WORK_QUOTA), "--perms", "1777", "--tmpfs", str(cwd),
             "--remount-ro", "/", "--chdir", str(cwd), "--clearenv", "--setenv", "PATH", "/usr/bin:/bin",
             *setenv_args(python_env(f"{SANDBOX_ROOT}/lib")), "--setenv", "HOME", "/tmp",
             "--setenv", "IPYTHONDIR", "/tmp/.ipython", "--setenv", "MPLCONFIGDIR", "/tmp/.matplotlib",
             "--setenv", "OMP_NUM_THREADS", "1", "--setenv", "PYTHONDONTWRITEBYTECODE", "1",
             "--setenv", SERVICE_ENV, f"{SANDBOX_ROOT}/service/grade.sock", *setenv_args(quiet_env())]
    if confinement.root:  # capabilities until the kernel's first instruction: then its uid, and none
        args += [interpreter(), "-m", "grader.inside.zygote", "--as", str(uid), str(uid), "--"]
    # the working folder: a file system of WORK_QUOTA bytes, the notebook's folder copied in as the kernel's user
    args += [interpreter(), "-m", "grader.inside.zygote", "--seed", f"{SANDBOX_ROOT}/seed", str(cwd),
             str(WORK_QUOTA), "--"]
    if cmd and cmd[0] == sys.executable:  # as the view sees it (a symlinked virtualenv)
        cmd = [interpreter(), *cmd[1:]]
    return args + cmd


# fontconfig's own templates (under /usr, which the sandbox shows): each a whole config naming no font
# folder the sandbox has, so fontconfig reads it without a word (matplotlib still finds the fonts it ships and those in
# /usr/share/fonts by itself)
FONTCONFIG_TEMPLATES = ("/usr/share/fontconfig/conf.avail/10-autohint.conf",
                        "/usr/share/fontconfig/conf.avail/05-reset-dirs-sample.conf")


def quiet_env() -> dict[str, str]:
    """The kernel's environment that keeps what no one needs out of the instructor's terminal (issue
    35). ipykernel prints a "Ctrl-C will not work" banner to its stdout unless it was started by a
    parent (``JPY_PARENT_PID``, which the sandbox's clean environment drops): 1 says so, and that there
    is no parent to poll (in its PID namespace the kernel's parent is the sandbox's init). fontconfig,
    run by matplotlib as it builds its font cache in each new kernel, finds no /etc/fonts in the sandbox
    and says "Fontconfig error: Cannot load default config file": a config of its own templates, and
    a cache folder it may write, keep it quiet."""
    env = {"JPY_PARENT_PID": "1", "XDG_CACHE_HOME": "/tmp/.cache"}
    template = next((path for path in FONTCONFIG_TEMPLATES if os.path.isfile(path)), None)
    if template is not None:
        env["FONTCONFIG_FILE"] = template
    return env


def _open_folders(path: Path) -> list[str]:
    """The folders above ``path`` in the sandbox, made 0755 (bubblewrap would make them 0700, closed
    to the kernel's uid)."""
    args = []
    for folder in reversed(path.parents[:-1]):
        args += ["--perms", "0755", "--dir", str(folder)]
    return args
