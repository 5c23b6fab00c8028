"""The system calls that confine a worker, made through libc where Python has no wrapper: prctl(2),
mount(2), capabilities, the descriptors and mounts a worker keeps, and the uid it drops to. The zygote
(grader.inside.zygote) calls them; each failure is a :class:`ConfinementError` naming the call, and a
worker that could not be confined never runs student code."""
from __future__ import annotations

import ctypes
import os
import sys

_CLONE_NEWNS, _CLONE_NEWUTS, _CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
_CLONE_NEWPID, _CLONE_NEWNET = 0x20000000, 0x40000000
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_REC, _MS_PRIVATE = 0x2, 0x4, 0x8, 0x4000, 0x40000
_MS_RDONLY, _MS_REMOUNT, _MS_BIND = 0x1, 0x20, 0x1000
PR_SET_PDEATHSIG, _PR_SET_DUMPABLE, _PR_CAPBSET_DROP = 1, 4, 24
_PR_SET_CHILD_SUBREAPER, _PR_SET_NO_NEW_PRIVS, _PR_GET_NO_NEW_PRIVS = 36, 38, 39
_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 47, 4

_libc = ctypes.CDLL(None, use_errno=True)


class ConfinementError(RuntimeError):
    """The worker could not be confined as asked; it must not run student code. ``errno``: the system
    call's error number, where one failed (0 otherwise)."""

    def __init__(self, message: str, code: int = 0):
        super().__init__(message)
        self.errno = code



def name_process(name: str) -> None:
    """What ``ps`` and ``top`` show for this process (Linux; at most 15 characters)."""
    try:
        with open("/proc/self/comm", "w") as comm:
            comm.write(name[:15])
    except OSError:
        pass


def _check(result: int, what: str) -> int:
    if result < 0:
        code = ctypes.get_errno()
        raise ConfinementError(f"{what}: {os.strerror(code)}", code)
    return result


def prctl(option: int, value: int = 0, arg3: int = 0) -> int:
    """Linux's prctl(2); where there is none (macOS), a no-op for the zygote's own settings."""
    if not hasattr(_libc, "prctl"):
        return 0
    return _check(_libc.prctl(ctypes.c_int(option), ctypes.c_ulong(value), ctypes.c_ulong(arg3),
                              ctypes.c_ulong(0), ctypes.c_ulong(0)), f"prctl({option})")


def _mount(source, target, kind, flags=0, options=None) -> None:
    def encode(text):
        return text.encode() if text is not None else None

    _check(_libc.mount(encode(source), encode(target), encode(kind), ctypes.c_ulong(flags), encode(options)),
           f"mount {kind or source} on {target}")


# --- a worker's confinement --------------------------------------------------------------------------
def close_fds(keep=()) -> None:
    """Close every descriptor above 2 except ``keep``."""
    low = 3
    for fd in sorted({fd for fd in keep if fd >= 3}):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, max(low, os.sysconf("SC_OPEN_MAX")))


def _torch_folder() -> str:
    """Where torch is, found without importing it (the confinement probe runs before torch is loaded)."""
    import importlib.util

    spec = importlib.util.find_spec("torch")
    return os.path.dirname(spec.origin) if spec is not None and spec.origin else sys.prefix


def _runtime_under(folder: str) -> list[str]:
    """The folders Python imports from that lie under ``folder`` (a virtualenv in a ``mktemp -d``)."""
    found: list[str] = []
    for path in sorted({*sys.path, sys.prefix, _torch_folder()}):
        if path.startswith(folder + os.sep) and os.path.isdir(path) \
                and not any(path.startswith(kept + os.sep) for kept in found):
            found.append(path)
    return found


def _private_mounts() -> None:
    """In the worker's new mount namespace: its own /proc (its PID namespace only), an empty /tmp
    and /dev/shm of its own (with the Python runtime that lives under /tmp, if any, bound back
    read-only: lazy imports need it), and the submission's cgroups covered."""
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE)
    runtime = {path: os.open(path, os.O_PATH | os.O_DIRECTORY) for path in _runtime_under("/tmp")}
    _mount("proc", "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
    for path in ("/tmp", "/dev/shm"):
        if os.path.isdir(path):
            _mount("tmpfs", path, "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=1777,size=256m")
    # a runtime deeper under /tmp gets the folders on its way as a read-only tmpfs of their own (as in
    # the sandbox's view); one directly under /tmp (a venv made by ``python -m venv /tmp/venv``) is
    # bound where it was, and a bind mount is made read-only by itself, never its file system
    tops = sorted({"/tmp/" + path[len("/tmp/"):].split(os.sep)[0] for path in runtime} - set(runtime))
    for top in tops:
        os.mkdir(top, 0o755)
        _mount("tmpfs", top, "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=0755,size=64k")
    for path, fd in runtime.items():
        os.makedirs(path, mode=0o755, exist_ok=True)
        _mount(f"/proc/self/fd/{fd}", path, None, _MS_BIND | _MS_REC)
        _mount(None, path, None, _MS_BIND | _MS_REMOUNT | _MS_RDONLY | _MS_NOSUID | _MS_NODEV)
        os.close(fd)
    for top in tops:
        _mount(None, top, None, _MS_REMOUNT | _MS_RDONLY | _MS_NOSUID | _MS_NODEV)
    if os.path.isdir("/grade/cgroup"):
        _mount("tmpfs", "/grade/cgroup", "tmpfs", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, "mode=000,size=4k")
    _no_ipc_objects()


def _no_ipc_objects() -> None:
    """No System V shared memory segment or message queue in the worker's own IPC namespace: a segment
    detached, or a queue, holds memory that no process maps and no file shows (issue 44: what a submission
    holds is read from the kernel's account of its processes and files). Where the kernel does not let
    this namespace set its limits, they stay as they were."""
    for name in ("shmmni", "msgmni"):
        try:
            with open(f"/proc/sys/kernel/{name}", "w") as limit:
                limit.write("0")
        except OSError:
            pass


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def drop_privileges(uid: int | None, gid: int) -> None:
    """Give up every capability for good (bounding and ambient sets too), and as root switch to
    ``uid``:``gid`` with no groups; no set-user-ID program or file capability can give any back."""
    prctl(_PR_SET_NO_NEW_PRIVS, 1)
    for cap in range(64):
        if _libc.prctl(ctypes.c_int(_PR_CAPBSET_DROP), ctypes.c_ulong(cap), 0, 0, 0) < 0:
            if ctypes.get_errno() == 22:  # EINVAL: past the last capability the kernel knows
                break
    _libc.prctl(ctypes.c_int(_PR_CAP_AMBIENT), ctypes.c_ulong(_PR_CAP_AMBIENT_CLEAR_ALL), 0, 0, 0)
    if uid is not None:
        if uid == 0 or gid == 0:
            raise ConfinementError("refusing to run student code as root")
        try:
            os.setgroups([])
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
        except OSError as exc:
            raise ConfinementError(f"could not switch to uid {uid}: {exc}") from exc
    header, data = _CapHeader(0x20080522, 0), (_CapData * 2)()
    _check(_libc.capset(ctypes.byref(header), data), "capset")
    prctl(_PR_SET_DUMPABLE, 0)
    _check_dropped(uid, gid)


def _check_dropped(uid: int | None, gid: int) -> None:
    if uid is not None and (os.getresuid() != (uid,) * 3 or os.getresgid() != (gid,) * 3):
        raise ConfinementError(f"still running as uids {os.getresuid()}")
    if prctl(_PR_GET_NO_NEW_PRIVS) != 1:
        raise ConfinementError("PR_SET_NO_NEW_PRIVS did not hold")
    with open("/proc/self/status") as status:
        lines = dict(line.split(":", 1) for line in status if ":" in line)
    for name in ("CapPrm", "CapEff", "CapBnd", "CapAmb"):
        if name in lines and int(lines[name], 16) != 0:
            raise ConfinementError(f"capabilities left ({name}: {lines[name].strip()})")
