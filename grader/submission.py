"""Finding what a submission holds, and giving the worker its own copy of it.

A submission is a folder shaped like ``assignments/`` (one sub-folder per assignment id), one
assignment folder, one ``.py`` module or one ``.ipynb`` notebook. In an assignment folder the
``.py`` module is graded, with the notebook beside it laid over it where the notebook writes what
the module leaves a stub (grader/grading/graded_source.py); the notebook alone is graded when there is no
module, or when given directly.

What is inside a submission folder is read without following links: a module, a notebook or an
assignment folder that is a symbolic link (to the reference, to a hidden suite, to ``/proc/self/...``)
makes the submission an error, and files are copied from descriptors opened with ``O_NOFOLLOW``.
A notebook beside a module that is not a regular file (a link, a folder, a device) or is too large is
not copied: the module is graded, and the report says the notebook was ignored (grader/grading/graded_source.py).
The path the user names on the command line is taken as it is, links included.
"""
from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from grader.config import Course
from grader.errors import SubmissionError
from grader.inside.notebook_source import LIMITS as NOTEBOOK_LIMITS


@dataclass(frozen=True)
class Submission:
    name: str
    path: Path
    sources: tuple[tuple[str, Path], ...]  # (assignment id, module or notebook), for what was found
    overlays: tuple[tuple[str, Path], ...] = ()  # (assignment id, the notebook beside its module)
    # (assignment id, the assignment's module file, named as the course names it, beside a notebook graded alone,
    # whose cells import it by that name): a kernel's module, which check() hands in with the kernel's history
    # (grader.inside.importer.exec_as_module); copied beside the notebook, never graded as the module
    beside: tuple[tuple[str, Path], ...] = ()

    def source(self, assignment_id: str) -> Path | None:
        return dict(self.sources).get(assignment_id)


def resolve_submission(path: Path, course: Course) -> Submission:
    path = Path(path)
    if not path.exists():
        raise SubmissionError(f"no such file or folder: {path}")
    by_module = {a.module: a.id for a in course.assignments}
    by_notebook = {a.notebook: a.id for a in course.assignments}
    if path.is_file():
        if path.suffix == ".py":
            names, kind = by_module, "module"
        elif path.suffix == ".ipynb":
            names, kind = by_notebook, "notebook"
        else:
            raise SubmissionError(f"{path} is neither a Python module (.py) nor a notebook (.ipynb)")
        assignment_id = names.get(path.name) or assignment_of_file(path, course)
        if assignment_id is None:
            raise SubmissionError(f"{path.name} is not a {kind} of this course (expected one of: {', '.join(names)}, "
                                  f"or a file that defines the exercises of one of them)")
        return Submission(path.stem, path, ((assignment_id, path),))
    sources = [(a.id, found) for a in course.assignments if (found := _find_in(path / a.id, a, path))]
    if not sources:  # one assignment folder, or a folder of loose modules and notebooks
        sources = [(a.id, found) for a in course.assignments if (found := _find_in(path, a, path))]
        if not sources:
            sources = _by_content(path, course)
        inner = path / course.layout.assignments.name
        if not sources and inner.is_dir() and not inner.is_symlink():  # a checkout's root, an unpacked assignments.zip
            found = resolve_submission(inner, course)
            return Submission(path.resolve().name, path, found.sources, found.overlays)
        if not sources:
            raise SubmissionError(f"{path} holds no assignment of this course{_found_instead(path)}: expected "
                                  f"assignment folders such as {course.assignments[0].id}/ or a file such as "
                                  f"{course.assignments[0].module}")
    overlays = [(a, notebook) for a, found in sources  # whatever it is (a link is not followed): WorkingCopy
                if found.suffix == ".py" and os.path.lexists(notebook := found.parent / course.assignment(a).notebook)]
    return Submission(path.resolve().name, path, tuple(sources), tuple(overlays))


FILE_LIMIT = NOTEBOOK_LIMITS.file_bytes  # bytes of one module or notebook
_RENAMED = re.compile(r"^(?P<stem>.+?)(?: ?\((?P<n>\d+)\)|-(?P<m>\d+)| copy(?: (?P<c>\d+))?)?(?P<suffix>\.py|\.ipynb)$",
                      re.IGNORECASE)


def course_name(name: str, course: Course) -> tuple[str, str] | None:
    """``(assignment id, the file name the course knows)`` for a file's name, forgiving what browsers
    and people do to names (``attention_basics (1).py``, ``attention_basics-2.py``, ``attention_basics
    copy.py``, any case); None for a file of no assignment."""
    known = course_copy(name, course)
    return known[:2] if known else None


def course_copy(name: str, course: Course) -> tuple[str, str, int] | None:
    """As :func:`course_name`, with the copy's number (0 for the name itself): of several files of one
    name, every path grades the name itself, else the latest download (the highest number)."""
    for assignment in course.assignments:
        if (known := _renamed(name, assignment)) is not None:
            return assignment.id, known[0], known[1]
    return None


def _renamed(name: str, assignment) -> tuple[str, int] | None:
    """``(the assignment's file name, the copy's number)`` where ``name`` is one of its module's or
    notebook's names as a browser or an LMS renames them (0 for the name itself), else None."""
    match = _RENAMED.match(name)
    if not match:
        return None
    wanted = (match["stem"] + match["suffix"]).lower()
    number = int(match["n"] or match["m"] or match["c"] or (1 if " copy" in name.lower() else 0))
    for known in (assignment.module, assignment.notebook):
        if known.lower() == wanted:
            return known, number
    return None


def assignment_of_file(path: Path, course: Course) -> str | None:
    """The assignment a module or notebook of another name is for (``my_work.ipynb``): by its name
    (:func:`course_name`), else the one whose exercises it defines most of (a tie: none). Read, not run."""
    import ast

    from grader.inside.notebook_source import code_problem, parsed_cells, read_bounded

    known = course_name(path.name, course)
    if known is not None:
        return known[0]
    definition = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    try:  # read within grader.inside.notebook_source's limits, each cell's tree dropped with it
        data = read_bounded(path)
        if path.suffix == ".ipynb":
            defined = {n.name for _, kept, _ in parsed_cells(data, path.name, cell_chars=NOTEBOOK_LIMITS.cell_chars)
                       for n in kept or () if isinstance(n, definition)}
        else:
            text = data.decode("utf-8")
            if code_problem(text):
                return None
            defined = {n.name for n in ast.parse(text).body if isinstance(n, definition)}
    except (SyntaxError, ValueError, OSError, RecursionError, MemoryError):  # NotebookError is a ValueError
        return None
    counts = sorted(((len(defined & set(a.exercises)), a.id) for a in course.assignments), reverse=True)
    if not counts or counts[0][0] == 0 or (len(counts) > 1 and counts[1][0] == counts[0][0]):
        return None
    return counts[0][1]


def _find_in(folder: Path, assignment, top: Path) -> Path | None:
    """The module (else the notebook) in ``folder``, refusing links anywhere below ``top``."""
    for name in (assignment.module, assignment.notebook):
        candidate = folder / name
        _no_link(candidate, top)
        if candidate.is_file():
            return candidate
    return _renamed_in(folder, assignment, top)


def _renamed_in(folder: Path, assignment, top: Path) -> Path | None:
    """A file of the assignment that a browser or an LMS renamed (``attention_basics (1).py``,
    ``attention_basics-2.py``, ``Attention_Basics.py``): the module's before the notebook's, and of several
    copies the latest download (the highest number), as every path reads an upload."""
    try:
        entries = list(folder.iterdir()) if folder.is_dir() and not folder.is_symlink() else []
    except OSError:
        return None
    ranked = []
    for entry in entries:
        if (known := _renamed(entry.name, assignment)) is not None:
            _no_link(entry, top)
            if entry.is_file():
                ranked.append((known[0] != assignment.module, -known[1], entry.name, entry))
    return min(ranked)[-1] if ranked else None


def _by_content(folder: Path, course: Course) -> list[tuple[str, Path]]:
    """A folder's modules and notebooks of other names (``my_work.ipynb``), each the assignment whose
    exercises it defines (:func:`assignment_of_file`); one file an assignment, the module before the
    notebook, else none of that assignment's."""
    try:
        files = sorted(e for e in folder.iterdir() if e.suffix in (".py", ".ipynb") and not e.is_symlink()
                       and e.is_file())
    except OSError:
        return []
    found: dict[str, list[Path]] = {}
    for file in files:
        if (assignment_id := assignment_of_file(file, course)) is not None:
            found.setdefault(assignment_id, []).append(file)
    chosen = []
    for assignment in course.assignments:
        mine = found.get(assignment.id, [])
        modules = [f for f in mine if f.suffix == ".py"]
        if len(modules) == 1 or (not modules and len(mine) == 1):
            chosen.append((assignment.id, (modules or mine)[0]))
    return chosen


def _found_instead(folder: Path) -> str:
    """`` (found a.txt, b.pdf)``: what a folder holds instead of an assignment, for the error's line."""
    try:
        names = sorted(e.name for e in folder.iterdir() if not e.name.startswith("."))
    except OSError:
        return ""
    return f" (found {listed(names)})" if names else " (it is empty)"


def listed(names: list[str], shown: int = 5) -> str:
    """``a, b, c and 2 more``: the first ``shown`` of ``names``, for a one-line message."""
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def _no_link(path: Path, top: Path) -> None:
    """Raise SubmissionError if ``path``, or a folder between ``top`` and it, is a symbolic link."""
    relative = path.relative_to(top)
    current = top
    for part in relative.parts:
        current = current / part
        if current.is_symlink():
            raise SubmissionError(f"{current} is a symbolic link: submit the file itself (links are not followed)")


class WorkingCopy:
    """A private copy of the submission's modules and notebooks, one folder per assignment."""

    def __init__(self, submission: Submission, parent: Path | None = None, relative: bool = False):
        """``relative``: messages name the student's files from the submission's own folder
        (``01_attention_basics/attention_basics.py``), as a batch shows them: never the grader's paths
        (nor the folder's name, which an anonymised report hides)."""
        self.root = Path(tempfile.mkdtemp(prefix="grade-", dir=parent))
        self.sources: dict[str, Path] = {}
        self.overlays: dict[str, Path] = {}  # the notebook beside an assignment's module
        self.display: dict[str, str] = {}  # copy folder -> the student's own folder, for messages
        try:
            for assignment_id, source in submission.sources:
                folder = self.root / assignment_id
                folder.mkdir()
                self.sources[assignment_id] = copy_file(source, folder / source.name)
                self.display[str(folder)] = _relative(source.parent, submission.path) if relative else str(source.parent)
            for assignment_id, notebook in submission.overlays:
                target = self.root / assignment_id / notebook.name
                try:
                    copy_file(notebook, target)
                except SubmissionError:  # not a regular file, or too large: not copied, so ignored (and said so)
                    pass
                self.overlays[assignment_id] = target  # absent when refused: source_choice.choose says why
            for assignment_id, module in submission.beside:
                source = self.sources.get(assignment_id)
                if source is not None and source.suffix == ".ipynb":
                    try:  # not a regular file, or too large: not copied (the notebook is then its own module)
                        copy_file(module, source.with_name(module.name))
                    except SubmissionError:
                        pass
        except BaseException:
            self.close()
            raise

    @property
    def folders(self) -> tuple[str, ...]:
        return tuple(str(path.parent) for path in self.sources.values())

    def close(self) -> None:
        try:
            shutil.rmtree(self.root, ignore_errors=True)
        except RecursionError:  # a tree deeper than Python's recursion: left in the sandbox's scratch, which
            pass  # goes whole with grader.sandbox.leftovers.remove_tree


def _relative(folder: Path, root: Path) -> str:
    """``folder`` as seen from the submission ``root`` (a folder, or the one file handed in)."""
    base = root if root.is_dir() else root.parent
    try:
        return str(folder.relative_to(base))
    except ValueError:
        return folder.name


def copy_file(source: Path, target: Path) -> Path:
    """Copy a regular file's bytes, never through a link, at most FILE_LIMIT of them."""
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        raise SubmissionError(f"{source} cannot be read ({exc.strerror}; links are not followed)") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # a folder, a device, a pipe: nothing is read of it
            raise SubmissionError(f"{source} is not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as stream:
            data = stream.read(FILE_LIMIT + 1)
    except OSError as exc:
        raise SubmissionError(f"{source} cannot be read ({exc.strerror})") from None
    finally:
        os.close(fd)
    if len(data) > FILE_LIMIT:
        raise SubmissionError(f"{source} is larger than {FILE_LIMIT >> 20} MiB")
    target.write_bytes(data)
    return target
