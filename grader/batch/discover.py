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
``bob/`` and ``bob.zip``; or to two that a gradebook takes for one, ``bob`` and ``Bob ``: :func:`identity`),
neither takes it: sorting them gave an attacker's ``jane\\doe`` the name
``jane_doe`` and the real jane_doe's result went by ``jane_doe~2``. Each is graded under
``<its cleaned name>~collided-<16 hex digits>``, the digits a hash of its own raw name (of its path, where two raw
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

from grader.batch.lms_layouts import owner
from grader.config import Course
from grader.errors import SubmissionError
from grader.results import INVISIBLE
from grader.submission import listed

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


def discover(paths: list[Path], course: Course, scratch: Path, notes: list[str] | None = None) -> list[Job]:
    """The submissions under ``paths``: submission folders, .zip files, or folders holding those (a class
    folder). Every entry of a class folder is accounted for (see the module's docstring): a job each, or,
    for a file that is no submission's (``roster.csv``), a line in ``notes``. Raises only for a path given
    that does not exist or holds nothing to grade at all."""
    notes = [] if notes is None else notes
    found: list[_Entry] = []
    for path in paths:
        if not os.path.lexists(path):
            raise SubmissionError(f"no such file or folder: {path}")
        if path.suffix == ".zip" or (_is_submission(path, course) and not _holds_others(path, course)):
            found.append(_Entry(_stem(path.name), path, path))
            continue
        if not path.is_dir():
            from grader.submission import resolve_submission

            resolve_submission(path, course)  # raises the precise error
        inside = _class_folder(path, course, notes, depth=0)
        if not inside:
            raise SubmissionError(f"{path} holds no submission (folders like assignments/, or .zip files)")
        found += inside
    unique = list({os.path.abspath(entry.where): entry for entry in found}.values())
    given = {os.path.abspath(p) for p in paths}
    jobs = []
    for entry, (name, collision) in zip(unique, _names(unique)):
        if entry.path is not None and entry.path.is_symlink() and os.path.abspath(entry.path) not in given:
            jobs.append(Job(name, None, f"{name} is a symbolic link; links are not followed", collision))
        elif entry.error is not None:
            jobs.append(Job(name, None, entry.error, collision))
        elif entry.files:
            jobs.append(_laid_out(name, entry.files, scratch, collision))
        else:
            jobs.append(_job(name, entry.path, scratch, collision))
    return sorted(jobs, key=lambda job: job.name)


@dataclass
class _Entry:
    """What a class folder holds for one student: ``raw``, the name it goes by as found (an LMS's owner key,
    else the file's or folder's name without its suffix); ``where``, what was found; ``path``, what to
    grade; or ``error``, why nothing can be; or ``files``, an LMS's flat files of one student."""

    raw: str
    where: Path
    path: Path | None
    error: str | None = None
    files: tuple[Path, ...] = ()


IGNORED = ("__MACOSX", "Thumbs.db", "desktop.ini")  # what a zip tool or a file manager adds, never a student's
NESTED = 2  # class folders inside a class folder (Moodle's download unpacked into a folder of its own)


def _class_folder(folder: Path, course: Course, notes: list[str], depth: int) -> list[_Entry]:
    """Every entry of a class folder as a student's, each once: a submission, a folder that wraps one
    (``alice/assignments/``, ``repo-main/``), a nested class folder (its entries), an LMS's files of one
    student, or an error that says what was found instead; other files are noted, not graded."""
    try:
        entries = sorted(folder.iterdir())
    except OSError as error:
        raise SubmissionError(f"{folder} cannot be read ({error.strerror or type(error).__name__})") from None
    found: list[_Entry] = []
    owned: dict[str, list[Path]] = {}  # an LMS's owner key -> the entries its names give that student
    for entry in entries:
        if entry.name in IGNORED or entry.name.startswith(".") and not _code(entry.name):  # .DS_Store, .git/
            continue
        lms = owner(entry.name)
        if lms is not None and not entry.is_symlink() and (entry.is_dir() or _code(lms[1]) or _code(entry.name)):
            owned.setdefault(lms[0], []).append(entry)
            continue
        try:
            kind = _kind(entry, course)
        except OSError as error:  # a folder we may not read: a job, whose error says so
            why = f"{_as_text(entry.name)} cannot be read ({error.strerror or type(error).__name__})"
            found.append(_Entry(_stem(entry.name), entry, None, why))
            continue
        if kind == "submission":
            found.append(_Entry(_stem(entry.name), entry, entry))
        elif kind == "class" and depth < NESTED:
            notes.append(f"{entry.name}/ holds submissions of its own: each graded as a student of the class")
            found += _class_folder(entry, course, notes, depth + 1)
        elif kind == "other":
            notes.append(f"{entry.name}: not a submission (a student's folder, .zip, module or notebook): not graded")
        else:
            inner = _wrapped(entry, course) if kind == "folder" else None
            found.append(_Entry(_stem(entry.name), entry, inner, None if inner else _why_not(entry, course)))
    for key, members in owned.items():
        found.append(_owned(key, members, course))
    return found


def _kind(entry: Path, course: Course) -> str:
    """``submission``, ``class`` (a folder of submissions), ``folder`` (any other), ``code`` (a module or
    notebook of no assignment) or ``other`` (a file that is neither)."""
    if entry.is_symlink() or entry.suffix == ".zip" or _is_submission(entry, course):
        return "submission"
    if entry.is_dir():
        if (entry / ".grade-manifest").exists() or (entry / "summary.csv").exists():
            return "other"  # results of grade autograde (an --out inside the class folder)
        return "class" if _holds_submissions(entry, course) else "folder"
    return "code" if _code(entry.name) else "other"


def _code(name: str) -> bool:
    return name.lower().endswith((".py", ".ipynb", ".zip"))


def _visible(folder: Path) -> list[Path]:
    """A folder's entries but hidden ones and what tools add (IGNORED); raises OSError."""
    return [e for e in folder.iterdir() if not e.name.startswith(".") and e.name not in IGNORED]


def _gradable(entry: Path, course: Course) -> bool:
    """An archive, or a folder or file that is a submission itself (never a link)."""
    return not entry.is_symlink() and (entry.suffix == ".zip" or _is_submission(entry, course))


def _holds_submissions(folder: Path, course: Course) -> bool:
    """Whether at least two of a folder's entries are submissions: a class folder (one is a student's
    folder that wraps their submission: :func:`_wrapped`)."""
    try:
        return sum(1 for e in _visible(folder) if _gradable(e, course)) > 1
    except OSError:
        return False


def _wrapped(folder: Path, course: Course, depth: int = 3) -> Path | None:
    """The one submission a student's folder wraps (``alice/assignments/``, GitHub's ``repo-main/``,
    ``alice/week1.zip``), at most ``depth`` folders down; None where there is none or more than one."""
    try:
        entries = _visible(folder)
    except OSError:
        return None
    inner = [e for e in entries if _gradable(e, course)]
    if len(inner) == 1:
        return inner[0]
    folders = [e for e in entries if e.is_dir() and not e.is_symlink()]
    if not inner and len(folders) == 1 and depth > 1:
        return _wrapped(folders[0], course, depth - 1)
    return None


def _why_not(entry: Path, course: Course) -> str:
    """Why a class folder's entry is no submission, with what it holds instead and what was expected."""
    first = course.assignments[0]
    expected = f"expected {first.module} or {first.notebook} (or a folder such as {first.id}/ holding one)"
    if entry.is_dir():
        try:
            inside = sorted(e.name for e in entry.rglob("*") if e.is_file() and not e.name.startswith("."))
        except OSError:
            inside = []
        if not inside:
            return f"{entry.name}/ is empty: nothing was handed in"
        return f"{entry.name}/ holds no module or notebook of this course (found {listed(inside)}); {expected}"
    return f"{entry.name} is not a module or notebook of this course; {expected}"


def _owned(key: str, members: list[Path], course: Course) -> _Entry:
    """One student's entries in an LMS's layout: their one folder or archive, or their flat files laid out
    as one folder (:func:`_laid_out`); an error where none of them is a module or notebook."""
    where = members[0]
    # each folder or archive as what it is graded by: itself, or the one submission it wraps
    targets = [m if m.suffix == ".zip" or _is_submission(m, course) else _wrapped(m, course)
               for m in members if m.is_dir() or m.suffix == ".zip"]
    gradable = [t for t in targets if t is not None]
    files = tuple(m for m in members if m.is_file() and m.suffix.lower() in (".py", ".ipynb"))
    if len(gradable) == 1 and not files:
        return _Entry(key, where, gradable[0])
    if files and not gradable:
        return _Entry(key, where, None, files=files)
    found = listed([m.name for m in members])
    if not gradable:
        return _Entry(key, where, None, _why_not(where, course) if len(members) == 1 and where.is_dir() else
                      f"{key} handed in no module or notebook of this course (found {found})")
    return _Entry(key, where, None, f"{key} handed in several submissions ({found}): keep one folder or archive "
                  "a student")


def _laid_out(name: str, files: tuple[Path, ...], scratch: Path, collision: dict | None) -> Job:
    """A job for one student's flat files in an LMS's layout: each copied (never through a link) under its
    own name, the LMS's prefix dropped, into a folder of the scratch; an unreadable one makes it an error."""
    from grader.submission import copy_file

    target = scratch / "laid-out" / name
    target.mkdir(parents=True)
    try:
        for file in files:
            own = owner(file.name)[1]
            destination = target / (own if own and "/" not in own and not own.startswith(".") else file.name)
            if not destination.exists():  # one name twice: the first in sorted order stays
                copy_file(file, destination)
    except SubmissionError as error:
        return Job(name, None, f"{name}: {error}", collision)
    return Job(name, target, collision=collision)


def _stem(name: str) -> str:
    for suffix in (".zip", ".py", ".ipynb"):
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def _names(entries: list[_Entry]) -> list[tuple[str, dict | None]]:
    """Each entry's name and, where its name cleaned to another's too, the collision (see the module's
    docstring): ``{"name": the name they shared, "raw": its own raw name, "others": theirs}``."""
    groups: dict[str, list[int]] = {}
    for index, entry in enumerate(entries):
        groups.setdefault(identity(_cleaned(entry.raw)), []).append(index)
    found: list[tuple[str, dict | None]] = [("", None)] * len(entries)
    for members in groups.values():
        if len(members) == 1:
            found[members[0]] = (_cleaned(entries[members[0]].raw), None)
            continue
        name = min(_cleaned(entries[i].raw) for i in members).strip()
        raws = [_as_text(entries[i].where.name) for i in members]
        for index, raw in zip(members, raws):
            where = entries[index].where
            alike = raws.count(raw) > 1  # bob/ in two folders given: told apart by their paths
            key = os.fsencode(os.path.abspath(where) if alike else where.name)
            others = sorted(r for other, r in zip(members, raws) if other != index)
            found[index] = (f"{_cleaned(entries[index].raw)}{COLLIDED}{hashlib.sha256(key).hexdigest()[:16]}",
                            {"name": name, "raw": raw, "others": others})
    return found


def identity(name: str) -> str:
    """Who a cleaned name names in a gradebook: without surrounding spaces, whatever its case (red team round
    20: ``bob`` and ``bob `` were two students, two rows of the Canvas export, where the gradebook trims a
    login and takes its case as one)."""
    return name.strip().casefold()


def _as_text(name: str) -> str:
    """A file or folder name as it is, shown as text (bytes that are not UTF-8 as ``\\xNN``)."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def safe_name(path: Path) -> str:
    """The name a submission's results go by (see the module's docstring)."""
    return _cleaned(_stem(path.name))


def _cleaned(raw: str) -> str:
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
        return any(c.suffix == ".zip" or owner(c.name) is not None or (c.is_dir() and not c.is_symlink() and _is_submission(c, course))
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
