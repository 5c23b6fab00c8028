"""nbgrader, used through its own API: the release notebooks come from ``generate_assignment``.

nbgrader's source directory is ``solutions/`` and its release directory ``assignments/`` (the same
mapping as ``nbgrader_config.py`` at the course root, for instructors who run nbgrader themselves).
Module files are ignored when nbgrader copies an assignment: the ``.py`` stubs come from
:func:`grader.course.stubs.stub_source`, never from a copy of the solution; :func:`write_stubs` puts them
back after nbgrader's own ``generate_assignment`` has replaced an assignment folder.

The notebooks' graded cells call :func:`grader.notebook_checks.check`, so they hold no hidden tests
and their feedback has none to show. Should an instructor add ``### BEGIN HIDDEN TESTS`` blocks all
the same, :class:`HideHiddenTests` removes them from the feedback (nbgrader's own feedback shows
them: jupyter/nbgrader#917, #1363), and the tracebacks that would quote them.
"""
from __future__ import annotations

import contextlib
import fnmatch
import functools
import os
import sys
import tempfile
from pathlib import Path

from nbgrader.preprocessors import ClearHiddenTests

from grader.config import Assignment, Course
from grader.errors import GraderError

IGNORE = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", "*.py", "gradebook.db"]
FEEDBACK_PREPROCESSORS = ["nbgrader.preprocessors.GetGrades", "grader.course.notebooks.HideHiddenTests",
                          "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor"]


class HideHiddenTests(ClearHiddenTests):
    """In feedback: no hidden-test region in any cell, and no traceback of a cell that had one (it
    quotes the failing line); the error's one-line message stays, as the student's feedback."""

    def preprocess_cell(self, cell, resources, cell_index):
        if cell.cell_type == "code" and self._remove_hidden_test_region(cell):
            for output in cell.get("outputs", []):
                if output.get("output_type") == "error":
                    output["traceback"] = [f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"]
        return cell, resources


def shared_settings(config):
    """What nbgrader_config.py and `grade release` configure alike: what is ignored, the feedback's
    guard, and autograde's kernels in a sandbox (grader.sandbox.kernel_boundary)."""
    from nbgrader.converters import Autograde
    from nbgrader.preprocessors import Execute

    config.CourseDirectory.ignore = IGNORE
    config.GenerateFeedback.preprocessors = FEEDBACK_PREPROCESSORS
    config.Autograde.autograde_preprocessors = [
        "grader.sandbox.kernel_boundary.ConfinedExecute" if step is Execute else step
        for step in Autograde.class_traits()["autograde_preprocessors"].default()]
    return config


def write_stubs(assignment: str = "*", **_):
    """nbgrader's post_convert_hook for generate_assignment (nbgrader_config.py): the stub modules of
    the assignments matching ``assignment``, beside their release notebooks, as `grade release` writes them."""
    from grader.config import find_course_root, load_course
    from grader.course.stubs import stub_source

    course = load_course(find_course_root())
    for chosen in course.assignments:
        if fnmatch.fnmatchcase(chosen.id, assignment or "*"):
            source = course.layout.solution_module(chosen)
            target = course.layout.release_module(chosen)
            if target.parent.is_dir():
                target.write_text(stub_source(source.read_text(encoding="utf-8"), str(source)), encoding="utf-8")


def nbgrader_config(course: Course, *, release_directory: str = "assignments", db_path: Path | None = None):
    from traitlets.config import Config

    config = shared_settings(Config())
    config.CourseDirectory.root = str(course.root)
    config.CourseDirectory.course_id = course.id
    config.CourseDirectory.source_directory = course.layout.solutions.name
    config.CourseDirectory.release_directory = release_directory
    config.CourseDirectory.db_url = f"sqlite:///{db_path or course.layout.gradebook}"
    config.Exchange.root = str(course.root / ".exchange")
    return config


def generate_release_notebooks(course: Course, assignments: tuple[Assignment, ...], release_root: Path) -> None:
    """Run nbgrader's generate_assignment for each assignment, writing ``release_root/<id>/<notebook>``.

    Whatever else ``release_root/<id>/`` held is removed by nbgrader (``force``): write stubs after.
    """
    from nbgrader.apps import NbGraderAPI

    with tempfile.TemporaryDirectory(prefix="grade-nbgrader-") as scratch, interpreter_scripts_on_path(), \
            schema_head_read_here():
        config = nbgrader_config(course, release_directory=str(release_root), db_path=Path(scratch) / "gradebook.db")
        api = NbGraderAPI(config=config)
        for assignment in assignments:
            result = api.generate_assignment(assignment.id, force=True, create=True)
            if not result.get("success"):
                raise GraderError(f"nbgrader could not generate {assignment.id}: "
                                  f"{_cause(result.get('error') or result.get('log') or '')}")


def _cause(log: str) -> str:
    """What went wrong, from nbgrader's log: its last error line that is not "see the above traceback"."""
    lines = [line.strip() for line in log.strip().splitlines() if line.strip()]
    errors = [line for line in lines if ("Error" in line or "error" in line) and "above traceback" not in line]
    return (errors or lines or ["no message"])[-1]


@functools.cache
def schema_head() -> str:
    """The newest revision of nbgrader's gradebook schema, read by alembic's own ScriptDirectory from nbgrader's
    migration scripts: what nbgrader's ``get_alembic_version`` reads by running ``alembic heads`` in a new
    process (2.5 s of every release, whose scratch gradebook is new each time; 0.1 s here)."""
    import nbgrader
    from alembic.script import ScriptDirectory

    return ScriptDirectory(str(Path(nbgrader.__file__).parent / "alembic")).get_current_head()


@contextlib.contextmanager
def schema_head_read_here():
    """nbgrader's gradebooks made meanwhile, in this process, stamped with :func:`schema_head` (the same revision
    ``alembic heads`` prints: tests/grader/course/test_notebooks.py compares them), not by a new process."""
    import nbgrader.api

    before = nbgrader.api.get_alembic_version
    nbgrader.api.get_alembic_version = schema_head
    try:
        yield
    finally:
        nbgrader.api.get_alembic_version = before


@contextlib.contextmanager
def interpreter_scripts_on_path():
    """The running interpreter's scripts folder (a virtual environment's bin/) first on PATH while nbgrader
    works: it runs ``alembic`` by name to set up its gradebook, and a grader started as
    ``.venv/bin/grade`` without the environment activated would otherwise find none."""
    scripts = str(Path(sys.executable).parent)
    before = os.environ.get("PATH")
    os.environ["PATH"] = os.pathsep.join([scripts, *([before] if before else [])])
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("PATH", None)
        else:
            os.environ["PATH"] = before
