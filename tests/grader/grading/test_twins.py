"""A submission's assignments graded by two processes at once (grader/grading/twins.py, issue 47): the same result
as one process gives, whatever the second process does, and each memory reading its own zygote's."""
import os
import shutil
from pathlib import Path

import pytest

import grader.grading.twins as twins
from grader.grading.grader import Grader
from grader.submission import resolve_submission

ROOT = Path(__file__).resolve().parents[3]
MISTAKES = {  # assignment -> a wrong version of one of its exercises (pictured ones among them: figures come back);
    # these three assignments are graded (two processes share them out)
    "01_attention_basics": ("attention_basics.py", "\n\ndef softmax(x, dim=-1):\n    e = x.exp()\n"
                                                   "    return e / e.sum(dim=0, keepdim=True)\n"),
    "03_causal_attention": ("causal_attention.py", "\n\ndef causal_mask(num_tokens, device=None):\n    import torch\n"
                                                   "    return torch.ones(num_tokens, num_tokens, dtype=torch.bool,"
                                                   " device=device).tril()\n"),
    "05_efficient_attention": ("efficient_attention.py", "\n\ndef online_softmax(x, block_size):\n    import torch\n"
                                                         "    return torch.softmax(x, dim=-1)\n"),
}


@pytest.fixture(scope="module")
def wrong_course(tmp_path_factory):
    folder = tmp_path_factory.mktemp("twins") / "assignments"
    for source in sorted((ROOT / "solutions").glob("*/*.py")):
        (folder / source.parent.name).mkdir(parents=True, exist_ok=True)
        shutil.copy(source, folder / source.parent.name / source.name)
    for assignment, (module, text) in MISTAKES.items():
        path = folder / assignment / module
        path.write_text(path.read_text() + text)
    return folder


def _flat(result) -> list:
    return [(a.id, e.name, e.score, e.status, tuple(e.misconceptions), e.figure is not None,
             tuple((c.name, c.status, c.message) for c in e.checks))
            for a in result.assignments for e in a.exercises]


def _graded(course, folder, *, twins_on: bool):
    grader = Grader(course, device="cpu", twins=twins_on)
    try:
        return grader.grade(resolve_submission(folder, course), tuple(course.assignment(a) for a in MISTAKES), seed=3)
    finally:
        grader.close()


@pytest.fixture(scope="module")
def one_process(course, wrong_course):
    return _graded(course, wrong_course, twins_on=False)


@pytest.mark.slow
def test_two_processes_grade_a_submission_as_one_does(course, wrong_course, one_process, monkeypatch):
    """Every exercise's score, status, named mistakes, checks (their messages) and figures are those of one process;
    and the second process did grade some of the assignments."""
    used = []
    real = twins.graded_in_two
    monkeypatch.setattr(twins, "wanted", lambda: True)
    monkeypatch.setattr(twins, "graded_in_two", lambda *args: used.append(real(*args)) or used[-1])
    both = _graded(course, wrong_course, twins_on=True)
    assert used == [True]
    assert _flat(both) == _flat(one_process)
    assert both.score < 300 and any(e.figure is not None for a in both.assignments for e in a.exercises)


@pytest.mark.slow
def test_a_second_process_that_dies_leaves_its_assignments_to_the_first(course, wrong_course, one_process, monkeypatch):
    """The child ends without a report (as if killed): the parent grades what it had taken, afresh; nothing lost."""
    monkeypatch.setattr(twins, "wanted", lambda: True)
    monkeypatch.setattr(twins, "_child", lambda *args: os._exit(3))
    assert _flat(_graded(course, wrong_course, twins_on=True)) == _flat(one_process)


def test_one_process_where_the_grader_or_the_machine_asks_for_it(course, monkeypatch):
    """Not for a grader made without twins (autograde, the nbgrader path), nor with GRADE_TWINS=0, one processor, or
    every processor already busy."""
    monkeypatch.setattr(os, "getloadavg", lambda: (0.5, 0.5, 0.5))
    monkeypatch.setenv(twins.ENVIRONMENT, "0")
    assert not twins.wanted()
    monkeypatch.setenv(twins.ENVIRONMENT, "1")
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    assert not twins.wanted()
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    assert twins.wanted()
    monkeypatch.setattr(os, "getloadavg", lambda: (2.5, 1.0, 1.0))
    assert not twins.wanted()
