"""The instructor's templates for a sharded class (templates/instructor/), run here as CI and Slurm
would run them: every shard's command, then the merge."""
import csv
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = ROOT / "templates" / "instructor"
STUDENTS = ("ada", "bo", "cy")


@pytest.fixture
def course_folder(tmp_path):
    """A course checkout as the templates expect it, with three students' submissions of week 1."""
    for name in ("course.toml", "solutions", "suites"):
        (tmp_path / name).symlink_to(ROOT / name)
    for student in STUDENTS:
        folder = tmp_path / "submissions" / student / "01_attention_basics"
        folder.mkdir(parents=True)
        shutil.copy(ROOT / "solutions" / "01_attention_basics" / "attention_basics.py", folder)
    return tmp_path


def shell(folder: Path, command: str, **env) -> subprocess.CompletedProcess:
    path = f"{Path(sys.executable).parent}:{os.environ['PATH']}"  # the `grade` command of this install
    return subprocess.run(["bash", "-euo", "pipefail", "-c", command], cwd=folder, capture_output=True, text=True,
                          timeout=600, env={**os.environ, "PATH": path, **env})


def merged(folder: Path) -> dict:
    rows = {row["submission"]: row for row in csv.DictReader((folder / "grades.csv").read_text().splitlines())}
    assert set(rows) == set(STUDENTS)
    seeds = {json.loads(p.read_text())["seed"] for p in folder.glob("grades-*/*.json")}
    assert len(seeds) == 1 and {r["seed"] for r in rows.values()} == {str(s) for s in seeds}  # one class, one seed
    assert all(float(r["score"]) == 100 and float(r["max_score"]) == 100 for r in rows.values())  # week 1 only
    return rows


@pytest.mark.slow  # one grading run per shard
def test_the_github_actions_matrix_grades_every_student_once_and_the_merge_exports_them(course_folder):
    yaml = pytest.importorskip("yaml")
    workflow = yaml.safe_load((TEMPLATES / "autograde-class.yml").read_text())
    shard_job, merge_job = workflow["jobs"]["shard"], workflow["jobs"]["merge"]
    shards = shard_job["strategy"]["matrix"]["shard"]
    assert shards == list(range(1, int(shard_job["env"]["SHARDS"]) + 1)) and merge_job["needs"] == "shard"
    grade = next(s["run"] for s in shard_job["steps"] if "grade autograde" in s.get("run", ""))
    for shard in shards:
        command = grade.replace("${{ matrix.shard }}", str(shard)).replace("${{ inputs.assignment }}",
                                                                           "01_attention_basics")
        command = command.replace("${{ inputs.seed || github.run_id }}", "7301940421")  # one run's id
        done = shell(course_folder, command, SHARDS=str(len(shards)), **{k: str(v) for k, v in workflow["env"].items()})
        assert done.returncode == 0, done.stderr
    graded = [p.stem for p in course_folder.glob("grades-*/*.json")]
    assert sorted(graded) == sorted(STUDENTS)  # each student in exactly one shard
    upload = next(s for s in shard_job["steps"] if "upload-artifact" in s.get("uses", ""))
    assert upload["with"]["include-hidden-files"] is True  # the manifest goes along, or export refuses
    merge = next(s["run"] for s in merge_job["steps"] if "grade export" in s.get("run", ""))
    done = shell(course_folder, merge)
    assert done.returncode == 0, done.stderr
    merged(course_folder)
    report = next(s["run"] for s in merge_job["steps"] if "grade report" in s.get("run", ""))
    summary = course_folder / "step-summary.md"
    done = shell(course_folder, report, GITHUB_STEP_SUMMARY=str(summary))
    assert done.returncode == 0, done.stderr
    assert (course_folder / "report.html").read_text().startswith("<!DOCTYPE html>")
    assert "What the class got wrong" in summary.read_text()


def test_each_templates_resources_fit_a_2_cpu_node_and_are_one_knob_said_at_its_top():
    yaml = pytest.importorskip("yaml")
    script = (TEMPLATES / "autograde.slurm").read_text()
    asked = dict(re.findall(r"^#SBATCH --([\w-]+)=(\S+)$", script, re.M))
    assert int(asked["cpus-per-task"]) <= 2 and "mem" not in asked, asked  # memory follows the CPUs
    assert asked["mem-per-cpu"].endswith("G") and int(asked["mem-per-cpu"][:-1]) * 2 <= 4, asked
    head = script.split("#SBATCH", 1)[0]
    assert "Resources:" in head and "--cpus-per-task" in head  # the knob, said before the #SBATCH lines
    assert '--workers "${SLURM_CPUS_PER_TASK' in script  # the grading processes follow it
    text = (TEMPLATES / "autograde-class.yml").read_text()
    workflow = yaml.safe_load(text)
    assert int(workflow["env"]["WORKERS"]) <= 2 and "Resources:" in text.split("name:", 1)[0]
    grade = next(s["run"] for s in workflow["jobs"]["shard"]["steps"] if "grade autograde" in s.get("run", ""))
    assert '--workers "$WORKERS"' in grade


@pytest.mark.slow  # one grading run per array task
def test_the_slurm_array_script_grades_its_slice_and_the_merge_exports_them(course_folder):
    script = TEMPLATES / "autograde.slurm"
    assert re.search(r"^#SBATCH --cpus-per-task=\d+$", script.read_text(), re.M)
    for task in (1, 2):
        done = shell(course_folder, f"bash {script} 01_attention_basics submissions/",
                     SLURM_ARRAY_TASK_ID=str(task), SLURM_ARRAY_TASK_COUNT="2", SLURM_CPUS_PER_TASK="1",
                     SLURM_ARRAY_JOB_ID="48213")
        assert done.returncode == 0, done.stderr
    assert sorted(p.stem for p in course_folder.glob("grades-*/*.json")) == sorted(STUDENTS)
    merge = next(line.split("(when every task is done)", 1)[1].strip() for line in script.read_text().splitlines()
                 if "grade export" in line)
    done = shell(course_folder, merge)
    assert done.returncode == 0, done.stderr
    merged(course_folder)
    report = next(line.split("(then, what the class got wrong)", 1)[1].strip() for line in script.read_text().splitlines()
                  if "grade report" in line and line.startswith("#"))
    assert shell(course_folder, report).returncode == 0 and (course_folder / "report.html").is_file()
    again = shell(course_folder, f"bash {script} 01_attention_basics submissions/", SLURM_ARRAY_TASK_ID="2",
                  SLURM_ARRAY_TASK_COUNT="2", SLURM_CPUS_PER_TASK="1", SLURM_ARRAY_JOB_ID="48213")
    assert again.returncode == 0, again.stderr  # a task submitted again completes its shard on the same seed
    other = shell(course_folder, f"bash {script} 01_attention_basics submissions/", SLURM_ARRAY_TASK_ID="2",
                  SLURM_ARRAY_TASK_COUNT="2", SLURM_CPUS_PER_TASK="1", SLURM_ARRAY_JOB_ID="50000")
    assert other.returncode == 2 and "seed 48213" in other.stderr  # another array's seed: refused
    merged(course_folder)
    outside = shell(course_folder, f"bash {script} 01_attention_basics")
    assert outside.returncode != 0 and "sbatch --array" in outside.stderr  # not an array task: says how


NODE24_MAJORS = {"actions/checkout": 5, "actions/setup-python": 6, "actions/upload-artifact": 6,
                 "actions/download-artifact": 7}  # the first major of each whose action.yml runs on node24


def test_every_workflow_uses_the_node_24_majors_of_its_actions():
    import re

    workflows = [p for p in (ROOT / "templates").rglob("*.yml")]
    used = [(p.name, name, int(major)) for p in workflows
            for name, major in re.findall(r"uses:\s*(actions/[\w-]+)@v(\d+)", p.read_text())]
    assert used and all(major >= NODE24_MAJORS.get(name, 0) for _, name, major in used), used
