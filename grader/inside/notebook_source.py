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

A notebook is the student's file, read by the grading process too (grader/grading/graded_source.py chooses
each exercise's file from it), so reading one costs a bounded amount whatever its bytes: the file, its
JSON and its code are measured against :data:`LIMITS` before anything is parsed, each code cell is
parsed on its own, and no syntax tree outlives its cell. A file that is not a Jupyter notebook (not
UTF-8 JSON, cells that are not a list of objects, a source that is not text...) or that is over a limit
raises :class:`NotebookError`, whose message says in one line which file and why. Nesting is bounded by
CPython's own parser: brackets past 200 deep and right-nested chains (``- - - 1``, ``a ** a ** ...``,
``not not ...``) are refused at once (SyntaxError, MemoryError); a left-nested chain (``a + a + ...``,
``a.b.b.b``) costs what its length does, and the grading process parses no cell longer than
``LIMITS.cell_chars``. A cell that does not parse is kept whole (below).
"""
from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

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
class NotebookLimits:
    """What a notebook may hold to be read at all (NotebookError past any, checked before any of its
    code is parsed), and what the grading process parses at once. Far above any lesson notebook (the
    largest holds 57 cells, 37 KB of code in 640 lines, 3 KB in its largest cell; the largest module
    13 KB; a kernel's history after a long day is some hundreds of cells), and low enough that the
    grading process reading one stays well within twice the memory of a clean run, in a few seconds:
    parsing Python costs up to 900 bytes of memory per byte of code, and no more than one cell's or
    module's tree is alive at a time."""

    file_bytes: int = 10 << 20  # the file, outputs and images included (grader.submission.FILE_LIMIT)
    json_items: int = 1_000_000  # objects, arrays, strings and commas of its JSON, counted on the bytes
    cells: int = 20_000  # cells of any kind (a kernel's history, grader.notebook_checks, has one a run)
    code_chars: int = 1 << 20  # characters of code in all code cells together
    statements: int = 100_000  # lines and semicolons of code in all code cells together
    # the grading process's own bound: a cell (or a module) longer is not parsed there (parsed_cells'
    # cell_chars), so a notebook with one is not used beside the module; the worker, whose memory is
    # the submission's, reads it
    cell_chars: int = 64 << 10


LIMITS = NotebookLimits()  # the one place these are set: the grading process and the worker read alike


class NotebookError(ValueError):
    """A file given as a notebook that is not read: not a Jupyter notebook, or over one of
    :data:`LIMITS`. Its message names the file and says why, in one line."""


class NotebookTooDeep(NotebookError, RecursionError):
    """JSON nested deeper than the decoder goes (still a RecursionError, as readers expect)."""


@dataclass(frozen=True)
class Cell:
    filename: str  # what tracebacks show
    source: str  # the cell's whole (magic-free) source, for tracebacks
    code: str  # the kept definitions only


def _is_test_cell(cell: dict) -> bool:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return bool(meta.get("grade")) and not meta.get("solution")


def without_magics(source: str) -> str:
    # IPython magics and shell escapes are not Python; keep the line count so line numbers hold
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())


def _kept(node: ast.stmt, scope: "_Scope", own: str | None = None) -> bool:
    if own is not None and _imports_from(node, own):
        return False
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        return scope.defines_safely(node)
    if not isinstance(node, _KEEP):
        return False
    if isinstance(node, ast.Import):
        return all(alias.name.split(".")[0] not in _NOT_GRADED for alias in node.names)
    if isinstance(node, ast.ImportFrom):
        return (node.module or "").split(".")[0] not in _NOT_GRADED
    return True


def _imports_from(node: ast.stmt, module: str) -> bool:
    """``from <module> import ...`` (absolute): names taken from that module."""
    return isinstance(node, ast.ImportFrom) and not node.level and node.module == module


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
        own = set(targets) if isinstance(node, ast.AugAssign) else ()
        # looked up in each set, never in their union: a copy of every name defined, made for each
        # statement, would cost a notebook of many statements their number squared
        for inner in ast.walk(node.value):
            if isinstance(inner, (ast.Lambda, ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom,
                                  ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                return False
            if isinstance(inner, ast.Name) and inner.id not in self.defined and inner.id not in _BUILTIN_NAMES \
                    and inner.id not in own:
                return False
            if isinstance(inner, ast.Call) and (root := _root(inner.func)) not in self.libraries \
                    and root not in _BUILTINS:
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


def read_cells(path: Path, own: str | None = None) -> list[Cell]:
    """The code cells of a notebook, reduced to their definitions. SyntaxError keeps the cell whole.
    ``own``: the notebook's own module name, when the notebook is that module and no file of it lies
    beside (grader.inside.importer.exec_as_module): its ``from <own> import ...`` statements are left out."""
    return cells_of(read_bounded(Path(path)), Path(path).name, own)


def read_bounded(path: Path, limit: int = LIMITS.file_bytes) -> bytes:
    """A file's bytes, refused (NotebookError) past ``limit`` without reading the rest."""
    with open(path, "rb") as stream:
        data = stream.read(limit + 1)
    if len(data) > limit:
        raise NotebookError(f"{Path(path).name} is too large to read (more than {limit >> 20} MiB)")
    return data


def cells_of(data: bytes, name: str = "notebook.ipynb", own: str | None = None) -> list[Cell]:
    """:func:`read_cells` of a notebook's bytes; ``name`` is the file's, for tracebacks."""
    return [cell for cell, _, _ in parsed_cells(data, name, own=own)]


KEPT_READINGS = 16  # notebooks whose cells cell_codes keeps, by name and bytes
KEPT_CHARS = 1 << 20  # ... each of at most this much code (a lesson notebook's: about 20,000 characters)
_CELL_CODES: dict[tuple[str, bytes], list[tuple[str, str, str | None]]] = {}


def cell_codes(data: bytes, name: str, *, cell_chars: int | None = None,
               read=None) -> list[tuple[str, str, str | None]]:
    """What :func:`parsed_cells` gives, without the trees: each code cell it yields as ``(filename, kept
    code, None)`` or ``(filename, whole source, why it is not parsed)``; the same bytes under the same name
    are parsed once in a process (the grading process reads a notebook twice: which exercises it writes,
    and the code its worker will run). ``read(cell, kept)`` is called with each parsed cell's statements
    while they exist; a caller that gives it always has the notebook parsed again."""
    import hashlib

    key = (name, hashlib.blake2b(data, digest_size=20).digest() + str(cell_chars).encode())
    if read is None and key in _CELL_CODES:
        return _CELL_CODES[key]
    cells = []
    for cell, kept, problem in parsed_cells(data, name, cell_chars=cell_chars):
        if kept is not None and read is not None:
            read(cell, kept)
        cells.append((cell.filename, cell.code, problem))
    if sum(len(code) for _, code, _ in cells) > KEPT_CHARS:  # a notebook of that much code is read each time
        return cells
    if len(_CELL_CODES) >= KEPT_READINGS:
        _CELL_CODES.pop(next(iter(_CELL_CODES)))  # the oldest
    _CELL_CODES[key] = cells
    return cells


def parsed_cells(data: bytes, name: str = "notebook.ipynb", limits: NotebookLimits = LIMITS, *,
                 cell_chars: int | None = None,
                 own: str | None = None) -> Iterator[tuple[Cell, list | None, str | None]]:
    """Each code cell kept, one at a time: ``(cell, its kept statements, None)``, or ``(cell kept whole,
    None, why it is not parsed)``: it does not parse, or it is longer than ``cell_chars`` (None: no
    bound). The list of statements is emptied when the next cell is asked for (read what you need of
    them before). The whole notebook is checked first (NotebookError), so nothing is parsed of one
    that is refused. ``own``: as :func:`read_cells`."""
    sources = _code_sources(_loaded(data, name, limits), name, limits)
    scope = _Scope()
    for index, raw in sources:
        source = without_magics(raw)
        if source.lstrip().startswith("%%"):
            continue
        filename = f"{name} [cell {index}]"
        if cell_chars is not None and len(source) > cell_chars:
            yield Cell(filename, source, source), None, f"{len(source):,} characters of code (at most {cell_chars:,} " \
                                                        "are read in one cell)"
            continue
        try:
            tree = ast.parse(source)
        except SyntaxError as error:
            yield Cell(filename, source, source), None, f"a syntax error (line {error.lineno})"
            continue  # kept whole: compiling it reports the student's line
        except (RecursionError, MemoryError):  # nested past the parser's limits: no syntax error
            yield Cell(filename, source, source), None, "code nested too deeply to parse"
            continue
        except ValueError:  # a lone surrogate (JSON's "\ud800"), which is no UTF-8
            yield Cell(filename, source, source), None, "a character that is not Unicode text"
            continue
        kept = []
        for node in tree.body:
            if _kept(node, scope, own):
                kept.append(node)
                scope.add(node)
        del tree  # what is not kept goes now
        if not kept:
            continue
        # blank out what is dropped, so that kept lines keep their numbers
        keep_lines = set()
        for node in kept:
            start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            keep_lines.update(range(start, node.end_lineno + 1))
        code = "\n".join(line if number in keep_lines else "" for number, line in enumerate(source.splitlines(), 1))
        yield Cell(filename, source, code), kept, None
        kept.clear()  # the caller's reference too: no tree of this cell is alive while the next one is parsed


def _loaded(data: bytes, name: str, limits: NotebookLimits):
    """The notebook's JSON, after what bounds the cost of decoding it."""
    if len(data) > limits.file_bytes:
        raise NotebookError(f"{name} is too large to read (more than {limits.file_bytes >> 20} MiB)")
    # every value the decoder builds is an object, an array, a string or a number after a comma: counted
    # on the bytes (an upper bound: brackets and commas inside strings count too), before any is built
    items = data.count(b"{") + data.count(b"[") + data.count(b",") + data.count(b'"') // 2
    if items > limits.json_items:
        raise NotebookError(f"{name} is too large to read ({items:,} JSON items; at most {limits.json_items:,}, "
                            "outputs included)")
    try:
        text = data.decode("utf-8-sig")  # a byte-order mark, as some editors write, is not JSON but harmless
    except UnicodeDecodeError:
        raise NotebookError(f"{name} is not a Jupyter notebook (not UTF-8 text)") from None
    try:
        return json.loads(text)
    except RecursionError:
        raise NotebookTooDeep(f"{name} is not a Jupyter notebook (JSON nested too deeply)") from None
    except ValueError as error:  # not JSON, or a number past what Python converts
        raise NotebookError(f"{name} is not a Jupyter notebook (not JSON: {str(error).split(':')[0][:80]})") from None


def _code_sources(notebook, name: str, limits: NotebookLimits) -> list[tuple[int, str]]:
    """``(cell number, source)`` of each code cell that is not an nbgrader test cell, once the
    notebook's structure is checked (what is read of it: nbformat's schema for cells) and its code
    measured against ``limits``."""
    def wrong(problem: str):
        return NotebookError(f"{name} is not a Jupyter notebook ({problem})")

    if not isinstance(notebook, dict):
        raise wrong("a notebook is a JSON object with a list of cells")
    cells = notebook.get("cells", [])
    if not isinstance(cells, list) or not all(isinstance(cell, dict) for cell in cells):
        raise wrong("cells must be a list of objects")
    if len(cells) > limits.cells:
        raise NotebookError(f"{name} is too large to read ({len(cells):,} cells; at most {limits.cells:,})")
    found, chars, statements = [], 0, 0
    for index, cell in enumerate(cells, start=1):
        if not isinstance(cell.get("cell_type"), str):
            raise wrong(f"cell {index} has no cell_type")
        metadata = cell.get("metadata", {})
        if not isinstance(metadata, dict):
            raise wrong(f"the metadata of cell {index} must be an object")
        if not isinstance(metadata.get("nbgrader", {}), dict):
            raise wrong(f"the nbgrader metadata of cell {index} must be an object")
        source = cell.get("source", "")
        if isinstance(source, list) and all(isinstance(line, str) for line in source):
            source = "".join(source)
        elif not isinstance(source, str):
            raise wrong(f"the source of cell {index} must be text or a list of lines")
        if cell["cell_type"] != "code" or _is_test_cell(cell):
            continue
        chars += len(source)
        statements += source.count("\n") + source.count(";") + 1
        if chars > limits.code_chars:
            raise NotebookError(f"{name} is too large to read (more than {limits.code_chars:,} characters of code)")
        if statements > limits.statements:
            raise NotebookError(f"{name} is too large to read (more than {limits.statements:,} lines and "
                                "statements of code)")
        found.append((index, source))
    return found


def code_problem(text: str, limits: NotebookLimits = LIMITS) -> str | None:
    """Why a module's text is too large for the grading process to parse (the bounds of one cell and
    of a notebook's statements), or None."""
    if len(text) > limits.cell_chars:
        return f"{len(text):,} characters of code; at most {limits.cell_chars:,} are read"
    if text.count("\n") + text.count(";") + 1 > limits.statements:
        return f"more than {limits.statements:,} lines and statements of code"
    return None


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
