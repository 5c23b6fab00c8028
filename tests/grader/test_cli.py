"""The `grade` command as users run it: exit codes, one-line errors, reports on disk."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from grader.cli import cli

ROOT = Path(__file__).resolve().parents[2]


def grade(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "grader", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "COLUMNS": "120"})


def test_help_and_version_do_not_import_torch():
    code = ("import sys; from click.testing import CliRunner; from grader.cli import cli; "
            "r = CliRunner().invoke(cli, ['--help']); assert r.exit_code == 0, r.output; "
            "assert 'torch' not in sys.modules; print(r.output)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "check" in out and "list" in out and "release" in out
    assert CliRunner().invoke(cli, ["--version"]).output.strip() == "grade, version 0.1.0"


def test_list_names_every_exercise_with_its_points(course):
    result = CliRunner().invoke(cli, ["--course", str(ROOT), "list"])
    assert result.exit_code == 0
    for assignment in course.assignments:
        assert assignment.id in result.output
        for name, points in assignment.points:
            assert any(line.split() == [name, f"{points:g}"] for line in result.output.splitlines()), name


@pytest.mark.parametrize("args,message", [
    (["check", "--submission", "no/such/path"], "no such file or folder"),
    (["check", "--submission", "README.md"], "neither a Python module"),
    (["check", "07_nope"], "unknown assignment '07_nope'"),
    (["check", "--seed", "abc"], "--seed must be a whole number"),
])
def test_a_user_mistake_is_one_line_and_exit_2(args, message):
    result = grade(*args)
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and message in result.stderr
    assert "Traceback" not in result.stderr


def test_a_broken_course_toml_is_one_line_and_exit_2(tmp_path):
    (tmp_path / "course.toml").write_text((ROOT / "course.toml").read_text().replace("memory_mb", "memroy_mb"))
    result = grade("--course", str(tmp_path), "list")
    assert result.returncode == 2 and "memroy_mb: unknown key" in result.stderr and "course.toml:13" in result.stderr


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="this machine has a GPU")
def test_device_cuda_without_a_gpu_is_one_line_and_exit_2():
    result = grade("check", "01_attention_basics", "--device", "cuda")
    assert result.returncode == 2 and "no CUDA device" in result.stderr and "Traceback" not in result.stderr


def no_gpu_driver() -> bool:
    import glob

    from grader.api import _GPU_DEVICE_FILES

    return sys.platform.startswith("linux") and not any(map(glob.glob, _GPU_DEVICE_FILES))


@pytest.mark.skipif(not no_gpu_driver(), reason="a GPU driver's device file is here: torch decides, as it should")
def test_autograde_of_a_missing_path_and_cuda_without_a_gpu_fail_at_once_in_one_line(tmp_path):
    """Each took ~10 s on a fresh machine before its one line (torch imported, the sandbox planned), and the
    missing path said the sandbox's line first (issue 45)."""
    import time

    out = tmp_path / "out"
    for args, words in [(["autograde", "/nonexistent", "--out", str(out)], ["no such file or folder: /nonexistent"]),
                        (["autograde", "solutions", "--out", str(out), "--device", "cuda"], ["--device cuda"]),
                        (["check", "--device", "cuda"], ["no CUDA device"])]:
        began = time.monotonic()
        result = grade(*args)
        took = time.monotonic() - began
        one_line_exit_2(result, *words)
        assert took < 2, (args, took)
        assert not out.exists()


def test_cuda_is_refused_early_only_where_no_gpu_driver_is(monkeypatch):
    import glob

    from grader import api
    from grader.errors import DeviceError

    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(glob, "glob", lambda pattern: [])
    with pytest.raises(DeviceError):
        api.refuse_cuda_early("cuda")
    api.refuse_cuda_early("auto")  # auto and cpu never: CPU it is
    monkeypatch.setattr(glob, "glob", lambda pattern: ["/dev/nvidia0"] if pattern == "/dev/nvidia*" else [])
    api.refuse_cuda_early("cuda")  # a driver is there: torch decides (grader.grading.grader.pick_device)
    monkeypatch.setattr(glob, "glob", lambda pattern: [])
    monkeypatch.setattr(sys, "platform", "win32")  # no /dev to read: torch decides
    api.refuse_cuda_early("cuda")


@pytest.mark.gpu
def test_cuda_is_never_refused_early_on_a_machine_with_a_gpu():
    from grader import api

    api.refuse_cuda_early("cuda")
    result = grade("check", "01_attention_basics", "--submission", "solutions", "--device", "cuda", "--format", "json")
    assert result.returncode == 0 and json.loads(result.stdout)["device"] == "cuda", result.stderr


def test_check_grades_what_the_released_assignments_zip_unpacks_to(tmp_path):
    """A student unpacked `assignments.zip` (docs/instructors.md: ``python -m zipfile -c dist/assignments.zip
    assignments/``) and ran `grade check` there, with the course the installed package carries (which has no
    assignments/): "holds no assignment" (issue 45)."""
    course = tmp_path / "course"  # the course without assignments/, as the packaged one is
    course.mkdir()
    for name in ("course.toml", "solutions", "suites"):
        (course / name).symlink_to(ROOT / name)
    made = tmp_path / "made"
    (made / "assignments" / "01_attention_basics").mkdir(parents=True)
    shutil.copy(ROOT / "solutions" / "01_attention_basics" / "attention_basics.py",
                made / "assignments" / "01_attention_basics")
    subprocess.run([sys.executable, "-m", "zipfile", "-c", "assignments.zip", "assignments/"], cwd=made, check=True)
    unpacked = tmp_path / "unpacked"
    subprocess.run([sys.executable, "-m", "zipfile", "-e", str(made / "assignments.zip"), str(unpacked)], check=True)
    assert [p.name for p in unpacked.iterdir()] == ["assignments"]  # what the zip unpacks to
    result = grade("--course", str(course), "check", "--format", "json", cwd=unpacked)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["score"] == 100


def test_check_writes_a_json_report_and_exits_0_on_full_marks(tmp_path):
    out = tmp_path / "report.json"
    result = grade("check", "01_attention_basics", "--submission", "solutions", "--format", "json",
                   "--output", str(out), "--seed", "11")
    assert result.returncode == 0, result.stderr
    data = json.loads(out.read_text())
    assert data["score"] == data["max_score"] == 100 and data["seed"] == 11
    assert "100/100" in result.stderr


def test_check_on_the_stubs_exits_1_with_nothing_attempted(released):
    result = grade("check", "01_attention_basics", "--format", "json", "--submission", str(released))
    assert result.returncode == 1
    data = json.loads(result.stdout)
    statuses = {e["status"] for a in data["assignments"] for e in a["exercises"]}
    assert data["score"] == 0 and statuses == {"not_implemented"}
    assert all(e["feedback"] == "not attempted yet" for e in data["assignments"][0]["exercises"])


def test_release_out_refuses_what_it_must_not_write_over_in_one_line(tmp_path, course_toml):
    (tmp_path / "thesis.tex").write_text("mine")
    student = tmp_path / "student"
    student.mkdir()
    course_toml(student)  # a course without solutions/, as students have it
    for args, message in [
        (["release", "--out", "assignments/student"], "outside the course folder"),
        (["release", "--out", str(tmp_path)], "not a student distribution"),
        (["--course", str(student), "release", "--out", str(tmp_path / "new")], "has no solutions/"),
        (["--course", str(student), "check", "--submission", str(ROOT / "assignments" / "01_attention_basics")],
         "nor recorded reference outputs"),
    ]:
        result = grade(*args)
        assert result.returncode == 2 and message in result.stderr, (args, result.stderr)
        assert result.stderr.strip().count("\n") == 0 and "Traceback" not in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["student", "thesis.tex"]


def readme_commands() -> list[str]:
    """The `grade ...` lines of the shell examples of the README and of docs/, comments dropped."""
    import re

    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return _grade_lines(block for page in pages
                        for block in re.findall(r"^\s*```sh\n(.*?)^\s*```", page.read_text(), re.S | re.M))


def recipe_commands() -> list[str]:
    """Those of them in the docs' runnable recipes, which test_docs_recipes.py runs whole, each exit status checked."""
    from test_docs_recipes import MARKED, runnable_blocks

    return _grade_lines(block for page in MARKED for _, block in runnable_blocks(page))


def _grade_lines(blocks) -> list[str]:
    lines = [line.split("  #", 1)[0].strip() for block in blocks for line in block.splitlines()]
    return list(dict.fromkeys(line for line in lines if line.startswith("grade ")))  # each once


@pytest.mark.slow  # a dozen grading runs
def test_the_readmes_grade_examples_run_as_written(tmp_path):
    """Every `grade` example of the README and of docs/, run as written in a course checkout that has what the
    examples name (students' submissions, a notebook of another name, shard folders): each exits 0
    or 1 (a score short of full marks), never 2 (a usage error) nor with a traceback. Those of the docs'
    runnable recipes are run with their recipes (test_docs_recipes.py: each exit status checked there)."""
    course = tmp_path / "course"
    course.mkdir()
    for name in ("course.toml", "pyproject.toml", "solutions", "suites", "assignments", "templates", "grader"):
        (course / name).symlink_to(ROOT / name)
    for folder in ("submissions", "submitted"):
        for student in ("ada", "bo"):
            shutil.copytree(ROOT / "solutions" / "01_attention_basics", course / folder / student / "01_attention_basics",
                            ignore=shutil.ignore_patterns("*.ipynb", "__pycache__"))
    module = (ROOT / "solutions" / "01_attention_basics" / "attention_basics.py").read_text()
    (course / "my_work.ipynb").write_text(json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "outputs": [],
                                                                 "execution_count": None, "source": module}],
                                                      "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    (course / "roster.csv").write_text("submission,Student,ID,SIS User ID,SIS Login ID,Section,idnumber,email\n"
                                       "ada,Ada,1,s1,ada,A,1001,ada@example.org\nbo,Bo,2,s2,bo,A,1002,bo@example.org\n")
    recipes = recipe_commands()
    commands = [command for command in readme_commands() if command not in recipes]
    assert len(commands) >= 10 and len(recipes) >= 10 and any("--submission my_work.ipynb" in c for c in commands)
    grade(*"autograde submissions/ --out grades-1/ --shard 1/8 --seed 4711".split(), cwd=course)  # `grades-*/`
    path = f"{Path(sys.executable).parent}:{os.environ['PATH']}"
    for command in commands:
        if "--watch" in command:  # runs until Ctrl-C: tests/grader/test_watch.py runs it
            continue
        done = subprocess.run(["bash", "-c", command], cwd=course, capture_output=True, text=True, timeout=600,
                              env={**os.environ, "PATH": path})
        assert done.returncode in (0, 1), (command, done.stderr[-2000:])
        if "Traceback" in done.stderr:  # in full: pytest cuts a long assertion's text to its first lines
            pytest.fail(f"a traceback from {command}:\n{done.stderr[-6000:]}", pytrace=False)
    assert all((course / written).is_file() for written in ("week1.csv", "week1-report.html", "canvas.csv", "moodle.csv"))


def one_line_exit_2(result, *words):
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert result.stderr.strip().count("\n") == 0 and "Traceback" not in result.stderr, result.stderr
    assert all(word in result.stderr for word in words), result.stderr


def test_report_and_export_of_an_empty_results_folder_say_so_in_one_line_and_exit_2(tmp_path):
    """An empty folder (a shard glob that matched a folder of nothing, a run not made yet) is no class: no
    "0 students" page, no CSV of only a header, each said in one line."""
    empty = tmp_path / "grades"
    empty.mkdir()
    for args, written in [(["report", str(empty), "--out", str(tmp_path / "report.html")], "report.html"),
                          (["report", str(empty), "--format", "csv"], None),
                          (["export", str(empty), "--output", str(tmp_path / "grades.csv")], "grades.csv"),
                          (["export", str(empty)], None)]:
        result = grade(*args)
        one_line_exit_2(result, str(empty), "no result of `grade autograde`")
        assert result.stdout == "" and (written is None or not (tmp_path / written).exists()), args


def test_autograde_of_a_folder_of_nothing_leaves_no_results_folder_behind(tmp_path):
    """Issue 35, a newcomer's run: `grade autograde EMPTY/ --out OUT/` refused (exit 2) but made OUT/."""
    empty = tmp_path / "class"
    empty.mkdir()
    result = grade("autograde", str(empty), "--out", str(tmp_path / "out"))
    assert result.returncode == 2 and "holds no submission" in result.stderr, result.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.nbgrader
@pytest.mark.filterwarnings("ignore:Object of type <Submitted")  # nbgrader's own, as test_export.py quiets them
def test_export_of_an_empty_folder_beside_a_gradebook_refuses_rather_than_export_the_gradebook_alone(tmp_path, course_toml):
    sys.path.insert(0, str(ROOT / "tests" / "grader" / "reporting"))  # test_export's helpers
    from test_export import write_gradebook

    from grader.config import load_course

    course = tmp_path / "course"
    course_toml(course)
    write_gradebook(course / "gradebook.db", load_course(course), {"zoe": {"softmax": 0}})
    (course / "grades").mkdir()
    one_line_exit_2(grade("export", "grades/", "--output", "all.csv", cwd=course), "grades", "nothing exported")
    assert not (course / "all.csv").exists()
    (course / "grades").rmdir()
    alone = grade("export", "--output", "all.csv", cwd=course)  # no folder named and no ./grades: the book alone
    assert alone.returncode == 0 and "0 autograde results and 1 gradebook rows" in alone.stderr, alone.stderr


@pytest.mark.slow  # a grading and a release
def test_every_verb_that_writes_says_what_it_wrote(tmp_path, course_toml):
    klass = tmp_path / "submissions" / "ada" / "01_attention_basics"
    klass.mkdir(parents=True)
    shutil.copy(ROOT / "solutions" / "01_attention_basics" / "attention_basics.py", klass)
    out = tmp_path / "grades"
    graded = grade("autograde", str(tmp_path / "submissions"), "--out", str(out), "--assignment",
                   "01_attention_basics", "--workers", "1", "--seed", "3")
    assert graded.returncode == 0 and f"{out} holds 1 result, their summary.csv" in graded.stderr, graded.stderr
    exported = grade("export", str(out), "--output", str(tmp_path / "grades.csv"), "--no-gradebook")
    assert exported.returncode == 0 and f"1 autograde results -> {tmp_path / 'grades.csv'}" in exported.stderr
    table = grade("check", "01_attention_basics", "--submission", "solutions", "--output", str(tmp_path / "t.txt"))
    assert table.returncode == 0 and f"100/100 -> {tmp_path / 't.txt'}" in table.stderr, table.stderr
    course = tmp_path / "course"
    for name in ("solutions/01_attention_basics", "suites/hidden"):
        shutil.copytree(ROOT / name, course / name, ignore=shutil.ignore_patterns("__pycache__"))
    course_toml(course)
    released = grade("--course", str(course), "release", "01_attention_basics")
    assert released.returncode == 0, released.stderr
    assert "wrote 2 files into assignments/, the stubs and release notebooks of 01_attention_basics" in released.stderr


def test_a_seed_a_replayed_run_cannot_use_is_noted_once_in_each_report(tmp_path):
    # issue 34: a student distribution replays the public cases recorded at one seed; --seed 7 said nothing
    from grader.api import seed_not_used, with_note
    from grader.reporting.formats import render
    from grader.results import SubmissionResult

    replayed = SubmissionResult("s", 2024, "cpu", 0.1, [], fixed_cases=True)
    live = SubmissionResult("s", 7, "cpu", 0.1, [])
    assert seed_not_used(replayed, None) is None and seed_not_used(replayed, 2024) is None
    assert seed_not_used(live, 7) is None  # the seed asked was drawn
    note = seed_not_used(replayed, 7)
    assert note == ("--seed 7 is not used here: the public checks replay the cases recorded at seed 2024; "
                    "the instructor's grading draws its own")
    assert with_note(render(replayed, "table"), "table", note).count(note) == 1
    assert json.loads(with_note(render(replayed, "json"), "json", note))["notes"] == [note]
    assert json.loads(with_note(render(replayed, "gradescope"), "gradescope", note))["output"].endswith(note)
    assert with_note(render(replayed, "markdown"), "markdown", note).rstrip().endswith(note)
    assert with_note(render(replayed, "json"), "json", None) == render(replayed, "json")


def test_figures_without_matplotlib_is_one_line_before_any_grading(monkeypatch, capsys, tmp_path):
    """Issue 35, a newcomer's run: `grade check --figures DIR` after a plain `pip install -e .` graded, then
    ended in a traceback (ModuleNotFoundError: matplotlib), exit 1."""
    import importlib.util

    from grader import api
    from grader.config import load_course
    from grader.errors import UsageError

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a))
    with pytest.raises(UsageError, match="--figures draws with matplotlib, which is not installed here"):
        api.check(course=load_course(ROOT), submission=str(ROOT / "solutions"), assignment_ids=(), fmt="table",
                  output=None, device="cpu", seed=None, colour=False, debug=False, figures=tmp_path / "figs")
    assert not (tmp_path / "figs").exists()


def test_release_check_that_finds_nothing_stale_says_so(monkeypatch, capsys):
    """Issue 35: `grade release --check` printed nothing at all when all was well."""
    from grader import api
    from grader.config import load_course

    monkeypatch.setattr("grader.course.release.release", lambda course, chosen, check: [])
    assert api.release(course=load_course(ROOT), assignment_ids=(), check_only=True) == 0
    assert "assignments/ is up to date with solutions/ and leaks nothing" in capsys.readouterr().err


def _compiled_where(env_extra: dict) -> list[str]:
    """sys.pycache_prefix and sys.dont_write_bytecode after the `grade` process's start (grader/__main__.py)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPYCACHEPREFIX", "XDG_CACHE_HOME")}
    env.update(PYTHONDONTWRITEBYTECODE="1", **env_extra)
    code = "import sys; from grader.__main__ import keep_compiled; keep_compiled(); " \
           "print(sys.pycache_prefix, sys.dont_write_bytecode)"
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          check=True).stdout.split()


def test_where_bytecode_is_not_written_the_grader_keeps_it_in_the_users_own_cache(tmp_path):
    """PYTHONDONTWRITEBYTECODE=1 (containers) made every run compile the grader and the suites again (0.1 s of a
    check): they are kept in the user's cache folder, never beside the sources, and only in a folder the user
    alone can change (compiled code from a folder another user can write would run as the grader)."""
    cache = tmp_path / "cache"
    assert _compiled_where({"XDG_CACHE_HOME": str(cache)}) == [str(cache / "attention-course" / "pycache"), "False"]
    assert (cache / "attention-course" / "pycache").stat().st_mode & 0o077 == 0
    os.chmod(cache / "attention-course", 0o777)  # another user could swap what it holds
    assert _compiled_where({"XDG_CACHE_HOME": str(cache)}) == ["None", "True"]
    (tmp_path / "elsewhere").symlink_to(cache)
    os.chmod(cache / "attention-course", 0o700)
    assert _compiled_where({"XDG_CACHE_HOME": str(tmp_path / "elsewhere")}) == ["None", "True"]  # a link: not followed
    own = str(tmp_path / "own")
    assert _compiled_where({"XDG_CACHE_HOME": str(cache), "PYTHONPYCACHEPREFIX": own}) == [own, "True"]
