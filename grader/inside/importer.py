"""How a worker starts: it locks itself down (its own session, limits, a scrubbed environment, a
sys.path without the reference) and imports the submission, a module or a notebook, with the overlays
that give a faulty helper's callers the right one (grader/grading/graded_source.py). Runs in the
worker only (grader/inside/worker.py), before the first request."""
from __future__ import annotations

import importlib.machinery
import importlib.util
import linecache
import os
import resource
import sys
import types
from pathlib import Path

from grader.inside.protocol import WorkerSpec

_SAFE_ENV = ("PATH", "LANG", "LC_ALL", "TZ")


def lock_down(spec: WorkerSpec) -> None:
    """What the worker does itself before the student's import, once the zygote has confined it
    (grader.inside.zygote: namespaces, cgroups, capabilities and uid): limits, environment, sys.path."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if spec.memory_bytes:
        # CUDA reserves far more address space than it uses (its unified address range): under an
        # address-space limit cuInit fails ("CUDA error: initialization error" on every check). On a
        # GPU the limit is on the memory a process writes (heap and private mappings) instead, which
        # still refuses a host allocation past it
        limit = resource.RLIMIT_DATA if str(spec.device).startswith("cuda") else resource.RLIMIT_AS
        resource.setrlimit(limit, (spec.memory_bytes, spec.memory_bytes))
    keep = {name: os.environ[name] for name in _SAFE_ENV if name in os.environ}
    os.environ.clear()
    os.environ.update(keep, HOME=spec.workdir, OMP_NUM_THREADS="1")
    if not str(spec.device).startswith("cuda"):  # graded on the CPU: no GPU memory to keep anything in
        os.environ["CUDA_VISIBLE_DEVICES"] = ""
    sys.path[:] = list(spec.search_path) + [p for p in sys.path if p and not _reaches(p, spec.blocked)]
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # nothing the student prints reaches the grader's output
        os.dup2(devnull, fd)
    os.close(devnull)
    os.chdir(spec.workdir)


def _reaches(entry: str, blocked: tuple[str, ...]) -> bool:
    """Whether a sys.path entry lies in a blocked folder or holds one (``import solutions.x`` works
    from the folder that holds solutions/). Folders beside them, such as a virtualenv, are fine."""
    resolved = os.path.realpath(entry)
    return _under(resolved, blocked) or resolved in {os.path.dirname(b) for b in blocked}


def _under(path: str, roots: tuple[str, ...]) -> bool:
    resolved = os.path.realpath(path)
    return any(resolved == root or resolved.startswith(root + os.sep) for root in roots)


def _exec_notebook(module: types.ModuleType, path: str, own: str | None = None) -> None:
    """Run a notebook's kept code in ``module``; ``own``: the module name whose ``from own import ...``
    statements are left out (see :func:`exec_as_module`)."""
    from grader.inside.notebook_source import read_cells

    module.__file__ = path
    for cell in read_cells(Path(path), own=own):
        linecache.cache[cell.filename] = (len(cell.source), None, cell.source.splitlines(True), cell.filename)
        exec(compile(cell.code, cell.filename, "exec"), module.__dict__)


class _ModuleBeside:
    """Finds the ``.py`` module beside a notebook under its own name, while the notebook runs."""

    def __init__(self, name: str, path: Path):
        self.name, self.path = name, path

    def find_spec(self, name, path=None, target=None):
        return importlib.util.spec_from_file_location(name, str(self.path)) if name == self.name else None


def exec_as_module(module: types.ModuleType, path: str) -> None:
    """Run a notebook graded as its assignment's module (``module``, named ``attention_basics``), whose
    cells may import that very name (``from attention_basics import softmax``), as a kernel beside the
    module does. Where the module's ``.py`` file lies beside the notebook (a kernel's, which check()
    hands in), those imports get it, a module of its own, as the kernel got it: ``softmax`` is the
    module's function, graded as the module's, and a later cell of the notebook that defines it again
    wins, as in the kernel. Where no module lies beside it, the notebook is the module: its
    ``from attention_basics import ...`` statements are left out, so that what the notebook defines is
    its own, anywhere in it, and what it never defines is missing (never a failed import that costs
    every exercise). ``import attention_basics`` binds the notebook's module either way."""
    name = module.__name__
    beside = Path(path).with_name(name + ".py")
    if not beside.is_file():
        sys.modules[name] = module
        _exec_notebook(module, path, own=name)
        return
    finder = _ModuleBeside(name, beside)
    if sys.modules.get(name) is module:
        del sys.modules[name]  # imported from the file, lazily, as the kernel imported it
    sys.meta_path.insert(0, finder)
    try:
        _exec_notebook(module, path)
    finally:
        sys.meta_path.remove(finder)
        sys.modules[name] = module


class _NotebookFinder:
    """Makes a notebook submission importable by its module name (``from causal_attention import ...``)."""

    def __init__(self, notebooks: dict[str, str]):
        self.notebooks = notebooks

    def find_spec(self, name, path=None, target=None):
        if name in self.notebooks:
            return importlib.util.spec_from_loader(name, self)
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        exec_as_module(module, self.notebooks[module.__name__])


class GraderShield:
    """Refuses student code the grader's modules that the worker has not loaded itself (the zygote
    forgot the rest): the harness, the catalogue, and diagnose with its textbook attention."""

    def find_spec(self, name, path=None, target=None):
        if name == "grader" or name.startswith("grader."):
            raise ModuleNotFoundError(f"No module named {name!r} (the grader is not available to your code)",
                                      name=name)
        return None


def apply_overlay(module: types.ModuleType, notebook: str, names: tuple[str, ...]) -> None:
    """Lay the notebook's definitions ``names`` (written there, stubs in the module) over the module,
    and let the notebook's code see the module's own definitions of everything else."""
    layer = types.ModuleType(module.__name__)
    _exec_notebook(layer, notebook)
    for name in names:
        if name in layer.__dict__:
            setattr(module, name, layer.__dict__[name])
    for name, value in list(module.__dict__.items()):
        if name not in names and not name.startswith("__"):
            layer.__dict__[name] = value


class _OverlayLoader(importlib.machinery.SourceFileLoader):
    def __init__(self, name: str, path: str, notebook: str, names: tuple[str, ...]):
        super().__init__(name, path)
        self.overlay = (notebook, names)

    def exec_module(self, module):
        super().exec_module(module)
        apply_overlay(module, *self.overlay)


class _OverlayFinder:
    """Imports a module that has a notebook beside it (its own, or a sibling's) with the overlay."""

    def __init__(self, overlays):
        self.overlays = {name: (source, notebook, tuple(names)) for name, source, notebook, names in overlays}

    def find_spec(self, name, path=None, target=None):
        if name not in self.overlays:
            return None
        source, notebook, names = self.overlays[name]
        return importlib.util.spec_from_file_location(name, source,
                                                      loader=_OverlayLoader(name, source, notebook, names))


def import_submission(spec: WorkerSpec) -> types.ModuleType:
    sys.meta_path.insert(0, GraderShield())  # asked only for modules not loaded yet
    if spec.notebooks:
        sys.meta_path.insert(0, _NotebookFinder(dict(spec.notebooks)))
    overlays = _OverlayFinder(spec.overlays)
    if spec.overlays:
        sys.meta_path.insert(0, overlays)
    if spec.source.endswith(".ipynb"):
        module = types.ModuleType(spec.module_name)
        sys.modules[spec.module_name] = module
        exec_as_module(module, spec.source)
        return module
    loader_spec = overlays.find_spec(spec.module_name) or \
        importlib.util.spec_from_file_location(spec.module_name, spec.source)
    module = importlib.util.module_from_spec(loader_spec)
    sys.modules[spec.module_name] = module
    loader_spec.loader.exec_module(module)
    return module
