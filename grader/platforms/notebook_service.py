"""The grading service of one sandboxed notebook kernel (grader.sandbox.kernel_boundary), outside its sandbox.

``python -m grader.platforms.notebook_service SOCKET NOTEBOOK_FOLDER COURSE_ROOT READY_FD``: listens on SOCKET,
writes ``1`` to READY_FD, then answers each ``check()`` of the kernel: it grades the cells the kernel
sent with a grader of its own (student code in its zygote, as ``grade check`` would) and answers with
what the graded cell prints and the points. It believes nothing else the kernel says: the notebook's
folder is the one the kernel was started in, device and seed come from this process's environment
(``GRADE_DEVICE``, ``GRADE_SEED``, as for nbgrader's own process), never from the notebook (a
``check(..., seed=N)`` in a handed-in notebook is ignored). A class is graded on one seed: without
``GRADE_SEED``, every student's notebook of an assignment is graded on the seed :func:`class_seed`
derives from the course and the assignment (printed in each graded cell). It ends when nbgrader's kernel
manager kills it, or when its parent is gone.
"""
from __future__ import annotations

import os
import signal
import socket
import sys
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


def answer(request, *, course, cwd: Path, grader) -> dict:
    """The graded cell's text and points for one request ``{"exercise": str, "cells": [str, ...]}``."""
    from grader.platforms.notebook_grading import assignment_of, describe, grade_cells

    if not isinstance(request, dict) or not isinstance(request.get("exercise"), str) \
            or not isinstance(request.get("cells"), list) or not all(isinstance(c, str) for c in request["cells"]):
        return {"ok": False, "error": "check() sent the grader something it could not read"}
    exercise = request["exercise"]
    try:
        assignment = assignment_of(course, exercise, cwd)
        result = grade_cells(course, assignment, exercise, request["cells"], cwd=cwd,
                             seed=class_seed(course, assignment), grader=grader)
    except GraderError as error:
        return {"ok": False, "error": str(error)}
    graded = result.assignments[0].exercises[0]
    # the figure of a wrong pictured exercise: the lesson's own public case, never a hidden one (issue 36)
    figure = graded.figure if graded.status != "passed" else None
    return {"ok": True, "text": describe(graded, result), "points": graded.score, "figure": figure}


def serve(listener: socket.socket, *, course, cwd: Path) -> None:
    from grader.grading.grader import Grader

    grader = None
    try:
        while True:
            connection, _ = listener.accept()
            with connection:
                try:
                    request = protocol.decode(protocol.recv(connection, limit=REQUEST_LIMIT, timeout=TIMEOUT_S),
                                              limit=0)
                except (protocol.ChannelClosed, protocol.ChannelTimeout, protocol.MalformedMessage,
                        protocol.MessageTooLarge):
                    continue
                if grader is None:
                    device = os.environ.get("GRADE_DEVICE") or "auto"
                    grader = Grader(course, device=device)
                reply = answer(request, course=course, cwd=cwd, grader=grader)
                try:
                    protocol.send(connection, protocol.encode(reply), timeout=TIMEOUT_S)
                except (protocol.ChannelClosed, protocol.ChannelTimeout):
                    continue
    finally:
        if grader is not None:
            grader.close()


def main() -> None:
    from grader.config import load_course
    from grader.inside.syscalls import PR_SET_PDEATHSIG, prctl

    prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    path, cwd, root, ready = sys.argv[1:5]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    course = load_course(Path(root))
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    os.chmod(path, 0o666)  # the kernel's uid connects; the folder above lets no one else list it
    listener.listen(4)
    os.write(int(ready), b"1")
    os.close(int(ready))
    serve(listener, course=course, cwd=Path(cwd))


if __name__ == "__main__":
    main()
