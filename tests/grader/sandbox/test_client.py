"""Student code that misbehaves gains nothing and costs the grader nothing (grader/sandbox/client.py, worker.py)."""
import json
import os
import time
from pathlib import Path

import pytest

from grader.config import load_course
from grader.grading.grader import Grader
from grader.submission import resolve_submission

ROOT = Path(__file__).resolve().parents[3]
SOLUTION = (ROOT / "solutions" / "01_attention_basics" / "attention_basics.py").read_text()


@pytest.fixture(scope="module")
def tight():
    """The real course with a 2 s limit per call, sharing one zygote across these tests."""
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="tight-course-"))
    text = (ROOT / "course.toml").read_text().replace("exercise_timeout_s = 10.0", "exercise_timeout_s = 2.0")
    (folder / "course.toml").write_text(text)
    for name in ("solutions", "suites"):
        (folder / name).symlink_to(ROOT / name)
    course = load_course(folder)
    grader = Grader(course, device="cpu")
    yield course, grader
    grader.close()


def grade_module(tight, tmp_path, extra: str):
    """Grade assignment 01: the reference solution with ``extra`` appended (later defs win)."""
    course, grader = tight
    path = tmp_path / "attention_basics.py"
    path.write_text(SOLUTION + "\n\n" + extra)
    result = grader.grade(resolve_submission(path, course), (course.assignment("01_attention_basics"),), seed=7)
    return result, {e.name: e for e in result.assignments[0].exercises}


def test_an_infinite_loop_times_out_once_and_the_rest_is_graded(tight, tmp_path):
    started = time.monotonic()
    result, ex = grade_module(tight, tmp_path, "def softmax(x, dim=-1):\n    while True:\n        pass\n")
    assert ex["softmax"].status == "timeout" and ex["softmax"].score == 0
    assert ex["attention_scores"].status == "passed"
    assert time.monotonic() - started < 20  # one timeout per function, not one per check
    where = ex["softmax"].feedback.split("your code was here when it was stopped (innermost first):\n", 1)[1]
    assert where.startswith('  File "') and "attention_basics.py" in where and "in softmax" in where, where
    assert "worker.py" not in where and "/grade/" not in where  # their own frame only
    assert "while True" in where or "    pass" in where  # the loop's line, wherever it was stopped


def test_an_exercise_that_uses_a_function_that_hung_fails_at_once_naming_it(tight, tmp_path):
    """simple_self_attention uses the student's softmax, which never returns: softmax costs one time
    limit, and simple_self_attention no second one: its cases fail at once, saying why, and each is run again with a
    right softmax in place of the student's (grader/grading/chains.py), where the exercise's own code is right: it
    keeps its points, naming softmax (the mistake costs once, in softmax)."""
    started = time.monotonic()
    result, ex = grade_module(tight, tmp_path, "def softmax(x, dim=-1):\n    while True:\n        pass\n")
    elapsed = time.monotonic() - started
    assert ex["softmax"].status == "timeout"
    assert ex["simple_self_attention"].status == "passed", ex["simple_self_attention"].feedback
    assert "right, given your softmax" in ex["simple_self_attention"].feedback
    assert "worker.py" not in ex["simple_self_attention"].feedback
    assert ex["attention_scores"].status == "passed" and ex["context_vector_loop"].status == "passed"
    # one time limit (2 s here), not one per exercise that uses softmax: no check of simple_self_attention waits one
    # out (its cases' runs with a right softmax cost a worker each, 1.5 s in all on a quiet machine: not a limit)
    assert max(c.duration_s for c in ex["simple_self_attention"].checks) < 2.0
    assert elapsed < 2.0 + 8.0


def test_an_error_names_the_call_and_the_shapes_it_was_given(tight, tmp_path):
    """A 2-d-only attention_scores fails on a batch: the feedback shows the call and its input shape
    before the student's traceback, so 'batched input' is plain."""
    import re

    _, ex = grade_module(tight, tmp_path, "def attention_scores(inputs):\n    rows, cols = inputs.shape\n"
                                          "    return inputs @ inputs.T\n")
    feedback = ex["attention_scores"].feedback
    assert ex["attention_scores"].status == "failed"  # explained: right on one sequence, raised on the batch
    assert "inputs.shape[-2:]" in feedback
    assert re.search(r"attention_scores\(<\[2, \d+, \d+(, \d+)?\] float(32|64)>\) raised:\n", feedback), feedback
    assert "ValueError" in feedback and "rows, cols = inputs.shape" in feedback


def test_exiting_mid_call_is_a_crash_of_that_exercise_only(tight, tmp_path):
    result, ex = grade_module(tight, tmp_path, "import os\ndef attention_scores(inputs):\n    os._exit(3)\n")
    assert ex["attention_scores"].status == "crashed"
    assert ex["softmax"].status == "passed" and ex["context_vector_loop"].status == "passed"


def test_exiting_at_import_costs_only_this_submission(tight, tmp_path):
    result, ex = grade_module(tight, tmp_path, "import sys\nsys.exit(0)\n")
    assert result.score == 0
    assert {e.status for e in ex.values()} <= {"crashed", "error"}
    result, ex = grade_module(tight, tmp_path, "")
    assert result.score == 100


def test_a_huge_output_is_refused(tight, tmp_path):
    _, ex = grade_module(tight, tmp_path, "def attention_scores(inputs):\n    return torch.zeros(3 * 10**7)\n")
    assert ex["attention_scores"].status == "error"
    assert "too much data" in ex["attention_scores"].feedback


def test_exhausting_memory_is_an_error_not_a_dead_grader(tight, tmp_path):
    _, ex = grade_module(tight, tmp_path, "def attention_scores(inputs):\n    return torch.empty(2**40)\n")
    assert ex["attention_scores"].status in ("error", "crashed")
    assert ex["softmax"].status == "passed"


def test_printed_fake_results_never_reach_the_grader_output(tight, tmp_path, capfd):
    grade_module(tight, tmp_path, "print('total 500/500 FAKE')\nimport os\nos.write(1, b'FAKE')\n")
    out, err = capfd.readouterr()
    assert "FAKE" not in out and "FAKE" not in err


def test_an_aliased_library_softmax_is_forbidden(tight, tmp_path):
    _, ex = grade_module(tight, tmp_path, "sm = torch.nn.functional.softmax\ndef softmax(x, dim=-1):\n"
                                          "    return sm(x, dim)\n")
    assert ex["softmax"].status == "forbidden" and "forbidden-op" in ex["softmax"].misconceptions


def test_log_softmax_then_exp_is_forbidden_too(tight, tmp_path):
    _, ex = grade_module(tight, tmp_path, "def softmax(x, dim=-1):\n    return x.log_softmax(dim).exp()\n")
    assert ex["softmax"].status == "forbidden"


def test_modifying_the_input_in_place_is_named(tight, tmp_path):
    _, ex = grade_module(tight, tmp_path, "_ref = softmax\ndef softmax(x, dim=-1):\n    out = _ref(x, dim)\n"
                                          "    with torch.no_grad():\n        x.mul_(1.0)\n    return out\n")
    assert ex["softmax"].status == "failed" and "input-mutated" in ex["softmax"].misconceptions


def test_patching_torch_the_test_helpers_or_returning_a_lying_subclass_gains_nothing(tight, tmp_path):
    _, ex = grade_module(tight, tmp_path, """
try:  # the grader's own helpers, as far as this process can reach them
    import grader.grading.compare, grader.grading.diagnose, grader.grading.fixture
    grader.grading.compare.difference = lambda *a, **k: None
    grader.grading.fixture.Grade.same = lambda *a, **k: None
    grader.grading.fixture.Grade.expect_close = lambda *a, **k: None
except Exception:
    pass
torch.allclose = lambda *a, **k: True
torch.Tensor.__eq__ = lambda self, other: True
class Liar(torch.Tensor):
    def __eq__(self, other):
        return True
def attention_scores(inputs):
    return torch.zeros(inputs.shape[:-1] + inputs.shape[-2:-1]).as_subclass(Liar)
""")
    assert ex["attention_scores"].status == "failed"


def test_hostile_exception_messages_are_contained(tight, tmp_path):
    _, ex = grade_module(tight, tmp_path, """
class Nasty(Exception):
    def __str__(self):
        raise RuntimeError("no")
class Huge(Exception):
    def __str__(self):
        return "x" * 10_000_000
def softmax(x, dim=-1):
    raise Nasty()
def attention_scores(inputs):
    raise Huge()
""")
    assert ex["softmax"].status == "error" and "could not be shown" in ex["softmax"].feedback
    assert ex["attention_scores"].status == "error" and len(ex["attention_scores"].feedback) < 10_000


class Watch:
    """Scans /proc from outside, in a thread, for processes whose command line holds ``marker``:
    what student code started (it execs ``sleep <marker>``), seen while grading runs or after."""

    def __init__(self, marker: str):
        import threading

        self.marker, self.seen, self._stop = marker, False, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def pids(self) -> list[int]:
        found = []
        for entry in os.listdir("/proc"):
            try:
                if entry.isdigit() and self.marker in Path(f"/proc/{entry}/cmdline").read_bytes().decode(errors="replace"):
                    found.append(int(entry))
            except OSError:
                pass
        return found

    def _run(self):
        while not self._stop.is_set():
            self.seen = self.seen or bool(self.pids())
            time.sleep(0.01)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def left(self, wait: float = 1.0) -> list[int]:
        """Processes with the marker still alive (not zombies) after ``wait`` seconds."""
        deadline = time.monotonic() + wait
        while True:
            alive = [pid for pid in self.pids() if Path(f"/proc/{pid}/stat").exists()
                     and Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0] != "Z"]
            if not alive or time.monotonic() > deadline:
                return alive
            time.sleep(0.05)


def _leaver(marker: str, depth: int, in_call: bool = True) -> str:
    """Student code that, when ``attention_scores`` is called (``in_call``; else once, as it is imported),
    starts a chain of ``depth`` processes, each in a new session, that re-fork and leave their parent, the
    last one a long ``sleep``. The code waits until the chain's last process is about to become the sleep (a
    byte through a pipe; its end, should the chain die first), then long enough for it to be seen from outside:
    on a loaded machine 40 forks of a torch-sized process took longer than a fixed wait."""
    return f"""
import os, time
def _leave():
    ready, told = os.pipe()
    if os.fork() == 0:
        os.close(ready)
        for _ in range({depth}):
            os.setsid()
            if os.fork() != 0:
                os._exit(0)
        os.write(told, b"1")
        os.execv("/bin/sleep", ["sleep", "{marker}"])
    os.close(told)
    os.read(ready, 1)
    os.close(ready)
    time.sleep(0.3)  # long enough for the chain to be seen from outside
def attention_scores(inputs):
    {"_leave()" if in_call else ""}
    return inputs @ inputs.transpose(-2, -1)
{"" if in_call else "_leave()"}
"""


def test_processes_forked_by_student_code_do_not_outlive_grading(tight, tmp_path):
    """The chain started as the module is imported (a process started during a graded call that the
    tracer watches is refused outright: grader/inside/worker.py), so every check still passes."""
    marker = f"4{os.getpid()}.5"
    with Watch(marker) as watch:
        _, ex = grade_module(tight, tmp_path, _leaver(marker, 1, in_call=False))
    assert watch.seen  # the attack ran
    assert ex["attention_scores"].status == "passed", ex["attention_scores"].feedback
    assert watch.left() == []


def test_a_deep_chain_of_setsid_escapees_dies_with_grading_and_spares_the_next_submission(tight, tmp_path):
    """Deeper than any walk over children: the PID namespace takes them all down (issue 10, item 2). Started as
    the module is imported: every call of a function is watched, and a process started during one is refused."""
    marker = f"5{os.getpid()}.5"
    with Watch(marker) as watch:
        grade_module(tight, tmp_path, _leaver(marker, 40, in_call=False))
        bystander, _ = grade_module(tight, tmp_path / "next" if (tmp_path / "next").mkdir() is None else None, "")
    assert watch.seen
    assert watch.left() == []
    assert bystander.score == 100


def test_the_worker_cannot_import_the_reference_by_name(tight, tmp_path):
    # solutions/ and suites/ are not on the worker's sys.path, so this import finds nothing
    _, ex = grade_module(tight, tmp_path, """
import sys
def attention_scores(inputs):
    assert not any('solutions' in p or 'suites' in p for p in sys.path), sys.path
    import importlib.util
    assert importlib.util.find_spec('test_01_attention_basics') is None
    return inputs @ inputs.transpose(-2, -1)
""")
    assert ex["attention_scores"].status == "passed", ex["attention_scores"].feedback


def test_the_worker_cannot_borrow_the_graders_helpers(tight, tmp_path):
    import grader.grading.diagnose  # noqa: F401 - loaded in this process, as in a long-lived grader

    _, ex = grade_module(tight, tmp_path, """
import sys
def softmax(x, dim=-1):
    assert 'grader.grading.diagnose' not in sys.modules and not hasattr(sys.modules['grader'], 'diagnose')
    from grader.grading.diagnose import safe_softmax
    return safe_softmax(x, dim)
def attention_scores(inputs):
    import grader.grading.fixture
    return inputs @ inputs.transpose(-2, -1)
""")
    assert ex["softmax"].status == "error" and "the grader is not available to your code" in ex["softmax"].feedback
    assert ex["attention_scores"].status == "error"


def test_a_not_implemented_error_raised_by_torch_is_an_error_not_a_stub(tight, tmp_path):
    _, ex = grade_module(tight, tmp_path, "def attention_scores(inputs):\n"
                                          "    return torch.zeros(2) | torch.zeros(2)\n")
    assert ex["attention_scores"].status == "error", ex["attention_scores"].feedback


def test_a_virtualenv_inside_the_course_stays_importable_but_the_reference_does_not(tmp_path):
    from grader.inside.importer import _reaches

    (tmp_path / "solutions").mkdir()
    (tmp_path / "suites").mkdir()
    blocked = (str(tmp_path / "solutions"), str(tmp_path / "suites"))
    assert not _reaches(str(tmp_path / ".venv" / "lib" / "python3.11" / "site-packages"), blocked)
    assert _reaches(str(tmp_path), blocked)  # `import solutions.x` would work from here
    assert _reaches(str(tmp_path / "solutions" / "01_attention_basics"), blocked)
    assert _reaches(str(tmp_path / "suites" / "hidden"), blocked)


def test_an_object_with_a_malicious_reduce_is_never_unpickled_by_the_grader(tight, tmp_path):
    marker = tmp_path / "pwned"
    _, ex = grade_module(tight, tmp_path, f"""
class Evil:
    def __reduce__(self):
        return (open, ({str(marker)!r}, "w"))
def attention_scores(inputs):
    return Evil()
""")
    assert ex["attention_scores"].status == "failed"
    assert not marker.exists()


def test_a_worker_that_answers_early_then_stops_reading_costs_one_time_limit(tight, tmp_path):
    """At import it writes a forged "ready" to its socket and sleeps: the grader's sends and
    receives have deadlines, so only its own exercises time out (issue 10, item 7)."""
    started = time.monotonic()
    _, ex = grade_module(tight, tmp_path, """
import io, os, socket, stat, struct, time
for fd in range(3, 64):
    try:
        if stat.S_ISSOCK(os.fstat(fd).st_mode):
            buffer = io.BytesIO()
            torch.save({"ok": True}, buffer)
            os.write(fd, struct.pack("!Q", len(buffer.getvalue())) + buffer.getvalue())
    except OSError:
        pass
time.sleep(1000)
""")
    assert {e.status for e in ex.values()} <= {"timeout", "crashed", "error"}
    assert time.monotonic() - started < 60


def test_a_compressed_reply_is_refused_and_inflates_nothing(tight, tmp_path):
    _, ex = grade_module(tight, tmp_path, """
import io, os, socket, stat, struct, zipfile
def attention_scores(inputs):
    plain, packed = io.BytesIO(), io.BytesIO()
    torch.save({"ok": True, "out": torch.zeros(1 << 24)}, plain)
    source = zipfile.ZipFile(plain)
    with zipfile.ZipFile(packed, "w", zipfile.ZIP_DEFLATED) as target:
        for entry in source.infolist():
            target.writestr(entry.filename, source.read(entry))
    for fd in range(3, 64):
        try:
            if stat.S_ISSOCK(os.fstat(fd).st_mode):
                os.write(fd, struct.pack("!Q", len(packed.getvalue())) + packed.getvalue())
        except OSError:
            pass
    os._exit(0)
""")
    assert ex["attention_scores"].status == "error"
    assert "other than plain tensors" in ex["attention_scores"].feedback
    assert ex["softmax"].status == "passed"


def test_the_worker_holds_nothing_of_the_graders_channels(tight, tmp_path):
    """Started fresh, the zygote (and every worker) has no queue, lock or pipe of the grader in its
    memory (issue 10, item 3): a hostile module finds none to block on."""
    _, ex = grade_module(tight, tmp_path, """
import gc, sys
def attention_scores(inputs):
    kinds = ("Queue", "SimpleQueue", "JoinableQueue", "SemLock", "Lock", "RLock", "Semaphore",
             "BoundedSemaphore", "Condition", "Event", "Connection", "Pipe")
    channels = [type(o).__name__ for o in gc.get_objects()
                if str(getattr(type(o), "__module__", "")).startswith(("multiprocessing", "_multiprocessing"))
                and type(o).__name__ in kinds]
    loaded = sorted(m for m in sys.modules if m.startswith(("grader.", "multiprocessing.queues", "pytest")))
    assert not channels and loaded == ["grader.inside", "grader.inside.heap", "grader.inside.importer",
                                      "grader.inside.notebook_source", "grader.inside.operators",
                                      "grader.inside.protocol", "grader.inside.stand_in", "grader.inside.syscalls",
                                      "grader.inside.tracer", "grader.inside.worker"], \
        (channels[:5], loaded)
    return inputs @ inputs.transpose(-2, -1)
""")
    assert ex["attention_scores"].status == "passed", ex["attention_scores"].feedback


def test_a_module_that_hangs_at_import_is_waited_for_once_and_the_other_modules_keep_their_points(course, grader,
                                                                                                 submission_dir):
    """Issue 11, item 2: 02 sleeps at import; its exercises time out at once after the first wait, and
    03, 04 and 05 (their own modules) are graded as usual."""
    module = submission_dir / "02_self_attention" / "self_attention.py"
    module.write_text("import time\ntime.sleep(3600)\n" + module.read_text())
    chosen = tuple(a for a in course.assignments if a.id != "01_attention_basics")
    started = time.monotonic()
    result = grader.grade(resolve_submission(submission_dir, course), chosen, seed=7)
    elapsed = time.monotonic() - started
    by_id = {a.id: a for a in result.assignments}
    assert {e.status for e in by_id["02_self_attention"].exercises} == {"timeout"}
    assert "time.sleep(3600)" in by_id["02_self_attention"].exercises[0].feedback  # where it hung
    limit = course.limits.exercise_timeout_s
    assert elapsed < 2 * limit + 40, elapsed  # one wait for 02's import, not one per check
    for assignment in ("03_causal_attention", "05_efficient_attention"):
        assert by_id[assignment].score == by_id[assignment].max_score, by_id[assignment].id


# --- what a submission holds of what a batch shares (issue 33) --------------------------------------


def _class_of(root: Path, people: dict[str, dict[str, str]]) -> Path:
    """A class folder: each person hands in the solution of each assignment named, with the text given
    appended to it."""
    for name, assignments in people.items():
        for assignment, extra in assignments.items():
            source = next((ROOT / "solutions" / assignment).glob("*.py"))
            folder = root / name / assignment
            folder.mkdir(parents=True)
            (folder / source.name).write_text(source.read_text() + extra)
    return root


def _batch(course, root: Path, out: Path, assignments: tuple[str, ...], *, workers: int) -> tuple[int, dict]:
    from grader.batch.autograde import autograde

    code = autograde(course=course, paths=[root], out=out, workers=workers, shard=None, resume=False, device="cpu",
                     seed=7, assignments=tuple(course.assignment(a) for a in assignments))
    return code, {p.stem: json.loads(p.read_text()) for p in out.glob("*.json") if p.stem != "manifest"}


def _statuses(result: dict) -> dict[str, str]:
    return {e["name"]: e["status"] for a in result["assignments"] for e in a["exercises"]}


@pytest.mark.slow
def test_threads_that_fill_a_submissions_process_limit_cost_it_its_next_module_never_a_grader_error(course, tmp_path):
    """Issue 33, item 1: 01 fills its process limit with sleeping threads at import and keeps them, so its
    02 module's worker cannot be forked. What the submission's own code holds is its own result
    (crashed, said in its terms), never grader-error (the zygote's probe and each submission's first
    worker, before any of its code, are what say the grader cannot confine); alice, graded in the same
    batch, keeps full marks."""
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from red_team import FILL_THREADS  # threads started until one cannot be, each asleep for ten minutes

    week = ("01_attention_basics", "02_self_attention")
    root = _class_of(tmp_path / "class", {"abel": {"01_attention_basics": FILL_THREADS, "02_self_attention": ""},
                                          "alice": {"01_attention_basics": "", "02_self_attention": ""}})
    code, results = _batch(course, root, tmp_path / "results", week, workers=2)
    assert set(results) == {"abel", "alice"}
    assert results["alice"]["score"] == 200 and set(_statuses(results["alice"]).values()) == {"passed"}
    abel = _statuses(results["abel"])
    assert "grader-error" not in abel.values() and code == 0, abel
    assert results["abel"]["score"] >= 100  # 01 is right: its threads cost it nothing there
    crashed = [e for a in results["abel"]["assignments"] for e in a["exercises"] if e["status"] == "crashed"]
    for exercise in crashed:  # where its limit is the kernel's to keep for it (a uid or a cgroup of its own)
        assert "your code used up the 128 processes and threads" in exercise["feedback"], exercise["feedback"]


FILL_DISK = """
import errno as _errno, os as _os
def _fill_disk(limit):
    written, stopped = 0, "never"
    try:
        while written < limit:
            with open(f"fill-{written >> 25}.bin", "wb") as out:
                for _ in range(32):
                    out.write(b"x" * (1 << 20))
                    out.flush()
                    written += 1 << 20
    except OSError as exc:
        stopped = _errno.errorcode.get(exc.errno, str(exc.errno))
    sparse = "written"
    try:
        with open("sparse.bin", "wb") as out:
            out.seek(1 << 40)
            out.write(b"x")
    except OSError as exc:
        sparse = _errno.errorcode.get(exc.errno, str(exc.errno))
    return {"written": written, "stopped": stopped, "sparse": sparse}
_found = _fill_disk(600 << 20)
def softmax(x, dim=-1):
    raise RuntimeError("DI" + "SK:" + repr(_found) + ":DI" + "SK")  # (the line as shown holds no marker)
"""


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["auto", "user-namespace"])
def test_a_submission_that_writes_its_working_folder_writes_nothing(course, tmp_path, monkeypatch, mode):
    """Issue 33, item 2: abel writes into its working folder until it is stopped (at most 600 MB, so that a
    grader without a quota is shown up without filling its disk), then a sparse file of 1 TiB. Since issue
    44 every worker sees its working copy read-only: EROFS at once, in its own code, which keeps its score
    (the working folder is still a file system of WORK_QUOTA bytes of the sandbox's own underneath). alice,
    graded next by the same zygote in the same batch, keeps full marks."""
    import ast

    from grader.sandbox import confine

    if mode == "user-namespace":  # what an ordinary user gets (the same code path, as root here)
        if not confine.plan("auto").sandboxed:
            pytest.skip("no sandbox on this machine")
        bwrap = confine.find_bwrap()
        monkeypatch.setattr(confine, "plan", lambda setting, hidden=(): confine.Confinement("user-namespace", bwrap))
    elif not confine.plan("auto").sandboxed:
        pytest.skip("no sandbox on this machine: the working folder has no quota (docs/security.md)")
    root = _class_of(tmp_path / "class", {"abel": {"01_attention_basics": FILL_DISK},
                                          "alice": {"01_attention_basics": ""}})
    code, results = _batch(course, root, tmp_path / "results", ("01_attention_basics",), workers=1)
    assert code == 0 and set(results) == {"abel", "alice"}
    assert results["alice"]["score"] == 100 and set(_statuses(results["alice"]).values()) == {"passed"}
    # all but its softmax, which says what it found: simple_self_attention, which calls it, is right with a
    # right softmax in its place (grader/grading/stand_ins.py), so that raise costs once
    assert results["abel"]["score"] == 75
    feedback = {e["name"]: e["feedback"] for a in results["abel"]["assignments"] for e in a["exercises"]}["softmax"]
    found = ast.literal_eval(feedback.split("DISK:")[1].split(":DISK")[0])
    assert found["stopped"] == "EROFS" and found["written"] == 0, found
    assert found["sparse"] == "EROFS", found


KEPT = {  # what a module keeps at import, 64 MiB, where no process of it maps the memory
    "tmp": "\nopen('/tmp/kept.bin', 'wb').write(b'x' * (64 << 20))\n",
    "memfd": "\nimport os as _os\n_kept = _os.memfd_create('kept')\n_os.write(_kept, b'x' * (64 << 20))\n",
}


@pytest.mark.parametrize("where", sorted(KEPT))
def test_the_grader_reads_what_a_submission_keeps_where_no_process_maps_it(course, tmp_path, where):
    """Issues 33 and 44: held_bytes, read from outside, counts the files a submission keeps in its sandbox's
    tmpfs and the memfds it holds open (a cache written into an unmapped memfd grew in no reading before):
    the same solution holds 60 MiB more for keeping 64 MiB there."""
    from test_submission_sandbox import worker_spec

    from grader.sandbox.submission_sandbox import Sandbox
    from grader.sandbox.confine import plan

    if not plan("auto").sandboxed:
        pytest.skip("no sandbox on this machine")
    sandbox = Sandbox(course, plan("auto"))

    def held(name, text):
        module = tmp_path / name / "attention_basics.py"
        module.parent.mkdir()
        module.write_text(text)
        cell = sandbox.cell(resolve_submission(module, course))
        worker = sandbox.zygote.spawn(worker_spec(sandbox, cell), timeout=60)
        try:
            assert worker.import_error is None, worker.import_error
            return worker.held_bytes()
        finally:
            worker.kill()
            sandbox.end(cell, gone=sandbox.zygote.end_submission())

    try:
        plain = held("plain", SOLUTION)
        assert held("kept", SOLUTION + KEPT[where]) - plain >= 60 << 20
    finally:
        sandbox.close()


def test_a_submission_cannot_change_its_working_copy(course, tmp_path):
    """Issue 44: a module rewrote its own file after the grader had read it (the reading then judged the
    honest text it put back), or another assignment's before that one was imported. Every worker sees the
    working copy read-only: the module's own file, a new file beside it, a folder that would shadow a
    sibling module; its stack file alone is written."""
    from test_submission_sandbox import worker_spec

    from grader.sandbox.submission_sandbox import Sandbox
    from grader.sandbox.confine import plan

    if not plan("auto").sandboxed:
        pytest.skip("no sandbox on this machine")
    probe = '''
import errno as _errno, os as _os
def _try(action):
    try:
        action()
        return "done"
    except OSError as exc:
        return _errno.errorcode.get(exc.errno, str(exc.errno))
_FOUND = {"own": _try(lambda: open(__file__, "a").write("#")),
          "beside": _try(lambda: open("beside.py", "w").write("x = 1")),
          "package": _try(lambda: _os.mkdir("causal_attention"))}
raise RuntimeError("FO" + "UND" + repr(_FOUND) + "FO" + "UND")
'''
    module = tmp_path / "attention_basics.py"
    module.write_text(SOLUTION + probe)
    sandbox = Sandbox(course, plan("auto"))
    try:
        cell = sandbox.cell(resolve_submission(module, course))
        worker = sandbox.zygote.spawn(worker_spec(sandbox, cell), timeout=60)
        found = str(worker.import_error).split("FOUND")[-2]
        worker.kill()
        sandbox.end(cell, gone=sandbox.zygote.end_submission())
    finally:
        sandbox.close()
    assert found.replace("\\'", "'") == repr({"own": "EROFS", "beside": "EROFS", "package": "EROFS"})


SLEEPS_ONCE = """
import time as _time
_right_softmax, _slept = softmax, []
def softmax(x, dim=-1):
    if not _slept:
        _slept.append(1)
        _time.sleep(3.0)
    return _right_softmax(x, dim)
"""


def test_a_worker_starved_of_processors_is_given_the_time_it_waited(tight, tmp_path, monkeypatch):
    """Round 5 of issue 44: another submission's spinners, each in a session of its own, starved a bystander's
    call past its limit (frank 200 -> 140). A call's deadline moves by the time its worker waited for a
    processor, read from the kernel: here the reading says it waited all along, so a 3 s call within a 2 s
    limit is graded, where without that reading it runs out of time."""
    from grader.sandbox import client

    result, ex = grade_module(tight, tmp_path, SLEEPS_ONCE)
    assert ex["softmax"].status == "timeout"  # its own 3 s: no processor was waited for
    started = time.monotonic()
    monkeypatch.setattr(client, "_run_queue_wait", lambda fd: time.monotonic() - started)
    result, ex = grade_module(tight, tmp_path, SLEEPS_ONCE)
    assert ex["softmax"].status == "passed", ex["softmax"].feedback


def test_a_starved_call_still_stops_at_its_bound(tight, tmp_path, monkeypatch):
    """The deadline moves at most to STARVED_FACTOR times the limit: a loop that never ends stops there."""
    from grader.sandbox import client

    started = time.monotonic()
    monkeypatch.setattr(client, "_run_queue_wait", lambda fd: time.monotonic() - started)
    monkeypatch.setattr(client, "STARVED_FACTOR", 2)
    began = time.monotonic()
    result, ex = grade_module(tight, tmp_path, "def softmax(x, dim=-1):\n    while True:\n        pass\n")
    assert ex["softmax"].status == "timeout"
    assert time.monotonic() - began < 20


def test_the_run_queue_read_is_the_workers_own(tight, tmp_path, monkeypatch):
    """The wait is read from the worker's own /proc/PID/schedstat, found by the pid its zygote gave."""
    from grader.sandbox import client

    found = []
    opened = client.run_queue_file

    def recorded(root_pid, pid):
        fd = opened(root_pid, pid)
        path = os.readlink(f"/proc/self/fd/{fd}") if fd is not None else ""
        comm = Path(path).with_name("comm").read_text().strip() if path else ""
        found.append((fd is not None, comm, client._run_queue_wait(fd) >= 0))
        return fd

    monkeypatch.setattr(client, "run_queue_file", recorded)
    grade_module(tight, tmp_path, "")
    assert found and all(f == (True, "grade-worker", True) for f in found), found


KEEPS = "\n_kept = b'x' * (64 << 20)\n"  # 64 MiB held from import on


def test_a_twin_zygote_reads_its_own_workers_memory_and_the_first_leaves_it_out(course, tmp_path):
    """Issue 47 (grader.sandbox.client.ZygoteClient.twin, grader/grading/twins.py): the twin's workers are the twin's
    to read: 64 MiB a twin's worker holds shows in its reading and not in the first zygote's, whose readings leave
    the twin's tree out while it runs."""
    from test_submission_sandbox import worker_spec

    from grader.sandbox.confine import plan
    from grader.sandbox.submission_sandbox import Sandbox

    if not plan("auto").sandboxed:
        pytest.skip("no sandbox on this machine")
    module = tmp_path / "attention_basics.py"
    module.write_text(SOLUTION + KEEPS)
    sandbox = Sandbox(course, plan("auto"))
    try:
        cell = sandbox.cell(resolve_submission(module, course))
        first = sandbox.zygote.spawn(worker_spec(sandbox, cell), timeout=60)
        before = first.held_bytes()
        twin = sandbox.zygote.twin()
        assert twin is not None and twin.memory_root in sandbox.zygote.skipped
        second = twin.spawn(worker_spec(sandbox, cell), timeout=60)
        assert second.import_error is None, second.import_error
        assert second.held_bytes() >= 60 << 20
        assert first.held_bytes() - before < 30 << 20
        assert twin.end_submission()
        twin.close()
        assert twin.memory_root not in sandbox.zygote.skipped
        first.kill()
        sandbox.end(cell, gone=sandbox.zygote.end_submission())
    finally:
        sandbox.close()
