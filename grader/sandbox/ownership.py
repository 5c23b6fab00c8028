"""Paths no other user can change: what the grader writes or believes (a results folder, an export, a student
distribution) must not sit where another user could put something in its place."""
from __future__ import annotations

import os
import stat
from pathlib import Path

from grader.errors import UntrustedResults


def check_ancestors(folder: Path, shown: str = "--out") -> None:
    """Refuse ``folder`` where a folder above it is not yours or root's, or can be written by group or
    others without the sticky bit (as sshd's StrictModes): whoever could rename its entries could put
    another results folder, genuine but older, in its place (issue 44: a co-tenant owning the folder
    above --out swapped in an earlier run, and a bystander's export went from 600 to 100). Raises
    UntrustedResults."""
    me = os.geteuid()
    for above in Path(os.path.abspath(folder)).parents:
        try:
            seen = os.stat(above)
        except OSError as error:
            raise UntrustedResults(f"{shown} {folder}: {above} cannot be examined ({error.strerror or error})") \
                from None
        if seen.st_uid not in (me, 0):
            raise UntrustedResults(f"{shown} {folder} is inside {above}, which belongs to uid {seen.st_uid}: whoever "
                                   f"owns it could put another results folder in this one's place; use a folder "
                                   f"under one of your own (or root's)")
        if seen.st_mode & 0o022 and not seen.st_mode & stat.S_ISVTX:
            raise UntrustedResults(f"{shown} {folder} is inside {above}, which others can write (and it has no "
                                   f"sticky bit): they could put another results folder in this one's place; "
                                   f"chmod go-w {above}, or use a folder of your own")
