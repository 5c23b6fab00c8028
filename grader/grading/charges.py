"""The contract's "that mistake is then charged in the helper's exercise", for every case kept as right given a
helper of the student's own (red team round 28a, session 21).

A case of an exercise is kept "right, given your <helper>" where the run with a right helper in place of the
student's, or the suite's own blame, shows that the exercise is right but for what the helper gave it
(grader.grading.diagnose, grader.grading.chains). That shows the helper wrong on the call the exercise made; it
does not show that the helper's own exercise charged that mistake. charged_once and charged_across keep such a case
only where the helper lost points; but a helper wrong on every call its users make and right on its own checks but
for one cheap slip lost those points for the slip, and its users' cases cost nothing at all (round 28a's A1, A3,
A5: 98.89 where the same mistake made openly in the user scores 94.45).

So the case's points move, not vanish: the helper's exercise scores at most its points less the points of the
cases kept given it (each its share of its own exercise's points), unless the helper's own exercise graded that very call,
where its arguments are plain (``forgiven_call``, which its own checks graded and found wrong). Not where its own
exercise names the mistake the case shows (``forgiven_for``): a name says what the mistake is, not how often its
checks met it (red team round 29a: a softmax over the wrong dim only on square inputs, named on its one cheap
non-contiguous check, 98.96 against a helper form of 88.54). What
the helper's own checks took already is not taken again: the mistake costs the larger of the two, once, in the
helper, and all of its points at most. So a helper wrong on every case of its own has nothing more to give and its
users keep every case, as before; a helper wrong only on calls its checks never make pays for them where the
mistake is (A1: 94.44 against the plain form's 94.45); and where its users' cases weigh more than its own
points, the file scores what the same code with that helper wrong everywhere scores (A3: 90).

Why not the sum of the two: a helper whose one mistake shows both in its own checks and in its users' cases (a
merge_heads that raises on every tensor that is not contiguous) would pay for it twice, and nothing in an unnamed
wrong value tells one mistake from two. What the rule costs honest files (session 21's corpus, 933 entries, seed
1): 80 wrong files lose 0.2 to 8.6 points (median 2.7), each a helper whose mistake weighs more in its users'
cases than in its own checks (a split_heads without the transpose: 4.55 of 10 before, 0 now, its users' cases all
kept); no correct file changes.
"""
from __future__ import annotations

from grader.results import GRADER_ERROR


def wrong_calls(exercises) -> dict[str, set[str]]:
    """Each exercise's calls of plain arguments that its own checks graded and found wrong (``wrong_calls``)."""
    return {e.name: {call for c in e.checks if c.status != "passed" for call in c.wrong_calls} for e in exercises}


def charged_to_helpers(assignments: list) -> list:
    """Adds to each helper exercise the charges of the cases kept right given it (``ExerciseResult.charges``),
    after charged_once and charged_across have settled which cases stay kept: ``assignments`` (AssignmentResult),
    graded together, returned."""
    exercises = {e.name: e for a in assignments for e in a.exercises}
    wrong = wrong_calls(exercises.values())
    owed: dict[str, dict[str, list]] = {}  # helper -> user -> [cases, points]
    for user in exercises.values():
        total = sum(c.weight for c in user.checks if c.status != GRADER_ERROR)
        for check in user.checks:
            helper = exercises.get(check.forgiven_by)
            if check.status != "passed" or helper is None or helper is user or not total:
                continue
            if check.forgiven_call and check.forgiven_call in wrong[helper.name]:
                continue  # the very call, graded by its own exercise and found wrong
            entry = owed.setdefault(helper.name, {}).setdefault(user.name, [0, 0.0])
            entry[0] += 1
            entry[1] += user.max_score * check.weight * (1.0 - check.kept) / total  # (a right forward's share stays)
    for name, users in owed.items():
        helper = exercises[name]
        charges = [(user, cases, round(points, 4)) for user, (cases, points) in users.items()]
        if helper.max_score - sum(points for _, _, points in charges) < helper.own_score:
            helper.charges = charges  # (only where it costs: what its own checks lost may be more already)
    return assignments
