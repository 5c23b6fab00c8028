import os
import shutil
from pathlib import Path

import pytest

from grader.errors import SubmissionError
from grader.submission import WorkingCopy, resolve_submission

ROOT = Path(__file__).resolve().parents[2]


def test_a_folder_like_assignments_holds_every_assignment(course, released):
    found = resolve_submission(released, course)
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
    ("helpers.py", "is not a module of this course .* or a file that defines the exercises"),
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


LINK_TARGETS = {  # what a hostile submission links its module to (issue 10, item 1)
    "the reference through /proc": "/proc/self/cwd/solutions/01_attention_basics/attention_basics.py",
    "the reference": str(ROOT / "solutions" / "01_attention_basics" / "attention_basics.py"),
    "the hidden suite": str(ROOT / "suites" / "hidden" / "test_01_attention_basics.py"),
    "the grader's environment": "/proc/self/environ",
}


@pytest.mark.parametrize("target", LINK_TARGETS.values(), ids=list(LINK_TARGETS))
def test_a_module_that_is_a_link_is_refused_never_followed(course, tmp_path, target):
    folder = tmp_path / "mallory" / "01_attention_basics"
    folder.mkdir(parents=True)
    (folder / "attention_basics.py").symlink_to(target)
    with pytest.raises(SubmissionError, match="symbolic link"):
        resolve_submission(tmp_path / "mallory", course)


def test_an_assignment_folder_that_is_a_link_is_refused(course, tmp_path):
    (tmp_path / "mallory").mkdir()
    (tmp_path / "mallory" / "01_attention_basics").symlink_to(ROOT / "solutions" / "01_attention_basics")
    with pytest.raises(SubmissionError, match="symbolic link"):
        resolve_submission(tmp_path / "mallory", course)


def test_the_path_named_on_the_command_line_may_itself_be_a_link(course, tmp_path):
    (tmp_path / "mine").symlink_to(ROOT / "solutions")
    found = resolve_submission(tmp_path / "mine", course)
    assert [a for a, _ in found.sources] == [a.id for a in course.assignments]


def test_the_working_copy_copies_bytes_and_refuses_what_turned_into_a_link(course, tmp_path):
    folder = tmp_path / "s" / "01_attention_basics"
    folder.mkdir(parents=True)
    (folder / "attention_basics.py").write_text("x = 1\n")
    submission = resolve_submission(tmp_path / "s", course)
    copy = WorkingCopy(submission)
    assert copy.sources["01_attention_basics"].read_text() == "x = 1\n"
    assert not copy.sources["01_attention_basics"].is_symlink()
    copy.close()
    (folder / "attention_basics.py").unlink()  # swapped for a link after it was found
    (folder / "attention_basics.py").symlink_to("/proc/self/environ")
    with pytest.raises(SubmissionError, match="links are not followed"):
        WorkingCopy(submission)


def test_a_file_of_another_name_is_graded_for_the_assignment_it_writes(course, tmp_path):
    """`grade check --submission my_work.ipynb`, `attention_basics (1).py`: by a forgiving name, else
    by the exercises the file defines (most of one assignment's; a tie is no answer)."""
    import json

    (tmp_path / "attention_basics (1).py").write_text("x = 1\n")
    assert resolve_submission(tmp_path / "attention_basics (1).py", course).sources[0][0] == "01_attention_basics"
    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
              "source": "def softmax(x, dim=-1):\n    pass\n\ndef attention_scores(x):\n    pass\n"}]
    (tmp_path / "my_work.ipynb").write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4,
                                                        "nbformat_minor": 5}))
    found = resolve_submission(tmp_path / "my_work.ipynb", course)
    assert found.sources == (("01_attention_basics", tmp_path / "my_work.ipynb"),)
    (tmp_path / "mine.py").write_text("class CausalAttention:\n    pass\n\ndef causal_mask(n):\n    pass\n")
    assert resolve_submission(tmp_path / "mine.py", course).sources[0][0] == "03_causal_attention"
    (tmp_path / "both.py").write_text("def softmax(x):\n    pass\n\ndef causal_mask(n):\n    pass\n")
    with pytest.raises(SubmissionError, match="not a module of this course"):
        resolve_submission(tmp_path / "both.py", course)


@pytest.mark.parametrize("kind", ["a link outside", "a link to /dev/zero", "a folder"])
def test_a_notebook_beside_the_module_that_is_no_regular_file_is_left_out_of_the_copy_not_followed(
        course, tmp_path, kind):
    """Issue 33: the module is copied and graded; the notebook is not copied (nor read through the
    link), and grader.grading.graded_source.choose says it was ignored."""
    folder = tmp_path / "s" / "01_attention_basics"
    folder.mkdir(parents=True)
    (folder / "attention_basics.py").write_text("x = 1\n")
    outside = tmp_path / "outside.ipynb"
    outside.write_text('{"cells": []}')
    notebook = folder / "attention_basics.ipynb"
    if kind == "a folder":
        notebook.mkdir()
    else:
        notebook.symlink_to(outside if kind == "a link outside" else "/dev/zero")
    submission = resolve_submission(tmp_path / "s", course)
    assert submission.overlays == (("01_attention_basics", notebook),)
    copy = WorkingCopy(submission)
    try:
        assert copy.sources["01_attention_basics"].read_text() == "x = 1\n"
        assert not os.path.lexists(copy.overlays["01_attention_basics"])
    finally:
        copy.close()


@pytest.mark.parametrize("content", [b"[]", b'{"cells": [1]}', b"null",
                                     b'{"cells": [{"cell_type": "code", "source": 3}]}'])
def test_a_notebook_of_another_name_that_is_no_notebook_is_no_assignments(course, tmp_path, content):
    """`grade check --submission my_work.ipynb` (or autograde's my_work.ipynb) that is not a notebook:
    one clear error, never the grader's AttributeError."""
    (tmp_path / "my_work.ipynb").write_bytes(content)
    with pytest.raises(SubmissionError, match="is not a notebook of this course"):
        resolve_submission(tmp_path / "my_work.ipynb", course)


def test_a_batch_names_the_students_files_from_their_own_folder_never_the_graders_paths(course, tmp_path):
    """Red team (issue 33): a traceback in autograde's feedback showed the host path of the student's
    file, ``.../class/zoe.smith/01_attention_basics/...``: the instructor's folders, and the name that
    ``grade report --anonymise`` hides."""
    folder = tmp_path / "class" / "zoe.smith" / "01_attention_basics"
    folder.mkdir(parents=True)
    shutil.copy(ROOT / "solutions" / "01_attention_basics" / "attention_basics.py", folder)
    submission = resolve_submission(folder.parent, course)
    batch, alone = WorkingCopy(submission, relative=True), WorkingCopy(submission)
    try:
        assert list(batch.display.values()) == ["01_attention_basics"]
        assert list(alone.display.values()) == [str(folder)]  # grade check: the student's own path
    finally:
        batch.close()
        alone.close()


def test_a_module_beside_a_notebook_graded_alone_goes_beside_it_in_the_working_copy(course, tmp_path):
    """Issue 46: check() hands in the kernel's module with its history (Submission.beside), so that the
    history's ``from attention_basics import softmax`` gets it in the worker; only beside a notebook
    graded alone, and never through a link."""
    import dataclasses

    folder = tmp_path / "kernel" / "01_attention_basics"
    folder.mkdir(parents=True)
    (folder / "attention_basics.ipynb").write_text('{"cells": []}')
    module = tmp_path / "attention_basics.py"
    module.write_text("def softmax(x, dim=-1):\n    return x\n")
    found = dataclasses.replace(resolve_submission(tmp_path / "kernel", course),
                                beside=(("01_attention_basics", module),))
    copy = WorkingCopy(found)
    try:
        notebook = copy.sources["01_attention_basics"]
        assert notebook.suffix == ".ipynb" and notebook.with_name("attention_basics.py").read_text() == \
            module.read_text()
        assert list(copy.sources) == ["01_attention_basics"] and copy.overlays == {}  # still the notebook's
    finally:
        copy.close()
    (tmp_path / "link").mkdir()
    (tmp_path / "link" / "attention_basics.py").symlink_to(module)
    linked = WorkingCopy(dataclasses.replace(found, beside=(("01_attention_basics",
                                                             tmp_path / "link" / "attention_basics.py"),)))
    try:
        assert not linked.sources["01_attention_basics"].with_name("attention_basics.py").exists()
    finally:
        linked.close()
    with_module = resolve_submission(ROOT / "solutions" / "01_attention_basics", course)
    beside_a_module = WorkingCopy(dataclasses.replace(with_module, beside=(("01_attention_basics", module),)))
    try:  # a module graded as itself is never replaced
        assert beside_a_module.sources["01_attention_basics"].read_text() == \
            (ROOT / "solutions" / "01_attention_basics" / "attention_basics.py").read_text()
    finally:
        beside_a_module.close()
