"""Rules read on every call: a rule broken on any call costs what the checks that read it weigh (red team
rounds 20c and 23 of issue 44).

Some rules of the contract are read from how the code runs, by the worker's tracer: 05's block rule (no
operation reduces over more than ``block_size`` entries), its score matrix (never built whole). Checks that
read them (``Grade.reads_rule``) earn their weight where the rule holds on their calls; checks that compare
answers read the same rules on their own calls (``Grade.keeps_rules``: every function's call is measured).
A function can tell the two apart by their inputs (the gradient checks' inputs require grad; the rule checks'
shapes are named in the feedback) and break a rule only where it is not read, with code whose answer is
right where its rule-abiding code's is not (whole rows, whose gradient on a far-below block is not NaN).

So, once an exercise's checks have all run, a rule broken on any right comparing call fails every check that
reads that rule, saying on which call: the rule costs what its checks weigh, once, as it costs code that breaks
it everywhere, and a right answer keeps its points. Code that breaks the rule only where it is not read scores
what that code scores with no tell; failing a cheap rule check on purpose frees nothing (red team round 23's
forfeit: a rule was "kept" only where every check reading it passed, and one failed check let every comparing
call break it). A rule broken on a call kept as right given a helper of the student's, or broken by the
student's helpers alone (what ran inside them on those very calls, counted by the frames on the stack as each
operator ran, accounts for it and the caller called them no more often: lesson.vectorised_on's ``helpers``), is
those helpers' to charge where their own exercise loses that rule (a helper's mistake costs once, in the helper);
where they keep it, or where the caller's own operations break it too, it is the exercise's own (red team
rounds 24 to 24d: a softmax looping, or wrong on purpose, only on the score matrices it recognises; a caller
looping behind a tell while its helper looped everywhere, which a rule check forgiven through that helper
exempted on every call; a helper padded on the grader's own calls of it to grow as the caller's loop did).

A rule read on a comparing call by a call of the grader's own (05's and 06's functions, 01's and 04's: the same
call of its own values on more tokens, lesson.vectorised_on) cannot be read where that call's answer is wrong.
There the rule is not verified, and unverified it fails the checks that read it, as broken: a measured property
earns only with a right answer, on the comparing calls as in the rule's own checks. Red team round 23b: a loop
padded under the bound on short calls told apart by their values, the rule-abiding code, wrong there, run on the
reading call; round 24: an excuse where the exercise's other failures cost as much as the rule let an unrelated
slip free it.
"""
from __future__ import annotations

import dataclasses

from grader.results import GRADER_ERROR

KEPT = ("passed", GRADER_ERROR)  # statuses that cost the student nothing (a grader's error: not graded)


def kept_where_read(exercises: list) -> list:
    """``exercises`` (grader.results.ExerciseResult, one assignment's) with each passed check that reads a rule
    broken (or unverified) on a right comparing call of the same exercise turned to failed, saying how."""
    losing = {exercise.name: _rules_lost(exercise) for exercise in exercises}
    for exercise in exercises:
        broken: dict[str, str] = {}
        given: dict[str, tuple[str, str]] = {}  # rule -> (helper, why): unverified by a helper alone
        for check in exercise.checks:
            if check.status != "passed":
                continue
            # a call kept as right given a helper broke a rule by that helper only where the helper loses it (red
            # team round 24b: a softmax wrong on purpose on the score matrices of the calls that looped)
            exempt = losing.get(check.forgiven_by, set()) if check.forgiven_by else set()
            for rule, how, *by in check.rules_broken:
                # broken by the student's helpers alone (lesson.vectorised_on's ``helpers``): theirs, where they
                # lose the rule in their own exercise (red team round 24c: a caller looping behind a tell while its
                # helper looped everywhere was exempt on every call, the helper's rule check forgiving it)
                theirs = bool(by and by[0]) and all(rule in losing.get(helper, ()) for helper in by[0])
                if rule not in exempt and not theirs:
                    broken.setdefault(rule, f"{how}. That call's answer came from code that breaks the rule "
                                            "this check reads, so the check earns nothing, as where the rule is "
                                            "broken on its own calls" + _inside(exercise.name, by))
            for rule, why, *by in check.rules_unverified:
                if rule in exempt:
                    continue
                if by and by[0]:  # wrong there by the student's helper alone, the rule kept with a right one
                    given.setdefault(rule, (by[0][0], why))
                    continue
                broken.setdefault(rule, f"{why}. This check reads that rule on every call, so it earns "
                                        "nothing until the longer call is right too")
        if not broken and not given:
            continue
        for index, check in enumerate(exercise.checks):
            if check.status != "passed":
                continue
            message = next((broken[rule] for rule in check.rules_read if rule in broken), None)
            if message is not None:
                exercise.checks[index] = dataclasses.replace(
                    check, status="failed", message=message, unexplained=message, verified=False,
                    forgiven_by="", forgiven_call="", forgiven_raise=False, kept=0.0)
                continue
            helper, why = next((given[rule] for rule in check.rules_read if rule in given), ("", ""))
            if helper and not check.forgiven_by:
                exercise.checks[index] = _read_given(check, helper, why)
    return exercises


def _read_given(check, helper: str, why: str):
    """``check``, which reads a rule that a call of its exercise kept only with a right ``helper`` in place of the
    student's (its reading call was wrong by that helper alone: lesson.vectorised_on), kept as right given that
    helper: grader.grading.grader.charged_once fails it where the helper loses nothing, and grader.grading.charges
    moves its points to the helper (the mistake costs once, in the helper, as the student's side charges it)."""
    return dataclasses.replace(
        check, forgiven_by=helper, forgiven_call="", forgiven_raise=False, forgiven_for="", forgiven_also=(),
        forgiven_either=(), message=f"right, given your {helper}, which this uses; but your {helper} is wrong ({why}, "
                                    f"and right with a right {helper} in its place): fix the {helper} exercise")


def _inside(name: str, by) -> str:
    """Where the operations that break the rule ran, when the student's own helpers alone account for them (the
    caller's own code keeps it): said, so that the student looks where the loop is (a softmax that loops over
    the entries of its dim makes simple_self_attention loop, whose own code has no loop)."""
    helpers = by[0] if by and by[0] else ()
    if not helpers:
        return ""
    named = " and ".join(helpers)
    return (f". The operations that grow with the tokens run inside your {named}, which {name} calls: "
            f"{name}'s own code keeps the rule, so make {named} work without a Python loop over them, or compute "
            "that step here")


def _rules_lost(exercise) -> set[str]:
    """The rules ``exercise`` loses on its own: read by a check of its own that failed, or broken (or unverified)
    on a right comparing call of its own."""
    lost = set()
    for check in exercise.checks:
        if check.status not in KEPT and not check.forgiven_by:
            lost.update(check.rules_read)
        elif check.status == "passed" and not check.forgiven_by:
            lost.update(entry[0] for entry in check.rules_broken)
            lost.update(rule for rule, _, *by in check.rules_unverified if not (by and by[0]))  # (by a helper: its)
    return lost
