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
    assert computations(LESSON) == [(17, "@")]  # leaky's product; attend's body is a model's
    assert computations("import torch\nf = torch.softmax\n") == [(2, "softmax")]  # passed along uncalled
    assert computations("def g(x):\n    return x.masked_fill(x > 0, 0).exp()\n") == [(2, "exp"), (2, "masked_fill")]


def test_the_course_suites_compute_no_answer_outside_a_model():
    """The lesson and the public suites, as a release ships them: nothing computes an answer (red team round 30c's
    L2: checks_05's tiled_without_rescaling, pasted as it shipped, scored flash_attention 60/60)."""
    found = shipped_computations([ROOT / "suites" / "lesson", ROOT / "suites" / "public"])
    assert found == [], [f"{p.relative_to(ROOT)}:{line} {op}" for p, line, op in found[:10]]
