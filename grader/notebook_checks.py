"""The graded cells of the lesson notebooks: ``check("softmax")`` grades one exercise with the grader.

Each autograded cell of a lesson notebook is::

    from grader.notebook_checks import check
    check("softmax")

``check`` grades the code this kernel has run with the same suites and the same isolation as
``grade check`` (whichever suites the course folder has: the hidden ones where the reference is
present, the public ones in a student distribution), prints the exercise's points and feedback, and
leaves the points earned as the cell's value, which nbgrader reads as partial credit. It raises
nothing for a partial score and writes nothing to stderr (nbgrader gives no points to a cell that
did). The notebooks therefore carry no test code of their own, hidden or not.

The code graded is the kernel's input history (every cell run so far, in the order it ran), reduced
to its imports, functions and classes exactly as a ``.ipynb`` submission is (grader.inside.notebook_source):
a notebook run top to bottom grades like the same notebook given to ``grade check``, and like a
``.py`` module holding the same definitions. Cells that import the grader (the graded cells
themselves) and cells that do not parse (they defined nothing in the kernel either) are left out.
Sibling assignments next to the kernel's folder (``../03_causal_attention/``) go along, as
``grade check`` on a whole ``assignments/`` folder would take them, and so does the assignment's own
module beside the notebook where a cell imports from it (``from attention_basics import softmax``):
that import gives the graded code the module's function, as it gave the kernel.

This module is the client only (a confined kernel holds it and nothing of the grading): the grading
is grader.platforms.notebook_grading's, in the kernel's process or in the grading service outside its sandbox.
One grader is kept per kernel (per ``nbgrader autograde`` run, in its grading service), so only the first check pays for
starting it. ``GRADE_SEED`` and ``GRADE_DEVICE`` in the
environment fix the seed and device of every check (e.g. ``GRADE_SEED=8121 nbgrader autograde ...``);
a kernel whose own cells already used CUDA grades on the CPU (workers forked from it could not use CUDA).
"""
from __future__ import annotations

import ast
import os
from pathlib import Path

from grader.errors import UsageError


def check(exercise: str, *, seed: int | None = None) -> float:
    """Grade ``exercise`` on the code this kernel has run; print the feedback; return the points."""
    shell = _shell()
    if shell is None:
        raise UsageError("check() grades the code a notebook's kernel has run: call it from a notebook cell "
                         "(for a file, run `grade check --submission FILE`)")
    service = os.environ.get("GRADE_SERVICE")
    if service:  # a kernel in nbgrader's sandbox: the grader is outside it (grader.sandbox.kernel_boundary)
        return _check_by_service(service, exercise, seed, history(shell))
    from grader.config import find_course_root, load_course
    from grader.platforms.notebook_grading import assignment_of, describe, grade_cells, points_of

    course = load_course(find_course_root())
    assignment = assignment_of(course, exercise, Path.cwd())
    result = grade_cells(course, assignment, exercise, history(shell), cwd=Path.cwd(), seed=seed)
    graded = result.assignments[0].exercises[0]
    print(describe(graded, result))
    _show(graded.figure if graded.status != "passed" else None)
    note = module_wins(Path.cwd() / assignment.module, exercise, history(shell))
    if note:
        print(note)
    if not defines(history(shell), exercise):
        print(f"This kernel has not run a cell that defines {exercise}: run that cell, then this one.")
    return points_of(graded)


def _check_by_service(path: str, exercise: str, seed: int | None, cells: list[str]) -> float:
    """Ask the grading service outside this kernel's sandbox; print its text; return its points."""
    import socket

    from grader.inside import protocol

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.connect(path)
        protocol.send(connection, protocol.encode({"exercise": exercise, "cells": cells, "seed": seed}), timeout=60)
        reply = protocol.decode(protocol.recv(connection, limit=1 << 20, timeout=None), limit=0)
    if not reply.get("ok"):
        raise UsageError(reply.get("error", "the grader could not grade this cell"))
    print(reply["text"])
    _show(reply.get("figure"))  # a service that sends the figure (grader/grading/pictures.py) has it drawn here
    if not defines(cells, exercise):
        print(f"This kernel has not run a cell that defines {exercise}: run that cell, then this one.")
    return reply["points"]


def _show(figure) -> None:
    """Draw a wrong exercise's output beside the right one, on the lesson's data (grader/grading/pictures.py),
    as the cell's image; nothing where there is none, or where matplotlib is missing."""
    if not isinstance(figure, dict):
        return
    try:
        from grader.reporting.figures import show

        show(figure)
    except ImportError:  # no matplotlib or IPython.display here: the text above says it all
        pass


def defines(cells: list[str], name: str) -> bool:
    """Whether one of ``cells`` (that parses) defines ``name`` at the top level, or imports it (``from
    attention_basics import softmax``: the module's, which the kernel ran and check() grades)."""
    from grader.inside.notebook_source import history_notebook, without_magics

    for cell in history_notebook(cells)["cells"]:  # those left hold no syntax error once magics are out
        tree = ast.parse(without_magics(cell["source"]))
        if any((isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name)
               or (isinstance(node, ast.ImportFrom) and any((a.asname or a.name) == name for a in node.names))
               for node in tree.body):
            return True
    return False


def module_wins(module: Path, exercise: str, cells: list[str]) -> str | None:
    """The line that says ``grade check`` on this folder grades ``exercise`` from ``module``, not from the
    notebook (graded_source.py's rule): the module has it written, not as the stub, and not as in these cells."""
    from grader.inside.notebook_source import history_notebook, without_magics
    from grader.grading.graded_source import definitions

    try:
        text = module.read_text(encoding="utf-8")
        theirs = definitions(ast.parse(text), text, shapes=True).get(exercise)
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return None
    ours, imported = None, False
    for cell in history_notebook(cells)["cells"]:
        source = without_magics(cell["source"])
        tree = ast.parse(source)
        ours = definitions(tree, source, shapes=True).get(exercise, ours)
        for node in tree.body:  # the last of a definition and an import of the module's own wins
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == exercise:
                imported = False
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module == module.stem and \
                    any(a.name == exercise and (a.asname or a.name) == exercise for a in node.names):
                imported = True
    if theirs is None or imported or (ours is not None and ours.same_as(theirs)):
        return None  # (imported: check() grades the module's own, as grade check does)
    return (f"Note: `grade check` on this folder grades {exercise} from {module.name}, not from this notebook: "
            f"{module.name} has its own {exercise} written, and the module wins.")


def history(shell) -> list[str]:
    """The kernel's cells as typed (magics included), in the order they ran; item ``n`` is ``In[n]``."""
    return list(shell.history_manager.input_hist_raw)


def _shell():
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return get_ipython()


