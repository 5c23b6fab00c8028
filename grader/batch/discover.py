"""Finding a class's submissions: folders and ``.zip`` files, each one a job, none able to stop the rest.

A submission that cannot be read (a broken or hostile archive, a link where a module should be) is a
job with an ``error``: it gets an ``error`` result with that one-line reason, and the batch goes on.

Names. A job's name is its folder's or archive's name without ``.zip``/``.py``/``.ipynb``, and names
its result file (``<name>.json``), a row of summary.csv and of ``grade export``. So it must be a safe
file name and valid UTF-8: bytes that are not UTF-8 are written as ``_xNN``; control characters,
characters that reorder or hide text (a right-to-left override, a zero-width space), ``/``, ``\\`` and
``~`` (the grader's own mark, below) as ``_``; a name that is empty, ``.``/``..`` or starts with ``.``
gets a ``_`` in front (``..zip`` is ``_.``); a name is cut to NAME_BYTES bytes, so that its result
file's name fits. The same path named twice is one job.

Names are identities. Where two submissions' names clean to one name (``jane\\doe/`` and ``jane_doe/``,
``bob/`` and ``bob.zip``), neither takes it: sorting them gave an attacker's ``jane\\doe`` the name
``jane_doe`` and the real jane_doe's result went by ``jane_doe~2``. Each is graded under
``<name>~collided-<16 hex digits>``, the digits a hash of its own raw name (of its path, where two raw
names are the same too): stable from run to run, distinct, and no name a submission can take, since a
cleaned name holds no ``~``. Its Job (and so its result, summary.csv, ``grade export`` and ``grade
report``) carries the collision: the name they shared and every raw name that cleaned to it.

Archives are unpacked member by member into a scratch folder, never trusting their headers: no
absolute or ``..`` path, no link, no encrypted member, no compression other than stored or deflate
(bzip2/lzma too where Python has them), no name part over 255 bytes, no two members of one name, at
most MAX_MEMBERS members and ZIP_LIMIT bytes counted as they are written, not as declared.
"""
from __future__ import annotations

import hashlib
import os
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from grader.config import Course
from grader.errors import SubmissionError
from grader.results import INVISIBLE

ZIP_LIMIT = 50 << 20  # bytes a submission's archive may unpack to
MAX_MEMBERS = 10_000
NAME_BYTES = 200  # of a submission's name: with "~collided-" and 16 digits, ".json" and a temporary file's, under 255
_METHODS = {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA}


COLLIDED = "~collided-"  # between a cleaned name that several submissions share and each one's hash


@dataclass(frozen=True)
class Job:
    name: str
    path: Path | None  # the folder, module or notebook to grade; None when ``error`` says why not
    error: str | None = None
    # where its name cleaned to one another submission's did too: that name, its own raw name and theirs
    collision: dict | None = None


def discover(paths: list[Path], course: Course, scratch: Path) -> list[Job]:
    """The submissions under ``paths``: submission folders, .zip files, or folders holding those.
    Raises only for a path given that does not exist or holds no submission at all."""
    found: list[Path] = []
    unreadable: dict[str, str] = {}  # absolute path -> why
    for path in paths:
        if not os.path.lexists(path):
            raise SubmissionError(f"no such file or folder: {path}")
        if path.suffix == ".zip" or (_is_submission(path, course) and not _holds_others(path, course)):
            found.append(path)
            continue
        if not path.is_dir():
            from grader.submission import resolve_submission

            resolve_submission(path, course)  # raises the precise error
        try:
            entries = sorted(path.iterdir())
        except OSError as error:
            raise SubmissionError(f"{path} cannot be read ({error.strerror or type(error).__name__})") from None
        inside = []
        for entry in entries:
            try:
                if entry.is_symlink() or entry.suffix == ".zip" or (entry.is_dir() and _is_submission(entry, course)):
                    inside.append(entry)
            except OSError as error:  # a folder we may not read: a job, whose error says so
                unreadable[os.path.abspath(entry)] = f"cannot be read ({error.strerror or type(error).__name__})"
                inside.append(entry)
        if not inside:
            raise SubmissionError(f"{path} holds no submission (folders like assignments/, or .zip files)")
        found += inside
    given = {os.path.abspath(p) for p in paths}
    unique = [Path(p) for p in dict.fromkeys(os.path.abspath(p) for p in found)]
    jobs = []
    for path, (name, collision) in named(unique).items():
        if path.is_symlink() and str(path) not in given:  # a link in a class folder: not followed
            jobs.append(Job(name, None, f"{name} is a symbolic link; links are not followed", collision))
            continue
        if str(path) in unreadable:
            jobs.append(Job(name, None, f"{name} {unreadable[str(path)]}", collision))
            continue
        jobs.append(_job(name, path, scratch, collision))
    return sorted(jobs, key=lambda job: job.name)


def named(paths: list[Path]) -> dict[Path, tuple[str, dict | None]]:
    """Each submission's name and, where its name cleaned to another's too, the collision (see the
    module's docstring): ``{"name": the name they shared, "raw": its own raw name, "others": theirs}``."""
    groups: dict[str, list[Path]] = {}
    for path in paths:
        groups.setdefault(safe_name(path), []).append(path)
    found = {}
    for name, members in groups.items():
        if len(members) == 1:
            found[members[0]] = (name, None)
            continue
        raws = [raw_name(path) for path in members]
        for path, raw in zip(members, raws):
            alike = raws.count(raw) > 1  # bob/ in two folders given: told apart by their paths
            key = os.fsencode(os.path.abspath(path) if alike else path.name)
            others = sorted(r for other, r in zip(members, raws) if other != path)
            found[path] = (f"{name}{COLLIDED}{hashlib.sha256(key).hexdigest()[:16]}",
                           {"name": name, "raw": raw, "others": others})
    return found


def raw_name(path: Path) -> str:
    """A submission's file or folder name as it is, shown as text (bytes that are not UTF-8 as ``\\xNN``)."""
    return _as_text(path.name)


def _as_text(name: str) -> str:
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def safe_name(path: Path) -> str:
    """The name a submission's results go by (see the module's docstring)."""
    raw = path.name
    for suffix in (".zip", ".py", ".ipynb"):
        if raw.endswith(suffix) and len(raw) > len(suffix):
            raw = raw[: -len(suffix)]
            break
    text = "".join("_" if ord(c) < 32 or c in "/\\~\x7f" or c in INVISIBLE else c for c in _as_text(raw))
    text = text.encode("utf-8")[:NAME_BYTES].decode("utf-8", "ignore")  # a part character cut is dropped
    return "_" + text if text in ("", ".", "..") or text.startswith(".") else text


def _holds_others(path: Path, course: Course) -> bool:
    """Whether a folder given holds submissions besides its assignment folders: a class folder in which
    one student's folder happens to be named like an assignment (``01_attention_basics/``), not one
    submission shaped like assignments/."""
    ids = {a.id for a in course.assignments}
    try:
        children = [c for c in path.iterdir() if not c.name.startswith(".") and c.name not in ids]
        return any(c.suffix == ".zip" or (c.is_dir() and not c.is_symlink() and _is_submission(c, course))
                   for c in children)
    except OSError:
        return False


def _is_submission(path: Path, course: Course) -> bool:
    from grader.submission import resolve_submission

    if path.is_symlink():
        return False
    if path.is_dir() and any((path / a.id).is_dir() for a in course.assignments):
        return True
    try:
        resolve_submission(path, course)
    except SubmissionError:
        return False
    return path.is_file() or not any(p.is_dir() for p in path.iterdir() if not p.name.startswith("."))


def _job(name: str, path: Path, scratch: Path, collision: dict | None) -> Job:
    if path.suffix != ".zip":
        return Job(name, path, collision=collision)
    target = scratch / name
    try:
        unzip(path, target)
    except SubmissionError as error:
        return Job(name, None, str(error), collision)
    entries = [p for p in target.iterdir() if not p.name.startswith(("__MACOSX", "."))]
    return Job(name, entries[0] if len(entries) == 1 and entries[0].is_dir() else target, collision=collision)


def unzip(archive: Path, target: Path) -> None:
    """Unpack ``archive`` into ``target`` (see the module's docstring), or raise SubmissionError."""
    shown = os.fsencode(archive.name).decode("utf-8", "backslashreplace")
    target.mkdir(parents=True)
    try:
        if archive.is_symlink() or not archive.is_file():
            raise SubmissionError(f"{shown} is not a regular file")
        with zipfile.ZipFile(archive) as zipped:
            members = zipped.infolist()
            if len(members) > MAX_MEMBERS:
                raise SubmissionError(f"{shown} holds more than {MAX_MEMBERS} files")
            seen: set[str] = set()
            budget = [ZIP_LIMIT]
            for member in members:
                parts = _checked_member(member, shown, seen)
                destination = target.joinpath(*parts)
                if member.is_dir():
                    destination.mkdir(parents=True, exist_ok=True)
                    continue
                destination.parent.mkdir(parents=True, exist_ok=True)
                _extract(zipped, member, destination, budget, shown)
    except SubmissionError:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, RuntimeError, EOFError, OSError,
            ValueError, LookupError) as exc:  # zlib.error is an Exception too: below
        raise SubmissionError(f"{shown} is not a valid .zip file ({type(exc).__name__})") from None
    except Exception as exc:  # noqa: BLE001 - a corrupt stream (zlib.error, lzma.LZMAError, ...)
        raise SubmissionError(f"{shown} is not a valid .zip file ({type(exc).__name__})") from None


def _checked_member(member: zipfile.ZipInfo, shown: str, seen: set[str]) -> tuple[str, ...]:
    name = member.filename
    where = f"{shown}: {name[:80]!r}"
    if member.flag_bits & 0x1:
        raise SubmissionError(f"{where} is encrypted")
    if member.compress_type not in _METHODS:
        raise SubmissionError(f"{where} uses an unknown compression method ({member.compress_type})")
    if stat.S_ISLNK(member.external_attr >> 16):
        raise SubmissionError(f"{where} is a symbolic link")
    path = PurePosixPath(name.replace("\\", "/"))
    parts = tuple(part for part in path.parts if part not in ("", "."))
    if "\x00" in name or path.is_absolute() or ".." in parts or not parts or (len(name) > 1 and name[1] == ":"):
        raise SubmissionError(f"{where} points outside the archive")
    if any(len(part.encode("utf-8", "surrogateescape")) > 255 for part in parts) or len(name) > 1024:
        raise SubmissionError(f"{shown}: a name in it is too long")
    key = "/".join(parts)
    if key in seen:
        raise SubmissionError(f"{where} is in the archive twice")
    seen.add(key)
    return parts


def _extract(zipped: zipfile.ZipFile, member: zipfile.ZipInfo, destination: Path, budget: list[int],
             shown: str) -> None:
    """Copy one member, counting the bytes actually written against what is left of ZIP_LIMIT."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    with zipped.open(member) as source, os.fdopen(os.open(destination, flags, 0o600), "wb") as sink:
        while chunk := source.read(1 << 16):
            budget[0] -= len(chunk)
            if budget[0] < 0:
                raise SubmissionError(f"{shown} unpacks to more than {ZIP_LIMIT >> 20} MiB")
            sink.write(chunk)
