"""The lesson notebooks: they run, they define exactly the module's code, they grade like it."""
import ast
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def assignments():
    from grader.config import load_course

    return load_course(ROOT).assignments


def source_notebook(assignment):
    return ROOT / "solutions" / assignment.id / assignment.notebook


def definitions(tree):
    return {node.name: ast.dump(node) for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}


@pytest.mark.parametrize("assignment", assignments(), ids=lambda a: a.id)
def test_the_notebook_defines_exactly_the_module_code(assignment):
    module = definitions(ast.parse((ROOT / "solutions" / assignment.id / assignment.module).read_text()))
    notebook = json.loads(source_notebook(assignment).read_text())
    cells = {}
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            source = "".join(cell["source"])
            if not source.lstrip().startswith(("%", "!")):
                cells.update(definitions(ast.parse(source)))
    for name in assignment.exercises:
        assert name in cells, f"{assignment.notebook} does not define {name}"
        assert cells[name] == module[name], f"{name} differs between {assignment.notebook} and {assignment.module}"


@pytest.mark.parametrize("assignment", assignments(), ids=lambda a: a.id)
def test_autograded_cells_carry_the_course_points(assignment):
    notebook = json.loads(source_notebook(assignment).read_text())
    points = {}
    for cell in notebook["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("grade"):
            points[meta["grade_id"].removeprefix("test_")] = meta["points"]
    assert points == dict(assignment.points)


@pytest.mark.parametrize("assignment", assignments(), ids=lambda a: a.id)
def test_graded_cells_call_the_grader_and_the_notebook_holds_no_test_code(assignment):
    """The graded cell's score is the grader's partial credit; asserts live in ungraded example cells."""
    notebook = json.loads(source_notebook(assignment).read_text())
    graded = {}
    for cell in notebook["cells"]:
        source = "".join(cell["source"])
        assert "BEGIN HIDDEN TESTS" not in source
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("grade"):
            graded[meta["grade_id"]] = source
            assert cell["cell_type"] == "code" and meta.get("locked") and not meta.get("solution")
    assert graded == {f"test_{name}": f'from grader.notebook_checks import check\n\ncheck("{name}")'
                      for name in assignment.exercises}


@pytest.mark.slow
@pytest.mark.parametrize("assignment", assignments(), ids=lambda a: a.id)
def test_the_solution_notebook_runs_top_to_bottom(assignment):
    import nbformat
    from nbclient import NotebookClient

    path = source_notebook(assignment)
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(notebook, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    errors = [o for c in notebook.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert errors == []
    earned = {}  # what nbgrader reads from each graded cell: its value, and nothing on stderr
    for cell in notebook.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade"):
            assert not [o for o in cell.outputs if o.get("name") == "stderr"], cell.outputs
            value = [o for o in cell.outputs if o.output_type == "execute_result"]
            earned[meta["grade_id"].removeprefix("test_")] = float(value[0].data["text/plain"])
    assert earned == dict(assignment.points)


def test_a_notebook_submission_grades_like_the_module(course, grader):
    from grader.submission import resolve_submission

    assignment = course.assignment("02_self_attention")
    chosen = (assignment,)
    as_notebook = grader.grade(resolve_submission(source_notebook(assignment), course), chosen, seed=9)
    as_module = grader.grade(resolve_submission(ROOT / "solutions" / assignment.id / assignment.module, course),
                             chosen, seed=9)
    assert as_notebook.score == as_module.score == 100
    released = ROOT / "assignments" / assignment.id / assignment.notebook
    stub = grader.grade(resolve_submission(released, course), chosen, seed=9)
    assert stub.score == 0 and {e.status for e in stub.assignments[0].exercises} == {"not_implemented"}


def test_the_wrapper_imports_a_sibling_assignment_submitted_as_a_notebook(course, grader, tmp_path):
    import shutil

    from grader.submission import resolve_submission

    for assignment_id in ("03_causal_attention", "04_multi_head_attention"):
        assignment = course.assignment(assignment_id)
        (tmp_path / assignment_id).mkdir()
        shutil.copy(source_notebook(assignment), tmp_path / assignment_id)
    result = grader.grade(resolve_submission(tmp_path, course), (course.assignment("04_multi_head_attention"),),
                          seed=4)
    wrapper = next(e for e in result.assignments[0].exercises if e.name == "MultiHeadAttentionWrapper")
    assert wrapper.status == "passed", wrapper.feedback
