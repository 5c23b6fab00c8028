"""``grade new-exercise ASSIGNMENT NAME``: the skeleton of a new exercise, in every file that needs one.

It adds the exercise to ``course.toml`` (with its points), a reference function between solution
markers to the solution module and to the lesson notebook (with the notebook's grade cell), and a
check to the hidden and the public suites, each with a placeholder mistake (a mutant: the input
doubled) to replace with the mistakes students make. The reference it writes returns its input, so
the course grades at once; what is left is the author's: the computation, its cases, its mistakes,
and `grade release`. docs/authoring.md is the checklist.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from grader.config import Assignment, Course, load_course
from grader.errors import UsageError

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass(frozen=True)
class Scaffolded:
    exercise: str
    points: float
    total: float  # the assignment's points, the new exercise's included
    files: tuple[Path, ...]


def new_exercise(*, course: Course, assignment_id: str, name: str, points: float = 10) -> Scaffolded:
    """Add the exercise ``name`` to ``assignment_id`` in every file of the course that lists one."""
    assignment = course.assignment(assignment_id)
    if not _NAME.match(name) or name.startswith("test"):
        raise UsageError(f"{name!r} is not a name an exercise can have (a Python identifier, not test...)")
    if name in assignment.exercises:
        raise UsageError(f"{assignment_id} has an exercise {name!r} already")
    if points <= 0:
        raise UsageError("--points must be more than 0")
    layout = course.layout
    files = (course.root / "course.toml", layout.solution_module(assignment), layout.solution_notebook(assignment),
             layout.suite(assignment, "hidden"), layout.suite(assignment, "public"))
    missing = [str(path) for path in files if not path.is_file()]
    if missing:
        raise UsageError(f"cannot add an exercise to {assignment_id}: missing {', '.join(missing)}")
    toml = _with_points(files[0].read_text(encoding="utf-8"), assignment, name, points)
    _append(files[1], _reference(name))
    notebook = _with_cells(json.loads(files[2].read_text(encoding="utf-8")), name, points)
    hidden, public = (_with_check(path.read_text(encoding="utf-8"), name, kind)
                      for path, kind in ((files[3], "hidden"), (files[4], "public")))
    files[0].write_text(toml, encoding="utf-8")
    files[2].write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    files[3].write_text(hidden, encoding="utf-8")
    files[4].write_text(public, encoding="utf-8")
    load_course(course.root)  # what it wrote must load
    return Scaffolded(name, float(points), assignment.max_score + points, files)


def _with_points(text: str, assignment: Assignment, name: str, points: float) -> str:
    """course.toml with ``name = points`` after the last entry of the assignment's points table."""
    blocks = re.split(r"(?m)^(?=\[\[assignments\]\])", text)
    for index, block in enumerate(blocks):
        if re.search(rf'(?m)^\s*id\s*=\s*"{re.escape(assignment.id)}"\s*$', block):
            head, sep, table = block.partition("[assignments.points]")
            if not sep:
                break
            lines = table.split("\n")
            stop = next((i for i, line in enumerate(lines) if line.lstrip().startswith("[")), len(lines))
            last = max(i for i, line in enumerate(lines[:stop]) if "=" in line and not line.lstrip().startswith("#"))
            lines.insert(last + 1, f"{name} = {points:g}")  # after the table's last entry, whatever follows it
            blocks[index] = head + sep + "\n".join(lines)
            return "".join(blocks)
    raise UsageError(f"course.toml: no [assignments.points] table found for {assignment.id}")


def _reference(name: str) -> str:
    return (f'\n\ndef {name}(x):\n'
            f'    """TODO: what {name} computes, with shapes: x [..., T, d] -> [..., T, d]."""\n'
            '    ### BEGIN SOLUTION\n'
            '    return x.clone()  # [..., T, d] (TODO: the computation)\n'
            '    ### END SOLUTION\n')


def _append(path: Path, text: str) -> None:
    path.write_text(path.read_text(encoding="utf-8").rstrip("\n") + "\n" + text, encoding="utf-8")


def _cell(kind: str, source: str, nbgrader: dict | None, cell_id: str) -> dict:
    cell = {"cell_type": kind, "id": cell_id, "metadata": {}, "source": source.splitlines(keepends=True)}
    if nbgrader is not None:
        cell["metadata"]["nbgrader"] = {"grade": False, "grade_id": cell_id, "locked": True, "schema_version": 3,
                                        "solution": False, "task": False, **nbgrader}
    if kind == "code":
        cell.update(execution_count=None, outputs=[])
    return cell


def _with_cells(notebook: dict, name: str, points: float) -> dict:
    """The lesson notebook with the exercise's section: text, solution cell, grade cell."""
    cells = notebook.setdefault("cells", [])
    cells += [
        _cell("markdown", f"## {name}\n\nTODO: the lesson's words and pictures for {name}.", None, f"{name}_lesson"),
        _cell("code", _reference(name).strip("\n"), {"locked": False, "solution": True}, name),
        _cell("code", f'from grader.notebook_checks import check\n\ncheck("{name}")',
              {"grade": True, "points": points}, f"test_{name}"),
    ]
    return notebook


def _with_check(text: str, name: str, kind: str) -> str:
    """A suite with a check of ``name`` appended, and the authoring imports it needs."""
    for imported in ("Mistake", "exercise"):
        if not re.search(rf"(?m)^from grader\.authoring import .*\b{imported}\b", text):
            text = re.sub(r"(?m)^(import torch\n)", rf"\1from grader.authoring import {imported}\n", text, count=1)
    case = "grade.randn(2, 5, 4)" if kind == "hidden" else "torch.arange(12.0).reshape(3, 4) / 10"
    return text.rstrip("\n") + f'''


# --- {name} {"-" * max(3, 96 - len(name))}
@exercise("{name}")
def test_{name}(grade):
    x = {case}
    grade.same("{name}", x, grad=True, mistakes=[
        # TODO: the mistakes students make, each with the output it gives; this mutant is a placeholder
        Mistake(None, "your output is the input doubled", lambda: x * 2),
    ])
'''
