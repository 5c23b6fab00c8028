"""Stubs: the student version of a reference module, generated, never written by hand.

Every ``### BEGIN SOLUTION`` ... ``### END SOLUTION`` block becomes ``raise NotImplementedError(...)``,
so a stub keeps the reference's signatures, docstrings and constructor lines. Notebooks use nbgrader's
own markers and preprocessors (grader/course/notebooks.py), which this module's stub_source also serves
for the ``.py`` export of a notebook.
"""
from __future__ import annotations

import re

from grader.errors import GraderError

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
HIDDEN_BEGIN, HIDDEN_END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
_DEF = re.compile(r"^(\s*)(?:async\s+)?(def|class)\s+(\w+)")


class MarkerError(GraderError):
    """A solution file whose markers do not pair up."""


def stub_source(text: str, origin: str = "<solution>") -> str:
    """The student version of a solution module: each marked block replaced by a NotImplementedError."""
    out: list[str] = []
    scopes: list[tuple[int, str]] = []  # (indent, name) of the enclosing defs and classes
    inside = False
    for number, line in enumerate(text.splitlines(keepends=True), start=1):
        stripped = line.strip()
        if stripped == BEGIN:
            if inside:
                raise MarkerError(f"{origin}:{number}: {BEGIN} inside another solution block")
            inside = True
            indent = line[: len(line) - len(line.lstrip())]
            name = ".".join(n for _, n in scopes) or "this exercise"
            out.append(f"{indent}# YOUR CODE HERE\n")
            out.append(f'{indent}raise NotImplementedError("{name} is not implemented yet")\n')
            continue
        if stripped == END:
            if not inside:
                raise MarkerError(f"{origin}:{number}: {END} without {BEGIN}")
            inside = False
            continue
        if inside:
            continue
        match = _DEF.match(line)
        if match:
            depth = len(match.group(1))
            scopes = [(d, n) for d, n in scopes if d < depth] + [(depth, match.group(3))]
        out.append(line)
    if inside:
        raise MarkerError(f"{origin}: {BEGIN} is never closed")
    return "".join(out)
