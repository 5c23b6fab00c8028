"""simple_self_attention's helpers (grader/inside/tracer.py Tracer.attribute, grader/inside/worker.py helpers_code and
stand_in, grader/grading/oracle.py, lesson.checks_01): red team rounds 25 and 25b, graded on the three exercises that
decide (softmax, attention_scores, simple_self_attention); and a function helper wrong only on calls the grader's
model of it does not make (grader/grading/diagnose.py wrong_elsewhere, 01's and 02's)."""
from pathlib import Path

import pytest

from grader.submission import resolve_submission

HELDOUT = Path(__file__).resolve().parents[2] / "corpus" / "heldout"
EXERCISES = ("softmax", "attention_scores", "simple_self_attention")
FULL = 100.0


# round 25 (tests/corpus/heldout/round25_red_team): helper attribution by frames. a1-a8: attacks graded against their
# plain forms; f1-f9: honest styles (the "attack" form) that must score what the same author's honest form scores
ROUND_25_ATTACKS = ("a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8")
ROUND_25_STYLES = ("f1", "f2", "f3", "f4", "f5", "f6", "f7", "f8", "f9")


def _graded_01(grader, course, tmp_path, name, text):
    """01's softmax, attention_scores and simple_self_attention graded (seed 5) on ``text``: the share of their points
    earned, in percent."""
    folder = tmp_path / name / "01_attention_basics"
    folder.mkdir(parents=True)
    (folder / "attention_basics.py").write_text(text)
    result = grader.grade(resolve_submission(folder, course), (course.assignment("01_attention_basics"),), seed=5,
                          exercises=EXERCISES).assignments[0]
    return round(100 * sum(e.score for e in result.exercises) / sum(e.max_score for e in result.exercises), 6)


@pytest.mark.slow
@pytest.mark.parametrize("case", ROUND_25_ATTACKS + ROUND_25_STYLES)
def test_a_helpers_share_counted_by_its_frames_is_verified_with_a_right_helper(grader, course, tmp_path, case):
    """Red team round 25, against the helpers' shares counted by the frames on the stack (round 24d's fix): a flag
    keyword that ran the caller's loop inside attention_scores' frame, with the stand-in told apart by an
    ``except`` around the refused call (a3, a4) or unverified where two helpers grew (a6), or on batched calls
    only, where no rule check is forgiven (a8); a code object shared by the caller and the helper (a5: one factory;
    a7: one decorator's wrapper); each scored 98.33 against 96.43 (98.1 for a4). Now a stand-in is the helper's own
    function running other code (no identity tells it apart), a call the stand-in cannot answer as a right
    exercise's fails the verification, a looping softmax excuses nothing, a shared code object is followed to the
    function it wraps or left to the caller, and a comparing call's exemption through a helper's frames holds only
    where the same calls with a right helper in place are vectorised: each scores no more than its plain form.
    f1-f9, honest styles that lost simple_self_attention's rule (a helper as a partial, a callable object, behind a
    shared decorator, reached by a closure, a default argument or a class attribute), score as the author's
    honest form."""
    folder = HELDOUT / "round25_red_team"

    def score(form):
        return _graded_01(grader, course, tmp_path, form, (folder / f"{case}__{form}.py.txt").read_text())

    if case in ROUND_25_ATTACKS:
        attack, plain = score("attack"), score("plain")
        assert attack <= plain < FULL, (attack, plain)
        if (folder / f"{case}__honestok.py.txt").exists():
            assert score("honestok") == FULL
    else:
        assert score("attack") == score("honest")



# round 25b (tests/corpus/heldout/round25b_red_team): id -> what its "attack" form must score at most ("plain" or
# "honest": the form it is judged against), or "honest=" for an honest style that must score its honest form
ROUND_25B = {"a1stash": "honest", "a2forgive": "plain", "a3forgivebatch": "honest", "f4classdeco": "honest="}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(ROUND_25B))
def test_a_verification_told_apart_by_a_helpers_side_effect_shows_the_authors_own_code(grader, course, tmp_path,
                                                                                       case):
    """Red team round 25b: a1stash and a3forgivebatch tell the run with a right helper apart by a side effect of
    their own helper (a module-level list it fills) and run their vectorised code there, their loop elsewhere
    (inside the helper's frame, or on forgiven batched calls): that run shows the author's own right, vectorised
    code on the very calls graded, so they score what their honest form scores (98.33, 98.96), never more, and no
    slip can hide there (it would show in that run). a2forgive (the same on every call) scores its plain form.
    f4classdeco, an honest class-based decorator on both helpers and the caller, lost 1.90 (its wrapper's shared
    ``__call__``): the function an object holds is followed now."""
    folder = HELDOUT / "round25b_red_team"

    def score(form):
        return _graded_01(grader, course, tmp_path, form, (folder / f"{case}__{form}.py.txt").read_text())

    against = ROUND_25B[case]
    if against == "honest=":
        assert score("attack") == score("honest")
    else:
        assert score("attack") <= score(against), against
    assert score("honestok") == 100


@pytest.mark.slow
@pytest.mark.parametrize("case", ["f2extraarg", "f3softmaxkw"])
def test_a_helper_called_outside_its_contract_leaves_the_case_to_the_caller_saying_so(grader, course, tmp_path, case):
    """Red team round 25b: an honest caller that calls its helper with an argument the contract's signature does not
    take (``attention_scores(inputs, inputs)``, ``softmax(x, temperature=1.0)``) owns the case (course-spec:
    "An exercise that calls its helper outside the helper's contract owns the result"), and the feedback says that,
    not "still wrong"."""
    folder = tmp_path / "submission" / "01_attention_basics"
    folder.mkdir(parents=True)
    source = HELDOUT / "round25b_red_team" / f"{case}__attack.py.txt"
    (folder / "attention_basics.py").write_text(source.read_text())
    result = grader.grade(resolve_submission(folder, course), (course.assignment("01_attention_basics"),), seed=5,
                          exercises=EXERCISES)
    simple = {e.name: e for e in result.assignments[0].exercises}["simple_self_attention"]
    assert simple.score < simple.max_score
    assert "this exercise called it as no right exercise does" in simple.feedback, simple.feedback
    assert "still wrong" not in simple.feedback


@pytest.mark.slow
def test_a_helper_that_raises_on_the_graders_call_of_it_is_verified_with_a_right_one(grader, course, tmp_path):
    """Session 18's styles hunt (tests/corpus/heldout/session18_styles2): a softmax summing without keepdim raises on
    the [B, T, T] scores the grader's model of simple_self_attention gives it, and a right simple_self_attention that
    calls itself on each [T, T] slice got there a wrong softmax that raises nothing: the blame, which could compute
    nothing from a helper that raises, left the case to the exercise (10.48 of 20). A helper that raises where a right
    one returns now has its case run again with a right softmax in place, which alone decides."""
    text = (HELDOUT / "session18_styles2" / "sm_nokeepdim__per_batch_loop__attention_basics.py.txt").read_text()
    folder = tmp_path / "slices" / "01_attention_basics"
    folder.mkdir(parents=True)
    (folder / "attention_basics.py").write_text(text)
    result = grader.grade(resolve_submission(folder, course), (course.assignment("01_attention_basics"),), seed=5,
                          exercises=("softmax", "simple_self_attention")).assignments[0]
    graded = {e.name: e for e in result.exercises}
    assert graded["softmax"].score < graded["softmax"].max_score
    caller = graded["simple_self_attention"]
    assert caller.score == caller.max_score and "right, given your softmax" in caller.feedback, caller.feedback


@pytest.mark.slow
def test_a_helper_wrong_on_a_call_the_graders_model_does_not_make_is_verified_with_a_right_one(grader, course, tmp_path):
    """The same hunt: a right simple_self_attention flattening the batch into a 3-d call of attention_scores (right
    on the [T, d] calls the grader's model makes, ``x @ x.T``, wrong on every batch) lost 10.48 of 20, and a right
    SelfAttention_v2 passing an explicit mask that hides nothing to an attention_weights whose mask is inverted (right
    without a mask) lost all 15: the helper was right on the modelled call, so nothing asked for the run with a right
    helper. Now a helper right on the modelled call is tried on the same values as a batch of one, on the first of a
    batch, and (attention_weights) with an empty mask; wrong there, the run with a right helper decides. The same
    callers with a slip of their own still lose their cases (that run names it), and a right helper asks for nothing."""
    cases = (("as_dotT__flatten_batch__attention_basics.py.txt", "01_attention_basics", "attention_scores",
              "simple_self_attention", "as a batch of one",
              ("w = softmax(attention_scores(x), dim=-1)", "w = softmax(attention_scores(x) / 2, dim=-1)"),
              ("inputs @ inputs.T", "inputs @ inputs.transpose(-2, -1)")),
             ("aw_mask_inverted__B6__self_attention.py.txt", "02_self_attention", "attention_weights",
              "SelfAttention_v2", "with a mask that hides nothing",
              ("self.W_value(x), nothing_hidden)", "self.W_value(x) / 2, nothing_hidden)"),
              ("scores.masked_fill(~mask,", "scores.masked_fill(mask,")))
    for file, assignment, helper, caller, where, (line, slip), (wrong, right) in cases:
        text = (HELDOUT / "session18_styles2" / file).read_text()
        assert line in text and wrong in text, file
        graded = {e.name: e for e in _graded_exercises(grader, course, tmp_path, file, assignment, text,
                                                       (helper, caller))}
        assert graded[helper].score < graded[helper].max_score
        kept = graded[caller]
        assert kept.score == kept.max_score and f"right, given your {helper}" in kept.feedback, kept.feedback
        assert where in kept.feedback, kept.feedback
        graded = {e.name: e for e in _graded_exercises(grader, course, tmp_path, file + "_slip", assignment,
                                                       text.replace(line, slip), (helper, caller))}
        assert graded[caller].score < 0.5 * graded[caller].max_score, graded[caller].feedback
        graded = _graded_exercises(grader, course, tmp_path, file + "_right", assignment, text.replace(wrong, right),
                                   (helper, caller))
        assert all(e.score == e.max_score and "given your" not in e.feedback for e in graded), file


def _graded_exercises(grader, course, tmp_path, name, assignment, text, exercises):
    module = course.assignment(assignment).module
    folder = tmp_path / name / assignment
    folder.mkdir(parents=True)
    (folder / module).write_text(text)
    return grader.grade(resolve_submission(folder, course), (course.assignment(assignment),), seed=5,
                        exercises=exercises).assignments[0].exercises
