"""Gradescope: the autograder package (``grade gradescope``) and what runs inside it.

Gradescope unpacks the package into ``/autograder/source``, runs its ``setup.sh`` once when the
image is built (torch and the course, into the venv ``/autograder/venv``), then ``run_autograder`` on
that venv's python for each upload, with the student's files in
``/autograder/submission``; it reads ``/autograder/results/results.json``. The package holds the
course (course.toml, the grader, the reference solutions and the hidden suites: Gradescope never
shows the package to students), and ``run_autograder`` calls :func:`run` below.

Uploads come as people make them: the module or the notebook, both, several assignments' files, a
zip of the folder, names a browser changed on a second download (``attention_basics (1).py``).
Every upload gets a valid results.json with a score out of the graded assignments' points: an empty
upload or a file of another course is 0 with a line that says why. Where the grader itself fails
(``grader-error``), no results.json is written: Gradescope then shows the autograder's failure with
no score, never a 0 the student did not earn. ``GRADESCOPE_ROOT`` replaces ``/autograder`` (for tests).

A class is graded on one seed: the package carries the seed drawn when it was built (or given), and every
upload, every student's and every resubmission, is graded on it (results.json's ``extra_data`` says it).
"""
from __future__ import annotations

import io
import json
import shutil
import stat
import sys
import tempfile
import zipfile
from pathlib import Path

from grader.config import Course
from grader.course.distribution import course_toml
from grader.errors import GraderError, GraderFailed, UsageError
from grader.layout import Layout
from grader.course.release import with_imports

# the files of a course the package carries beside its reference and suites (what grading needs,
# never the repository's own tests)
PACKAGED = ("course.toml", "pyproject.toml", "README.md", "grader")

SETUP = """#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image: CPU torch and the course,
# into the venv $root/venv: never into the image's python3, which Gradescope's own harness runs on and
# which Ubuntu 23.04 and later refuse to pip-install into (error: externally-managed-environment).
set -euo pipefail
root="${GRADESCOPE_ROOT:-/autograder}"
venv="$root/venv"
cd "$root/source/course"
if ! python3 -m venv "$venv"; then  # Ubuntu's python3 makes a venv only with python3-venv installed
    rm -rf "$venv"
    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-venv
    python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --no-cache-dir torch --index-url https://download.pytorch.org/whl/cpu
"$venv/bin/python" -m pip install --no-cache-dir .
"""

RUN = """#!/usr/bin/env bash
# Gradescope runs this for every upload; results.json is written whatever the upload holds. The grader
# runs on the venv that setup.sh made.
root="${{GRADESCOPE_ROOT:-/autograder}}"
cd "$root/source/course"
exec "${{PYTHON:-$root/venv/bin/python}}" -m grader.platforms.gradescope run "$root" --seed {seed} {assignments}
"""


def build_package(*, course: Course, assignment_ids: tuple[str, ...], out: Path, seed: int | None = None) -> Path:
    """Write the autograder zip for ``assignment_ids`` (all when none): setup.sh and run_autograder
    at its root, the course under ``course/``; every upload is graded on ``seed`` (default: one drawn
    now, the class's)."""
    import secrets

    chosen = course.select(assignment_ids)
    seed = secrets.randbelow(10**6) if seed is None else seed
    out = Path(out)
    if out.suffix != ".zip":
        raise UsageError(f"--out {out}: Gradescope takes a .zip")
    out.parent.mkdir(parents=True, exist_ok=True)
    built = io.BytesIO()
    with zipfile.ZipFile(built, "w", zipfile.ZIP_DEFLATED) as package:
        for name, text in (("setup.sh", SETUP), ("run_autograder", RUN.format(
                assignments=" ".join(a.id for a in chosen), seed=seed))):
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFREG | 0o755) << 16
            package.writestr(info, text)
        shipped = with_imports(course, chosen)  # the chosen ones, and those whose reference they import
        package.writestr("course/course.toml", course_toml(course, shipped))
        for source in (*(course.root / name for name in PACKAGED if name != "course.toml"),
                       course.layout.solutions, course.layout.suites):
            files = [source] if source.is_file() else sorted(p for p in source.rglob("*") if p.is_file()
                                                              and "__pycache__" not in p.parts)
            for path in files:
                if _of_assignment(path, course) in (None, *(a.id for a in shipped)):
                    package.write(path, f"course/{path.relative_to(course.root).as_posix()}")
    # it holds the solutions and the hidden suites: never through a file or link another user made (red team round
    # 32: an ordinary user's file at the path stayed theirs, with the answers in it), and readable by you alone
    from grader.reporting.result_folder import write_output

    write_output(out, built.getvalue(), "--out", private=True)  # (and in no folder another user could swap it in)
    return out


def _of_assignment(path: Path, course: Course) -> str | None:
    """The assignment a solution folder or a suite file belongs to (None: shared by all)."""
    ids = {a.id for a in course.assignments}
    for part in path.relative_to(course.root).parts:
        for candidate in (part, part.removeprefix("test_").removesuffix(".py")):
            if candidate in ids:
                return candidate
    return None


def collect_upload(upload: Path, course: Course, target: Path) -> list[str]:
    """Lay the upload's files out as an ``assignments/`` folder in ``target`` (zips unpacked safely,
    links ignored); returns what was found, as ``assignment/file <- uploaded name`` lines. Of several
    files of one name (``attention_basics.py``, ``attention_basics (1).py``) the name itself is graded,
    else the latest download, as a class folder's are (grader/submission.py, course_copy)."""
    from grader.batch.discover import unzip
    from grader.submission import course_copy

    found, candidates = [], []
    pending = [upload]
    unpacked = 0
    while pending:
        folder = pending.pop()
        for path in sorted(folder.iterdir()):
            if path.is_symlink():
                continue
            if path.is_dir():
                pending.append(path)
            elif path.suffix.lower() == ".zip" and unpacked < 4:
                unpacked += 1
                inner = target.parent / f"upload-{unpacked}"  # made by unzip
                try:
                    unzip(path, inner)
                except (GraderError, OSError, zipfile.BadZipFile) as error:
                    found.append(f"{path.name}: not read ({error})")
                    continue
                pending.append(inner)
            elif (known := course_copy(path.name, course)) is not None:
                assignment_id, name, number = known
                candidates.append(((assignment_id, name), (number != 0, -number, len(candidates)), path))
    for key, _, path in sorted(candidates, key=lambda c: (c[0], c[1])):
        assignment_id, name = key
        destination = target / assignment_id / name
        if destination.exists():  # the same file twice: the one chosen above stays
            found.append(f"{path.name}: left out, {name} was uploaded already")
            continue
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, destination, follow_symlinks=False)
        found.append(f"{assignment_id}/{name} <- {path.name}")
    return found


def results_json(result, visibility, found: list[str]) -> dict:
    """Gradescope's results.json: one test per exercise, out of its points, shown as
    ``visibility(exercise)`` says; the seed in extra_data."""
    from grader.reporting.formats import render

    data = json.loads(render(result, "gradescope"))
    exercises = [e.name for a in result.assignments for e in a.exercises]  # the tests' order
    for test, exercise in zip(data["tests"], exercises):
        test["visibility"] = visibility(exercise)
    data["output"] = "\n".join([data["output"], "Files graded:", *found])
    data["extra_data"] = {"seed": result.seed, "device": result.device, "isolation": result.isolation}
    return data


def failed(exercises, message: str) -> dict:
    """A results.json for an upload that could not be graded: 0 of every exercise's points (``exercises``:
    ``(test name, points)``), and ``message`` saying why."""
    return {"score": 0.0, "output": message, "visibility": "visible", "stdout_visibility": "hidden",
            "tests": [{"name": name, "score": 0.0, "max_score": points, "status": "failed", "output": message,
                       "visibility": "visible"} for name, points in exercises]}


def run(root: Path, assignment_ids: tuple[str, ...], seed: int | None = None) -> dict | None:
    """Grade ``root/submission`` on ``assignment_ids`` and write ``root/results/results.json``, each
    exercise shown as course.toml's ``[gradescope]`` says. Where the grader itself fails (it cannot
    confine student code, a suite's own bug), no results.json is written and None returned: Gradescope
    then shows the run as the autograder's failure, with no score (never a 0 the student did not earn),
    and the instructor reruns it once the machine is fixed."""
    from grader.config import load_course

    course = load_course(Path.cwd())
    chosen = course.select(assignment_ids)
    visibility = course.gradescope.visibility_of
    exercises = [(f"{a.id}: {name}", points) for a in chosen for name, points in a.points]
    results_file = root / "results" / "results.json"
    results_file.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="gradescope-"))
    try:
        target = Layout(scratch).assignments
        target.mkdir()
        found = collect_upload(root / "submission", course, target)
        graded = [f for f in found if "<-" in f]
        if not graded:
            expected = ", ".join(f"{a.module} or {a.notebook}" for a in chosen)
            uploaded = sorted(str(f.relative_to(root / "submission")) for f in (root / "submission").rglob("*")
                              if f.is_file() and not f.is_symlink()) if (root / "submission").is_dir() else []
            seen = found or uploaded[:20] + ([f"... ({len(uploaded) - 20} more)"] if len(uploaded) > 20 else [])
            data = failed(exercises, f"No file of this assignment in your upload: expected {expected}. "
                                     + (f"Found: {'; '.join(seen)}" if seen else "The upload was empty."))
        else:
            data = _grade(course, chosen, target, visibility, found, seed)
    except Exception as error:  # noqa: BLE001 - the grader's own failure: no score at all
        print(f"The autograder failed, not this upload ({type(error).__name__}: {str(error)[:300]}); "
              "nothing was charged to it: the instructor reruns it once the grader is fixed.")
        return None
    finally:
        from grader.sandbox.leftovers import remove_tree

        remove_tree(scratch)
    results_file.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return data


def _grade(course, chosen, target: Path, visibility: str, found: list[str], seed: int | None = None) -> dict:
    from grader.grading.grader import Grader
    from grader.submission import resolve_submission

    grader = Grader(course, device="auto")
    try:
        result = grader.grade(resolve_submission(target, course), chosen, seed=seed)
    finally:
        grader.close()
    if result.grader_error:
        raise GraderFailed(result.grader_error)
    return results_json(result, visibility, found)


def main(argv: list[str]) -> int:
    """``python -m grader.platforms.gradescope run ROOT [--seed N] ASSIGNMENT...`` (what run_autograder calls)."""
    seed = None
    if len(argv) > 3 and argv[2] == "--seed" and argv[3].isdigit():
        seed, argv = int(argv[3]), argv[:2] + argv[4:]
    if len(argv) < 3 or argv[0] != "run":
        print("usage: python -m grader.platforms.gradescope run ROOT [--seed N] ASSIGNMENT...", file=sys.stderr)
        return 2
    data = run(Path(argv[1]), tuple(argv[2:]), seed)
    if data is None:
        return 2
    print(f"score {data['score']:g}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
