"""A release's recording kept for the next release of the very same course (grader.course.kept_recordings):
read back where nothing it is made from changed, recorded afresh where anything did, and never read from a
folder or file someone else could have written."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from grader.config import load_course
from grader.course import kept_recordings
from grader.course.kept_recordings import kept

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "attention-course" / "recordings"


@pytest.fixture
def copy(tmp_path):
    """A course of its own: the repository's course.toml, solutions and suites (the grader is this one)."""
    root = tmp_path / "course"
    root.mkdir()
    shutil.copy(ROOT / "course.toml", root)
    for name in ("solutions", "suites"):
        shutil.copytree(ROOT / name, root / name, ignore=shutil.ignore_patterns("__pycache__", "*.ipynb"))
    return root


def recorder(calls: list, checks: int = 17):
    def record(path: Path) -> int:
        calls.append(path)
        path.write_bytes(b"recorded %d" % len(calls))
        return checks
    return record


def test_a_second_release_of_the_same_course_reads_the_recording_back(cache, copy, tmp_path):
    course, calls = load_course(copy), []
    first, second = tmp_path / "first.pt", tmp_path / "second.pt"
    assert kept(course, course.assignments[:1], 2024, first, recorder(calls)) == 17
    assert kept(course, course.assignments[:1], 2024, second, recorder(calls, 99)) == 17
    assert len(calls) == 1 and second.read_bytes() == first.read_bytes() == b"recorded 1"
    assert [p.name.endswith("-17.pt") for p in cache.glob("*.pt")] == [True]
    assert oct(cache.stat().st_mode & 0o777) == oct(0o700)


def test_two_releases_of_the_same_course_at_once_record_it_once(cache, copy, tmp_path):
    """The second waits for the first's recording and reads it back (a test suite's two workers releasing the
    course at once recorded it twice, a minute of both processors)."""
    import threading
    import time

    course, calls, started = load_course(copy), [], threading.Event()

    def slow(path: Path) -> int:
        started.set()
        time.sleep(0.5)
        return recorder(calls)(path)

    first = threading.Thread(target=kept, args=(course, course.assignments[:1], 2024, tmp_path / "a.pt", slow))
    first.start()
    assert started.wait(30)
    assert kept(course, course.assignments[:1], 2024, tmp_path / "b.pt", recorder(calls)) == 17
    first.join()
    assert len(calls) == 1 and (tmp_path / "b.pt").read_bytes() == (tmp_path / "a.pt").read_bytes()


@pytest.mark.parametrize("change", ["solution", "public suite", "lesson", "course.toml", "assignments", "seed"])
def test_anything_a_recording_is_made_from_changed_records_afresh(cache, copy, tmp_path, change):
    course, calls = load_course(copy), []
    assignments, seed = course.assignments[:1], 2024
    kept(course, assignments, seed, tmp_path / "a.pt", recorder(calls))
    module = copy / "solutions" / "01_attention_basics" / "attention_basics.py"
    edits = {"solution": lambda: module.write_text(module.read_text() + "\n# a comment\n"),
             "public suite": lambda: (copy / "suites" / "public" / "test_01_attention_basics.py").write_text("x = 1\n"),
             "lesson": lambda: (copy / "suites" / "lesson" / "new.py").write_text(""),
             "course.toml": lambda: (copy / "course.toml").write_text((copy / "course.toml").read_text() + "\n")}
    if change in edits:
        edits[change]()
    elif change == "assignments":
        assignments = course.assignments[:2]
    else:
        seed = 7
    kept(load_course(copy), assignments, seed, tmp_path / "b.pt", recorder(calls))
    assert len(calls) == 2 and (tmp_path / "b.pt").read_bytes() == b"recorded 2"


def test_what_no_recording_is_made_from_keeps_it(cache, copy, tmp_path):
    """The hidden suites, compiled files and notebook checkpoints are not what the public recording is made of."""
    course, calls = load_course(copy), []
    kept(course, course.assignments[:1], 2024, tmp_path / "a.pt", recorder(calls))
    (copy / "suites" / "hidden" / "test_01_attention_basics.py").write_text("changed = True\n")
    for folder in (copy / "solutions" / "__pycache__", copy / "solutions" / ".ipynb_checkpoints"):
        folder.mkdir(exist_ok=True)
        (folder / "x.pyc").write_bytes(b"\0")
    kept(load_course(copy), course.assignments[:1], 2024, tmp_path / "b.pt", recorder(calls))
    assert len(calls) == 1


def test_a_kept_recording_someone_else_could_write_is_not_read(cache, copy, tmp_path):
    course, calls = load_course(copy), []
    kept(course, course.assignments[:1], 2024, tmp_path / "a.pt", recorder(calls))
    (found,) = cache.glob("*.pt")
    found.chmod(0o666)
    kept(course, course.assignments[:1], 2024, tmp_path / "b.pt", recorder(calls))
    assert len(calls) == 2 and (tmp_path / "b.pt").read_bytes() == b"recorded 2"
    cache.chmod(0o777)  # the folder itself writable by others: nothing is kept nor read there
    kept(course, course.assignments[:1], 2024, tmp_path / "c.pt", recorder(calls))
    kept(course, course.assignments[:1], 2024, tmp_path / "d.pt", recorder(calls))
    assert len(calls) == 4


def test_a_cache_folder_that_is_a_link_is_not_used(tmp_path, monkeypatch, copy):
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "attention-course").mkdir(parents=True, mode=0o700)
    (tmp_path / "cache").mkdir(mode=0o700)
    os.symlink(elsewhere / "attention-course", tmp_path / "cache" / "attention-course")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    course, calls = load_course(copy), []
    for name in ("a.pt", "b.pt"):
        kept(course, course.assignments[:1], 2024, tmp_path / name, recorder(calls))
    assert len(calls) == 2 and not (elsewhere / "attention-course" / "recordings").exists()
    assert kept_recordings._folder() is None


def test_a_release_made_twice_records_once_and_says_the_same(cache, course, tmp_path, monkeypatch):
    from grader.course import distribution

    made = []
    original = distribution._recorded_into
    monkeypatch.setattr(distribution, "_recorded_into", lambda *a: made.append(a) or original(*a))
    one = distribution.write_distribution(course, course.assignments[:1], tmp_path / "one")
    two = distribution.write_distribution(course, course.assignments[:1], tmp_path / "two")
    assert len(made) == 1 and one.checks == two.checks > 0
    recording = Path("suites", "public", "reference.pt")
    assert (one.root / recording).read_bytes() == (two.root / recording).read_bytes()
    assert distribution.check_distribution(course, course.assignments[:1], two.root) == [] and len(made) == 1
