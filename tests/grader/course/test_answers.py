"""What of the lesson ships (grader/course/answers.py): @model bodies cut out, nothing else computing an answer."""
import ast
from pathlib import Path

from grader.course.answers import computations, shipped_computations, stripped

ROOT = Path(__file__).resolve().parents[3]

LESSON = '''
from grader.authoring import model
import torch


@model
def attend(q, k, v):
    """Attention, plainly."""
    return torch.softmax(q @ k.mT, -1) @ v


def flow(grade, q, k, v):
    return lambda: attend(q, k, v)


def leaky(q, k):
    return q @ k.mT
'''


def test_a_model_body_is_cut_and_its_docstring_kept():
    text = stripped(LESSON)
    ast.parse(text)
    assert "softmax" not in text and '"""Attention, plainly."""' in text and "NotImplementedError" in text
    assert "def flow(grade, q, k, v):" in text and "lambda: attend(q, k, v)" in text


def test_what_computes_outside_a_model_is_found():
    assert computations(LESSON) == [(17, "@"), (17, "mT")]  # leaky's product; attend's body is a model's
    assert computations("import torch\nf = torch.softmax\n") == [(2, "softmax")]  # passed along uncalled
    assert computations("def g(x):\n    return x.masked_fill(x > 0, 0).exp()\n") == [(2, "exp"), (2, "masked_fill")]


def test_the_course_suites_compute_no_answer_outside_a_model():
    """The lesson and the public suites, as a release ships them: nothing computes an answer (red team round 30c's
    L2: checks_05's tiled_without_rescaling, pasted as it shipped, scored flash_attention 60/60)."""
    found = shipped_computations([ROOT / "suites" / "lesson", ROOT / "suites" / "public"])
    assert found == [], [f"{p.relative_to(ROOT)}:{line} {op}" for p, line, op in found[:10]]


def test_a_helper_the_stubs_or_notebooks_give_is_found(tmp_path):
    """Red team round l3 (session 23): 06's stub gave `_attend` and `_heads` (attention with a mask and dropout,
    and split_heads) outside any solution block; pasted with class boilerplate they scored 03 and 04 200/200."""
    import json

    from grader.course.answers import given_answers

    (tmp_path / "06").mkdir()
    (tmp_path / "06" / "m.py").write_text("def _heads(x, h):\n    b, t, d = x.shape\n"
                                          "    return x.view(b, t, h, d // h).transpose(1, 2)\n")
    cells = [{"cell_type": "code", "source": ["import torch\n", "demo = torch.softmax(torch.randn(3), 0)\n"]},
             {"cell_type": "code", "source": ["def naive(q, k, v):\n", "    return (q @ k.mT).softmax(-1) @ v\n"]},
             {"cell_type": "code", "source": ["def fused(q):\n",
                                              "    return torch.nn.functional.scaled_dot_product_attention(q, q, q)\n"]}]
    (tmp_path / "06" / "n.ipynb").write_text(json.dumps({"cells": cells}))
    found = {(path.name, line, op) for path, line, op in given_answers(tmp_path)}
    assert found == {("m.py", 3, "view"), ("m.py", 3, "transpose"), ("n.ipynb", 2, "@"), ("n.ipynb", 2, "mT"),
                     ("n.ipynb", 2, "softmax")}  # the demo is the lesson's; the library's attention is forbidden


def test_the_released_stubs_and_notebooks_give_no_answer(released):
    from grader.course.answers import given_answers

    assert given_answers(released) == []
