"""The user's own cache folder for the grader: ``$XDG_CACHE_HOME`` or ``~/.cache``, then ``attention-course``.

Used for what only saves time, never for what decides a score: compiled files (grader/__main__.py), a release's
recording of the public suites (grader.course.kept_recordings), how long each assignment took to grade
(grader.grading.twins). A folder is used only where the user alone owns and can write every folder down to it,
none of them a link: a file there that someone else could write is not the user's (compiled code from it would
run as this user, as root when an instructor grades). Imports nothing but the standard library's ``os`` and
``stat``: grader/__main__.py calls it before anything else is imported.
"""
from __future__ import annotations

import os
import stat

NAME = "attention-course"


def folder(name: str) -> str | None:
    """``attention-course/<name>`` in the user's cache folder, made where missing (mode 0700); None where some
    folder on the way is not the user's alone (another owner, writable by others, a link) or cannot be made."""
    if not hasattr(os, "geteuid"):
        return None
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    if not os.path.isabs(root):
        return None
    folders = (root, os.path.join(root, NAME), os.path.join(root, NAME, name))
    try:
        for each in folders:
            if not os.path.isdir(each):
                os.mkdir(each, 0o700)
            if not users_alone(os.lstat(each), stat.S_ISDIR):  # a link is not followed: refused
                return None
    except OSError:
        return None
    return folders[-1]


def users_alone(st: os.stat_result, kind) -> bool:
    """Whether ``st`` is of the ``kind`` (``stat.S_ISDIR``, ``stat.S_ISREG``), owned by this user and writable by
    no one else."""
    return kind(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o022
