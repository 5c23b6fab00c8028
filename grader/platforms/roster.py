"""What every gradebook writer shares: the grades table that `grade export` hands it, and the roster
that maps our submission names (the folders `grade autograde` graded) to the LMS's own identifiers."""
from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from grader.errors import RosterError


@dataclass(frozen=True)
class Grades:
    """A class's grades: a column per assignment graded (its title and points possible) and, per
    submission, a score per column: None where it holds no result for that assignment (not handed in),
    "" where it holds no valid score, never a 0: the grader failed on it, or could not read the
    submission (a corrupt archive, an empty folder, no module of the course), which ``notes`` says
    why, by submission. Every writer writes "" as an empty cell (the LMS's "no grade") and says each
    note of a student it writes in its warnings (:func:`students`): an LMS's import file has no
    column for it."""

    columns: tuple[tuple[str, float], ...]
    scores: dict[str, tuple[float | str | None, ...]]
    notes: dict[str, str] = field(default_factory=dict)


# A name is data in every gradebook: no cell of a student's row may read as the gradebook's own control
# row or header (issue 44: a submission named "Points Possible" became Canvas's points-possible row and
# set every assignment's points possible to 0). Each writer lists its control labels (control()): a
# label's words in any case, with any spacing between them or none. A cell that holds one is written
# "(student) " + the cell, each run of the label's words joined by "_" ("Points Possible" ->
# "(student) Points_Possible"): the gradebook shows it as plain text, and no variant of a label is left
# in it. The writer says so in a warning; a cell that holds no label is written as it is.
NAME_MARK = "(student) "


def control(*words: str, whole: bool = False) -> re.Pattern:
    """A gradebook's control label: ``words`` in any case and spacing; ``whole``: the whole cell (spaces
    around it too), else anywhere in it."""
    body = r"\s*".join(f"({re.escape(word)})" for word in words)
    return re.compile(rf"^\s*{body}\s*$" if whole else body, re.IGNORECASE)


def inert(cell, controls: tuple[re.Pattern, ...], warnings: list[str]):
    """``cell`` (a name or identifier in a student's row) as text that matches none of ``controls``."""
    if not isinstance(cell, str) or not any(label.search(cell) for label in controls):
        return cell
    text = cell
    for label in controls:
        text = label.sub(lambda found: "_".join(found.groups()), text)
    warnings.append(f"{cell!r} reads as the gradebook's own row or header: written as {NAME_MARK + text!r}")
    return NAME_MARK + text


def _key(header: str) -> str:
    """A column's name, compared loosely: "SIS User ID", "sis_user_id" and "Sis user id" are one."""
    return re.sub(r"[^a-z0-9]+", "_", header.strip().lower()).strip("_")


def read_roster(path: Path, fields: dict[str, str], *, unique: tuple[str, ...],
                lms_row: Callable[[list[tuple[str, str]]], bool] | None = None) -> list[dict[str, str]]:
    """The roster's rows as {field: value}: its column ``submission`` (our name) and those of its columns
    that ``fields`` names (each header, compared loosely, -> the field it fills). Every row must hold one
    of the fields ``unique`` (those the LMS matches a student on), each value once, as each name. Refused,
    with what to fix: no such file, no ``submission`` column, none of ``unique``'s, a row with none of
    them, a name or an identifier twice. ``lms_row``: whether a row (each cell with its header, compared
    loosely) is one the LMS writes into its own export for itself (Canvas's points possible): such a row
    is skipped where it names no submission, so that the LMS's export, a column ``submission`` added,
    is a roster; a row that names one is the instructor's, and read as any other."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")  # a spreadsheet's UTF-8 starts with a BOM
    except (OSError, UnicodeDecodeError) as error:
        raise RosterError(f"{path}: cannot read the roster ({getattr(error, 'strerror', None) or error})") from None
    table = list(csv.reader(io.StringIO(text)))  # a quoted cell may hold a line break
    columns = {index: "submission" if _key(header) == "submission" else fields.get(_key(header))
               for index, header in enumerate(table[0] if table else ())}
    if "submission" not in columns.values():
        raise RosterError(f"{path}: the roster has no column 'submission' (the names grade autograde graded)")
    if not set(unique) & set(columns.values()):
        raise RosterError(f"{path}: the roster has none of the columns the LMS matches students on: "
                          + ", ".join(header for header, field in fields.items() if field in unique))
    rows, seen = [], {}
    headers = [_key(header) for header in table[0]]
    for line, values in enumerate(table[1:], start=2):
        if not any(value.strip() for value in values):
            continue
        row = {field: values[index].strip() for index, field in columns.items() if field and index < len(values)}
        if lms_row is not None and not row.get("submission") and lms_row(list(zip(headers, values))):
            continue
        if not any(row.get(field) for field in unique):
            raise RosterError(f"{path}: line {line} has no {' or '.join(unique)}: the LMS could not tell whose "
                              f"grades they are")
        for key in ("submission", *unique):
            value = row.get(key, "")
            if value and (key, value) in seen:
                raise RosterError(f"{path}: {key} {value!r} is on lines {seen[key, value]} and {line}: a "
                                  f"student a line, each name and identifier once")
            seen[key, value] = line
        rows.append(row)
    if not rows:
        raise RosterError(f"{path}: the roster holds no student (a header line, then a line per student)")
    return rows


def students(grades: Grades, rows: list[dict[str, str]], warnings: list[str], *,
             missing_as_zero: bool) -> list[tuple[dict[str, str], list[float | str]]]:
    """Each roster row with its scores, in the roster's order. A student without a result gets empty
    cells (an LMS reads one as "no grade"), 0 where ``missing_as_zero``; a cell without a valid score
    (the grader failed, or could not read the submission: Grades) stays empty either way, and a
    submission it could not read is named with why. A graded submission that the roster lacks is left
    out and named."""
    listed = {row.get("submission") for row in rows}
    unlisted = [name for name in grades.scores if name not in listed]
    if unlisted:
        warnings.append(f"graded but not in the roster, left out ({len(unlisted)}): " + ", ".join(unlisted[:10])
                        + (f" and {len(unlisted) - 10} more" if len(unlisted) > 10 else ""))
    absent = [row.get("submission") or "(no name)" for row in rows if row.get("submission") not in grades.scores]
    if absent:
        warnings.append(f"in the roster without a result ({len(absent)}): " + ", ".join(absent[:10])
                        + (f" and {len(absent) - 10} more" if len(absent) > 10 else "")
                        + (": 0 (--missing-as-zero)" if missing_as_zero else ": an empty grade"))
    warnings += [f"{row['submission']}: not graded, an empty grade: {grades.notes[row['submission']]}"
                 for row in rows if row.get("submission") in grades.notes]  # never a 0, --missing-as-zero or not
    empty = (None,) * len(grades.columns)
    return [(row, [(0 if missing_as_zero else "") if score is None else score
                   for score in grades.scores.get(row.get("submission"), empty)]) for row in rows]
