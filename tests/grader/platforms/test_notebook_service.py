"""nbgrader's grading service (grader/platforms/notebook_service.py): one class, one seed, whatever the notebook asks."""
import types

from grader.platforms import notebook_service as kernel_service


def test_a_notebooks_own_seed_is_ignored_and_every_student_gets_the_class_seed(course, tmp_path, monkeypatch):
    seen = []

    def grade_cells(course, assignment, exercise, cells, *, cwd, seed, grader):
        seen.append(seed)
        graded = types.SimpleNamespace(score=1.0, status="passed", figure=None)
        return types.SimpleNamespace(assignments=[types.SimpleNamespace(exercises=[graded])])

    monkeypatch.setattr("grader.platforms.notebook_grading.grade_cells", grade_cells)
    monkeypatch.setattr("grader.platforms.notebook_grading.describe", lambda graded, result: "")
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


def test_a_wrong_pictured_exercise_sends_its_figure_to_the_notebook_and_a_right_one_none(course, tmp_path,
                                                                                         monkeypatch):
    """Issue 36: nbgrader's grading service drew nothing in check(): it sent the text and points only."""
    figure = {"title": "attention_weights", "theirs": [[1.0]], "right": [[0.5]]}
    status = ["failed"]

    def grade_cells(course, assignment, exercise, cells, *, cwd, seed, grader):
        graded = types.SimpleNamespace(score=0.0, status=status[0], figure=figure)
        return types.SimpleNamespace(assignments=[types.SimpleNamespace(exercises=[graded])])

    monkeypatch.setattr("grader.platforms.notebook_grading.grade_cells", grade_cells)
    monkeypatch.setattr("grader.platforms.notebook_grading.describe", lambda graded, result: "")
    request = {"exercise": "attention_weights", "cells": ["x = 1"]}
    assert kernel_service.answer(request, course=course, cwd=tmp_path, grader=None)["figure"] == figure
    status[0] = "passed"
    assert kernel_service.answer(request, course=course, cwd=tmp_path, grader=None)["figure"] is None


def test_the_sandboxed_kernels_environment_keeps_its_banner_and_fontconfig_quiet(tmp_path):
    """Issue 35: in the sandbox's clean environment ipykernel knew no parent (its "Ctrl-C will not work"
    banner) and fontconfig no config ("Fontconfig error" as matplotlib built its font cache)."""
    import os
    import shutil
    import subprocess

    import pytest

    from grader.sandbox.kernel_boundary import quiet_env

    env = quiet_env()
    assert env["JPY_PARENT_PID"] == "1" and env["XDG_CACHE_HOME"].startswith("/tmp/")
    if shutil.which("fc-list") is None or "FONTCONFIG_FILE" not in env:
        pytest.skip("no fontconfig, or none of its templates, on this machine")
    done = subprocess.run(["fc-list", "--format=%{file}\\n"], env={"PATH": os.environ["PATH"], "HOME": str(tmp_path),
                          **env, "XDG_CACHE_HOME": str(tmp_path / "cache")}, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == ""
