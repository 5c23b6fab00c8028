"""`grade autograde`: every submission gets a result, in parallel, resumably, shardable (grader/batch/autograde.py)."""
import csv
import io
import json
import shutil
import zipfile
from pathlib import Path

import pytest

from grader.batch.autograde import autograde, parse_shard
from grader.errors import UsageError
from grader.batch.discover import discover
from grader.reporting.course_secret import course_secret
from grader.reporting.result_folder import read_manifest

ROOT = Path(__file__).resolve().parents[3]


def student(folder: Path, source: str | Path = "solutions", only: str | None = None) -> Path:
    for assignment in sorted((ROOT / source).iterdir()):  # (an absolute source: ROOT / source is it)
        if assignment.is_dir() and (only is None or assignment.name == only):
            (folder / assignment.name).mkdir(parents=True)
            for module in assignment.glob("*.py"):
                shutil.copy(module, folder / assignment.name)
    return folder


# a submission that kills the process grading it: the zygote's parent
def _ancestor(steps: int) -> str:
    """Student code that finds the process ``steps`` parents above its own (worker -> zygote -> grading
    process, without cgroups), as anyone can read it from /proc where /proc shows it."""
    return ("import os, signal\n"
            "pid = os.getpid()\n"
            f"for _ in range({steps}):\n"
            "    pid = int(open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()[1])\n")


KILL_GRADING_PROCESS = _ancestor(2) + "os.kill(pid, signal.SIGKILL)\n"
KILL_ZYGOTE = _ancestor(1) + "os.kill(pid, signal.SIGKILL)\n"


def alice_and_a_killer(course, tmp_path):
    """Autograde alice (assignment 01's solution) and mallory (KILL_GRADING_PROCESS): their results."""
    root = tmp_path / "class"
    student(root / "alice", only="01_attention_basics")
    (root / "mallory" / "01_attention_basics").mkdir(parents=True)
    (root / "mallory" / "01_attention_basics" / "attention_basics.py").write_text(KILL_GRADING_PROCESS)
    out = tmp_path / "results"
    assert autograde(course=course, paths=[root], out=out, workers=2, shard=None, resume=False,
                     device="cpu", seed=5) == 0
    return tuple(json.loads((out / f"{name}.json").read_text()) for name in ("alice", "mallory"))


@pytest.fixture(scope="module")
def klass(tmp_path_factory, released):
    root = tmp_path_factory.mktemp("class")
    student(root / "alice")
    student(root / "bob", released)  # the stubs as release writes them, never the live assignments/
    student(root / "carol", only="01_attention_basics")
    with zipfile.ZipFile(root / "dan.zip", "w") as archive:
        for path in (root / "alice").rglob("*.py"):
            archive.write(path, Path("dan") / path.relative_to(root / "alice"))
    (root / "erin" / "01_attention_basics").mkdir(parents=True)
    (root / "erin" / "01_attention_basics" / "attention_basics.py").write_text("import os\nos._exit(3)\n")
    return root


def test_shards_parse_and_reject_nonsense():
    assert parse_shard(None) == (1, 1) and parse_shard("2/8") == (2, 8)
    for bad in ("0/3", "4/3", "x", "1-2"):
        with pytest.raises(UsageError):
            parse_shard(bad)


def test_discovery_finds_folders_and_zips_with_unique_names(course, klass, tmp_path):
    jobs = discover([klass], course, tmp_path)
    assert [j.name for j in jobs] == ["alice", "bob", "carol", "dan", "erin"]
    assert (jobs[3].path / "01_attention_basics" / "attention_basics.py").is_file()  # unpacked
    again = discover([klass / "alice", klass / "alice"], course, tmp_path / "again")
    assert [j.name for j in again] == ["alice"]  # the same path twice is one submission


def test_every_submission_gets_a_result_and_the_summary_has_a_column_per_exercise(course, klass, tmp_path):
    out = tmp_path / "results"
    assert autograde(course=course, paths=[klass], out=out, workers=2, shard=None, resume=False,
                     device="cpu", seed=5) == 0
    scores = {p.stem: json.loads(p.read_text())["score"] for p in out.glob("*.json")}
    assert scores == {"alice": 600, "bob": 0, "carol": 100, "dan": 600, "erin": 0}
    erin = json.loads((out / "erin.json").read_text())["assignments"][0]["exercises"]
    assert {e["status"] for e in erin} <= {"crashed", "error"}
    rows = list(csv.reader((out / "summary.csv").open()))
    assert rows[0][:4] == ["submission", "score", "max_score", "seed"] and rows[0][-1] == "status"
    assert len(rows[0]) == 5 + sum(len(a.exercises) for a in course.assignments)
    assert [r[0] for r in rows[1:]] == ["alice", "bob", "carol", "dan", "erin"]
    assert [r[-1] for r in rows[1:-1]] == ["graded"] * 4 and rows[-1][-1] in ("crashed", "graded")


def test_a_run_grades_every_submission_on_the_same_cases(course, tmp_path):
    """One seed per run, drawn fresh unless given: the batch is graded on one set of cases."""
    root = tmp_path / "class"
    for name in ("ann", "ben", "cat"):
        student(root / name, only="01_attention_basics")
    (root / "dev" / "01_attention_basics").mkdir(parents=True)
    (root / "dev" / "01_attention_basics" / "attention_basics.py").write_text("x = 1\n")
    seeds = set()
    for run in ("first", "second"):
        out = tmp_path / run
        assert autograde(course=course, paths=[root], out=out, workers=2, shard=None, resume=False, device="cpu",
                         seed=None, assignments=(course.assignment("01_attention_basics"),)) == 0
        results = [json.loads((out / f"{name}.json").read_text()) for name in ("ann", "ben", "cat", "dev")]
        assert [r["score"] for r in results] == [100, 100, 100, 0]
        assert len({r["seed"] for r in results}) == 1
        seeds.add(results[0]["seed"])
    assert len(seeds) == 2  # and a fresh one for each run (one in a million to collide)


def test_shards_partition_the_class_and_resume_skips_what_is_done(course, klass, tmp_path):
    out = tmp_path / "results"
    for shard in ("1/2", "2/2"):
        autograde(course=course, paths=[klass], out=out, workers=1, shard=shard, resume=False, device="cpu", seed=5)
    assert sorted(p.stem for p in out.glob("*.json")) == ["alice", "bob", "carol", "dan", "erin"]
    before = {p.name: p.stat().st_mtime_ns for p in out.glob("*.json")}
    (out / "bob.json").unlink()
    forged = json.loads((out / "carol.json").read_text()) | {"score": 500.0}
    (out / "carol.json").write_text(json.dumps(forged))  # not as grade autograde wrote it: graded again
    autograde(course=course, paths=[klass], out=out, workers=1, shard=None, resume=True, device="cpu", seed=5)
    after = {p.name: p.stat().st_mtime_ns for p in out.glob("*.json")}
    assert after.pop("bob.json") and after.pop("carol.json") and all(after[n] == before[n] for n in after)
    assert json.loads((out / "carol.json").read_text())["score"] == 100
    assert set(read_manifest(out)) == {f"{name}.json" for name in ("alice", "bob", "carol", "dan", "erin")}


def test_one_folder_one_seed_a_second_run_refuses_and_resume_keeps_the_recorded_seed(course, tmp_path):
    """A class is graded on one seed: the folder records its first run's, --resume takes it (a submission
    without a result cannot be graded again until a seed suits it), a plain run into it refuses naming
    --resume, another seed is refused, and --fresh grades the whole class again."""
    root = tmp_path / "class"
    for name in ("ann", "ben"):
        student(root / name, only="01_attention_basics")
    out = tmp_path / "week1"
    week1 = (course.assignment("01_attention_basics"),)
    run = dict(course=course, paths=[root], out=out, workers=1, shard=None, device="cpu", assignments=week1)
    assert autograde(**run, resume=False, seed=None) == 0
    seed = json.loads((out / "ann.json").read_text())["seed"]
    assert json.loads((out / ".grade-manifest").read_text())["seed"] == seed
    before = (out / "ann.json").read_text()
    with pytest.raises(UsageError, match=rf"already holds a run's results \(seed {seed}\): --resume .* --fresh"):
        autograde(**run, resume=False, seed=None)
    assert (out / "ann.json").read_text() == before  # nothing graded again, nothing overwritten
    with pytest.raises(UsageError, match=rf"graded on seed {seed}, not {seed + 1}"):
        autograde(**run, resume=True, seed=seed + 1)
    (out / "ben.json").unlink()  # a submission without a result: --resume grades it on the class's seed
    assert autograde(**run, resume=True, seed=None) == 0
    assert json.loads((out / "ben.json").read_text())["seed"] == seed and (out / "ann.json").read_text() == before
    assert autograde(**run, resume=False, fresh=True, seed=seed + 1) == 0
    assert {json.loads((out / f"{n}.json").read_text())["seed"] for n in ("ann", "ben")} == {seed + 1}
    assert json.loads((out / ".grade-manifest").read_text())["seed"] == seed + 1
    # --fresh without --seed grades again on the folder's seed (a newcomer's drew a new one and moved scores)
    assert autograde(**run, resume=False, fresh=True, seed=None) == 0
    assert {json.loads((out / f"{n}.json").read_text())["seed"] for n in ("ann", "ben")} == {seed + 1}


def test_grade_autograde_into_a_folder_with_results_says_so_in_one_line(tmp_path):
    import subprocess
    import sys

    root = tmp_path / "class"
    student(root / "ann", only="01_attention_basics")
    command = [sys.executable, "-m", "grader", "autograde", str(root), "--out", str(tmp_path / "out"),
               "--workers", "1", "--device", "cpu", "--assignment", "01_attention_basics"]
    first = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    second = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert second.returncode == 2 and "Traceback" not in second.stderr
    assert [line for line in second.stderr.splitlines() if line.startswith("grade: error:") and "--resume" in line]


def test_export_merges_shards_into_one_csv(course, klass, tmp_path):
    from grader.reporting.export import export_csv

    first, second = tmp_path / "one", tmp_path / "two"
    autograde(course=course, paths=[klass], out=first, workers=1, shard="1/2", resume=False, device="cpu", seed=5)
    autograde(course=course, paths=[klass], out=second, workers=1, shard="2/2", resume=False, device="cpu", seed=5)
    rows = list(csv.reader(export_csv(course, [first, second], False).splitlines()))
    assert [r[0] for r in rows[1:]] == ["alice", "bob", "carol", "dan", "erin"]
    header = rows[0]
    assert header[:3] == ["submission", "score", "max_score"] and "01_attention_basics" in header
    carol = dict(zip(header, rows[3]))
    assert float(carol["score"]) == 100 and float(carol["01_attention_basics:softmax"]) == 25


def test_a_weeks_batch_is_graded_and_scored_out_of_that_weeks_assignments_only(course, tmp_path):
    """nbgrader's submitted/ of week 1, or a Classroom assignment: `--assignment 01_attention_basics`
    grades 01 alone; results, summary.csv and the export hold its 100 points, not the course's 600.
    04 graded alone still finds the student's own CausalAttention of 03 beside it."""
    from grader.reporting.export import export_csv

    root = tmp_path / "class"
    student(root / "alice")  # the whole course handed in: only the week's assignment counts
    student(root / "carol", only="01_attention_basics")
    student(root / "dan", only="03_causal_attention")
    student(root / "dan", only="04_multi_head_attention")
    out = tmp_path / "week1"
    week1 = (course.assignment("01_attention_basics"),)
    assert autograde(course=course, paths=[root], out=out, workers=1, shard=None, resume=False, device="cpu",
                     seed=5, assignments=week1) == 0
    alice, carol, dan = (json.loads((out / f"{n}.json").read_text()) for n in ("alice", "carol", "dan"))
    assert [a["id"] for a in alice["assignments"]] == ["01_attention_basics"]
    assert (alice["score"], alice["max_score"], carol["score"], carol["max_score"]) == (100, 100, 100, 100)
    assert dan["max_score"] == 100 and dan["score"] == 0  # handed in another week's work
    rows = list(csv.reader((out / "summary.csv").read_text().splitlines()))
    assert len(rows[0]) == 5 + len(week1[0].exercises) and all(":" not in h or h.startswith("01_") for h in rows[0])
    header = next(csv.reader(export_csv(course, [out], False).splitlines()))
    assert not any(h.startswith(("02_", "03_", "04_", "05_")) for h in header)
    week4 = tmp_path / "week4"
    assert autograde(course=course, paths=[root / "dan"], out=week4, workers=1, shard=None, resume=False,
                     device="cpu", seed=5, assignments=(course.assignment("04_multi_head_attention"),)) == 0
    dan = json.loads((week4 / "dan.json").read_text())
    assert (dan["score"], dan["max_score"]) == (100, 100), dan


def test_grade_autograde_takes_assignment_options(tmp_path):
    import subprocess
    import sys

    student(tmp_path / "class" / "carol", only="01_attention_basics")
    done = subprocess.run([sys.executable, "-m", "grader", "autograde", str(tmp_path / "class"), "--out",
                           str(tmp_path / "out"), "--assignment", "01_attention_basics", "--workers", "1"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "out" / "carol.json").read_text())["max_score"] == 100
    wrong = subprocess.run([sys.executable, "-m", "grader", "autograde", str(tmp_path / "class"), "--out",
                            str(tmp_path / "out"), "--assignment", "07_nothing"], cwd=ROOT, capture_output=True,
                           text=True, timeout=300)
    assert wrong.returncode != 0 and "unknown assignment '07_nothing'" in wrong.stderr
    assert "Traceback" not in wrong.stderr


def test_a_submission_that_kills_its_grading_process_is_retried_once_then_recorded_as_crashed(course, tmp_path,
                                                                                              monkeypatch):
    """Where student code runs as the grader's user (as a user of its own it cannot: see below)."""
    import grader.sandbox.confine

    import tempfile

    monkeypatch.setattr(grader.sandbox.confine, "plan", lambda setting, hidden=(): grader.sandbox.confine.Confinement())
    scratch = tmp_path / "tmp"  # this run's temporary folders only, whatever else runs on the machine
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    alice, mallory = alice_and_a_killer(course, tmp_path)
    assert alice["score"] == 100 and mallory["score"] == 0
    assert {e["status"] for a in mallory["assignments"] for e in a["exercises"]} == {"crashed"}
    assert list(scratch.iterdir()) == []  # the killed processes' sandboxes went with the run


def test_a_result_forged_by_a_later_submission_is_overwritten_with_the_real_one(course, tmp_path, released):
    root = tmp_path / "class"
    out = tmp_path / "results"
    student(root / "aaron", released, only="01_attention_basics")  # graded first: 0 points
    forged = json.dumps({"schema": 1, "submission": "aaron", "score": 500.0, "max_score": 500.0, "seed": 5,
                         "assignments": []})
    (root / "zed" / "01_attention_basics").mkdir(parents=True)
    (root / "zed" / "01_attention_basics" / "attention_basics.py").write_text(
        f"import glob\nfor path in glob.glob({str(out / '*.json')!r}):\n"
        f"    open(path, 'w').write({forged!r})\n"
        f"open({str(out / 'zz-extra.json')!r}, 'w').write({forged!r})\n")  # and one of its own, where it can
    autograde(course=course, paths=[root], out=out, workers=1, shard=None, resume=False, device="cpu", seed=5)
    assert json.loads((out / "aaron.json").read_text())["score"] == 0
    (out / "zz-extra.json").write_text(forged)  # as student code running as this user could leave it
    from grader.batch.autograde import write_summary
    from grader.reporting.result_folder import collect

    warnings: list[str] = []
    secret = course_secret(course.root)
    assert set(collect([out], warnings, secret=secret)) == {"aaron", "zed"}
    assert collect([out], secret=secret)["aaron"]["score"] == 0
    assert [line for line in warnings if "zz-extra.json" in line]
    write_summary(out, course, secret=secret)
    assert [row.split(",")[0] for row in (out / "summary.csv").read_text().splitlines()[1:]] == ["aaron", "zed"]


def test_student_code_cannot_write_into_the_graders_pipes(course, tmp_path):
    """The worker inherits no descriptor of the grader: a forged message cannot reach the parent."""
    import pickle

    root = tmp_path / "class"
    student(root / "alice", only="01_attention_basics")
    payload = pickle.dumps(("done", 1, "alice", {"schema": 1, "score": 999}))
    (root / "mallory" / "01_attention_basics").mkdir(parents=True)
    (root / "mallory" / "01_attention_basics" / "attention_basics.py").write_text(
        "import os, struct\n"
        f"payload = {payload!r}\n"
        "for fd in range(3, 256):\n"
        "    try:\n"
        "        os.write(fd, struct.pack('!i', len(payload)) + payload)\n"
        "    except OSError:\n"
        "        pass\n")
    out = tmp_path / "results"
    assert autograde(course=course, paths=[root], out=out, workers=1, shard=None, resume=False,
                     device="cpu", seed=5) == 0
    assert json.loads((out / "alice.json").read_text())["score"] == 100
    assert json.loads((out / "mallory.json").read_text())["score"] == 0


def test_in_the_sandbox_a_submission_cannot_even_find_its_grading_process(course, tmp_path, capsys):
    """In its own PID namespace the worker is PID 1: no parent, no grader, no zygote to signal."""
    from grader.sandbox.confine import plan

    if not plan("auto").sandboxed:
        pytest.skip("no sandbox on this machine (bubblewrap or user namespaces missing)")
    alice, mallory = alice_and_a_killer(course, tmp_path)
    assert "student code runs sandboxed" in capsys.readouterr().err
    assert alice["score"] == 100 and alice["isolation"] == mallory["isolation"] != "same-user"
    statuses = {e["status"] for e in mallory["assignments"][0]["exercises"]}
    assert statuses == {"error"}  # its import failed (no /proc/0); nothing crashed, nothing was retried
    assert "FileNotFoundError" in mallory["assignments"][0]["exercises"][0]["feedback"]


def test_a_submission_that_kills_its_zygote_costs_no_later_submission_its_result(course, tmp_path, monkeypatch):
    """Without a sandbox student code can kill its zygote: the grading process starts a fresh one for
    the next submission, which gets its full marks (one grading process grades both, in order)."""
    import grader.sandbox.confine

    monkeypatch.setattr(grader.sandbox.confine, "plan", lambda setting, hidden=(): grader.sandbox.confine.Confinement())
    root = tmp_path / "class"
    (root / "mallory" / "01_attention_basics").mkdir(parents=True)
    (root / "mallory" / "01_attention_basics" / "attention_basics.py").write_text(KILL_ZYGOTE)
    student(root / "zed", only="01_attention_basics")
    out = tmp_path / "results"
    assert autograde(course=course, paths=[root], out=out, workers=1, shard=None, resume=False,
                     device="cpu", seed=5) == 0
    zed, mallory = (json.loads((out / f"{name}.json").read_text()) for name in ("zed", "mallory"))
    assert zed["score"] == 100
    assert mallory["score"] == 0


def test_under_autograde_student_code_finds_no_queue_or_lock_of_the_batch(course, tmp_path):
    """The grading processes hold the batch's multiprocessing queues; the zygote is started fresh
    (exec), so no worker has them: nothing to block or forge a message on (issue 10, item 3)."""
    root = tmp_path / "class"
    student(root / "alice", only="01_attention_basics")
    (root / "mallory" / "01_attention_basics").mkdir(parents=True)
    (root / "mallory" / "01_attention_basics" / "attention_basics.py").write_text(
        "import gc\n"
        "found = [o for o in gc.get_objects() if str(getattr(type(o), '__module__', '')).startswith(('multiprocessing', '_multiprocessing'))"
        " and type(o).__name__ in ('Queue', 'SemLock', 'Lock', 'Connection', 'Condition')]\n"
        "for item in found:\n"
        "    try:\n"
        "        item.acquire() if hasattr(item, 'acquire') else item.get()\n"
        "    except Exception:\n"
        "        pass\n"
        "raise RuntimeError(f'FOUND {len(found)}')\n")
    out = tmp_path / "results"
    assert autograde(course=course, paths=[root], out=out, workers=1, shard=None, resume=False,
                     device="cpu", seed=5) == 0
    alice, mallory = (json.loads((out / f"{name}.json").read_text()) for name in ("alice", "mallory"))
    assert alice["score"] == 100
    assert "FOUND 0" in mallory["assignments"][0]["exercises"][0]["feedback"]


def test_a_submission_of_links_to_the_reference_gets_an_error_and_alice_her_marks(course, tmp_path):
    root = tmp_path / "class"
    student(root / "alice", only="01_attention_basics")
    for assignment in ("01_attention_basics", "02_self_attention"):
        folder = root / "mallory" / assignment
        folder.mkdir(parents=True)
        module = course.assignment(assignment).module
        (folder / module).symlink_to(f"/proc/self/cwd/solutions/{assignment}/{module}")
    out = tmp_path / "results"
    assert autograde(course=course, paths=[root], out=out, workers=1, shard=None, resume=False,
                     device="cpu", seed=5) == 0
    alice, mallory = (json.loads((out / f"{name}.json").read_text()) for name in ("alice", "mallory"))
    assert alice["score"] == 100 and mallory["score"] == 0
    exercises = [e for a in mallory["assignments"] for e in a["exercises"]]
    assert {e["status"] for e in exercises} == {"error"}
    assert "symbolic link" in exercises[0]["feedback"] and "def softmax" not in json.dumps(mallory)


# --- interrupted runs keep what they did (issue 21) -------------------------------------------------------
def _class_of(root: Path, names) -> Path:
    for name in names:
        student(root / name, only="01_attention_basics")
    (root / "aaa.zip").write_bytes(b"not a zip at all")  # rejected at intake, first in order
    return root


def _start(root: Path, out: Path, *extra: str, tmp: Path | None = None):
    import os
    import subprocess
    import sys

    env = dict(os.environ, **({"TMPDIR": str(tmp)} if tmp else {}))
    return subprocess.Popen([sys.executable, "-m", "grader", "autograde", str(root), "--out", str(out), "--workers",
                             "1", "--seed", "5", "--assignment", "01_attention_basics", *extra], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)


def _lines_until(run, count: int) -> list[str]:
    """stderr's progress lines, read until ``count`` of them came."""
    lines = []
    while sum(line.startswith("[") for line in lines) < count:
        line = run.stderr.readline()
        assert line, "".join(lines)
        lines.append(line)
    return lines


def _export(out: Path):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "grader", "export", str(out)], cwd=ROOT, capture_output=True,
                          text=True)


@pytest.mark.slow
def test_ctrl_c_keeps_every_finished_result_and_resume_grades_only_the_rest(tmp_path):
    import signal

    from grader.reporting.result_folder import pending, sort_results

    root, out = _class_of(tmp_path / "class", ["bea", "cy", "di", "ed", "flo"]), tmp_path / "out"
    run = _start(root, out)
    lines = _lines_until(run, 3)
    assert [line for line in lines if line.startswith("[")][0].startswith("[1/6] aaa: 0/100, not graded")
    run.send_signal(signal.SIGINT)
    rest = run.stderr.read()
    assert run.wait(timeout=60) == 130, rest
    assert "interrupted" in rest and "--resume" in rest and "Traceback" not in rest and "Aborted" not in rest
    graded = {p.stem for p in sort_results(out, secret=course_secret(ROOT))[0]}
    assert {"aaa", "bea", "cy"} <= graded and graded | set(pending(out)) == {"aaa", "bea", "cy", "di", "ed", "flo"}
    assert not graded & set(pending(out))
    summary = (out / "summary.csv").read_text()
    assert all(f"\n{name}," in summary for name in graded)
    exported = _export(out)
    assert exported.returncode == 0 and "interrupted" in exported.stderr, exported.stderr
    assert all(f"{name}," in exported.stdout for name in graded)

    again = _start(root, out, "--resume")
    _, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    regraded = {line.split("]", 1)[1].split(":", 1)[0].strip() for line in err.splitlines() if line.startswith("[")}
    assert regraded == {"aaa", "bea", "cy", "di", "ed", "flo"} - graded  # only what was missing
    assert pending(out) == [] and len(sort_results(out, secret=course_secret(ROOT))[0]) == 6 and not sort_results(out, secret=course_secret(ROOT))[1]
    assert "interrupted" not in _export(out).stderr


@pytest.mark.slow
def test_a_second_ctrl_c_still_leaves_a_folder_export_reads(tmp_path):
    import signal
    import time

    from grader.reporting.result_folder import read_manifest, sort_results

    root, out = _class_of(tmp_path / "class", ["bea", "cy", "di"]), tmp_path / "out"
    run = _start(root, out)
    _lines_until(run, 2)
    run.send_signal(signal.SIGINT)
    time.sleep(0.05)
    run.send_signal(signal.SIGINT)
    run.stderr.read()
    assert run.wait(timeout=60) == 130
    assert read_manifest(out) is not None and (out / "summary.csv").is_file()
    assert not sort_results(out, secret=course_secret(ROOT))[1]  # every result file listed and as written
    assert _export(out).returncode == 0


@pytest.mark.slow
def test_a_run_killed_with_sigkill_leaves_its_results_listed_and_no_process_and_resume_completes_it(tmp_path):
    """SIGKILL to the run: its grading processes die with it (and their sandboxes with them); the manifest
    lists what was written and the rest as pending; the next run removes the scratch and completes."""
    import os
    import time

    from grader.reporting.result_folder import pending, sort_results

    root, out, tmp = _class_of(tmp_path / "class", ["bea", "cy", "di"]), tmp_path / "out", tmp_path / "tmp"
    tmp.mkdir()
    run = _start(root, out, tmp=tmp)
    _lines_until(run, 2)
    children = [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and _ppid(p) == run.pid]
    assert children
    run.kill()
    run.wait()
    deadline = time.monotonic() + 10
    while any(Path(f"/proc/{pid}").exists() and _state(pid) != "Z" for pid in children) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(Path(f"/proc/{pid}").exists() and _state(pid) != "Z" for pid in children)
    listed = {p.stem for p in sort_results(out, secret=course_secret(ROOT))[0]}
    assert {"aaa", "bea"} <= listed and listed | set(pending(out)) == {"aaa", "bea", "cy", "di"}
    again = _start(root, out, "--resume", tmp=tmp)
    _, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    assert pending(out) == [] and len(sort_results(out, secret=course_secret(ROOT))[0]) == 4
    assert list(tmp.iterdir()) == []  # what the killed run left, removed by the next
    assert os.path.exists(out / "summary.csv")


def _ppid(proc: Path) -> int | None:
    try:
        return int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "gone"


@pytest.mark.slow
@pytest.mark.parametrize("as_user", ["root", "the grader's own user"])
def test_hostile_replies_and_a_deep_notebook_cost_an_honest_bystander_nothing(course, tmp_path, monkeypatch, as_user):
    """Issue 21's patterns in one batch beside alice, with a uid per submission (root) and where student
    code runs as the grader's own user: every submission gets a result of its own, none a crash or a
    grader error, and alice keeps full marks."""
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import red_team

    if as_user != "root":
        import grader.sandbox.confine

        monkeypatch.setattr(grader.sandbox.confine, "plan", lambda setting, hidden=(): grader.sandbox.confine.Confinement())
    attacks = red_team.attacks()
    root = tmp_path / "class"
    for key in ("01", "06"):
        red_team.build(root / "alice", key, None)
    for name, attack in {"mallory": "stride-0 replies (01)", "trudy": "a [100000, 1, 1, 1, 1] mask (06)",
                         "eve": "broadcastable replies (06)",
                         "deep": "a notebook with a 1,600-term sum beside the module (01)"}.items():
        red_team.build(root / name, *attacks[attack])
    out = tmp_path / "results"
    week = (course.assignment("01_attention_basics"), course.assignment("06_decoding_attention"))
    assert autograde(course=course, paths=[root], out=out, workers=2, shard=None, resume=False, device="cpu",
                     seed=7, assignments=week) == 0
    results = {p.stem: json.loads(p.read_text()) for p in out.glob("*.json")}
    assert set(results) == {"alice", "mallory", "trudy", "eve", "deep"}
    assert results["alice"]["score"] == results["alice"]["max_score"] == 200
    statuses = {e["status"] for r in results.values() for a in r["assignments"] for e in a["exercises"]}
    assert not statuses & {"crashed", "grader-error"}, statuses
    assert results["deep"]["score"] == 100  # its notebook's softmax is right too: the module's is graded
    assert all(results[name]["score"] < 100 for name in ("mallory", "trudy", "eve"))


# --- names are identities (issue 44) -----------------------------------------------------------------------
def test_names_that_clean_to_one_are_flagged_in_every_result_summary_export_and_report(course, tmp_path):
    """``jane\\doe`` (a stub) beside the real ``jane_doe``: neither row is ``jane_doe``, and each result,
    summary.csv, grade export (ours, Canvas's and Moodle's) and grade report say that the names collided."""
    from grader.batch.autograde import _Batch, failed_result
    from grader.batch.progress import Progress
    from grader.reporting.class_report import render, summarise
    from grader.reporting.export import export_csv, export_gradebook
    from grader.reporting.result_folder import collect

    root = tmp_path / "class"
    for name in ("jane\\doe", "jane_doe", "alice"):
        student(root / name, only="01_attention_basics")
    jobs = discover([root], course, tmp_path / "scratch")
    out = tmp_path / "results"
    out.mkdir()
    batch = _Batch(out, {}, trust_meanwhile=True, progress=Progress(len(jobs)), seed=1, secret=course_secret(ROOT))
    batch.collisions = {job.name: job.collision for job in jobs if job.collision}
    for score, job in zip((0.0, 600.0, 600.0), sorted(jobs, key=lambda job: str(job.path))):
        data = failed_result(course.assignments, job.name, "failed", "graded", 1).to_json() | {"score": score}
        batch.record(job.name, data)
    batch.finish(course)
    results = collect([out], secret=course_secret(ROOT))
    assert "jane_doe" not in results and set(results) >= {"alice"} and len(results) == 3
    raw = {data["name_collision"]["raw"]: name for name, data in results.items() if "name_collision" in data}
    assert set(raw) == {"jane\\doe", "jane_doe"} and "name_collision" not in results["alice"]
    summary = {row["submission"]: row for row in csv.DictReader((out / "summary.csv").open(newline=""))}
    assert set(summary) == {"alice", *raw.values()} and summary["alice"]["name_collision"] == ""
    for name in raw.values():
        note = summary[name]["name_collision"]
        assert "'jane\\\\doe'" in note and "'jane_doe'" in note and "neither takes it" in note
    exported = {row["submission"]: row for row in csv.DictReader(io.StringIO(export_csv(course, [out], False)))}
    assert {name: row["name_collision"] for name, row in exported.items()} == {
        name: row["name_collision"] for name, row in summary.items()}
    for fmt in ("canvas", "moodle"):
        warnings: list[str] = []
        text, _ = export_gradebook(course, [out], None, warnings, fmt=fmt)
        assert "jane_doe," not in text and sum("name collided" in line for line in warnings) == 2, warnings
    helped = {row["student"]: row["what"] for row in summarise(list(results.values()))["help"]}
    assert all("name collided" in helped[name] for name in raw.values())
    assert "name collided" in render(summarise(list(results.values())), "html")
    hidden = summarise(list(results.values()), secret=bytes(32))
    assert "jane" not in json.dumps(hidden) and sum("cleaned to the same" in row["what"] for row in hidden["help"]) == 2


# --- results folders are the grader's (issue 44) -----------------------------------------------------------
def test_an_out_folder_that_another_user_owns_or_can_write_is_refused_in_one_line(tmp_path, monkeypatch):
    """A co-tenant who made --out before root graded into it rewrote every result and the manifest."""
    import os

    from click.testing import CliRunner

    from grader.cli import cli

    root = student(tmp_path / "class" / "alice", only="01_attention_basics").parent
    out = tmp_path / "results"
    out.mkdir(mode=0o755)
    out.chmod(0o755)

    def refused(said):
        outcome = CliRunner().invoke(cli, ["--course", str(ROOT), "autograde", str(root), "--out", str(out),
                                           "--assignment", "01_attention_basics", "--device", "cpu"])
        assert outcome.exit_code == 2 and "Traceback" not in outcome.stderr, outcome.stderr
        (line,) = outcome.stderr.splitlines()
        assert line.startswith("grade: error: ") and said in line, line
        assert {p.name for p in out.glob("*.json")} <= {"alice.json"} and not (out / "summary.csv").exists()

    real = os.geteuid()
    monkeypatch.setattr(os, "geteuid", lambda: real + 4242)  # as if another user owned it (tests run as root)
    refused(f"belongs to uid {real}, not to you")
    monkeypatch.undo()
    for mode, who in ((0o777, "group and others"), (0o775, "group"), (0o757, "others")):
        out.chmod(mode)
        refused(f"can be written by {who}")
    out.chmod(0o755)
    (out / "alice.json").write_text("{}")  # a file it would read back (--resume)
    (out / "alice.json").chmod(0o646)
    refused("alice.json (in --out) can be written by others")


def test_a_results_folder_inside_a_folder_another_user_controls_is_refused(tmp_path):
    """Issue 44, round 4: a co-tenant who owned the folder above --out swapped in an older results folder the
    grader had written (its manifest verifies), and a bystander's export went from 600 to 100. autograde
    refuses such an --out, export and report such a results folder, in one line; so does a folder above
    that others can write without the sticky bit."""
    import os

    from click.testing import CliRunner

    from grader.cli import cli

    if os.geteuid() != 0:
        pytest.skip("giving a folder to another user needs root")
    root = student(tmp_path / "class" / "alice", only="01_attention_basics").parent
    theirs = tmp_path / "cotenant"
    theirs.mkdir(mode=0o755)
    out = theirs / "results"

    def refused(*args, said):
        outcome = CliRunner().invoke(cli, ["--course", str(ROOT), *args])
        assert outcome.exit_code == 2 and "Traceback" not in outcome.stderr, outcome.stderr
        (line,) = outcome.stderr.splitlines()
        assert line.startswith("grade: error: ") and said in line, line

    grade = ["autograde", str(root), "--out", str(out), "--assignment", "01_attention_basics", "--device", "cpu"]
    outcome = CliRunner().invoke(cli, ["--course", str(ROOT), *grade])  # graded while the folder above is ours
    assert outcome.exit_code == 0, outcome.stderr
    os.chown(theirs, 4243, 4243)
    refused(*grade, said=f"is inside {theirs}, which belongs to uid 4243")
    refused("export", str(out), "--no-gradebook", "--output", str(tmp_path / "grades.csv"),
            said=f"is inside {theirs}, which belongs to uid 4243")
    refused("report", str(out), "--out", str(tmp_path / "report.html"), said=f"is inside {theirs}")
    os.chown(theirs, 0, 0)
    theirs.chmod(0o777)
    refused(*grade, said=f"is inside {theirs}, which others can write")
    theirs.chmod(0o1777)  # /tmp's way: others may add entries, never rename ours
    outcome = CliRunner().invoke(cli, ["--course", str(ROOT), "export", str(out), "--no-gradebook", "--output",
                                       str(tmp_path / "grades.csv")])
    assert outcome.exit_code == 0, outcome.stderr
