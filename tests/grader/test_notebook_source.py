import json

from grader.notebook_source import read_cells


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
