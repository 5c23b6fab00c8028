"""The definitions a notebook submission makes, as code a worker can run without Jupyter.

Only top-level imports, functions and classes of code cells are kept: demo cells (plots, timings,
prints) and nbgrader's autograded test cells would run the student's unfinished code at import
time, so they are dropped, and so are imports of display libraries and of the grader itself (a
check cell's ``from grader.notebook_checks import check``: student code may not import the grader).
Each kept cell is compiled under a name such as
``attention_basics.ipynb [cell 7]`` so that tracebacks point the student at the cell.
"""
from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from pathlib import Path

_NOT_GRADED = {"matplotlib", "IPython", "ipywidgets", "seaborn", "tqdm", "pandas", "grader"}
_KEEP = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclass(frozen=True)
class Cell:
    filename: str  # what tracebacks show
    source: str  # the cell's whole (magic-free) source, for tracebacks
    code: str  # the kept definitions only


def _is_test_cell(cell: dict) -> bool:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return bool(meta.get("grade")) and not meta.get("solution")


def _without_magics(source: str) -> str:
    # IPython magics and shell escapes are not Python; keep the line count so line numbers hold
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())


def _kept(node: ast.stmt) -> bool:
    if not isinstance(node, _KEEP):
        return False
    if isinstance(node, ast.Import):
        return all(alias.name.split(".")[0] not in _NOT_GRADED for alias in node.names)
    if isinstance(node, ast.ImportFrom):
        return (node.module or "").split(".")[0] not in _NOT_GRADED
    return True


def read_cells(path: Path) -> list[Cell]:
    """The code cells of a notebook, reduced to their definitions. SyntaxError keeps the cell whole."""
    notebook = json.loads(Path(path).read_text(encoding="utf-8"))
    cells = []
    for index, cell in enumerate(notebook.get("cells", []), start=1):
        if cell.get("cell_type") != "code" or _is_test_cell(cell):
            continue
        raw = cell.get("source", "")
        source = _without_magics("".join(raw) if isinstance(raw, list) else raw)
        if source.lstrip().startswith("%%"):
            continue
        filename = f"{Path(path).name} [cell {index}]"
        try:
            tree = ast.parse(source)
        except SyntaxError:
            cells.append(Cell(filename, source, source))  # compiling it reports the student's line
            continue
        lines = source.splitlines()
        kept = [node for node in tree.body if _kept(node)]
        if not kept:
            continue
        # blank out what is dropped, so that kept lines keep their numbers
        keep_lines = set()
        for node in kept:
            start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            keep_lines.update(range(start, node.end_lineno + 1))
        code = "\n".join(line if number in keep_lines else "" for number, line in enumerate(lines, 1))
        cells.append(Cell(filename, source, code))
    return cells
