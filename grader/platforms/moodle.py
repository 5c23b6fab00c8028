"""`grade export --format moodle`: the CSV that Moodle's gradebook imports (Grades -> Import -> CSV file).

As Moodle reads it (docs.moodle.org, "Grade import"; moodle/moodle, grade/import/csv/classes/load_data.php):
a header line, then a line per student. On its preview page the teacher maps the user column ("Map
from": this file's first column, Moodle's default) to a user field ("Map to": useridnumber, useremail
or username, the column's name says which) and each grade column to a grade item, or to a new one.
A value Moodle cannot find as a user stops the whole import, so only students it can match are
written. An empty cell (or "-") is "no grade" and clears a grade the item holds: a submission without
a valid score (the grader failed on it, or could not read it: a corrupt upload, an empty folder) is an
empty cell, never a 0, and a warning names it with why (the import file has no column for a note).
"""
from __future__ import annotations

from pathlib import Path

from grader.errors import RosterError
from grader.platforms.roster import Grades, control, inert, read_roster, students
from grader.reporting.formats import csv_text

# the user fields Moodle maps to, the roster's first that it has is written: field -> (header, "Map to")
USER_FIELDS = {"idnumber": ("ID number", "useridnumber"), "email": ("Email address", "useremail"),
               "username": ("Username", "username")}
ROSTER = {"idnumber": "idnumber", "id_number": "idnumber", "email": "email", "email_address": "email",
          "username": "username", "user_name": "username"}


def write(grades: Grades, roster: Path | None, warnings: list[str], *, missing_as_zero: bool = False) -> str:
    """The Moodle grade import CSV of ``grades``: a row per student of ``roster`` (a CSV of our names,
    column ``submission``, and one of idnumber, email, username: the first of them it has is the user
    column), or without one a row per submission whose name is its Moodle username, said in ``warnings``."""
    if roster is None:
        warnings.append("no --roster: each submission's name is written as its Moodle username (Map to: username), "
                        "and a name Moodle does not know stops its whole import; give --roster FILE.csv (columns "
                        "submission, and idnumber, email or username) where names are not Moodle usernames")
        rows, field = [{"submission": name, "username": name} for name in grades.scores], "username"
    else:
        rows = read_roster(roster, ROSTER, unique=tuple(USER_FIELDS))
        field = next(f for f in USER_FIELDS if any(f in row for row in rows))
        missing = [row.get("submission") or "(no name)" for row in rows if not row.get(field)]
        if missing:
            raise RosterError(f"{roster}: the user column is {field} (the first of {', '.join(USER_FIELDS)} that "
                              f"it has) and {', '.join(missing[:5])} have none: Moodle stops at a user it cannot find")
    header = [USER_FIELDS[field][0], *(title for title, _ in grades.columns)]
    # no user cell may read as a header of the file or a user field Moodle maps to (roster.py, inert)
    labels = dict.fromkeys([*header, *(name for pair in USER_FIELDS.values() for name in pair)])
    controls = tuple(control(*label.split(), whole=True) for label in labels if label.split())
    table = [header]
    table += [[inert(row[field], controls, warnings), *scores]
              for row, scores in students(grades, rows, warnings, missing_as_zero=missing_as_zero)]
    return csv_text(table)  # names and identifiers as data: none is a formula in a spreadsheet
