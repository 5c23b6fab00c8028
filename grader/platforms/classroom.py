"""GitHub Classroom: the notices its autograding reads the points from, from a JSON result.

The Classroom workflow template runs ``grade check --format json --output grade.json`` and then
``grade classroom grade.json``, which prints these notices on stdout.

A repository whose submission cannot be read gets no points notice, never a 0: ``grade check`` says
why in one line and exits 2 without writing a result, so the workflow's step fails and Classroom records
no points; a result that says so anyway (status ``error`` from a submission that could not be read,
grader/reporting/result_folder.py's not_graded) is refused the same way.
"""
from __future__ import annotations

import json

from grader.errors import SubmissionError


def classroom_notices(result: dict) -> list[str]:
    """The two notices GitHub Classroom reads the points from, as its autograding reporter writes
    them (``core.notice``: "Autograding complete" with ``Points X/Y`` and "Autograding report" with
    the totals), with our own points: written directly, nothing recounts them (the reporter's table
    would show passed exercises over all exercises beside them, another number)."""
    from grader.reporting.result_folder import not_graded

    if why := not_graded(result):
        raise SubmissionError(f"the submission could not be read, so there are no points to report ({why})")

    def number(value):  # as JavaScript prints it: 500, not 500.0
        value = round(float(value), 2)
        return int(value) if value.is_integer() else value

    score, top = number(result["score"]), number(result["max_score"])
    return [f"::notice title=Autograding complete::Points {score}/{top}",
            "::notice title=Autograding report::" + json.dumps({"totalPoints": score, "maxPoints": top})]
