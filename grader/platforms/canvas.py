"""`grade export --format canvas`: the CSV that Canvas's gradebook imports (Grades -> Import).

As Canvas's importer reads it (instructure/canvas-lms, app/models/gradebook_importer.rb; Instructure's
guide "How do I import grades in the Gradebook?"): the header's student columns "Student", "ID",
"SIS User ID", "SIS Login ID", "Section", then a column per assignment, named by its title (Canvas
updates the assignment of that title, or of the id in "Title (123)" where a header carries one, and
creates one from a header it does not know, taking its points from the row below); then the row whose
first cell is "Points Possible"; then a row per student. Canvas finds a row's student by ID (its
numeric user id), else SIS User ID, else SIS Login ID, else by name; a row it cannot place is listed as
unmatched on its import page, and a student the file leaves out keeps what Canvas holds. An empty cell
is "no grade": against a score Canvas already holds it shows as a change, which its review page lists.
"""
from __future__ import annotations

from pathlib import Path

from grader.platforms.roster import Grades, control, inert, read_roster, students
from grader.reporting.formats import csv_text

STUDENT_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
FIELDS = ("student", "id", "sis_user_id", "sis_login_id", "section")
# a roster's headers (compared loosely: "SIS User ID" is sis_user_id) -> the column they fill
ROSTER = {"student": "student", "name": "student", "id": "id", "canvas_id": "id", "sis_user_id": "sis_user_id",
          "sis_login_id": "sis_login_id", "login_id": "sis_login_id", "section": "section"}
MATCHED_ON = ("id", "sis_user_id", "sis_login_id", "student")  # Canvas's order
# the rows Canvas's importer takes for its own (gradebook_importer.rb): the points-possible row is any row
# whose first cell holds "Points Possible"; a row of nothing but "Muted", "Manual Posting" or "Read Only"
# (or empty cells) is skipped. No cell of a student's row may hold one (grader/platforms/roster.py, inert)
CONTROLS = (control("points", "possible"), control("muted", whole=True), control("manual", "posting", whole=True),
            control("read", "only", whole=True))


def write(grades: Grades, roster: Path | None, warnings: list[str], *, missing_as_zero: bool = False) -> str:
    """The Canvas gradebook CSV of ``grades``: a row per student of ``roster`` (a CSV of our names,
    column ``submission``, and Canvas's columns: ID, SIS User ID or SIS Login ID, and Student and
    Section where it has them; Student is else the submission's name), or without one a row per
    submission whose name is its SIS Login ID (and Student), said in ``warnings``."""
    if roster is None:
        warnings.append("no --roster: each submission's name is written as its SIS Login ID (and Student name), "
                        "which Canvas matches after ID and SIS User ID; where names are not Canvas logins, give "
                        "--roster FILE.csv (columns submission, and ID, SIS User ID or SIS Login ID)")
        rows = [{"submission": name, "student": name, "sis_login_id": name} for name in grades.scores]
    else:
        rows = read_roster(roster, ROSTER, unique=MATCHED_ON[:3])
    table = [[*STUDENT_COLUMNS, *(title for title, _ in grades.columns)],
             ["Points Possible", "", "", "", "", *(points for _, points in grades.columns)]]
    table += [[inert(cell, CONTROLS, warnings) for cell in
               (row.get("student") or row.get("submission", ""), *(row.get(field, "") for field in FIELDS[1:]))]
              + scores for row, scores in students(grades, rows, warnings, missing_as_zero=missing_as_zero)]
    return csv_text(table)  # names and identifiers as data: none is a formula in a spreadsheet
