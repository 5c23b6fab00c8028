"""The docs' recipes, run as written: every shell block of docs/instructors.md and docs/students.md that the
page marks `<!-- runnable -->` (or `<!-- runnable: exit N -->`, for a block that ends in a score short of
full marks), in the page's order, each from the root of one scratch copy of the course that holds a class
of three (the way .ci/run runs the README's Quickstart)."""
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUNNABLE = re.compile(r"^<!-- runnable(?:: exit (\d+))? -->\n```sh\n(.*?)^```", re.S | re.M)
COURSE = ("course.toml", "pyproject.toml", "README.md", "nbgrader_config.py", "grader", "solutions", "suites",
          "templates")  # and assignments/ as release writes them (the released fixture), never the live ones
STUDENTS = ("ada", "bo", "cy")
# the blocks each page marks today: a marker lost in an edit fails here, never silently
MARKED = {"instructors.md": 5, "students.md": 1}


def runnable_blocks(page: str) -> list[tuple[int, str]]:
    return [(int(code or 0), block) for code, block in RUNNABLE.findall((ROOT / "docs" / page).read_text())]


def scratch_course(folder: Path, released: Path) -> Path:
    """A copy of the course (never the checkout itself: a recipe may write anywhere in it) and a class of
    three in submissions/ and submitted/, each student's folder the reference modules."""
    course = folder / "course"
    course.mkdir()
    for name in COURSE:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, course / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(source, course / name)
    shutil.copytree(released, course / "assignments")
    shutil.copy(ROOT / "assignments" / ".grade-release.sha256", course / "assignments")  # the committed record
    for klass in ("submissions", "submitted"):
        for student in STUDENTS:
            shutil.copytree(ROOT / "solutions", course / klass / student,
                            ignore=shutil.ignore_patterns("*.ipynb", "__pycache__"))
    return course


def run_page(page: str, tmp_path: Path, released: Path) -> tuple[Path, list[subprocess.CompletedProcess]]:
    blocks = runnable_blocks(page)
    assert len(blocks) == MARKED[page], [b for _, b in blocks]
    course = scratch_course(tmp_path, released)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}  # this install's grade
    ran = []
    for expected, block in blocks:
        done = subprocess.run(["bash", "-eo", "pipefail", "-c", block], cwd=course, capture_output=True, text=True,
                              timeout=300, env=env)
        assert done.returncode == expected, (page, block, done.stdout[-1500:], done.stderr[-3000:])
        assert "Traceback" not in done.stderr, (page, block, done.stderr[-3000:])
        ran.append(done)
    return course, ran


def test_the_marked_blocks_are_found_and_each_is_a_recipe_of_its_own():
    for page, count in MARKED.items():
        blocks = runnable_blocks(page)
        assert len(blocks) == count, (page, blocks)
        assert all(block.strip() and not block.lstrip().startswith("$") for _, block in blocks)  # commands, as typed


@pytest.mark.slow  # the class graded six times, a student distribution and its wheel, the report
def test_the_instructors_runnable_recipes_run_as_written(tmp_path, released):
    course, _ = run_page("instructors.md", tmp_path, released)
    assert sorted(p.stem for p in (course / "class").glob("*.json")) == sorted(STUDENTS)
    assert (course / "report.html").read_text().startswith("<!DOCTYPE html>")
    assert zipfile.ZipFile(course / "week1-autograder.zip").getinfo("setup.sh")
    dist = tmp_path / "attention-student" / "dist"
    wheel = dist / "attention_pytorch-0.1.0-py3-none-any.whl"  # the name the recipe says it builds
    assert "grader/_course/course.toml" in zipfile.ZipFile(wheel).namelist()
    assert "assignments/01_attention_basics/attention_basics.ipynb" in zipfile.ZipFile(dist / "assignments.zip").namelist()
    # the wheel grades a student's module with no checkout about (installed here with --target: no venv to build)
    target, work = tmp_path / "installed", tmp_path / "work"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(wheel)],
                   check=True, timeout=300)
    work.mkdir()
    shutil.copy(ROOT / "solutions" / "01_attention_basics" / "attention_basics.py", work)
    checked = subprocess.run([sys.executable, "-m", "grader", "check"], cwd=work, capture_output=True, text=True,
                             timeout=300, env={**os.environ, "PYTHONPATH": str(target), "COLUMNS": "120"})
    assert checked.returncode == 0 and "100/100" in checked.stdout, (checked.stdout, checked.stderr)


@pytest.mark.slow  # a grading
def test_the_students_runnable_recipes_run_as_written(tmp_path, released):
    _, (first,) = run_page("students.md", tmp_path, released)
    assert "01_attention_basics" in first.stdout and "not attempted" in first.stdout, first.stdout


def test_the_nbgrader_recipe_autogrades_the_week_that_nbgrader_grades():
    """Without --assignment, `grade autograde` grades every assignment: a week's notebook scored out of 600."""
    section = (ROOT / "docs" / "instructors.md").read_text().split("## Notebooks and nbgrader", 1)[1].split("\n## ")[0]
    (block,) = re.findall(r"^```sh\n(.*?)^```", section, re.S | re.M)
    weeks = set(re.findall(r"^nbgrader (?:generate_assignment|autograde|generate_feedback) (\S+)", block, re.M))
    ours = [line for line in block.splitlines() if line.startswith("grade autograde")]
    assert len(weeks) == 1 and ours, block
    assert all(f"--assignment {next(iter(weeks))}" in line for line in ours), ours


def test_every_page_and_template_makes_its_venv_with_python3():
    """Stock Debian and Ubuntu have `python3` and no `python`: the student README said `python -m venv`, which
    fails there at the first step (issue 45). Every command shown (a page's code blocks, every template)."""
    shown = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "templates").rglob("*"))]:
        if not page.is_file():
            continue
        text = page.read_text(encoding="utf-8")
        blocks = re.findall(r"^```.*?\n(.*?)^```", text, re.S | re.M) if page.suffix == ".md" else [text]
        shown += [(page.relative_to(ROOT), line) for block in blocks for line in block.splitlines()]
    assert any("python3 -m venv" in line for _, line in shown)  # the blocks are found (docs/students.md's)
    told = [f"{page}: {line.strip()}" for page, line in shown if re.search(r"(?:^|[\s;&|(])python -m venv", line)]
    assert not told, told
