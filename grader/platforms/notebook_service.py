"""The grading service of nbgrader's sandboxed kernels (grader.sandbox.kernel_boundary), outside their sandboxes.

``python -m grader.platforms.notebook_service COURSE_ROOT CONTROL_FD``: one process for every kernel that one
process of nbgrader's starts (``nbgrader autograde`` runs a class's notebooks one after another), holding one
grader, whose sandbox stays warm from one notebook to the next and which keeps the reference's results for
the next student (a class is graded on one seed). Each student's grading is a submission of its own in that
sandbox (its own processes, ended with it; as root, a uid of its own), as in ``grade autograde``.

The kernel manager speaks on CONTROL_FD (a socket): ``{"open": PATH, "cwd": FOLDER}`` makes the service answer
on a socket at PATH, in a folder only that kernel's sandbox shows, for the notebook folder FOLDER the kernel
was started in; ``{"close": PATH}`` ends that: the socket, the kernel's open connections and whatever it asked
that is not graded yet. Each is answered ``{"ok": true}`` (or ``{"ok": false, "error": ...}``). The service
ends when the control socket closes (the kernel manager's process is gone) or on SIGTERM.

It answers each ``check()`` with what the graded cell prints and the points: it grades the cells the kernel
sent, one request at a time, in the order they came, in one pytest session for a seed (:func:`grade`). It
believes nothing else the kernel says: the notebook's folder is the one the kernel manager named, device and seed come from this process's environment
(``GRADE_DEVICE``, ``GRADE_SEED``, as for nbgrader's own process), never from the notebook (a
``check(..., seed=N)`` in a handed-in notebook is ignored). A class is graded on one seed: without
``GRADE_SEED``, every student's notebook of an assignment is graded on the seed :func:`class_seed`
derives from the course and the assignment (printed in each graded cell). A kernel reaches its own socket
only; one that connects and says nothing, or asks again and again, holds up no one but itself: its
requests are read apart from the grading, at most PENDING of them wait, and all go when it is closed.
"""
from __future__ import annotations

import os
import signal
import socket
import sys
import tempfile
from pathlib import Path

from grader.inside import protocol
from grader.errors import GraderError

REQUEST_LIMIT = 8 << 20  # bytes of a kernel's cells
TIMEOUT_S = 60  # for a request to arrive once a kernel has connected, and for the answer to leave


def class_seed(course, assignment) -> int:
    """The seed of nbgrader's autograde for ``assignment``: ``GRADE_SEED``, or one the course and the
    assignment determine, the same for every student and every run."""
    import hashlib

    from grader.config import parse_seed

    given = parse_seed(os.environ.get("GRADE_SEED") or None)
    if given is not None:
        return given
    digest = hashlib.sha256(f"{course.id}/{assignment.id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % 10**6


class _Job:
    """One check() of a kernel: its exercise, the assignment that has it, the seed it is graded on, and the
    connection its answer goes back on."""

    def __init__(self, kernel, connection, cells: list[str], exercise: str, assignment, seed: int):
        self.kernel, self.connection, self.cells = kernel, connection, cells
        self.exercise, self.assignment, self.seed = exercise, assignment, seed
        self.folder: Path | None = None  # where its cells are written out as a submission, while it is graded
        self.answered = False
        self.exercises = (exercise,)  # graded on, the first time: its exercise alone
        self.submission = self.current = None  # its cells' submission; the one under way (a later grading's)
        self.beside = None  # its grading beside its helpers, where it has one
        self.cancelled = False

    def cancel(self, grader):
        """What :func:`_watch` calls once the kernel stops waiting: the grading under way cut short, no later one."""
        def cancel():
            self.cancelled = True
            grader.cancel(self.current)
        return cancel

    def answer(self, reply: dict) -> None:
        from grader.sandbox.leftovers import remove_tree

        self.answered = True
        try:
            protocol.send(self.connection, protocol.encode(reply), timeout=SEND_TIMEOUT_S)
        except (protocol.ChannelClosed, protocol.ChannelTimeout, OSError, ValueError):  # closed meanwhile
            pass
        self.kernel.done(self.connection)
        if self.folder is not None:
            remove_tree(self.folder)


def job_of(item, course) -> _Job | None:
    """The job of a kernel's request, or None: its kernel closed since (dropped), or the request answered
    already (one that is not a check(), or names no exercise of the course)."""
    from grader.platforms.notebook_grading import assignment_of

    kernel, request, connection = item
    with kernel.lock:
        kernel.waiting -= 1
    if kernel.closed:
        return None
    job = _Job(kernel, connection, [], "", None, 0)
    if not isinstance(request, dict) or not isinstance(request.get("exercise"), str) \
            or not isinstance(request.get("cells"), list) or not all(isinstance(c, str) for c in request["cells"]):
        job.answer({"ok": False, "error": "check() sent the grader something it could not read"})
        return None
    try:
        assignment = assignment_of(course, request["exercise"], kernel.cwd)
    except GraderError as error:
        job.answer({"ok": False, "error": str(error)})
        return None
    seed = class_seed(course, assignment)
    return _Job(kernel, connection, request["cells"], request["exercise"], assignment, seed)


def reply_of(result) -> dict:
    """What check() is sent for a graded job: its cell's text and points (and the figure of a wrong pictured
    exercise), or the error that kept it from being graded."""
    from grader.platforms.notebook_grading import describe, points_of

    if isinstance(result, GraderError):
        return {"ok": False, "error": str(result)}
    graded = result.assignments[0].exercises[0]
    # the figure of a wrong pictured exercise: the lesson's own public case, never a hidden one (issue 36)
    figure = graded.figure if graded.status != "passed" else None
    return {"ok": True, "text": describe(graded, result), "points": points_of(graded), "figure": figure}


def grade(jobs, *, course, grader, seed: int) -> None:
    """Grade ``jobs`` (an iterator; each on ``seed``) one after another in one pytest session, as ``grade
    autograde`` grades a class (the suites collected once, grader.grading.grader.Grader.grade_each): each
    check() is a submission of its own, graded on its exercise alone, and answered as soon as it is graded.
    Where a case of it is kept right given a helper (grader.platforms.notebook_grading.kept_given), it is graded
    again beside its helpers and the kernel's notebook graded whole, as the kernel's own path does, before it is
    answered (red team round 30: graded alone, a helper wrong only on its users' calls was charged nowhere).
    A job whose kernel stops waiting for it (its cell interrupted, the kernel closed) is cut short (red team
    round 19: a parting request, or a slow last check, held every later student's check() past nbgrader's cell
    timeout, and they lost their notebooks): :func:`_watch`."""
    import collections

    from grader.platforms import notebook_grading as cells

    graded: list = []  # the one being graded, if any
    stages: collections.deque = collections.deque()  # a job's later gradings, graded before the next job
    wholes: dict = {}  # a notebook's bytes' digest -> its grading whole (one seed): each user's cell reads it

    def each():
        for job in jobs:
            yield job
            while stages:
                yield stages.popleft()

    def prepare(item):
        graded.append(item)
        if isinstance(item, _Stage):
            item.job.current = item.submission
            return item.submission
        item.folder = Path(tempfile.mkdtemp(prefix="grade-kernel-"))
        item.submission = item.current = cells.cells_submission(course, item.assignment, item.cells, item.kernel.cwd,
                                                                item.folder)
        _watch(item, item.cancel(grader))
        return item.submission

    def report(item, result):
        answered(item, result)
        if item in graded:  # (where answering failed, the grader's failure is said below)
            graded.remove(item)

    def answered(item, result):
        job = item.job if isinstance(item, _Stage) else item
        if job.answered:
            return
        if isinstance(result, GraderError) and not (isinstance(item, _Stage) and item.whole):
            job.answer(reply_of(result))
            return
        if not isinstance(item, _Stage):  # graded alone
            kept = cells.kept_given(result, job.assignment, job.exercise)
            if not kept or job.cancelled:
                job.answer(reply_of(cells.the_cells_exercise(result, job.exercise)))
                return
            stages.append(_Stage(job, job.submission, cells.beside_helpers(course, job.assignment, job.exercise,
                                                                          job.submission, kept)))
            return
        if not item.whole:  # graded beside its helpers: its share is read from the notebook graded whole
            job.beside = result
            notebook = cells.whole_notebook(course, job.assignment, job.kernel.cwd)
            key = _digest(job.kernel.cwd / job.assignment.notebook) if notebook is not None else None
            if key in wholes:  # graded whole for another cell of the notebook already
                job.answer(reply_of(cells.the_cells_exercise(job.beside, job.exercise, wholes[key])))
                return
            if notebook is not None and not job.cancelled:
                stages.append(_Stage(job, notebook, None, key))
                return
        whole = result if item.whole and not isinstance(result, GraderError) else None
        if whole is not None and item.key is not None:
            wholes[item.key] = whole
        job.answer(reply_of(cells.the_cells_exercise(job.beside, job.exercise, whole)))

    try:
        grader.grade_each(each(), tuple(course.assignments), seed=seed, prepare=prepare, report=report,
                          assignments_of=lambda item: (item.assignment,), exercises_of=lambda item: item.exercises)
    except Exception as error:  # noqa: BLE001 - the grader's own failure: said in the cell, the service goes on
        for item in (*graded, *stages):  # (a job whose later grading waits is not answered yet either)
            job = item.job if isinstance(item, _Stage) else item
            if not job.answered:
                job.answer({"ok": False, "error": f"the grader failed ({type(error).__name__}: {str(error)[:200]})"})


class _Stage:
    """A later grading of a job's check(): beside its helpers (``exercises``, on the cells' own submission), or the
    kernel's notebook graded whole (``exercises`` None)."""

    def __init__(self, job: _Job, submission, exercises, key: str | None = None):
        self.job, self.submission, self.exercises, self.key = job, submission, exercises, key
        self.assignment, self.whole = job.assignment, exercises is None


def _digest(path: Path) -> str | None:
    """The sha256 of the file at ``path`` (the notebook a kernel's folder holds), or None where it cannot be read."""
    import hashlib

    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _watch(job: _Job, cancel) -> None:
    """Until ``job`` is answered, watch its connection: once the kernel hangs up (or says anything more, which
    no check() does while it waits), ``cancel()`` the grading (grader.grading.grader.Grader.cancel)."""
    import select
    import threading

    def watch():
        while not job.answered:
            try:
                ready = select.select([job.connection], [], [], 0.2)[0]
            except (OSError, ValueError):  # closed: answered meanwhile, or by the kernel's close
                ready = [True]
            if ready and not job.answered:
                cancel()
                return

    threading.Thread(target=watch, daemon=True).start()


class _Requests:
    """The kernels' requests as jobs, in the order they came: those of one seed at a time (:meth:`of_seed`)."""

    def __init__(self, pending, course):
        self.pending, self.course = pending, course
        self.held: _Job | None = None  # the first job of another seed, for the next stream
        self.ended = False

    def next(self) -> _Job | None:
        """The next job, or None once the service ends (and every time after)."""
        if self.held is not None:
            job, self.held = self.held, None
            return job
        while not self.ended:
            item = self.pending.get()
            if item is None:
                self.ended = True
            elif (job := job_of(item, self.course)) is not None:
                return job
        return None

    def of_seed(self, job: _Job):
        """``job`` and those after it graded on its seed; the first of another seed is held for the next."""
        seed = job.seed
        while job is not None:
            if job.seed != seed:
                self.held = job
                return
            yield job
            job = self.next()


PENDING = 4  # a kernel's requests read and waiting to be graded, at most


class _Kernel:
    """One kernel's socket, and the thread that reads its requests for the grading loop."""

    def __init__(self, path: str, cwd: Path, queue):
        import threading

        self.path, self.cwd, self.queue = path, cwd, queue
        self.closed = False
        self.waiting = 0  # its requests in the queue
        self.connections: set[socket.socket] = set()
        self.lock = threading.Lock()
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        os.chmod(path, 0o666)  # the kernel's uid connects; the folder above lets no one else list it
        self.listener.listen(PENDING)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        while not self.closed:
            try:
                connection, _ = self.listener.accept()
            except OSError:  # closed
                return
            with self.lock:
                if self.closed or self.waiting >= PENDING:
                    connection.close()
                    continue
                self.connections.add(connection)
            try:
                request = protocol.decode(protocol.recv(connection, limit=REQUEST_LIMIT, timeout=TIMEOUT_S), limit=0)
            except Exception:  # noqa: BLE001 - whatever a kernel sends ends its own connection, nothing more
                self.done(connection)
                continue
            with self.lock:
                if self.closed:
                    continue
                self.waiting += 1
            self.queue.put((self, request, connection))

    def done(self, connection: socket.socket) -> None:
        with self.lock:
            self.connections.discard(connection)
        connection.close()

    def close(self) -> None:
        with self.lock:
            self.closed = True
            connections, self.connections = list(self.connections), set()
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            connection.close()
        try:
            self.listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.listener.close()
        try:
            os.unlink(self.path)
        except OSError:
            pass


def _control(control: socket.socket, kernels: dict, queue) -> None:
    """The kernel manager's requests, answered as they come, whatever the grading loop is doing (a kernel
    closed while its requests wait is closed at once: they are dropped); None on the queue once it is gone."""
    while True:
        try:
            message = protocol.decode(protocol.recv(control, limit=1 << 16, timeout=None), limit=0)
        except Exception:  # noqa: BLE001 - closed, or not the kernel manager's: the service ends
            queue.put(None)
            return
        _send(control, _managed(message, kernels, queue))


def serve(control: socket.socket, *, course) -> None:
    """Answer the kernel manager on ``control`` and every kernel it opens, until ``control`` closes."""
    import queue as queues
    import threading

    from grader.grading.grader import Grader

    made: dict = {}

    def make():  # the grader and its sandbox start (torch imported twice) while the first kernel starts
        try:
            made["grader"] = Grader(course, device=os.environ.get("GRADE_DEVICE") or "auto", batch=True)
        except GraderError as error:  # e.g. GRADE_DEVICE=cuda without a GPU: every check says so
            made["problem"] = str(error)
        except Exception as error:  # noqa: BLE001 - said in every check, not as a traceback in nbgrader's log
            made["problem"] = f"the grader could not start ({type(error).__name__}: {error})"

    maker = threading.Thread(target=make, daemon=True)
    maker.start()
    pending = queues.Queue()
    kernels: dict[str, _Kernel] = {}
    threading.Thread(target=_control, args=(control, kernels, pending), daemon=True).start()
    requests = _Requests(pending, course)
    try:
        while (job := requests.next()) is not None:
            maker.join()
            grader = made.get("grader")
            if grader is None:
                job.answer({"ok": False, "error": made.get("problem", "the grader could not start")})
                continue
            grade(requests.of_seed(job), course=course, grader=grader, seed=job.seed)
    finally:
        for kernel in list(kernels.values()):
            kernel.close()
        maker.join()
        if made.get("grader") is not None:
            made["grader"].close()


SEND_TIMEOUT_S = 10  # for an answer to leave: a kernel that reads none holds up the others no longer


def _managed(message, kernels: dict, pending) -> dict:
    """The kernel manager's ``open`` or ``close``, done (on the control thread: dict operations alone, each
    atomic, touch ``kernels`` here and in the grading loop); anything else refused."""
    if not isinstance(message, dict):
        return {"ok": False, "error": "not a request of the kernel manager's"}
    if isinstance(message.get("open"), str) and isinstance(message.get("cwd"), str):
        try:
            kernels[message["open"]] = _Kernel(message["open"], Path(message["cwd"]), pending)
        except OSError as error:
            return {"ok": False, "error": f"cannot answer on {message['open']}: {error.strerror}"}
        return {"ok": True}
    if isinstance(message.get("close"), str):
        kernel = kernels.pop(message["close"], None)
        if kernel is not None:
            kernel.close()
        return {"ok": True}
    return {"ok": False, "error": "not a request of the kernel manager's"}


def _send(control: socket.socket, reply: dict) -> None:
    try:
        protocol.send(control, protocol.encode(reply), timeout=SEND_TIMEOUT_S)
    except (protocol.ChannelClosed, protocol.ChannelTimeout, OSError, ValueError):
        pass


def main() -> None:
    from grader.config import load_course

    from grader.sandbox import leftovers

    root, control = sys.argv[1:3]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    course = load_course(Path(root))
    # what runs killed before this one left in the temporary folder (their kernels' folders, their services'
    # scratch): swept here, before this process makes its own scratch the default (its grader's sweep looks
    # there only; red team round 19: every failed run's kernel folders stayed, copies of the notebooks in them)
    leftovers.sweep()
    # the kernels' cells written out for grading go in a folder named after this process: if it is killed,
    # the next grader to start removes it (grader.sandbox.leftovers)
    scratch = leftovers.scratch("grade-service")
    tempfile.tempdir = str(scratch)
    try:
        with socket.socket(fileno=int(control)) as channel:
            serve(channel, course=course)
    finally:
        leftovers.remove_tree(scratch)


if __name__ == "__main__":
    main()
