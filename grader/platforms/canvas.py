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
So a submission without a valid score (the grader failed on it, or could not read it: a corrupt upload,
an empty folder) is an empty cell, never a 0, and a warning names it with why (the import file has no
column for a note).

A roster may be Canvas's own gradebook export (Grades -> Export) with a ``submission`` column added. As
Canvas writes it (instructure/canvas-lms, lib/gradebook_exporter.rb): the header, then, where some
assignment posts manually, a row of nothing but "Manual Posting" cells, then the points-possible row
("    Points Possible", "(read only)" under the totals), then a row per student, Canvas's Test Student
(its Student View, "Student, Test") last. Those rows are Canvas's, not students (:func:`canvas_row`):
read_roster skips them, and refuses any other row that names no student.
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
# what else Canvas's gradebook export writes in rows of its own (gradebook_exporter.rb): "Manual Posting (scores
# hidden from instructors)" in its posting row, "(read only)" under its totals; and its Test Student's name
POSTING = (control("manual", "posting"), control("muted", whole=True), control("read", "only"))
TEST_STUDENT = (control("student", ",", "test", whole=True), control("test", "student", whole=True))


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
        rows = read_roster(roster, ROSTER, unique=MATCHED_ON[:3], lms_row=canvas_row)
    table = [[*STUDENT_COLUMNS, *(title for title, _ in grades.columns)],
             ["Points Possible", "", "", "", "", *(points for _, points in grades.columns)]]
    table += [[inert(cell, CONTROLS, warnings) for cell in
               (row.get("student") or row.get("submission", ""), *(row.get(field, "") for field in FIELDS[1:]))]
              + scores for row, scores in students(grades, rows, warnings, missing_as_zero=missing_as_zero)]
    return csv_text(table)  # names and identifiers as data: none is a formula in a spreadsheet


def canvas_row(cells: list[tuple[str, str]]) -> bool:
    """Whether a row of Canvas's gradebook export (``cells``: each header, compared loosely, and its
    cell) is Canvas's own: its points-possible row (a cell holds "Points Possible"), its posting row
    (nothing but "Manual Posting", "Muted", "Read Only" and empty cells) or its Test Student ("Student,
    Test", or LastName "Student" and FirstName "Test"), whom Student View adds to every course."""
    values = [value for _, value in cells if value.strip()]
    if any(CONTROLS[0].search(value) for value in values):
        return True
    if all(any(label.search(value) for label in POSTING) for value in values):
        return True
    named = dict(cells)
    name = named.get("student") or f"{named.get('lastname', '')}, {named.get('firstname', '')}"
    return any(label.match(name) for label in TEST_STUDENT)
