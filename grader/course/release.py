"""``grade release``: regenerate the student's ``assignments/`` from ``solutions/``: each module's
stub (grader/course/stubs.py) and each release notebook (nbgrader's own preprocessors, grader/course/notebooks.py);
``--check`` says what is stale and what leaks (grader/course/leaks.py).

Release never destroys work: a file in an assignment's folder that it would overwrite or remove, and
that is neither what it last wrote there nor what it writes now, is someone's edit (the README invites
a student to try ``grade check`` in this checkout): release refuses, naming it, and ``--force`` keeps a
copy in ``.grade-kept/`` first. What release last wrote is recorded beside the files, in
``assignments/.grade-release.sha256`` (``sha256sum``'s format: ``sha256sum -c`` checks it there). It is
committed with the files it describes, so a fresh clone knows them too (a record kept outside git would
leave every clone with none, and an instructor's first release after changing a solution refused); and
it lies outside every assignment's folder, so neither the distribution (which copies those folders) nor
``--check`` (which compares them) sees it.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from grader.config import Assignment, Course
from grader.course.leaks import Stale, leaks
from grader.course.stubs import stub_source
from grader.errors import GraderError

RECORD = ".grade-release.sha256"  # in assignments/: what release last wrote there, a digest per file
KEPT = ".grade-kept"  # in the course folder (outside assignments/, whose leak scan a right answer would fail)
_JUNK = ("__pycache__", ".ipynb_checkpoints")  # what tools remake; nobody's work


class ReleaseNeedsNbgrader(GraderError):
    """``grade release`` (and ``--out``, ``--check``) on a machine without nbgrader (the notebooks extra)."""


class WorkWouldBeLost(GraderError):
    """``grade release`` would overwrite or remove files in assignments/ that are not what it wrote there."""


@dataclass(frozen=True)
class Kept:
    original: Path  # a file release overwrote or removed
    folder: Path  # the copy's folder, ``.grade-kept/<time>/``, in which it lies as it lay in assignments/


def release(course: Course, assignments: tuple[Assignment, ...], *, check: bool, force: bool = False) -> list:
    """Regenerate ``assignments/<id>/`` (release notebook, then stub module) for each assignment.

    With ``check``, write nothing: generate into a scratch folder and return what differs from the
    committed files (:class:`Stale`), and any committed file that leaks a solution, a hidden test or a
    reference path. Without it, raise :class:`WorkWouldBeLost` before writing anything where work would be
    lost (module docstring); with ``force`` keep a copy of it first, and return those copies (:class:`Kept`).
    """
    import tempfile

    target_root = course.layout.assignments
    # every notebook generated aside first: a failure (nbgrader's, a missing tool) leaves assignments/ as
    # it was, never an assignment folder emptied; --check compares what was generated
    if check:
        return check_release(course, assignments)[0]
    with tempfile.TemporaryDirectory(prefix="grade-release-") as scratch:
        planned = render(course, assignments, Path(scratch))
        work = at_risk(target_root, planned)
        if work and not force:
            raise WorkWouldBeLost(_refusal(course, work))
        kept = _keep(course, work)
        for assignment in assignments:
            _replace(Path(scratch) / assignment.id, target_root / assignment.id)
        _write_record(target_root, planned)
    return kept


def render(course: Course, assignments: tuple[Assignment, ...], into: Path) -> dict[str, dict[str, bytes]]:
    """What release writes, written into ``into/<id>/`` (never assignments/): each assignment's release
    notebook and stub module; returns, per assignment, each file's name and bytes. The tests grade stubs
    from here, not from assignments/, where a course in use holds its edits (issue 45)."""
    import importlib.util

    if importlib.util.find_spec("nbgrader") is None:  # one line, not a traceback (a newcomer's first release)
        raise ReleaseNeedsNbgrader("grade release makes the release notebooks with nbgrader, which is not installed: "
                                   "pip install -e '.[notebooks]' in the course folder (the test extras have it too)")
    from grader.course.notebooks import generate_release_notebooks

    generate_release_notebooks(course, assignments, into)
    planned = {a.id: _planned(course, a, into / a.id) for a in assignments}
    for assignment in assignments:
        (into / assignment.id / assignment.module).write_bytes(planned[assignment.id][assignment.module])
    return planned


def _planned(course: Course, assignment: Assignment, generated: Path) -> dict[str, bytes]:
    """What release writes into ``assignments/<id>/``: each file's name there and its bytes."""
    files = {str(p.relative_to(generated)): p.read_bytes() for p in generated.rglob("*") if p.is_file()}
    files[assignment.module] = stub_of(course, assignment).encode("utf-8")
    return files


# --- what release last wrote, and what it must not destroy -----------------------------------------------
def at_risk(target_root: Path, planned: dict[str, dict[str, bytes]]) -> list[Path]:
    """The files of the planned assignments' folders that writing ``planned`` would overwrite or remove and
    that are someone's work: neither what release last wrote (the record) nor what it writes now (a file
    nbgrader's own ``generate_assignment`` regenerated, or one of a checkout without a record yet)."""
    record = read_record(target_root)
    work = []
    for assignment_id, files in planned.items():
        folder = target_root / assignment_id
        for path in sorted(folder.rglob("*")) if folder.is_dir() else ():
            if not path.is_file() or path.is_symlink() or set(_JUNK) & set(path.relative_to(folder).parts):
                continue
            data, name = path.read_bytes(), str(path.relative_to(folder))
            if record.get(_key(target_root, path)) != _digest(data) and files.get(name) != data:
                work.append(path)
    return work


def check_release(course: Course, assignments: tuple[Assignment, ...]) -> tuple[list, list[Path]]:
    """``--check`` from one generation, writing nothing: what differs from the committed files
    (:class:`Stale`) and any committed file that leaks, and, where something differs, the edits a release
    would refuse to overwrite (:func:`at_risk`), for ``--check``'s advice."""
    import tempfile

    target_root = course.layout.assignments
    with tempfile.TemporaryDirectory(prefix="grade-release-") as scratch:
        planned = render(course, assignments, Path(scratch))
    stale = [item for a in assignments for item in _compare(
        target_root / a.id, {name: data.decode("utf-8") for name, data in planned[a.id].items()})]
    stale += leaks(target_root)
    return stale, at_risk(target_root, planned) if stale else []


def read_record(target_root: Path) -> dict[str, str]:
    """The record of what release last wrote into ``target_root``: its path there -> sha256 hex digest."""
    try:
        lines = (target_root / RECORD).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return {}
    return {name: digest for digest, _, name in (line.partition("  ") for line in lines) if name}


def _write_record(target_root: Path, planned: dict[str, dict[str, bytes]]) -> None:
    """The record, with the entries of the assignments just written replaced by what was written."""
    record = {k: v for k, v in read_record(target_root).items() if k.split("/")[0] not in planned}
    for assignment_id, files in planned.items():
        record.update({f"{assignment_id}/{Path(name).as_posix()}": _digest(data) for name, data in files.items()})
    text = "".join(f"{digest}  {name}\n" for name, digest in sorted(record.items()))
    temporary = target_root / f"{RECORD}.tmp"
    temporary.write_text(text, encoding="utf-8")
    temporary.replace(target_root / RECORD)


def _key(target_root: Path, path: Path) -> str:
    return path.relative_to(target_root).as_posix()


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _refusal(course: Course, work: list[Path]) -> str:
    names = ", ".join(_key(course.layout.assignments, p) for p in work)
    return (f"release would overwrite edits in assignments/ (not what it last wrote there): {names}; move them "
            f"away, or `grade release --force` keeps a copy of each in {KEPT}/ and writes the assignments")


def _keep(course: Course, work: list[Path]) -> list[Kept]:
    """A copy of each file of ``work`` in a new folder ``.grade-kept/<time>/`` of the course, as it lay in
    assignments/."""
    import shutil
    import time

    if not work:
        return []
    stamp = time.strftime("%Y%m%d-%H%M%S")
    folder, n = course.root / KEPT / stamp, 1
    while folder.exists():  # two releases within a second
        n += 1
        folder = course.root / KEPT / f"{stamp}-{n}"
    kept = []
    for path in work:
        copy = folder / _key(course.layout.assignments, path)
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, copy)
        kept.append(Kept(path, folder))
    return kept


def _replace(generated: Path, folder: Path) -> None:
    """``folder`` holding what nbgrader generated into ``generated``, and nothing else (as its ``force``)."""
    import shutil

    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(generated, folder)


def stub_of(course: Course, assignment: Assignment) -> str:
    """The stub module release writes for ``assignment``, from its reference solution."""
    source = course.layout.solution_module(assignment)
    return stub_source(source.read_text(encoding="utf-8"), str(source))


def _compare(folder: Path, expected: dict[str, str]) -> list[Stale]:
    stale = []
    for name, text in expected.items():
        path = folder / name
        if not path.is_file():
            stale.append(Stale(path, "missing"))
        elif path.read_text(encoding="utf-8") != text:
            stale.append(Stale(path, "differs from what `grade release` generates"))
    if folder.is_dir():
        for path in folder.rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts and str(path.relative_to(folder)) not in expected:
                stale.append(Stale(path, "is not generated by `grade release`"))
    return stale


def with_imports(course: Course, chosen) -> tuple:
    """``chosen`` and every assignment whose reference module they import (04's wrapper imports
    ``causal_attention``, 03's), in course order: what grading ``chosen`` needs of the course."""
    import ast

    by_module = {a.module_name: a for a in course.assignments}
    wanted, todo = set(), list(chosen)
    while todo:
        assignment = todo.pop()
        if assignment.id in wanted:
            continue
        wanted.add(assignment.id)
        tree = ast.parse(course.layout.solution_module(assignment).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.module else []
            todo += [by_module[n.split(".")[0]] for n in names if n.split(".")[0] in by_module]
    return tuple(a for a in course.assignments if a.id in wanted)
