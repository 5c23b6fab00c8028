"""grade export --format moodle: the CSV read back as Moodle's grade import from a CSV file reads it
(docs.moodle.org, "Grade import"; moodle/moodle, grade/import/csv/classes/load_data.php)."""
import csv
import io

from test_export import FORMULAS  # on sys.path: this folder's conftest puts it there

FORMULA = FORMULAS[0]  # as the shards' conftest names a submission

ROSTER = (["submission", "Email address", "ID number", "Full name"],
          ["zoe", "zoe@uni.example", "1001", "Zoe Zhang"],
          [FORMULA, "f@uni.example", "1002", "F"],
          ["amy", "amy@uni.example", "1003", "Amy Adams"])


def moodle_reads(text, map_to):
    """What Moodle's import takes, its user column (the first, Moodle's default "Map from") mapped to
    ``map_to``: each row's user, which must be there (a blank or unknown one stops the whole import),
    and each grade column's values as Moodle reads them: '' or '-' no grade (None), else a number."""
    table = list(csv.reader(io.StringIO(text)))
    header = table[0]
    assert header[0] == {"useridnumber": "ID number", "useremail": "Email address", "username": "Username"}[map_to]
    grades = {}
    for row in table[1:]:
        assert len(row) == len(header) and row[0].strip(), row  # a row Moodle could not place stops it all
        grades[row[0]] = {item: None if cell.strip() in ("", "-") else float(cell)
                          for item, cell in zip(header[1:], row[1:])}
    return header, grades, table


def test_the_export_is_moodles_grade_import_csv_mapped_by_id_number(export, roster):
    code, text, err = export("--format", "moodle", "--roster", roster(*ROSTER))
    assert code == 0, err
    header, grades, table = moodle_reads(text, "useridnumber")  # idnumber: the roster's first user field
    assert header == ["ID number", export.title]  # the user column, then a column per grade item
    assert grades == {"1001": {export.title: 100.0}, "1002": {export.title: 50.0},  # numbers as numbers
                      "1003": {export.title: None}}  # in the roster, not graded: an empty grade, never 0
    assert "graded but not in the roster, left out (1): yan" in err  # Moodle would stop at a user it lacks
    assert "in the roster without a result (1): amy: an empty grade" in err


def test_email_maps_where_the_roster_has_no_id_number_and_missing_as_zero(export, roster):
    rows = [[row[0], row[1]] for row in ROSTER] + [["yan", "yan@uni.example"]]
    code, text, err = export("--format", "moodle", "--roster", roster(*rows), "--missing-as-zero")
    assert code == 0, err
    _, grades, _ = moodle_reads(text, "useremail")
    assert grades["amy@uni.example"] == {export.title: 0.0}  # asked for
    assert grades["yan@uni.example"] == {export.title: None}  # the grader failed on it: never a 0


def test_without_a_roster_each_name_is_its_username_and_a_formula_is_text(export):
    code, text, err = export("--format", "moodle")
    assert code == 0, err
    _, grades, table = moodle_reads(text, "username")
    assert set(grades) == {"zoe", "yan", f"'{FORMULA}"}  # the formula-like name neutralised
    assert not [cell for row in table for cell in row if cell.startswith(("=", "+", "-", "@"))]
    (line,) = [line for line in err.splitlines() if "--roster" in line]
    assert line.startswith("grade: warning: no --roster") and "username" in line


def test_a_roster_moodle_could_not_map_is_refused_in_one_line(export, roster):
    for rows, said in [(("username", "zoe"), "no column 'submission'"),
                       (("submission,Full name", "zoe,Zoe"), "none of the columns"),
                       (("submission,username", "zoe,zz", "zoe,zy"), "submission 'zoe' is on lines 2 and 3"),
                       (("submission,email", "zoe,a@x", "yan,a@x"), "email 'a@x' is on lines 2 and 3"),
                       (("submission,idnumber,email", "zoe,1,", "yan,,y@x"), "yan have none")]:
        code, text, err = export("--format", "moodle", "--roster", roster(*rows))
        assert code == 2 and text == "" and err.count("\n") == 1 and said in err, (rows, err)


def test_a_name_never_reads_as_one_of_moodles_headers(export_named):
    """Issue 44: a user cell that reads as the file's header or a user field Moodle maps to is marked."""
    names = ["Username", " USER  NAME", "ID number", "EMAIL ADDRESS", "useremail", export_named.title, "zoe"]
    code, text, err = export_named(names, "--format", "moodle")
    assert code == 0, err
    header, grades, table = moodle_reads(text, "username")
    assert header == ["Username", export_named.title]
    loose = {" ".join(label.lower().split()) for label in
             (*header, "ID number", "Email address", "useridnumber", "useremail", "username")}
    assert not [row[0] for row in table[1:] if " ".join(row[0].lower().split()) in loose]
    assert grades["(student) Username"] == {export_named.title: 10.0}
    assert grades[" USER  NAME"] == {export_named.title: 20.0}  # no label of Moodle's: as it is
    assert grades["(student) ID_number"] == {export_named.title: 30.0}
    assert grades["zoe"] == {export_named.title: 70.0} and len(grades) == len(names)
    assert "'Username' reads as the gradebook's own row or header" in err


def test_a_submission_that_could_not_be_read_is_an_empty_moodle_grade_said_with_why(export_unread, roster):
    """Issue 45: jo's corrupt zip went to Moodle as 0.0, a grade it keeps; its code never ran."""
    path = roster(["submission", "ID number"], ["jo", "2001"], ["kim", "2002"], ["zoe", "2003"])
    code, text, err = export_unread("--format", "moodle", "--roster", path, "--missing-as-zero")
    assert code == 0, err
    _, grades, _ = moodle_reads(text, "useridnumber")
    assert grades == {"2001": {export_unread.title: None}, "2002": {export_unread.title: 0.0},
                      "2003": {export_unread.title: 100.0}}
    assert "grade: warning: jo: not graded, an empty grade: jo.zip is not a valid .zip file (BadZipFile)" \
        in err.splitlines()
