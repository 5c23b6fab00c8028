"""A release's recording of the public suites, kept for the next release made from the same course.

Recording (grader.course.distribution.record_public_suites) grades the reference with every diagnosis of
the public checks rehearsed: half a minute for the course, most of a release. An instructor writes the
same distribution more than once (``grade release --out``, then ``--check``; a second folder; next week's
release while last week's lesson is unchanged), and each would record the same values again. The file
is kept under a digest of everything a recording is made from: the assignments, the seed, every file of
``solutions/``, of the suites but the hidden ones, ``course.toml``, the grader's own package, and the
Python and torch it runs on. Any change in any of them is another digest, recorded afresh.

Kept in the user's cache folder (``$XDG_CACHE_HOME`` or ``~/.cache``, then ``attention-course/recordings``),
and read back only where the user alone owns and can write every folder down to the file, as the compiled
files of grader/__main__.py: a file there that someone else could write is not the user's recording. A
recording holds plain tensors and containers (``torch.load(weights_only=True)``), and only the public
cases' values, which the distribution ships anyway.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import sys
import tempfile
from pathlib import Path
from typing import Callable

from grader.grading import user_cache
from grader.assignment import Assignment

_SKIPPED = frozenset({"__pycache__", ".ipynb_checkpoints"})
_SUFFIXES_SKIPPED = (".pyc", ".pt")  # compiled files; a recording already in the suites (a distribution's)


def kept(course, assignments: tuple[Assignment, ...], seed: int, path: Path, record: Callable[[Path], int]) -> int:
    """The recording of ``assignments``' public suites at ``seed``, written to ``path``: a copy of the one kept
    for the very same course, else made by ``record(path)`` (which returns the number of public checks) and
    kept. Returns the number of public checks."""
    folder = _folder()
    key = _digest(course, assignments, seed) if folder is not None else None
    if key is None:
        return record(path)
    with _recording(folder, key):  # a release of the same course under way at once: its recording is waited for
        for found in sorted(folder.glob(f"{key}-*.pt")):
            checks = found.stem.rpartition("-")[2]
            if checks.isdigit() and _owned(found, folder):
                shutil.copyfile(found, path)
                return int(checks)
        checks = record(path)
        _keep(path, folder / f"{key}-{checks}.pt")
        return checks


@contextlib.contextmanager
def _recording(folder: Path, key: str):
    """Held while the recording of ``key`` is looked for and made: a second release of the same course at once
    (two terminals, a test suite's two workers) waits and reads the first one's back rather than record it again.
    A lock of the kernel's (``flock``), let go when its process ends however it ends; without one (a file system
    that refuses it, a lock file someone else made), each records its own, as before."""
    import fcntl

    try:
        handle = os.open(folder / f"{key}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError:
        yield
        return
    try:
        if user_cache.users_alone(os.fstat(handle), stat.S_ISREG):
            try:
                fcntl.flock(handle, fcntl.LOCK_EX)
            except OSError:
                pass
        yield
    finally:
        os.close(handle)  # (the lock with it)


def _keep(path: Path, target: Path) -> None:
    """``path`` copied to ``target`` whole or not at all (two releases at once each write their own copy)."""
    try:
        handle, scratch = tempfile.mkstemp(dir=target.parent, suffix=".partial")
    except OSError:  # a read-only home: the release goes on without keeping it
        return
    try:
        with os.fdopen(handle, "wb") as out, open(path, "rb") as source:
            shutil.copyfileobj(source, out)
        os.replace(scratch, target)
    except OSError:  # a full disk
        Path(scratch).unlink(missing_ok=True)


def _folder() -> Path | None:
    """The user's folder of kept recordings (grader.grading.user_cache), made where missing; None where it is not the
    user's alone or cannot be made."""
    found = user_cache.folder("recordings")
    return None if found is None else Path(found)


def _owned(path: Path, folder: Path) -> bool:
    try:
        return path.parent == folder and user_cache.users_alone(os.lstat(path), stat.S_ISREG)
    except OSError:
        return False


def _digest(course, assignments: tuple[Assignment, ...], seed: int) -> str | None:
    """A digest of everything the recording is made from; None where some of it cannot be read."""
    import torch

    import grader

    digest = hashlib.blake2b(digest_size=20)
    digest.update(repr((seed, [a.id for a in assignments], sys.version, torch.__version__)).encode())
    layout = course.layout
    named = [course.root / name for name in (course.misconceptions_file, course.figures_file) if name]
    try:
        for top in (layout.solutions, layout.suites, Path(grader.__file__).parent, course.root / "course.toml", *named):
            for file in _files(top, skipped=layout.suite_folder("hidden")):
                digest.update(f"\0{file.relative_to(top.parent)}\0{file.stat().st_size}\0".encode())
                digest.update(file.read_bytes())
    except OSError:
        return None
    return digest.hexdigest()


def _files(top: Path, skipped: Path) -> list[Path]:
    """The files of ``top`` (a file or a folder, links followed), in a fixed order, but ``skipped`` and what
    Python and Jupyter write beside the sources."""
    if top.is_file():
        return [top]
    found = []
    for folder, subfolders, names in os.walk(top, followlinks=True):
        subfolders[:] = sorted(name for name in subfolders
                               if name not in _SKIPPED and Path(folder, name) != skipped)
        found += [Path(folder, name) for name in sorted(names) if not name.endswith(_SUFFIXES_SKIPPED)]
    return found
