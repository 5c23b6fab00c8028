"""Checks run without pytest's protocol in a stream (grader/grading/streamed_checks.py), and the ones that keep it."""
import json
import shutil
import subprocess
import sys

from test_pytest_session import ROOT, course_with

EXTRA = '''@exercise("softmax")
@pytest.mark.skipif(True, reason="never here")
def test_never_run(grade):
    raise AssertionError("a skipped check ran")


@exercise("softmax")
def test_with_a_fixture_of_pytests_own(grade, tmp_path):
    (tmp_path / "kept").write_text("1")
    softmax_same(grade, "softmax", grade.randn(3, 4) * (tmp_path / "kept").read_text().count("1"))


@exercise("softmax")
def test_a_broken_check(grade):
    {}["no such key"]


# --- softmax ---'''


def test_a_stream_grades_each_check_as_pytests_own_run_would(tmp_path):
    """Beside the lean checks of 01: one skipped by a mark, one with a fixture of pytest's (both run by
    pytest's protocol: the first never runs, the second passes) and one that breaks (a grader error,
    not the student's). Every submission of a batch gets what `grade check` gives it alone, check by
    check (one process each: pytest imports a suite by its name once per process)."""
    course = course_with(tmp_path, "# --- softmax ---", EXTRA)
    grade = [sys.executable, "-m", "grader", "--course", str(course.root)]
    klass, out = tmp_path / "class", tmp_path / "out"
    for name in ("ann", "bob"):
        shutil.copytree(ROOT / "solutions" / "01_attention_basics", klass / name / "01_attention_basics",
                        ignore=shutil.ignore_patterns("*.ipynb"))
    ran = subprocess.run([*grade, "autograde", str(klass), "--out", str(out), "--assignment", "01_attention_basics",
                          "--seed", "5"], capture_output=True, text=True, timeout=600)
    assert ran.returncode in (0, 2), ran.stderr
    alone = subprocess.run([*grade, "check", "01_attention_basics", "--submission", str(klass / "ann"),
                            "--format", "json", "--seed", "5"], capture_output=True, text=True, timeout=600)
    expected = json.loads(alone.stdout)["assignments"][0]["exercises"]

    def checks(exercises):
        return {(e["name"], c["name"]): c["status"] for e in exercises for c in e["checks"]}

    for name in ("ann", "bob"):
        got = json.loads((out / f"{name}.json").read_text())["assignments"][0]["exercises"]
        assert checks(got) == checks(expected)
    by_check = checks(expected)
    assert ("softmax", "never_run") not in by_check  # skipped: no points either way
    assert by_check[("softmax", "with_a_fixture_of_pytests_own")] == "passed"
    assert by_check[("softmax", "a_broken_check")] == "grader-error"
    assert by_check[("softmax", "softmax_lesson_scores")] == "passed"
