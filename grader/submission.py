"""Finding what a submission holds, and giving the worker its own copy of it.

A submission is a folder shaped like ``assignments/`` (one sub-folder per assignment id), one
assignment folder, one ``.py`` module or one ``.ipynb`` notebook. In an assignment folder the
``.py`` module is graded; the notebook is graded when there is no module, or when given directly.
"""
from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from grader.config import Course
from grader.errors import SubmissionError


@dataclass(frozen=True)
class Submission:
    name: str
    path: Path
    sources: tuple[tuple[str, Path], ...]  # (assignment id, module or notebook), for what was found

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
        if path.name not in names:
            raise SubmissionError(f"{path.name} is not a {kind} of this course (expected one of: {', '.join(names)})")
        return Submission(path.stem, path, ((names[path.name], path),))
    sources = [(a.id, found) for a in course.assignments if (found := _find_in(path / a.id, a))]
    if not sources:  # one assignment folder, or a folder of loose modules and notebooks
        sources = [(a.id, found) for a in course.assignments if (found := _find_in(path, a))]
        if not sources:
            raise SubmissionError(
                f"{path} holds no assignment of this course: expected assignment folders such as "
                f"{course.assignments[0].id}/ or a file such as {course.assignments[0].module}"
            )
    return Submission(path.resolve().name, path, tuple(sources))


def _find_in(folder: Path, assignment) -> Path | None:
    for name in (assignment.module, assignment.notebook):
        if (folder / name).is_file():
            return folder / name
    return None


class WorkingCopy:
    """A private copy of the submission's modules and notebooks, one folder per assignment."""

    def __init__(self, submission: Submission, parent: Path | None = None):
        self.root = Path(tempfile.mkdtemp(prefix="grade-", dir=parent))
        self.sources: dict[str, Path] = {}
        self.display: dict[str, str] = {}  # copy folder -> the student's own folder, for messages
        for assignment_id, source in submission.sources:
            folder = self.root / assignment_id
            folder.mkdir()
            self.sources[assignment_id] = Path(shutil.copy2(source, folder / source.name))
            self.display[str(folder)] = str(source.parent)

    @property
    def folders(self) -> tuple[str, ...]:
        return tuple(str(path.parent) for path in self.sources.values())

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
