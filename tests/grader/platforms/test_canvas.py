"""grade export --format canvas: the CSV read back as Canvas's gradebook importer reads it
(instructure/canvas-lms, app/models/gradebook_importer.rb; Instructure's guide "How do I import grades
in the Gradebook?")."""
import csv
import io
import re

from test_export import FORMULAS  # on sys.path: this folder's conftest puts it there

FORMULA = FORMULAS[0]  # as the shards' conftest names a submission

ROSTER = ("Student,ID,SIS User ID,SIS Login ID,Section,submission",
          "Zoe Zhang,101,S-1,zoe@uni.example,Lab A,zoe",
          [FORMULA, "102", "S-2", "f@uni.example", "Lab B", FORMULA],  # a name a spreadsheet would run
          "Amy Adams,103,S-3,amy@uni.example,Lab A,amy")


def canvas_reads(text):
    """What Canvas takes from the file: the header (its student columns checked as the importer checks
    them), each assignment's points possible, and each student row's grades by how Canvas finds the
    student (ID, else SIS User ID, else SIS Login ID, else the name), each grade a number or None."""
    table = list(csv.reader(io.StringIO(text)))
    header = table[0]
    assert "Student" in header[0] and "ID" in header[1] and len(header) > 3
    assert header[2] == "SIS User ID" and header[3] == "SIS Login ID" and "Section" in header[4]  # 5 student columns
    assignments = header[5:]
    assert "Points Possible" in table[1][0]
    points = dict(zip(assignments, map(float, table[1][5:])))
    students = {}
    for row in table[2:]:
        assert len(row) == len(header)
        key = next(("ID", v) if i == 1 else (header[i], v) for i, v in
                   ((1, row[1]), (2, row[2]), (3, row[3]), (0, row[0])) if v)
        students[key] = {a: float(cell) if cell.strip() else None for a, cell in zip(assignments, row[5:])}
    return header, points, students, table


def test_the_export_is_canvass_gradebook_csv_a_row_per_roster_student(export, roster):
    code, text, err = export("--format", "canvas", "--roster", roster(*ROSTER))
    assert code == 0, err
    header, points, students, table = canvas_reads(text)
    assert header == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", export.title]
    assert points == {export.title: 100.0}
    assert students[("ID", "101")] == {export.title: 100.0}  # numbers as numbers
    assert students[("ID", "102")] == {export.title: 50.0}
    assert students[("ID", "103")] == {export.title: None}  # in the roster, not graded: an empty grade, never 0
    assert table[2][:5] == ["Zoe Zhang", "101", "S-1", "zoe@uni.example", "Lab A"]
    assert table[3][0] == f"'{FORMULA}"  # the formula-like name is text
    assert not [cell for row in table for cell in row if cell.startswith(("=", "+", "-", "@"))]
    # yan was graded (the grader failed on softmax) but is not in the roster: left out and said
    assert len(table) == 5 and "graded but not in the roster, left out (1): yan" in err
    assert "in the roster without a result (1): amy: an empty grade" in err


def test_missing_as_zero_and_a_grade_the_grader_failed_on_stays_empty(export, roster):
    path = roster(*ROSTER, "Yan Yu,104,S-4,yan@uni.example,Lab B,yan")
    code, text, err = export("--format", "canvas", "--roster", path, "--missing-as-zero")
    assert code == 0, err
    _, _, students, _ = canvas_reads(text)
    assert students[("ID", "103")] == {export.title: 0.0}  # asked for: amy's 0
    assert students[("ID", "104")] == {export.title: None}  # the grader's failure is never a 0


def test_without_a_roster_each_name_is_its_sis_login_id_said_in_one_line(export):
    code, text, err = export("--format", "canvas")
    assert code == 0, err
    _, _, students, table = canvas_reads(text)
    assert set(students) == {("SIS Login ID", "zoe"), ("SIS Login ID", "yan"), ("SIS Login ID", f"'{FORMULA}")}
    assert [row[0] for row in table[2:]] == [row[3] for row in table[2:]]  # the name is the Student too
    (line,) = [line for line in err.splitlines() if "--roster" in line]
    assert line.startswith("grade: warning: no --roster") and "SIS Login ID" in line


def test_a_roster_canvas_could_not_match_with_is_refused_in_one_line(export, roster):
    for lines, said in [(("Student,ID", "Zoe,101"), "no column 'submission'"),
                        (("submission,Student,Section", "zoe,Zoe,A"), "none of the columns"),
                        (("submission,ID", "zoe,101", "zoe,102"), "submission 'zoe' is on lines 2 and 3"),
                        (("submission,ID", "zoe,101", "yan,101"), "id '101' is on lines 2 and 3"),
                        (("submission,ID,SIS Login ID", "zoe,101,", "yan,,"), "line 3 has no")]:
        code, text, err = export("--format", "canvas", "--roster", roster(*lines))
        assert code == 2 and text == "" and err.count("\n") == 1 and said in err, (lines, err)
        assert err.startswith("grade: error: ")


def test_a_roster_goes_with_an_lms_format_only(export, roster):
    code, _, err = export("--roster", roster(*ROSTER))
    assert code == 2 and "--format" in err


# --- issue 44: no name is Canvas's "Points Possible" row, nor a row it skips --------------------------------
CONTROL_NAMES = ("Points Possible", "points  possible", "POINTS\u00a0POSSIBLE", "xPointsPossibley", "Muted",
                 " read only ", "Manual Posting", "Muted Points Possible")
LABELS = re.compile(r"points\s*possible", re.IGNORECASE)  # Canvas: any first cell holding it
SKIPPED = re.compile(r"\s*(muted|manual\s*posting|read\s*only)?\s*", re.IGNORECASE)  # a row of only these


def _student_rows_are_students(table):
    assert [row for row in table[1:] if LABELS.search(row[0])] == [table[1]]  # the one points-possible row
    for row in table[2:]:
        assert not any(LABELS.search(cell) or SKIPPED.fullmatch(cell) and cell.strip() for cell in row[:5]), row


def test_a_name_never_becomes_the_points_possible_row_or_a_row_canvas_skips(export_named):
    code, text, err = export_named([*CONTROL_NAMES, "zoe"], "--format", "canvas")
    assert code == 0, err
    header, points, students, table = canvas_reads(text)
    assert points == {export_named.title: 100.0}  # the attacker set every points possible to 0
    _student_rows_are_students(table)
    assert students[("SIS Login ID", "(student) Points_Possible")] == {export_named.title: 10.0}
    assert students[("SIS Login ID", "(student) xPoints_Possibley")] == {export_named.title: 40.0}
    assert students[("SIS Login ID", "(student) Muted")] == {export_named.title: 50.0}
    assert students[("SIS Login ID", "zoe")] == {export_named.title: 90.0}  # a plain name as it is
    assert len(students) == len(CONTROL_NAMES) + 1
    assert "'Points Possible' reads as the gradebook's own row or header" in err


def test_a_rosters_student_name_never_becomes_a_control_row_either(export_named, roster):
    path = roster("Student,ID,Section,submission", "Points Possible,101,Muted,ann", "Read Only,102,Lab A,bob")
    code, text, err = export_named(["ann", "bob"], "--format", "canvas", "--roster", path)
    assert code == 0, err
    _, points, students, table = canvas_reads(text)
    assert points == {export_named.title: 100.0}
    _student_rows_are_students(table)
    assert [row[:5] for row in table[2:]] == [["(student) Points_Possible", "101", "", "", "(student) Muted"],
                                              ["(student) Read_Only", "102", "", "", "Lab A"]]
    assert students == {("ID", "101"): {export_named.title: 10.0}, ("ID", "102"): {export_named.title: 20.0}}


# --- issue 45: Canvas's own gradebook export is a roster; a submission not read is an empty grade -----------
TOTALS = [f"{group}{kind}" for group in ("Assignments ", "") for kind in (
    "Current Points", "Final Points", "Current Score", "Unposted Current Score", "Final Score", "Unposted Final Score")]
ZOE = ["Zhang, Zoe", "101", "S-1", "zoe@uni.example", "Lab A", "", "", "8.00", *["8.00"] * len(TOTALS), "zoe"]
AMY = ["Adams, Amy", "103", "S-3", "amy@uni.example", "Lab B", "late", "N/A", "EX", *["0.00"] * len(TOTALS), "amy"]
TEST_STUDENT = ["Student, Test", "9001", "", "", "Lab A", "", "", "", *["0.00"] * len(TOTALS), ""]


def canvas_gradebook_export(path, *students, first=("Student",)):
    """Canvas's own gradebook export (Grades -> Export) with a column ``submission`` added, as
    lib/gradebook_exporter.rb writes it (instructure/canvas-lms): a BOM, CRLF lines, the student columns, a
    custom column (Notes), each assignment as "Title (id)", the totals; then its posting row (an assignment
    that posts manually), its points-possible row ("    Points Possible", "(read only)" under the totals and
    a read-only custom column), the students by name, and the Test Student of Student View last."""
    import csv

    header = [*first, "ID", "SIS User ID", "SIS Login ID", "Section", "Notes", "Week 1: Attention basics (48213)",
              "Quiz 1 (48214)", *TOTALS, "submission"]
    posting = ["", "", "", "", "", "", "Manual Posting (scores hidden from instructors)", "", *[""] * len(TOTALS), ""]
    points = ["    Points Possible", "", "", "", "", "(read only)", "100.00", "10.00", *["(read only)"] * len(TOTALS), ""]
    with path.open("w", newline="", encoding="utf-8-sig") as handle:
        csv.writer(handle, lineterminator="\r\n").writerows([header, posting, points, *students])
    return path


def test_canvass_own_gradebook_export_is_a_roster_its_control_rows_and_test_student_skipped(export, tmp_path):
    """Issue 45: "line 2 has no id" (its posting and points-possible rows), though the docs say Canvas's
    export can be pasted in; its Test Student was written back as a student "(no name)" without a result."""
    path = canvas_gradebook_export(tmp_path / "canvas-export.csv", ZOE, AMY, TEST_STUDENT)
    code, text, err = export("--format", "canvas", "--roster", path)
    assert code == 0, err
    header, points, students, table = canvas_reads(text)
    assert points == {export.title: 100.0}
    assert students == {("ID", "101"): {export.title: 100.0}, ("ID", "103"): {export.title: None}}
    assert [row[:5] for row in table[2:]] == [ZOE[:5], AMY[:5]]  # the roster's students, in its order
    assert "(no name)" not in err and "Test" not in text
    assert "in the roster without a result (1): amy: an empty grade" in err
    split = [["Zhang", "Zoe", *ZOE[1:]], ["Student", "Test", *TEST_STUDENT[1:]]]  # "first and last names" setting
    code, text, err = export("--format", "canvas", "--roster",
                             canvas_gradebook_export(tmp_path / "split.csv", *split, first=("LastName", "FirstName")))
    assert code == 0 and set(canvas_reads(text)[2]) == {("ID", "101")}, err


def test_a_canvas_export_with_a_row_that_names_no_student_is_still_refused(export, tmp_path):
    """Only Canvas's own rows are skipped: a row that names nobody, or names a submission and no id, is broken."""
    nobody = ["", "", "", "", "Lab B", "", "", "", *[""] * len(TOTALS), ""]
    unmatched = ["Lee, Kim", "", "", "", "Lab B", "", "", "", *[""] * len(TOTALS), "kim"]
    mapped = ["    Points Possible", "", "", "", "", "", "100.00", "", *[""] * len(TOTALS), "zoe"]
    for row in (nobody, unmatched, mapped):
        path = canvas_gradebook_export(tmp_path / "export.csv", ZOE, row)
        code, text, err = export("--format", "canvas", "--roster", path)
        assert code == 2 and text == "" and err.count("\n") == 1, (row, err)
        assert "line 5 has no id or sis_user_id or sis_login_id" in err, err


def test_a_submission_that_could_not_be_read_is_an_empty_canvas_grade_said_with_why(export_unread):
    """Issue 45: jo's corrupt zip went to Canvas as 0.0; kim's code ran (it crashed the grader): 0 is a score."""
    for options in ((), ("--missing-as-zero",)):
        code, text, err = export_unread("--format", "canvas", *options)
        assert code == 0, err
        _, _, students, _ = canvas_reads(text)
        assert students == {("SIS Login ID", "jo"): {export_unread.title: None},
                            ("SIS Login ID", "kim"): {export_unread.title: 0.0},
                            ("SIS Login ID", "zoe"): {export_unread.title: 100.0}}
        assert "grade: warning: jo: not graded, an empty grade: jo.zip is not a valid .zip file (BadZipFile)" \
            in err.splitlines()
        assert "kim: not graded" not in err
