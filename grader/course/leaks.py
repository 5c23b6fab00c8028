"""Leak scanning: what must never reach a student, looked for in a folder about to be given out.

``grade release --check`` scans the committed ``assignments/`` (a solution or hidden-test marker, a
path to the reference); ``grade release --out`` scans the whole distribution it built before
writing it (any line of a solution block, three consecutive lines of a hidden suite, a file under
``solutions/`` or ``suites/hidden/``).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from grader.config import Course
from grader.layout import Layout
from grader.course.stubs import BEGIN, END, HIDDEN_BEGIN

_TEXT = (".py", ".ipynb", ".md", ".txt", ".json", ".toml", ".yml", ".yaml", ".ini", ".cfg", "")


@dataclass(frozen=True)
class Stale:
    path: Path
    reason: str


# what must never appear in a student's files
LEAKS = (BEGIN, HIDDEN_BEGIN, "solutions/", "suites/hidden")


def leaks(root: Path) -> list[Stale]:
    """Files under ``root`` that contain a solution marker, a hidden test or a path to the reference."""
    found = []
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.suffix in (".py", ".ipynb", ".md", ".txt", ".json", ".toml"):
            text = path.read_text(encoding="utf-8", errors="replace")
            for marker in LEAKS:
                if marker in text:
                    found.append(Stale(path, f"leaks {marker!r}"))
                    break
    return found


def leaks_in(course: Course, root: Path) -> list[Stale]:
    """Files under ``root`` that are, or hold code of, a reference solution or a hidden suite: a line
    of a solution block (16 characters or more, found nowhere outside such blocks), three consecutive
    lines of a hidden suite (outside grader/, the library the suites themselves import from), a
    solution or hidden-test marker in assignments/."""
    solution = solution_lines(course)
    hidden = set()
    for path in course.layout.suite_folder("hidden").glob("*.py"):
        hidden |= _windows(path.read_text(encoding="utf-8"))
    found, layout = [], Layout(root)
    hidden_parts = layout.suite_folder("hidden").relative_to(root).parts  # anywhere: grader/_course/ too
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        parts = path.relative_to(root).parts
        if layout.solutions.name in parts or any(parts[i:i + 2] == hidden_parts for i in range(len(parts) - 1)):
            found.append(Stale(path, "is under solutions/ or suites/hidden/"))
            continue
        if path.suffix not in _TEXT:
            continue
        text = "\n".join(_source_lines(path))
        line = next((s for s in (x.strip() for x in text.splitlines()) if s in solution), None)
        if line is not None:
            found.append(Stale(path, f"holds a line of a reference solution: {line!r}"))
        elif parts[0] != "grader" and _windows(text) & hidden:
            found.append(Stale(path, "holds lines of a hidden suite"))
    return found + leaks(layout.assignments)


def solution_lines(course: Course) -> set[str]:
    """The distinctive lines of the solution blocks of ``solutions/`` (modules and notebooks)."""
    inside_blocks, elsewhere = set(), set()
    for path in course.layout.solutions.rglob("*"):
        if path.suffix not in (".py", ".ipynb"):
            continue
        inside = False
        for line in _source_lines(path):
            stripped = line.strip()
            if stripped in (BEGIN, END):
                inside = stripped == BEGIN
            else:
                (inside_blocks if inside else elsewhere).add(stripped)
    return {s for s in inside_blocks - elsewhere if len(s) >= 16 and not s.startswith("#")}


def _source_lines(path: Path) -> list[str]:
    """A file's lines; for a notebook, the lines of its cells."""
    try:
        text = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return []
    if path.suffix != ".ipynb":
        return text.splitlines()
    try:
        cells = json.loads(text).get("cells", [])
    except (ValueError, AttributeError):
        return text.splitlines()
    source = (c.get("source", "") for c in cells)
    return [line for s in source for line in ("".join(s) if isinstance(s, list) else s).splitlines()]


def _windows(text: str) -> set[tuple[str, ...]]:
    """Runs of three consecutive non-blank lines (stripped) with 90 characters or more between them."""
    lines = [s for s in (x.strip() for x in text.splitlines()) if s]
    return {tuple(lines[i:i + 3]) for i in range(len(lines) - 2) if sum(map(len, lines[i:i + 3])) >= 90}
