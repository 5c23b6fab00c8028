"""docs/authoring.md's checklist, enforced: every exercise of course.toml is in every file that needs
it, so an exercise added by hand (or by `grade new-exercise`) cannot miss a place."""
import ast
import json
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
COURSE = tomllib.loads((ROOT / "course.toml").read_text(encoding="utf-8"))
EXERCISES = [(a["id"], a["module"], a["notebook"], name, points)
             for a in COURSE["assignments"] for name, points in a["points"].items()]


def marked_exercises(path: Path) -> set[str]:
    """The exercise names a suite's checks are marked with: the first argument of a decorator call."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    constants = {target.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
                 and isinstance(node.value, ast.Constant) for target in node.targets if isinstance(target, ast.Name)}
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            for decorator in node.decorator_list:
                first = decorator.args[0] if isinstance(decorator, ast.Call) and decorator.args else None
                if isinstance(first, ast.Constant):
                    names.add(first.value)
                elif isinstance(first, ast.Name) and first.id in constants:  # @exercise(MHA)
                    names.add(constants[first.id])
    return names


def grade_cells(path: Path) -> dict[str, float]:
    """The notebook's grade cells: the exercise each checks, and its points."""
    cells = {}
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        source = "".join(cell["source"])
        if meta.get("grade") and "check(" in source:
            cells[source.split('check("', 1)[1].split('"', 1)[0]] = meta.get("points")
    return cells


@pytest.mark.parametrize("assignment,module,notebook,name,points", EXERCISES,
                         ids=[f"{a}-{n}" for a, _, _, n, _ in EXERCISES])
def test_every_exercise_is_in_every_place_it_needs(assignment, module, notebook, name, points):
    solution = ROOT / "solutions" / assignment / module
    defined = {n.name for n in ast.parse(solution.read_text(encoding="utf-8")).body
               if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    assert name in defined, f"{solution} defines no {name}"
    for kind in ("hidden", "public"):
        suite = ROOT / "suites" / kind / f"test_{assignment}.py"
        assert name in marked_exercises(suite), f"{suite} has no check of {name}"
    cells = grade_cells(ROOT / "solutions" / assignment / notebook)
    assert cells.get(name) == points, f"{notebook}: the grade cell of {name} gives {cells.get(name)} points, " \
                                      f"course.toml {points}"


def test_every_assignment_totals_a_hundred_points():
    assert {a["id"]: sum(a["points"].values()) for a in COURSE["assignments"]} == \
        {a["id"]: 100 for a in COURSE["assignments"]}
