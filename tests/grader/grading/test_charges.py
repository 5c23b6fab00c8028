"""A case kept as right given the student's helper costs that helper's exercise (grader/grading/charges.py): red team
round 28a's A1, A3 and A5, a helper wrong only on the calls its users make, beside a cheap slip its own checks see."""
from grader.grading.charges import charged_to_helpers
from grader.results import AssignmentResult, CheckOutcome, ExerciseResult


def _kept(name, helper, **given):
    return CheckOutcome(name, 1.0, "passed", f"right, given your {helper}, which this uses; but your {helper} is wrong",
                        forgiven_by=helper, **given)


def _graded(helper_checks, user_checks, misconceptions=()):
    helper = ExerciseResult("helper", 10.0, helper_checks)
    if misconceptions:
        helper.checks[-1].misconceptions = tuple(misconceptions)
    user = ExerciseResult("user", 20.0, user_checks)
    charged_to_helpers([AssignmentResult("01", "one", [helper, user])])
    return helper, user


def test_a_helper_scores_at_most_its_points_less_the_cases_kept_given_it():
    """A helper that lost one check of ten for a slip, whose user kept four cases of eight (10 of its 20 points)
    given it: the mistake those cases show costs the helper at least what they kept; the user keeps them."""
    own = [CheckOutcome(f"h{i}", 1.0, "passed") for i in range(9)] + [CheckOutcome("slip", 1.0, "failed")]
    kept = [_kept(f"u{i}", "helper") for i in range(4)] + [CheckOutcome(f"o{i}", 1.0, "passed") for i in range(4)]
    helper, user = _graded(own, kept)
    assert user.score == 20.0
    assert helper.score == 0.0 and helper.charges == [("user", 4, 10.0)]
    assert "kept right given your helper: user's 4 case(s) (10.00 point(s))" in helper.feedback
    assert helper.to_json()["charged"] == [{"through": "user", "cases": 4, "points": 10.0}]
    # one case of eight: 2.5 points, more than the slip's 1 already taken: the helper scores 7.5
    helper, _ = _graded(own, [_kept("u", "helper")] + [CheckOutcome(f"o{i}", 1.0, "passed") for i in range(7)])
    assert helper.score == 7.5 and helper.charges == [("user", 1, 2.5)]


def test_what_the_helpers_own_checks_already_took_is_not_taken_twice():
    """A helper that lost more on its own checks than its users' kept cases weigh keeps its own score, and says
    nothing of them (session 21's corpus: a merge_heads that raises on every call its users make); one wrong on
    every check of its own has nothing left to take: its users keep every case."""
    lost = [CheckOutcome(f"h{i}", 1.0, "failed") for i in range(6)] + [CheckOutcome(f"p{i}", 1.0, "passed")
                                                                    for i in range(4)]
    helper, user = _graded(lost, [_kept("u", "helper")] + [CheckOutcome(f"o{i}", 1.0, "passed") for i in range(7)])
    assert helper.score == 4.0 and not helper.charges and "kept right given" not in helper.feedback
    assert user.score == 20.0
    wrong = [CheckOutcome(f"h{i}", 1.0, "failed") for i in range(10)]
    helper, user = _graded(wrong, [_kept(f"u{i}", "helper") for i in range(8)])
    assert helper.score == 0.0 and user.score == 20.0


def test_a_mistake_its_own_exercise_charged_by_the_very_call_moves_nothing_but_a_name_does_not_excuse():
    """The very call (plain arguments its own checks graded and found wrong): known charged there. The mistake by
    the id its own exercise names is not: a name says what the mistake is, not how often its checks met it (red
    team round 29a: a softmax over the wrong dim only on square inputs, named on one cheap check of its own)."""
    own = [CheckOutcome(f"h{i}", 1.0, "passed") for i in range(9)] + [
        CheckOutcome("slip", 1.0, "failed", wrong_calls=("helper(5)",))]
    helper, user = _graded(own, [_kept(f"u{i}", "helper", forgiven_call="helper(5)") for i in range(8)])
    assert helper.score == 9.0 and user.score == 20.0
    helper, user = _graded(own, [_kept(f"u{i}", "helper", forgiven_call="helper(6)") for i in range(8)])
    assert helper.score == 0.0 and user.score == 20.0  # another call: not known charged
    helper, _ = _graded(own, [_kept(f"u{i}", "helper", forgiven_for="missing-scale") for i in range(8)],
                        misconceptions=("missing-scale",))
    assert helper.score == 0.0 and helper.misconceptions == ["missing-scale"]
