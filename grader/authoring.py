"""What a grading suite is written with: the markers, a known mistake, and the scale search.

A suite module grades one assignment; each check is a pytest test that takes the ``grade`` fixture
(:class:`grader.grading.fixture.Grade`) and compares the student's code with the reference on inputs drawn
from the check's own seed::

    from grader.authoring import Mistake, assignment, exercise
    from lesson import journey                       # the lesson's data (suites/lesson/)
    from lesson.mistaken import softmax_mistakes     # known wrong computations

    pytestmark = assignment("01_attention_basics")

    @exercise("softmax", weight=2)
    def test_softmax_rows(grade):
        x = grade.randn(4, 6)
        grade.same("softmax", x, dim=-1, grad=True, mistakes=softmax_mistakes(x, -1))

When the student's output is wrong, ``grade.same`` compares it with each :class:`Mistake`'s output
and names the one that explains it (and only when no mistake with another id explains it too), from
the output the failed check carries: the student's code is not run again. ``grade.module(...)``
gives a :class:`grader.grading.fixture.ModulePair` whose ``same`` takes the same ``mistakes``. See
docs/authoring.md for adding an exercise, a mistake or an assignment.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import pytest

from grader.grading import diagnose  # the diagnosis toolkit: their, blame, cause, matches, ...
from grader.grading.compare import difference, manual_seed, shape_str
from grader.grading.diagnose import FactorFit, name_mistake, non_finite_unless_named
from grader.grading.fixture import helper_calls_not_growing, low_precision
from grader.grading.models import model  # @model: a computation of the lesson, recorded for students
from grader.grading.operation_count import bound as operations_allowed  # a vectorised call's most operations
from grader.grading.stand_ins import runs, stand_ins, uses
from grader.errors import UsageError
from grader.grading.pictures import Picture
from grader.inside.protocol import HandleRef
from grader.grading.outcomes import CheckFailed, GradientFailure, RaisedFailure, RightGivenHelper, StudentFault
from grader.grading.shape_errors import ShapeMismatch, shape_mismatch

exercise = pytest.mark.exercise  # @exercise(name, weight=1): the exercise a check grades (grader/inside/forbidden.py)
# @apart: a check graded after its assignment's others, on new workers and state of its own, which the second
# grading process of `grade check` may grade beside them (a long check: 06's memory readings)
apart = pytest.mark.apart


def assignment(assignment_id: str):
    """``pytestmark = assignment("01_attention_basics")``: the assignment a suite module grades."""
    return pytest.mark.assignment(assignment_id)


class Mistake(NamedTuple):
    """A known mistake: the misconception ``id`` it shows (one of the course spec's catalogue, or
    None for a mistake worth explaining but not naming), the ``explanation`` the student reads, and
    the ``output`` that mistake gives on the check's inputs: a tensor, or a function of no arguments
    that computes it (called only when the check failed)."""

    id: str | None
    explanation: str
    output: Any


FactorSearch = FactorFit  # a mistake off by some constant factor: the constant is searched for

# all a suite (hidden, public or lesson) imports of the grader: a move inside grader/ changes only this
# module, never a released suite (tests/grader/test_imports.py holds every suite to it)
__all__ = ["CheckFailed", "FactorSearch", "GradientFailure", "HandleRef", "Mistake", "Picture", "RaisedFailure", "RightGivenHelper",
           "ShapeMismatch",
           "StudentFault", "UsageError", "apart", "assignment", "diagnose", "difference", "exercise", "helper_calls_not_growing", "low_precision",
           "manual_seed", "model", "name_mistake", "non_finite_unless_named", "operations_allowed", "shape_mismatch", "shape_str",
           "runs", "stand_ins", "uses"]
