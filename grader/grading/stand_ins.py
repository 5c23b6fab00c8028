"""Right versions of the helper exercises, to verify a forgiveness: a case found right but for the
student's own faulty helper (a RightGivenHelper) is run again with that helper replaced, in the
student's process, by its stand-in, and keeps its points only if the student's code is right then.
The grader checks that run's outputs itself: whatever the student's code raised or returned the first
time decides nothing (issue 33: an exercise that raises "as the right computation would" on a wrong
helper's result; issue 34: an exercise mistake hidden behind a helper's).

The suites register the stand-ins (``grader.authoring.stand_in``, in suites/lesson/stand_ins.py): the
lesson's formulas, which students have, written with torch and math alone; the worker compiles each
one's source in its own namespace (grader.inside.worker ``Server.stand_in``).
"""
from __future__ import annotations

import inspect
import textwrap
from typing import Callable

SOURCES: dict[str, str] = {}  # helper exercise -> its stand-in's source


def stand_in(function: Callable) -> Callable:
    """``@stand_in`` on a right version of the helper exercise of the same name registers its source."""
    lines = textwrap.dedent(inspect.getsource(function)).splitlines()
    body = [line for line in lines if not line.startswith("@")]
    SOURCES[function.__name__] = "\n".join(body) + "\n"
    return function


def has_stand_in(helper: str) -> bool:
    return helper in SOURCES


def sources_for(helpers) -> dict[str, str] | None:
    """The stand-ins' sources for ``helpers``; None when one of them has none."""
    if not helpers or any(h not in SOURCES for h in helpers):
        return None
    return {h: SOURCES[h] for h in helpers}
