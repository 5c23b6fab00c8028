"""The grading session's word to suite authors (grader/grading/pytest_session.py): a broken suite is loud for them,
and a check that breaks stays "not your fault" for students unless --debug asks for its traceback."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

from grader.config import load_course

ROOT = Path(__file__).resolve().parents[3]
SUITE = Path("suites", "hidden", "test_01_attention_basics.py")


def course_with(tmp_path: Path, old: str, new: str):
    """The real course, with ``old`` replaced by ``new`` in assignment 01's hidden suite."""
    folder = tmp_path / "course"
    folder.mkdir()
    shutil.copy(ROOT / "course.toml", folder)
    (folder / "solutions").symlink_to(ROOT / "solutions")
    shutil.copytree(ROOT / "suites", folder / "suites", ignore=shutil.ignore_patterns("__pycache__"))
    text = (folder / SUITE).read_text()
    assert old in text
    (folder / SUITE).write_text(text.replace(old, new, 1))
    return load_course(folder)


def test_a_check_naming_an_exercise_that_course_toml_lacks_stops_grading_and_says_where(tmp_path):
    """In processes of their own: pytest imports a suite once per process, by its name."""
    course = course_with(tmp_path, '@exercise("softmax")\ndef test_softmax_lesson_scores',
                         '@exercise("sofmax")\ndef test_softmax_lesson_scores')
    grade = [sys.executable, "-m", "grader", "--course", str(course.root)]
    ran = subprocess.run([*grade, "check", "01_attention_basics", "--submission", str(ROOT / "solutions")],
                         capture_output=True, text=True)
    assert ran.returncode == 2 and "Traceback" not in ran.stderr
    assert ran.stderr.startswith("grade: error: the grading suite is broken:")
    assert "test_softmax_lesson_scores" in ran.stderr and "'sofmax'" in ran.stderr and "softmax_naive" in ran.stderr
    klass, out = tmp_path / "class", tmp_path / "out"
    shutil.copytree(ROOT / "solutions" / "01_attention_basics", klass / "ann" / "01_attention_basics",
                    ignore=shutil.ignore_patterns("*.ipynb"))
    ran = subprocess.run([*grade, "autograde", str(klass), "--out", str(out), "--assignment", "01_attention_basics"],
                         capture_output=True, text=True)
    assert ran.returncode == 2, ran.stderr  # every submission has a result: a grader error that says why
    result = json.loads((out / "ann.json").read_text())
    exercise = result["assignments"][0]["exercises"][0]
    assert exercise["status"] == "grader-error" and "the grading suite is broken" in exercise["feedback"]


def test_a_bug_in_a_check_is_not_the_students_fault_and_debug_shows_where_it_is(tmp_path):
    """In a process of its own: pytest imports a suite once per process, by its name."""
    import os

    course = course_with(tmp_path, "def test_scores_loop_lesson_data(grade):\n",
                         "def test_scores_loop_lesson_data(grade):\n    {}['no such key']\n")

    def loop_feedback(*options, **env):
        ran = subprocess.run([sys.executable, "-m", "grader", "--course", str(course.root), "check",
                              "01_attention_basics", "--submission", str(ROOT / "solutions"), "--format", "json",
                              *options], capture_output=True, text=True,
                             env={k: v for k, v in {**os.environ, **env}.items() if k != "GRADE_DEBUG" or env})
        exercises = json.loads(ran.stdout)["assignments"][0]["exercises"]  # stdout stays the report alone
        assert [e["status"] for e in exercises if e["name"] != "attention_scores_loop"] == ["passed"] * 6
        return next(e for e in exercises if e["name"] == "attention_scores_loop"), ran.stderr

    quiet, _ = loop_feedback()
    assert quiet["status"] == "grader-error" and "not your fault" in quiet["feedback"] and "KeyError" in quiet["feedback"]
    assert "Traceback" not in quiet["feedback"] and "test_01" not in quiet["feedback"]
    for loud, stderr in (loop_feedback("--debug"), loop_feedback(GRADE_DEBUG="1")):
        assert "Traceback" in loud["feedback"] and "test_01_attention_basics.py" in loud["feedback"]
        assert "no such key" in loud["feedback"] and "_pytest" not in loud["feedback"]
        assert "test_scores_loop_lesson_data" in stderr  # pytest's own output, on stderr


def test_every_marker_the_grading_registers_is_in_the_projects_own_pytest_configuration():
    """A test file that loads the suites before any grading run (alone, or first in an xdist worker) is
    collected with --strict-markers against pyproject.toml's list: a suite's marker missing there is an
    error at collection (as @apart was)."""
    import tomllib
    from types import SimpleNamespace

    from grader.grading.pytest_session import register_markers

    registered: list = []
    register_markers(SimpleNamespace(addinivalue_line=lambda name, line: registered.append((name, line))))
    listed = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]

    def names(lines):
        return {line.split(":")[0].split("(")[0] for line in lines}

    assert {name for name, _ in registered} == {"markers"}
    assert {"exercise", "assignment", "apart"} <= names(line for _, line in registered)
    assert names(line for _, line in registered) <= names(listed)
