"""Work a graded call hands to another thread or process (issue 33): torch's modes are per thread, so the
worker's tracer saw nothing of it; a forbidden operation passed and a measure read nothing. Each route
below is now refused (grader/inside/worker.py, ``watch_threads``), and the reference keeps full marks. Since
issue 44 the grading process refuses most of them before anything runs (a file naming ``threading``,
``multiprocessing`` or ``os`` is not observed: grader/grading/observable.py); the worker's own refusal, the
second line, is tested on its parts below."""
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tests" / "corpus"))
import corpus  # noqa: E402

BLOCK_CHECK = {"hidden": "online_softmax_walks_over_blocks", "public": "online_softmax_works_block_by_block"}

SOFTMAX = {  # softmax(x, dim) by torch.softmax, which the exercise forbids, computed in another thread
    "threading.Thread": """import threading
import torch


def softmax(x, dim=-1):
    out = []
    worker = threading.Thread(target=lambda: out.append(torch.softmax(x, dim)))
    worker.start()
    worker.join()
    return out[0]
""",
    "ThreadPoolExecutor": """from concurrent.futures import ThreadPoolExecutor
import torch


def softmax(x, dim=-1):
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(torch.softmax, x, dim).result()
""",
    "a thread started at import, fed through a queue": """import queue
import threading
import torch
_JOBS = queue.Queue()
threading.Thread(target=lambda: [job() for job in iter(_JOBS.get, None)], daemon=True).start()


def softmax(x, dim=-1):
    done = queue.Queue()
    _JOBS.put(lambda: done.put(torch.softmax(x, dim)))
    return done.get()
""",
    "_thread.start_new_thread": """import _thread
import torch


def softmax(x, dim=-1):
    out, lock = [], _thread.allocate_lock()
    lock.acquire()
    _thread.start_new_thread(lambda: (out.append(torch.softmax(x, dim)), lock.release()), ())
    lock.acquire()
    return out[0]
""",
}

WHOLE_ROW = """def _whole_rows(x):
    m = x.amax(dim=-1, keepdim=True)
    m = torch.where(torch.isinf(m), torch.zeros_like(m), m)
    e = torch.exp(x - m)
    return e / e.sum(dim=-1, keepdim=True).clamp_min(1.0)


def online_softmax(x, block_size):
    for start in range(0, x.shape[-1], block_size):
        x[..., start:start + block_size].amax(dim=-1)  # a step per block, its result unused
    {route}
"""

ONLINE = {  # online_softmax's whole-row reduction computed in another thread or process
    "threading.Thread": "import threading\nimport torch\n\n\n" + WHOLE_ROW.format(route="""out = []
    worker = threading.Thread(target=lambda: out.append(_whole_rows(x)))
    worker.start()
    worker.join()
    return out[0]"""),
    "ThreadPoolExecutor": "from concurrent.futures import ThreadPoolExecutor\nimport torch\n\n\n" + WHOLE_ROW.format(
        route="""with ThreadPoolExecutor(1) as pool:
        return pool.submit(_whole_rows, x).result()"""),
    "os.fork, the result sent through a pipe": "import os\nimport pickle\nimport torch\n\n\n" + WHOLE_ROW.format(
        route="""read, write = os.pipe()
    if os.fork() == 0:  # the child inherits the tracer, whose figures stay in the child
        os.write(write, pickle.dumps(_whole_rows(x.detach())))
        os._exit(0)
    os.close(write)
    data = b""
    while chunk := os.read(read, 1 << 16):
        data += chunk
    os.close(read)
    os.wait()
    return pickle.loads(data)"""),
}


def graded(source, course, grader, tmp_path, suite="hidden"):
    path = tmp_path / "threaded_variant.py"
    path.write_text(textwrap.dedent(source))
    entry = corpus._entry(path, None)
    return corpus.grade_all([entry], course, grader, tmp_path / "graded", seed=2024, suite=suite,
                            quick=True)[entry.name][0]


def failing(exercise) -> dict:
    return {check.name: check.message for check in exercise.checks if check.status != "passed"}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SOFTMAX))
def test_a_forbidden_operation_in_another_thread_is_refused(course, grader, tmp_path, name):
    exercise = graded(SOFTMAX[name], course, grader, tmp_path)
    assert exercise.status != "passed", (name, exercise.feedback[:600])
    messages = " ".join(failing(exercise).values())
    assert "softmax, which this exercise forbids" in messages or messages.startswith("not observed: "), \
        (name, messages[:600])


@pytest.mark.slow
@pytest.mark.parametrize("name", list(ONLINE))
def test_a_whole_row_reduced_in_another_thread_or_process_loses_the_block_check(course, grader, tmp_path, name):
    exercise = graded(ONLINE[name], course, grader, tmp_path)
    lost = failing(exercise)
    assert BLOCK_CHECK["hidden"] in lost, (name, exercise.feedback[:600])
    said = lost[BLOCK_CHECK["hidden"]]
    assert "the grader must see every operation" in said or said.startswith("not observed: "), lost


@pytest.mark.slow
def test_the_reference_keeps_full_marks(course, grader):
    from grader.submission import resolve_submission

    assignments = tuple(course.assignment(a) for a in ("01_attention_basics", "05_efficient_attention"))
    result = grader.grade(resolve_submission(ROOT / "solutions", course), assignments, seed=2024)
    for assignment in result.assignments:
        for exercise in assignment.exercises:
            assert exercise.status == "passed", (exercise.name, exercise.feedback[:600])


# --- the worker's parts, in this process ----------------------------------------------------------------
def test_a_thread_under_sentries_reports_to_the_watched_call_only():
    import threading

    import torch

    from grader.inside import worker

    x = torch.randn(3)

    def in_a_thread(tracer):
        worker._CALL[0] = tracer
        try:
            thread = threading.Thread(target=worker._sentried, args=(torch.softmax, (x, -1), {}))
            thread.start()
            thread.join()
        finally:
            worker._CALL[0] = None

    watched = worker.make_tracer(frozenset({"softmax", "_softmax"}), measure=True)
    in_a_thread(watched)
    assert watched.forbidden[0] == "softmax" and "another thread (Thread-" in watched.elsewhere
    assert watched.count == 0  # the calling thread's own figures are its own
    quiet = worker.make_tracer(frozenset({"softmax"}))
    in_a_thread(None)  # no watched call in progress: the thread's operations are nobody's
    assert quiet.forbidden == [] and quiet.elsewhere is None


def test_a_thread_without_sentries_is_a_stranger_and_a_process_start_is_refused_in_a_call(monkeypatch):
    import _thread
    import sys
    import threading

    from grader.inside import worker

    # the test runner's own threads (pytest-xdist's execnet runs one) are not the worker's: left out
    runner = set(sys._current_frames()) - {threading.get_ident()}
    frames = sys._current_frames
    monkeypatch.setattr(sys, "_current_frames", lambda: {k: f for k, f in frames().items() if k not in runner})
    stop, ready = threading.Event(), threading.Event()
    main, worker._MAIN[0] = worker._MAIN[0], threading.get_ident()
    try:  # started as the worker's _thread.start_new_thread starts every thread
        _thread.start_new_thread(worker._sentried, (lambda: (ready.set(), stop.wait()), (), {}))
        ready.wait()
        assert worker.strangers() is None
        plain = threading.Thread(target=stop.wait)  # as a thread started from C: no sentries
        plain.start()
        assert "cannot watch" in worker.strangers()
    finally:
        stop.set()
        worker._MAIN[0] = main
    started = []
    fork = worker._refused_in_a_call(lambda: started.append(1) or 7, "os.fork")
    assert fork() == 7 and started == [1]  # outside a watched call, as it was
    tracer = worker.make_tracer(frozenset(), measure=True)
    worker._CALL[0] = tracer
    try:
        with pytest.raises(worker.Elsewhere, match="grader must see every operation"):
            fork()
    finally:
        worker._CALL[0] = None
    assert started == [1] and tracer.elsewhere == "another process (os.fork)"
