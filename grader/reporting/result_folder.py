"""A folder of results as ``grade autograde`` leaves it: ``<name>.json`` per submission, the manifest
``.grade-manifest``, and ``summary.csv``.

Why a manifest. Where student code runs as the grader's own user (no sandbox, not root) it can write
into the results folder: drop a ``zz.json`` with full marks for a name not in the batch, or one with a
future mtime to win a merge. ``grade autograde`` rewrites every result of its run from memory once no
student code runs any more, then writes, last, the manifest: each result file's name and its keyed
digest, an HMAC-SHA256 of the file's name and content keyed by the course's secret
(grader/reporting/course_secret.py), so that nobody without the secret can list a file there: a
co-tenant who rewrites a result and the manifest is refused. ``summary.csv``, ``grade export`` and
``grade report`` believe only the files listed there whose digest verifies; a file not listed is
named and left out, and a listed file that does not verify refuses the whole folder, in one line
naming it. The manifest is JSON but not named ``*.json``, so that globbing the results never takes it
for one.

Why the folder must be the grader's. Another user who owns ``--out``, or may write into it, could
replace any file in it at any time; ``grade autograde`` refuses such a folder, and such files in it
(:func:`check_owned`).

Runs one after another into one folder (``--resume``, shards in turn) keep each other's results: a run
reads the manifest before any student code starts, and keeps those entries whose file is still as
listed. Runs at the same time into one folder (a Slurm array) merge their manifests under a lock; the
entries another run added meanwhile are kept only where this run's student code could not write into
the folder (a sandbox, or a uid of its own), since otherwise that code could have added them.
"""
from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import stat
import tempfile
import time
from pathlib import Path

from grader.errors import UntrustedResults, UsageError
from grader.sandbox.ownership import check_ancestors
from grader.reporting.formats import csv_text
from grader.results import collision_of, grader_error_of

MANIFEST = ".grade-manifest"
LOCK = ".grade-manifest.lock"
SUMMARY_FIRST = ["submission", "score", "max_score", "seed"]  # then a column per exercise, then "status"


def write_atomically(path: Path, text: str | bytes, mode: int | None = None) -> None:
    """Readers see the old file or the new one, never half of one; text that is not valid UTF-8 (a
    lone surrogate) is written escaped rather than failing; bytes as they are. ``mode``: the new file's (default:
    readable by its owner alone)."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        if mode is not None:
            os.fchmod(handle, mode)
        if isinstance(text, bytes):
            stream = os.fdopen(handle, "wb")
        else:
            stream = os.fdopen(handle, "w", encoding="utf-8", errors="backslashreplace", newline="")
        with stream:
            stream.write(text)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def write_output(path: Path, text: str | bytes, shown: str = "--output", *, ancestors: bool = True,
                 private: bool = False) -> None:
    """Write a file a command was asked for (an export, a report, a result, a figure, a package) where no other
    user can have put something in its place (red team round 30c: root's `grade export --output` wrote into a file
    an ordinary user had made beforehand in a shared folder, and through their link into a bystander's result;
    round 32: `--figures` and `grade gradescope --out` likewise): a link, or a file that belongs to another user
    than you or root, is refused; with ``ancestors``, so is a folder above it another user could swap
    (:func:`check_ancestors`). The text goes into a new file renamed into place, never through the file that was
    there; ``private``: readable by its owner alone (what holds the solutions). Raises UntrustedResults."""
    path = Path(os.path.abspath(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    if ancestors:
        check_ancestors(path, shown)
    try:
        seen = os.lstat(path)
    except FileNotFoundError:
        seen = None
    except OSError as error:
        raise UntrustedResults(f"{shown} {path} cannot be examined ({error.strerror or error})") from None
    if seen is not None and stat.S_ISLNK(seen.st_mode):
        raise UntrustedResults(f"{shown} {path} is a link, which would send what is written elsewhere: remove it, or "
                               "choose another path")
    if seen is not None and seen.st_uid not in (os.geteuid(), 0):
        raise UntrustedResults(f"{shown} {path} belongs to uid {seen.st_uid}, who could change what is written into "
                               "it: choose a path of your own")
    if seen is not None and not stat.S_ISREG(seen.st_mode):
        raise UsageError(f"{shown} {path} is not a file")
    # as a file the user made would be (a TA's group reads it), or the owner's alone
    write_atomically(path, text, mode=None if private else 0o666 & ~_umask())


def output_folder(folder: Path, shown: str) -> Path:
    """``folder`` (made where missing) for the files a command writes into it (``--figures``), refused where
    another user could put something in it or in its place: a link, a folder of another user than you or root, one
    that group or others can write, or a folder above it another user could swap (:func:`check_ancestors`). Raises
    UntrustedResults."""
    folder = Path(os.path.abspath(folder))
    folder.mkdir(parents=True, exist_ok=True)
    check_ancestors(folder, shown)
    seen = os.lstat(folder)
    if stat.S_ISLNK(seen.st_mode):
        raise UntrustedResults(f"{shown} {folder} is a link, which would send what is written elsewhere: remove it, "
                               "or choose another folder")
    if seen.st_uid not in (os.geteuid(), 0):
        raise UntrustedResults(f"{shown} {folder} belongs to uid {seen.st_uid}, who could change what is written "
                               "into it: choose a folder of your own")
    if _writers(seen.st_mode):
        raise UntrustedResults(f"{shown} {folder} can be written by {_writers(seen.st_mode)}: chmod go-w it, or "
                               "choose a folder of your own")
    return folder


def _umask() -> int:
    current = os.umask(0o022)
    os.umask(current)
    return current


KEYED = "hmac-sha256"  # the manifest's digests: of "<file name>\0<content>", keyed by the course's secret


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "backslashreplace")).hexdigest()


def digest(secret: bytes | None, file: str, text: str) -> str:
    """A result file's digest in the manifest: keyed by the course's ``secret`` (None: a plain sha256, as a
    grader before keyed manifests wrote it, which no reader believes)."""
    if secret is None:
        return sha256(text)
    message = file.encode("utf-8", "backslashreplace") + b"\0" + text.encode("utf-8", "backslashreplace")
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


def check_owned(folder: Path) -> None:
    """Refuse ``folder`` (``--out``) where it is not the grader's alone: owned by another user or writable by
    group or others, or where one of the files the grader reads back from it (the manifest, a result)
    is, or a folder above it is not (:func:`check_ancestors`). Raises UntrustedResults."""
    check_ancestors(folder)
    me = os.geteuid()
    for path, seen in _examined(folder, (MANIFEST, LOCK), "--out"):
        shown = "--out " + str(folder) if path == folder else f"{path} (in --out)"
        if seen.st_uid != me:
            raise UntrustedResults(f"{shown} belongs to uid {seen.st_uid}, not to you (uid {me}): whoever owns it "
                                   f"could change any result in it; give an --out of your own")
        who = _writers(seen.st_mode)
        if who and not stat.S_ISLNK(seen.st_mode):
            raise UntrustedResults(f"{shown} can be written by {who}, who could change any result in it: chmod go-w "
                                   f"it, or give another --out")


def _examined(folder: Path, names, shown: str):
    """``folder``, its files ``names`` and its results, each with what lstat says of it (those not there left out;
    one that cannot be examined refused, ``shown`` saying which folder)."""
    for path in (folder, *(folder / name for name in names), *folder.glob("*.json")):
        try:
            yield path, os.lstat(path)
        except FileNotFoundError:
            continue
        except OSError as error:
            raise UntrustedResults(f"{shown} {path} cannot be examined ({error.strerror or error})") from None


def _writers(mode: int) -> str:
    """Who besides the owner may write what has ``mode``: "group", "others", "group and others", or ""."""
    return " and ".join(them for bit, them in ((0o020, "group"), (0o002, "others")) if mode & bit)


def read_result(path: Path) -> dict | None:
    """A result file's data, or None for anything that is not a schema-1 result."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("schema") == 1 and "score" in data else None


def read_manifest(folder: Path) -> dict[str, str] | None:
    """``{result file name: sha256}`` as ``grade autograde`` last wrote it in ``folder``, or None."""
    return _read(folder)[0]


def written_at(folder: Path, secret: bytes | None = None) -> dict[str, float]:
    """When the run that listed each result file wrote it (export's "most recent wins" uses this, not
    the file's mtime, which student code could set), where the manifest's key over them verifies with the
    course's ``secret``; else {} (no time is believed: whoever could write the manifest would choose which of
    two genuine results wins, red team round 30b)."""
    data = _manifest(folder)
    told = data.get("written_key") if data is not None else None
    if secret is None or not isinstance(told, str):  # (a manifest from before the key: no time believed)
        return {}
    if not hmac.compare_digest(told, _stamps_key(secret, data.get("seed"), data.get("written"))):
        raise UntrustedResults(f"{folder / MANIFEST}: its seed or the times its results were written were changed "
                               f"since grade autograde wrote them (its key does not verify): refused; grade the "
                               f"class again (grade autograde SUBMISSIONS --out NEW_FOLDER)")
    return _fields(data)[1]


def _stamps_key(secret: bytes, seed, stamps) -> str:
    """The manifest's key over its class seed and when each result was written."""
    message = json.dumps({"seed": seed, "written": stamps}, sort_keys=True).encode("utf-8", "backslashreplace")
    return hmac.new(secret, b"written\0" + message, hashlib.sha256).hexdigest()


def pending(folder: Path) -> list[str]:
    """The submissions a run into ``folder`` set out to grade and has no result for yet: it was
    interrupted (Ctrl-C, SIGTERM, killed), and ``grade autograde --resume`` completes it."""
    return _read(folder)[2]


def recorded_seed(folder: Path, secret: bytes | None) -> int | None:
    """The seed the class in ``folder`` is graded on: the one its first run recorded in the manifest
    (or, for a folder written before the manifest kept one, the one seed its results share)."""
    if (seed := _read(folder)[3]) is not None:
        return seed
    seeds = {data.get("seed") for path in sort_results(folder, secret=secret)[0]
             if (data := read_result(path)) is not None}
    return seeds.pop() if len(seeds) == 1 and isinstance(next(iter(seeds)), int) else None


def keyed(folder: Path) -> bool:
    """Whether ``folder``'s manifest holds keyed digests (KEYED), as every grade autograde now writes."""
    data = _manifest(folder)
    return data is not None and data.get("digests") == KEYED


def check_read(folder: Path) -> None:
    """Refuse a results folder that ``grade export`` or ``grade report`` reads where it, its manifest or a result in
    it belongs to another user than you or root, or can be written by group or others, or where a folder above it
    could be swapped (:func:`check_ancestors`): whoever owns or may write it could replace any result, and with a
    course secret they could read, sign it (red team round 30b: root's export took an ordinary user's folder).
    Raises UntrustedResults."""
    check_ancestors(folder, "the results folder")
    trusted = {os.geteuid(), 0}
    for path, seen in _examined(folder, (MANIFEST,), "the results folder"):
        if stat.S_ISLNK(seen.st_mode):
            continue  # (a link is never believed: sort_results)
        if seen.st_uid not in trusted:
            raise UntrustedResults(f"{path} belongs to uid {seen.st_uid}, neither you nor root: whoever owns it could "
                                   f"change any result in it; export results folders that you (or root) wrote")
        who = _writers(seen.st_mode)
        if who:
            raise UntrustedResults(f"{path} can be written by {who}, who could change any result in it: chmod go-w "
                                   f"it, and grade the class again if others could have written it")


def _read(folder: Path) -> tuple[dict[str, str] | None, dict[str, float], list[str], int | None]:
    """The manifest's results, when each was written, the pending submissions and the class's seed."""
    return _fields(_manifest(folder))


def _manifest(folder: Path) -> dict | None:
    """``folder``'s manifest as JSON, or None where there is none or it is not a JSON object."""
    try:
        data = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def _fields(data: dict | None) -> tuple[dict[str, str] | None, dict[str, float], list[str], int | None]:
    """:func:`_read`'s fields of a manifest's JSON (``data``, None: no manifest)."""
    if data is None:
        return None, {}, [], None
    seed = data.get("seed")
    seed = seed if isinstance(seed, int) and not isinstance(seed, bool) else None
    files = data.get("results")
    if not isinstance(files, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
        return None, {}, [], seed
    times = data.get("written")
    times = {k: v for k, v in times.items() if isinstance(v, (int, float))} if isinstance(times, dict) else {}
    waiting = data.get("pending")
    waiting = sorted(n for n in waiting if isinstance(n, str)) if isinstance(waiting, list) else []
    return files, times, waiting, seed


def _unchanged(path: Path, listed: str, secret: bytes | None) -> bool:
    try:
        text = path.read_text(encoding="utf-8")
        return not path.is_symlink() and hmac.compare_digest(digest(secret, path.name, text), listed)
    except (OSError, UnicodeDecodeError):
        return False


def sort_results(folder: Path, manifest: dict[str, str] | None = None, *,
                 secret: bytes | None) -> tuple[list[Path], list[Path]]:
    """The ``*.json`` files of ``folder``: those listed in its manifest and unchanged since (their digest
    verifies with the course's ``secret``), and the rest."""
    manifest = (read_manifest(folder) or {}) if manifest is None else manifest
    believed, others = [], []
    for path in sorted(folder.glob("*.json")):
        listed = path.name in manifest and _unchanged(path, manifest[path.name], secret)
        (believed if listed else others).append(path)
    return believed, others


def write_manifest(folder: Path, written: dict[str, str], earlier: dict[str, str] | None = None, *,
                   trust_meanwhile: bool = True, waiting: set[str] = frozenset(), verify: bool = True,
                   seed: int | None = None, secret: bytes | None = None) -> list[str]:
    """List in ``folder``'s manifest the results this run wrote (``{submission: text}``, hashed from
    memory), the ``earlier`` entries (the manifest as it was before this run's student code ran;
    default: as it is now) whose files are unchanged, and, with ``trust_meanwhile``, the entries
    another run added since. ``waiting``: this run's submissions without a result yet (listed as
    pending until a result of theirs is). Without ``verify`` the kept entries' files are not read
    again (a run's progress, written after each result; readers check every hash anyway). ``seed``:
    the class's (the run took the one the folder recorded, where there is one: one folder, one seed;
    None keeps what the manifest says). ``secret``: the course's, which keys each digest (without it
    the manifest is written as older graders wrote it, which no reader believes). Call it holding
    :func:`locked`. Returns the entries left out because they appeared during this run and are not
    trusted."""
    current, times, current_pending, recorded = _read(folder)
    current = current or {}
    earlier = current if earlier is None else earlier
    mine = {f"{name}.json": digest(secret, f"{name}.json", text) for name, text in written.items()}
    meanwhile = {file: digest for file, digest in current.items() if earlier.get(file) != digest and file not in mine}
    kept = {**earlier, **meanwhile} if trust_meanwhile else dict(earlier)
    files = {file: digest for file, digest in kept.items()
             if file not in mine and (not verify or _unchanged(folder / file, digest, secret))}
    now = time.time()
    stamps = {file: times.get(file, now) for file in files}
    files.update(mine)
    stamps.update({file: now for file in mine})
    listed = {file.removesuffix(".json") for file in files}
    still = (set(current_pending) | set(waiting)) - listed
    seed = seed if seed is not None else recorded
    stamps = dict(sorted(stamps.items()))
    keying = {"digests": KEYED, "written_key": _stamps_key(secret, seed, stamps)} if secret is not None else {}
    write_atomically(folder / MANIFEST, json.dumps({"schema": 1, "seed": seed, **keying,
                                                   "results": dict(sorted(files.items())),
                                                   "written": stamps,
                                                   "pending": sorted(still)}, indent=1) + "\n")
    return [] if trust_meanwhile else sorted(meanwhile)


@contextlib.contextmanager
def locked(folder: Path, timeout_s: float = 120.0):
    """One run at a time updates ``folder``'s manifest and summary. A lock nobody releases (or a lock
    file that is not a plain file) delays the run by ``timeout_s`` at most: it never stops it."""
    import fcntl

    try:
        handle = os.open(folder / LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError:
        yield
        return
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError:
                if time.monotonic() > deadline:
                    break
                time.sleep(0.2)
        yield
    finally:
        os.close(handle)


def overall_status(data: dict) -> str:
    """``graded``, or the status of a submission that could not be graded at all (``error``,
    ``crashed``...): every exercise failed by the one ``submission`` check of that status."""
    if grader_error_of(data):  # no valid score: the grader's own failure (grader.results)
        return "grader-error"
    statuses = {e.get("status") for a in data.get("assignments", ()) for e in a.get("exercises", ())}
    if never_ran(data) and len(statuses) == 1 and statuses != {"passed"}:
        return str(statuses.pop())
    return "graded"


def never_ran(data: dict) -> bool:
    """Whether ``data`` was made without grading the submission (grader/batch/autograde.py, failed_result):
    every exercise holds the one ``submission`` check. Its isolation, device and duration say nothing
    of how student code runs, so the report's run header leaves it out."""
    exercises = [e for a in data.get("assignments", ()) for e in a.get("exercises", ())]
    return bool(exercises) and all([c.get("name") for c in e.get("checks", ())] == ["submission"] for e in exercises)


def not_graded(data: dict) -> str:
    """Why a submission could not be graded because it could not be read (a corrupt archive, an empty
    folder, no module of the course: grader/batch/discover.py, grader/submission.py), in one line, or "".
    Such a result reads 0 points, but it holds no score: every export writes an empty grade and this
    reason, never a 0 the LMS would keep. (A submission whose code crashed the grader twice ran: its 0 is
    a score.)"""
    if overall_status(data) != "error":
        return ""
    exercise = data["assignments"][0]["exercises"][0]
    said = str(exercise.get("feedback") or "").removeprefix("submission: ")
    return (said.splitlines() or ["it could not be read"])[0]


def graded_assignments(course, results) -> list:
    """The course's assignments that any of ``results`` (result data) holds, in course order: a
    week's batch (``grade autograde --assignment``) reports that week's points only."""
    present = {a.get("id") for data in results for a in data.get("assignments", ())}
    return [a for a in course.assignments if a.id in present]


def write_summary(out: Path, course, *, secret: bytes | None) -> Path:
    """``summary.csv``: a row per believed result file, a column per exercise of the assignments they
    hold, and the submission's overall ``status`` last (so that the exercise columns keep their
    positions); after it, where some submission's name cleaned to another's too, ``name_collision``
    (grader/batch/discover.py: every raw name that cleaned to its name; empty in the other rows). A
    result the grader failed on, or of a submission it could not read (status ``error``, :func:`not_graded`),
    holds no score: its cells stay empty."""
    results = [data for path in sort_results(out, secret=secret)[0] if (data := read_result(path)) is not None]
    exercise_columns = [f"{a.id}:{name}" for a in graded_assignments(course, results) for name in a.exercises]
    rows = []
    for data in results:
        unread = bool(not_graded(data))  # no score either: its cells stay empty, its status says "error"
        scores = {f"{a['id']}:{e['name']}": "" if unread or e.get("status") == "grader-error" else e["score"]
                  for a in data["assignments"] for e in a["exercises"]}
        total = "" if unread or grader_error_of(data) else data["score"]  # never a 0 the student did not earn
        rows.append([data["submission"], total, data["max_score"], data["seed"]] +
                    [scores.get(column, "") for column in exercise_columns] + [overall_status(data)])
    header = SUMMARY_FIRST + exercise_columns + ["status"]
    if any(map(collision_of, results)):
        header.append("name_collision")
        rows = [row + [collision_of(data)] for row, data in zip(rows, results)]
    path = out / "summary.csv"
    write_atomically(path, csv_text([header, *rows]))  # names as data
    return path


def collect(result_dirs: list[Path], warnings: list[str] | None = None, *, secret: bytes | None,
            mixed_seeds: bool = False) -> dict[str, dict]:
    """Every result by submission; where shards overlap, the most recent result of a name wins (by
    when its run wrote it, as the manifest says). Only result files that ``grade autograde`` listed
    in the folder's manifest, unchanged since (their digest verifies with the course's ``secret``;
    None where the course has none yet, which verifies nothing), are read: a file student code could have left is named in ``warnings`` and left out (see
    write_manifest above); a listed file that does not verify refuses the folder (UntrustedResults:
    someone rewrote it, and maybe the manifest). A folder of result files without a manifest, or with
    one no secret keyed, is refused: its files cannot be told from forged ones. So are results of
    one assignment graded on different seeds (a class is graded on one), unless ``mixed_seeds``: every
    result read counts, also one a later result of its name replaces (two full classes on two seeds)."""
    found: dict[str, tuple[float, dict, Path]] = {}
    read: list[tuple[dict, Path]] = []  # every result believed, kept or replaced: their seeds must agree
    for folder in result_dirs:
        if not folder.is_dir():
            raise UsageError(f"no such result folder: {folder}")
        check_read(folder)
        manifest = read_manifest(folder)
        believed, others = sort_results(folder, manifest, secret=secret)
        if manifest is None and others:
            raise UsageError(f"{folder} has no {MANIFEST} (results not written by grade autograde, or by a "
                             f"version before it kept one): grade the class again into it (grade autograde "
                             f"SUBMISSIONS --out {folder})")
        _verified(folder, manifest, others, secret)
        if warnings is not None:
            warnings += [f"{path}: not as grade autograde wrote it (not in {MANIFEST}): left out" for path in others]
        waiting = pending(folder)
        if waiting and warnings is not None:  # an interrupted run: what it graded is exported, and said so
            names = ", ".join(waiting[:5]) + (f" and {len(waiting) - 5} more" if len(waiting) > 5 else "")
            warnings.append(f"{folder}: the run that wrote it was interrupted, {len(waiting)} submission(s) have no "
                            f"result yet ({names}): finish it with grade autograde ... --out {folder} --resume")
        times = written_at(folder, secret)
        for path in believed:
            data = read_result(path)
            if data is None:
                continue
            read.append((data, folder))
            stamp, name = times.get(path.name, 0.0), data["submission"]
            if name in found and warnings is not None and found[name][1]["score"] != data["score"]:
                kept, other = (data, found[name][1]) if stamp > found[name][0] else (found[name][1], data)
                warnings.append(f"{name}: two results with different scores ({kept['score']:g} and "
                                f"{other['score']:g}); the later, {kept['score']:g}, is kept ({path})")
            if name not in found or stamp > found[name][0]:
                found[name] = (stamp, data, folder)
    _one_seed(read, warnings, mixed_seeds)
    return {name: data for name, (_, data, _) in sorted(found.items())}


def _verified(folder: Path, manifest: dict[str, str] | None, others: list[Path], secret: bytes | None) -> None:
    """Refuse ``folder`` where its manifest lists results but no key made it, or the course has no secret to
    verify them with, or where a result file it lists does not verify (``others``: the files not believed)."""
    if manifest and secret is None:
        raise UntrustedResults(f"{folder}'s results are verified with the course's secret, and the course has "
                               f"none (no .grade-secret in its folder; grade autograde makes it): is this the "
                               f"course that graded them? (--course)")
    if manifest and not keyed(folder):
        raise UntrustedResults(f"{folder / MANIFEST} is not keyed by the course's secret (written by a grader "
                               f"before manifests were keyed, or by someone else): its results are refused; grade "
                               f"the class again (grade autograde SUBMISSIONS --out NEW_FOLDER)")
    for path in others:
        if manifest and path.name in manifest:
            raise UntrustedResults(f"{path}: not as grade autograde wrote it (its digest in {MANIFEST} does not "
                                   f"verify with the course's secret): refused; grade it again (grade autograde "
                                   f"... --out {folder} --resume)")


def _one_seed(read: list[tuple[dict, Path]], warnings: list[str] | None, mixed: bool) -> None:
    """Refuse (or, ``mixed``, warn of) an assignment whose results (``read``: each with its folder) were
    graded on different seeds: two shards or runs of one class that drew different cases, whether they
    graded other students or the same ones again (where a later run's results would replace all of an
    earlier run's, the merge looked like one seed). Different weeks' batches may differ."""
    seeds: dict[str, dict[int, set[str]]] = {}
    for data, folder in read:
        for assignment in data.get("assignments", ()):
            seeds.setdefault(str(assignment.get("id")), {}).setdefault(data.get("seed"), set()).add(str(folder))
    for assignment, by_seed in seeds.items():
        if len(by_seed) < 2:
            continue
        told = ", ".join(f"seed {seed} ({', '.join(sorted(folders))})" for seed, folders in
                         sorted(by_seed.items(), key=lambda item: str(item[0])))
        line = f"{assignment} was graded on {len(by_seed)} seeds: {told}"
        if not mixed:
            raise UsageError(f"{line}; a class is graded on one seed (give every shard and run the same --seed), "
                             f"so give one of those folders alone, or --mixed-seeds merges them (the later result of "
                             f"a name wins)")
        if warnings is not None:
            warnings.append(f"{line}: merged as asked (--mixed-seeds)")
