"""The names LMSes give a class's files when an instructor downloads them all, read back to a student.

- **Canvas** ("Download Submissions"): one flat folder, each file named
  ``<sortable name>_[LATE_]<user id>_<submission id>_<the student's file name>`` (``doejane_12345_67890_
  attention_basics.py``; a second upload of one name ``attention_basics-1.py``).
- **Moodle** ("Download all submissions"): flat, ``<Full Name>_<participant id>_assignsubmission_file_
  <the student's file name>``, or with "Download submissions in folders" one folder a student and plugin,
  ``<Full Name>_<participant id>_assignsubmission_file_/`` (``..._onlinetext_/`` beside it for online text).

A student is the owner key (``doejane_12345``, ``Jane Doe_12345``): every file and folder of one owner is
one submission, graded under that name (the roster's ``submission`` column). A name that fits neither is
its own submission, as before.
"""
from __future__ import annotations

import re

_CANVAS = re.compile(r"^(?P<who>[^\W_]+)_(?:LATE_)?(?P<user>\d+)_\d+_(?P<file>.+)$", re.IGNORECASE)
_MOODLE = re.compile(r"^(?P<who>.+?)_(?P<user>\d+)_assign(?:submission|feedback)_(?P<plugin>[a-z]+)_?(?P<file>.*)$")


def owner(name: str) -> tuple[str, str] | None:
    """``(owner key, the student's own file name)`` for an LMS's name (the file name is "" for Moodle's
    folder of a student), None for a name that is no LMS's."""
    if found := _MOODLE.match(name):
        return f"{found['who']}_{found['user']}", found["file"]
    if found := _CANVAS.match(name):
        return f"{found['who']}_{found['user']}", found["file"]
    return None
