"""Issue 48: the grader knows grading, the course knows attention. A second course (tests/second_course/:
layer norm and GELU, its own course.toml, solutions, hidden and public suites, two misconceptions of its
own, a forbidden call each, figures) is graded by the same grader: its solutions to full marks, its stubs to 0, its
mistakes named with its ids; `grade check`, `grade release` and `grade autograde` work in it; and nothing
under grader/ names it."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grader.config import load_course

ROOT = Path(__file__).resolve().parents[2]
SECOND = ROOT / "tests" / "second_course"
MODULE = SECOND / "solutions" / "01_normalisation" / "normalisation.py"

MISTAKES = {  # misconception -> (exercise, the reference's line, the mistaken line)
    "variance-unbiased": ("layer_norm", "var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)",
                          "var = x.var(dim=-1, keepdim=True)"),
    "gelu-tanh-approximation": ("gelu", "return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))",
                                "return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))"),
    "forbidden-op": ("gelu", "return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))",
                     "return torch.nn.functional.gelu(x)"),
    "not-vectorised": ("layer_norm", "mean = x.mean(dim=-1, keepdim=True)",
                       "mean = torch.stack([row.mean() for row in x.reshape(-1, x.shape[-1])]).reshape(*x.shape[:-1], 1)"),
}


def grade_cli(*args, cwd, env=None):
    return subprocess.run([sys.executable, "-m", "grader", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600, env={**(env or os.environ), "COLUMNS": "120", "PYTHONPATH": str(ROOT)})


@pytest.fixture(scope="module")
def second():
    return load_course(SECOND)


@pytest.fixture(scope="module")
def second_grader(second):
    from grader.grading.grader import Grader

    instance = Grader(second, device="cpu")
    yield instance
    instance.close()


def graded(second, grader, folder, seed=3, suite="hidden"):
    from grader.submission import resolve_submission

    return grader.grade(resolve_submission(folder, second), second.assignments, seed=seed, suite=suite).assignments[0]


def submission(tmp_path, text):
    folder = tmp_path / "submission" / "01_normalisation"
    folder.mkdir(parents=True)
    (folder / "normalisation.py").write_text(text)
    return tmp_path / "submission"


def test_the_second_course_declares_its_own_words_and_forbidden_calls(second):
    assert list(second.catalogue)[:2] == ["variance-unbiased", "gelu-tanh-approximation"]
    assert second.forbidden_calls("layer_norm") == ("F.layer_norm",) and second.forbidden_calls("gelu") == ("F.gelu",)
    for path in (ROOT / "grader").rglob("*.py"):  # nothing of it in the grader
        text = path.read_text()
        assert not any(word in text for word in ("variance-unbiased", "gelu-tanh", "normalisation", "layer_norm(")), path
    for path in (SECOND / "suites").rglob("*.py"):  # its suites import nothing of the grader but grader.authoring
        imports = [line for line in path.read_text().splitlines() if line.startswith(("import grader", "from grader"))]
        assert all(line.startswith("from grader.authoring import") for line in imports), (path, imports)
        assert "lesson" not in path.read_text()


@pytest.mark.parametrize("seed", [3, 2024])
def test_its_solutions_score_full_marks_and_its_stubs_nothing(second, second_grader, tmp_path, seed):
    assert graded(second, second_grader, SECOND / "solutions", seed).score == 100
    stub = MODULE.read_text().replace("### BEGIN SOLUTION", "raise NotImplementedError\n    ### BEGIN SOLUTION")
    result = graded(second, second_grader, submission(tmp_path, stub), seed)
    assert result.score == 0 and {e.status for e in result.exercises} == {"not_implemented"}


@pytest.mark.parametrize("misconception", list(MISTAKES))
def test_its_mistakes_are_named_with_its_ids(second, second_grader, tmp_path, misconception):
    exercise, right, wrong = MISTAKES[misconception]
    text = MODULE.read_text()
    assert right in text
    result = graded(second, second_grader, submission(tmp_path, text.replace(right, wrong, 1)))
    named = {e.name: e for e in result.exercises}[exercise]
    assert named.score < named.max_score and misconception in named.misconceptions, named.feedback
    if misconception != "forbidden-op" and misconception != "not-vectorised":  # its own words reach the feedback
        assert second.catalogue[misconception].explanation in named.feedback
    assert all(e.status == "passed" for e in result.exercises if e.name != exercise)


def test_a_wrong_exercise_is_drawn_from_the_course_s_own_figures(second, second_grader, tmp_path):
    """Its figures are its own (suites/figures.py, named by its course.toml): a layer_norm with the unbiased
    variance is drawn on its four tokens beside the right output; the right gelu draws nothing."""
    from grader.grading.pictures import course_pictures
    from grader.reporting.figures import valid_figure

    assert set(course_pictures(second)) == {("01_normalisation", "layer_norm"), ("01_normalisation", "gelu")}
    exercise, right, wrong = MISTAKES["variance-unbiased"]
    result = graded(second, second_grader, submission(tmp_path, MODULE.read_text().replace(right, wrong, 1)))
    named = {e.name: e for e in result.exercises}
    figure = named["layer_norm"].figure
    assert valid_figure(figure) and figure["title"].startswith("layer_norm(x, weight=ones(6)")
    assert figure["row_labels"] == [f"token {i}" for i in range(4)] and len(figure["col_labels"]) == 6
    assert all(any(row) for row in figure["differs"][:2])  # every token off by sqrt(5/6), the constant one aside
    assert named["gelu"].status == "passed" and named["gelu"].figure is None


def test_everything_in_its_suites_folder_but_the_hidden_suites_goes_to_students(tmp_path):
    """A newcomer's helpers under a name of their own (suites/rmsplus/) were left out of the distribution,
    which shipped only suites/lesson: what the public suites may import is whatever suites/ holds beside
    hidden/ and public/, under any name."""
    from grader.layout import Layout

    suites = tmp_path / "suites"
    for folder in ("hidden", "public", "rmsplus", "__pycache__", ".pytest_cache"):
        (suites / folder).mkdir(parents=True)
    for name in ("pytest.ini", "figures.py", "misconceptions.toml", ".DS_Store"):
        (suites / name).write_text("")
    shared = [p.name for p in Layout(tmp_path).shared_with_the_suites()]
    assert shared == ["figures.py", "misconceptions.toml", "pytest.ini", "rmsplus"]
    assert [p.name for p in Layout(SECOND).shared_with_the_suites()] == ["figures.py", "misconceptions.toml",
                                                                          "pytest.ini"]


@pytest.mark.slow  # three commands, each a grader of its own
def test_grade_check_release_and_autograde_work_in_it(tmp_path):
    course = tmp_path / "course"
    shutil.copytree(SECOND, course, ignore=shutil.ignore_patterns("__pycache__"))
    checked = grade_cli("check", "--submission", "solutions", "--format", "json", "--seed", "5", cwd=course)
    assert checked.returncode == 0, checked.stderr
    assert json.loads(checked.stdout)["score"] == 100
    unactivated = {**os.environ, "PATH": "/usr/bin:/bin"}  # .venv/bin/grade without the environment activated
    released = grade_cli("release", cwd=course, env=unactivated)
    assert released.returncode == 0, released.stderr
    stub = (course / "assignments" / "01_normalisation" / "normalisation.py").read_text()
    assert "NotImplementedError" in stub and "torch.erf" not in stub
    klass = tmp_path / "class"
    shutil.copytree(course / "solutions", klass / "ada")
    shutil.copytree(course / "assignments", klass / "bo")
    autograded = grade_cli("autograde", str(klass), "--out", str(tmp_path / "out"), "--seed", "5", cwd=course)
    assert autograded.returncode == 0, autograded.stderr
    scores = {name: json.loads((tmp_path / "out" / f"{name}.json").read_text())["score"] for name in ("ada", "bo")}
    assert scores == {"ada": 100, "bo": 0}
