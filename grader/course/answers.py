"""No answer in the student distribution: the lesson ships without the code of its computations.

The lesson (``suites/lesson``) and the public suites go to students, who must find there no code that
computes an answer (the contract's "answers stay on the grader's side"). Every computation of the
lesson, right or mistaken, is a module-level function marked ``@model`` (grader.grading.models), whose
calls a release records. Here:

- :func:`stripped` gives a module's text with every ``@model`` function's body replaced by a raise (the
  signature and docstring stay: the recording answers each call);
- :func:`computations` finds what would still compute one outside those bodies: the operations attention
  is made of (a softmax, an exponential, a product of matrices, a mask filled in, a triangle, a rotation's
  sines, the layouts of heads and padding...), so that `grade release --out` refuses a lesson that would ship one (the author marks the
  function ``@model``).
"""
from __future__ import annotations

import ast
from pathlib import Path

# what attention and its lesson are computed with: none may run in shipped code but a recorded @model's
OPERATIONS = frozenset({
    "softmax", "log_softmax", "exp", "exp_", "exp2", "expm1", "sigmoid", "logsumexp", "matmul", "mm", "bmm", "einsum",
    "baddbmm", "addmm", "tensordot", "mv", "dot", "inner", "outer", "linear", "bilinear", "conv1d",
    "scaled_dot_product_attention", "multi_head_attention_forward", "masked_fill", "masked_fill_", "masked_scatter",
    "triu", "tril", "triu_", "tril_", "triu_indices", "tril_indices", "cos", "sin", "polar", "view_as_complex",
    "repeat_interleave", "cumsum", "cummax", "logcumsumexp", "MultiheadAttention", "Linear",
    # the layouts and masks of heads, fused projections and padding (split_heads, merge_heads, split_qkv,
    # padding_mask are each one of these lines)
    "reshape", "view", "transpose", "permute", "movedim", "moveaxis", "swapaxes", "swapdims", "unflatten", "arange",
    "mT",
})
_STUB = "raise NotImplementedError(\"recorded at release: a student distribution answers this from its recording\")"


def _is_model(function: ast.FunctionDef) -> bool:
    for decorator in function.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if (isinstance(target, ast.Name) and target.id == "model") or \
                (isinstance(target, ast.Attribute) and target.attr == "model"):
            return True
    return False


def stripped(source: str) -> str:
    """``source`` with the body of every module-level ``@model`` function replaced by a raise (its docstring
    kept)."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    cuts = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _is_model(node):
            body = node.body
            first = body[1] if len(body) > 1 and _docstring(body[0]) else body[0]
            if first is body[0] and _docstring(body[0]):  # only a docstring: nothing to cut
                continue
            start = first.lineno - 1
            if first.lineno == node.lineno:  # a one-line def: ``def f(x): return x``
                raise ValueError(f"line {node.lineno}: a @model function's body must start on a line of its own")
            indent = lines[start][:len(lines[start]) - len(lines[start].lstrip())]
            cuts.append((start, node.end_lineno, f"{indent}{_STUB}\n"))
    for start, end, text in sorted(cuts, reverse=True):
        lines[start:end] = [text]
    return "".join(lines)


def _docstring(statement) -> bool:
    return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant) \
        and isinstance(statement.value.value, str)


def computations(source: str) -> list[tuple[int, str]]:
    """``[(line, operation)]``: the answer-making operations (:data:`OPERATIONS`, and ``@``) in ``source`` outside
    the bodies of ``@model`` functions."""
    tree = ast.parse(source)
    found = []

    def visit(node, inside_model: bool):
        for child in ast.iter_child_nodes(node):
            model = inside_model or (isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) and node is tree
                                     and _is_model(child))
            if not model:
                if isinstance(child, ast.BinOp) and isinstance(child.op, ast.MatMult) or \
                        isinstance(child, ast.AugAssign) and isinstance(child.op, ast.MatMult):
                    found.append((child.lineno, "@"))
                elif isinstance(child, ast.Call):
                    name = _called(child.func)
                    if name in OPERATIONS:
                        found.append((child.lineno, name))
                elif isinstance(child, ast.Attribute) and child.attr in OPERATIONS and \
                        not isinstance(getattr(child, "_parent_call", None), ast.Call):
                    found.append((child.lineno, child.attr))  # passed along uncalled: torch.softmax as a value
            visit(child, model)

    for node in ast.walk(tree):  # an attribute that is a call's function is judged as the call
        if isinstance(node, ast.Call):
            node.func._parent_call = node
    visit(tree, False)
    return sorted(set(found))


def _called(function) -> str | None:
    if isinstance(function, ast.Attribute):
        return function.attr
    if isinstance(function, ast.Name):
        return function.id
    return None


def _modules(paths) -> list[Path]:
    return sorted(m for p in map(Path, paths) for m in (p.rglob("*.py") if p.is_dir() else [p]))


def strip(paths) -> None:
    """Every module in ``paths`` (folders or files) stripped in place (:func:`stripped`)."""
    for path in _modules(paths):
        path.write_text(stripped(path.read_text(encoding="utf-8")), encoding="utf-8")


def shipped_computations(paths) -> list[tuple[Path, int, str]]:
    """``(module, line, operation)`` for every answer-making operation in the modules of ``paths`` (folders or
    files)."""
    return [(path, line, operation) for path in _modules(paths)
            for line, operation in computations(path.read_text(encoding="utf-8"))]


def given_answers(assignments: Path) -> list[tuple[Path, int, str]]:
    """What the released stubs and notebooks give that computes an answer: any such operation in a stub module,
    and in a function or class a notebook's code cell defines (a helper handed to the student, as 06's attention
    was: it solved 02 to 04). A notebook's demonstrations at the top level of a cell are the lesson's text and
    stay. ``(file, line, operation)``, the line counted within the cell for a notebook."""
    import json

    found = [(path, line, op) for path in sorted(assignments.rglob("*.py"))
             for line, op in computations(path.read_text(encoding="utf-8"))]
    for path in sorted(assignments.rglob("*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8")).get("cells", []):
            if cell.get("cell_type") != "code":
                continue
            text = "".join(cell.get("source", []))
            try:
                tree = ast.parse(text)
            except SyntaxError:  # (IPython magics: nothing of ours)
                continue
            for node in tree.body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    found += [(path, node.lineno + line - 1, op)
                              for line, op in computations(ast.get_source_segment(text, node) or "")
                              if op not in _LIBRARY]
    return found


# torch's own attention, which every exercise forbids (a helper that calls it answers nothing)
_LIBRARY = frozenset({"scaled_dot_product_attention", "multi_head_attention_forward", "MultiheadAttention"})
