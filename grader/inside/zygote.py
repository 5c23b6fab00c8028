"""The zygote: a fresh Python process that imports torch once and forks the workers.

It is started with ``exec`` by each grading process (:class:`grader.sandbox.client.ZygoteClient`), inside the
sandbox that :mod:`grader.sandbox.confine` plans (bubblewrap: a file system view of the Python runtime, the
student-side modules and the working copy only; no network; its own PID namespace), so no student
process ever maps memory of the grader's, and none can reach the channels of ``grade autograde``.
It never runs student code itself.

For each submission it forks the submission's process, which enters a cgroup of the submission's
(memory and process count per submission) once, and forks each worker as PID 1 of a new PID
namespace (:func:`fork_worker`); the worker makes its own mount, network, IPC and UTS namespaces.
When the worker dies (killed at the end of grading, on a timeout, or by its own hand) the kernel
kills every process in its namespace: nothing a submission starts outlives its grading, whatever it
does with ``setsid`` or double forks. The worker then gets a fresh ``/proc`` and ``/tmp``, gives up its capabilities (and, as root, switches to the submission's
own uid for good) and imports the student's code (:mod:`grader.inside.worker`).

Messages are those of :mod:`grader.inside.protocol`. The zygote answers: ``prepare`` (the submission's
process, started before its first worker), ``spawn`` (a worker; its socket is passed back with
SCM_RIGHTS), ``kill`` (one worker) and ``end`` (every worker of the submission, then it checks that
none of their processes is left).
"""
from __future__ import annotations

import ctypes
import errno
import os
import signal
import socket
import sys
import time

from grader.inside import heap, protocol
from grader.inside.syscalls import (ConfinementError, PR_SET_PDEATHSIG, _CLONE_NEWIPC, _CLONE_NEWNET,
                                    _CLONE_NEWNS, _CLONE_NEWPID, _CLONE_NEWUTS, _MS_BIND, _MS_NODEV,
                                    _MS_NOSUID, _MS_PRIVATE, _MS_RDONLY, _MS_REC, _MS_REMOUNT,
                                    _PR_SET_CHILD_SUBREAPER, _check, _libc, _mount, _private_mounts,
                                    _torch_folder, close_fds, drop_privileges, name_process, prctl)

NPROC_LIMIT = 128  # processes and threads a submission may have at once (grader.sandbox.submission_sandbox: its cgroup's too)
WORK = "/grade/work"  # the working folder the sandbox shows (grader.sandbox.confine.SANDBOX_ROOT + "/work")
WORK_INODES = 65536  # files and folders the working folder may hold (each costs kernel memory the size leaves out)
# a fork, clone or namespace that fails with one of these, once the submission's code has run, failed because
# of what the submission holds (its processes and threads, its memory): its own result, never the grader's
EXHAUSTED = (errno.EAGAIN, errno.ENOMEM)

def _told(exc: BaseException) -> bytes:
    """What a child that could not start a worker says to its parent: its error number, a space, why."""
    code = getattr(exc, "errno", None)
    return f"{code if isinstance(code, int) else 0} {exc or type(exc).__name__}".encode(errors="replace")[:500]


def _heard(said: bytes) -> tuple[int, str]:
    """(error number, why) from what :func:`_told` wrote."""
    code, _, text = said.decode(errors="replace").partition(" ")
    return (int(code), text) if code.isdigit() else (0, said.decode(errors="replace"))


# --- the zygote --------------------------------------------------------------------------------------
class Zygote:
    def __init__(self, control: socket.socket, config: dict):
        self.control = control
        self.namespaces = bool(config.get("namespaces"))
        self.workers: set[int] = set()
        self.killed: set[int] = set()  # workers of the submission killed, until they are gone
        self.ran = False  # whether a worker of the submission has started: its code has run since
        self.submission: tuple[int, tuple[str, ...], socket.socket] | None = None  # (pid, cgroups, channel)

    def serve(self) -> None:
        for request in protocol.requests(self.control, limit=protocol.CONTROL_LIMIT):
            op = request.get("op")
            if op == "spawn":
                self.spawn(protocol.WorkerSpec.from_wire(request["spec"]))
            elif op == "prepare":  # the next submission's process, started while the grader gets ready
                cgroups = request.get("cgroups")
                if isinstance(cgroups, list) and cgroups and all(type(path) is str for path in cgroups):
                    self._submission_in(tuple(cgroups))
                self.reply({"ok": True})
            elif op == "kill":
                self.kill(int(request["pid"]))
                self.reply({"ok": True})
            elif op == "end":
                self.reply(self.end())
            elif op == "twin":  # a second grading process of the same submission (with namespaces only)
                self.twin() if self.namespaces else self.reply({"ok": False})

    def twin(self) -> None:
        """A copy of this zygote (torch loaded, no worker of its own yet) serving a channel of its own, passed back
        with SCM_RIGHTS: a second grading process of the same submission forks its workers there, with no second
        torch import (grader.grading.twins). It ends, with every worker it started, when that channel closes, and
        dies with this zygote. Only with namespaces: each worker is then PID 1 of its own namespace, and nothing
        sweeps this zygote's children (_kill_children)."""
        ours, theirs = socket.socketpair()
        pid = os.fork()
        if pid == 0:
            try:
                ours.close()
                self.control.close()
                if self.submission is not None:
                    self.submission[2].close()  # the first grading process's submission channel: never the twin's
                prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
                twin = Zygote(theirs, {"namespaces": self.namespaces})
                twin.serve()
                twin.end()
            finally:
                os._exit(0)
        theirs.close()
        self.reply({"ok": True, "pid": pid}, [ours.fileno()])
        ours.close()

    def reply(self, message: dict, fds=()) -> None:
        socket.send_fds(self.control, [b"F"], list(fds))  # one byte, carrying the worker's socket
        protocol.send(self.control, protocol.encode(message), timeout=30)

    def spawn(self, spec: protocol.WorkerSpec) -> None:
        self._wait_for_killed()  # what a worker killed a moment ago held (its threads) is the next one's again
        if spec.cgroups:  # forked by the submission's own process, which joined its cgroups once
            pid, error, fds, number = self._spawn_in_submission(spec)
        else:
            pid, error, sock, number = _start_worker(spec, self.namespaces, close=[self.control])
            fds = [sock] if sock is not None else []
        if pid:
            self.workers.add(pid)
        # a worker that could not be confined, or a cgroup not joined, is the grader's own failure, unless the
        # submission's own code has run and holds what the fork needed (its processes and threads, its
        # memory: the cgroup's or the uid's limit); a submission's process that died (its memory exhausted
        # by the submission's workers) may not be the grader's either
        exhausted = not pid and self.ran and number in EXHAUSTED
        if exhausted:
            error = exhausted_message(number, error, spec.memory_bytes)
        grader_fault = not pid and error != SUBMISSION_STOPPED and not exhausted
        self.ran = self.ran or bool(pid)
        self.reply({"ok": bool(pid), "pid": pid, "message": error, "grader_fault": grader_fault,
                    "exhausted": exhausted}, [fd.fileno() for fd in fds])
        for fd in fds:
            fd.close()

    def _wait_for_killed(self, timeout_s: float = 2.0) -> None:
        """Until every worker this submission had killed is gone (the kernel takes its namespace down,
        thread by thread, after the kill), at most ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while self.killed:
            self.killed = {pid for pid in self.killed if _alive(pid)}
            if not self.killed or time.monotonic() > deadline:
                return
            time.sleep(0.002)

    def _spawn_in_submission(self, spec: protocol.WorkerSpec):
        """Ask the submission's process (started at its first worker) to fork the worker: moving a
        process into a cgroup waits for the kernel (milliseconds each time), so it is done once."""
        channel = self._submission_in(spec.cgroups)
        try:
            protocol.send(channel, protocol.encode({"spec": spec.to_wire()}), timeout=30)
            _, fds, _, _ = socket.recv_fds(channel, 1, 1)
            answer = protocol.receive(channel, limit=protocol.CONTROL_LIMIT, timeout=30)
        except (OSError, ValueError, protocol.ChannelClosed, protocol.ChannelTimeout, protocol.MalformedMessage,
                protocol.MessageTooLarge):  # it died (out of the submission's memory, say): a fresh one next time
            self._end_submission_process()
            return 0, SUBMISSION_STOPPED, [], 0
        socks = [socket.socket(fileno=fd) for fd in fds]
        pid = answer.get("pid") if isinstance(answer, dict) else 0
        if not (isinstance(pid, int) and pid > 0 and socks):
            for sock in socks:
                sock.close()
            said = answer if isinstance(answer, dict) else {}
            number = said.get("errno") if type(said.get("errno")) is int else 0
            return 0, str(said.get("message", "")), [], number
        return pid, "", socks, 0

    def _submission_in(self, cgroups: tuple[str, ...]) -> socket.socket:
        """The channel to the submission's process of ``cgroups``, forked now unless it runs already. It
        joins the cgroups on its own (the kernel's move waits milliseconds), while the zygote answers."""
        if self.submission is None or self.submission[1] != cgroups:
            self._end_submission_process()
            ours, theirs = socket.socketpair()
            pid = os.fork()
            if pid == 0:
                ours.close()
                _submission_main(theirs, cgroups, self.namespaces, close=[self.control])
            theirs.close()
            self.submission = (pid, cgroups, ours)
        return self.submission[2]

    def _end_submission_process(self) -> None:
        if self.submission is not None:
            pid, _, channel = self.submission
            channel.close()
            try:
                os.kill(pid, signal.SIGKILL)  # its workers die with it (their death signal)
            except ProcessLookupError:
                pass
            self.workers.add(pid)  # end() waits for it like a worker
            self.submission = None

    def kill(self, pid: int) -> None:
        if pid in self.workers:
            self.killed.add(pid)
            try:
                os.kill(pid, signal.SIGKILL) if self.namespaces else os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def end(self) -> dict:
        """Kill every worker of the submission; each is PID 1 of its namespace, so every process it
        started dies with it. Without namespaces, kill what this zygote adopted (a weaker sweep)."""
        for pid in list(self.workers):
            self.kill(pid)
        self._end_submission_process()
        deadline = time.monotonic() + 5
        left = list(self.workers)
        while left and time.monotonic() < deadline:
            if not self.namespaces:
                _kill_children()
            left = [pid for pid in left if _alive(pid)]
            if left:
                time.sleep(0.002)
        if not self.namespaces:
            _kill_children()
        self.workers = set(left)
        self.killed, self.ran = set(), False  # the next submission's code has not run yet
        return {"ok": not left, "left": len(left)}


def exhausted_message(number: int, error: str, memory_bytes: int) -> str:
    """Why a submission whose code has run could not have its next worker, in its own terms."""
    if number == errno.ENOMEM:
        return (f"your code used up the memory its processes may hold together ({memory_bytes >> 20} MB), so no "
                f"process could be started for this module's checks ({error})")
    return (f"your code used up the {NPROC_LIMIT} processes and threads it may have at once (those it started "
            f"still hold them), so no process could be started for this module's checks ({error})")


_OWN_PID_NAMESPACE: int | None = None  # a descriptor of this process's PID namespace, opened at its first worker
_TAKES_IT_BACK: bool | None = None  # whether setns back into it is allowed here (_takes_its_namespace_back)


def fork_worker(namespaces: bool) -> int:
    """``os.fork()``; with ``namespaces``, the child is PID 1 of a new PID namespace (the other namespaces
    it makes itself: :func:`_confine`). The new namespace is this process's for its next child only: it
    takes its own back with setns, where it may (as root; not in the user namespaces bubblewrap nests
    for an ordinary user), else a starter process between them holds the new one (:func:`_fork_through_starter`)."""
    global _OWN_PID_NAMESPACE
    if not namespaces:
        return os.fork()
    if not _takes_its_namespace_back():
        return _fork_through_starter()
    if _OWN_PID_NAMESPACE is None:
        _OWN_PID_NAMESPACE = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
    _check(_libc.unshare(_CLONE_NEWPID), "unshare")  # for the next child only: this process stays where it is
    try:
        child = os.fork()
    except BaseException:
        _check(_libc.setns(_OWN_PID_NAMESPACE, _CLONE_NEWPID), "setns")
        raise
    if child == 0:
        os.close(_OWN_PID_NAMESPACE)  # the worker holds no way back to its parent's namespace
        _OWN_PID_NAMESPACE = None
        return 0
    _check(_libc.setns(_OWN_PID_NAMESPACE, _CLONE_NEWPID), "setns")  # a later child (a submission's process) here
    return child


def _takes_its_namespace_back() -> bool:
    """Whether this process may unshare a PID namespace for a child and then setns back into its own:
    tried once, in a child of its own (a failed setns would leave its next children in the new one)."""
    global _TAKES_IT_BACK
    if _TAKES_IT_BACK is None:
        reader, writer = os.pipe()
        child = os.fork()
        if child == 0:
            ok = False
            try:
                own = os.open("/proc/self/ns/pid", os.O_RDONLY)
                ok = _libc.unshare(_CLONE_NEWPID) == 0 and _libc.setns(own, _CLONE_NEWPID) == 0
            finally:
                os.write(writer, b"1" if ok else b"0")
                os._exit(0)
        os.close(writer)
        with os.fdopen(reader, "rb") as said:
            _TAKES_IT_BACK = said.read(1) == b"1"
    return _TAKES_IT_BACK


def _fork_through_starter() -> int:
    """``os.fork()`` into a new PID namespace through a starter: a child that unshares it, forks the
    worker (who returns 0 here) as PID 1 there and waits for it, its parent while it lives (their death
    signals chained). The caller gets the worker's pid."""
    reader, writer = os.pipe()
    starter = os.fork()
    if starter == 0:
        os.close(reader)
        name_process("grade-starter")
        try:
            _check(_libc.unshare(_CLONE_NEWPID), "unshare")
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            worker = os.fork()
        except BaseException as exc:  # noqa: BLE001 - told to the caller
            os.write(writer, b"E" + _told(exc))
            os._exit(1)
        if worker == 0:
            os.close(writer)
            return 0
        close_fds(keep=[writer])  # the worker's channels and pipes are its own: the starter holds none open
        os.write(writer, str(worker).encode())
        os.close(writer)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        try:
            os.waitpid(worker, 0)  # the worker's parent while it lives: its death signal goes off with us
        finally:
            os._exit(0)
    os.close(writer)
    with os.fdopen(reader, "rb") as stream:
        text = stream.read(600)
    if not text.isdigit():
        raise ConfinementError(*reversed(_heard(text[1:]))) if text.startswith(b"E") else \
            ConfinementError("the worker could not be started")
    return int(text)


def _start_worker(spec: protocol.WorkerSpec, namespaces: bool, *, close=()):
    """Fork the worker, PID 1 of a PID namespace of its own (in the submission's cgroups when its
    process, :func:`_submission_main`, calls this), and wait until it says it is confined. Returns the
    worker's pid (0 if it could not start), an error message, the grader's end of its socket, and the
    error number of the system call that failed (0: none, or none known)."""
    ours, theirs = socket.socketpair()
    confined_r, confined_w = os.pipe()  # the worker's word, before any student code: confined or not
    try:
        worker = fork_worker(namespaces)
    except (ConfinementError, OSError) as exc:
        for fd in (confined_r, confined_w):
            os.close(fd)
        ours.close()
        theirs.close()
        return 0, str(exc), None, exc.errno if isinstance(exc.errno, int) else 0
    if worker == 0:
        os.close(confined_r)
        ours.close()
        for sock in close:
            sock.close()
        _worker_main(theirs, spec, namespaces, confined=confined_w)  # never returns
    os.close(confined_w)
    theirs.close()
    with os.fdopen(confined_r, "rb") as confined:
        failure = confined.read(500)  # nothing, once the worker is confined (it closes its end)
    if failure:
        try:
            os.kill(worker, signal.SIGKILL)
        except ProcessLookupError:  # it has exited already
            pass
        ours.close()
        code, said = _heard(failure)
        return 0, said or "failed", None, code
    return worker, "", ours, 0


def _submission_main(channel: socket.socket, cgroups: tuple[str, ...], namespaces: bool, *, close=()) -> None:
    """The submission's process: joins its cgroups once, then forks each of its workers on the
    zygote's request (every process it starts is born in the cgroups) until the zygote ends it."""
    code = 0
    name_process("grade-submission")
    try:
        for sock in close:
            sock.close()
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        joined = ""
        try:
            for path in cgroups:
                with open(path, "w") as procs:
                    procs.write(str(os.getpid()))
        except OSError as exc:
            joined = f"could not join the submission's cgroup: {exc}"
        for request in protocol.requests(channel, limit=protocol.CONTROL_LIMIT):
            pid, error, sock, number = 0, joined, None, 0
            if not joined:
                pid, error, sock, number = _start_worker(protocol.WorkerSpec.from_wire(request["spec"]), namespaces,
                                                         close=[channel])
            socket.send_fds(channel, [b"F"], [sock.fileno()] if sock is not None else [])
            protocol.send(channel, protocol.encode({"pid": pid, "message": error, "errno": number}), timeout=30)
            if sock is not None:
                sock.close()
    except BaseException:  # noqa: BLE001 - to the zygote's log
        code = 1
        import traceback

        traceback.print_exc()
    finally:
        os._exit(code)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _kill_children() -> None:
    """Without namespaces: kill every process whose parent is this zygote (its subreaper)."""
    me = str(os.getpid())
    for _ in range(8):
        killed = 0
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    parent = handle.read().rsplit(")", 1)[1].split()[1]
            except (OSError, IndexError):
                continue
            if parent == me:
                try:
                    os.kill(int(entry), signal.SIGKILL)
                    killed += 1
                except (ProcessLookupError, PermissionError):
                    pass
        if not killed:
            return
        time.sleep(0.005)


SUBMISSION_STOPPED = "the submission's process stopped"
# tests of grader-error: "confine", every worker fails to confine; "zygote", the zygote fails to start;
# "probe", the zygote's first word is that it cannot confine (the grader then takes a weaker mode)
FAULT_INJECTION = "GRADE_FAULT_INJECTION"


_SANDBOX_TASKS = 0  # processes and threads of the sandbox's own (bubblewrap's, the zygote's), counted at its start
_FILE_LIMIT = 256 << 20  # the largest file a worker may write: the working folder's quota (main())


def _tasks_here() -> int:
    """The processes and threads this process's /proc shows (the sandbox's PID namespace: all of its own)."""
    count = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                count += len(os.listdir(f"/proc/{entry}/task"))
            except OSError:
                continue
    return count


def counts_per_user_namespace() -> bool:
    """Whether the kernel counts RLIMIT_NPROC per user namespace and uid (Linux 5.14 and later): a
    limit set in the user namespace bubblewrap made counts the sandbox's processes, never the grader's."""
    try:
        major, minor = (int(part) for part in os.uname().release.split(".")[:2])
    except ValueError:
        return False
    return (major, minor) >= (5, 14)


def _read_only_copy(root: str, workdir: str, uid: int | None, gid: int) -> None:
    """In the worker's mount namespace, before any student code: the submission's working copy bound
    read-only over itself (issue 44: a module rewrote its own file, or another assignment's, after the
    grading process had read it, so that what was judged observable was not what ran). What the grader
    read before any of it ran is then what every worker imports. The stack file the worker's watchdog
    writes (protocol.STACK_FILE) is bound back writable, opened here without following a link."""
    from grader.inside.protocol import STACK_FILE

    root = os.path.realpath(root)
    stack = os.path.join(os.path.realpath(workdir), STACK_FILE)
    fd = os.open(stack, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o600)
    try:
        if uid is not None:
            os.fchown(fd, uid, gid)
        _mount(root, root, None, _MS_BIND | _MS_REC)
        _mount(None, root, None, _MS_BIND | _MS_REMOUNT | _MS_RDONLY | _MS_NOSUID | _MS_NODEV)
        _mount(f"/proc/self/fd/{fd}", stack, None, _MS_BIND)
    finally:
        os.close(fd)


def _confine(namespaces: bool, uid: int | None, gid: int, copy: tuple[str, str] | None = None) -> None:
    """What confines a worker before any student code runs (and the zygote's probe, the same way):
    its own mounts in its namespaces (else a session of its own), a process limit (as root the
    submission's uid's; for an ordinary user, in the user namespace of its sandbox, that of every
    process there: the zygote's and the submission's, none of the grader's), a file size limit (no file
    larger than the working folder's quota; EFBIG, not a signal, past it), as root the submission's
    uid, and no capability left."""
    import resource

    if namespaces:  # PID 1 of its own PID namespace already (fork_worker): the others, its own from here
        _check(_libc.unshare(_CLONE_NEWNS | _CLONE_NEWNET | _CLONE_NEWIPC | _CLONE_NEWUTS), "unshare")
        _private_mounts()
        if copy is not None:  # (root, workdir): the submission's working copy, read-only from here
            _read_only_copy(*copy, uid, gid)
    else:
        os.setsid()
    if uid is not None:
        resource.setrlimit(resource.RLIMIT_NPROC, (NPROC_LIMIT, NPROC_LIMIT))
    elif namespaces and counts_per_user_namespace():
        limit = NPROC_LIMIT + _SANDBOX_TASKS
        resource.setrlimit(resource.RLIMIT_NPROC, (limit, limit))
    resource.setrlimit(resource.RLIMIT_FSIZE, (_FILE_LIMIT, _FILE_LIMIT))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past it fails with EFBIG, in the student's code
    if namespaces or uid is not None:  # else: the grader's own user, with nothing to give up
        drop_privileges(uid, gid)
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # cleared by the uid change


def _worker_main(sock: socket.socket, spec: protocol.WorkerSpec, namespaces: bool, *, confined: int) -> None:
    """PID 1 of a fresh PID namespace (or, without namespaces, a process group of its own)."""
    name_process("grade-worker")
    from grader.inside.worker import serve

    code = 0
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        try:
            if os.environ.get(FAULT_INJECTION) == "confine":
                raise ConfinementError(f"forced by {FAULT_INJECTION}")
            close_fds(keep=[sock.fileno(), confined])
            _confine(namespaces, spec.uid, spec.gid, (spec.student_root, spec.workdir))
        except (ConfinementError, OSError) as exc:  # told by the pipe, which no student code ever holds
            os.write(confined, _told(exc))
            return
        os.close(confined)
        serve(sock, spec)
    except BaseException:  # noqa: BLE001 - to the zygote's log (the worker's stderr is /dev/null by now)
        code = 1
        import traceback

        traceback.print_exc()
    finally:
        os._exit(code)


def _warm_up() -> None:
    """Pay torch's lazy first-use costs once here instead of in every worker."""
    import torch

    from grader.inside.tracer import make_tracer

    torch.set_num_threads(1)
    # autograd's first backward starts its device threads, which counts the CUDA devices: the driver is
    # then initialised here, and every worker forked from this process fails its first CUDA call ("CUDA
    # error: initialization error"). Where the machine has a GPU, the backward passes wait for the worker
    backward = not any(name.startswith("nvidia") for name in os.listdir("/dev"))
    layer = torch.nn.Linear(5, 3)
    x = torch.randn(4, 5, requires_grad=True)
    # both views of the tracer, as an exercise that forbids something has them: the functions' view names
    # each function by torch's table of overridable functions, built at its first use (8 ms)
    # (each operation on unrelated tensors: this package ships to students, and no line of it may be an answer)
    with make_tracer(frozenset({"(nothing the warm-up calls)"})):
        scores = layer(x).masked_fill(torch.rand(4, 3) > 0.5, float("-inf")) + torch.rand(4, 3).triu(1)
        out = torch.softmax(scores, dim=-1) @ torch.randn(3, 2)
    if backward:
        (out * torch.ones_like(out)).sum().backward()
    protocol.decode(protocol.encode({"out": out.detach(), "x": x.detach()}), limit=1 << 20)
    # the first use of what attention code often calls costs up to a millisecond or so each (kernels
    # chosen, caches filled): paid here once, not in each worker
    q = torch.randn(1, 2, 3, 4, requires_grad=True)
    attended = torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
    mixed = torch.einsum("bhqd,bhkd->bhqk", q, torch.randn(1, 2, 3, 4)).softmax(-1) @ torch.randn(1, 2, 3, 4)
    joined = torch.cat([attended, mixed], 1) + torch.stack([q, q]).sum(0).repeat_interleave(2, dim=1)
    dropped = torch.nn.functional.dropout(joined, 0.5, training=True).sum()
    if backward:
        dropped.backward()
    angles = torch.outer(torch.arange(4.0), torch.arange(2.0))
    (angles.cos() + angles.sin()).double().softmax(-1)
    half = q.detach().half()
    half @ half.transpose(-1, -2)


PROBE_UID = 1_999_999_999  # below every submission's uid (grader.sandbox.confine.FIRST_UID): the probe's own


def probe_confinement(namespaces: bool, *, per_uid: bool) -> str | None:
    """Confine a process as a worker is confined (namespaces, private mounts, no capabilities, and as
    root a uid of its own that must still read the Python runtime), before any student code: why it
    cannot be done here, or None. The zygote says it first, so the grader can take a weaker mode."""
    reader, writer = os.pipe()
    try:
        worker = fork_worker(namespaces)  # as a worker is forked: PID 1 of a PID namespace of its own
    except (ConfinementError, OSError) as exc:
        os.close(reader)
        os.close(writer)
        return str(exc) or type(exc).__name__
    if worker == 0:
        try:
            os.close(reader)
            _confine(namespaces, PROBE_UID if per_uid else None, 65534)
            for folder in (os.path.dirname(os.__file__), _torch_folder()):
                if not os.access(folder, os.R_OK | os.X_OK):
                    raise ConfinementError(f"a submission's uid cannot read the Python runtime at {folder}")
            os._exit(0)
        except BaseException as exc:  # noqa: BLE001 - said to the grader
            os.write(writer, (str(exc) or type(exc).__name__).encode(errors="replace")[:500])
            os._exit(1)
    os.close(writer)
    with os.fdopen(reader, "rb") as stream:
        said = stream.read(600)  # until it has exited (it holds the pipe's end)
    if said:
        return said.decode(errors="replace")
    try:
        _, status = os.waitpid(worker, 0)
    except ChildProcessError:  # reaped already (the zygote ignores SIGCHLD)
        status = 0
    return f"the probe ended with status {status}" if status else None


def limit_work(quota: int, namespaces: bool) -> tuple[str | None, int | None]:
    """The working folder as a file system of ``quota`` bytes (and WORK_INODES files) of the sandbox's
    own: what a submission writes there, it writes in its quota (ENOSPC when it is full) and in memory
    (the writer's cgroup's, as root), never on the grader's disk. The zygote takes a mount namespace of
    its own first (bubblewrap's is not its to mount in, for an ordinary user: bubblewrap nests a user
    namespace), single-threaded still, and mounts it over the empty folder bubblewrap made
    (grader.sandbox.confine.view_args); every worker is forked with it. Returns why it could not be
    done, or None, and a descriptor of the folder for the grader, who reaches it through that alone
    (grader.sandbox.client.ZygoteClient.work). Without namespaces there is no sandbox to mount it in:
    only the file size limit (``quota`` too) holds."""
    global _FILE_LIMIT
    if quota > 0:
        _FILE_LIMIT = quota
    if not (namespaces and quota > 0):
        return None, None
    try:
        _check(_libc.unshare(_CLONE_NEWNS), "unshare")
        _mount(None, "/", None, _MS_REC | _MS_PRIVATE)  # nothing mounted here reaches bubblewrap's view
        _mount("tmpfs", WORK, "tmpfs", _MS_NOSUID | _MS_NODEV, f"mode=0711,size={quota},nr_inodes={WORK_INODES}")
        os.chdir(WORK)
        return None, os.open(WORK, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except (ConfinementError, OSError) as exc:
        return f"the working folder's quota: {exc}", None


def run_as(uid: int, gid: int, argv: list[str]) -> None:
    """``python -m grader.inside.zygote --as UID GID -- CMD...``: drop to ``uid`` with no capabilities, then
    exec CMD (a notebook's kernel in its sandbox, grader.sandbox.kernel_boundary)."""
    drop_privileges(uid, gid)
    os.execv(argv[0], argv)


MADV_COLLAPSE = 25  # Linux 6.1 and later
_HUGE = 2 << 20


def collapse_into_huge_pages() -> int:
    """Back the zygote's writable memory (torch's, about 150 MB) with 2 MB pages where the kernel can,
    so that forking a worker copies a page table entry for each 2 MB instead of 512 (4 ms a fork down
    to 1, and an exit's teardown likewise); a worker's first write to one copies 4 kB, as before. For a
    zygote that forks many workers (a batch): it costs about a tenth of a second once. Memory the
    student's code allocates later is left to the usual pages. The bytes collapsed (0 where the kernel
    cannot: older than 6.1, or transparent huge pages off)."""
    try:
        madvise = _libc.madvise
        madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        with open("/proc/self/maps") as maps:
            lines = maps.read().splitlines()
    except (OSError, AttributeError):
        return 0
    collapsed = 0
    for line in lines:
        fields = line.split()
        if len(fields) < 2 or "w" not in fields[1] or "p" not in fields[1]:
            continue
        start, end = (int(value, 16) for value in fields[0].split("-"))
        low, high = (start + _HUGE - 1) & ~(_HUGE - 1), end & ~(_HUGE - 1)
        if high - low >= _HUGE and madvise(low, high - low, MADV_COLLAPSE) == 0:
            collapsed += high - low
    return collapsed


def main() -> None:
    global _SANDBOX_TASKS
    if sys.argv[1] == "--as" and sys.argv[4] == "--":
        run_as(int(sys.argv[2]), int(sys.argv[3]), sys.argv[5:])
    control = socket.socket(fileno=int(sys.argv[1]))
    name_process("grade-zygote")
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    prctl(_PR_SET_CHILD_SUBREAPER, 1)  # orphans of student code become ours, and are reaped
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    quota = [arg.removeprefix("quota=") for arg in sys.argv[2:] if arg.startswith("quota=")]
    config = {"namespaces": "namespaces" in sys.argv[2:], "uid": "uid" in sys.argv[2:],  # as the grader plans
              "batch": "batch" in sys.argv[2:], "quota": int(quota[0]) if quota and quota[0].isdigit() else 0}
    if os.environ.get(FAULT_INJECTION) == "zygote":
        raise RuntimeError(f"forced by {FAULT_INJECTION}")
    # first, before torch: whether a worker can be confined here (the grader reads it before grading)
    problem, work = limit_work(config["quota"], config["namespaces"])
    if os.environ.get(FAULT_INJECTION) == "probe":
        problem = f"forced by {FAULT_INJECTION}"
    problem = problem or probe_confinement(config["namespaces"], per_uid=config["uid"])
    socket.send_fds(control, [b"F"], [work] if work is not None and not problem else [])  # the working folder
    protocol.send(control, protocol.encode({"probe": problem}), timeout=30)
    if work is not None:
        os.close(work)
    heap.keep_freed()  # before torch: every worker inherits it
    import gc

    gc.disable()  # torch's import makes only objects that live on: no collection need traverse them
    import torch  # noqa: F401 - once, here; every worker inherits it

    import grader.inside.notebook_source  # noqa: F401 - what a confined worker may no longer import
    import grader.inside.worker  # noqa: F401

    _warm_up()
    heap.give_back_freed()  # what the warm-up freed: no worker forks with it
    gc.freeze()  # torch's objects: never traversed again by a worker's collections, so never copied
    gc.enable()
    if config["batch"]:
        collapse_into_huge_pages()
    _SANDBOX_TASKS = _tasks_here() if config["namespaces"] else 0  # what the sandbox holds before any worker
    zygote = Zygote(control, config)
    zygote.reply({"ok": True, "pid": os.getpid()})
    zygote.serve()


if __name__ == "__main__":
    main()
