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
    """The exercise names a suite's checks are marked with: the first argument of every ``exercise(...)``
    call and of a test function's decorators (``@exercise(MHA)``, ``@kernel_free("...")``), or on its parameters (``pytest.param(name,
    marks=exercise(name))`` in a comprehension over names), read from the source."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    constants = {target.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
                 and isinstance(node.value, ast.Constant) for target in node.targets if isinstance(target, ast.Name)}
    for node in tree.body:  # MHA, GQA, SWA = "...", "...", "..."
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Tuple) and isinstance(node.value, ast.Tuple):
            constants.update({t.id: v.value for t, v in zip(node.targets[0].elts, node.value.elts)
                              if isinstance(t, ast.Name) and isinstance(v, ast.Constant)})
    looped = {}  # a comprehension's variable -> the names it runs over
    for node in ast.walk(tree):
        if isinstance(node, ast.comprehension) and isinstance(node.target, ast.Name) \
                and isinstance(node.iter, (ast.Tuple, ast.List)):
            looped[node.target.id] = node.iter.elts

    def values(arg) -> set[str]:
        if isinstance(arg, ast.Constant):
            return {arg.value}
        if isinstance(arg, ast.Name) and arg.id in constants:
            return {constants[arg.id]}
        if isinstance(arg, ast.Name) and arg.id in looped:
            return set().union(*(values(element) for element in looped[arg.id]))
        return set()

    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
             and node.func.id == "exercise"]
    calls += [decorator for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)
              and node.name.startswith("test_") for decorator in node.decorator_list
              if isinstance(decorator, ast.Call)]  # the suite's own wrappers of exercise: @kernel_free("...")
    return set().union(*(values(call.args[0]) for call in calls if call.args))


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
