"""grade export: autograde result folders and nbgrader's gradebook in one CSV."""
import csv
import io
import json
import shutil
from pathlib import Path

import pytest

from grader.config import load_course
from grader.errors import UntrustedResults, UsageError
from grader.reporting.export import export_csv
from grader.reporting.course_secret import course_secret
from grader.reporting.result_folder import write_manifest

ASSIGNMENT = "01_attention_basics"
# nbgrader's own add_submission warns about its session (SQLAlchemy), not about anything of ours
QUIET_GRADEBOOK = pytest.mark.filterwarnings("ignore:Object of type <Submitted")


@pytest.fixture
def course_copy(course, tmp_path, course_toml):
    root = course_toml(tmp_path / "course")
    return load_course(root)


def write_gradebook(path, course, scores: dict[str, dict[str, float]], late_penalty: float = 0.0):
    """A gradebook as nbgrader's autograde leaves it: one notebook of 01, a graded cell per exercise."""
    from nbgrader.api import Gradebook

    assignment = course.assignment(ASSIGNMENT)
    notebook = assignment.notebook.removesuffix(".ipynb")
    with Gradebook(f"sqlite:///{path}", course.id) as book:
        book.add_assignment(ASSIGNMENT)
        book.add_notebook(notebook, ASSIGNMENT)
        for name, points in assignment.points:
            book.add_grade_cell(f"test_{name}", notebook, ASSIGNMENT, max_score=points, cell_type="code")
        for student, earned in scores.items():
            book.add_student(student)
            submission = book.add_submission(ASSIGNMENT, student)
            for name, points in assignment.points:
                book.find_grade(f"test_{name}", notebook, ASSIGNMENT, student).auto_score = earned.get(name, points)
            if late_penalty:
                submission.notebooks[0].late_submission_penalty = late_penalty
            book.db.commit()


def result_file(folder, name, course, score, seed=1, assignment_id=ASSIGNMENT, stem=None):
    """``name``'s result, as ``<stem>.json`` (default: the name's) in ``folder``, listed in its manifest."""
    assignment = course.assignment(assignment_id)
    folder.mkdir(exist_ok=True)
    top = float(sum(p for _, p in assignment.points))
    data = {"schema": 1, "submission": name, "seed": seed, "device": "cpu", "score": score, "max_score": top,
            "duration_s": 1.0, "assignments": [{"id": assignment_id, "score": score, "max_score": top, "exercises": [
                {"name": n, "score": p * score / 100, "max_score": p, "status": "passed"} for n, p in assignment.points]}]}
    (folder / f"{stem or name}.json").write_text(json.dumps(data))
    write_manifest(folder, {stem or name: json.dumps(data)}, secret=course_secret(course.root))  # as autograde does


def rows(text):
    return {(row["submission"], row["source"]): row for row in csv.DictReader(text.splitlines())}


@pytest.mark.nbgrader
@QUIET_GRADEBOOK
def test_the_gradebook_at_the_course_root_joins_the_autograde_results(course_copy, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_gradebook(course_copy.root / "gradebook.db", course_copy,
                    {"zoe": {"softmax": 18.75}, "yan": {name: 0 for name in course_copy.assignment(ASSIGNMENT).exercises}})
    result_file(tmp_path / "grades", "zoe", course_copy, 100.0)
    found = rows(export_csv(course_copy, [tmp_path / "grades"]))
    assert set(found) == {("zoe", "autograde"), ("zoe", "nbgrader"), ("yan", "nbgrader")}
    zoe = found[("zoe", "nbgrader")]
    assert float(zoe["score"]) == 93.75 and float(zoe[ASSIGNMENT]) == 93.75 and float(zoe["max_score"]) == 100
    assert float(zoe[f"{ASSIGNMENT}:softmax"]) == 18.75 and float(zoe[f"{ASSIGNMENT}:attention_scores"]) == 15
    assert "02_self_attention" not in zoe and "02_self_attention:CrossAttention" not in zoe  # nobody's: no column
    assert float(found[("yan", "nbgrader")]["score"]) == 0
    assert float(found[("zoe", "autograde")]["score"]) == 100
    # without result folders: ./grades when there is one (here), else the gradebook alone
    assert set(rows(export_csv(course_copy, []))) == set(found)
    shutil.rmtree(tmp_path / "grades")
    assert set(rows(export_csv(course_copy, []))) == {("zoe", "nbgrader"), ("yan", "nbgrader")}


@pytest.mark.nbgrader
@QUIET_GRADEBOOK
def test_a_named_gradebook_is_read_and_the_late_penalty_applies_as_nbgrader_export_does(course_copy, tmp_path):
    book = tmp_path / "elsewhere.db"
    write_gradebook(book, course_copy, {"zoe": {}}, late_penalty=10)
    (tmp_path / "grades").mkdir()
    zoe = rows(export_csv(course_copy, [tmp_path / "grades"], book))[("zoe", "nbgrader")]
    assert float(zoe["score"]) == 90 and float(zoe[f"{ASSIGNMENT}:softmax"]) == 25


def test_without_a_gradebook_the_csv_is_the_autograde_results_with_their_source(course_copy, tmp_path):
    result_file(tmp_path / "grades", "zoe", course_copy, 50.0)
    text = export_csv(course_copy, [tmp_path / "grades"])
    header = next(csv.reader(text.splitlines()))
    assert header[:3] == ["submission", "score", "max_score"] and header[-1] == "source"
    assert list(rows(text)) == [("zoe", "autograde")]
    with pytest.raises(UsageError, match="no such gradebook"):
        export_csv(course_copy, [tmp_path / "grades"], tmp_path / "missing.db")
    with pytest.raises(UsageError, match="no such result folder"):
        export_csv(course_copy, [tmp_path / "nowhere"])


# folder names a student chose, which a spreadsheet would run as formulas (OWASP's "CSV injection")
FORMULAS = ('=HYPERLINK("http://x","y")', "+600+0", "@SUM(A1)", "-1+601", "\tx", "\r=1+1")


def test_a_name_that_is_a_formula_reaches_the_export_as_text(course_copy, tmp_path):
    for index, name in enumerate(FORMULAS):
        result_file(tmp_path / "grades", name, course_copy, 50.0, stem=f"s{index}")
    result_file(tmp_path / "grades", "zoe", course_copy, 100.0)
    table = list(csv.reader(io.StringIO(export_csv(course_copy, [tmp_path / "grades"]))))
    assert sorted(row[0] for row in table[1:]) == sorted(["zoe", *(f"'{name}" for name in FORMULAS)])
    assert not [cell for row in table for cell in row if cell.startswith(("=", "+", "-", "@", "\t", "\r"))]
    assert [row[1] for row in table[1:]] == ["50.0"] * len(FORMULAS) + ["100.0"]  # numbers stay numbers
    assert all(row[-1] == "autograde" and row[-3] == "1" for row in table[1:])


def test_grade_export_takes_a_gradebook_option(course_copy, tmp_path):
    from click.testing import CliRunner

    from grader.cli import cli

    result_file(tmp_path / "grades", "zoe", course_copy, 50.0)
    outcome = CliRunner().invoke(cli, ["--course", str(course_copy.root), "export", str(tmp_path / "grades"),
                                       "--gradebook", str(tmp_path / "missing.db")])
    assert outcome.exit_code == 2 and "no such gradebook" in outcome.output


@pytest.mark.nbgrader
@QUIET_GRADEBOOK
def test_scores_that_the_gradebook_and_autograde_disagree_on_are_named(course_copy, tmp_path):
    """nbgrader grades in the student's own kernel: a check cell tampered with scores there only."""
    book = tmp_path / "book.db"
    write_gradebook(book, course_copy, {"zoe": {}, "yan": {"softmax": 0.0}})  # zoe: full marks in the kernel
    result_file(tmp_path / "grades", "zoe", course_copy, 50.0)  # ...and half isolated
    result_file(tmp_path / "grades", "yan", course_copy, 100.0)
    warnings = []
    export_csv(course_copy, [tmp_path / "grades"], book, warnings)
    assert "zoe 01_attention_basics:softmax: nbgrader 25, autograde 12.5 (a notebook's check cell tampered " \
           "with, or other random inputs)" in warnings
    assert any(w.startswith("yan 01_attention_basics:softmax: nbgrader 0, autograde 25") for w in warnings)
    assert not any(w.startswith("yan") and ":softmax:" not in w for w in warnings)  # the rest agree


def test_a_result_file_left_or_changed_by_student_code_is_not_believed(course_copy, tmp_path):
    """Issue 10, item 4: export reads only what grade autograde listed in the folder's manifest."""
    import os
    import time

    result_file(tmp_path / "grades", "zoe", course_copy, 50.0)
    forged = json.loads((tmp_path / "grades" / "zoe.json").read_text())
    forged["submission"], forged["score"] = "zoe", 100.0
    (tmp_path / "grades" / "zoe-again.json").write_text(json.dumps(forged))  # a later file of the same name
    future = time.time() + 3600
    os.utime(tmp_path / "grades" / "zoe-again.json", (future, future))
    forged["submission"] = "mallory"
    (tmp_path / "grades" / "mallory.json").write_text(json.dumps(forged))
    warnings: list[str] = []
    got = rows(export_csv(course_copy, [tmp_path / "grades"], None, warnings))
    assert list(got) == [("zoe", "autograde")] and float(got[("zoe", "autograde")]["score"]) == 50
    assert len(warnings) == 2 and all("left out" in line for line in warnings)
    (tmp_path / "grades" / "zoe.json").write_text(json.dumps(forged | {"submission": "zoe"}))  # changed
    with pytest.raises(UntrustedResults, match="zoe.json: not as grade autograde wrote it"):  # issue 44: refused
        export_csv(course_copy, [tmp_path / "grades"], None, [])
    (tmp_path / "bare").mkdir()
    (tmp_path / "bare" / "zoe.json").write_text(json.dumps(forged))  # result files, and no manifest
    with pytest.raises(UsageError, match="grade-manifest"):
        export_csv(course_copy, [tmp_path / "bare"])


def test_grade_export_names_each_result_left_out_on_one_line_of_its_own(course_copy, tmp_path):
    """The warning for a forged file says what it is, not that a notebook was tampered with."""
    from click.testing import CliRunner

    from grader.cli import cli

    result_file(tmp_path / "grades", "alice", course_copy, 100.0)
    (tmp_path / "grades" / "zz-forged.json").write_text((tmp_path / "grades" / "alice.json").read_text())
    outcome = CliRunner().invoke(cli, ["--course", str(course_copy.root), "export", str(tmp_path / "grades")])
    assert outcome.exit_code == 0, outcome.stderr
    assert [r[0] for r in csv.reader(outcome.stdout.splitlines())][1:] == ["alice"]
    (line,) = outcome.stderr.splitlines()
    assert line.startswith("grade: warning: ") and "zz-forged.json" in line and "left out" in line
    assert "notebook" not in line and "Traceback" not in outcome.stderr


def test_where_shards_overlap_the_run_that_wrote_last_wins_not_the_newest_mtime(course_copy, tmp_path):
    """Student code can set a genuine file's mtime, not the time the manifest records."""
    import os
    import time

    result_file(tmp_path / "old", "zoe", course_copy, 100.0)
    time.sleep(0.01)
    result_file(tmp_path / "new", "zoe", course_copy, 40.0)
    future = time.time() + 3600
    os.utime(tmp_path / "old" / "zoe.json", (future, future))  # as student code could touch it
    warnings = []
    got = rows(export_csv(course_copy, [tmp_path / "old", tmp_path / "new"], warnings=warnings))
    assert float(got[("zoe", "autograde")]["score"]) == 40
    # one name with two scores is said, not kept silently
    assert len(warnings) == 1 and "zoe: two results with different scores (40 and 100)" in warnings[0], warnings


def test_the_export_holds_only_the_assignments_graded_with_each_rows_seed_and_worst_status(course_copy, tmp_path):
    result_file(tmp_path / "grades", "zoe", course_copy, 100.0, seed=4242)
    result_file(tmp_path / "grades", "yan", course_copy, 0.0, seed=4242)
    data = json.loads((tmp_path / "grades" / "yan.json").read_text())
    data["assignments"][0]["exercises"][0]["status"] = "timeout"
    data["assignments"][0]["exercises"][1]["status"] = "failed"
    (tmp_path / "grades" / "yan.json").write_text(json.dumps(data))
    write_manifest(tmp_path / "grades", {"yan": json.dumps(data)}, secret=course_secret(course_copy.root))
    text = export_csv(course_copy, [tmp_path / "grades"])
    header = next(csv.reader(text.splitlines()))
    assert header[3] == ASSIGNMENT and not any(h.startswith("02_") for h in header)  # a week's export
    assert header[-3:] == ["seed", "status", "source"]
    got = rows(text)
    assert got[("yan", "autograde")]["seed"] == "4242" and got[("yan", "autograde")]["status"] == "timeout"
    assert got[("zoe", "autograde")]["status"] == "passed"


def test_shards_of_one_assignment_graded_on_two_seeds_are_refused_unless_told(course_copy, tmp_path):
    """Two shards that drew different cases grade the same mistake differently: not one class's grades."""
    result_file(tmp_path / "grades-1", "zoe", course_copy, 100.0, seed=955012)
    result_file(tmp_path / "grades-2", "yan", course_copy, 40.0, seed=796669)
    with pytest.raises(UsageError, match=r"01_attention_basics was graded on 2 seeds: seed 796669 .*grades-2.*"
                                         r"seed 955012 .*--mixed-seeds"):
        export_csv(course_copy, [tmp_path / "grades-1", tmp_path / "grades-2"])
    warnings = []
    got = rows(export_csv(course_copy, [tmp_path / "grades-1", tmp_path / "grades-2"], warnings=warnings,
                          mixed_seeds=True))
    assert set(got) == {("zoe", "autograde"), ("yan", "autograde")}
    assert [w for w in warnings if "2 seeds" in w and "--mixed-seeds" in w]
    # the command: one line, exit 2; the class report refuses alike
    import subprocess
    import sys

    for verb in (["export"], ["report", "--format", "json"]):
        done = subprocess.run([sys.executable, "-m", "grader", *verb, str(tmp_path / "grades-1"),
                               str(tmp_path / "grades-2")], cwd=course_copy.root, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 2 and done.stderr.count("\n") == 1 and "--mixed-seeds" in done.stderr, done.stderr


def test_different_weeks_may_be_graded_on_different_seeds(course_copy, tmp_path):
    result_file(tmp_path / "week1", "zoe", course_copy, 100.0, seed=11)
    result_file(tmp_path / "week2", "yan", course_copy, 100.0, seed=22, assignment_id="02_self_attention")
    got = rows(export_csv(course_copy, [tmp_path / "week1", tmp_path / "week2"]))
    assert set(got) == {("zoe", "autograde"), ("yan", "autograde")}


def test_a_folder_without_a_manifest_is_refused_with_how_to_regenerate_it(course_copy, tmp_path):
    result_file(tmp_path / "grades", "zoe", course_copy, 50.0)
    (tmp_path / "grades" / ".grade-manifest").unlink()
    with pytest.raises(UsageError, match=r"no \.grade-manifest.*grade autograde SUBMISSIONS --out"):
        export_csv(course_copy, [tmp_path / "grades"])
    (tmp_path / "grades" / "zoe.json").unlink()
    assert export_csv(course_copy, [tmp_path / "grades"]).count("\n") == 1  # an empty folder: just the header


def test_an_unmatched_shard_glob_is_left_out_with_a_warning(tmp_path):
    """`grade export grades/ shard-*/` where no shard folder exists: the shell passes the glob as it is."""
    import subprocess
    import sys

    (tmp_path / "grades").mkdir()
    result = subprocess.run([sys.executable, "-m", "grader", "export", str(tmp_path / "grades"), "shard-*/"],
                            cwd=Path(__file__).resolve().parents[3], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr  # nothing to export is said, never an empty CSV (issue 35)
    assert "shard-*: no such folder, left out" in result.stderr and "no result of `grade autograde`" in result.stderr


@pytest.mark.nbgrader
def test_grade_report_counts_the_gradebooks_students_beside_the_autograde_results(course_copy, tmp_path, capsys):
    """grade report --gradebook: a student graded by nbgrader alone joins the report, each exercise's
    points from course.toml (issue 23)."""
    from grader.api import report

    book = tmp_path / "gradebook.db"
    write_gradebook(book, course_copy, {"zoe": {"softmax": 0}})
    result_file(tmp_path / "grades", "amy", course_copy, 100.0)
    assert report(course=course_copy, result_dirs=(tmp_path / "grades",), out=None, fmt="json", anonymise=False,
                  gradebook=book) == 0
    summary = json.loads(capsys.readouterr().out)
    (assignment,) = summary["assignments"]
    assert summary["students"] == 2 and assignment["counts"]["full"] == 1 and assignment["counts"]["partial"] == 1
    softmax = next(e for e in assignment["exercises"] if e["name"] == "softmax")
    assert softmax["points_lost"] == 25 and softmax["counts"]["zero"] == 1


def test_format_csv_is_the_default_export_and_an_lms_gradebook_is_one_registry_line(course_copy, tmp_path,
                                                                                     monkeypatch):
    """grade export --format: ours unchanged; canvas and moodle from grader/platforms' GRADEBOOKS, where a
    new gradebook's writer joins with one line and gets the grades table (issue 37)."""
    from click.testing import CliRunner

    from grader.cli import cli
    from grader.reporting.export import export_gradebook
    from grader.platforms import GRADEBOOKS

    result_file(tmp_path / "grades", "zoe", course_copy, 50.0)
    plain = CliRunner().invoke(cli, ["--course", str(course_copy.root), "export", str(tmp_path / "grades")])
    named = CliRunner().invoke(cli, ["--course", str(course_copy.root), "export", str(tmp_path / "grades"),
                                     "--format", "csv"])
    assert named.exit_code == 0 and named.stdout == plain.stdout
    assert named.stdout.splitlines() == export_csv(course_copy, [tmp_path / "grades"]).splitlines()
    assert set(GRADEBOOKS) == {"canvas", "moodle"}
    seen = {}
    monkeypatch.setitem(GRADEBOOKS, "lms", lambda grades, roster, warnings, *, missing_as_zero: seen.update(
        columns=grades.columns, scores=grades.scores, roster=roster) or "lms,csv\n")
    text, sources = export_gradebook(course_copy, [tmp_path / "grades"], None, [], fmt="lms")
    title = course_copy.assignment(ASSIGNMENT).title
    assert text == "lms,csv\n" and sources == ["autograde"]
    assert seen == {"columns": ((title, 100.0),), "scores": {"zoe": (50.0,)}, "roster": None}


# --- issue 44: the manifest is keyed by the course's secret ---------------------------------------------------
def _rewritten_by_a_co_tenant(folder, keep_marker: bool):
    """What a co-tenant who may write ``folder`` does: zoe's result rewritten to 0 and mallory's to 100, and
    the manifest's digests recomputed, unkeyed (it has no secret)."""
    from grader.reporting.result_folder import MANIFEST, sha256

    manifest = json.loads((folder / MANIFEST).read_text())
    for name, score in (("zoe", 0.0), ("mallory", 100.0)):
        data = json.loads((folder / f"{name}.json").read_text()) | {"score": score}
        text = json.dumps(data)
        (folder / f"{name}.json").write_text(text)
        manifest["results"][f"{name}.json"] = sha256(text)
    if not keep_marker:
        manifest.pop("digests")
    (folder / MANIFEST).write_text(json.dumps(manifest))


@pytest.mark.parametrize("keep_marker", [True, False])
def test_results_rewritten_with_their_manifest_are_refused_by_export_and_report(course_copy, tmp_path, keep_marker):
    from click.testing import CliRunner

    from grader.cli import cli

    grades = tmp_path / "grades"
    result_file(grades, "zoe", course_copy, 100.0)
    result_file(grades, "mallory", course_copy, 0.0)
    assert {r[0]: r[1] for r in csv.reader(export_csv(course_copy, [grades]).splitlines()[1:])} == {
        "mallory": "0.0", "zoe": "100.0"}
    _rewritten_by_a_co_tenant(grades, keep_marker)
    for verb in (["export"], ["report", "--format", "json"], ["export", "--format", "canvas"]):
        outcome = CliRunner().invoke(cli, ["--course", str(course_copy.root), *verb[:1], str(grades), *verb[1:]])
        assert outcome.exit_code == 2 and outcome.stdout == "", (verb, outcome.stdout)
        (line,) = outcome.stderr.splitlines()
        assert line.startswith("grade: error: ") and "Traceback" not in outcome.stderr
        assert ("mallory.json" in line if keep_marker else "not keyed" in line), line


def test_results_of_another_course_or_of_a_course_without_a_secret_are_refused(course_copy, tmp_path):
    from grader.reporting.course_secret import SECRET_FILE

    grades = tmp_path / "grades"
    result_file(grades, "zoe", course_copy, 100.0)
    (course_copy.root / SECRET_FILE).write_text(bytes(range(32)).hex() + "\n")  # another course's secret
    with pytest.raises(UntrustedResults, match="zoe.json"):
        export_csv(course_copy, [grades])
    (course_copy.root / SECRET_FILE).unlink()
    with pytest.raises(UntrustedResults, match="has none"):
        export_csv(course_copy, [grades])


# --- issue 45: every student accounted for -------------------------------------------------------------------
def unreadable_file(folder, name, course, why, status="error"):
    """``name``'s result as grade autograde writes one for a submission it could not grade at all (a corrupt
    zip, an empty folder: ``error`` with ``why``; code that crashed the grader twice: ``crashed``)."""
    from grader.batch.autograde import failed_result

    folder.mkdir(exist_ok=True)
    text = json.dumps(failed_result([course.assignment(ASSIGNMENT)], name, status, why, 1).to_json())
    (folder / f"{name}.json").write_text(text)
    write_manifest(folder, {name: text}, secret=course_secret(course.root))


# the students of week1 and of week1b, graded on two seeds: the whole class again, part of it, others, more
SEED_CASES = {"the same class": (("zoe", "yan"), ("zoe", "yan")), "part of it": (("zoe", "yan"), ("yan",)),
              "other students": (("zoe",), ("yan",)), "more students": (("zoe",), ("zoe", "yan"))}
EXPORTS = (["export"], ["export", "--format", "canvas"], ["export", "--format", "moodle"],
           ["report", "--format", "json"])


@pytest.mark.parametrize("case", SEED_CASES)
def test_two_folders_of_one_assignment_on_two_seeds_are_refused_in_every_combination(course_copy, tmp_path, case):
    """Issue 45: ``grade export week1 week1b``, each a full class on a seed of its own, exited 0 with week1b's
    rows: every name of week1 was replaced, so the merge held one seed. Every export format and the report
    refuse it, in one line naming both folders and both seeds, unless --mixed-seeds."""
    from click.testing import CliRunner

    from grader.cli import cli

    first, second = SEED_CASES[case]
    for name in first:
        result_file(tmp_path / "week1", name, course_copy, 100.0, seed=11)
    for name in second:
        result_file(tmp_path / "week1b", name, course_copy, 40.0, seed=22)
    folders = [str(tmp_path / "week1"), str(tmp_path / "week1b")]
    for verb in EXPORTS:
        outcome = CliRunner().invoke(cli, ["--course", str(course_copy.root), verb[0], *folders, *verb[1:]])
        assert outcome.exit_code == 2 and outcome.stdout == "", (verb, outcome.stdout)
        (line,) = outcome.stderr.splitlines()
        assert line.startswith(f"grade: error: {ASSIGNMENT} was graded on 2 seeds: ") and "--mixed-seeds" in line
        assert f"seed 11 ({folders[0]})" in line and f"seed 22 ({folders[1]})" in line, line
        merged = CliRunner().invoke(cli, ["--course", str(course_copy.root), verb[0], *folders, *verb[1:],
                                          "--mixed-seeds"])
        assert merged.exit_code == 0 and "merged as asked (--mixed-seeds)" in merged.stderr, (verb, merged.stderr)


def test_one_folder_and_folders_on_one_seed_still_export(course_copy, tmp_path):
    result_file(tmp_path / "week1", "zoe", course_copy, 100.0, seed=11)
    result_file(tmp_path / "again", "zoe", course_copy, 40.0, seed=11)  # graded again on the class's seed
    warnings = []
    got = rows(export_csv(course_copy, [tmp_path / "week1", tmp_path / "again"], warnings=warnings))
    assert float(got[("zoe", "autograde")]["score"]) == 40 and not [w for w in warnings if "seeds" in w]


def test_a_submission_that_could_not_be_read_exports_empty_with_why_never_a_zero(course_copy, tmp_path):
    """Issue 45: a corrupt upload went to the export as 0.0, a grade the LMS keeps. Its cells are empty,
    its not_graded cell and a warning say why; a submission whose code crashed the grader ran: its 0 stays."""
    grades = tmp_path / "grades"
    result_file(grades, "zoe", course_copy, 100.0)
    unreadable_file(grades, "jo", course_copy, "jo.zip is not a valid .zip file (BadZipFile)")
    unreadable_file(grades, "kim", course_copy, "grading this submission crashed the grader twice", "crashed")
    warnings: list[str] = []
    text = export_csv(course_copy, [grades], warnings=warnings)
    header = next(csv.reader(text.splitlines()))
    assert header[-4:] == ["not_graded", "seed", "status", "source"]
    got = rows(text)
    jo, kim, zoe = (got[(name, "autograde")] for name in ("jo", "kim", "zoe"))
    scores = ["score", ASSIGNMENT, *(f"{ASSIGNMENT}:{name}" for name in course_copy.assignment(ASSIGNMENT).exercises)]
    assert [jo[column] for column in scores] == [""] * len(scores)  # no 0 anywhere
    assert jo["not_graded"] == "jo.zip is not a valid .zip file (BadZipFile)" and jo["status"] == "error"
    assert float(kim["score"]) == 0 and kim["not_graded"] == "" and kim["status"] == "crashed"
    assert float(zoe["score"]) == 100 and zoe["not_graded"] == ""
    assert warnings == ["jo: not graded, an empty grade: jo.zip is not a valid .zip file (BadZipFile)"]
    result_file(tmp_path / "fine", "zoe", course_copy, 100.0)
    assert "not_graded" not in next(csv.reader(export_csv(course_copy, [tmp_path / "fine"]).splitlines()))
