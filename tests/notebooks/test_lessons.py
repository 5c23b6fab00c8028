"""The lesson notebooks: they run, they define exactly the module's code, they grade like it."""
import ast
import functools
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


# Run first in every executed lesson (never saved): plt.show() first measures each figure it shows, and
# notes a label of one panel that lies over another panel (06's "query 4" under its neighbour) and two
# texts that lie over one another (06's position numbers of two pairs at the same angle). The last cell
# prints the notes; the lesson's own cells see nothing else of it.
LAYOUT_CHECK = r"""
import matplotlib.pyplot as _plt

_layout_faults = []
_plain_show = _plt.show


def _drawn_texts(ax):
    texts = [ax.title, ax._left_title, ax._right_title, *ax.texts]
    if ax.axison:
        for axis in (ax.xaxis, ax.yaxis):
            if axis.get_visible():
                texts += [axis.label] + [label for tick in axis._update_ticks() for label in (tick.label1, tick.label2)]
    return [t for t in texts if t.get_visible() and t.get_text().strip()]


def _measured_show(*args, **kwargs):
    for number in _plt.get_fignums():
        fig = _plt.figure(number)
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        title = fig._suptitle.get_text() if fig._suptitle else ""
        panels = [ax for ax in fig.axes if ax.get_visible() and ax.axison]
        texts = []
        for ax in fig.axes:
            for text in _drawn_texts(ax):
                box = text.get_window_extent(renderer).shrunk(0.8, 0.8)  # a glyph's margins may touch
                texts.append((text, box))
                for other in panels:
                    if other is not ax and box.overlaps(other.get_window_extent(renderer)):
                        _layout_faults.append(f"{title or ax.get_title()!r}: {text.get_text()!r} lies over "
                                              "another panel")
        for i, (one, box) in enumerate(texts):
            for two, other in texts[i + 1:]:
                if box.overlaps(other):
                    _layout_faults.append(f"{title or one.axes.get_title()!r}: {one.get_text()!r} lies over "
                                          f"{two.get_text()!r}")
    return _plain_show(*args, **kwargs)


_plt.show = _measured_show
"""


@functools.cache
def executed(assignment_id):
    """The solution notebook of ``assignment_id`` run top to bottom (once per test session: several tests
    read it), with LAYOUT_CHECK run first and its notes printed by a last cell (``layout_faults``)."""
    import nbformat
    from nbclient import NotebookClient

    path = ROOT / "solutions" / assignment_id / next(a.notebook for a in assignments() if a.id == assignment_id)
    notebook = nbformat.read(path, as_version=4)
    notebook.cells.insert(0, nbformat.v4.new_code_cell(LAYOUT_CHECK))
    notebook.cells.append(nbformat.v4.new_code_cell("import json\nprint(json.dumps(_layout_faults))"))
    NotebookClient(notebook, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    return notebook


def layout_faults(notebook) -> list[str]:
    return json.loads(notebook.cells[-1].outputs[0]["text"])


@pytest.mark.slow
@pytest.mark.parametrize("assignment", assignments(), ids=lambda a: a.id)
def test_the_solution_notebook_runs_top_to_bottom(assignment):
    notebook = executed(assignment.id)
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


# The sections (markdown headings, any level, as written after the #s) that must show figures, and how many:
# the diagrams drawn by the lessons' own code cells (issue 36). A figure moved to another section, or lost, fails.
FIGURES = {
    "01_attention_basics": {"1. Scores for one query": 1, "6. From loops to matrix products": 1,
                            "7. Simplified self-attention": 2},
    "02_self_attention": {"1. Queries, keys and values": 1, "Why divide by $\\sqrt{d_k}$?": 1,
                          "What training does to the weights": 1, "5. Cross-attention": 1},
    "03_causal_attention": {"1. Hiding the future": 2, "4. Padding": 2, "Dropout on the attention weights": 1},
    "04_multi_head_attention": {"The tempting shortcut, and why it is wrong": 1,
                                "4. Looking inside: per-head weights, the scale, and `out_proj`": 1,
                                "5. Fused QKV": 1},
    "05_efficient_attention": {"By hand: $x = [1, 3, 2, 5, 0, 4]$ in blocks of 2": 1, "3. Flash attention": 1,
                               "Causal attention: skipping the future": 1, "4. Time and memory": 1},
    "06_decoding_attention": {"1. Rotary positions": 1, "Scores depend on the distance": 1,
                              "Where the queries of a cached call sit": 1, "What the cache saves": 1,
                              "3. Grouped-query attention": 1, "How many keys a cached call attends: `window + T - 1`": 1,
                              "Cache memory, compared": 1},
}


def images_per_section(notebook):
    """heading -> the number of ``image/png`` outputs of the code cells after it, up to the next heading."""
    heading, counts = None, {}
    for cell in notebook["cells"]:
        if cell["cell_type"] == "markdown":
            for line in "".join(cell["source"]).splitlines():
                if line.startswith("#"):
                    heading = line.lstrip("#").strip()
                    counts.setdefault(heading, 0)
        elif cell["cell_type"] == "code":
            counts[heading] = counts.get(heading, 0) + sum(
                "image/png" in output.get("data", {}) for output in cell.get("outputs", []))
    return counts


def test_every_lesson_names_the_sections_of_its_figures():
    assert set(FIGURES) == {a.id for a in assignments()}
    for assignment in assignments():
        notebook = json.loads(source_notebook(assignment).read_text())
        headings = images_per_section(notebook)
        assert set(FIGURES[assignment.id]) <= set(headings), set(FIGURES[assignment.id]) - set(headings)


def test_every_lesson_draws_at_least_three_figures_and_the_drawings_learners_asked_for():
    """Issue 46: 04 had two figure sections and its fused [q|k|v] layout in ASCII; the learner asked for
    drawings of where dropout sits (03), that layout (04) and flash attention's running state (05)."""
    assert all(sum(wanted.values()) >= 3 for wanted in FIGURES.values()), FIGURES
    asked = {"03_causal_attention": "Dropout on the attention weights", "04_multi_head_attention": "5. Fused QKV",
             "05_efficient_attention": "3. Flash attention"}
    for assignment_id, heading in asked.items():
        assert FIGURES[assignment_id].get(heading), (assignment_id, heading)
    fused = next(c for c in json.loads(source_notebook(next(a for a in assignments()
                                                            if a.id == "04_multi_head_attention")).read_text())["cells"]
                 if "".join(c["source"]).startswith("## 5. Fused QKV"))
    assert "[ queries (chan) | keys (chan) | values (chan) ]" not in "".join(fused["source"])  # drawn, not ASCII


def test_05_says_why_pytorchs_attention_is_slower_than_the_plain_formula_in_its_timing_plot():
    """Issue 46: on a CPU, F.scaled_dot_product_attention on [B, T, d] falls back to its "math" path and lay
    above the plain formula in 05's timing plot, with no word on it; the plot now times it with a head
    axis too, and the text says why the two differ."""
    cells = json.loads(source_notebook(next(a for a in assignments() if a.id == "05_efficient_attention"))
                       .read_text())["cells"]
    at = next(i for i, c in enumerate(cells) if c.get("id") == "demo_timing")
    timing, said = "".join(cells[at]["source"]), "".join(cells[at + 1]["source"])
    assert "q[:, None]" in timing and '"F.sdpa on [B, T, d]"' in timing and '"F.sdpa on [B, 1, T, d]"' in timing
    for words in ("[B, H, T, d]", '"math" path', "*above* the plain formula", "head axis"):
        assert words in said, words


@pytest.mark.slow
@pytest.mark.parametrize("assignment", assignments(), ids=lambda a: a.id)
def test_no_figure_puts_a_label_over_another_panel_or_another_label(assignment):
    """Issue 46: two of 06's figures clipped their labels (a panel's query labels under its neighbour, the
    position numbers of two pairs drawn over one another)."""
    assert layout_faults(executed(assignment.id)) == []


def test_images_are_counted_per_section():
    def markdown(text):
        return {"cell_type": "markdown", "source": text}

    def code(*outputs):
        return {"cell_type": "code", "source": "", "outputs": [{"data": {kind: ""}} for kind in outputs]}

    notebook = {"cells": [markdown("# Title"), code("text/plain"), markdown("## 1. One\n\n### 1a"),
                          code("image/png"), code("image/png", "text/plain"), markdown("## 2. Two"), code()]}
    assert images_per_section(notebook) == {"Title": 0, "1. One": 0, "1a": 2, "2. Two": 0}


@pytest.mark.slow
@pytest.mark.parametrize("assignment", assignments(), ids=lambda a: a.id)
def test_the_lesson_draws_its_figures_in_their_sections(assignment):
    counts = images_per_section(executed(assignment.id))
    missing = {heading: f"{counts.get(heading, 0)} of {wanted}" for heading, wanted in FIGURES[assignment.id].items()
               if counts.get(heading, 0) < wanted}
    assert not missing, f"{assignment.notebook}: sections without their figures (drawn of wanted): {missing}"


def test_check_says_when_grade_check_takes_the_module(tmp_path):
    from grader.notebook_checks import module_wins

    module = tmp_path / "lesson.py"
    module.write_text("def softmax(x):\n    return x * 2\n")
    written = "def softmax(x):\n    return x + 1\n"
    note = module_wins(module, "softmax", ["", "import torch", written])  # the kernel's history: In[0] is empty
    assert note and "lesson.py" in note and "softmax" in note and note.count("\n") == 0
    assert module_wins(module, "softmax", ["", "def softmax(x):\n    return x * 2\n"]) is None  # the same code
    module.write_text('def softmax(x):\n    """Doc."""\n    raise NotImplementedError("not yet")\n')
    assert module_wins(module, "softmax", ["", written]) is None  # the released stub: the notebook is graded
    assert module_wins(tmp_path / "missing.py", "softmax", ["", written]) is None


def test_a_notebook_submission_grades_like_the_module(course, grader, released):
    from grader.submission import resolve_submission

    assignment = course.assignment("02_self_attention")
    chosen = (assignment,)
    as_notebook = grader.grade(resolve_submission(source_notebook(assignment), course), chosen, seed=9)
    as_module = grader.grade(resolve_submission(ROOT / "solutions" / assignment.id / assignment.module, course),
                             chosen, seed=9)
    assert as_notebook.score == as_module.score == 100
    stub = grader.grade(resolve_submission(released / assignment.id / assignment.notebook, course), chosen, seed=9)
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
