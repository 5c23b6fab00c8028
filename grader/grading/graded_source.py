"""Which file each exercise is graded from, when an assignment folder holds the module and the notebook.

Students work in either, and often in both: the module as released (stubs) beside the notebook they
filled in, or the other way round. Each exercise is graded from the file where it is written: a
definition that is still the stub (its body only a docstring and ``raise NotImplementedError``) in
one file and written in the other is taken from the written one; written in both, the module's wins
and the report says so. Decided here, on the grading side, from the files' syntax alone (nothing of
the student's runs); the worker then imports the module and lays the notebook's chosen definitions
over it (grader/inside/worker.py).
"""
from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from grader.inside.notebook_source import LIMITS, NotebookError, cell_codes, code_problem, read_bounded


@dataclass(frozen=True)
class Choice:
    module: str  # file names, as the student knows them
    notebook: str
    from_notebook: tuple[str, ...] = ()  # definitions taken from the notebook
    in_both: tuple[str, ...] = ()  # written in both: the module's was graded
    notes: dict = field(default_factory=dict)  # exercise -> what the report says of its source

    def source_of(self, name: str) -> str:
        return self.notebook if name in self.from_notebook else self.module


def is_stub(node: ast.stmt) -> bool:
    """A function whose body is a docstring and ``raise NotImplementedError``, or a class whose every
    method is one (the released stub of an exercise)."""
    if isinstance(node, ast.ClassDef):
        methods = [n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        return bool(methods) and all(is_stub(m) for m in methods)
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    body = [n for n in node.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))
            and not isinstance(n, ast.Pass) and not _calls_super_init(n)]  # a released __init__ keeps super()
    if len(body) != 1 or not isinstance(body[0], ast.Raise) or body[0].exc is None:
        return False
    raised = body[0].exc.func if isinstance(body[0].exc, ast.Call) else body[0].exc
    return isinstance(raised, ast.Name) and raised.id == "NotImplementedError"


def _calls_super_init(node: ast.stmt) -> bool:
    """``super().__init__(...)`` as a statement."""
    call = node.value if isinstance(node, ast.Expr) else None
    return isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "__init__" \
        and isinstance(call.func.value, ast.Call) and isinstance(call.func.value.func, ast.Name) \
        and call.func.value.func.id == "super"


@dataclass(frozen=True)
class Written:
    """A written (not stub) definition, as the few bytes that tell it from another: digests of its
    source text and of its code's shape (the syntax tree without docstrings, positions left out). No
    tree is kept: a file read once is remembered by these alone (:func:`_parsed`)."""

    text: bytes | None  # None: read without its source
    shape: bytes | None = None  # read only where two texts differ (:func:`choose`)

    def same_text(self, other: "Written") -> bool:
        return self.text is not None and self.text == other.text  # the same code copied (a lesson's two files)

    def same_as(self, other: "Written") -> bool:
        """The same text, or the same shape (both read with ``shapes``: :func:`definitions`)."""
        return self.same_text(other) or (self.shape is not None and self.shape == other.shape)


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=20).digest()


class _Mark(str):
    """Punctuation of :func:`_dump`, never confused with a string of the student's."""


def _dump(node: ast.AST) -> str:
    """The tree as text, field by field, without positions, like ``ast.dump``, but iterative: a student's
    expression nested thousands deep (a 1,600-term sum) is read, never a RecursionError."""
    out, stack = [], [node]
    while stack:
        item = stack.pop()
        if isinstance(item, _Mark):
            out.append(item)
        elif isinstance(item, ast.AST):
            out.append(type(item).__name__ + "(")
            stack.append(_Mark(")"))
            for name in reversed(item._fields):
                stack += [getattr(item, name, None), _Mark(f"{name}=")]
        elif isinstance(item, list):
            out.append("[")
            stack += [_Mark("]"), *reversed(item)]
        else:
            out.append(repr(item) + ",")
    return "".join(out)


def definitions(tree: ast.Module, source: str | None = None, shapes: bool = False) -> dict[str, Written | None]:
    """Top-level functions and classes: name -> the written definition (None for a stub); the last counts.
    ``shapes``: with the digests of their code's shapes (a walk of the whole tree: only where needed)."""
    lines = source.splitlines() if source is not None else None

    def text(n):  # a top-level definition's whole lines, decorators included
        start = min([n.lineno] + [d.lineno for d in n.decorator_list])
        return "\n".join(lines[start - 1:n.end_lineno]) if lines is not None else None

    def written(n):
        source_text = text(n)
        return Written(_digest(source_text) if source_text is not None else None,
                       _digest(_dump(_without_docstrings(n))) if shapes else None)

    return {n.name: None if is_stub(n) else written(n)
            for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}


def _without_docstrings(node: ast.AST) -> ast.AST:
    """``node`` with its docstrings taken out (in place: the tree is dropped after)."""
    for inner in ast.walk(node):
        body = getattr(inner, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            inner.body = body[1:] or [ast.Pass()]
    return node


def choose(module: Path, notebook: Path, exercises: tuple[str, ...]) -> Choice | None:
    """The choice for an assignment folder holding both files, or None when the notebook adds
    nothing (every exercise graded from the module, none written in the notebook too) or the module
    does not parse (it is graded, and its syntax error shown). A notebook that cannot be used (not a
    notebook, over a limit of grader.inside.notebook_source.LIMITS, a cell that does not parse, not
    a regular file) is ignored: the module is graded, and each exercise's note says why in one line.
    Whatever the files hold, this raises nothing: they are the student's."""
    try:
        ours = _parsed("module", module_data := read_bounded(module), module.name, _module_definitions)
    except _TooLarge as error:
        return _ignored(module, notebook, exercises,
                        f"{notebook.name} ignored: {module.name} is too large to compare with it ({error}); "
                        f"{module.name} graded")
    except _UNREADABLE:
        return None  # what the student wrote cannot be read here: the module is graded, as it runs
    try:
        theirs = _parsed("notebook", notebook_data := read_bounded(notebook), notebook.name, _notebook_definitions)
    except NotebookError as error:
        return _ignored(module, notebook, exercises, f"{error}: ignored, {module.name} graded")
    except OSError:  # the working copy holds no such file: the submission's was refused (grader.submission)
        return _ignored(module, notebook, exercises,
                        f"{notebook.name} was not read (not a regular file of at most {LIMITS.file_bytes >> 20} MiB; "
                        f"links are not followed): ignored, {module.name} graded")
    from_notebook = tuple(n for n, code in theirs.items() if code and not ours.get(n))
    # written in both, differently (the same code twice, as in a lesson's solutions, says nothing new; nor
    # the same code laid out or commented otherwise: its shape, read only for these)
    in_both = tuple(n for n, code in theirs.items() if code and ours.get(n) and not ours[n].same_text(code))
    if in_both:
        try:
            our_shapes = _parsed("module shapes", module_data, module.name, _module_shapes)
            their_shapes = _parsed("notebook shapes", notebook_data, notebook.name, _notebook_shapes)
        except (*_UNREADABLE, NotebookError):  # read once already: not expected
            return None
        in_both = tuple(n for n in in_both if our_shapes[n].shape != their_shapes[n].shape)
    if not any(n in ours or n in exercises for n in from_notebook) and not in_both:
        return None  # nothing of the module's, nor an exercise, from the notebook: its own helpers (demos) unused
    notes = {}
    for name in exercises:
        if name in from_notebook:
            notes[name] = f"graded from {notebook.name} ({module.name} has it as a stub)" if name in ours \
                else f"graded from {notebook.name}"
        elif name in in_both:
            notes[name] = f"graded from {module.name}: {notebook.name} writes it too, and the module wins " \
                          f"(make the two the same, or delete one)"
    return Choice(module.name, notebook.name, from_notebook, in_both, notes)


_UNREADABLE = (SyntaxError, ValueError, OSError, RecursionError, MemoryError)  # ValueError: UnicodeDecodeError too


class _TooLarge(ValueError):
    """A module longer than the grading process parses (grader.inside.notebook_source.code_problem)."""


def _ignored(module: Path, notebook: Path, exercises: tuple[str, ...], note: str) -> Choice:
    """Every exercise from the module, each with ``note``: which notebook was ignored, and why."""
    return Choice(module.name, notebook.name, notes=dict.fromkeys(exercises, note))


def _module_definitions(data: bytes, name: str, shapes: bool = False) -> dict[str, Written | None]:
    text = data.decode("utf-8")
    problem = code_problem(text)
    if problem is not None:
        raise _TooLarge(problem)  # not parsed here; the worker imports it in its sandbox
    return definitions(ast.parse(text), text, shapes)


def _module_shapes(data: bytes, name: str) -> dict[str, Written | None]:
    return _module_definitions(data, name, shapes=True)


def _notebook_shapes(data: bytes, name: str) -> dict[str, Written | None]:
    return _notebook_definitions(data, name, shapes=True)


def _notebook_definitions(data: bytes, name: str, shapes: bool = False) -> dict[str, Written | None]:
    """The notebook's definitions, each cell's read from its statements and dropped with them. A cell
    that does not parse makes the notebook unusable (the worker could not import it): NotebookError."""
    theirs: dict[str, Written | None] = {}

    def read(cell, kept):
        theirs.update(definitions(ast.Module(body=kept, type_ignores=[]), cell.code, shapes))

    for filename, _, problem in cell_codes(data, name, cell_chars=LIMITS.cell_chars, read=read):
        if problem is not None:
            raise NotebookError(f"{filename} has {problem}, so the notebook cannot be used")
    return theirs


KEPT = 64  # files read, by content: a class hands in the released stubs and lesson notebooks again and again
_PARSED: dict[tuple[str, bytes], dict] = {}  # what was read of each: names and digests (Written), no tree


def _parsed(kind: str, data: bytes, name: str, read) -> dict:
    """``read(data, name)``, or what it gave for the same bytes earlier in this process (a file that
    cannot be read raises each time, naming ``name``, and is not kept). What is kept names no file, and
    is only read, never changed, by choose()."""
    key = (kind, hashlib.blake2b(data, digest_size=20).digest())
    found = _PARSED.get(key)
    if found is None:
        found = read(data, name)
        if len(_PARSED) >= KEPT:
            _PARSED.pop(next(iter(_PARSED)))  # the oldest
        _PARSED[key] = found
    return found
