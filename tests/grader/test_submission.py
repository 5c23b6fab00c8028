import shutil
from pathlib import Path

import pytest

from grader.errors import SubmissionError
from grader.submission import WorkingCopy, resolve_submission

ROOT = Path(__file__).resolve().parents[2]


def test_a_folder_like_assignments_holds_every_assignment(course):
    found = resolve_submission(ROOT / "assignments", course)
    assert [a for a, _ in found.sources] == [a.id for a in course.assignments]
    assert all(path.suffix == ".py" for _, path in found.sources)  # the module wins over the notebook


def test_one_assignment_folder(course):
    found = resolve_submission(ROOT / "solutions" / "02_self_attention", course)
    assert [a for a, _ in found.sources] == ["02_self_attention"]


def test_one_module_and_one_notebook(course, tmp_path):
    module = ROOT / "solutions" / "03_causal_attention" / "causal_attention.py"
    assert resolve_submission(module, course).sources == (("03_causal_attention", module),)
    notebook = tmp_path / "attention_basics.ipynb"
    notebook.write_text('{"cells": []}')
    assert resolve_submission(notebook, course).source("01_attention_basics") == notebook


def test_a_notebook_is_graded_when_the_folder_has_no_module(course, tmp_path):
    (tmp_path / "01_attention_basics").mkdir()
    (tmp_path / "01_attention_basics" / "attention_basics.ipynb").write_text('{"cells": []}')
    assert resolve_submission(tmp_path, course).source("01_attention_basics").suffix == ".ipynb"


@pytest.mark.parametrize("name,message", [
    ("missing", "no such file or folder"),
    ("notes.txt", "neither a Python module"),
    ("helpers.py", "is not a module of this course"),
    ("empty_folder", "holds no assignment of this course"),
])
def test_what_cannot_be_graded_is_one_clear_error(course, tmp_path, name, message):
    path = tmp_path / name
    if name == "empty_folder":
        path.mkdir()
    elif name != "missing":
        path.write_text("x = 1\n")
    with pytest.raises(SubmissionError, match=message):
        resolve_submission(path, course)


def test_the_working_copy_is_private_and_removed(course):
    found = resolve_submission(ROOT / "solutions", course)
    copy = WorkingCopy(found)
    copied = copy.sources["01_attention_basics"]
    assert copied.read_text() == (ROOT / "solutions/01_attention_basics/attention_basics.py").read_text()
    assert not str(copied).startswith(str(ROOT))
    assert copy.display[str(copied.parent)] == str(ROOT / "solutions" / "01_attention_basics")
    copy.close()
    assert not copy.root.exists()


def test_a_folder_of_loose_modules_holds_each_of_them(course, tmp_path):
    for assignment_id, module in (("03_causal_attention", "causal_attention.py"),
                                  ("04_multi_head_attention", "multi_head_attention.py")):
        shutil.copy(ROOT / "solutions" / assignment_id / module, tmp_path)
    found = resolve_submission(tmp_path, course)
    assert [a for a, _ in found.sources] == ["03_causal_attention", "04_multi_head_attention"]
