"""The nbgrader path against `grade autograde` on the same week: `nbgrader autograde` of N handed-in notebooks
of one assignment (each run in its sandboxed kernel, each graded cell answered by that kernel's grading
service) and `grade autograde --assignment` of the same folder, per notebook, as ratios to a bare
`python -c "import torch"` measured in the same run. Issue 47: the nbgrader path "as fast per notebook as
`grade autograde` on the same week".

    python benchmarks/bench_nbgrader.py [--students 6] [--assignment 01_attention_basics] [--workers 2]

Needs the notebook extras (`pip install -e '.[notebooks]'`).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")
SEED = 4711


def course_copy(root: Path, assignment_id: str) -> None:
    """The course as an instructor keeps it, with nbgrader's release of ``assignment_id`` made from solutions/."""
    sys.path.insert(0, str(ROOT))
    from grader.config import load_course
    from grader.course.release import render

    ignore = shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints")
    for name in ("solutions", "suites"):
        shutil.copytree(ROOT / name, root / name, ignore=ignore)
    for name in ("course.toml", "nbgrader_config.py"):
        shutil.copy(ROOT / name, root / name)
    course = load_course(root)
    (root / "assignments").mkdir()
    render(course, course.assignments, root / "assignments")
    (root / "assignments" / assignment_id / course.assignment(assignment_id).module).unlink()  # nbgrader writes it
    run([sys.executable, "-m", "nbgrader", "generate_assignment", assignment_id], root)


def hand_in(root: Path, assignment_id: str, students: int) -> None:
    """Each student's release notebook with every solution cell answered from the source notebook (and a
    comment of their own: no two students' files alike)."""
    from grader.config import load_course

    name = load_course(root).assignment(assignment_id).notebook
    release = json.loads((root / "assignments" / assignment_id / name).read_text())
    source = json.loads((root / "solutions" / assignment_id / name).read_text())
    answers = {c["metadata"]["nbgrader"]["grade_id"]: "".join(c["source"]) for c in source["cells"]
               if c["metadata"].get("nbgrader", {}).get("solution")}
    for index in range(students):
        notebook = json.loads(json.dumps(release))
        for cell in notebook["cells"]:
            grade_id = cell["metadata"].get("nbgrader", {}).get("grade_id")
            if grade_id in answers:
                text = "".join(line for line in answers[grade_id].splitlines(keepends=True)
                               if line.strip() not in MARKERS)
                cell["source"] = text + f"\n# student {index}\n"
        folder = root / "submitted" / f"student{index:03d}" / assignment_id
        folder.mkdir(parents=True)
        (folder / name).write_text(json.dumps(notebook))


def run(argv: list[str], cwd: Path) -> float:
    env = dict(os.environ, GRADE_DEVICE="cpu", GRADE_SEED=str(SEED))
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv[:4])} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=6)
    parser.add_argument("--assignment", default="01_attention_basics")
    parser.add_argument("--workers", type=int, default=2)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "course"
        root.mkdir()
        course_copy(root, options.assignment)
        hand_in(root, options.assignment, options.students)
        bare = [run([sys.executable, "-c", "import torch"], root)]
        nbgrader = run([sys.executable, "-m", "nbgrader", "autograde", options.assignment], root)
        bare.append(run([sys.executable, "-c", "import torch"], root))
        autograde = run([sys.executable, "-m", "grader", "autograde", "submitted", "--out", "grades",
                         "--assignment", options.assignment, "--workers", str(options.workers),
                         "--seed", str(SEED)], root)
        bare.append(run([sys.executable, "-c", "import torch"], root))
    torch_s = statistics.median(bare)
    per = {"nbgrader autograde": nbgrader / options.students, "grade autograde": autograde / options.students}
    print(f"import torch (median of {len(bare)}): {torch_s:.2f} s; {options.students} notebooks of {options.assignment}")
    for name, seconds in per.items():
        print(f"{name:20s} {seconds * options.students:7.1f} s: {seconds:.2f} s per notebook, "
              f"{seconds / torch_s:.2f}x import torch")
    print(f"nbgrader's path per notebook: {per['nbgrader autograde'] / per['grade autograde']:.1f}x grade autograde's "
          "(goal: 1.0x)")


if __name__ == "__main__":
    main()
