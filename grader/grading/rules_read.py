"""Rules read on every call: an answer given by code that breaks a rule earns nothing where the student's
code keeps that rule on the calls that read it (red team round 20c of issue 44).

Some rules of the contract are read from how the code runs, by the worker's tracer: 05's block rule (no
operation reduces over more than ``block_size`` entries), its score matrix (never built whole). Checks that
read them (``Grade.reads_rule``) earn their weight where the rule holds on their calls; checks that compare
answers read the same rules on their own calls (``Grade.keeps_rules``: every function's call is measured).
A function can tell the two apart by their inputs (the gradient checks' inputs require grad; the rule checks'
shapes are named in the feedback) and break a rule only where it is not read, with code whose answer is
right where its rule-abiding code's is not (whole rows, whose gradient on a far-below block is not NaN).

So, once an exercise's checks have all run:
- where every check reading a rule passed (the code keeps the rule where it is read), a comparing check
  whose call broke it earns nothing, saying how: its answer came from code the rule forbids;
- where a check reading the rule failed, that failure is the mistake's one cost, and a comparing check's
  right answer keeps its points (whole-row code everywhere scores as it always has: each mistake costs once).
"""
from __future__ import annotations

import dataclasses


def kept_where_read(exercises: list) -> list:
    """``exercises`` (grader.results.ExerciseResult) with each passed check whose calls broke a rule that the
    exercise's own rule checks found kept turned to failed, saying how the rule was broken."""
    for exercise in exercises:
        kept: dict[str, bool] = {}
        for check in exercise.checks:
            for rule in check.rules_read:
                # (a check kept only as right given a helper of the student's found the rule broken by that helper)
                kept[rule] = kept.get(rule, True) and check.status == "passed" and not check.forgiven_by
        if not any(kept.values()):
            continue
        for index, check in enumerate(exercise.checks):
            broken = [how for rule, how in check.rules_broken if kept.get(rule)]
            if check.status != "passed" or not broken:
                continue
            message = (f"{broken[0]}. This case's answer came from code that breaks that rule, so it earns "
                       "nothing (where the rule is checked on its own, your code keeps it)")
            exercise.checks[index] = dataclasses.replace(
                check, status="failed", message=message, unexplained=message, verified=False,
                forgiven_by="", forgiven_call="", forgiven_raise=False)
    return exercises
