"""nbgrader's own commands, run from a copy of the course root with its nbgrader_config.py:
generate_assignment, autograde (three students, real kernels), the gradebook, export, feedback."""
import csv
import html
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grader.config import load_course

ROOT = Path(__file__).resolve().parents[3]
ASSIGNMENT = "01_attention_basics"
SEED = 77
RIGHT = """    x_max = x.amax(dim=dim, keepdim=True)  # [..., 1, ...]
    x_max = torch.where(torch.isinf(x_max), torch.zeros_like(x_max), x_max)  # all -inf: shift by 0
    exp = torch.exp(x - x_max)  # every entry <= 1
    total = exp.sum(dim=dim, keepdim=True)  # >= 1, or 0 for an all -inf slice
    return exp / total.clamp_min(1.0)
"""
UNSTABLE = """    exp = torch.exp(x)  # overflows for scores above about 88
    return exp / exp.sum(dim=dim, keepdim=True)
"""
MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")


def answered(source: str, mistake: bool) -> str:
    """A solution cell as a student would hand it in: no markers, optionally the unstable softmax."""
    text = "".join(line for line in source.splitlines(keepends=True) if line.strip() not in MARKERS)
    return text.replace(RIGHT, UNSTABLE) if mistake else text


def student_notebook(root: Path, *, fill: bool, mistake: bool = False) -> dict:
    """The release notebook, with each solution cell answered from the source notebook (or left as released)."""
    assignment = load_course(root).assignment(ASSIGNMENT)
    notebook = json.loads((root / "assignments" / ASSIGNMENT / assignment.notebook).read_text())
    source = json.loads((root / "solutions" / ASSIGNMENT / assignment.notebook).read_text())
    answers = {c["metadata"]["nbgrader"]["grade_id"]: "".join(c["source"]) for c in source["cells"]
               if c["metadata"].get("nbgrader", {}).get("solution")}
    for cell in notebook["cells"]:
        grade_id = cell["metadata"].get("nbgrader", {}).get("grade_id")
        if fill and grade_id in answers:
            cell["source"] = answered(answers[grade_id], mistake)
    return notebook


def nbgrader(root: Path, *args: str, seed: int | None = None) -> None:
    env = dict(os.environ, GRADE_DEVICE="cpu", **({"GRADE_SEED": str(seed)} if seed is not None else {}))
    done = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=root, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def course_copy_for_nbgrader(root: Path, released: Path) -> None:
    """A copy of the course at ``root`` as an instructor keeps it, where nbgrader released 01; its
    assignments/ are what release writes (``released``), never the live ones, which a course in use edits."""
    ignore = shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints")
    for name in ("solutions", "suites"):
        shutil.copytree(ROOT / name, root / name, ignore=ignore)
    shutil.copytree(released, root / "assignments", ignore=ignore)
    for name in ("course.toml", "nbgrader_config.py"):
        shutil.copy(ROOT / name, root / name)
    (root / "assignments" / ASSIGNMENT / "attention_basics.py").unlink()  # nbgrader's hook writes it back
    nbgrader(root, "generate_assignment", ASSIGNMENT)  # assignments/ is committed: the config forces it


@pytest.fixture(scope="module")
def classroom(tmp_path_factory, released):
    """A copy of the course where nbgrader released 01, three students handed it in and were autograded."""
    root = tmp_path_factory.mktemp("course")
    course_copy_for_nbgrader(root, released)
    for name, notebook in {"ada": student_notebook(root, fill=True),  # the solution
                           "bo": student_notebook(root, fill=False),  # the release notebook untouched
                           "cy": student_notebook(root, fill=True, mistake=True)}.items():
        folder = root / "submitted" / name / ASSIGNMENT
        folder.mkdir(parents=True)
        (folder / "attention_basics.ipynb").write_text(json.dumps(notebook))
    nbgrader(root, "autograde", ASSIGNMENT, seed=SEED)
    nbgrader(root, "generate_feedback", ASSIGNMENT)
    nbgrader(root, "export", "--to", "nbgrader-grades.csv")
    return root


def gradebook_scores(root: Path) -> dict:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", load_course(root).id) as gradebook:
        scores = {}
        for student in ("ada", "bo", "cy"):
            submission = gradebook.find_submission(ASSIGNMENT, student)
            cells = {g.name.removeprefix("test_"): g.score for n in submission.notebooks for g in n.grades}
            scores[student] = (submission.score, cells)
        return scores


@pytest.mark.nbgrader
@pytest.mark.slow
def test_generate_assignment_from_the_course_root_writes_what_grade_release_writes(classroom):
    from grader.course.release import release

    course = load_course(classroom)
    assert (classroom / "assignments" / ASSIGNMENT / "attention_basics.py").is_file()
    assert release(course, (course.assignment(ASSIGNMENT),), check=True) == []


@pytest.mark.nbgrader
@pytest.mark.slow
def test_autograde_scores_like_grade_check_for_the_solution_the_release_and_a_mistake(classroom, course, grader):
    from grader.submission import resolve_submission

    scores = gradebook_scores(classroom)
    assignment = course.assignment(ASSIGNMENT)
    assert scores["ada"] == (100, dict(assignment.points))
    assert scores["bo"] == (0, {name: 0 for name in assignment.exercises})
    total, cells = scores["cy"]
    assert 0 < cells["softmax"] < assignment.points_for("softmax") and 0 < total < 100
    # the same answer as a module, and as the handed-in notebook given to `grade check` (no Jupyter server)
    module = classroom / "cy-module" / assignment.module
    module.parent.mkdir()
    module.write_text((ROOT / "solutions" / ASSIGNMENT / assignment.module).read_text().replace(RIGHT, UNSTABLE))
    result = grader.grade(resolve_submission(module, course), (assignment,), seed=SEED).to_json()
    notebook = classroom / "submitted" / "cy" / ASSIGNMENT / assignment.notebook
    done = subprocess.run([sys.executable, "-m", "grader", "--course", str(classroom), "check", "--submission",
                           str(notebook), "--seed", str(SEED), "--format", "json", "--device", "cpu"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr  # short of full marks
    for graded in (result, json.loads(done.stdout)):
        assert graded["score"] == total
        exercises = {e["name"]: e for e in graded["assignments"][0]["exercises"]}
        assert {name: e["score"] for name, e in exercises.items()} == cells
        assert "softmax-unstable" in exercises["softmax"]["misconceptions"]


@pytest.mark.nbgrader
@pytest.mark.slow
def test_nbgrader_export_writes_every_students_score(classroom):
    rows = {row["student_id"]: row for row in csv.DictReader((classroom / "nbgrader-grades.csv").open())}
    scores = gradebook_scores(classroom)
    assert {name: float(row["score"]) for name, row in rows.items()} == {n: s[0] for n, s in scores.items()}


@pytest.mark.nbgrader
@pytest.mark.slow
def test_grade_autograde_of_the_collected_notebooks_agrees_and_grade_export_holds_both(classroom, monkeypatch):
    """The kernel runs student code unconfined, as nbgrader always does; `grade autograde` of the
    same submitted/ folder grades it isolated, and the export puts both side by side."""
    from grader.reporting.export import export_csv

    course = load_course(classroom)
    done = subprocess.run([sys.executable, "-m", "grader", "--course", str(classroom), "autograde", "submitted",
                           "--out", "grades", "--workers", "1", "--seed", str(SEED), "--device", "cpu",
                           "--assignment", ASSIGNMENT],  # the week's batch, as nbgrader grades it
                          cwd=classroom, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    monkeypatch.chdir(classroom)  # ./grades by default, and the gradebook at the course root
    rows = {(row["submission"], row["source"]): row for row in csv.DictReader(export_csv(course, []).splitlines())}
    assert set(rows) == {(name, source) for name in ("ada", "bo", "cy") for source in ("autograde", "nbgrader")}
    for name, (total, cells) in gradebook_scores(classroom).items():
        for source in ("autograde", "nbgrader"):
            row = rows[(name, source)]
            assert float(row["score"]) == total and float(row[ASSIGNMENT]) == total
            assert {e: float(row[f"{ASSIGNMENT}:{e}"]) for e in cells} == cells
    assert float(rows[("cy", "nbgrader")]["max_score"]) == 100  # what cy handed in to nbgrader
    # the same week, out of the same points from both: not 100/600 beside nbgrader's 100/100
    assert {float(row["max_score"]) for row in rows.values()} == {100.0}


@pytest.mark.nbgrader
@pytest.mark.slow
def test_feedback_shows_points_and_misconceptions_but_no_hidden_test_nor_reference(classroom):
    def feedback(student):
        return html.unescape((classroom / "feedback" / student / ASSIGNMENT / "attention_basics.html").read_text())

    cy = feedback("cy")
    _, cells = gradebook_scores(classroom)["cy"]
    assert "softmax-unstable" in cy and f"softmax: {cells['softmax']:g}/25 points" in cy
    suite = (ROOT / "suites" / "hidden" / f"test_{ASSIGNMENT}.py").read_text()
    suite_lines = {line.strip() for line in suite.splitlines() if len(line.strip()) > 25}
    reference = (ROOT / "solutions" / ASSIGNMENT / "attention_basics.py").read_text()
    solution_lines = {line.strip() for block in reference.split(MARKERS[0])[1:]
                      for line in block.split(MARKERS[1])[0].splitlines() if len(line.strip()) > 15}
    assert suite_lines and solution_lines
    for student in ("ada", "bo", "cy"):
        text = feedback(student)
        assert "HIDDEN TESTS" not in text and "suites/" not in text and "solutions/" not in text
        assert f"test_{ASSIGNMENT}" not in text
        assert [line for line in suite_lines if line in text] == []
    assert [line for line in solution_lines if line in feedback("bo")] == []  # bo wrote nothing


def test_feedback_preprocessor_removes_hidden_tests_and_their_tracebacks():
    import nbformat

    from grader.course.notebooks import HideHiddenTests

    cell = nbformat.v4.new_code_cell(
        "check()\n### BEGIN HIDDEN TESTS\nassert secret(x) == 42, 'the answer'\n### END HIDDEN TESTS\n",
        metadata={"nbgrader": {"grade": True, "grade_id": "t", "points": 1, "solution": False, "locked": True}})
    cell.outputs = [nbformat.v4.new_output("error", ename="AssertionError", evalue="the answer",
                                           traceback=["Traceback", "assert secret(x) == 42, 'the answer'"]),
                    nbformat.v4.new_output("stream", name="stdout", text="printed")]
    plain = nbformat.v4.new_code_cell("x = 1", metadata={})
    plain.outputs = [nbformat.v4.new_output("error", ename="NameError", evalue="y", traceback=["Traceback", "y"])]
    notebook = nbformat.v4.new_notebook(cells=[cell, plain])
    notebook, _ = HideHiddenTests().preprocess(notebook, {})
    assert "secret" not in json.dumps(notebook["cells"][0]) and notebook.cells[0].source.strip() == "check()"
    assert notebook.cells[0].outputs[0]["traceback"] == ["AssertionError: the answer"]
    assert notebook.cells[0].outputs[1]["text"] == "printed"
    assert notebook.cells[1].outputs[0]["traceback"] == ["Traceback", "y"]  # no hidden test: untouched


def test_grade_release_and_nbgrader_config_share_the_feedback_guard(course, tmp_path):
    from traitlets.config.loader import PyFileConfigLoader

    from grader.course.notebooks import FEEDBACK_PREPROCESSORS, nbgrader_config

    loaded = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()
    assert loaded.GenerateFeedback.preprocessors == FEEDBACK_PREPROCESSORS
    assert "grader.course.notebooks.HideHiddenTests" in FEEDBACK_PREPROCESSORS
    steps = [getattr(step, "__name__", step) for step in loaded.Autograde.autograde_preprocessors]
    assert "grader.sandbox.kernel_boundary.ConfinedExecute" in steps and "Execute" not in steps  # kernels sandboxed
    assert loaded.CourseDirectory.source_directory == "solutions"
    assert loaded.CourseDirectory.release_directory == "assignments"
    assert loaded.CourseDirectory.db_url == f"sqlite:///{ROOT / 'gradebook.db'}"
    assert nbgrader_config(course).GenerateFeedback.preprocessors == FEEDBACK_PREPROCESSORS


@pytest.mark.nbgrader
@pytest.mark.slow
def test_autograde_prints_no_kernel_noise_into_the_instructors_terminal(tmp_path, released):
    """Issue 35: every notebook's kernel printed ipykernel's "Ctrl-C will not work" banner (no parent
    known in the sandbox's clean environment) and a "Fontconfig error" (no /etc/fonts in the sandbox,
    as matplotlib built its font cache) into nbgrader autograde's output. Now only nbgrader's own lines."""
    root = tmp_path / "course"
    root.mkdir()
    course_copy_for_nbgrader(root, released)
    folder = root / "submitted" / "ada" / ASSIGNMENT
    folder.mkdir(parents=True)
    (folder / "attention_basics.ipynb").write_text(json.dumps(student_notebook(root, fill=True)))
    env = dict(os.environ, GRADE_DEVICE="cpu", GRADE_SEED=str(SEED))
    done = subprocess.run([sys.executable, "-m", "nbgrader", "autograde", ASSIGNMENT], cwd=root, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    said = done.stdout + done.stderr
    assert "Autograding" in said and (root / "autograded" / "ada" / ASSIGNMENT / "attention_basics.ipynb").is_file()
    noise = [line for line in said.splitlines()
             if any(word in line for word in ("Fontconfig", "KeyboardInterrupt", "^C", "Ctrl-C", "--existing"))]
    assert noise == [], said[-3000:]
    assert done.stdout.strip() == ""  # the kernel's own stdout: nothing for the instructor


def test_the_schema_revision_read_in_process_is_the_one_alembic_heads_prints(tmp_path):
    """A release's scratch gradebook is stamped with nbgrader's schema revision read here (grader.course.notebooks
    .schema_head), not by nbgrader's `alembic heads` in a new process: the same revision, and nbgrader's own
    function is back in place after."""
    import nbgrader.api

    from grader.course.notebooks import interpreter_scripts_on_path, schema_head, schema_head_read_here

    with interpreter_scripts_on_path():
        printed = nbgrader.api.get_alembic_version()
    assert schema_head() == printed and len(printed) >= 8
    before = nbgrader.api.get_alembic_version
    with schema_head_read_here():
        book = nbgrader.api.Gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}")
        book.close()
    assert nbgrader.api.get_alembic_version is before
    import sqlite3

    with sqlite3.connect(tmp_path / "gradebook.db") as db:
        assert db.execute("SELECT version_num FROM alembic_version").fetchall() == [(printed,)]
