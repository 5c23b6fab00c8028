"""Where the floor is: what grading the solutions would cost if nothing ran but the student's own
computation and the comparisons with the reference (issue 24).

One grading of the whole course (the solutions as the submission, module and notebook, one seed)
records every request the grader sends the student's processes and times every comparison. The
student's side is then run again here, alone: each module imported, each instance built and given its
weights, each call made with its inputs and its gradient, nothing else (no sandbox, no protocol, no
tracer, no copies). Ratios are to a bare `python -c "import torch"` measured in the same run.

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
    requests: list[tuple[str, dict]] = []
    compared = [0.0]
    original_request, original_difference = client.Worker.request, compare.difference

    def request(self, payload, **kwargs):
        requests.append((self.spec.module_name, payload))
        return original_request(self, payload, **kwargs)

    def difference(*args, **kwargs):
        started = time.perf_counter()
        try:
            return original_difference(*args, **kwargs)
        finally:
            compared[0] += time.perf_counter() - started

    users = (compare, harness, diagnose)  # every module that calls difference, as imported there
    client.Worker.request = request
    for user in users:
        user.difference = difference
    grader = Grader(course, device="cpu")
    try:
        result = grader.grade(resolve_submission(ROOT / "solutions", course), course.assignments, seed=seed)
    finally:
        grader.close()
        client.Worker.request = original_request
        for user in users:
            user.difference = original_difference
    assert result.full_marks, "the solutions must score full marks"
    return course, requests, compared[0]


def replay(course, requests) -> float:
    """The student's own computation alone: seconds spent building instances and running calls."""
    import torch

    from grader.inside.protocol import HandleRef, flatten

    torch.set_num_threads(1)
    for assignment in course.assignments:
        sys.path.insert(0, str(course.layout.solution_folder(assignment)))
    modules, handles, spent = {}, {}, 0.0

    def resolve(value):
        if isinstance(value, HandleRef):
            return handles[value.id]
        if isinstance(value, (list, tuple)):
            return type(value)(resolve(v) for v in value)
        if isinstance(value, dict):
            return {k: resolve(v) for k, v in value.items()}
        return value

    for name, payload in requests:
        if name not in modules:
            path = next(course.layout.solution_module(a) for a in course.assignments if a.module_name == name)
            spec = importlib.util.spec_from_file_location(name, path)
            modules[name] = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(modules[name])
            handles = {}
        module, op = modules[name], payload.get("op")
        started = time.perf_counter()
        if op == "new":
            try:
                instance = getattr(module, payload["name"])(*resolve(payload["args"]), **resolve(payload["kwargs"]))
            except Exception:  # noqa: BLE001 - a check that expects a raise (bad arguments)
                spent += time.perf_counter() - started
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
        spent += time.perf_counter() - started
    return spent


def main() -> None:
    from bench_autograde import torch_import_times

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=7)
    seed = parser.parse_args().seed
    before = torch_import_times()
    from grader.grading.grader import import_torch

    import_torch()
    course, requests, compared = record(seed)
    computed = min(replay(course, requests) for _ in range(3))  # its own noise: the best of three
    torch_s = statistics.median(before + torch_import_times())
    floor = computed + compared
    print(f"import torch (median of 6)                       {torch_s:6.2f} s")
    print(f"the student's own computation ({len(requests)} requests)    {computed:6.3f} s")
    print(f"the comparisons                                   {compared:6.3f} s")
    print(f"floor of grade check, whole course: import torch + both = {1 + floor / torch_s:.2f}x")
    print(f"floor of grade autograde --workers 2, per submission: both / 2 = {floor / 2 / torch_s:.3f}x")


if __name__ == "__main__":
    main()
