"""The grading side of the sandbox: starting the zygote, and talking to the workers it forks.

A :class:`ZygoteClient` is a fresh process (``exec``, never a fork of the grader: it holds nothing of the
grader's memory, channels or files) running :mod:`grader.inside.zygote` inside the sandbox that
:mod:`grader.sandbox.confine` plans. The grader asks it for a worker per submission module; the worker's
socket comes back to the grader, which sends it inputs and reads back plain data
(:mod:`grader.inside.protocol`), every read and write with a deadline and a size bound.
"""
from __future__ import annotations

import os
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from grader.sandbox import leftovers
from grader.inside import protocol
from grader.sandbox.confine import (SANDBOX_ROOT, WORK_QUOTA, Confinement, copy_student_side, interpreter,
                                    namespace_args, python_env, view_args)
from grader.errors import IsolationError
from grader.inside.protocol import WorkerSpec

CONTROL_TIMEOUT = 30.0  # seconds the zygote may take to answer (it runs no student code)
# a call's deadline moves by the time its worker waited for a processor (another submission's processes on
# the machine), to at most this many times its limit in all (see Worker.receive)
STARVED_FACTOR = 10


class WorkerFault(Exception):
    """The worker did not answer properly; ``kind`` is a result status (timeout, crashed, error)."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind
        self.message = message


class ZygoteClient:
    """A torch-loaded process, started fresh in the sandbox, that forks workers on request."""

    def __init__(self, confinement: Confinement, *, blocked: tuple[str, ...], cgroups: dict[str, str] | None = None,
                 batch: bool = False):
        """``batch``: it will fork the workers of many submissions (its memory in huge pages: cheaper forks,
        grader.inside.zygote.collapse_into_huge_pages)."""
        self.confinement = confinement
        self.scratch = leftovers.scratch("grade-sandbox")  # named after this process (grader/sandbox/leftovers.py)
        self.host_work = self.scratch / "work"  # the working folder without a sandbox (and the zygote's start)
        self.host_work.mkdir()
        self.scratch.chmod(0o711)  # a submission's uid may pass through to its own copy, and list nothing
        self.host_work.chmod(0o711)
        # in a sandbox, the working folder is the sandbox's own, of WORK_QUOTA bytes (see ``work``)
        self._work: Path | None = None if confinement.sandboxed else self.host_work
        self._work_fd: int | None = None
        copy_student_side(self.scratch / "lib")
        self._control, theirs = socket.socketpair()
        uid = ["uid"] if confinement.root else []  # a uid per submission: the zygote's probe tries one
        uid += ["batch"] if batch else []
        uid += [f"quota={WORK_QUOTA}"]  # the working folder's size, and the largest file a worker may write
        if confinement.sandboxed:
            argv = [confinement.bwrap, *namespace_args(confinement.root),
                    *view_args(lib=str(self.scratch / "lib"), work=None, blocked=blocked, cgroups=cgroups),
                    interpreter(), "-m", "grader.inside.zygote", str(theirs.fileno()), "namespaces", *uid]
            env = None
        else:
            argv = [sys.executable, "-m", "grader.inside.zygote", str(theirs.fileno()), *uid]
            env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TZ")}
            env.update(python_env(str(self.scratch / "lib")), OMP_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1",
                       MKL_DISABLE_FAST_MM="1")  # as in the sandbox (confine.view_args)
        self.log = self.scratch / "zygote.log"  # the zygote's own errors; no student code can write here
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(argv, pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL,
                                            stdout=subprocess.DEVNULL, stderr=log, env=env,
                                            cwd=str(self.host_work), start_new_session=True)
        theirs.close()
        self.namespaces = confinement.sandboxed
        self.ready = False  # the zygote imports torch meanwhile: the grader waits at its first spawn
        # answers the zygote owes to requests not waited for, in the order they were sent: None for a prepare
        # (read and dropped), a number for a worker asked for ahead (kept in ``spawned`` until taken)
        self.owed: list[int | None] = []
        self.spawned: dict[int, tuple[dict, list[int]]] = {}
        self.spawns = 0
        self.failure: str | None = None
        self.probed = False
        self.confinement_problem: str | None = None  # what the zygote's probe found (grader.inside.zygote)
        # a twin (see twin()): the zygote it was forked from, and its own process (as this machine numbers it),
        # whose tree its workers' memory is read from; the first zygote's readings leave its twins' trees out
        self.twin_of: ZygoteClient | None = None
        self.memory_root: int | None = None
        self.skipped: frozenset[int] = frozenset()

    @property
    def work(self) -> Path:
        """Where each submission's working copy goes. Without a sandbox, a folder of this grader's scratch;
        in one, the sandbox's own working folder: a file system of WORK_QUOTA bytes that the zygote mounts
        before it says its first word (grader.inside.zygote.limit_work), which brings a descriptor of it,
        held here (the folder is reached as ``/proc/self/fd/N``, by this process alone), so that a
        submission that fills it fills nothing of the grader's disk. Where the sandbox did not start, the
        scratch folder (nothing will run there; the checks say grader-error)."""
        if self._work is None:
            try:
                self.probe()  # the zygote's first word brings the folder's descriptor
            except IsolationError:
                pass
            self._work = Path(f"/proc/self/fd/{self._work_fd}") if self._work_fd is not None else self.host_work
        return self._work

    def clear_work(self) -> bool:
        """Remove whatever is left in the working folder once a submission's cell is closed (what its code
        made beside its working copy, or made hard to remove: a folder it left unreadable to its owner);
        True when the folder is empty again, else the next submission needs a fresh sandbox."""
        work = self.work
        try:
            work.chmod(0o711)  # as the grader's own uid (user namespaces), the submission may have changed it
            entries = list(os.scandir(work))
        except OSError:
            return False
        for entry in entries:
            leftovers.remove_tree(entry.path)
        try:
            return not any(True for _ in os.scandir(work))
        except OSError:
            return False

    def stop(self) -> None:
        """End the sandbox and every process in it now; its working folder stays reachable until close()."""
        self._stop()

    def twin(self) -> "ZygoteClient | None":
        """A second zygote in the same sandbox, forked by this one (torch loaded, no second import), for a second
        grading process of the same submission (grader.grading.twins): its own channel, its own workers, its
        workers' memory read from its own tree, which this zygote's readings leave out. It ends, with its
        workers, when its channel closes (:meth:`close`). None where it cannot be had (no namespaces, a zygote
        that failed): the submission is then graded in one process."""
        import copy

        if not self.namespaces or self.failure is not None or self.twin_of is not None:
            return None
        try:
            self.wait_ready()
            self._send({"op": "twin"})
            reply, fds = self._receive()
        except (WorkerFault, IsolationError):
            return None
        channel = socket.socket(fileno=fds.pop(0)) if reply.get("ok") and fds else None
        for fd in fds:
            os.close(fd)
        pid = reply.get("pid")
        host = host_pid(self.process.pid, pid) if channel is not None and type(pid) is int else None
        if host is None:
            if channel is not None:
                channel.close()  # the twin ends
            return None
        twin = copy.copy(self)
        twin._control, twin.owed, twin.spawned, twin.spawns = channel, [], {}, 0
        twin.twin_of, twin.memory_root, twin.skipped = self, host, frozenset()
        self.skipped = self.skipped | {host}
        return twin

    def probe(self) -> str | None:
        """The zygote's first word, said before it loads torch: why a worker cannot be confined here,
        or None (see :func:`grader.inside.zygote.probe_confinement`). Raises IsolationError if it did not start."""
        if not self.probed and self.failure is None:
            try:
                answer, fds = self._receive(timeout=120)
            except WorkerFault:
                answer, fds = {}, []
            if "probe" in answer and fds and self.confinement.sandboxed and self._work_fd is None:
                self._work_fd = fds.pop(0)  # the sandbox's working folder (see ``work``)
                os.set_inheritable(self._work_fd, False)
            for fd in fds:
                os.close(fd)
            if "probe" in answer:
                self.probed = True
                self.confinement_problem = str(answer["probe"])[:500] if answer["probe"] else None
            else:
                self._failed()
        if self.failure is not None:
            raise IsolationError(self.failure)
        return self.confinement_problem

    def wait_ready(self) -> None:
        if self.ready:
            return
        self.probe()
        try:
            answer, _ = self._receive(timeout=120)
        except WorkerFault:
            answer = {}
        if answer.get("ok"):
            self.ready = True
            return
        self._failed()
        raise IsolationError(self.failure)

    def _failed(self) -> None:
        try:  # the last line of the zygote's own error (a traceback's: the exception), never the traceback
            lines = self.log.read_bytes()[-2000:].decode(errors="replace").strip().splitlines()
            error = next((line.strip() for line in reversed(lines) if line.strip()), "")
        except OSError:
            error = ""
        self.failure = f"the sandbox for student code could not start ({error or 'no answer'})"
        self._stop()

    def inside(self, path: Path | str) -> str:
        """Where the sandbox sees a path of the working folder."""
        path, work = str(path), str(self.work)
        if not self.namespaces:
            return path
        return SANDBOX_ROOT + "/work" + path[len(work):] if path == work or path.startswith(work + os.sep) else path

    def _dead(self) -> bool:
        return self.process.poll() is not None

    @property
    def alive(self) -> bool:
        return not self._dead()

    def _send(self, message: dict) -> None:
        try:
            protocol.send(self._control, protocol.encode(message), timeout=CONTROL_TIMEOUT)
        except (protocol.ChannelClosed, protocol.ChannelTimeout, ValueError):  # ValueError: closed already
            raise WorkerFault("crashed", "the sandbox that runs your code stopped unexpectedly") from None

    def prepare(self, cgroups: tuple[str, ...]) -> None:
        """Have the zygote start the submission's process of ``cgroups`` now, without waiting for its
        answer: it joins the cgroups (the kernel's move waits milliseconds) while the grader prepares the
        submission's checks. Nothing to do before the zygote is ready (its first submission)."""
        if self.ready and cgroups and self.failure is None:
            try:
                self._send({"op": "prepare", "cgroups": list(cgroups)})
            except WorkerFault:  # the zygote stopped: the first worker's spawn says so where it is graded
                return
            self.owed.append(None)

    def _receive(self, *, timeout: float = CONTROL_TIMEOUT) -> tuple[dict, list[int]]:
        """The zygote's next answer to the request just sent (those owed to earlier ones read first)."""
        self._read_owed(timeout)
        return self._answer(timeout)

    def _read_owed(self, timeout: float, until: int | None = None) -> None:
        """The answers owed to earlier requests, read in order (all of them, or up to ``until``'s)."""
        while self.owed and (until is None or until not in self.spawned):
            number = self.owed.pop(0)
            answer, fds = self._answer(timeout)
            if number is None:
                for fd in fds:
                    os.close(fd)
            else:
                self.spawned[number] = (answer, fds)

    def _answer(self, timeout: float) -> tuple[dict, list[int]]:
        """The zygote's next answer: one byte that may carry a descriptor, then a message."""
        try:
            if not select.select([self._control], [], [], timeout)[0]:
                raise protocol.ChannelTimeout("the zygote did not answer")
            marker, fds, _, _ = socket.recv_fds(self._control, 1, 1)
            if marker != b"F":
                raise protocol.ChannelClosed("end of stream")
            reply = protocol.decode(protocol.recv(self._control, limit=protocol.CONTROL_LIMIT, timeout=timeout),
                                    limit=protocol.CONTROL_LIMIT)
        except (OSError, ValueError, protocol.ChannelClosed, protocol.ChannelTimeout, protocol.MalformedMessage,
                protocol.MessageTooLarge):
            raise WorkerFault("crashed", "the sandbox that runs your code stopped unexpectedly") from None
        return (reply if isinstance(reply, dict) else {}), fds

    def _ask(self, message: dict) -> dict:
        self.wait_ready()
        self._send(message)
        reply, fds = self._receive()
        for fd in fds:
            os.close(fd)
        return reply

    def spawn(self, spec: WorkerSpec, *, timeout: float) -> Worker:
        """A new worker that has imported the submission module (or failed to: see ``import_error``)."""
        return self.take(self.spawn_ahead(spec), spec, timeout=timeout)

    def spawn_ahead(self, spec: WorkerSpec) -> int:
        """Ask the zygote for a worker now, and go on: it forks it, and the worker imports the module, while
        the grader does something else; :meth:`take` (with the number this gives) waits for it. The zygote
        answers in the order it was asked."""
        self.wait_ready()
        self._send({"op": "spawn", "spec": spec.to_wire()})
        self.spawns += 1
        self.owed.append(self.spawns)
        return self.spawns

    def take(self, number: int, spec: WorkerSpec, *, timeout: float) -> Worker:
        """The worker asked for by :meth:`spawn_ahead`, once it has imported the module (or failed to)."""
        self._read_owed(CONTROL_TIMEOUT, until=number)
        reply, fds = self.spawned.pop(number, ({}, []))
        if not reply.get("ok") or not fds:
            for fd in fds:
                os.close(fd)
            if reply.get("grader_fault") is True:  # the zygote's word: no student code has run in the worker
                raise WorkerFault("grader-error", f"the grader could not confine student code here "
                                                  f"({reply.get('message', '')})")
            if reply.get("exhausted") is True:  # the zygote's word: what the submission's code holds stopped it
                raise WorkerFault("crashed", str(reply.get("message", ""))[:1000])
            raise WorkerFault("crashed", f"the grader could not start your code ({reply.get('message', '')})")
        worker = Worker(self, int(reply["pid"]), socket.socket(fileno=fds[0]), spec)
        worker.run_queue = run_queue_file(self.process.pid, worker.pid)
        answer = worker.receive(timeout=timeout)
        if not answer.get("ok"):
            worker.import_error = answer
        return worker

    def kill(self, pid: int) -> None:
        try:
            self._ask({"op": "kill", "pid": pid})
        except (WorkerFault, IsolationError):
            pass

    def end_submission(self) -> bool:
        """Kill every process of the submission; True when the zygote saw none of them left (or never
        started: then no student code ran)."""
        if self.failure is not None:
            return True
        try:
            return bool(self._ask({"op": "end"}).get("ok"))
        except WorkerFault:
            return False
        except IsolationError:
            return True
        finally:  # workers asked for ahead and never taken: killed with the rest, their channels closed here
            for _, fds in self.spawned.values():
                for fd in fds:
                    os.close(fd)
            self.spawned.clear()

    def close(self) -> None:
        if self.twin_of is not None:  # its channel only: the twin ends with its workers, the sandbox goes on
            self._control.close()
            self.twin_of.skipped = self.twin_of.skipped - {self.memory_root}
            return
        self._stop()
        leftovers.remove_tree(self.scratch)
        if self._work_fd is not None:  # the sandbox's working folder, and all it held, freed with the last hold
            os.close(self._work_fd)
            self._work_fd = None

    def _stop(self) -> None:
        """The zygote and its sandbox ended; its folder (working copies in it) stays until close()."""
        self._control.close()
        if self.twin_of is not None:  # a twin's end is its channel's: never its sandbox's
            return
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                self.process.kill()
        self.process.wait()


def held_bytes(root_pid: int, folder: Path | None = None, skip=frozenset()) -> int:
    """The memory a sandbox holds, as the kernel counts it and the grader reads it from /proc, never
    asked of the processes: the anonymous and shared resident memory of ``root_pid`` and all its
    descendants (the zygote, the workers, anything they started: orphans are reaped by the zygote, so
    stay in the tree), the files
    in the tmpfs mounts they see (``/tmp``, the sandbox's root), the memfds they hold open, and the files
    under ``folder`` (the submission's working folder). ``skip``: processes whose trees are another reading's (a
    twin zygote's, grader.sandbox.client.ZygoteClient.twin)."""
    children_of = children_reader()
    total, todo, seen = 0, [root_pid], set()  # tmpfs mounts by device, memfds by (device, inode): once each
    while todo:
        pid = todo.pop()
        if pid in skip:
            continue
        todo += children_of(pid)
        # anonymous and shared memory resident: what code allocates (file pages, the libraries a first
        # call maps in, are the kernel's to drop and no cache of the student's)
        total += _resident(pid) + _unmapped_files(pid, seen) + _tmpfs_files(pid, seen)
    return total + _folder_files(folder)


def _unmapped_files(pid: int, seen: set) -> int:
    """What the memory-backed files ``pid`` holds open take, where no mount shows them: memfds (issue 44: a
    cache kept by os.write into an unmapped memfd grew in none of the readings above), counted once each by
    the blocks the kernel gave them (``seen`` holds their (device, inode) after)."""
    import os

    total = 0
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return 0
    for fd in fds:
        try:
            if not os.readlink(f"/proc/{pid}/fd/{fd}").startswith("/memfd:"):
                continue
            st = os.stat(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if (st.st_dev, st.st_ino) not in seen:
            seen.add((st.st_dev, st.st_ino))
            total += st.st_blocks * 512
    return total


def children_reader():
    """pid -> its children's pids: read from each of its threads' ``children`` file where the kernel has
    them (a walk of the sandbox's own tree), else from every process's parent in ``/proc`` (a scan of
    all of them, milliseconds on a busy machine)."""
    if Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").exists():
        def children(pid: int) -> list[int]:
            found = []
            try:
                tasks = list(Path(f"/proc/{pid}/task").iterdir())
            except OSError:
                return found
            for task in tasks:
                try:
                    found += [int(n) for n in (task / "children").read_text().split()]
                except (OSError, ValueError):
                    continue
            return found

        return children
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            parents.setdefault(int(fields[1]), []).append(int(entry.name))
    return lambda pid: parents.get(pid, [])


def host_pid(root_pid: int, pid: int) -> int | None:
    """The process (as this machine numbers it) that the zygote, a descendant of ``root_pid`` (the
    shallowest named grade-zygote: student code runs deeper), knows as ``pid`` in its PID namespace;
    None where it cannot be found."""
    children_of = children_reader()
    level, todo = None, [root_pid]
    while todo:
        process, todo = todo[0], todo[1:]
        todo += children_of(process)
        try:
            pids = next(line.split()[1:] for line in Path(f"/proc/{process}/status").read_text().splitlines()
                        if line.startswith("NSpid:"))
            if level is None and Path(f"/proc/{process}/comm").read_text().strip() == "grade-zygote":
                level = len(pids) - 1
            if level is not None and len(pids) > level and pids[level] == str(pid):
                return process
        except (OSError, StopIteration):
            continue
    return None


def run_queue_file(root_pid: int, pid: int) -> int | None:
    """``/proc/<pid>/schedstat``, opened, of the worker the zygote knows as ``pid`` (:func:`host_pid`); None
    where it cannot be found. Its second field is the time the process has waited for a processor."""
    process = host_pid(root_pid, pid)
    try:
        return None if process is None else os.open(f"/proc/{process}/schedstat", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None


def own_bytes(process: int, folder: Path | None = None) -> int | None:
    """What the worker ``process`` (:func:`host_pid`) holds of its own, as the kernel counts it, whenever it
    took it (issue 44, red team round 9: a cache kept in a pool allocated and written at import grew in no
    reading, and no instance gave it back): the anonymous and shared memory resident in it and in its
    descendants beyond what the process it was forked from holds (the pages it got at the fork count in
    both), the memfds they hold, the files in the tmpfs mounts it sees and under ``folder``. None where its
    parent cannot be read."""
    try:
        parent = int(Path(f"/proc/{process}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None
    children_of = children_reader()
    total, todo, seen = -_resident(parent), [process], set()
    while todo:
        pid_ = todo.pop()
        todo += children_of(pid_)
        total += _resident(pid_) + _unmapped_files(pid_, seen)
    return total + _tmpfs_files(process, seen) + _folder_files(folder)


def _resident(pid: int) -> int:
    """The anonymous and shared memory resident in ``pid`` (0 where it is gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    return sum(int(line.split()[1]) * 1024 for line in status.splitlines()
               if line.startswith(("RssAnon:", "RssShmem:")))


def _tmpfs_files(pid: int, seen: set) -> int:
    """What the files in the tmpfs mounts ``pid`` sees take (each mount once: ``seen`` holds their devices)."""
    total = 0
    try:
        mounts = Path(f"/proc/{pid}/mountinfo").read_text().splitlines()
    except OSError:
        return 0
    for line in mounts:  # "id parent major:minor root mountpoint options - fstype source ..."
        before, _, after = line.partition(" - ")
        if after.split(" ", 1)[0] == "tmpfs" and before.split()[2] not in seen:
            seen.add(before.split()[2])
            try:
                stats = os.statvfs(f"/proc/{pid}/root{before.split()[4]}")
            except OSError:
                continue
            total += (stats.f_blocks - stats.f_bfree) * stats.f_frsize
    return total


def _folder_files(folder: Path | None) -> int:
    """What the files under ``folder`` take (none: 0), links left out."""
    total = 0
    for path in (folder.rglob("*") if folder is not None else ()):
        try:
            if path.is_file() and not path.is_symlink():
                total += path.stat().st_size
        except OSError:
            continue
    return total


def _run_queue_wait(fd: int | None) -> float:
    """Seconds the process has waited for a processor in all (0.0 where unknown)."""
    if fd is None:
        return 0.0
    try:
        return int(os.pread(fd, 128, 0).split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


class Worker:
    """The grader's end of one worker."""

    def __init__(self, zygote: ZygoteClient, pid: int, sock: socket.socket, spec: WorkerSpec):
        self.zygote = zygote
        self.pid = pid
        self.sock = sock
        self.spec = spec
        self.alive = True
        self.import_error: dict | None = None
        self.run_queue: int | None = None  # its /proc/PID/schedstat (run_queue_file), once found
        self.host: int | None = None  # its pid as this machine numbers it (host_pid), found at its first reading
        # answers a stand-in's question (grader.grading.oracle) while a verification runs; None: refused
        self.oracle = None

    def held_bytes(self) -> int:
        """What this worker's sandbox holds now (its zygote, its workers): :func:`held_bytes`. The sandbox's
        own working folder is one of the tmpfs mounts it counts; a working folder outside (no sandbox) is
        counted file by file."""
        work, zygote = self.zygote.work, self.zygote
        return held_bytes(zygote.memory_root or zygote.process.pid, None if work != zygote.host_work else work,
                          skip=zygote.skipped)

    def own_bytes(self) -> int | None:
        """What this worker holds of its own, however long it has held it: :func:`own_bytes`; None where it
        cannot be found."""
        if self.host is None:  # one walk of the sandbox's processes per worker, not one per reading
            self.host = host_pid(self.zygote.process.pid, self.pid)
            if self.host is None:
                return None
        work = self.zygote.work
        return own_bytes(self.host, None if work != self.zygote.host_work else work)

    def request(self, payload: dict, *, timeout: float) -> dict:
        started = self.send(payload, timeout=timeout)
        return self.receive(timeout=timeout, started=started)

    def send(self, payload: dict, *, timeout: float) -> tuple[float, float]:
        """Send a request; its reply is :meth:`receive`'s, which must come before any other request's. When
        it was sent (``time.monotonic``, and the worker's run-queue wait then), from which its ``timeout``
        counts."""
        if not self.alive:
            raise WorkerFault("crashed", "the process running your code had already stopped")
        started = time.monotonic(), _run_queue_wait(self.run_queue)
        try:
            protocol.send(self.sock, protocol.encode(payload), timeout=timeout)
        except protocol.ChannelTimeout:
            self.kill()
            raise WorkerFault("timeout", f"your code did not read its inputs within {timeout:g} s") from None
        except protocol.ChannelClosed:
            self.kill()
            raise WorkerFault("crashed", "the process running your code stopped unexpectedly") from None
        return started

    def receive(self, *, timeout: float, started: tuple[float, float] | None = None) -> dict:
        """The reply to the request sent last. A stand-in's questions on the way (``{"ask": ...}``, see
        grader.inside.stand_in) are answered by ``oracle``, or refused, within the same deadline.

        ``timeout`` is the worker's own time: what it spent waiting for a processor, read from the kernel
        (its run-queue wait in /proc/PID/schedstat, never asked of it), moves the deadline by as much, up to
        STARVED_FACTOR times ``timeout`` in all. Another submission's processes that flood the machine
        (each in a session of its own, so a scheduling group of its own, round 5 of issue 44) slow a
        bystander's calls; they never make its code run out of time. Code that runs, or sleeps, for
        ``timeout`` seconds stops there as before. ``started``: :meth:`send`'s (default: now)."""
        started, waited = (time.monotonic(), _run_queue_wait(self.run_queue)) if started is None else started
        deadline = started + timeout
        while True:
            left = deadline - time.monotonic()
            while left <= 0 or not select.select([self.sock], [], [], left)[0]:
                starved = _run_queue_wait(self.run_queue) - waited
                moved = min(started + starved + timeout, started + STARVED_FACTOR * timeout)
                if moved <= deadline + 0.01:
                    break
                deadline = moved
                left = deadline - time.monotonic()
            reply = self._receive(timeout=max(deadline - time.monotonic(), 0.0), limit=timeout)
            if "ok" in reply or "ask" not in reply:
                return reply
            question = reply["ask"]
            answer = self.oracle(question) if self.oracle is not None and isinstance(question, dict) \
                else {"refused": "no verification is running"}
            try:
                protocol.send(self.sock, protocol.encode(answer), timeout=max(deadline - time.monotonic(), 0.0))
            except (protocol.ChannelTimeout, protocol.ChannelClosed):
                self.kill()
                raise WorkerFault("crashed", "the process running your code stopped unexpectedly") from None

    def _receive(self, *, timeout: float, limit: float) -> dict:
        try:
            payload = protocol.recv(self.sock, limit=self.spec.reply_limit + (1 << 20), timeout=timeout)
            reply = protocol.decode(payload, limit=self.spec.reply_limit + (1 << 20))
        except protocol.ChannelTimeout:
            self.kill()
            raise WorkerFault("timeout", f"your code did not finish within {limit:g} s") from None
        except protocol.ChannelClosed:
            self.kill()
            raise WorkerFault("crashed", "the process running your code stopped unexpectedly "
                                         "(it exited, was killed, or ran out of memory)") from None
        except protocol.MessageTooLarge as exc:
            self.kill()
            raise WorkerFault("error", f"your code returned too much data ({exc})") from None
        except protocol.MalformedMessage:
            self.kill()
            raise WorkerFault("error", "your code returned something other than plain tensors") from None
        if not isinstance(reply, dict):
            raise WorkerFault("error", "your code returned something other than plain tensors")
        return reply

    def kill(self) -> None:
        if self.alive:
            self.zygote.kill(self.pid)
            self.hang_up()

    def hang_up(self) -> None:
        """Close the grader's end only, where the zygote's end of the submission kills the worker next."""
        if self.alive:
            self.alive = False
            self.sock.close()
            if self.run_queue is not None:
                os.close(self.run_queue)
                self.run_queue = None
