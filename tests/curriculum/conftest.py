"""Fixtures for the curriculum tests: load assignment modules by file path, compare tensors, record torch calls.

``solution("01_attention_basics")`` and ``stub("01_attention_basics")`` import
``solutions/<id>/<module>.py`` and ``assignments/<id>/<module>.py`` with
``importlib.util.spec_from_file_location`` under module names derived from their paths, so the two copies of
``attention_basics`` (and of every other module) never collide in ``sys.modules`` nor with anything a test or
the grader imports. Loading ``04_multi_head_attention`` also makes ``03_causal_attention`` of the same folder
importable as ``causal_attention`` (``MultiHeadAttentionWrapper`` imports it in ``__init__``); that entry is
removed from ``sys.modules`` again when the test ends.

Environment: ``CURRICULUM_TARGET`` chooses what ``solution`` loads: ``solutions`` (the default),
``assignments`` (the stubs: every oracle test must then fail, which shows that none is vacuous), or the path
of any folder shaped like ``assignments/`` (a submission; its code then runs in the pytest process).
"""
from __future__ import annotations

import importlib.util
import os
import re
import sys
import tomllib
from pathlib import Path
from types import ModuleType

import pytest
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

REPO = Path(__file__).resolve().parents[2]
COURSE = tomllib.loads((REPO / "course.toml").read_text(encoding="utf-8"))
ASSIGNMENTS = {entry["id"]: entry for entry in COURSE["assignments"]}

# Modules an assignment imports by plain name from another assignment of the same folder.
DEPENDENCIES = {"04_multi_head_attention": {"causal_attention": "03_causal_attention"}}

TOLERANCES = {
    torch.float32: {"atol": 1e-5, "rtol": 1e-5},
    torch.float64: {"atol": 1e-10, "rtol": 1e-10},
}

# The six 3-d embeddings of "Your journey starts with one step" (the lessons' seed data).
JOURNEY = [
    [0.43, 0.15, 0.89],
    [0.55, 0.87, 0.66],
    [0.57, 0.85, 0.64],
    [0.22, 0.58, 0.33],
    [0.77, 0.25, 0.10],
    [0.05, 0.80, 0.55],
]

_loaded: dict[Path, ModuleType] = {}


def resolve_id(assignment_id: str) -> str:
    """The full assignment id for ``assignment_id`` or a unique prefix of one (``"04"``)."""
    if assignment_id in ASSIGNMENTS:
        return assignment_id
    matches = [full for full in ASSIGNMENTS if full.startswith(assignment_id)]
    if len(matches) != 1:
        raise KeyError(f"no single assignment in course.toml matches {assignment_id!r}: {sorted(ASSIGNMENTS)}")
    return matches[0]


def module_path(root: Path, assignment_id: str) -> Path:
    assignment_id = resolve_id(assignment_id)
    return root / assignment_id / ASSIGNMENTS[assignment_id]["module"]


def import_by_path(path: Path) -> ModuleType:
    """Import ``path`` under a module name unique to that path; each file is executed once per session."""
    path = path.resolve()
    if path in _loaded:
        return _loaded[path]
    if not path.is_file():
        raise FileNotFoundError(path)
    try:
        label = path.relative_to(REPO).as_posix()
    except ValueError:
        label = path.as_posix()
    name = "_curriculum__" + re.sub(r"\W", "_", label)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # inspect and dataclasses look modules up by name
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    _loaded[path] = module
    return module


def target_root() -> Path:
    value = os.environ.get("CURRICULUM_TARGET", "solutions")
    if value in ("solutions", "assignments"):
        return REPO / value
    return Path(value).resolve()


@pytest.fixture(scope="package", autouse=True)
def _one_thread():
    """The tensors here are tiny: one intra-op thread is faster than several, and much faster on a busy machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session", autouse=True)
def _forget_loaded_modules():
    yield
    for module in _loaded.values():
        sys.modules.pop(module.__name__, None)
    _loaded.clear()


def _loader(root: Path, monkeypatch):
    def load(assignment_id: str) -> ModuleType:
        assignment_id = resolve_id(assignment_id)
        for import_name, other_id in DEPENDENCIES.get(assignment_id, {}).items():
            monkeypatch.setitem(sys.modules, import_name, import_by_path(module_path(root, other_id)))
        return import_by_path(module_path(root, assignment_id))

    return load


@pytest.fixture
def solution(monkeypatch):
    """``solution(assignment_id)``: the reference module (or the ``CURRICULUM_TARGET`` one)."""
    return _loader(target_root(), monkeypatch)


@pytest.fixture
def stub(monkeypatch, released):
    """``stub(assignment_id)``: the generated student module, as ``grade release`` writes it (the
    ``released`` fixture: never the live ``assignments/``, which a course in use holds edits in)."""
    return _loader(released, monkeypatch)


@pytest.fixture(params=[torch.float32, torch.float64], ids=["float32", "float64"])
def dtype(request):
    return request.param


@pytest.fixture
def journey():
    """The lessons' six 3-d embeddings, float32 ``[6, 3]``."""
    return torch.tensor(JOURNEY)


@pytest.fixture
def randn():
    """``randn(*shape, dtype=..., scale=1.0)``: normal samples from a generator seeded for each test."""
    generator = torch.Generator().manual_seed(1234)

    def make(*shape, dtype=torch.float32, scale=1.0):
        return torch.randn(shape, generator=generator, dtype=dtype) * scale

    return make


def assert_close(actual, expected, *, atol=None, rtol=None):
    """Same shape and dtype, and equal within the tolerance of the dtype (or the one given)."""
    assert isinstance(actual, torch.Tensor), f"expected a tensor, got {type(actual).__name__}"
    assert actual.shape == expected.shape, f"shape {tuple(actual.shape)} != expected {tuple(expected.shape)}"
    assert actual.dtype == expected.dtype, f"dtype {actual.dtype} != expected {expected.dtype}"
    tolerance = dict(TOLERANCES.get(expected.dtype, {"atol": 1e-5, "rtol": 1e-5}))
    if atol is not None:
        tolerance["atol"] = atol
    if rtol is not None:
        tolerance["rtol"] = rtol
    torch.testing.assert_close(actual, expected, **tolerance)


@pytest.fixture
def close():
    """``close(actual, expected, atol=None, rtol=None)``: :func:`assert_close` with per-dtype tolerances."""
    return assert_close


class DispatchRecorder(TorchDispatchMode):
    """Records every aten operator that runs (below autograd) and the sizes of the tensors it produces."""

    def __init__(self):
        super().__init__()
        self.ops: list[str] = []  # e.g. "aten._softmax"
        self.numels: list[tuple[str, int]] = []  # (operator, numel of one output)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = str(func.overloadpacket)
        self.ops.append(name)
        for leaf in tree_flatten(out)[0]:
            if isinstance(leaf, torch.Tensor):
                self.numels.append((name, leaf.numel()))
        return out

    def largest(self) -> tuple[str, int]:
        return max(self.numels, key=lambda item: item[1], default=("<none>", 0))


class FunctionRecorder(TorchFunctionMode):
    """Records every torch-level function, method and module functional that is called."""

    def __init__(self):
        super().__init__()
        self.funcs: list = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.funcs.append(func)
        return func(*args, **(kwargs or {}))


@pytest.fixture
def dispatch_recorder():
    """A fresh :class:`DispatchRecorder` class; use ``with dispatch_recorder() as rec:``."""
    return DispatchRecorder


@pytest.fixture
def function_recorder():
    """A fresh :class:`FunctionRecorder` class; use ``with function_recorder() as rec:``."""
    return FunctionRecorder
