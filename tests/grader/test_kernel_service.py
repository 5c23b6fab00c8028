"""nbgrader's grading service (grader/kernel_service.py): one class, one seed, whatever the notebook asks."""
import types

from grader import kernel_service


def test_a_notebooks_own_seed_is_ignored_and_every_student_gets_the_class_seed(course, tmp_path, monkeypatch):
    seen = []

    def grade_cells(course, assignment, exercise, cells, *, cwd, seed, grader):
        seen.append(seed)
        graded = types.SimpleNamespace(score=1.0)
        return types.SimpleNamespace(assignments=[types.SimpleNamespace(exercises=[graded])])

    monkeypatch.setattr("grader.kernel_grading.grade_cells", grade_cells)
    monkeypatch.setattr("grader.kernel_grading.describe", lambda graded, result: "")
    monkeypatch.delenv("GRADE_SEED", raising=False)
    for seed in (7, 123456, None):  # check("softmax", seed=7) in a handed-in notebook: a seed that suits it
        request = {"exercise": "softmax", "cells": ["x = 1"], **({"seed": seed} if seed is not None else {})}
        assert kernel_service.answer(request, course=course, cwd=tmp_path, grader=None)["ok"]
    fixed = kernel_service.class_seed(course, course.assignment("01_attention_basics"))
    assert seen == [fixed] * 3
    assert fixed != kernel_service.class_seed(course, course.assignment("02_self_attention"))  # per assignment
    monkeypatch.setenv("GRADE_SEED", "8121")  # the instructor's, where given
    kernel_service.answer({"exercise": "softmax", "cells": [], "seed": 7}, course=course, cwd=tmp_path, grader=None)
    assert seen[-1] == 8121
