import json

from grader.inside.notebook_source import read_cells


def notebook(tmp_path, *cells):
    path = tmp_path / "attention_basics.ipynb"
    path.write_text(json.dumps({"cells": [
        {"cell_type": kind, "source": source, "metadata": meta} for kind, source, meta in cells]}))
    return path


TEST_CELL = {"nbgrader": {"grade": True, "solution": False, "points": 5}}


def test_definitions_and_imports_are_kept_and_demos_dropped(tmp_path):
    path = notebook(tmp_path,
                    ("markdown", "# Lesson", {}),
                    ("code", "import torch\nimport matplotlib.pyplot as plt\n%matplotlib inline", {}),
                    ("code", "from grader.notebook_checks import check\nimport grader", {}),  # a check cell, copied
                    ("code", "def f(x):\n    return x + 1\n\nprint(f(1))\nplt.plot([1])", {}),
                    ("code", "assert f(1) == 3", TEST_CELL),
                    ("code", "%%timeit\nf(1)", {}))
    cells = read_cells(path)
    code = "\n".join(c.code for c in cells)
    assert "import torch" in code and "def f(x)" in code
    assert "grader" not in code  # student code may not import the grader: only Jupyter runs check cells
    assert "matplotlib" not in code and "print(" not in code and "assert" not in code and "timeit" not in code
    namespace = {}
    for cell in cells:
        exec(compile(cell.code, cell.filename, "exec"), namespace)
    assert namespace["f"](1) == 2


def test_line_numbers_and_cell_names_are_kept_for_tracebacks(tmp_path):
    path = notebook(tmp_path, ("code", "x = 1\n\ndef g():\n    raise ValueError('boom')", {}))
    (cell,) = read_cells(path)
    assert cell.filename == "attention_basics.ipynb [cell 1]"
    assert cell.code.splitlines()[2] == "def g():"


def test_a_syntax_error_keeps_the_cell_so_the_student_sees_the_line(tmp_path):
    (cell,) = read_cells(notebook(tmp_path, ("code", "def f(:\n    pass", {})))
    try:
        compile(cell.code, cell.filename, "exec")
    except SyntaxError as error:
        assert error.lineno == 1 and error.filename == cell.filename
    else:
        raise AssertionError("expected a SyntaxError")


def test_top_level_names_a_function_uses_are_kept_but_not_demos_that_run_student_code(tmp_path):
    """A constant defined in a cell (SHIFT = 0.0) is kept, with what it needs; a statement that calls
    the student's own code, or uses a name only a dropped demo defines, is not (it would run
    unfinished code, or fail, at import)."""
    path = notebook(tmp_path,
                    ("code", "import math\nimport torch\nfrom torch import nn", {}),
                    ("code", "SHIFT = 0.0\nEPS: float = 1e-9\nNEG_INF = float('-inf')\nSCALE = 1 / math.sqrt(4)\n"
                             "HELPER = nn.Identity()\nPAIR = (SHIFT, EPS)\nSCALE *= 2", {}),
                    ("code", "def f(x):\n    return (x + SHIFT) * SCALE\n\ndemo = f(torch.ones(2))\n"
                             "half = demo / 2\nrows = [f(t) for t in torch.ones(2, 2)]\nplt_title = str(demo)", {}),
                    ("code", "model.weight = torch.zeros(2)\ntable['x'] = 1\ncount = len(rows)", {}))
    code = "\n".join(c.code for c in read_cells(path))
    for kept in ("SHIFT = 0.0", "EPS: float = 1e-9", "NEG_INF = float('-inf')", "SCALE = 1 / math.sqrt(4)",
                 "HELPER = nn.Identity()", "PAIR = (SHIFT, EPS)", "SCALE *= 2", "def f(x):"):
        assert kept in code, kept
    for dropped in ("demo = f(", "half = demo", "rows = [", "plt_title", "model.weight", "table['x']", "count ="):
        assert dropped not in code, dropped
    namespace = {}
    for cell in read_cells(path):
        exec(compile(cell.code, cell.filename, "exec"), namespace)  # runs as the worker runs it: no NameError
    assert namespace["f"](namespace["torch"].ones(1)).item() == 1.0  # (1 + SHIFT) * SCALE


def test_a_notebook_nested_past_the_parsers_limits_is_read_as_what_it_is(tmp_path):
    """Issue 21: a cell the parser cannot build a tree of (RecursionError, MemoryError) is kept whole, as
    a syntax error is: the worker's compile then reports it as the student's. JSON nested too deeply
    raises RecursionError, which every reader on the grading side takes as an unreadable notebook."""
    import pytest

    deep = "x = " + "+".join(["a"] * 100_000)
    path = notebook(tmp_path, ("code", deep, {}))
    assert [c.code for c in read_cells(path)] == [deep]
    path.write_text('{"cells": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(RecursionError):
        read_cells(path)


def test_a_notebook_that_is_its_own_module_leaves_out_its_imports_from_that_name(tmp_path):
    """Issue 46: a notebook graded as attention_basics (no module beside it) whose cell says
    ``from attention_basics import softmax``: that import is left out (what the notebook defines is its
    own, wherever it is), so it never fails the notebook's import; other imports stay, and so does
    ``import attention_basics`` (the module itself, whole by the time a function uses it)."""
    path = notebook(tmp_path, ("code", "import torch\nfrom attention_basics import softmax, attention_scores\n"
                                       "import attention_basics\nfrom causal_attention import causal_mask\n"
                                       "from attention_basics_extra import x", {}),
                    ("code", "def softmax(x, dim=-1):\n    return x.softmax(dim)", {}))
    kept = "\n".join(c.code for c in read_cells(path))
    assert "from attention_basics import softmax" in kept  # read as written, for grading from the file
    own = "\n".join(c.code for c in read_cells(path, own="attention_basics"))
    assert "from attention_basics import" not in own
    for line in ("import torch", "import attention_basics", "from causal_attention import causal_mask",
                 "from attention_basics_extra import x", "def softmax(x, dim=-1):"):
        assert line in own, line
    assert own.count("\n") == kept.count("\n")  # lines keep their numbers


def test_a_notebook_is_parsed_once_for_which_exercises_it_writes_and_the_code_its_worker_runs(tmp_path, monkeypatch):
    """grade check's two readings of a notebook (graded_source's choice of file, observable's reading of the
    code the worker runs) share one parse of its cells; what each reads is as before: the choice sees the
    notebook's written exercise, the reading its kept code, cell by cell, demos out."""
    import ast

    from grader.grading import graded_source, observable
    from grader.inside import notebook_source

    stub = tmp_path / "attention_basics.py"
    stub.write_text("def softmax(x, dim=-1):\n    raise NotImplementedError\n")
    path = notebook(tmp_path, ("code", "import torch", {}),
                    ("code", "def softmax(x, dim=-1):\n    return x.exp() / x.exp().sum(dim)", {}),
                    ("code", "print(softmax(torch.ones(3)))  # a demo, parsed once", {}))
    parsed = []
    real = ast.parse
    monkeypatch.setattr(notebook_source.ast, "parse", lambda code, *a, **k: parsed.append(code) or real(code, *a, **k))
    choice = graded_source.choose(stub, path, ("softmax",))
    assert choice is not None and choice.from_notebook == ("softmax",)
    cells = len(parsed)
    code, places = observable.kept_code(path)
    assert len(parsed) == cells and sum("demo, parsed once" in p for p in parsed) == 1  # no cell parsed again
    assert "def softmax" in code and "print(" not in code
    assert [name for _, name in places] == ["attention_basics.ipynb [cell 1]", "attention_basics.ipynb [cell 2]"]
