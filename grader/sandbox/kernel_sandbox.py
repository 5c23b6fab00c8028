"""A notebook kernel's sandbox, started before its notebook is known (grader.sandbox.kernel_boundary uses them).

Each kernel of an ``nbgrader autograde`` run gets a sandbox of its own, never used before: bubblewrap's view
of the Python runtime only, no network, its own PID namespace, as root a uid of its own and no capabilities.
What makes a kernel slow to start is the same for every notebook (bubblewrap, Python, ipykernel, and the
lesson's ``import torch`` and matplotlib, about 3 s of a processor), so the next notebook's sandbox is
started while this one's notebook runs (:class:`Ahead`): its process imports all that as the kernel's user
(grader.inside.kernel_start) and waits. Given a notebook (:meth:`KernelSandbox.start`), the grader copies the
notebook's folder where the sandbox reads it, and sends the kernel's command: the process copies the folder
into its working folder, ``NOTEBOOK_FOLDER`` (a file system of WORK_QUOTA bytes of its own), and becomes the
kernel. Nothing of one notebook reaches another's sandbox: a sandbox is given to one notebook, once.

The kernel's sockets (ZeroMQ's ``ipc`` transport) are on a file system of IPC_QUOTA bytes that only the
sandbox has; Jupyter reaches them through the sandbox's root, ``/proc/PID/root`` (PID from bubblewrap's
``--info-fd``), so nothing the kernel writes lands on the grader's disk (red team round 18 wrote 1.5 GiB).
Until bubblewrap has entered that root, and once the sandbox is gone, that path is an empty folder of the
grader's (:attr:`KernelSandbox.socket`).
"""
from __future__ import annotations

import atexit
import json
import os
import select
import signal
import subprocess
import sys
from pathlib import Path

from grader.sandbox.confine import SANDBOX_ROOT

NOTEBOOK_FOLDER = f"{SANDBOX_ROOT}/notebook"  # the kernel's working folder, whatever the notebook's folder was
# the grader's modules a confined kernel holds: check() as a client of the service, and what it imports
KERNEL_SIDE = ("errors.py", "notebook_checks.py")
SERVICE_ENV = "GRADE_SERVICE"  # where check() finds the grading service, inside the sandbox
IPC_QUOTA = 1 << 20  # bytes of the kernel's socket folder: sockets take none, and nothing else belongs there
# the backend ipykernel chooses when none is set; set here so that matplotlib, imported ahead, has it already
INLINE_BACKEND = "module://matplotlib_inline.backend_inline"


class KernelSandbox:
    """One kernel's sandbox, started now; its notebook given later (:meth:`start`), once."""

    def __init__(self, course, confinement):
        from grader.sandbox.leftovers import remove_tree, scratch

        self.key = _key(course, confinement)
        self.folder = scratch("grade-kernel")
        self.folder.chmod(0o711)
        for name, mode in (("ipc", 0o700), ("work", 0o700), ("conn", 0o755), ("service", 0o711)):
            (self.folder / name).mkdir(mode=mode)  # ipc stays empty here: the sandbox mounts its own over it
        self.socket = str(self.folder / "ipc" / "kernel")  # the kernel's sockets, where it makes them
        self.connection_file = str(self.folder / "conn" / "kernel.json")
        self.uid = _kernel_uid(confinement)
        self._pid: int | None = None
        self._info, info = os.pipe()
        go, self._go = os.pipe()
        self.cgroup = None
        try:
            cmd = sandboxed(confinement=confinement, course=course, folder=self.folder, uid=self.uid, info_fd=info)
            if confinement.cgroups:  # as root: its memory (what it allocates and its file systems hold) bounded
                self.cgroup = _kernel_cgroup(course, self.folder.name)
                cmd = self.cgroup.joining(cmd)
            self.process = subprocess.Popen(cmd, stdin=go, pass_fds=(info,), cwd=str(self.folder), env={},
                                            start_new_session=True)  # as Jupyter's launcher: signals to its group
        except BaseException:
            for descriptor in (self._info, self._go):
                os.close(descriptor)
            remove_tree(self.folder)
            if self.cgroup is not None:
                self.cgroup.remove()
            raise
        finally:
            os.close(info)
            os.close(go)
        _LIVE.add(self)  # closed with this process, whatever became of its kernel manager

    def start(self, argv: list[str], notebook_folder: Path) -> None:
        """Give the sandbox its notebook: a copy of ``notebook_folder`` where the sandbox reads it (as root,
        handed to the kernel's uid), then the kernel's command ``argv``, which its process becomes."""
        import shutil

        work = self.folder / "work"
        shutil.copytree(notebook_folder, work, symlinks=False, ignore=shutil.ignore_patterns(".*"),
                        ignore_dangling_symlinks=True, dirs_exist_ok=True)
        if self.uid is not None:
            from grader.sandbox.confine import prepare_workdir

            prepare_workdir(str(work), self.uid, self.uid)
        from grader.sandbox.confine import interpreter

        if argv and argv[0] == sys.executable:  # as the view sees it (a symlinked virtualenv)
            argv = [interpreter(), *argv[1:]]
        go, self._go = self._go, None
        try:
            os.write(go, json.dumps({"argv": argv}).encode() + b"\n")
        finally:
            os.close(go)

    def sandbox_pid(self) -> int:
        """The pid (in this PID namespace) of the sandbox's first process, from bubblewrap's ``--info-fd``."""
        if self._pid is None:
            data = b""
            while b"}" not in data:
                if not select.select([self._info], [], [], 30)[0]:
                    raise RuntimeError("the notebook's sandbox did not start")
                chunk = os.read(self._info, 4096)
                if not chunk:
                    raise RuntimeError("the notebook's sandbox did not start")
                data += chunk
            try:
                pid = json.JSONDecoder().raw_decode(data.decode())[0]["child-pid"]
            except (ValueError, KeyError, TypeError):
                pid = None
            if not isinstance(pid, int) or pid <= 0:
                raise RuntimeError("the notebook's sandbox did not start")
            self._pid = pid
        return self._pid

    def interrupt(self) -> bool:
        """SIGINT to the kernel, the sandbox's first process's child: Jupyter's interrupt signals the process
        group it started, bubblewrap's, and the sandbox is a session of its own (red team round 19: a cell
        past nbgrader's timeout was never interrupted, and the whole notebook failed). False where none was sent."""
        from grader.sandbox.client import children_reader

        try:
            pid = self.sandbox_pid()
        except RuntimeError:
            return False
        sent = False
        for child in children_reader()(pid):
            try:
                os.kill(child, signal.SIGINT)
                sent = True
            except OSError:
                pass
        return sent

    def close(self) -> None:
        """End the sandbox, if it has not ended, and remove its folder (whatever the kernel wrote in it)."""
        from grader.sandbox.leftovers import remove_tree

        _LIVE.discard(self)
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except OSError:
                self.process.kill()
        self.process.wait()
        if self.cgroup is not None:
            self.cgroup.remove(timeout_s=5)  # and whatever of the kernel's left its process group (setsid) with it
        for name in ("_info", "_go"):
            descriptor = getattr(self, name)
            setattr(self, name, None)
            if descriptor is not None:
                os.close(descriptor)
        remove_tree(self.folder)  # the kernel may have written there: any depth (red team round 18)


class Ahead:
    """The next notebook's sandbox, started when this one's is taken, for the same course and confinement;
    ended with this process (bubblewrap's ``--die-with-parent`` ends it should this process die first)."""

    def __init__(self):
        self.sandbox: KernelSandbox | None = None

    def take(self, course, confinement, *, ahead: bool = True) -> KernelSandbox:
        """A sandbox for a kernel: the one started ahead where it suits, else a new one; ``ahead``: the next
        one started now, warming while this notebook runs (nbgrader's runs; a lone kernel would waste it)."""
        sandbox, self.sandbox = self.sandbox, None
        if sandbox is not None and (sandbox.key != _key(course, confinement) or sandbox.process.poll() is not None):
            sandbox.close()
            sandbox = None
        if sandbox is None:
            sandbox = KernelSandbox(course, confinement)
        if ahead:
            self.sandbox = KernelSandbox(course, confinement)
        return sandbox

    def stop(self) -> None:
        """The sandbox started ahead, and every other still here (a kernel manager that never cleaned up:
        red team round 19 found failed notebooks' folders, copies of the notebooks in them, left behind)."""
        self.sandbox = None
        for sandbox in list(_LIVE):
            sandbox.close()
        global _HIERARCHY
        from grader.sandbox.cgroups import remove_hierarchy

        hierarchy, _HIERARCHY = _HIERARCHY, None
        remove_hierarchy(hierarchy)


_LIVE: set = set()  # every sandbox of this process not closed yet
_HIERARCHY = None  # as root, the cgroup hierarchy of this process's kernels (made with the first)
AHEAD = Ahead()
atexit.register(AHEAD.stop)


def _key(course, confinement) -> tuple:
    """What a sandbox started ahead depends on: the course (what is hidden), the confinement, the runtime."""
    return str(course.root), confinement, os.environ.get("PYTHONPATH", ""), sys.executable


def kernel_memory_bytes(course) -> int:
    """What a kernel may hold in memory: a submission's limit (``memory_mb``); as root in a cgroup (its file
    systems' files included), elsewhere what each of its processes maps (grader.inside.kernel_start)."""
    return course.limits.memory_mb << 20


def _kernel_cgroup(course, name: str):
    """A cgroup of the kernel's own (memory and processes), in this process's hierarchy for kernels. Red team
    rounds 19 and 20: the kernel's own allocations had no limit beyond the machine's."""
    global _HIERARCHY
    from grader.sandbox.cgroups import SubmissionCgroup, hierarchy_name, make_hierarchy
    from grader.sandbox.leftovers import owner_prefix
    from grader.sandbox.submission_sandbox import NPROC_LIMIT

    if _HIERARCHY is None:
        _HIERARCHY = make_hierarchy(hierarchy_name(owner_prefix()))
    # the sandbox's own processes (bubblewrap, its init, the shell that joins) beside the kernel's NPROC_LIMIT
    return SubmissionCgroup(_HIERARCHY, name, memory_bytes=kernel_memory_bytes(course), pids=NPROC_LIMIT + 64)


def _kernel_uid(confinement) -> int | None:
    """As root, a uid of the kernel's own (from the same range as the submissions'), else None."""
    if not confinement.root:
        return None
    from grader.sandbox.confine import submission_uid

    return submission_uid()


def sandboxed(*, confinement, course, folder: Path, uid: int | None, info_fd: int) -> list[str]:
    """bubblewrap's command line for a kernel started ahead: the zygote's view of the runtime, a file system of
    IPC_QUOTA bytes for the kernel's sockets, the folders where the grader puts its connection file and the
    notebook's folder (read-only), NOTEBOOK_FOLDER to copy that into; bubblewrap writes the sandbox's pid to
    ``info_fd``. Its process imports ahead and waits for its notebook (grader.inside.kernel_start)."""
    from grader.sandbox.confine import WORK_QUOTA, blocked_paths, copy_student_side
    from grader.sandbox.confine import interpreter, namespace_args, python_env, setenv_args, view_args

    lib = folder / "lib"
    copy_student_side(lib, extra=KERNEL_SIDE)
    view = view_args(lib=str(lib), work=None, blocked=blocked_paths(course))
    tmp = next(i for i in range(len(view) - 1) if view[i:i + 2] == ["--tmpfs", "/tmp"])
    view[tmp - 2:tmp - 2] = ["--size", str(WORK_QUOTA)]  # its /tmp (memory) no larger than its working folder
    args = [confinement.bwrap, "--info-fd", str(info_fd), *namespace_args(confinement.root), *view]
    args = args[:args.index("--remount-ro")]  # the view's end: chdir and environment come below
    ipc, conn = folder / "ipc", folder / "conn"
    args += [*_open_folders(ipc), "--size", str(IPC_QUOTA), "--perms", "1777", "--tmpfs", str(ipc),
             "--ro-bind", str(conn), str(conn),
             "--ro-bind", str(folder / "service"), f"{SANDBOX_ROOT}/service",
             "--ro-bind", str(folder / "work"), f"{SANDBOX_ROOT}/seed",  # copied into a quota below
             "--size", str(WORK_QUOTA), "--perms", "1777", "--tmpfs", NOTEBOOK_FOLDER,
             "--size", str(WORK_QUOTA), "--perms", "1777", "--tmpfs", "/dev/shm",
             "--remount-ro", "/", "--chdir", NOTEBOOK_FOLDER, "--clearenv", "--setenv", "PATH", "/usr/bin:/bin",
             *setenv_args(python_env(f"{SANDBOX_ROOT}/lib")), "--setenv", "HOME", "/tmp",
             "--setenv", "IPYTHONDIR", "/tmp/.ipython", "--setenv", "MPLCONFIGDIR", "/tmp/.matplotlib",
             "--setenv", "MPLBACKEND", INLINE_BACKEND,
             "--setenv", "OMP_NUM_THREADS", "1", "--setenv", "PYTHONDONTWRITEBYTECODE", "1",
             "--setenv", SERVICE_ENV, f"{SANDBOX_ROOT}/service/grade.sock", *setenv_args(quiet_env())]
    if confinement.root:  # capabilities until the kernel's first instruction: then its uid, and none
        args += [interpreter(), "-m", "grader.inside.zygote", "--as", str(uid), str(uid), "--"]
    # the working folder: a file system of WORK_QUOTA bytes, the notebook's folder copied in as the kernel's user
    return args + [interpreter(), "-m", "grader.inside.kernel_start", f"{SANDBOX_ROOT}/seed", NOTEBOOK_FOLDER,
                   str(WORK_QUOTA), "uid" if confinement.root else "namespace",
                   str(0 if confinement.cgroups else kernel_memory_bytes(course))]  # a cgroup bounds it all


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
