"""Confining a worker: running student code as a user of its own.

The worker (:mod:`grader.worker`) is forked from the zygote, which the grading process forked. When
the grader runs as root, the worker gives up root right after the fork, before it imports any
student code: :func:`drop_privileges` switches it for good to the uid that :func:`plan` chose for
its grading process (``FIRST_UID`` + that process's pid: no account, used by nothing else), first
entering a private view of the file system (:func:`enter_view`, :mod:`grader.mounts`) where that
works. :func:`plan` decides by trying, in a forked child, what a worker would be able to read.

What holds, as root
-------------------
The student's code, in the worker and in every process it starts:

* cannot read a file that its uid may not read: root's 0600 files, anything under a folder that
  others may not enter; in the private view, not even the secrets that others may read (the
  reference, the suites, ``.git``, results, other submissions: covered), nor the grader's processes
  in ``/proc`` (``hidepid``);
* cannot create, change or delete files in folders it does not own, unless they are writable by
  all (``/tmp``, ``/dev/shm``): results, recordings, the course, other working copies;
* cannot signal, ptrace or read the memory, environment, open files or working folder of any
  process of another uid: ``kill`` fails with EPERM. The grader, the zygote and other graders are
  root's, and every grading process's workers have their own uid, so concurrent submissions cannot
  touch each other either;
* cannot become root again: no setuid back (checked after the drop), no capabilities left (checked),
  and ``PR_SET_NO_NEW_PRIVS`` makes set-user-ID programs and file capabilities useless to it;
* cannot start more than ``NPROC_LIMIT`` processes (the limit counts its uid's, the grading's own);
* holds no file the grader had open: :func:`close_fds` closes every inherited descriptor except the
  worker's socket. Without it, permissions do not matter: an open descriptor is used without any
  check, and a worker forked under ``grade autograde`` inherits both ends of the pipes that carry
  results to the parent (a forged message there is unpickled by the parent).

What does not hold
------------------
* Without a private view (no mount namespaces), anything readable by all stays readable: take
  "others" off the secrets once (``chmod o-rwx`` on the course folder); :func:`plan` names what is
  still readable. And a Python installation that others cannot read (a pyenv under ``/root``)
  makes every new import fail: :func:`plan` then keeps workers at the grader's user.
* The worker still talks to the grader over its socket and can send anything there: what it
  reports about its own calls must be checked by the grader.
* Network, ``/tmp`` and ``/dev/shm`` (writable by all), CPU and memory: not this module's business.
* As anyone but root, none of the above: the worker runs as the grader's own user, protected by what
  :mod:`grader.worker` does on any machine (own session, memory limit, scrubbed environment,
  sys.path without the reference, :func:`close_fds`).

Order in the worker, right after the fork: ``os.setsid``, resource limits, scrubbed environment and
sys.path, standard streams to /dev/null, :func:`close_fds`, ``RLIMIT_NPROC``, :func:`enter_view`,
:func:`drop_privileges`, then ``PR_SET_PDEATHSIG`` (the kernel clears it when the uid changes),
then ``os.chdir`` into the working copy (handed over by the grader with :func:`prepare_workdir`),
then the student's import.
"""
from __future__ import annotations

import ctypes
import os
import pwd
import signal
import stat
import sys
import sysconfig
from dataclasses import dataclass, replace
from typing import Iterable

from grader.errors import IsolationError

NOBODY = 65534  # Debian's nobody and nogroup
FIRST_UID = 2_000_000_000  # a grading process's workers run as FIRST_UID + its pid: no account, no
#                            subordinate-uid range (those start near 100000) and no other grader uses it
NPROC_LIMIT = 128  # processes (and threads) one grading's uid may have at once: fork bombs stop there

_PR_SET_DUMPABLE = 4
_PR_SET_NO_NEW_PRIVS = 38
_PR_GET_NO_NEW_PRIVS = 39


class ConfinementError(RuntimeError):
    """The worker could not be confined as asked; it must not run student code."""


def _load_prctl():
    # Loaded here, at import: after the drop the worker may not be able to import anything new.
    try:
        function = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    function.restype = ctypes.c_int
    return function


_prctl_function = _load_prctl()


def _prctl(option: int, value: int = 0) -> int:
    if _prctl_function is None:
        raise ConfinementError("prctl(2) is not available on this system")
    result = _prctl_function(option, value, 0, 0, 0)
    if result < 0:
        code = ctypes.get_errno()
        raise ConfinementError(f"prctl({option}) failed: {os.strerror(code)}")
    return result


# --- deciding -------------------------------------------------------------------------------------
def can_drop_privileges(uid: int = NOBODY, *, require_account: bool = True) -> bool:
    """Whether this process can run workers as ``uid``: it is root, on Linux, and (unless
    ``require_account`` is False, for a dedicated uid without an account) the uid has an account."""
    if not sys.platform.startswith("linux") or not hasattr(os, "setresuid") or _prctl_function is None:
        return False
    if os.geteuid() != 0 or uid == 0:
        return False
    if not require_account:
        return True
    try:
        pwd.getpwuid(uid)
    except KeyError:
        return False
    return True


def readable_by(path: str, uid: int, gid: int, *, write: bool = False) -> bool:
    """Whether a process with this uid and gid, and no other groups, could read ``path`` (write it
    too, with ``write``; a folder is also entered). Every folder on the way must let it in.
    Judged from the permission bits alone: ACLs and security modules are not looked at."""
    if uid == 0:
        return os.path.exists(path)
    wanted = 4 | (2 if write else 0)
    absolute = os.path.abspath(path)
    for candidate in {absolute, os.path.realpath(absolute)}:
        parts = candidate.split(os.sep)[1:]
        folders = ["/"] + ["/" + "/".join(parts[:i]) for i in range(1, len(parts))]
        try:
            if not all(_allowed(os.stat(folder), uid, gid, 1) for folder in folders):
                return False
            st = os.stat(candidate)
        except OSError:
            return False
        if not _allowed(st, uid, gid, wanted | (1 if stat.S_ISDIR(st.st_mode) else 0)):
            return False
    return True


def _allowed(st: os.stat_result, uid: int, gid: int, bits: int) -> bool:
    shift = 6 if st.st_uid == uid else 3 if st.st_gid == gid else 0  # the owner's bits only, if owner
    return (st.st_mode >> shift) & bits == bits


def runtime_paths() -> list[str]:
    """Folders a worker reads when it imports something new: the standard library, its compiled
    modules, site-packages and, if it is loaded, torch's package."""
    paths = [sysconfig.get_path(name) for name in ("stdlib", "platstdlib", "purelib", "platlib")]
    paths.append(os.path.join(sysconfig.get_path("platstdlib"), "lib-dynload"))
    torch = sys.modules.get("torch")
    if torch is not None and getattr(torch, "__file__", None):
        paths.append(os.path.dirname(torch.__file__))
    unique = []
    for path in paths:
        if path and os.path.isdir(path) and path not in unique:
            unique.append(path)
    return unique


def unreadable_runtime(uid: int = NOBODY, gid: int = NOBODY) -> list[str]:
    """The :func:`runtime_paths` that ``uid`` could not read: a worker confined to it could import
    nothing from there that the zygote had not imported already."""
    return [path for path in runtime_paths() if not readable_by(path, uid, gid)]


def confinement_problems(uid: int = NOBODY, gid: int = NOBODY, *, hidden: Iterable[str] = (),
                         require_account: bool = True) -> list[str]:
    """Why workers confined to ``uid`` would not be protected as this module describes, in words;
    empty when they would. ``hidden``: what they must not read (the reference, the suites, .git,
    results, other submissions)."""
    if not can_drop_privileges(uid, require_account=require_account):
        if os.geteuid() != 0:
            return ["the grader does not run as root, so it cannot run student code as another user"]
        return [f"cannot run student code as uid {uid} here (not Linux, no prctl, uid 0 or no such user)"]
    problems = [f"uid {uid} cannot read {path}, so student code could import nothing new from it"
                for path in unreadable_runtime(uid, gid)]
    problems += [f"uid {uid} can still read {path} (remove the others' permissions: chmod o-rwx)"
                 for path in hidden if readable_by(path, uid, gid)]
    return problems


@dataclass(frozen=True)
class Confinement:
    """How one grading process runs its workers: as ``uid`` (its own, unused by anything else) or,
    when ``uid`` is None, as the grader's own user; with ``view``, in a mount namespace of their own
    where ``hide`` is covered (grader/mounts.py). ``problems``: what does not hold, in words."""

    uid: int | None = None
    gid: int = NOBODY
    problems: tuple[str, ...] = ()
    view: bool = False
    hide: tuple[str, ...] = ()

    @property
    def mode(self) -> str:
        return "separate-user" if self.uid is not None else "same-user"

    def for_process(self, pid: int | None = None) -> "Confinement":
        """The same confinement for the grading process ``pid`` (default: this one), with its own uid."""
        if self.uid is None:
            return self
        return replace(self, uid=FIRST_UID + (os.getpid() if pid is None else pid))


def plan(setting: str, *, hidden: Iterable[str] = ()) -> Confinement:
    """This grading process's confinement, from course.toml's ``isolation.separate_user``: ``auto``
    runs workers as a uid of their own whenever that works here, ``never`` never does, ``required``
    raises :class:`IsolationError` unless it works and no path of ``hidden`` (the reference, the
    suites, .git, results) stays readable to the worker. Decided by trying: a child confines itself
    as a worker would, first with a private view of the file system, and says what it can read."""
    if setting == "never":
        return Confinement(problems=('separate_user = "never" in course.toml',))
    uid, hidden = FIRST_UID + os.getpid(), tuple(hidden)
    blocking = [] if can_drop_privileges(uid, require_account=False) else confinement_problems(uid, NOBODY)[:1]
    found = {}
    if not blocking:
        found = _probe(uid, NOBODY, hidden, view=True) or _probe(uid, NOBODY, hidden, view=False) or {}
        if not found:
            blocking = [f"a process could not switch to uid {uid} here"]
        blocking += [f"uid {uid} cannot read {path}, so student code could import nothing new from it"
                     for path in found.get("unreadable", ())]
    readable = [f"uid {uid} can still read {path} (remove the others' permissions: chmod o-rwx)"
                for path in found.get("readable", ())]
    if found and not found["view"]:
        readable.append("no private mount namespace here: the grader's processes are visible in /proc")
    if setting == "required" and blocking + readable:
        raise IsolationError(f'separate_user = "required" in course.toml, but {(blocking + readable)[0]}')
    if blocking:
        return Confinement(problems=tuple(blocking))
    return Confinement(uid, NOBODY, tuple(readable), view=found["view"], hide=hidden if found["view"] else ())


def _still_readable(path: str) -> bool:
    """Readable, and not a file covered by /dev/null (grader/mounts.py)."""
    try:
        return os.access(path, os.R_OK) and not os.path.samestat(os.stat(path), os.stat(os.devnull))
    except OSError:
        return False


def _probe(uid: int, gid: int, hidden: tuple[str, ...], *, view: bool) -> dict | None:
    """Fork a child that confines itself as a worker would (with the private view or without) and
    reports what it cannot import from and what secrets it can still read; None if that failed."""
    import json

    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(reader)
            if view:
                enter_view(uid, gid, hidden)
            drop_privileges(uid, gid)
            report = {"view": view,
                      "unreadable": [p for p in runtime_paths() if not os.access(p, os.R_OK | os.X_OK)],
                      "readable": [p for p in hidden if _still_readable(p)]}
            os.write(writer, json.dumps(report).encode())
        finally:
            os._exit(0)
    os.close(writer)
    with os.fdopen(reader, "rb") as stream:
        data = stream.read()
    os.waitpid(pid, 0)
    return json.loads(data) if data else None


# --- the grader's side ----------------------------------------------------------------------------
def prepare_workdir(path: str, uid: int, gid: int) -> None:
    """Give a working copy to ``uid``: everything in it owned by ``uid``:``gid``, folders 0700,
    files 0600 (0700 if executable), so that the worker, and no other user but root, can read and
    write it. Symbolic links are not followed. The folder must be one that the grader created and
    that others cannot enter yet (``tempfile.mkdtemp``): it is handed over from the bottom up, so
    nothing of it is reachable by ``uid`` until all of it is done. The folders above it must let
    ``uid`` through."""
    root = os.path.abspath(path)
    st = os.lstat(root)
    if not stat.S_ISDIR(st.st_mode):
        raise ConfinementError(f"{root} is not a folder")
    for folder, dirnames, filenames, folder_fd in os.fwalk(root, topdown=False, follow_symlinks=False):
        for name in filenames + dirnames:
            _hand_over(name, folder_fd, uid, gid, os.path.join(folder, name))
    os.chown(root, uid, gid, follow_symlinks=False)
    os.chmod(root, 0o700)
    if not readable_by(root, uid, gid, write=True):
        raise ConfinementError(f"uid {uid} cannot reach {root}: a folder above it is closed to it")


def _hand_over(name: str, folder_fd: int, uid: int, gid: int, shown: str) -> None:
    st = os.lstat(name, dir_fd=folder_fd)
    if stat.S_ISLNK(st.st_mode):
        os.chown(name, uid, gid, dir_fd=folder_fd, follow_symlinks=False)
        return
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        raise ConfinementError(f"{shown} is neither a file nor a folder")
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=folder_fd)
    try:
        os.fchown(fd, uid, gid)
        executable = stat.S_ISDIR(st.st_mode) or st.st_mode & 0o111
        os.fchmod(fd, 0o700 if executable else 0o600)
    finally:
        os.close(fd)


def kill_all_of(uid: int) -> None:
    """SIGKILL every process running as ``uid``: a worker, what it started, what escaped its
    process group with ``setsid``. Only for a uid that is dedicated to one grading: with a shared
    one (``nobody``) it would end other graders' workers and whatever else runs as that user."""
    if uid == 0:
        raise ConfinementError("refusing to kill every process of root")
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.setgroups([])
            os.setresgid(NOBODY, NOBODY, NOBODY)
            os.setresuid(uid, uid, uid)
            try:
                os.kill(-1, signal.SIGKILL)  # every process this uid may signal: its own
            except ProcessLookupError:
                pass
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise ConfinementError(f"could not kill the processes of uid {uid}")


# --- the worker's side ----------------------------------------------------------------------------
def enter_view(uid: int, gid: int, hide: Iterable[str], keep: Iterable[str] = ()) -> None:
    """As root, before :func:`drop_privileges`: a mount namespace of this process's own in which
    ``hide`` is covered and the Python installation is open to ``uid`` (see grader/mounts.py)."""
    from grader.mounts import MountError, enter_private_view

    try:
        enter_private_view(hide=hide, reach=runtime_paths(), keep=keep,
                           can_enter=lambda path: readable_by(path, uid, gid))
    except MountError as exc:
        raise ConfinementError(f"no private view of the file system: {exc.strerror or exc}") from exc


def close_fds(keep: Iterable[int] = ()) -> None:
    """Close every descriptor above 2 except ``keep``: the worker must hold nothing the grader had
    open (result files, the pipes of ``grade autograde``, sockets, locks)."""
    low = 3
    for fd in sorted({fd for fd in keep if fd >= 3}):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, max(low, os.sysconf("SC_OPEN_MAX")))


def drop_privileges(uid: int = NOBODY, gid: int = NOBODY) -> None:
    """Become ``uid``:``gid`` with no supplementary groups, for good, in this process and all it
    starts; raise :class:`ConfinementError` if any of it fails or does not hold afterwards.

    Call it in the freshly forked worker, single-threaded, after ``close_fds`` and before any
    student code. Set ``PR_SET_PDEATHSIG`` after it (the uid change clears it) and ``chdir`` into
    the working copy after it (that checks that the worker can reach it). Resource limits set
    before it stay: the worker cannot raise a hard limit without root."""
    if uid == 0 or gid == 0:
        raise ConfinementError("refusing to 'drop' privileges to root")
    if os.geteuid() != 0:
        raise ConfinementError("only root can run student code as another user "
                               f"(this process runs as uid {os.geteuid()})")
    try:
        _prctl(_PR_SET_NO_NEW_PRIVS, 1)
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)  # also clears the capabilities
        _prctl(_PR_SET_DUMPABLE, 0)
    except OSError as exc:
        raise ConfinementError(f"could not switch to uid {uid}, gid {gid}: {exc}") from exc
    _check_dropped(uid, gid)


def _check_dropped(uid: int, gid: int) -> None:
    if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid):
        raise ConfinementError(f"still running as uids {os.getresuid()}, gids {os.getresgid()}")
    if os.getgroups() not in ([], [gid]):
        raise ConfinementError(f"still in groups {os.getgroups()}")
    try:
        os.setuid(0)
    except PermissionError:
        pass
    else:
        raise ConfinementError("could become root again after dropping privileges")
    if _prctl(_PR_GET_NO_NEW_PRIVS) != 1:
        raise ConfinementError("PR_SET_NO_NEW_PRIVS did not hold")
    try:
        with open("/proc/self/status") as status:
            lines = dict(line.split(":", 1) for line in status if ":" in line)
    except OSError as exc:
        raise ConfinementError(f"cannot check the capabilities left: {exc}") from exc
    for name in ("CapPrm", "CapEff", "CapAmb"):
        if name in lines and int(lines[name], 16) != 0:
            raise ConfinementError(f"capabilities left after dropping privileges ({name}: {lines[name].strip()})")


__all__ = [
    "NOBODY", "FIRST_UID", "Confinement", "plan", "ConfinementError", "can_drop_privileges", "readable_by",
    "runtime_paths", "unreadable_runtime", "confinement_problems", "prepare_workdir", "kill_all_of", "close_fds",
    "drop_privileges", "enter_view",
]
