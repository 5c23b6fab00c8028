"""The definitions a notebook submission makes, as code a worker can run without Jupyter.

Kept: top-level imports, functions and classes of code cells, and the top-level statements that
define names from what is already defined (``SHIFT = 0.0``, ``NEG_INF = float("-inf")``,
``EPS = torch.finfo(torch.float32).eps``, a helper object built by a library): those a function of
the student's may use. Dropped: demo cells (plots, timings, prints), any statement that calls the
student's own code or uses a name only a dropped statement defines (it would run unfinished code
at import time, or fail there), nbgrader's autograded test cells, and imports of display libraries
and of the grader itself (a check cell's ``from grader.notebook_checks import check``: student code
may not import the grader). Each kept cell is compiled under a name such as
``attention_basics.ipynb [cell 7]`` so that tracebacks point the student at the cell.
"""
from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field
from pathlib import Path

_NOT_GRADED = {"matplotlib", "IPython", "ipywidgets", "seaborn", "tqdm", "pandas", "grader"}
_KEEP = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
# what a kept name definition may call: libraries (as the notebook imported them) and plain builtins
_LIBRARIES = {"torch", "math", "numpy", "functools", "itertools", "collections", "dataclasses", "typing",
              "einops", "operator", "string", "enum"}
_BUILTINS = {"float", "int", "bool", "complex", "str", "tuple", "list", "dict", "set", "frozenset", "range",
             "len", "abs", "min", "max", "round", "pow", "sum", "sorted", "reversed", "zip", "enumerate",
             "object", "slice", "type", "isinstance"}
_BUILTIN_NAMES = _BUILTINS | {"True", "False", "None", "Ellipsis", "NotImplemented"}


@dataclass(frozen=True)
class Cell:
    filename: str  # what tracebacks show
    source: str  # the cell's whole (magic-free) source, for tracebacks
    code: str  # the kept definitions only
    nodes: tuple | None = field(default=None, compare=False)  # their statements, parsed (None: it does not parse)


def _is_test_cell(cell: dict) -> bool:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return bool(meta.get("grade")) and not meta.get("solution")


def without_magics(source: str) -> str:
    # IPython magics and shell escapes are not Python; keep the line count so line numbers hold
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())


def _kept(node: ast.stmt, scope: "_Scope") -> bool:
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        return scope.defines_safely(node)
    if not isinstance(node, _KEEP):
        return False
    if isinstance(node, ast.Import):
        return all(alias.name.split(".")[0] not in _NOT_GRADED for alias in node.names)
    if isinstance(node, ast.ImportFrom):
        return (node.module or "").split(".")[0] not in _NOT_GRADED
    return True


class _Scope:
    """The names the kept statements define, in notebook order, and which of them are libraries."""

    def __init__(self):
        self.defined: set[str] = set()
        self.libraries: set[str] = set()

    def add(self, node: ast.stmt) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                name = alias.asname or alias.name.split(".")[0]
                self.defined.add(name)
                if alias.name.split(".")[0] in _LIBRARIES:
                    self.libraries.add(name)
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                self.defined.add(alias.asname or alias.name)
                if (node.module or "").split(".")[0] in _LIBRARIES and not node.level:
                    self.libraries.add(alias.asname or alias.name)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self.defined.add(node.name)
        else:
            self.defined.update(_targets(node))

    def defines_safely(self, node) -> bool:
        """A statement that binds plain names from names already defined, calling nothing but a
        library or a builtin: it cannot run the student's unfinished code, nor fail for a name that
        a dropped demo would have defined."""
        targets = _targets(node)
        if targets is None or node.value is None:
            return False
        known = self.defined | _BUILTIN_NAMES | (set(targets) if isinstance(node, ast.AugAssign) else set())
        for inner in ast.walk(node.value):
            if isinstance(inner, (ast.Lambda, ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom,
                                  ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                return False
            if isinstance(inner, ast.Name) and inner.id not in known:
                return False
            if isinstance(inner, ast.Call) and _root(inner.func) not in self.libraries | _BUILTINS:
                return False
        return True


def _targets(node) -> list[str] | None:
    """The plain names an assignment binds; None if it binds anything else (an attribute, an item)."""
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    names = []
    for target in targets:
        parts = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
        if not all(isinstance(part, ast.Name) for part in parts):
            return None
        names += [part.id for part in parts]
    return names


def _root(func: ast.expr) -> str | None:
    while isinstance(func, ast.Attribute):
        func = func.value
    return func.id if isinstance(func, ast.Name) else None


def read_cells(path: Path) -> list[Cell]:
    """The code cells of a notebook, reduced to their definitions. SyntaxError keeps the cell whole."""
    return cells_of(Path(path).read_bytes(), Path(path).name)


def cells_of(data: bytes, name: str = "notebook.ipynb") -> list[Cell]:
    """:func:`read_cells` of a notebook's bytes; ``name`` is the file's, for tracebacks."""
    notebook = json.loads(data.decode("utf-8"))  # nested too deeply: a RecursionError (below)
    cells = []
    scope = _Scope()
    for index, cell in enumerate(notebook.get("cells", []), start=1):
        if cell.get("cell_type") != "code" or _is_test_cell(cell):
            continue
        raw = cell.get("source", "")
        source = without_magics("".join(raw) if isinstance(raw, list) else raw)
        if source.lstrip().startswith("%%"):
            continue
        filename = f"{name} [cell {index}]"
        try:
            tree = ast.parse(source)
        except (SyntaxError, RecursionError, MemoryError):  # nested past the parser's limits: no syntax error
            cells.append(Cell(filename, source, source))  # compiling it reports the student's line
            continue
        lines = source.splitlines()
        kept = []
        for node in tree.body:
            if _kept(node, scope):
                kept.append(node)
                scope.add(node)
        if not kept:
            continue
        # blank out what is dropped, so that kept lines keep their numbers
        keep_lines = set()
        for node in kept:
            start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            keep_lines.update(range(start, node.end_lineno + 1))
        code = "\n".join(line if number in keep_lines else "" for number, line in enumerate(lines, 1))
        cells.append(Cell(filename, source, code, tuple(kept)))
    return cells


def history_notebook(cells: list[str]) -> dict:
    """A notebook with one code cell per history entry (cell ``n`` is ``In[n]``, so tracebacks name it)."""
    kept = []
    for source in cells[1:]:  # In[0] is always empty
        try:
            tree = ast.parse(without_magics(source))
        except (SyntaxError, ValueError, RecursionError, MemoryError):  # it defined nothing in the kernel either
            source = ""
        else:
            if any(_imports_grader(node) for node in tree.body):
                source = ""
        kept.append({"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                     "source": source})
    return {"cells": kept, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def _imports_grader(node: ast.stmt) -> bool:
    if isinstance(node, ast.Import):
        return any(alias.name.split(".")[0] == "grader" for alias in node.names)
    return isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "grader"
