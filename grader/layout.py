"""Where a course keeps what: the one place that spells the course's folder and file names.

The instructor's course holds ``solutions/`` (reference modules and source notebooks) and
``suites/hidden/``; a student distribution holds neither, and grades with ``suites/public/`` against
the recorded reference outputs ``suites/public/reference.pt``. Both hold ``assignments/`` (what
students fill in), ``suites/pytest.ini`` and ``suites/lesson/`` (the lesson's data and the known
mistakes the suites name). nbgrader adds ``gradebook.db``, ``submitted/`` and ``autograded/``.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from grader.assignment import Assignment

SUITE_KINDS = ("hidden", "public")


@dataclass(frozen=True)
class Layout:
    root: Path

    # what students fill in ---------------------------------------------------------------------------
    @property
    def assignments(self) -> Path:
        return self.root / "assignments"

    def release_folder(self, assignment: Assignment) -> Path:
        return self.assignments / assignment.id

    def release_module(self, assignment: Assignment) -> Path:
        return self.release_folder(assignment) / assignment.module

    def release_notebook(self, assignment: Assignment) -> Path:
        return self.release_folder(assignment) / assignment.notebook

    # the instructor's reference ----------------------------------------------------------------------
    @property
    def solutions(self) -> Path:
        return self.root / "solutions"

    def solution_folder(self, assignment: Assignment) -> Path:
        return self.solutions / assignment.id

    def solution_module(self, assignment: Assignment) -> Path:
        return self.solution_folder(assignment) / assignment.module

    def solution_notebook(self, assignment: Assignment) -> Path:
        return self.solution_folder(assignment) / assignment.notebook

    # the grading suites ----------------------------------------------------------------------------
    @property
    def suites(self) -> Path:
        return self.root / "suites"

    def suite_folder(self, kind: str) -> Path:
        if kind not in SUITE_KINDS:
            raise ValueError(f"no suite kind {kind!r} (one of {', '.join(SUITE_KINDS)})")
        return self.suites / kind

    def suite(self, assignment: Assignment | str, kind: str) -> Path:
        name = assignment if isinstance(assignment, str) else assignment.id
        return self.suite_folder(kind) / f"test_{name}.py"

    @property
    def pytest_ini(self) -> Path:
        return self.suites / "pytest.ini"

    def shared_with_the_suites(self) -> list[Path]:
        """What suites/ holds beside its hidden and public suites, all of which goes to students: pytest.ini,
        and the helpers both suites import, under the course's own names (this course's ``lesson``
        package: the lesson's data, its known mistakes, the checks both suites share)."""
        return sorted(p for p in self.suites.iterdir() if p.name not in (*SUITE_KINDS, "__pycache__")
                      and not p.name.startswith(".") and not p.name.endswith(".pyc"))

    @property
    def recording(self) -> Path:
        """The public suites' recorded reference outputs (a student distribution grades with them)."""
        return self.suite_folder("public") / "reference.pt"

    # nbgrader ---------------------------------------------------------------------------------------
    @property
    def gradebook(self) -> Path:
        return self.root / "gradebook.db"

    @property
    def submitted(self) -> Path:
        return self.root / "submitted"

    @property
    def autograded(self) -> Path:
        return self.root / "autograded"

    # what student code must never reach ------------------------------------------------------------
    def has_reference(self) -> bool:
        """The instructor's course (solutions/ and suites/hidden/ present), not a student distribution."""
        return self.solutions.is_dir() and self.suite_folder("hidden").is_dir()

    def reference_folders(self) -> tuple[Path, ...]:
        """The reference and the suites: a worker drops them (and what holds them) from sys.path."""
        return self.solutions, self.suites

    def secrets(self) -> list[Path]:
        """What a worker running as another user must not be able to read: the reference, the suites,
        the history that holds both, nbgrader's gradebook and collected notebooks (those present)."""
        paths = (self.solutions, self.suites, self.root / ".git", self.gradebook, self.submitted, self.autograded)
        return [path for path in paths if path.exists()]
