"""Grading whole submissions (grader/runner.py): solutions, stubs, seeds, broken modules."""
from pathlib import Path

from grader.submission import resolve_submission

ROOT = Path(__file__).resolve().parents[2]


def test_the_solutions_get_full_marks_on_every_exercise(solutions_result):
    failing = [(a.id, e.name, e.feedback) for a in solutions_result.assignments for e in a.exercises
               if e.status != "passed"]
    assert failing == []
    assert solutions_result.score == solutions_result.max_score == 500


def test_the_stubs_get_zero_and_not_implemented(course, grader):
    result = grader.grade(resolve_submission(ROOT / "assignments", course), course.assignments, seed=3)
    assert result.score == 0
    assert {e.status for a in result.assignments for e in a.exercises} == {"not_implemented"}


def test_a_seed_reproduces_a_run_exactly(course, grader, submission_dir):
    broken = submission_dir / "01_attention_basics" / "attention_basics.py"
    broken.write_text(broken.read_text().replace("return exp / total.clamp_min(1.0)", "return exp / total"))
    chosen = (course.assignment("01_attention_basics"),)
    runs = [grader.grade(resolve_submission(submission_dir, course), chosen, seed=seed).to_json()
            for seed in (42, 42, 43)]
    for run in runs:  # everything but when it ran and how long it took
        run.pop("duration_s"), run.pop("started")
        for exercise in (e for a in run["assignments"] for e in a["exercises"]):
            exercise.pop("duration_s")
    assert runs[0] == runs[1]
    assert runs[0]["seed"] == 42 and runs[2]["seed"] == 43
    softmax = runs[0]["assignments"][0]["exercises"][3]
    assert softmax["name"] == "softmax" and 0 < softmax["score"] < 25


def test_a_syntax_error_in_one_module_leaves_the_others_graded(course, grader, submission_dir):
    (submission_dir / "02_self_attention" / "self_attention.py").write_text("def attention_weights(:\n")
    chosen = (course.assignment("01_attention_basics"), course.assignment("02_self_attention"))
    result = grader.grade(resolve_submission(submission_dir, course), chosen, seed=5)
    basics, broken = result.assignments
    assert basics.score == 100
    assert broken.score == 0 and {e.status for e in broken.exercises} == {"error"}
    feedback = broken.exercises[0].feedback
    assert "self_attention.py" in feedback and "line 1" in feedback and "SyntaxError" in feedback
    assert "grader/" not in feedback and "suites" not in feedback
