"""One grader's sandbox and a cell per submission (grader/sandbox/submission_sandbox.py): what grading/grader.py reaches
student code through."""
import os
from pathlib import Path

import pytest
import torch

from grader.sandbox.submission_sandbox import Sandbox
from grader.sandbox.confine import FIRST_UID, plan
from grader.submission import resolve_submission

ROOT = Path(__file__).resolve().parents[3]


def worker_spec(sandbox, cell, assignment="01_attention_basics", module="attention_basics"):
    """What the grader asks the zygote for, for ``cell``'s module of ``assignment`` (paths as the sandbox sees them)."""
    from grader.inside.protocol import WorkerSpec

    inside = sandbox.zygote.inside
    source = cell.copy.sources[assignment]
    return WorkerSpec(module_name=module, source=inside(source), search_path=(inside(source.parent),),
                      workdir=inside(source.parent), student_root=inside(cell.copy.root), display_map=(), device="cpu",
                      memory_bytes=1 << 30, reply_limit=1 << 26, uid=cell.uid, cgroups=cell.cgroups)


def test_a_cell_is_a_working_copy_its_own_uid_and_cgroup_and_goes_with_its_end(course):
    sandbox = Sandbox(course, plan("auto"))
    try:
        submission = resolve_submission(ROOT / "solutions" / "01_attention_basics", course)
        first, second = sandbox.cell(submission), sandbox.cell(submission)
        assert first.copy.root.is_dir() and first.copy.root.parent == sandbox.zygote.work
        if sandbox.confinement.root:
            assert FIRST_UID < first.uid != second.uid and os.stat(first.copy.root).st_uid == first.uid
        if sandbox.hierarchy is not None:
            assert all(folder.is_dir() for folder in first.cgroup.folders) and first.cgroups
        zygote = sandbox.zygote
        sandbox.end(first, gone=True)  # the zygote vouched for it: kept
        assert sandbox.zygote is zygote and not first.copy.root.exists()
        assert first.cgroup is None or not any(folder.exists() for folder in first.cgroup.folders)
        sandbox.end(second, gone=False)  # it could not: a fresh zygote for the next submission
        assert sandbox.zygote is not zygote and not second.copy.root.exists()
    finally:
        sandbox.close()
    assert sandbox.hierarchy is None


def test_a_cells_process_is_started_in_its_cgroups_before_its_first_worker_and_forks_it(course):
    """Joining a cgroup waits for the kernel: a cell's submission process is started when the cell is
    made (the zygote ready), not at its first worker, and that worker is then forked by it."""
    import time

    import pytest

    sandbox = Sandbox(course, plan("auto"))
    try:
        if sandbox.hierarchy is None:
            pytest.skip("no cgroups here")
        sandbox.zygote.wait_ready()
        cell = sandbox.cell(resolve_submission(ROOT / "solutions" / "01_attention_basics", course))
        procs = [folder / "cgroup.procs" for folder in cell.cgroup.folders]
        deadline = time.monotonic() + 10
        while not procs[0].read_text().split() and time.monotonic() < deadline:
            time.sleep(0.01)
        started = set(procs[0].read_text().split())
        assert len(started) == 1  # the submission's process, and no worker yet
        worker = sandbox.zygote.spawn(worker_spec(sandbox, cell), timeout=60)
        assert worker.import_error is None
        assert started < set(procs[0].read_text().split())  # the same process forked the worker
        worker.kill()
        sandbox.end(cell, gone=sandbox.zygote.end_submission())
    finally:
        sandbox.close()


def test_workers_asked_for_ahead_are_taken_in_any_order_and_those_never_taken_close_with_the_submission(course):
    """Issue 47: a submission's workers are asked of the zygote ahead (each forks and imports while the grader
    goes on) and taken at their first check: the zygote answers in the order it was asked, so taking the
    second first keeps the first's answer for its turn; one never taken is killed with the submission, and
    its channel closed here."""
    sandbox = Sandbox(course, plan("auto"))
    try:
        cell = sandbox.cell(resolve_submission(ROOT / "solutions" / "01_attention_basics", course))
        spec = worker_spec(sandbox, cell)
        first, second, unused = (sandbox.zygote.spawn_ahead(spec) for _ in range(3))
        later = sandbox.zygote.take(second, spec, timeout=60)
        earlier = sandbox.zygote.take(first, spec, timeout=60)
        assert earlier.pid != later.pid and earlier.import_error is None and later.import_error is None
        for worker in (earlier, later):
            reply = worker.request({"op": "call", "target": "softmax", "args": [torch.zeros(2)], "kwargs": {}},
                                   timeout=60)
            assert reply["ok"] and torch.equal(reply["out"], torch.full((2,), 0.5))
        assert sandbox.zygote.end_submission()
        assert sandbox.zygote.spawned == {} and sandbox.zygote.owed == [] and unused
        sandbox.end(cell, gone=True)
    finally:
        sandbox.close()


@pytest.mark.gpu
def test_a_cuda_worker_makes_its_context_while_it_waits_for_its_first_request(course):
    """Issue 47, on a GPU: a worker asked for ahead starts CUDA before its first call (grader.inside.worker.warm_device),
    while the grader grades the assignments before it: libcuda is mapped in it before any request is sent."""
    import dataclasses
    import time

    sandbox = Sandbox(course, plan("auto"))
    try:
        cell = sandbox.cell(resolve_submission(ROOT / "solutions" / "01_attention_basics", course))
        spec = dataclasses.replace(worker_spec(sandbox, cell), device="cuda")
        worker = sandbox.zygote.take(sandbox.zygote.spawn_ahead(spec), spec, timeout=120)
        from grader.sandbox.client import host_pid

        pid = host_pid(sandbox.zygote.process.pid, worker.pid)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and "libcuda" not in Path(f"/proc/{pid}/maps").read_text():
            time.sleep(0.2)
        assert "libcuda" in Path(f"/proc/{pid}/maps").read_text()
        worker.kill()
        sandbox.end(cell, gone=sandbox.zygote.end_submission())
    finally:
        sandbox.close()
