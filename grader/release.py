"""``grade release``: regenerate the student's ``assignments/`` from ``solutions/``.

Modules: every ``### BEGIN SOLUTION`` ... ``### END SOLUTION`` block becomes
``raise NotImplementedError(...)``, so a stub keeps the reference's signatures, docstrings and
constructor lines and is never written by hand. Notebooks: nbgrader's own preprocessors
(see :mod:`grader.nbgrader_glue`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from grader.config import Assignment, Course
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


@dataclass(frozen=True)
class Stale:
    path: Path
    reason: str


def release_modules(course: Course, assignments: tuple[Assignment, ...], *, check: bool) -> list[Stale]:
    """Write (or, with ``check``, compare) the stub module of each assignment. Returns what differs."""
    stale = []
    for assignment in assignments:
        source = course.root / "solutions" / assignment.id / assignment.module
        target = course.root / "assignments" / assignment.id / assignment.module
        expected = stub_source(source.read_text(encoding="utf-8"), str(source))
        current = target.read_text(encoding="utf-8") if target.is_file() else None
        if current == expected:
            continue
        if check:
            stale.append(Stale(target, "missing" if current is None else "differs from the generated stub"))
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(expected, encoding="utf-8")
    return stale
