"""`grade gradescope`: the package Gradescope takes, run as Gradescope runs it, in a fake /autograder."""
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from grader.platforms.gradescope import results_json
from grader.submission import course_name

ROOT = Path(__file__).resolve().parents[3]
ASSIGNMENT = "01_attention_basics"
SOLUTION = (ROOT / "solutions" / ASSIGNMENT / "attention_basics.py").read_text()
RELEASED_NOTEBOOK = "(the released notebook)"  # read from the released fixture, never the live assignments/


def notebook_of(*sources: str) -> str:
    return json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                                  "source": s} for s in sources], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


CLASS_SEED = 4711


@pytest.fixture(scope="module")
def autograder(tmp_path_factory):
    """The package built by the CLI and unpacked as Gradescope unpacks it, into a fake /autograder."""
    root = tmp_path_factory.mktemp("gradescope") / "autograder"
    package = root.parent / "autograder.zip"
    built = subprocess.run([sys.executable, "-m", "grader", "gradescope", ASSIGNMENT, "--out", str(package),
                            "--seed", str(CLASS_SEED)],
                           cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stderr
    with zipfile.ZipFile(package) as archive:
        names = archive.namelist()
        assert {"setup.sh", "run_autograder", "course/course.toml", "course/grader/platforms/gradescope.py"} <= set(names)
        assert not any(n.startswith(("course/tests/", "course/.git")) for n in names)
        archive.extractall(root / "source")
    return root


def upload(autograder: Path, files: dict[str, bytes | str], exercises: int = 7) -> dict:
    """Gradescope's run for one upload: the files in /autograder/submission, run_autograder, results.json."""
    submission, results = autograder / "submission", autograder / "results"
    for folder in (submission, results):
        shutil.rmtree(folder, ignore_errors=True)
    submission.mkdir()
    for name, content in files.items():
        path = submission / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    run = subprocess.run(["bash", str(autograder / "source" / "run_autograder")], capture_output=True, text=True,
                         timeout=300, env={**os.environ, "GRADESCOPE_ROOT": str(autograder), "PYTHON": sys.executable})
    assert run.returncode == 0, run.stderr
    data = json.loads((results / "results.json").read_text())
    # valid for Gradescope whatever the upload: a score, and tests out of the assignment's 100 points
    assert isinstance(data["score"], float) and 0 <= data["score"] <= 100
    assert sum(t["max_score"] for t in data["tests"]) == 100 and len(data["tests"]) == exercises
    assert all({"name", "score", "max_score", "output", "visibility"} <= set(t) for t in data["tests"])
    return data


def zipped(files: dict[str, str]) -> bytes:
    import io

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return buffer.getvalue()


@pytest.mark.slow  # seven gradings, each in its own process as on Gradescope
@pytest.mark.parametrize("case,files,score", [
    ("correct", {"attention_basics.py": SOLUTION}, 100),
    ("module and notebook", {"attention_basics.py": SOLUTION, "attention_basics.ipynb": RELEASED_NOTEBOOK}, 100),
    ("renamed by a browser", {"attention_basics (1).py": SOLUTION}, 100),
    ("notebook", {"attention_basics.ipynb": notebook_of("import torch", SOLUTION)}, 100),
    ("zip of the folder", {"work.zip": zipped({"01_attention_basics/attention_basics.py": SOLUTION})}, 100),
    ("syntax error", {"attention_basics.py": SOLUTION + "\ndef broken(:\n"}, 0),
    ("empty", {}, 0),
    ("only a readme", {"readme.txt": b"my work is in the notebook"}, 0),
], ids=lambda v: v if isinstance(v, str) else "")
def test_every_upload_gets_a_valid_results_json_out_of_the_assignments_points(autograder, released, case, files,
                                                                               score):
    notebook = (released / ASSIGNMENT / "attention_basics.ipynb").read_text()
    data = upload(autograder, {name: notebook if text == RELEASED_NOTEBOOK else text for name, text in files.items()})
    assert data["score"] == score, data["output"]
    # one class, one seed: every upload (every student's, every resubmission) on the package's seed
    assert case in ("empty", "only a readme") or data["extra_data"]["seed"] == CLASS_SEED
    if case == "only a readme":  # what was found, and what was expected
        assert "Found: readme.txt" in data["tests"][0]["output"] and "attention_basics.py" in data["tests"][0]["output"]
    if case == "syntax error":
        assert all("SyntaxError" in t["output"] or "invalid syntax" in t["output"] for t in data["tests"][:1])
    if case == "empty":
        assert "The upload was empty" in data["tests"][0]["output"]
    if case == "renamed by a browser":
        assert "01_attention_basics/attention_basics.py <- attention_basics (1).py" in data["output"]


def fake_commands(folder: Path, log: Path, venv_fails: int = 0) -> Path:
    """A python3 and an apt-get on PATH that record what they are asked (``$0 $PWD: $*``); ``python3 -m venv
    DIR`` makes DIR/bin/python, a recorder too, after failing ``venv_fails`` times (no python3-venv yet)."""
    folder.mkdir()
    record = f'echo "$0 $PWD: $*" >> {log}\n'
    (folder / "python3").write_text(
        f"#!/bin/sh\n{record}"
        f'if [ "$1 $2" = "-m venv" ]; then\n'
        f'  n=$(grep -c " -m venv " {log}); [ "$n" -gt {venv_fails} ] || {{ mkdir -p "$3"; exit 1; }}\n'
        f'  mkdir -p "$3/bin" && cp "$0" "$3/bin/python"\nfi\n')
    (folder / "apt-get").write_text(f"#!/bin/sh\n{record}")
    for name in ("python3", "apt-get"):
        (folder / name).chmod(0o755)
    return folder


def run_setup(autograder: Path, tmp_path: Path, venv_fails: int = 0) -> list[str]:
    root = tmp_path / "autograder"
    shutil.copytree(autograder / "source", root / "source")
    fake = fake_commands(tmp_path / "bin", tmp_path / "log", venv_fails)
    done = subprocess.run(["bash", str(root / "source" / "setup.sh")], capture_output=True, text=True,
                          env={**os.environ, "PATH": f"{fake}:{os.environ['PATH']}", "GRADESCOPE_ROOT": str(root)})
    assert done.returncode == 0, done.stderr
    return (tmp_path / "log").read_text().replace(str(root), "ROOT").replace(str(fake), "BIN").splitlines()


def test_setup_installs_cpu_torch_and_the_course_into_a_venv_never_the_images_python3(autograder, tmp_path):
    """setup.sh, offline: the image's python3 only makes the venv (Ubuntu 23.04 and later refuse a pip install
    into it: externally-managed-environment); torch and the packaged course go into the venv."""
    assert run_setup(autograder, tmp_path) == [
        "BIN/python3 ROOT/source/course: -m venv ROOT/venv",
        "ROOT/venv/bin/python ROOT/source/course: -m pip install --no-cache-dir torch --index-url "
        "https://download.pytorch.org/whl/cpu",
        "ROOT/venv/bin/python ROOT/source/course: -m pip install --no-cache-dir .",
    ]


def test_setup_installs_python3_venv_where_the_image_lacks_it(autograder, tmp_path):
    lines = run_setup(autograder, tmp_path, venv_fails=1)
    assert [line.split(": ", 1)[1] for line in lines[:4]] == [
        "-m venv ROOT/venv", "update -q", "install -y -q python3-venv", "-m venv ROOT/venv"]
    assert all(line.startswith("ROOT/venv/bin/python ") for line in lines[4:]) and len(lines) == 6


def test_run_autograder_grades_on_the_venvs_python(autograder, tmp_path):
    root = tmp_path / "autograder"
    shutil.copytree(autograder / "source", root / "source")
    fake = fake_commands(tmp_path / "bin", tmp_path / "log")
    subprocess.run([str(fake / "python3"), "-m", "venv", str(root / "venv")], check=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHON"}
    done = subprocess.run(["bash", str(root / "source" / "run_autograder")], capture_output=True, text=True,
                          env={**env, "PATH": f"{fake}:{os.environ['PATH']}", "GRADESCOPE_ROOT": str(root)})
    assert done.returncode == 0, done.stderr
    last = (tmp_path / "log").read_text().splitlines()[-1]
    assert last == f"{root}/venv/bin/python {root}/source/course: -m grader.platforms.gradescope run {root} " \
                   f"--seed {CLASS_SEED} {ASSIGNMENT}"


def test_uploaded_names_are_matched_as_people_and_browsers_write_them(course):
    for name in ("attention_basics.py", "attention_basics (1).py", "attention_basics(2).py", "Attention_Basics.py",
                 "attention_basics-3.py", "attention_basics copy.py", "attention_basics (1).ipynb"):
        assert course_name(name, course) is not None and course_name(name, course)[0] == ASSIGNMENT, name
    for name in ("attention.py", "notes.txt", "attention_basics.py.bak", "attention_basics_old.py"):
        assert course_name(name, course) is None, name


def test_each_exercise_is_shown_as_course_toml_says(course, solutions_result, tmp_path, course_toml):
    from grader.config import load_course

    text = (ROOT / "course.toml").read_text().replace(
        '[gradescope]\nvisibility = "visible"\n',
        '[gradescope]\nvisibility = "after_due_date"\nexercises = { softmax = "visible", softmax_naive = "hidden" }\n')
    course_toml(tmp_path, text)
    settings = load_course(tmp_path).gradescope
    one = type(solutions_result)(**{**solutions_result.__dict__, "assignments": solutions_result.assignments[:1]})
    data = results_json(one, settings.visibility_of, ["01_attention_basics/attention_basics.py <- attention_basics.py"])
    shown = {t["name"].split(": ")[1]: t["visibility"] for t in data["tests"]}
    assert shown["softmax"] == "visible" and shown["softmax_naive"] == "hidden"
    assert {v for n, v in shown.items() if n not in ("softmax", "softmax_naive")} == {"after_due_date"}
    assert data["extra_data"]["seed"] == solutions_result.seed and data["score"] == 100
    assert course.gradescope.visibility_of("softmax") == "visible"  # the default: each result at once
    (tmp_path / "course.toml").write_text(text.replace('softmax_naive = "hidden"', 'soft_max = "hidden"'))
    with pytest.raises(Exception, match="gradescope.exercises.soft_max: not an exercise of this course"):
        load_course(tmp_path)


def test_the_package_ships_its_assignments_and_what_their_references_import_only(tmp_path):
    """04's wrapper imports 03's CausalAttention: a package for 04 holds 03 and 04, nothing of 01, 02, 05, 06."""
    package = tmp_path / "04.zip"
    built = subprocess.run([sys.executable, "-m", "grader", "gradescope", "04_multi_head_attention", "--out",
                            str(package)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stderr
    with zipfile.ZipFile(package) as archive:
        names = archive.namelist()
        course_toml = archive.read("course/course.toml").decode()
    held = {n.split("/")[2] for n in names if n.startswith("course/solutions/")}
    suites = {n.rsplit("/", 1)[1] for n in names if n.startswith("course/suites/hidden/")}
    assert held == {"03_causal_attention", "04_multi_head_attention"}
    assert suites == {"test_03_causal_attention.py", "test_04_multi_head_attention.py"}
    assert '"04_multi_head_attention"' in course_toml and '"06_decoding_attention"' not in course_toml
    root = tmp_path / "autograder"
    with zipfile.ZipFile(package) as archive:
        archive.extractall(root / "source")
    data = upload(root, {"multi_head_attention.py": (ROOT / "solutions" / "04_multi_head_attention" /
                                                     "multi_head_attention.py").read_text(),
                         "causal_attention.py": (ROOT / "solutions" / "03_causal_attention" /
                                                 "causal_attention.py").read_text()}, exercises=6)
    assert data["score"] == 100, data["output"]


def test_a_package_built_without_a_seed_draws_one_for_the_whole_class(course, tmp_path):
    """Gradescope grades each upload apart: without one seed in the package, two students with the same
    mistake would be graded on different cases (issue 32)."""
    import re

    from grader.platforms.gradescope import build_package

    seeds = set()
    for name in ("a.zip", "b.zip"):
        package = build_package(course=course, assignment_ids=(ASSIGNMENT,), out=tmp_path / name)
        with zipfile.ZipFile(package) as archive:
            found = re.search(r"--seed (\d+) ", archive.read("run_autograder").decode())
        assert found, "run_autograder passes no seed"
        seeds.add(found[1])
    assert len(seeds) == 2  # one per package (one in a million to collide), the same for all its uploads


def test_the_package_is_yours_alone_and_never_written_through_another_users_file(course, tmp_path):
    """Red team round 32 (G1): an ordinary user made the file root's `grade gradescope --out` then wrote, which
    stayed theirs with the solutions and the hidden suites in it (and a link sent the zip over any file). A link or
    another user's file at --out is refused; the package is a new file readable by its owner alone."""
    import os

    import pytest

    from grader.errors import UntrustedResults
    from grader.platforms.gradescope import build_package

    victim = tmp_path / "victim.txt"
    victim.write_text("untouched")
    (tmp_path / "linked.zip").symlink_to(victim)
    with pytest.raises(UntrustedResults, match="is a link"):
        build_package(course=course, assignment_ids=(ASSIGNMENT,), out=tmp_path / "linked.zip", seed=1)
    assert victim.read_text() == "untouched"
    theirs = tmp_path / "theirs.zip"
    theirs.write_bytes(b"")
    if os.geteuid() == 0:
        os.chown(theirs, 1001, 1001)
        with pytest.raises(UntrustedResults, match="belongs to uid 1001"):
            build_package(course=course, assignment_ids=(ASSIGNMENT,), out=theirs, seed=1)
        assert theirs.stat().st_size == 0
    package = build_package(course=course, assignment_ids=(ASSIGNMENT,), out=tmp_path / "week1.zip", seed=1)
    assert package.stat().st_mode & 0o777 == 0o600 and zipfile.ZipFile(package).read("run_autograder")
