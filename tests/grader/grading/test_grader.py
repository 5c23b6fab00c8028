"""Grading whole submissions (grader/grading/grader.py): solutions, stubs, seeds, broken modules."""
from pathlib import Path

from grader.submission import resolve_submission

ROOT = Path(__file__).resolve().parents[3]


def test_the_solutions_get_full_marks_on_every_exercise(solutions_result):
    failing = [(a.id, e.name, e.feedback) for a in solutions_result.assignments for e in a.exercises
               if e.status != "passed"]
    assert failing == []
    assert solutions_result.score == solutions_result.max_score == 600


def test_the_stubs_get_zero_and_not_implemented(course, grader, released):
    result = grader.grade(resolve_submission(released, course), course.assignments, seed=3)
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


def test_the_grading_is_deaf_to_pytest_options_in_the_environment(course, grader, submission_dir, monkeypatch):
    """A CI job that sets PYTEST_ADDOPTS for its own tests (``--junitxml``, ``--durations``) stopped every
    grading with pytest's usage error (the grading leaves the junitxml plugin out): the grading's pytest is
    its own, and the job's options are there again after it."""
    asked = "--junitxml=/nonexistent/report.xml --durations=5 -x"
    monkeypatch.setenv("PYTEST_ADDOPTS", asked)
    result = grader.grade(resolve_submission(submission_dir, course), (course.assignment("01_attention_basics"),),
                          seed=5)
    assert result.score == 100
    import os
    assert os.environ["PYTEST_ADDOPTS"] == asked


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


def _comparable(result) -> list:
    """A result's scores, statuses, named mistakes and feedback, without timings."""
    return [(a.id, e.name, e.score, e.status, tuple(e.misconceptions), e.feedback)
            for a in result.assignments for e in a.exercises]


def test_a_batch_graded_in_one_session_gives_each_submission_what_it_gets_alone(course, grader, tmp_path,
                                                                                 submission_dir):
    """grade autograde collects the suites once and runs them for each submission, with one seed and
    the reference's results kept between submissions: a mistake made by one submission, a correct
    one after it, another mistake and a folder that is no submission each get exactly their own."""
    import shutil

    from grader.errors import GraderError

    chosen = (course.assignment("01_attention_basics"), course.assignment("02_self_attention"))
    unstable = tmp_path / "unstable"
    shutil.copytree(submission_dir, unstable)
    module = unstable / "01_attention_basics" / "attention_basics.py"
    module.write_text(module.read_text().replace("return exp / total.clamp_min(1.0)", "return exp / total"))
    unscaled = tmp_path / "unscaled"
    shutil.copytree(submission_dir, unscaled)
    module = unscaled / "02_self_attention" / "self_attention.py"
    module.write_text(module.read_text().replace(" / math.sqrt(keys.shape[-1])", ""))
    empty = tmp_path / "empty"
    empty.mkdir()
    jobs = [unstable, submission_dir, unscaled, empty, submission_dir]
    streamed = []
    grader.grade_each(iter(jobs), chosen, seed=77, prepare=lambda path: resolve_submission(path, course),
                      report=lambda path, outcome: streamed.append((path, outcome)))
    assert [path for path, _ in streamed] == jobs
    assert isinstance(streamed[3][1], GraderError)
    for path, outcome in streamed[:3] + streamed[4:]:
        alone = grader.grade(resolve_submission(path, course), chosen, seed=77)
        assert outcome.seed == 77 and _comparable(outcome) == _comparable(alone), path.name
    scores = [outcome.score for _, outcome in streamed if not isinstance(outcome, GraderError)]
    assert scores[1] == scores[3] == 200 and scores[0] < 200 and scores[2] < 200
    named = {m for _, o in streamed[:3] if not isinstance(o, GraderError)
             for a in o.assignments for e in a.exercises for m in e.misconceptions}
    assert {"softmax-unstable", "missing-scale"} <= named


def test_a_stream_grades_each_job_on_its_own_assignments_as_alone(course, grader, tmp_path, submission_dir):
    """--watch grades what a save changed, in the one session it keeps: a job graded on some of the
    session's assignments gets those only, each as a grading of them alone gives it."""
    import shutil

    first, third = course.assignment("01_attention_basics"), course.assignment("03_causal_attention")
    broken = tmp_path / "broken"
    shutil.copytree(submission_dir, broken)
    module = broken / "03_causal_attention" / "causal_attention.py"
    module.write_text(module.read_text().replace("torch.triu", "torch.tril", 1))
    jobs = [(submission_dir, (first, third)), (broken, (third,)), (submission_dir, (first,))]
    streamed = []
    grader.grade_each(iter(jobs), (first, third), seed=5, prepare=lambda job: resolve_submission(job[0], course),
                      report=lambda job, outcome: streamed.append(outcome), assignments_of=lambda job: job[1])
    assert [[a.id for a in outcome.assignments] for outcome in streamed] == [
        ["01_attention_basics", "03_causal_attention"], ["03_causal_attention"], ["01_attention_basics"]]
    for (path, chosen), outcome in zip(jobs, streamed):
        alone = grader.grade(resolve_submission(path, course), chosen, seed=5)
        assert _comparable(outcome) == _comparable(alone), path.name
    assert streamed[1].score < streamed[1].max_score and streamed[2].full_marks


def test_values_a_check_works_out_itself_are_kept_for_the_batch_and_judge_each_submission_as_alone(
        course, grader, tmp_path, submission_dir):
    """The expected output 05's memory check works out itself (Grade.reference_value, as 06's cache check
    does) is kept between the submissions of a stream: a right one, one a thousandth off, the right one
    again each get what a grading alone gives them, and the one off fails that check."""
    import shutil

    chosen = (course.assignment("05_efficient_attention"),)
    off = tmp_path / "off"
    shutil.copytree(submission_dir, off)
    module = off / "05_efficient_attention" / "efficient_attention.py"
    module.write_text(module.read_text().replace("return torch.cat(outputs, dim=-2)",
                                                 "return torch.cat(outputs, dim=-2) * 1.001"))
    jobs = [submission_dir, off, submission_dir]
    streamed = []
    grader.grade_each(iter(jobs), chosen, seed=11, prepare=lambda path: resolve_submission(path, course),
                      report=lambda path, outcome: streamed.append(outcome))
    for path, outcome in zip(jobs, streamed):
        assert _comparable(outcome) == _comparable(grader.grade(resolve_submission(path, course), chosen, seed=11))
    assert streamed[0].full_marks and streamed[2].full_marks
    flash = next(e for e in streamed[1].assignments[0].exercises if e.name == "flash_attention")
    bound = [check for check in flash.checks if check.name.startswith("flash_memory_bound")]
    assert bound and all(check.status == "failed" for check in bound), bound  # its own comparison failed


def test_torch_is_imported_once_and_frozen_out_of_the_collector():
    """A full collection among torch's objects costs tens of milliseconds each time one runs; imported
    by the grader, they are frozen (gc.freeze), and the collector is left as it was."""
    import gc
    import subprocess
    import sys

    code = ("import gc, sys; from grader.grading.grader import import_torch; "
            "torch = import_torch(); assert import_torch() is torch; "
            "print(gc.get_freeze_count() > 100000, gc.isenabled(), 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["True", "True", "True"]
    assert gc.isenabled()


def test_a_right_submission_starts_one_worker_an_assignment_and_one_for_its_apart_checks(course, grader, monkeypatch):
    """Issue 47's count, on the CPU: the workers (on CUDA, the contexts, one a worker: grader.inside.worker.warm_device)
    a right submission costs. One for each assignment's module, asked for ahead, and one more for 06's checks marked
    apart (its memory readings, on a process of their own); none for a verification (no helper is wrong)."""
    from grader.sandbox.client import ZygoteClient

    asked = []
    original = ZygoteClient.spawn_ahead

    def spawn_ahead(self, spec):
        asked.append((spec.module_name, spec.device))
        return original(self, spec)

    monkeypatch.setattr(ZygoteClient, "spawn_ahead", spawn_ahead)
    result = grader.grade(resolve_submission(ROOT / "solutions", course), course.assignments, seed=5)
    assert result.score == result.max_score
    modules = sorted(a.module_name for a in course.assignments)
    apart = course.assignment("06_decoding_attention").module_name
    assert sorted(name for name, _ in asked) == sorted([*modules, apart])
    assert {device for _, device in asked} == {"cpu"}
