"""nbgrader, used through its own API: the release notebooks come from ``generate_assignment``.

nbgrader's source directory is ``solutions/`` and its release directory ``assignments/`` (the same
mapping as ``nbgrader_config.py`` at the course root, for instructors who run nbgrader themselves).
Module files are ignored when nbgrader copies an assignment: the ``.py`` stubs come from
:func:`grader.release.stub_source`, never from a copy of the solution.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

from grader.config import Assignment, Course
from grader.errors import GraderError

IGNORE = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", "*.py", "gradebook.db"]


def nbgrader_config(course: Course, *, release_directory: str = "assignments", db_path: Path | None = None):
    from traitlets.config import Config

    config = Config()
    config.CourseDirectory.root = str(course.root)
    config.CourseDirectory.course_id = course.id
    config.CourseDirectory.source_directory = "solutions"
    config.CourseDirectory.release_directory = release_directory
    config.CourseDirectory.ignore = IGNORE
    config.CourseDirectory.db_url = f"sqlite:///{db_path or course.root / 'gradebook.db'}"
    config.Exchange.root = str(course.root / ".exchange")
    return config


def generate_release_notebooks(course: Course, assignments: tuple[Assignment, ...], release_root: Path) -> None:
    """Run nbgrader's generate_assignment for each assignment, writing ``release_root/<id>/<notebook>``.

    Whatever else ``release_root/<id>/`` held is removed by nbgrader (``force``): write stubs after.
    """
    from nbgrader.apps import NbGraderAPI

    with tempfile.TemporaryDirectory(prefix="grade-nbgrader-") as scratch:
        config = nbgrader_config(course, release_directory=str(release_root), db_path=Path(scratch) / "gradebook.db")
        api = NbGraderAPI(config=config)
        for assignment in assignments:
            result = api.generate_assignment(assignment.id, force=True, create=True)
            if not result.get("success"):
                detail = (result.get("error") or result.get("log") or "").strip().splitlines()
                raise GraderError(f"nbgrader could not generate {assignment.id}: "
                                  f"{detail[-1] if detail else 'no message'}")
