"""A submission's assignments graded by two processes at once (grader/grading/twins.py, issue 47): the same result
as one process gives, whatever the second process does, and each memory reading its own zygote's."""
import os
import shutil
import sys
from pathlib import Path

import pytest

import grader.grading.twins as twins
from grader.grading.grader import Grader
from grader.submission import resolve_submission

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tests" / "corpus"))
import corpus  # noqa: E402
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
def test_two_processes_grade_a_submission_as_one_does(course, wrong_course, one_process, monkeypatch, tmp_path):
    """Every exercise's score, status, named mistakes, checks (their messages) and figures are those of one process;
    and the second process did grade some of the assignments. The queue's order is what an earlier grading measured
    (here one that puts the assignment of fewest checks first), and this grading's measures, both processes', are
    kept for the next."""
    used = []
    real = twins.graded_in_two
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    root = str(course.root.resolve())
    twins.keep_measured(root, {"05_efficient_attention": 30.0, "01_attention_basics": 0.1})
    orders, order = [], twins.longest_first
    monkeypatch.setattr(twins, "longest_first", lambda *args: orders.append(order(*args)) or orders[-1])
    monkeypatch.setattr(twins, "wanted", lambda: True)
    monkeypatch.setattr(twins, "graded_in_two", lambda *args: used.append(real(*args)) or used[-1])
    both = _graded(course, wrong_course, twins_on=True)
    assert used == [True] and orders[0][0] == "05_efficient_attention" and orders[0][-1] == "01_attention_basics"
    assert _flat(both) == _flat(one_process)
    assert both.score < 300 and any(e.figure is not None for a in both.assignments for e in a.exercises)
    kept = twins.measured(root)
    assert set(kept) == set(MISTAKES) and all(0 < kept[a] < 30 for a in MISTAKES)


def test_the_queue_takes_the_longest_first():
    """Where nothing was measured, by checks; where all were, by seconds; one not measured as its checks at the
    median seconds a check of the others."""
    groups = {"a": [0, 1], "b": [2, 3, 4], "c": [5]}
    assert twins.longest_first(groups, {}) == ["b", "a", "c"]
    assert twins.longest_first(groups, {"a": 0.2, "b": 0.3, "c": 0.9}) == ["c", "b", "a"]
    assert twins.longest_first(groups, {"a": 0.2, "c": 0.25}) == ["b", "c", "a"]  # b: 3 checks at 0.175 s


def test_measures_are_kept_by_course_and_read_only_from_the_users_own_file(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    twins.keep_measured("/course", {"01": 0.5, "02": 0.25})
    twins.keep_measured("/course", {"02": 0.75})
    twins.keep_measured("/other", {"01": 2.0})
    assert twins.measured("/course") == {"01": 0.5, "02": 0.75} and twins.measured("/other") == {"01": 2.0}
    kept = tmp_path / "attention-course" / "twins" / twins.TIMES
    assert kept.stat().st_mode & 0o777 == 0o600
    for course in range(twins.KEPT_COURSES + 3):  # a few courses, the latest
        twins.keep_measured(f"/c{course}", {"01": 1.0})
    assert twins.measured("/course") == {} and twins.measured(f"/c{twins.KEPT_COURSES + 2}") == {"01": 1.0}

    kept.write_text('{"/course": {"01": 1.5, "02": -1, "03": "x", "04": 1e999}}')
    assert twins.measured("/course") == {"01": 1.5}  # only names and finite seconds
    kept.chmod(0o666)  # writable by others: not the user's measures
    assert twins.measured("/course") == {}
    kept.unlink()
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text('{"/course": {"01": 1.5}}')
    kept.symlink_to(elsewhere)  # a link is not followed
    assert twins.measured("/course") == {}
    kept.unlink()
    kept.write_text("not json")
    assert twins.measured("/course") == {}
    twins.keep_measured("/course", {"01": 0.5})  # replaced whole
    assert twins.measured("/course") == {"01": 0.5}


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


APART_MISTAKES = ("blind_06_GroupedQueryAttention_caches_repeated_heads.py",  # the memory check (apart) fails
                  "blind_06_MultiHeadAttentionWithSWA_cache_never_trimmed.py",  # the memory check and the window's
                  "blind_06_sliding_window_mask_none_as_num_keys.py")  # checks that are not apart


@pytest.mark.slow
def test_one_assignment_s_apart_checks_graded_by_the_second_process_give_what_one_process_gives(course, tmp_path,
                                                                                                 monkeypatch):
    """06's memory check is marked apart (authoring.apart): graded after 06's other checks on new workers and state of
    its own on every path, so that the second process of `grade check` can grade it beside them. A 06 with mistakes
    both in and outside it: the same result, check by check and in the same order, from one process and from two,
    and the two processes did share 06."""
    folder = tmp_path / "assignments" / "06_decoding_attention"
    folder.mkdir(parents=True)
    text = (ROOT / "solutions" / "06_decoding_attention" / "decoding_attention.py").read_text()
    for name in APART_MISTAKES:
        text = corpus.splice(text, (ROOT / "tests" / "corpus" / "unnamed" / name).read_text())
    (folder / "decoding_attention.py").write_text(text)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    chosen = (course.assignment("06_decoding_attention"),)

    def graded(twins_on):
        grader = Grader(course, device="cpu", twins=twins_on)
        try:
            return grader.grade(resolve_submission(folder.parent, course), chosen, seed=5)
        finally:
            grader.close()

    one = graded(False)
    shared, real = [], twins.graded_in_two
    monkeypatch.setattr(twins, "wanted", lambda: True)
    monkeypatch.setattr(twins, "graded_in_two", lambda *args: shared.append(real(*args)) or shared[-1])
    two = graded(True)
    assert shared == [True] and set(twins.measured(str(course.root.resolve()))) == {
        "06_decoding_attention", "06_decoding_attention" + twins.APART}
    assert _flat(two) == _flat(one)
    memory = [c for a in one.assignments for e in a.exercises for c in e.checks
              if c.name.startswith("the_cache_holds_what_it_should")]
    assert len(memory) == 3 and {c.status for c in memory} == {"failed"}
    assert one.score < 100
