"""check(): a notebook's graded cell grades the kernel's code like `grade check` grades a file."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grader.errors import UsageError
from grader.inside.notebook_source import history_notebook
from grader.platforms.notebook_grading import assignment_of, describe, grade_cells, write_submission
from grader.notebook_checks import check, defines

ROOT = Path(__file__).resolve().parents[2]
CHECK_CELL = 'from grader.notebook_checks import check\n\ncheck("softmax")'


def test_history_keeps_the_numbering_and_drops_the_graded_cells_and_what_did_not_parse():
    cells = ["", "import torch", "def f(:\n    pass", CHECK_CELL, "%time x = 1\ndef g():\n    return 2",
             "import grader.notebook_checks as gc\ndef sneaky():\n    pass"]
    notebook = history_notebook(cells)
    sources = [cell["source"] for cell in notebook["cells"]]
    assert sources == ["import torch", "", "", cells[4], ""]  # cell n is In[n]
    assert notebook["nbformat"] == 4 and all(c["cell_type"] == "code" for c in notebook["cells"])
    assert defines(cells, "g") and not defines(cells, "f") and not defines(cells, "sneaky")


def test_the_history_grades_like_the_same_code_as_a_notebook_file_and_as_a_module(course, grader, tmp_path):
    from grader.submission import resolve_submission

    assignment = course.assignment("01_attention_basics")
    module = (ROOT / "solutions" / assignment.id / assignment.module).read_text()
    wrong = module.replace("return exp / total.clamp_min(1.0)", "return exp / total")  # all -inf slice: NaN
    assert wrong != module
    (tmp_path / "module").mkdir()
    (tmp_path / "module" / assignment.module).write_text(wrong)
    cells = ["", wrong, CHECK_CELL]
    (tmp_path / "notebook").mkdir()
    notebook = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                           "source": source} for source in cells[1:]], "metadata": {}, "nbformat": 4,
                "nbformat_minor": 5}
    (tmp_path / "notebook" / assignment.notebook).write_text(json.dumps(notebook))
    files = [grader.grade(resolve_submission(path, course), (assignment,), seed=3)  # (the session's grader:
             for path in (tmp_path / "module" / assignment.module, tmp_path / "notebook" / assignment.notebook)]
    kernel = grade_cells(course, assignment, "softmax", cells, cwd=tmp_path, seed=3, grader=grader)  # then this)
    [softmax] = kernel.assignments[0].exercises
    assert softmax.name == "softmax" and 0 < softmax.score < 25
    for whole in files:
        same = next(e for e in whole.assignments[0].exercises if e.name == "softmax")
        assert (same.score, same.status, same.misconceptions, same.feedback) == (
            softmax.score, softmax.status, softmax.misconceptions, softmax.feedback)
    text = describe(softmax, kernel)
    assert text.startswith(f"softmax: {softmax.score:g}/25 points, failed") and "seed 3" in text


def test_sibling_assignments_beside_the_kernel_folder_go_along(course, tmp_path):
    students = tmp_path / "assignments"
    (students / "03_causal_attention").mkdir(parents=True)
    (students / "03_causal_attention" / "causal_attention.py").write_text("x = 1\n")
    (students / "04_multi_head_attention").mkdir()
    here = students / "04_multi_head_attention"
    (here / "multi_head_attention.ipynb").write_text("{}")  # the kernel's own notebook: the history stands for it
    root = write_submission(course, course.assignment("04_multi_head_attention"), ["", "y = 2"], here,
                            tmp_path / "out")
    assert (root / "03_causal_attention" / "causal_attention.py").read_text() == "x = 1\n"
    written = json.loads((root / "04_multi_head_attention" / "multi_head_attention.ipynb").read_text())
    assert [c["source"] for c in written["cells"]] == ["y = 2"]
    assert sorted(p.name for p in root.iterdir()) == ["03_causal_attention", "04_multi_head_attention"]


def test_an_unknown_exercise_and_a_call_outside_a_kernel_are_usage_errors(course, tmp_path):
    assert assignment_of(course, "CausalAttention", tmp_path).id == "03_causal_attention"
    with pytest.raises(UsageError, match="no assignment of this course has an exercise 'softmx'"):
        assignment_of(course, "softmx", tmp_path)
    with pytest.raises(UsageError, match="notebook cell"):
        check("softmax")


def test_grading_from_a_kernel_leaves_its_imports_path_threads_and_random_state_as_they_were(tmp_path):
    """The grading process imports the reference; the kernel must not keep it importable by name, and
    the grader must find it again at the next check (04's reference imports causal_attention by name)."""
    import shutil

    (tmp_path / "03_causal_attention").mkdir()
    shutil.copy(ROOT / "solutions" / "03_causal_attention" / "causal_attention.py", tmp_path / "03_causal_attention")
    (tmp_path / "04_multi_head_attention").mkdir()
    mha = (ROOT / "solutions" / "04_multi_head_attention" / "multi_head_attention.py").read_text()
    script = f"""
import sys, torch
from pathlib import Path
from grader.config import load_course
from grader.platforms.notebook_grading import grade_cells
course = load_course(Path({str(ROOT)!r}))
torch.set_num_threads(3); torch.manual_seed(5)
own = sys.modules["attention_basics"] = type(sys)("attention_basics")  # the student's own module of that name
mine = sys.modules["causal_attention"] = type(sys)("causal_attention")  # the kernel imported the student's 03
before_path, before_rng, before_modules = list(sys.path), torch.get_rng_state(), dict(sys.modules)
result = grade_cells(course, course.assignment("01_attention_basics"), "softmax_naive",
                     ["", "import torch\\ndef softmax_naive(x, dim=-1):\\n    e = torch.exp(x)\\n"
                          "    return e / e.sum(dim=dim, keepdim=True)"], cwd=Path.cwd(), seed=1, device="cpu")
assert result.score == 10, result.assignments[0].exercises[0].feedback
assert sys.modules["attention_basics"] is own
leaked = [n for n, m in sys.modules.items() if "/solutions/" in (getattr(m, "__file__", None) or "")
          or "/suites/" in (getattr(m, "__file__", None) or "")]
assert leaked == [], leaked
assert sys.path == before_path and torch.get_num_threads() == 3 and torch.equal(torch.get_rng_state(), before_rng)
for attempt in range(2):  # the worker imports the sibling from the submission, never the kernel's module
    result = grade_cells(course, course.assignment("04_multi_head_attention"), "MultiHeadAttentionWrapper",
                         ["", {mha!r}], cwd=Path({str(tmp_path / "04_multi_head_attention")!r}), seed=2,
                         device="cpu")
    assert result.score == 15, result.assignments[0].exercises[0].feedback
    assert sys.modules["causal_attention"] is mine and sys.modules["attention_basics"] is own
assert [name for name, module in before_modules.items() if sys.modules.get(name) is not module] == []
import os
from grader.platforms.notebook_grading import _GRADERS
[grader] = _GRADERS.values()  # its zygote writes nowhere a kernel would forward to the cell
fds = [os.readlink(f"/proc/{{grader.zygote.process.pid}}/fd/{{fd}}") for fd in (1, 2)]
assert fds == [os.devnull, str(grader.zygote.log)], fds  # the zygote's own errors go to its log file
assert os.readlink("/proc/self/fd/2") != os.devnull
print("untouched")
"""
    kernel_folder = ROOT / "solutions" / "01_attention_basics"  # where the instructor's lesson kernel runs
    done = subprocess.run([sys.executable, "-c", script], cwd=kernel_folder, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "untouched", done.stderr[-2000:]
    assert done.stderr == ""  # nbgrader would give no points to a cell that wrote to stderr


@pytest.mark.slow
def test_in_a_student_distribution_the_kernel_grades_with_the_public_suite_like_grade_check(course, tmp_path):
    """Run where a student runs it: in the distribution, with the distribution's own grader package."""
    from grader.course.distribution import write_distribution

    out = tmp_path / "attention-course"
    write_distribution(course, (course.assignment("01_attention_basics"),), out)
    module = (ROOT / "solutions" / "01_attention_basics" / "attention_basics.py").read_text()
    wrong = module.replace("return exp / total.clamp_min(1.0)", "return exp / total")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "attention_basics.py").write_text(wrong)
    script = f"""
import json
from pathlib import Path
import grader
from grader.config import load_course
from grader.platforms.notebook_grading import grade_cells, _grader
from grader.submission import resolve_submission
assert Path(grader.__file__).parent == Path({str(out / "grader")!r})
course = load_course(Path.cwd().parent.parent)
assignment = course.assignment("01_attention_basics")
found = {{}}
for exercise in ("softmax", "attention_scores"):
    kernel = grade_cells(course, assignment, exercise, ["", {wrong!r}], cwd=Path.cwd())
    whole = _grader(course, "auto").grade(resolve_submission(Path({str(tmp_path / "mine" / "attention_basics.py")!r}),
                                                              course), (assignment,))
    [graded] = kernel.assignments[0].exercises
    same = next(e for e in whole.assignments[0].exercises if e.name == exercise)
    found[exercise] = [kernel.seed, graded.score, graded.feedback, whole.seed, same.score, same.feedback]
print(json.dumps(found))
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=out / "assignments" / "01_attention_basics",
                          env={**os.environ, "PYTHONPATH": str(out)}, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout)
    for exercise, (seed, score, feedback, whole_seed, whole_score, whole_feedback) in found.items():
        assert (seed, score, feedback) == (whole_seed, whole_score, whole_feedback), exercise
    assert found["attention_scores"][1] == 15 and 0 < found["softmax"][1] < 25, found


def test_a_kernel_that_already_uses_cuda_grades_on_the_cpu(monkeypatch):
    import torch

    from grader.errors import DeviceError
    from grader.platforms.notebook_grading import kernel_device

    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: False)
    assert kernel_device("auto") == "auto" and kernel_device("cuda") == "cuda"
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)  # workers forked now could not use CUDA
    assert kernel_device("auto") == "cpu" and kernel_device("cpu") == "cpu"
    with pytest.raises(DeviceError, match="restart the kernel"):
        kernel_device("cuda")


def test_the_zygote_leaves_out_the_students_modules_but_not_the_grader_nor_a_virtualenv(course, monkeypatch):
    import types

    from grader.platforms.notebook_grading import _students_modules

    monkeypatch.chdir(course.root / "assignments" / "04_multi_head_attention")
    planted = {"causal_attention": "/anywhere/causal_attention.py",  # a course module name, from anywhere
               "helpers_of_mine": str(course.root / "assignments" / "04_multi_head_attention" / "helpers.py"),
               "venv_package": str(course.root / ".venv" / "lib" / "site-packages" / "venv_package.py")}
    for name, file in planted.items():
        module = types.ModuleType(name)
        module.__file__ = file
        monkeypatch.setitem(sys.modules, name, module)
    found = _students_modules(course)
    assert {"causal_attention", "helpers_of_mine"} <= set(found)
    assert "venv_package" not in found and not [n for n in found if n.split(".")[0] in ("grader", "torch", "sys")]


def test_a_notebook_whose_function_uses_a_constant_of_another_cell_gets_full_marks(course, grader, tmp_path):
    """SHIFT = 0.0 in a cell of its own, used by softmax: kept (issue 12), not a NameError and 0."""
    from grader.submission import resolve_submission

    assignment = course.assignment("01_attention_basics")
    module = (ROOT / "solutions" / assignment.id / assignment.module).read_text()
    line = "x_max = torch.where(torch.isinf(x_max), torch.zeros_like(x_max), x_max)"
    uses = module.replace(line, line + " + SHIFT")
    assert uses != module
    cells = ["import torch\nSHIFT = 0.0  # kept: a constant", uses, "demo = softmax(torch.ones(3))  # dropped"]
    notebook = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                           "source": source} for source in cells], "metadata": {}, "nbformat": 4,
                "nbformat_minor": 5}
    (tmp_path / assignment.notebook).write_text(json.dumps(notebook))
    result = grader.grade(resolve_submission(tmp_path / assignment.notebook, course), (assignment,), seed=3)
    assert result.score == 100, [e.feedback for e in result.assignments[0].exercises if e.status != "passed"]


WRONG_CELLS = '''
import torch

def attention_weights(queries, keys, mask=None):
    scores = queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5
    return torch.softmax(scores, dim=0)  # the wrong dimension

def causal_mask(num_tokens, device=None):
    return torch.tril(torch.ones(num_tokens, num_tokens, dtype=torch.bool, device=device), diagonal=-1)  # inverted

def merge_heads(x):
    batch, heads, tokens, head_dim = x.shape
    return x.reshape(batch, tokens, heads * head_dim)  # without the transpose

def split_heads(x, num_heads):
    batch, tokens, dim = x.shape
    if dim % num_heads:
        raise ValueError("the features do not split evenly into heads")
    return x.reshape(batch, tokens, num_heads, dim // num_heads).transpose(1, 2)
'''


@pytest.mark.slow
def test_check_draws_a_wrong_exercise_beside_the_right_one_and_nothing_for_a_right_one(tmp_path):
    """Issue 36: a wrong attention_weights, causal mask and head merge each get an image/png output from
    check() (their weights beside the right ones on the lesson's data); a right split_heads gets none."""
    import nbformat
    from nbclient import NotebookClient

    course = tmp_path / "course"
    course.mkdir()
    shutil.copy(ROOT / "course.toml", course)
    for folder in ("suites", "solutions"):
        shutil.copytree(ROOT / folder, course / folder, ignore=shutil.ignore_patterns("__pycache__", "*.ipynb"))
    work = course / "work" / "02_self_attention"
    work.mkdir(parents=True)
    exercises = ("attention_weights", "causal_mask", "merge_heads", "split_heads")
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(WRONG_CELLS)] + [
        nbformat.v4.new_code_cell(f'from grader.notebook_checks import check\n\ncheck("{name}")') for name in exercises])
    NotebookClient(notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(work)}}).execute()
    images, texts = {}, {}
    for name, cell in zip(exercises, notebook.cells[1:]):
        images[name] = [o["data"]["image/png"] for o in cell.outputs if "image/png" in o.get("data", {})]
        texts[name] = "".join(o.get("text", "") for o in cell.outputs)
        assert not [o for o in cell.outputs if o.get("name") == "stderr" or o.get("output_type") == "error"], name
    assert {name: len(found) for name, found in images.items()} == {
        "attention_weights": 1, "causal_mask": 1, "merge_heads": 1, "split_heads": 0}, texts
    assert all(", failed" in texts[name] for name in exercises[:3]) and "split_heads: 15/15" in texts["split_heads"]
    import base64
    import io

    from PIL import Image

    for name in ("attention_weights", "causal_mask", "merge_heads"):
        image = Image.open(io.BytesIO(base64.b64decode(images[name][0])))
        assert image.format == "PNG" and image.width > 2 * image.height > 200, name


def test_a_refusal_in_a_notebook_is_one_line_naming_what_the_notebook_set(monkeypatch, tmp_path):
    """Issue 35, a newcomer's run: check() with GRADE_DEVICE=cuda and no GPU showed a traceback through
    the grader's files, naming --device, a flag the notebook's user never typed; GRADE_SEED=abc named
    --seed."""
    from grader.config import load_course, parse_seed
    from grader.errors import DeviceError, UsageError
    from grader.platforms import notebook_grading

    with pytest.raises(UsageError, match="GRADE_SEED must be a whole number") as refused:
        parse_seed("abc", "GRADE_SEED")
    assert refused.value._render_traceback_() == ["UsageError: GRADE_SEED must be a whole number, not 'abc'"]

    def no_gpu(course, device):
        raise DeviceError(f"--device {device}: no CUDA device is available on this machine (use --device cpu or auto)")

    monkeypatch.setattr(notebook_grading, "_grader", no_gpu)
    monkeypatch.setenv("GRADE_DEVICE", "cuda")
    course = load_course(ROOT)
    with pytest.raises(DeviceError) as refused:
        notebook_grading.grade_cells(course, course.assignment("01_attention_basics"), "softmax", [],
                                     cwd=tmp_path)
    assert refused.value._render_traceback_() == [
        "DeviceError: GRADE_DEVICE=cuda: no CUDA device is available on this machine (set GRADE_DEVICE to cpu or auto)"]


def _with_softmax_from_the_module(course, tmp_path, module_text):
    """A kernel's folder holding the assignment's module (``module_text``), and the history of a notebook
    whose cells import softmax from it, write the rest, and use softmax (issue 46)."""
    import ast

    assignment = course.assignment("01_attention_basics")
    solution = (ROOT / "solutions" / assignment.id / assignment.module).read_text()
    rest = "\n\n".join(ast.get_source_segment(solution, node) for node in ast.parse(solution).body
                       if isinstance(node, ast.FunctionDef) and node.name != "softmax")
    here = tmp_path / "assignments" / assignment.id
    here.mkdir(parents=True)
    (here / assignment.module).write_text(module_text)
    cells = ["", "import torch\nfrom attention_basics import softmax", rest, CHECK_CELL]
    return assignment, here, cells


def test_a_kernel_that_imports_its_modules_function_grades_it_as_the_module_does(course, grader, tmp_path):
    """Issue 46: ``from attention_basics import softmax`` in a notebook beside its module gave check()
    0 points, "importing your module failed" (the history was graded alone, and imported itself). The
    import now gets the module beside the kernel, as the kernel got it: check() grades the module's
    softmax as `grade check` on the folder does, and the notebook's own functions beside it."""
    from grader.submission import resolve_submission

    solution = (ROOT / "solutions" / "01_attention_basics" / "attention_basics.py").read_text()
    wrong = solution.replace("return exp / total.clamp_min(1.0)", "return exp / total")  # all -inf slice: NaN
    assert wrong != solution
    for module_text, full in ((solution, True), (wrong, False)):
        assignment, here, cells = _with_softmax_from_the_module(course, tmp_path / str(full), module_text)
        (here / assignment.notebook).write_text(json.dumps(history_notebook(cells)))
        folder = grader.grade(resolve_submission(here, course), (assignment,), seed=3)
        for exercise in ("softmax", "simple_self_attention"):
            kernel = grade_cells(course, assignment, exercise, cells, cwd=here, seed=3, grader=grader)
            [graded] = kernel.assignments[0].exercises
            same = next(e for e in folder.assignments[0].exercises if e.name == exercise)
            assert "importing your module failed" not in graded.feedback, graded.feedback
            assert (graded.score, graded.status, graded.misconceptions) == (same.score, same.status,
                                                                            same.misconceptions), exercise
            if full or exercise == "simple_self_attention":  # (right given its helper: the mistake is softmax's)
                assert graded.score == graded.max_score, graded.feedback
            else:
                assert 0 < graded.score < graded.max_score and graded.status == "failed", graded.feedback
    # a later cell that defines softmax again wins, as it does in the kernel
    assignment, here, cells = _with_softmax_from_the_module(course, tmp_path / "later", solution)
    naive = "import torch\ndef softmax(x, dim=-1):\n    return torch.exp(x) / torch.exp(x).sum(dim, keepdim=True)"
    cells = cells[:-1] + [naive, CHECK_CELL]
    [graded] = grade_cells(course, assignment, "softmax", cells, cwd=here, seed=3,
                           grader=grader).assignments[0].exercises
    assert graded.status == "failed" and "softmax-unstable" in graded.misconceptions, graded.feedback


def test_the_module_a_kernel_imports_goes_along_only_where_imported_and_never_the_reference(course, tmp_path):
    from grader.platforms.notebook_grading import kernels_module

    solution = (ROOT / "solutions" / "01_attention_basics" / "attention_basics.py").read_text()
    assignment, here, cells = _with_softmax_from_the_module(course, tmp_path, solution)
    assert kernels_module(course, assignment, cells, here) == here / assignment.module
    assert kernels_module(course, assignment, ["", "import attention_basics as ab"], here) == here / assignment.module
    assert kernels_module(course, assignment, ["", "import torch", "def softmax(x, dim=-1):\n    return x"],
                          here) is None  # not imported: the history alone, as before
    assert kernels_module(course, assignment, cells, ROOT / "solutions" / assignment.id) is None  # the reference's
    assert defines(cells, "softmax") and not defines(cells, "context_vector")  # imported counts as defined
    from grader.notebook_checks import module_wins

    assert module_wins(here / assignment.module, "softmax", cells) is None  # check() grades the module's too
    assert module_wins(here / assignment.module, "softmax", cells + ["def softmax(x, dim=-1):\n    return x"])


def test_a_kernels_module_is_read_before_what_it_computes_is_watched(course, grader, tmp_path):
    """The module the kernel imports runs in the worker, so the checks that watch the computation read
    it too (grader/grading/observable.py): a softmax computed in NumPy there earns no watched check."""
    solution = (ROOT / "solutions" / "01_attention_basics" / "attention_basics.py").read_text()
    numpy_softmax = "import numpy\n" + solution.replace("def softmax(x, dim=-1):\n",
                                                        "def softmax(x, dim=-1):\n    numpy.seterr(all='ignore')\n")
    assignment, here, cells = _with_softmax_from_the_module(course, tmp_path, numpy_softmax)
    [graded] = grade_cells(course, assignment, "softmax", cells, cwd=here, seed=3,
                           grader=grader).assignments[0].exercises
    assert graded.score < graded.max_score and "attention_basics.py line 56 uses numpy" in graded.feedback, \
        graded.feedback


@pytest.mark.slow
def test_a_notebooks_graded_cells_add_up_to_what_grade_check_gives(tmp_path):
    """Red team round 29a's N1: each graded cell grades one exercise, so a helper wrong only on the square inputs
    simple_self_attention gives it kept every case through the cells (100) where `grade check` gives the same file
    85.71 (a helper that lost nothing keeps nothing; grader.grading.charges). A cell grades its exercise beside the
    helpers its code calls, and carries what its kept cases take from them (their own cells never grade their
    users): the cells add up to `grade check`'s score."""
    from grader.config import load_course
    from grader.platforms.notebook_grading import points_of

    kept = ROOT / "tests" / "corpus" / "heldout" / "round29a_red_team"
    course = load_course(ROOT)
    assignment = course.assignment("01_attention_basics")
    for form in ("attack", "helperform"):
        source = (kept / f"N1__{form}__attention_basics.py.txt").read_text()
        cwd = tmp_path / form / "01_attention_basics"
        cwd.mkdir(parents=True)
        cells = sum(points_of(grade_cells(course, assignment, name, ["", source], cwd=cwd, seed=3)
                                .assignments[0].exercises[0]) for name in assignment.exercises)
        folder = tmp_path / form / "submission" / "01_attention_basics"
        folder.mkdir(parents=True)
        (folder / "attention_basics.py").write_text(source)
        out = tmp_path / form / "result.json"
        subprocess.run([sys.executable, "-m", "grader", "check", "01_attention_basics", "--submission",
                        str(folder.parent), "--seed", "3", "--format", "json", "--output", str(out)],
                       cwd=ROOT, capture_output=True, text=True)
        whole = json.loads(out.read_text())["score"]
        assert round(cells, 2) == whole, (form, cells, whole)
    assert whole < 100.0


@pytest.mark.slow
@pytest.mark.parametrize("case", ["M3__attack", "F1__honest"])
def test_the_cells_of_several_users_of_one_helper_add_up_to_grade_check(tmp_path, case):
    """Red team round 29b: three classes kept given one scaled_dot_product_attention, each cell seeing its own kept
    cases alone, took the helper's own loss into account once per cell (M3: 93.58 in cells against 85 by `grade
    check`; F1, honest, 76.72 against 85). Each cell now carries its share, by the points its cases kept, of what all
    the users' kept cases take, read from the notebook graded whole."""
    from grader.config import load_course
    from grader.platforms.notebook_grading import points_of

    source = (ROOT / "tests" / "corpus" / "heldout" / "round29b_red_team" / f"{case}__self_attention.py.txt").read_text()
    course = load_course(ROOT)
    assignment = course.assignment("02_self_attention")
    cwd = tmp_path / "02_self_attention"
    cwd.mkdir()
    notebook = cwd / assignment.notebook
    notebook.write_text(json.dumps({"cells": [{"cell_type": "code", "execution_count": None, "metadata": {},
                                               "outputs": [], "source": source}],
                                    "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    cells = sum(points_of(grade_cells(course, assignment, name, ["", source], cwd=cwd, seed=3)
                          .assignments[0].exercises[0]) for name in assignment.exercises)
    out = tmp_path / "result.json"
    subprocess.run([sys.executable, "-m", "grader", "check", "02_self_attention", "--submission", str(notebook),
                    "--seed", "3", "--format", "json", "--output", str(out)], cwd=ROOT, capture_output=True, text=True)
    whole = json.loads(out.read_text())["score"]
    assert abs(cells - whole) <= 0.05, (cells, whole)
    assert whole < 100.0
