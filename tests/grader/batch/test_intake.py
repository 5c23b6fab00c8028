"""Every student accounted for (issue 45): each entry of a class folder as an LMS or a browser hands it out
is graded or gets an ``error`` job that says what was found instead; nothing vanishes."""
import shutil
import zipfile
from pathlib import Path

import pytest

from grader.batch.discover import discover
from grader.errors import SubmissionError
from grader.submission import resolve_submission

ROOT = Path(__file__).resolve().parents[3]
MODULE = ROOT / "solutions" / "01_attention_basics" / "attention_basics.py"
NOTEBOOK_NAME = "attention_basics.ipynb"


def the_class(folder: Path) -> Path:
    """The new instructor's class of issue 45, as it arrived (folders and zips, LMS layouts)."""
    (folder / "alice" / "01_attention_basics").mkdir(parents=True)
    shutil.copy(MODULE, folder / "alice" / "01_attention_basics" / "attention_basics.py")
    (folder / "dan").mkdir()  # empty
    (folder / "kim").mkdir()  # a browser's second download
    shutil.copy(MODULE, folder / "kim" / "attention_basics (1).py")
    (folder / "lee").mkdir()  # the wrong files
    (folder / "lee" / "attention_basics.txt").write_text("def softmax(x): ...")
    (folder / "jo.zip").write_bytes(b"not a zip")
    with zipfile.ZipFile(folder / "max.zip", "w") as archive:  # a renamed file inside a zip
        archive.write(MODULE, "attention_basics-2.py")
    moodle = folder / "Week 1-12345"  # Moodle's "download all", one level deeper
    for who in ("Ann Lee_101", "Bo Chen_102"):
        (moodle / f"{who}_assignsubmission_file_").mkdir(parents=True)
        shutil.copy(MODULE, moodle / f"{who}_assignsubmission_file_" / "attention_basics.py")
    (moodle / "Bo Chen_102_assignsubmission_onlinetext_").mkdir()
    (moodle / "Bo Chen_102_assignsubmission_onlinetext_" / "onlinetext.html").write_text("<p>done</p>")
    (folder / "sam" / "assignments" / "01_attention_basics").mkdir(parents=True)  # a whole checkout
    shutil.copy(MODULE, folder / "sam" / "assignments" / "01_attention_basics" / "attention_basics.py")
    (folder / "sam" / "README.md").write_text("mine")
    (folder / "roster.csv").write_text("submission,id\n")
    (folder / ".DS_Store").write_bytes(b"\0")
    return folder


def test_every_entry_of_the_class_is_a_job_or_a_note(course, tmp_path):
    notes = []
    jobs = {job.name: job for job in discover([the_class(tmp_path / "class")], course, tmp_path / "s", notes)}
    assert set(jobs) == {"alice", "dan", "kim", "lee", "jo", "max", "Ann Lee_101", "Bo Chen_102", "sam"}
    graded = {name for name, job in jobs.items() if job.error is None}
    assert graded == {"alice", "kim", "max", "Ann Lee_101", "Bo Chen_102", "sam"}
    assert "empty" in jobs["dan"].error
    assert "attention_basics.txt" in jobs["lee"].error and "attention_basics.py" in jobs["lee"].error
    assert "not a valid .zip" in jobs["jo"].error
    assert jobs["sam"].path.name == "assignments"
    assert any("roster.csv" in note for note in notes) and any("Week 1-12345" in note for note in notes)
    assert not any(".DS_Store" in note for note in notes)
    for name in graded:  # each resolves to the assignment's module
        assert resolve_submission(jobs[name].path, course).source("01_attention_basics") is not None, name


def test_a_renamed_file_is_found_the_same_way_in_a_folder_and_as_gradescope_reads_it(course, tmp_path):
    from grader.submission import course_name

    folder = tmp_path / "kim"
    folder.mkdir()
    for name in ("attention_basics (1).py", "attention_basics (2).py", "Attention_Basics copy.ipynb"):
        shutil.copy(MODULE, folder / name)
    found = resolve_submission(folder, course).source("01_attention_basics")
    assert found.name == "attention_basics (2).py"  # the latest download, the module before the notebook
    assert course_name("attention_basics (2).py", course) == ("01_attention_basics", "attention_basics.py")
    shutil.copy(MODULE, folder / "attention_basics.py")
    assert resolve_submission(folder, course).source("01_attention_basics").name == "attention_basics.py"


def test_a_folder_of_nothing_says_what_it_holds(course, tmp_path):
    folder = tmp_path / "lee"
    folder.mkdir()
    (folder / "notes.txt").write_text("x")
    with pytest.raises(SubmissionError, match=r"found notes\.txt"):
        resolve_submission(folder, course)


def test_canvas_flat_download_is_one_job_a_student(course, tmp_path):
    folder = tmp_path / "submissions"
    folder.mkdir()
    (folder / "doejane_12345_67890_notes.txt").write_text("x")
    shutil.copy(MODULE, folder / "doejane_LATE_12345_67891_attention_basics-1.py")
    shutil.copy(MODULE, folder / "smithjohn_222_333_my_work.py")
    (folder / "roejoe_444_555_attention_basics.pdf").write_text("%PDF")
    notes = []
    jobs = {job.name: job for job in discover([folder], course, tmp_path / "s", notes)}
    assert set(jobs) == {"doejane_12345", "smithjohn_222"}, (jobs, notes)
    assert jobs["doejane_12345"].error is None
    kept = resolve_submission(jobs["doejane_12345"].path, course).source("01_attention_basics")
    assert kept.name == "attention_basics-1.py"  # Canvas's name for a second upload of one name
    assert resolve_submission(jobs["smithjohn_222"].path, course).source("01_attention_basics").name == "my_work.py"
    assert any("roejoe_444_555_attention_basics.pdf" in note for note in notes)


def test_a_moodle_flat_download_groups_a_students_files(course, tmp_path):
    folder = tmp_path / "moodle"
    folder.mkdir()
    shutil.copy(MODULE, folder / "Ann Lee_101_assignsubmission_file_attention_basics.py")
    (folder / "Bo Chen_102_assignsubmission_file_notes.txt").write_text("x")
    (folder / "Bo Chen_102_assignsubmission_file_attention_basics.py").write_text("")  # empty: still hers
    jobs = {job.name: job for job in discover([folder], course, tmp_path / "s")}
    assert set(jobs) == {"Ann Lee_101", "Bo Chen_102"}
    assert jobs["Ann Lee_101"].error is None and jobs["Bo Chen_102"].error is None


def test_a_results_folder_inside_the_class_is_not_a_student(course, tmp_path):
    folder = the_class(tmp_path / "class")
    (folder / "results").mkdir()
    (folder / "results" / "summary.csv").write_text("submission,score\n")
    notes = []
    assert "results" not in {job.name for job in discover([folder], course, tmp_path / "s", notes)}
    assert any(note.startswith("results") for note in notes)


@pytest.mark.slow
def test_autograde_gives_every_student_a_line_and_a_row(course, tmp_path, capsys):
    import csv

    from grader.batch.autograde import autograde

    folder = the_class(tmp_path / "class")
    out = tmp_path / "out"
    assert autograde(course=course, paths=[folder], out=out, workers=1, shard=None, resume=False, device="cpu",
                     seed=3, assignments=(course.assignment("01_attention_basics"),)) == 0
    err = capsys.readouterr().err
    rows = {row["submission"]: row for row in csv.DictReader((out / "summary.csv").open(encoding="utf-8"))}
    assert set(rows) == {"alice", "dan", "kim", "lee", "jo", "max", "Ann Lee_101", "Bo Chen_102", "sam"}
    for name in ("alice", "kim", "max", "Ann Lee_101", "Bo Chen_102", "sam"):
        assert rows[name]["score"] == rows[name]["max_score"], (name, rows[name])
    for name in ("dan", "lee", "jo"):
        assert rows[name]["status"] == "error" and name in err, name
    assert "roster.csv" in err


def test_gradescope_reads_several_copies_as_a_class_folder_does(course, tmp_path):
    """The same rule on every path: the name itself, else the latest download (Gradescope kept the first
    in sorted order, ``attention_basics (1).py``, over ``attention_basics.py``)."""
    from grader.platforms.gradescope import collect_upload

    for names, graded in ((("attention_basics.py", "attention_basics (1).py"), "attention_basics.py"),
                          (("attention_basics (1).py", "attention_basics (2).py"), "attention_basics (2).py")):
        upload = tmp_path / graded / "upload"
        upload.mkdir(parents=True)
        for name in names:
            (upload / name).write_text(f"# {name}\n")
        target = tmp_path / graded / "assignments"
        collect_upload(upload, course, target)
        kept = (target / "01_attention_basics" / "attention_basics.py").read_text()
        assert kept == f"# {graded}\n"
        assert resolve_submission(upload, course).source("01_attention_basics").name == graded


def test_a_folder_that_wraps_assignments_is_graded_as_its_assignments(course, tmp_path):
    """grade check --submission . in a student's checkout, or in the folder assignments.zip unpacked into."""
    inner = tmp_path / "checkout" / "assignments" / "01_attention_basics"
    inner.mkdir(parents=True)
    shutil.copy(MODULE, inner)
    (tmp_path / "checkout" / "README.md").write_text("mine")
    found = resolve_submission(tmp_path / "checkout", course)
    assert found.name == "checkout" and found.source("01_attention_basics") == inner / "attention_basics.py"
