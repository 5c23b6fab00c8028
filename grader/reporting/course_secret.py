"""The course's secret: 32 random bytes in ``.grade-secret`` in the course folder, readable by its owner
alone, never printed and never released. It keys what no one without it may make or recompute:
``grade report --anonymise``'s pseudonyms (grader/reporting/class_report.py) and the manifest of every
results folder ``grade autograde`` writes (grader/reporting/result_folder.py), which ``grade export`` and
``grade report`` verify with it.
"""
from __future__ import annotations

import os
import secrets
from pathlib import Path

from grader.errors import CourseSecretError

SECRET_FILE = ".grade-secret"  # in the course folder


def course_secret(root: Path) -> bytes:
    """The course's secret: ``root/.grade-secret``, made there on first use (32 random bytes, readable
    by its owner alone). Where it cannot be made no pseudonym and no manifest is: an unkeyed one could
    be recomputed (a pseudonym from a roster, a manifest by whoever rewrote the results)."""
    path = Path(root) / SECRET_FILE
    if (kept := _read_secret(path)) is not None:
        return kept
    try:
        handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another run made it meanwhile
        return course_secret(root)
    except OSError as exc:
        raise CourseSecretError(path, exc) from None
    secret = secrets.token_bytes(32)
    try:
        with os.fdopen(handle, "w", encoding="ascii") as stream:
            stream.write(secret.hex() + "\n")
    except OSError as exc:
        path.unlink(missing_ok=True)
        raise CourseSecretError(path, exc) from None
    return secret


def _read_secret(path: Path) -> bytes | None:
    """The secret ``path`` holds, or None where there is none yet."""
    try:
        text = path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise CourseSecretError(path, exc) from None
    try:
        secret = bytes.fromhex(text)
    except ValueError:
        secret = b""
    if len(secret) != 32:
        raise CourseSecretError(path, None)
    _kept_apart(path)
    return secret


def _kept_apart(path: Path) -> None:
    """Refuse a secret that others may read or anyone but its owner write (mode bits 0o037: a staff group may
    read it, 0o640): whoever reads it can sign a results folder's manifest and recompute --anonymise's
    pseudonyms from a roster (red team round 30b: a course folder copied with its secret at 0644, and an
    ordinary user forged a signed manifest with full marks that root's `grade export` took)."""
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        raise CourseSecretError(path, exc) from None
    if mode & 0o037:
        raise CourseSecretError(path, None, f"can be {'written' if mode & 0o022 else 'read'} by others (mode "
                                            f"{mode & 0o777:o}), who could sign results and recompute pseudonyms "
                                            f"with it: chmod 600 {path}")


def kept_secret(root: Path) -> bytes | None:
    """The course's secret where it has one already, else None: verifying results makes none (a secret
    made now verifies nothing written before it)."""
    return _read_secret(Path(root) / SECRET_FILE)

