"""Where the floor is: what grading the solutions would cost if nothing ran but the student's own
computation and the comparisons with the reference (issue 24), and what stands above it on the student's side.

One grading of the whole course (the solutions as the submission, module and notebook, one seed)
records every request the grader sends the student's processes, the time it waited for their replies, and
times every comparison. The student's side is then run again here, twice, in this one process:
- alone: each module imported, each instance built and given its weights, each call made with its inputs
  and its gradient, nothing else (no sandbox, no protocol, no tracer, no copies): the floor;
- through the worker's own handling of each request (grader.inside.worker.Server: the tracer, the inputs'
  copies, the protocol's decoding and encoding), with no process, sandbox or socket between.
What the grading waited for beyond the second is the processes' cost (forks, exits, the sandbox, the round
trips, a fresh process's first touches). Ratios are to a bare `python -c "import torch"` measured in the same run.

    python benchmarks/floor.py [--seed 7]
"""
from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))


def record(seed: int):
    """One grading of the solutions: the requests each worker got, in order, and the comparisons' time."""
    import grader.grading.compare as compare
    import grader.grading.diagnose as diagnose
    import grader.grading.fixture as harness
    from grader.config import load_course
    from grader.grading.grader import Grader
    from grader.sandbox import client
    from grader.submission import resolve_submission

    course = load_course(ROOT)
    requests: list[tuple[str, int, dict]] = []  # (module, which worker, request)
    compared = [0.0]
    waited: dict[str, float] = {}  # module -> seconds the grading waited for its workers' replies
    grading = {"wall": 0.0, "starts": 0.0}  # the grading's seconds in all, and waiting for workers to start
    original_send, original_receive, original_difference = client.Worker.send, client.Worker.receive, compare.difference

    def send(self, payload, **kwargs):  # every request goes through send (Worker.request too)
        requests.append((self.spec.module_name, id(self), payload))
        return original_send(self, payload, **kwargs)

    def receive(self, **kwargs):
        started = time.perf_counter()
        try:
            return original_receive(self, **kwargs)
        finally:
            name = self.spec.module_name
            waited[name] = waited.get(name, 0.0) + time.perf_counter() - started

    def difference(*args, **kwargs):
        started = time.perf_counter()
        try:
            return original_difference(*args, **kwargs)
        finally:
            compared[0] += time.perf_counter() - started

    users = (compare, harness, diagnose)  # every module that calls difference, as imported there
    original_take, original_spawn = client.ZygoteClient.take, client.ZygoteClient.spawn

    def started_worker(original):
        def wait(self, *args, **kwargs):
            started = time.perf_counter()
            try:
                return original(self, *args, **kwargs)
            finally:
                grading["starts"] += time.perf_counter() - started
        return wait

    client.Worker.send, client.Worker.receive = send, receive
    client.ZygoteClient.take, client.ZygoteClient.spawn = started_worker(original_take), started_worker(original_spawn)
    for user in users:
        user.difference = difference
    grader = Grader(course, device="cpu")
    try:
        submission = resolve_submission(ROOT / "solutions", course)
        started = time.perf_counter()
        result = grader.grade(submission, course.assignments, seed=seed)
        grading["wall"] = time.perf_counter() - started
    finally:
        grader.close()
        client.Worker.send, client.Worker.receive = original_send, original_receive
        client.ZygoteClient.take, client.ZygoteClient.spawn = original_take, original_spawn
        for user in users:
            user.difference = original_difference
    assert result.full_marks, "the solutions must score full marks"
    return course, requests, compared[0], waited, grading


def _modules(course, requests) -> dict:
    """Each module the requests name, imported from the solutions (once: as one worker would)."""
    modules = {}
    for assignment in course.assignments:
        folder = str(course.layout.solution_folder(assignment))
        if folder not in sys.path:  # (called once a run, six runs)
            sys.path.insert(0, folder)
    for name, _, _ in requests:
        if name not in modules:
            path = next(course.layout.solution_module(a) for a in course.assignments if a.module_name == name)
            spec = importlib.util.spec_from_file_location(name, path)
            modules[name] = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(modules[name])
    return modules


def replay(course, requests) -> dict[str, float]:
    """The student's own computation alone: seconds spent building instances and running calls, by module."""
    import torch

    from grader.inside.protocol import HandleRef, flatten

    torch.set_num_threads(1)
    modules, workers, spent = _modules(course, requests), {}, {}

    def resolve(value):
        if isinstance(value, HandleRef):
            return handles[value.id]
        if isinstance(value, (list, tuple)):
            return type(value)(resolve(v) for v in value)
        if isinstance(value, dict):
            return {k: resolve(v) for k, v in value.items()}
        return value

    for name, worker, payload in requests:
        handles = workers.setdefault(worker, {})  # a worker's instances are numbered from 1
        module, op = modules[name], payload.get("op")
        started = time.perf_counter()
        if op == "new":
            try:
                instance = getattr(module, payload["name"])(*resolve(payload["args"]), **resolve(payload["kwargs"]))
            except Exception:  # noqa: BLE001 - a check that expects a raise (bad arguments)
                spent[name] = spent.get(name, 0.0) + time.perf_counter() - started
                continue
            if payload.get("dtype") is not None:
                instance = instance.to(payload["dtype"])
            instance.train(payload.get("training", True))
            with torch.no_grad():
                own = dict(instance.named_parameters())
                for key, value in (payload.get("params") or {}).items():
                    own[key].copy_(value)
            handles[len(handles) + 1] = instance
        elif op == "load":
            with torch.no_grad():
                own = dict(handles[payload["handle"]].named_parameters())
                for key, value in payload["params"].items():
                    own[key].copy_(value)
        elif op == "mode":
            handles[payload["handle"]].train(payload["train"])
        elif op == "call":
            target = payload["target"]
            if isinstance(target, HandleRef):
                owner = handles[target.id]
                fn = getattr(owner, payload["method"]) if payload.get("method") else owner
            else:
                fn = getattr(module, target)
            args, kwargs = resolve(payload["args"]), resolve(payload["kwargs"])
            tensors = [a for a in flatten(args) if isinstance(a, torch.Tensor)]
            grad_out, chosen = payload.get("grad_out"), payload.get("grad_args")
            if grad_out is not None:
                for index, tensor in enumerate(tensors):
                    if tensor.is_floating_point() and (chosen is None or index in chosen):
                        tensor.requires_grad_(True)
            if payload.get("seed") is not None:
                torch.default_generator.manual_seed(payload["seed"])
            try:
                with torch.set_grad_enabled(payload.get("grad_enabled") is not False or grad_out is not None):
                    out = fn(*args, **kwargs)
                if grad_out is not None and isinstance(out, torch.Tensor) and out.requires_grad \
                        and grad_out.shape == out.shape:
                    (out * grad_out.to(out.dtype)).sum().backward()
            except Exception:  # noqa: BLE001 - a check that expects a raise (bad arguments)
                pass
        spent[name] = spent.get(name, 0.0) + time.perf_counter() - started
    return spent


def through_the_worker(course, requests) -> dict[str, float]:
    """The same requests handled as a worker handles them (grader.inside.worker.Server: decoded from the wire,
    watched by the tracer, the reply encoded), in this process: seconds by module. Objects made before the first
    request are frozen out of the collector, as the zygote's are (a worker's ``drop`` collects)."""
    import gc
    import threading

    import torch

    import grader.inside.worker as worker
    from grader.inside import protocol

    torch.set_num_threads(1)
    modules, servers, spent = _modules(course, requests), {}, {}
    wire = [(name, number, protocol.encode(payload)) for name, number, payload in requests]
    worker._MAIN[0] = threading.get_ident()  # the serving thread (worker.strangers)
    watch = worker.StackWatch()  # (its file, .grade-stack, in a scratch folder: see main)
    gc.freeze()
    try:
        for name, number, message in wire:
            if number not in servers:
                spec = protocol.WorkerSpec(module_name=name, source=modules[name].__file__, search_path=(),
                                           workdir=".", student_root=str(ROOT / "solutions"), display_map=(),
                                           device="cpu", memory_bytes=1 << 34, reply_limit=1 << 34)
                servers[number] = worker.Server(spec, modules[name], watch, None)
            started = time.perf_counter()
            request = protocol.decode(message, limit=protocol.REQUEST_LIMIT)
            try:
                answer = servers[number].handle(request)
            except BaseException as exc:  # noqa: BLE001 - as the worker answers a raise
                answer = worker._error_reply(exc, servers[number].spec)
            protocol.encode(answer)
            spent[name] = spent.get(name, 0.0) + time.perf_counter() - started
    finally:
        watch.disarm()
        watch.file.close()
        gc.unfreeze()
    return spent


def main() -> None:
    import os
    import tempfile

    from bench_autograde import torch_import_times

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=7)
    seed = parser.parse_args().seed
    before = torch_import_times()
    from grader.grading.grader import import_torch

    import_torch()
    course, requests, compared, waited, grading = record(seed)
    computed = _best(lambda: replay(course, requests))  # its own noise: the best of three
    with tempfile.TemporaryDirectory() as scratch:
        here = os.getcwd()
        os.chdir(scratch)  # the worker's stack file is written in its folder
        try:
            handled = _best(lambda: through_the_worker(course, requests))
        finally:
            os.chdir(here)
    torch_s = statistics.median(before + torch_import_times())
    floor = sum(computed.values()) + compared
    print(f"import torch (median of 6)                       {torch_s:6.2f} s")
    print(f"{'module':<22} {'requests':>8} {'alone':>8} {'through the worker':>19} {'waited for in the grading':>26}")
    for name in waited:
        count = sum(1 for module, _, _ in requests if module == name)
        print(f"{name:<22} {count:>8} {computed.get(name, 0):>7.3f}s {handled.get(name, 0):>18.3f}s "
              f"{waited[name]:>25.3f}s")
    print(f"{'all':<22} {len(requests):>8} {sum(computed.values()):>7.3f}s {sum(handled.values()):>18.3f}s "
          f"{sum(waited.values()):>25.3f}s")
    own = grading["wall"] - grading["starts"] - sum(waited.values())
    print(f"the grading ({grading['wall']:.3f} s, the first in its process) waited {grading['starts']:.3f} s for "
          f"workers to start (the zygote's torch import too); the grader's own work {own:.3f} s")
    print(f"the comparisons                                   {compared:6.3f} s")
    print(f"floor of grade check, whole course: import torch + both = {1 + floor / torch_s:.2f}x")
    print(f"floor of grade autograde --workers 2, per submission: both / 2 = {floor / 2 / torch_s:.3f}x")


def _best(run) -> dict[str, float]:
    """The best of three runs, by their sum (this machine's noise)."""
    return min((run() for _ in range(3)), key=lambda spent: sum(spent.values()))


if __name__ == "__main__":
    main()
