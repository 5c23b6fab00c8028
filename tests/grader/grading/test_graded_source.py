"""Module and notebook in one assignment folder: each exercise graded from where it is written
(grader/grading/graded_source.py), and every report names the file."""
import json
import shutil
from pathlib import Path

import pytest

from grader.grading.graded_source import choose, is_stub
from grader.submission import resolve_submission

ROOT = Path(__file__).resolve().parents[3]
STUB = 'def softmax(x, dim=-1):\n    """The docstring."""\n    raise NotImplementedError("write me")\n'
WRITTEN = "def softmax(x, dim=-1):\n    return x.softmax(dim)\n"


def notebook(path: Path, *sources: str) -> Path:
    path.write_text(json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "outputs": [],
                                           "execution_count": None, "source": s} for s in sources],
                                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return path


def test_a_stub_is_a_docstring_and_raise_not_implemented_and_a_class_of_stub_methods():
    import ast

    assert is_stub(ast.parse(STUB).body[0]) and not is_stub(ast.parse(WRITTEN).body[0])
    cls = "class A:\n    def __init__(self):\n        super().__init__()\n        raise NotImplementedError\n" \
          "    def forward(self, x):\n        raise NotImplementedError()\n"
    assert is_stub(ast.parse(cls).body[0])
    assert not is_stub(ast.parse(cls.replace("raise NotImplementedError()", "return x")).body[0])


def test_each_definition_comes_from_the_file_that_writes_it_and_the_module_wins_a_tie(tmp_path):
    module = tmp_path / "attention_basics.py"
    module.write_text(STUB + "\n" + WRITTEN.replace("softmax", "attention_scores").replace("(x, dim=-1)", "(x)"))
    cells = notebook(tmp_path / "attention_basics.ipynb", "import torch", WRITTEN,
                     "def attention_scores(x):\n    return x @ x.mT\n", "softmax(torch.ones(2))")
    choice = choose(module, cells, ("softmax", "attention_scores", "context_vector_loop"))
    assert choice.from_notebook == ("softmax",) and choice.in_both == ("attention_scores",)
    assert choice.source_of("softmax") == "attention_basics.ipynb"
    assert choice.source_of("attention_scores") == choice.source_of("context_vector_loop") == "attention_basics.py"
    assert "has it as a stub" in choice.notes["softmax"] and "the module wins" in choice.notes["attention_scores"]
    module.write_text(WRITTEN)
    notebook(cells, STUB)
    assert choose(module, cells, ("softmax",)) is None  # the notebook adds nothing: nothing to say
    notebook(cells, WRITTEN)
    assert choose(module, cells, ("softmax",)) is None  # the same code twice: nothing to say either
    notebook(cells, "x = " + "-" * 200_000 + "1")  # made to break a parser: ignored, and said so, not a crash
    ignored = choose(module, cells, ("softmax",))
    assert ignored.from_notebook == () and ignored.source_of("softmax") == "attention_basics.py"
    assert ignored.notes["softmax"].startswith("attention_basics.ipynb [cell 1] has 200,005 characters of code")
    notebook(cells, "x = " + "-" * 20_000 + "1")  # within what is read: the parser's own MemoryError, said so
    assert "[cell 1] has code nested too deeply to parse" in choose(module, cells, ("softmax",)).notes["softmax"]


def test_a_lessons_demo_helpers_alone_take_nothing_from_the_notebook_but_a_missing_exercise_does(tmp_path):
    module = tmp_path / "attention_basics.py"
    module.write_text(WRITTEN)
    cells = notebook(tmp_path / "attention_basics.ipynb", WRITTEN, "def plot_weights(w):\n    return w.sum()\n")
    assert choose(module, cells, ("softmax",)) is None  # the demo is no exercise's: the module as it is
    module.write_text("import torch\n")  # the exercise deleted from the module, written in the notebook
    choice = choose(module, cells, ("softmax",))
    assert choice is not None and choice.source_of("softmax") == "attention_basics.ipynb"


def stub_of(assignment) -> str:
    """The stub module release writes, made from solutions/ (never the live assignments/: issue 45)."""
    from grader.config import load_course
    from grader.course.release import stub_of as released_stub

    return released_stub(load_course(ROOT), assignment)


def release_with(tmp_path, assignment, notebook_cells, module_text=None) -> Path:
    """The released assignment folder (stub module), with a notebook of ``notebook_cells``."""
    folder = tmp_path / "assignments" / assignment.id
    folder.mkdir(parents=True)
    module = folder / assignment.module
    module.write_text(stub_of(assignment))
    if module_text is not None:
        module.write_text(module_text)
    notebook(folder / assignment.notebook, *notebook_cells)
    return folder


def test_notebook_only_work_beside_the_released_stub_module_gets_full_marks(course, grader, tmp_path):
    assignment = course.assignment("01_attention_basics")
    solution = (ROOT / "solutions" / assignment.id / assignment.module).read_text()
    folder = release_with(tmp_path, assignment, ["import torch", solution, "softmax(torch.ones(3))"])
    result = grader.grade(resolve_submission(folder, course), (assignment,), seed=4)
    exercises = result.assignments[0].exercises
    assert result.score == 100, [e.feedback for e in exercises if e.status != "passed"]
    assert {e.source for e in exercises} == {"attention_basics.ipynb"}
    assert all("graded from attention_basics.ipynb (attention_basics.py has it as a stub)" in e.feedback
               for e in exercises)
    from grader.reporting.formats import render

    assert "graded from attention_basics.ipynb" in render(result, "table")
    assert json.loads(render(result, "json"))["assignments"][0]["exercises"][0]["source"] == "attention_basics.ipynb"


def test_half_in_the_module_half_in_the_notebook_each_uses_the_other(course, grader, tmp_path):
    """softmax written in the module, simple_self_attention (which calls softmax) in the notebook
    beside a stub softmax: both are graded as written, and the notebook's function calls the
    module's softmax."""
    assignment = course.assignment("01_attention_basics")
    stub = stub_of(assignment)
    solution = (ROOT / "solutions" / assignment.id / assignment.module).read_text()
    import ast

    def body_of(text, name):
        node = next(n for n in ast.parse(text).body if getattr(n, "name", None) == name)
        return "\n".join(text.splitlines()[node.lineno - 1 - len(node.decorator_list):node.end_lineno])

    module_text = stub.replace(body_of(stub, "softmax"), body_of(solution, "softmax"))
    cells = ["import torch", body_of(stub, "softmax"), body_of(solution, "attention_scores"),
             body_of(solution, "simple_self_attention")]
    folder = release_with(tmp_path, assignment, cells, module_text)
    result = grader.grade(resolve_submission(folder, course), (assignment,), seed=4)
    by_name = {e.name: e for e in result.assignments[0].exercises}
    for name, source in (("softmax", "attention_basics.py"), ("attention_scores", "attention_basics.ipynb"),
                         ("simple_self_attention", "attention_basics.ipynb")):
        assert by_name[name].status == "passed" and by_name[name].source == source, by_name[name].feedback
    assert by_name["context_vector_loop"].status == "not_implemented"  # a stub in both


def test_a_sibling_class_written_in_its_notebook_is_what_the_next_assignment_imports(course, grader, tmp_path):
    """04's wrapper stacks `from causal_attention import CausalAttention`: written in 03's notebook
    beside 03's stub module, that is the class 04 gets."""
    three, four = course.assignment("03_causal_attention"), course.assignment("04_multi_head_attention")
    solution = (ROOT / "solutions" / three.id / three.module).read_text()
    release_with(tmp_path, three, ["import torch", solution])
    folder = tmp_path / "assignments" / four.id
    folder.mkdir()
    shutil.copy(ROOT / "solutions" / four.id / four.module, folder / four.module)
    result = grader.grade(resolve_submission(tmp_path / "assignments", course), (three, four), seed=4)
    assert result.score == 200, [e.feedback for a in result.assignments for e in a.exercises if e.status != "passed"]
    # 04 graded alone (a week's batch): 03's notebook is read because 04's code imports its module, and only then
    alone = grader.grade(resolve_submission(tmp_path / "assignments", course), (four,), seed=4)
    assert alone.score == 100, [e.feedback for a in alone.assignments for e in a.exercises if e.status != "passed"]


def test_an_assignment_graded_alone_reads_no_other_notebook_its_code_does_not_import(course, tmp_path, monkeypatch):
    """Issue 47: a class folder holds the whole course and is graded on one assignment a week; which file each
    exercise of another assignment is graded from (module or notebook) is read only where the graded code
    imports that assignment's module (GradingSession.reached_from)."""
    from grader.grading import pytest_session
    from grader.submission import WorkingCopy

    chosen = []
    monkeypatch.setattr(pytest_session, "choose", lambda module, notebook, exercises: chosen.append(module.parent.name))
    copy = WorkingCopy(resolve_submission(ROOT / "solutions", course), tmp_path)
    session = pytest_session.GradingSession(course, (course.assignment("01_attention_basics"),), copy, zygote=None,
                                            seed=1, device="cpu", references={})
    assert chosen == ["01_attention_basics"] and session.reached_from("01_attention_basics") == ["01_attention_basics"]
    assert session.reached_from("04_multi_head_attention") == ["04_multi_head_attention", "03_causal_attention"]
    assert sorted(chosen) == ["01_attention_basics", "03_causal_attention", "04_multi_head_attention"]


def test_every_released_stub_reads_as_a_stub_and_every_solution_as_written(course):
    import ast

    from grader.grading.graded_source import definitions

    for assignment in course.assignments:
        released = definitions(ast.parse(stub_of(assignment)))
        solved = definitions(ast.parse((ROOT / "solutions" / assignment.id / assignment.module).read_text()))
        for exercise in assignment.exercises:
            assert released[exercise] is None, (assignment.id, exercise)
            assert solved[exercise] is not None, (assignment.id, exercise)


def test_a_definition_nested_past_pythons_recursion_limit_is_compared_not_a_crash(tmp_path):
    """Issue 21: a notebook's softmax with a 1,600-term sum, written differently from the module's. The
    trees are compared without recursion (ast.dump would raise RecursionError); the module wins."""
    deep = "def softmax(x, dim=-1):\n    return x.softmax(dim) + (" + " + ".join(["0 * x"] * 1600) + ")\n"
    module = tmp_path / "attention_basics.py"
    module.write_text(WRITTEN)
    choice = choose(module, notebook(tmp_path / "attention_basics.ipynb", deep), ("softmax",))
    assert choice.in_both == ("softmax",) and choice.source_of("softmax") == "attention_basics.py"
    module.write_text(deep.replace("x.softmax(dim)", "x.softmax( dim )"))  # the same tree, spaced otherwise
    assert choose(module, tmp_path / "attention_basics.ipynb", ("softmax",)) is None


def test_the_tree_text_tells_strings_from_its_own_punctuation():
    import ast

    from grader.grading.graded_source import _dump

    one, other = (ast.parse(f"def f(x):\n    return g({text})\n") for text in ('"])"', '[]'))
    assert _dump(one) != _dump(other)
    assert _dump(ast.parse("def f(x):\n    return 1\n")) == _dump(ast.parse("def f(x):\n\n    return (1)\n"))


def test_files_read_before_are_not_parsed_again_and_a_broken_one_is_read_each_time(tmp_path, monkeypatch):
    """A class hands in the released stubs and lesson notebooks again and again: the same bytes give
    the same choice from what was read the first time; different bytes are read anew; a notebook that
    does not parse is never kept, so it is read (and refused) each time."""
    import grader.grading.graded_source as source_choice

    monkeypatch.setattr(source_choice, "_PARSED", {})
    module = tmp_path / "attention_basics.py"
    module.write_text(STUB)
    cells = notebook(tmp_path / "attention_basics.ipynb", WRITTEN)
    reads = []
    real = source_choice._notebook_definitions
    monkeypatch.setattr(source_choice, "_notebook_definitions",
                        lambda data, name: reads.append(data) or real(data, name))
    first, again = choose(module, cells, ("softmax",)), choose(module, cells, ("softmax",))
    assert first == again and first.from_notebook == ("softmax",) and len(reads) == 1
    notebook(cells, WRITTEN.replace("x.softmax(dim)", "x.exp() / x.exp().sum(dim, keepdim=True)"))
    assert choose(module, cells, ("softmax",)).from_notebook == ("softmax",) and len(reads) == 2
    cells.write_text("{not json")
    for _ in range(2):
        refused = choose(module, cells, ("softmax",))
        assert refused.from_notebook == () and "is not a Jupyter notebook (not JSON" in refused.notes["softmax"]
    assert len(reads) == 4


def test_a_notebook_that_cannot_be_used_is_ignored_and_each_exercise_says_why_in_one_line(tmp_path):
    """Issue 33: a cell that does not parse (the worker could not run the notebook), a module too long
    for the grader to compare, a notebook the working copy refused: the module is graded, and every
    exercise's note names the file and the reason. A byte-order mark is no reason: that notebook is read."""
    module = tmp_path / "attention_basics.py"
    module.write_text(STUB)
    cells = notebook(tmp_path / "attention_basics.ipynb", "import torch", WRITTEN, "def oops(:\n    pass\n")
    choice = choose(module, cells, ("softmax", "attention_scores"))
    assert choice.from_notebook == () and choice.source_of("softmax") == "attention_basics.py"
    assert choice.notes == dict.fromkeys(("softmax", "attention_scores"),
                                         "attention_basics.ipynb [cell 3] has a syntax error (line 1), so the "
                                         "notebook cannot be used: ignored, attention_basics.py graded")
    cells.write_bytes(b"\xef\xbb\xbf" + notebook(cells, "import torch", WRITTEN).read_bytes())
    assert choose(module, cells, ("softmax",)).from_notebook == ("softmax",)
    module.write_text(STUB + "x = 1\n" * 20_000)
    note = choose(module, cells, ("softmax",)).notes["softmax"]
    assert note.startswith("attention_basics.ipynb ignored: attention_basics.py is too large to compare with it ("), \
        note
    assert note.endswith("; attention_basics.py graded"), note
    module.write_text(STUB)
    cells.unlink()  # what grader.submission.WorkingCopy leaves of a link, a folder or a device
    note = choose(module, cells, ("softmax",)).notes["softmax"]
    assert note.startswith("attention_basics.ipynb was not read (not a regular file"), note


def _import_from_the_module(solution: str, *, define_softmax_later: bool) -> list[str]:
    """A lesson notebook's cells that take softmax from the module (``from attention_basics import
    softmax``) and write the other exercises; ``define_softmax_later``: a later cell writes softmax too."""
    import ast

    tree = ast.parse(solution)
    functions = {n.name: ast.get_source_segment(solution, n) for n in tree.body if isinstance(n, ast.FunctionDef)}
    cells = ["import torch\nfrom attention_basics import softmax"]
    cells += [text for name, text in functions.items() if name != "softmax"]
    if define_softmax_later:
        cells.append(functions["softmax"])
    return cells + ["softmax(torch.ones(3))"]


@pytest.mark.slow
def test_a_notebook_that_imports_its_modules_function_grades_as_the_module_does(course, grader, tmp_path):
    """Issue 46: ``from attention_basics import softmax`` in the notebook. Beside the module (softmax
    written there, the rest stubs): softmax is the module's, graded as the module's, by `grade check` on
    the folder and by `grade autograde` alike. A notebook handed in alone is its own module: the import of
    its own name no longer fails its import (0 for every exercise, "importing your module failed" before);
    what it writes is graded, a softmax it writes later too, and a softmax it never writes is missing."""
    from grader.batch.autograde import autograde

    assignment = course.assignment("01_attention_basics")
    solution = (ROOT / "solutions" / assignment.id / assignment.module).read_text()
    stub = stub_of(assignment)
    import ast

    def body_of(text, name):
        node = next(n for n in ast.parse(text).body if getattr(n, "name", None) == name)
        return ast.get_source_segment(text, node)

    module_text = stub.replace(body_of(stub, "softmax"), body_of(solution, "softmax"))
    classroom = tmp_path / "class"
    release_with(classroom / "alice", assignment, _import_from_the_module(solution, define_softmax_later=False),
                 module_text)
    for name, later in (("bob", True), ("carol", False)):  # notebooks alone
        folder = classroom / name / "assignments" / assignment.id
        folder.mkdir(parents=True)
        notebook(folder / assignment.notebook, *_import_from_the_module(solution, define_softmax_later=later))
    checked = {}
    for name in ("alice", "bob", "carol"):
        result = grader.grade(resolve_submission(classroom / name / "assignments", course), (assignment,), seed=4)
        checked[name] = {e.name: (e.score, e.status) for e in result.assignments[0].exercises}
        assert not any("importing your module failed" in e.feedback for e in result.assignments[0].exercises)
    full = {name: (points, "passed") for name, points in assignment.points}
    assert checked["alice"] == full and checked["bob"] == full, checked
    assert checked["carol"]["softmax"][0] == 0 and checked["carol"]["attention_scores"] == full["attention_scores"]
    assert sum(score for score, _ in checked["carol"].values()) >= 100 - 25 - 20, checked["carol"]
    out = tmp_path / "results"
    assert autograde(course=course, paths=[classroom], out=out, workers=1, shard=None, resume=False,
                     device="cpu", seed=4, assignments=(assignment,)) == 0
    for name in ("alice", "bob", "carol"):
        graded = json.loads((out / f"{name}.json").read_text())["assignments"][0]["exercises"]
        assert {e["name"]: (e["score"], e["status"]) for e in graded} == checked[name], name
