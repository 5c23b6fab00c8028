"""Fixtures shared by the project's tests."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# a course of its own (tests/grader/test_second_course.py grades it): its suites are its grader's to run,
# never this session's, whose own suites' packages (suites/public) they would shadow
collect_ignore = ["second_course"]
COURSE_FILES = ("suites/lesson/misconceptions.toml", "suites/lesson/figures.py")  # what course.toml names


# the test files that take longest (a CI run's --durations, seconds of two workers' time), run first so that the
# short ones fill the end: with -n 2 and --dist loadfile a file is one unit, and a long one handed out last kept
# one worker busy minutes after the other ran out (a file's tests stay together, in their order: module fixtures)
LONGEST_FIRST = (
    "tests/grader/grading/test_diagnose.py",  # 290: the corpus, graded once
    "tests/grader/test_fairness.py",  # 210
    "tests/grader/test_cli.py",  # 200
    "tests/grader/course/test_distribution.py",  # 195
    "tests/grader/batch/test_autograde.py",  # 125
    "tests/grader/course/test_notebooks.py",  # 100
    "tests/grader/test_docs_recipes.py",  # 95
    "tests/grader/test_install_layouts.py",  # 95
    "tests/grader/grading/test_fixture.py",  # 65
    "tests/grader/sandbox/test_kernel_sandbox.py",  # 60
    "tests/notebooks/test_lessons.py",  # 55
)


def pytest_collection_modifyitems(config, items):
    """The longest test files first (LONGEST_FIRST), the rest in their order; and GPU cases stay in the report as
    skipped where there is no GPU; they never vanish."""
    import torch

    rank = {path: index for index, path in enumerate(LONGEST_FIRST)}
    order = {id(item): (rank.get(item.nodeid.split("::", 1)[0], len(rank)), index) for index, item in enumerate(items)}
    items.sort(key=lambda item: order[id(item)])
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device; none on this machine")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def course():
    from grader.config import load_course

    return load_course(ROOT)


@pytest.fixture(scope="session")
def course_toml():
    """``course_toml(folder, text=None)``: the course's course.toml (or ``text``) written into ``folder``,
    with the files it names beside it (the misconceptions, the figures), as a course folder has them;
    ``folder``."""
    def write(folder: Path, text: str | None = None) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "course.toml").write_text((ROOT / "course.toml").read_text() if text is None else text)
        for name in COURSE_FILES:
            if not (folder / name).exists():
                (folder / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(ROOT / name, folder / name)
        return folder
    return write


@pytest.fixture(scope="session")
def course_toml_file(course_toml):
    """:func:`course_toml`, where a test's own name for course.toml text is ``course_toml``."""
    return course_toml


@pytest.fixture(scope="session")
def grader(course):
    """One zygote for the whole test session, as `grade autograde` would share it (a batch's: its memory in huge
    pages, the hundreds of gradings of the corpora each fork cheaper; 13 % of their processor time)."""
    from grader.grading.grader import Grader

    instance = Grader(course, device="cpu", batch=True)
    yield instance
    instance.close()


@pytest.fixture(scope="session")
def solutions_result(course, grader):
    from grader.submission import resolve_submission

    return grader.grade(resolve_submission(ROOT / "solutions", course), course.assignments, seed=1234)


@pytest.fixture
def submission_dir(tmp_path):
    """A copy of the solutions as a student's assignments/ folder, to break on purpose."""
    target = tmp_path / "assignments"
    for folder in (ROOT / "solutions").iterdir():
        if folder.is_dir():
            (target / folder.name).mkdir(parents=True)
            for source in folder.glob("*.py"):
                shutil.copy(source, target / folder.name / source.name)
    return target


@pytest.fixture
def boundary_alone(monkeypatch):
    """The observation gate set aside (grader/grading/observable.py, issue 44): a file naming os, sys, gc or
    globals() is not observed, and the checks that watch its computation earn nothing before anything else
    is tried. Tests of the second line (the kernel's boundary, the worker's own refusals, the oracle) grade
    such files to show that line holding alone."""
    from grader.grading.pytest_session import GradingSession

    monkeypatch.setattr(GradingSession, "unobserved", lambda self, assignment_id: None)


@pytest.fixture(scope="session")
def released(course, tmp_path_factory) -> Path:
    """What `grade release` writes into assignments/ (stubs and release notebooks), made afresh from
    solutions/: never the live assignments/, where a course in use holds a student's or an instructor's
    edits (issue 45: the suite failed in a course folder that had been used)."""
    from grader.course.release import render

    root = tmp_path_factory.mktemp("released") / "assignments"
    root.mkdir()
    render(course, course.assignments, root)
    return root
