"""Grading a notebook kernel's cells: what :func:`grader.notebook_checks.check` asks for.

The code graded is the kernel's input history (every cell run so far, in the order it ran), reduced
to its imports, functions and classes exactly as a ``.ipynb`` submission is
(grader.inside.notebook_source): written out as a submission folder with the sibling assignments
found beside the kernel's folder (and the assignment's own module beside it, where the cells import
from it: :func:`kernels_module`), and graded by a :class:`grader.grading.grader.Grader`. Where the kernel is
confined (nbgrader's kernels, grader.sandbox.kernel_boundary), this runs in the grading service outside
its sandbox (grader.platforms.notebook_service); elsewhere in the kernel's own process, with one Grader kept per
kernel and the kernel left as it was: its imports (no reference module stays importable by name),
``sys.path``, torch's thread count and random state, nothing on stderr.
"""
from __future__ import annotations

import atexit
import contextlib
import dataclasses
import functools
import io
import json
import os
import shutil
import sys
import tempfile
import warnings
import weakref
from pathlib import Path

from grader.errors import DeviceError, UsageError
from grader.inside.notebook_source import history_notebook

_GRADERS: dict = {}  # (course root, device) -> Grader, for the life of the kernel
_ASIDE = weakref.WeakKeyDictionary()  # Grader -> (reference modules, their sys.path folders) between checks


def assignment_of(course, exercise: str, cwd: Path):
    """The assignment that has ``exercise``; where several have it, the one whose folder we are in."""
    owners = [a for a in course.assignments if exercise in a.exercises]
    if len(owners) > 1:
        owners = [a for a in owners if a.id == cwd.name] or owners
    if len(owners) != 1:
        known = ", ".join(name for a in course.assignments for name in a.exercises)
        where = "several assignments" if owners else "no assignment"
        raise UsageError(f"{where} of this course has an exercise {exercise!r} (exercises: {known})")
    return owners[0]


def write_submission(course, assignment, cells: list[str], cwd: Path, into: Path) -> Path:
    """A folder like ``assignments/``: the history as ``<id>/<notebook>``, and the sibling assignments
    found beside ``cwd`` (a module, else a notebook), which the graded code may import."""
    folder = into / assignment.id
    folder.mkdir(parents=True)
    (folder / assignment.notebook).write_text(json.dumps(history_notebook(cells)), encoding="utf-8")
    for other in course.assignments:
        if other.id == assignment.id:
            continue
        for name in (other.module, other.notebook):
            found = cwd.parent / other.id / name
            if found.is_file():
                (into / other.id).mkdir()
                shutil.copy(found, into / other.id / name)
                break
    return into


def points_of(graded) -> float:
    """The points a graded cell gives nbgrader: the exercise's score, or 0 where a check of it could not be
    graded (status grader-error: its score counts only the checks that ran, so it is no valid score; red
    team round 18 made checks fail that way and the cell printed full points). What the cell prints says
    the grader failed, for the instructor's own grade (``grade autograde`` leaves it blank)."""
    from grader.results import GRADER_ERROR

    return 0.0 if graded.status == GRADER_ERROR else graded.score


def grade_cells(course, assignment, exercise: str, cells: list[str], *, cwd: Path, seed: int | None = None,
                device: str | None = None, grader=None, memo: bool = False):
    """Grade one exercise of ``assignment`` on the code of ``cells`` (a kernel's history), with
    ``grader`` or the kernel's own; ``memo``: the reference's results kept for the next grading on the
    same cases (a grading service's, which grades a class on one seed; never a kernel's own, which would
    hold them in the student's process)."""
    from grader.config import parse_seed

    seed = seed if seed is not None else parse_seed(os.environ.get("GRADE_SEED") or None, "GRADE_SEED")
    from_environment = not device and os.environ.get("GRADE_DEVICE")
    device = device or os.environ.get("GRADE_DEVICE") or "auto"
    try:
        grader = grader or _grader(course, device)
    except DeviceError as error:  # the notebook's user set GRADE_DEVICE, never --device
        if not from_environment:
            raise
        raise DeviceError(str(error).replace(f"--device {device}", f"GRADE_DEVICE={device}")
                          .replace("use --device", "set GRADE_DEVICE to")) from None
    with tempfile.TemporaryDirectory(prefix="grade-kernel-") as scratch, _kernel_untouched(course, grader):
        submission = cells_submission(course, assignment, cells, cwd, Path(scratch))
        result = grader.grade(submission, (assignment,), seed=seed, exercises=(exercise,), memo=memo)
        whole = None
        kept = kept_given(result, assignment, exercise)
        if kept:
            graded = beside_helpers(course, assignment, exercise, submission, kept)
            result = grader.grade(submission, (assignment,), seed=seed, exercises=graded, memo=memo)
            whole = notebook_graded_whole(course, assignment, cwd, grader, seed, memo)
    return the_cells_exercise(result, exercise, whole)


def kept_given(result, assignment, exercise: str) -> set[str]:
    """The other exercises of ``assignment`` that ``exercise``'s cases in ``result`` (its grading alone) were
    kept right given. A case kept so holds only where that helper lost points, and moves them
    (grader.grading.charges), so where there are any the cell is graded again beside its helpers
    (:func:`beside_helpers`) and its share read from the notebook graded whole (:func:`notebook_graded_whole`); a
    right exercise costs one grading. Both of a cell's paths do so: the kernel's own (:func:`grade_cells`) and the
    grading service of nbgrader's sandboxed kernels (grader.platforms.notebook_service.grade; red team round 30:
    that path graded each cell alone, and a softmax wrong only on the calls simple_self_attention makes was charged
    nowhere)."""
    graded = result.assignments[0]
    ours = next((e for e in graded.exercises if e.name == exercise), None)
    if ours is None:
        return set()
    names = {name for c in ours.checks if c.status == "passed"
             for name in (c.forgiven_by, *c.forgiven_also, *c.forgiven_either)}
    return (names & set(assignment.exercises)) - {exercise}


def beside_helpers(course, assignment, exercise: str, submission, kept: set[str]) -> tuple[str, ...]:
    """The exercises a cell of ``exercise`` is graded on the second time: itself, the helpers its code calls
    (:func:`helpers_of`) and those its kept cases name (``kept``: the reading may miss one the suite's blame found)."""
    return tuple(dict.fromkeys((exercise, *helpers_of(course, assignment, exercise, submission), *sorted(kept))))


def whole_notebook(course, assignment, cwd: Path):
    """The Submission of the assignment's notebook beside the kernel (nbgrader's submitted file, a course
    checkout's), or None where there is none (a link is not followed) or it cannot be read."""
    from grader.errors import GraderError
    from grader.submission import resolve_submission

    path = cwd / assignment.notebook
    if not path.is_file() or path.is_symlink():
        return None
    try:
        return resolve_submission(path, course)
    except GraderError:
        return None


def notebook_graded_whole(course, assignment, cwd: Path, grader, seed: int, memo: bool):
    """The assignment's notebook beside the kernel (:func:`whole_notebook`) graded whole, or None where there is
    none or it cannot be graded: which exercises' cases are kept given a helper, all of them, whatever of them the
    kernel has run so far (red team round 29b: three classes kept given one scaled_dot_product_attention, each
    cell seeing its own alone)."""
    from grader.errors import GraderError

    submission = whole_notebook(course, assignment, cwd)
    if submission is None:
        return None
    try:
        return grader.grade(submission, (assignment,), seed=seed, memo=memo)
    except GraderError:
        return None


def helpers_of(course, assignment, exercise: str, submission) -> tuple[str, ...]:
    """The exercises of ``assignment`` that ``exercise``'s code calls, read from the kernel's files
    (grader.grading.chains.helpers_named): graded beside it, so that a case kept right given one holds only where
    that helper lost points, and moves them (grader.grading.charges), as in ``grade check`` (red team round 29a's
    N1: a softmax wrong only on the square inputs simple_self_attention gives it, graded alone, kept every
    case)."""
    from grader.grading.chains import helpers_named

    paths = [p for a, p in (*submission.sources, *submission.overlays, *submission.beside) if a == assignment.id]
    modules = frozenset(a.module_name for a in course.assignments)
    return helpers_named(paths, exercise, set(assignment.exercises), modules)


def the_cells_exercise(result, exercise: str, whole=None):
    """``result`` of a cell's grading with the one exercise it grades left in it. Its helpers' own cells never
    grade what uses them, so what the charges of its kept cases take from a helper graded beside it
    (``ExerciseResult.charges``) is taken from this cell (``carried``): its share, by the points its cases kept, of
    what the kept cases of all the helper's users take from it in ``whole`` (:func:`notebook_graded_whole`), so that
    a notebook's cells add up to what ``grade check`` gives the same notebook; without ``whole``, what the cases
    of this cell alone take (each cell of several users then takes the helper's own loss into account alone, and
    the cells may add up to more or less: red team round 29b's M2 to M4 and F1)."""
    assignment = result.assignments[0]
    ours = next(e for e in assignment.exercises if e.name == exercise)
    helpers = whole.assignments[0].exercises if whole is not None else assignment.exercises
    for helper in helpers:
        if helper.name == exercise or not any(c[0] == exercise for c in helper.charges):
            continue
        mine = sum(points for user, _, points in helper.charges if user == exercise)
        kept = sum(points for _, _, points in helper.charges)
        taken = (helper.own_score - helper.score) * (mine / kept if kept else 0.0)
        if taken > 0:
            ours.carried.append((helper.name, round(taken, 4)))
    assignment.exercises = [ours]
    return result


def cells_submission(course, assignment, cells: list[str], cwd: Path, into: Path):
    """The Submission of a kernel's history ``cells`` for ``assignment``, written in the folder ``into``
    (:func:`write_submission`), with the assignment's module beside the kernel where its cells import it."""
    from grader.submission import resolve_submission

    submission = resolve_submission(write_submission(course, assignment, cells, cwd, into / "kernel"), course)
    module = kernels_module(course, assignment, cells, cwd)
    if module is not None:
        submission = dataclasses.replace(submission, beside=((assignment.id, module),))
    return submission


def kernels_module(course, assignment, cells: list[str], cwd: Path) -> Path | None:
    """The assignment's module beside the kernel (``cwd``), where its cells import it by its own name
    (``from attention_basics import softmax``): what those imports gave the kernel, handed in with its
    history so that they give the graded code the same (grader.inside.importer.exec_as_module). None where
    no cell imports it, where there is none (a link is not followed), or where it is the reference's
    (an instructor's kernel in solutions/: no right implementation goes into a student's process)."""
    import ast

    from grader.inside.notebook_source import without_magics
    from grader.sandbox.confine import blocked_paths

    module = cwd / assignment.module
    if not module.is_file() or module.is_symlink():
        return None
    secret = tuple(folder + os.sep for folder in blocked_paths(course))
    if os.path.realpath(module).startswith(secret):
        return None
    name = assignment.module_name
    for cell in history_notebook(cells)["cells"]:  # those left parse, once magics are out
        for node in ast.walk(ast.parse(without_magics(cell["source"]))):
            if (isinstance(node, ast.ImportFrom) and not node.level and node.module == name) or \
                    (isinstance(node, ast.Import) and any(alias.name == name for alias in node.names)):
                return module
    return None


def describe(exercise, result) -> str:
    """What the graded cell prints: points, status, misconceptions and feedback, as ``grade check``."""
    tags = f"  [{', '.join(exercise.misconceptions)}]" if exercise.misconceptions else ""
    lines = [f"{exercise.name}: {points_of(exercise):g}/{exercise.max_score:g} points, {exercise.status}{tags}"]
    if exercise.status != "passed":
        lines += ["    " + line for line in exercise.feedback.splitlines()]
    else:
        lines.append("    " + exercise.feedback)
    lines.append(f"seed {result.seed}, device {result.device}, {result.duration_s:.1f} s "
                 f"(check({exercise.name!r}, seed={result.seed}) grades these inputs again)")
    return "\n".join(lines)


def _grader(course, device: str):
    from grader.grading.grader import Grader

    key = (str(course.root), device)
    grader = _GRADERS.get(key)
    if grader is not None and not _alive(grader):
        grader.close()
        grader = None
    if grader is None:
        import torch

        threads = torch.get_num_threads()
        # the zygote, and every worker after it, writes nowhere the cell shows and has none of the
        # student's modules that the kernel imported (a worker imports them from the submission)
        with _silent_descriptors(), _without_modules(_students_modules(course)):
            grader = _GRADERS[key] = Grader(course, device=kernel_device(device))
        atexit.register(grader.close)  # when the kernel shuts down: its sandbox and scratch go with it
        torch.set_num_threads(threads)  # the kernel's own; grading sets its own (_kernel_untouched)
    return grader


def _students_modules(course) -> list[str]:
    """Modules of the kernel that a fresh `grade check` would not have: the course's module names
    (``causal_attention``), whatever they were imported from, and files of the folders that hold
    notebooks and modules (not the grader's, nor a virtualenv's, which may live in the course folder too)."""
    root, here = Path(os.path.realpath(course.root)), Path(os.path.realpath(Path.cwd()))
    from grader.layout import Layout  # here: the kernel's sandbox holds the student-side modules only

    layout = Layout(root)
    folders = [layout.assignments, layout.solutions, layout.submitted, layout.autograded]
    if here != root:
        folders.append(here)
    prefixes = tuple(str(folder) + os.sep for folder in folders)
    names = {assignment.module_name for assignment in course.assignments}
    return [name for name, module in list(sys.modules.items())
            if module is not None and name != "__main__" and name.split(".")[0] != "grader"
            and (name in names or _file_under(module, prefixes))]


def _file_under(module, folders: tuple[str, ...]) -> bool:
    file = getattr(module, "__file__", None)  # None for builtins; torch.ops says "_ops.py"
    return isinstance(file, str) and os.path.isabs(file) and _real_path(file).startswith(folders)


@functools.lru_cache(maxsize=None)
def _real_path(file: str) -> str:
    """A module file's real path, found once: every check looks at every module (a grading service holds
    about 2,000, whose paths took 0.2 s a check to resolve), and an imported module's file stays where it was."""
    return os.path.realpath(file)


@contextlib.contextmanager
def _without_modules(names: list[str]):
    taken = {name: sys.modules.pop(name) for name in names if name in sys.modules}
    try:
        yield
    finally:
        sys.modules.update(taken)


@contextlib.contextmanager
def _silent_descriptors():
    """Descriptors 1 and 2 on /dev/null for a moment: what forks then keeps them. A kernel forwards
    what its descriptors receive to the running cell, and stderr there costs the cell its points."""
    saved = [os.dup(1), os.dup(2)]
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        os.dup2(null, 2)
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for descriptor in (*saved, null):
            os.close(descriptor)


def kernel_device(requested: str) -> str:
    """The device to grade on from this kernel. Workers are forked from it, and a process forked after
    CUDA was initialised cannot use CUDA: once the kernel's own cells have used the GPU, grade on the CPU."""
    import torch

    if requested == "cpu" or not torch.cuda.is_initialized():
        return requested
    if requested == "cuda":
        raise DeviceError("CUDA is already in use in this kernel, so the grader cannot use it: restart the "
                          "kernel and run a check cell before anything that uses the GPU, or run `grade check`")
    return "cpu"


def _alive(grader) -> bool:
    return grader.zygote.alive


@contextlib.contextmanager
def _kernel_untouched(course, grader):
    """Grade without a trace in the kernel: nothing on stderr (nbgrader would give 0 points), no
    warnings, and imports, sys.path, torch's threads and random state as they were.

    The grader imports the reference by module name (``causal_attention``, which the reference of 04
    imports when it builds a wrapper), in this process: while it grades, its modules and folders are
    in sys.modules and sys.path; in between, they are kept aside, so that the kernel's own
    ``import causal_attention`` finds the student's module and never the reference."""
    import torch

    from grader.sandbox.confine import blocked_paths

    modules, path = dict(sys.modules), list(sys.path)
    threads, rng = torch.get_num_threads(), torch.get_rng_state()
    kept_modules, kept_path = _ASIDE.get(grader, ({}, []))
    sys.modules.update(kept_modules)
    sys.path.extend(entry for entry in kept_path if entry not in sys.path)
    torch.set_num_threads(1)  # small tensors: threads would only spin against the worker
    try:
        with contextlib.redirect_stderr(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        secret = tuple(folder + os.sep for folder in blocked_paths(course))
        reference = {name: module for name, module in sys.modules.items() if _file_under(module, secret)}
        _ASIDE[grader] = (reference, [entry for entry in sys.path if entry not in path])
        for name in reference:
            if name in modules:
                sys.modules[name] = modules[name]  # the kernel's own module of that name
            else:
                del sys.modules[name]
        for name in [n for n in modules if sys.modules.get(n) is not modules[n]]:
            sys.modules[name] = modules[name]  # anything else of the kernel's that grading replaced
        sys.path[:] = path
        torch.set_num_threads(threads)
        torch.set_rng_state(rng)
