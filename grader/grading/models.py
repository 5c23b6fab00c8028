"""The lesson's computations (right outputs and mistaken ones): code on the instructor's side, data on the student's.

A suite's lesson (``suites/lesson``) diagnoses a wrong output by recomputing what a known mistake gives,
and "right given your helper" by the right computation on the student's helper's values. Those
computations are answers: the student distribution must never hold their code (the contract's "answers
stay on the grader's side"). Each one is a module-level function marked ``@model``:

- on the instructor's side it simply runs;
- when `grade release --out` records the public suites, every call is kept with its arguments and result
  (:class:`Book`), and a diagnosis is rehearsed on every passing check (:func:`rehearsing`), so that the
  calls a failing student's diagnosis makes are on record;
- the distribution ships the lesson with every ``@model`` function's body removed
  (grader.course.answers), and its replays answer each call from the record: the same arguments (within
  rounding) give the recorded result; a call never recorded (a helper of the student's wrong in a way
  the release could not foresee, a factor searched for) raises NotReplayable, which the diagnosis reads
  as "cannot tell here": nothing is named from it, and no point depends on it.
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
import hashlib

from grader.grading.outcomes import NotReplayable
from grader.inside.protocol import on_device

_BOOK: contextvars.ContextVar = contextvars.ContextVar("lesson_models_book", default=None)
_REHEARSING: contextvars.ContextVar = contextvars.ContextVar("lesson_models_rehearsing", default=False)
_INSIDE: contextvars.ContextVar = contextvars.ContextVar("lesson_models_inside", default=False)  # a kept call's body


class Unrecorded(NotReplayable):
    """A lesson's call a student distribution has no record of: what needed it cannot be told there. Where it
    ends a check, the check fails as the failure being diagnosed stands (grader.grading.pytest_session), never
    skipped: a wrong output must not earn points because its diagnosis could not run."""


def failure_under(missing: Unrecorded):
    """The check's failure whose diagnosis asked for ``missing`` (the exception being handled when it was raised),
    or None where none was."""
    from grader.grading.outcomes import CheckFailed, StudentFault

    seen, cause = set(), missing.__context__
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, (CheckFailed, StudentFault)):
            return cause
        seen.add(id(cause))
        cause = cause.__context__
    return None


class Unkeyable(Exception):
    """An argument that is not data (a function, a generator): such a call is neither kept nor replayed."""


def model(function):
    """``@model``: ``function`` computes an answer (right, or a known mistake). See the module's docstring."""
    name = f"{function.__module__.rsplit('.', 1)[-1]}.{function.__qualname__}"

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        book = _BOOK.get()
        if book is None or _INSIDE.get():  # (a model's own calls of models are answered with it)
            return function(*args, **kwargs)
        return book.call(name, function, args, kwargs)

    wrapper.model_name = name
    return wrapper


@contextlib.contextmanager
def keeping(book: "Book | None"):
    """Lesson models called inside answer from (or are kept in) ``book``; None: they just run."""
    token = _BOOK.set(book)
    try:
        yield
    finally:
        _BOOK.reset(token)


def recording_now() -> bool:
    """Whether a release is recording the lesson's calls, outside a rehearsal (a diagnosis is then rehearsed on
    passing checks)."""
    return keeping_calls() and not _REHEARSING.get()


def keeping_calls() -> bool:
    """Whether the lesson's calls are being kept (a release's recording, a rehearsal included)."""
    book = _BOOK.get()
    return book is not None and not book.replaying


def replaying() -> bool:
    """Whether the lesson's calls are answered from a recording (a student distribution's grading)."""
    book = _BOOK.get()
    return book is not None and book.replaying


def rehearsing() -> bool:
    """Whether a rehearsal runs: it may not use the reference (the uses of a passing run are numbered)."""
    return _REHEARSING.get()


def rehearse(*computations) -> None:
    """While recording: run each computation (a diagnosis as a failing student's would run it), keeping the
    models' calls and dropping whatever it returns or raises. Otherwise nothing."""
    if not keeping_calls():
        return
    token = _REHEARSING.set(True)
    try:
        import torch

        for compute in computations:
            try:
                with torch.no_grad():
                    compute()
            except Exception:  # noqa: BLE001 - a rehearsal has no verdict: only the calls it made count
                pass
    finally:
        _REHEARSING.reset(token)


class Book:
    """The lesson's calls on record: ``{model name: [entry]}``, an entry ``{"key": str, "digest": str, "out": value,
    "sketch": tensor}`` (a loaded one holds its result and sketch packed: :meth:`packed`); ``replaying``: answer from
    it, never compute."""

    def __init__(self, entries: dict | None = None, *, replaying: bool = False):
        self.entries = {} if entries is None else entries
        self.replaying = replaying
        self._index: dict = {}  # digest -> (name, position), built as entries are kept or first read
        self._buffers: dict = {}  # a loaded book's tensors: dtype name -> one flat tensor
        self._sketches = None

    def call(self, name: str, function, args: tuple, kwargs: dict):
        try:
            key, tensors = signature(args, kwargs)
        except Unkeyable:
            if self.replaying:
                raise Unrecorded(f"{name} is called with something that is not data") from None
            return function(*args, **kwargs)
        if self.replaying:
            return self._answer(name, key, tensors)
        token = _INSIDE.set(True)
        try:
            out = function(*args, **kwargs)
        finally:
            _INSIDE.reset(token)
        self._keep(name, key, tensors, out)
        return out

    def _keep(self, name, key, tensors, out) -> None:
        digest = _digest(name, key, tensors)
        if digest in self._indexed():
            return
        try:
            _plain(out)
        except Unkeyable:
            return
        if _REHEARSING.get() and size_of(out) > REHEARSED_BYTES:  # a large case's diagnosis: its small ones say it
            return
        stored = on_device(out, "cpu", copy=True)
        entries = self.entries.setdefault(name, [])
        entries.append({"key": key, "digest": digest, "out": stored, "sketch": _sketches(tensors)})
        self._index[digest] = (name, len(entries) - 1)

    def _indexed(self) -> dict:
        if not self._index:
            for name, entries in self.entries.items():
                for position, entry in enumerate(entries):
                    self._index[entry["digest"]] = (name, position)
        return self._index

    def _answer(self, name, key, tensors):
        found = self._indexed().get(_digest(name, key, tensors))
        entry = self.entries[name][found[1]] if found else \
            _nearest(self.entries.get(name, ()), key, tensors, self._sketch)
        if entry is None:
            raise Unrecorded(f"{name}: no recorded result for these arguments")
        device = next((t.device for t in tensors), None)
        return self._decoded(entry["out"], device if device is not None and device.type != "cpu" else None)

    def _sketch(self, entry):
        if "rows" in entry:
            start, count = entry["rows"]
            return self._sketches[start:start + count]
        return entry["sketch"]

    def _decoded(self, value, device):
        """A result as the caller gets it: a copy (a caller may change it), on ``device``."""
        import torch

        if isinstance(value, torch.Tensor):
            return value.clone() if device is None else value.to(device, copy=True)
        if isinstance(value, dict) and len(value) == 1:
            (tag, body), = value.items()
            if tag == "t":
                dtype, start, shape, *order = body
                order = order[0] if order else list(range(len(shape)))  # the dimensions, outermost in memory first
                count = 1
                for size in shape:
                    count *= size
                stored = self._buffers[dtype][start:start + count].view([shape[d] for d in order])
                made = stored.permute(*sorted(range(len(order)), key=order.__getitem__)).clone()  # its strides kept
                return made if device is None else made.to(device)
            if tag in ("tuple", "list"):
                items = [self._decoded(v, device) for v in body]
                return tuple(items) if tag == "tuple" else items
            if tag == "dict":
                return {self._decoded(k, device): self._decoded(v, device) for k, v in body}
        if isinstance(value, tuple):
            return tuple(self._decoded(v, device) for v in value)
        if isinstance(value, list):
            return [self._decoded(v, device) for v in value]
        if isinstance(value, dict):
            return {k: self._decoded(v, device) for k, v in value.items()}
        return value

    def packed(self) -> dict:
        """The book as a recording holds it: its entries as one JSON text, every tensor in one flat tensor per dtype
        (thousands of small tensors load slowly), the sketches in one."""
        import json

        import torch

        buffers: dict = {}
        sizes: dict = {}

        def encode(value):
            if isinstance(value, torch.Tensor):
                dtype = str(value.dtype).removeprefix("torch.")
                # the dimensions in memory order, so that a transposed result comes back transposed
                order = sorted(range(value.dim()), key=lambda d: (-value.stride(d), d))
                flat = value.detach().cpu().permute(*order).reshape(-1)
                start = sizes.get(dtype, 0)
                sizes[dtype] = start + flat.numel()
                buffers.setdefault(dtype, []).append(flat)
                return {"t": [dtype, start, list(value.shape), order]}
            if isinstance(value, (tuple, list)):
                return {"tuple" if isinstance(value, tuple) else "list": [encode(v) for v in value]}
            if isinstance(value, dict):
                return {"dict": [[encode(k), encode(v)] for k, v in value.items()]}
            return value

        index, sketches, rows = {}, [], 0
        for name, entries in self.entries.items():
            index[name] = []
            for entry in entries:
                sketch = self._sketch(entry)
                sketches.append(sketch)
                index[name].append({"key": entry["key"], "digest": entry["digest"], "out": encode(entry["out"]),
                                    "rows": [rows, sketch.shape[0]]})
                rows += sketch.shape[0]
        return {"index": json.dumps(index), "buffers": {d: torch.cat(ts) for d, ts in buffers.items()},
                "sketches": torch.cat(sketches) if sketches else torch.zeros(0, _PROBES + 5, dtype=torch.float64)}

    @classmethod
    def unpacked(cls, data: dict | None, *, replaying: bool = True) -> "Book":
        """A book from what :meth:`packed` gave (None: an older recording, which has none)."""
        import json

        if not data:
            return cls(replaying=replaying)
        book = cls(json.loads(data["index"]), replaying=replaying)
        book._buffers, book._sketches = dict(data["buffers"]), data["sketches"]
        return book


def signature(args: tuple, kwargs: dict) -> tuple[str, list]:
    """``(key, tensors)``: the call's arguments as text, each tensor written as its dtype and shape (its
    values listed apart, in order). Raises Unkeyable for an argument that is not data."""
    import torch

    tensors: list = []

    def text(value) -> str:
        if isinstance(value, torch.Tensor):
            if type(value) is not torch.Tensor and not isinstance(value, torch.nn.Parameter):
                raise Unkeyable(type(value).__name__)
            tensors.append(value.detach())
            return f"T({str(value.dtype).removeprefix('torch.')},{tuple(value.shape)})"
        if value is None or isinstance(value, (bool, int, float, str)):
            return repr(value)
        if isinstance(value, (torch.dtype,)):
            return str(value)
        if isinstance(value, torch.device):
            return "device"  # the result is moved to the call's device when replayed
        if isinstance(value, (tuple, list)):
            return "[" + ",".join(text(v) for v in value) + "]"
        if isinstance(value, dict):
            return "{" + ",".join(f"{text(k)}:{text(v)}" for k, v in value.items()) + "}"
        if isinstance(value, torch.nn.Dropout):
            return f"Dropout({value.p!r},{value.training!r})"
        raise Unkeyable(type(value).__name__)

    key = text(tuple(args)) + text(dict(sorted(kwargs.items())))
    return key, tensors


def _digest(name: str, key: str, tensors) -> str:
    import torch

    sha = hashlib.sha256(f"{name}|{key}".encode())
    for tensor in tensors:
        # (the bytes as they are: numpy has no bfloat16)
        sha.update(tensor.detach().cpu().contiguous().view(-1).view(torch.uint8).numpy().tobytes()
                   if tensor.numel() else b"")
    return sha.hexdigest()


_PROBES = 4  # random directions a sketch projects a tensor on


def sketch(tensor):
    """A few numbers that tell a tensor from another (its sum, its length, its projections on fixed random
    directions, float64) and barely move when its values are rounded differently: what a replay compares where the
    bytes differ. Non-finite entries are counted, by kind and place, apart."""
    import torch

    flat = tensor.detach().cpu().reshape(-1)
    if flat.is_complex():
        flat = torch.view_as_real(flat).reshape(-1)
    flat = flat.double() if flat.is_floating_point() else flat.to(torch.float64)
    finite = torch.isfinite(flat)
    values = torch.where(finite, flat, torch.zeros_like(flat))
    probes, places = _probes(flat.numel())
    odd = [float((torch.isnan(flat) * places).sum()), float((torch.isposinf(flat) * places).sum()),
           float((torch.isneginf(flat) * places).sum())]
    return torch.tensor([values.sum().item(), values.norm().item(), *(probes @ values).tolist(), *odd],
                        dtype=torch.float64)


@functools.lru_cache(maxsize=64)
def _probes(count: int):
    """The fixed random directions a sketch projects ``count`` values on, and their places 1 ... count."""
    import torch

    generator = torch.Generator().manual_seed(20261202)
    return (torch.randn(_PROBES, count, generator=generator, dtype=torch.float64),
            torch.arange(1, count + 1, dtype=torch.float64))


def _sketches(tensors):
    """The sketches of ``tensors``, one row each (one tensor: a recording holds thousands of calls)."""
    import torch

    return torch.stack([sketch(t) for t in tensors]) if tensors else torch.zeros(0, _PROBES + 5, dtype=torch.float64)


def _nearest(entries, key: str, tensors, sketch_of):
    """The entry of the same key whose tensors' sketches are these tensors' within rounding (another machine's
    float arithmetic may differ in the last bits), the closest if several; None if none."""
    import torch

    if not any(entry["key"] == key for entry in entries):
        return None
    ours = _sketches(tensors)
    best, gap = None, None
    for entry in entries:
        if entry["key"] != key:
            continue
        worst = 0.0
        for theirs, mine, tensor in zip(sketch_of(entry), ours, tensors):
            if not bool((theirs[-3:] == mine[-3:]).all()):  # NaN and infinities in other places
                worst = None
                break
            # rounding each value differently moves a projection by about eps times the tensor's length
            scale = 1e-30 + 64 * torch.finfo(tensor.dtype).eps * float(mine[1]) if tensor.is_floating_point() else 0
            worst = max(worst, float((theirs[:-3] - mine[:-3]).abs().max()) / scale) if tensor.is_floating_point() \
                else (worst if bool((theirs == mine).all()) else None)
            if worst is None or worst > 1.0:
                worst = None
                break
        if worst is not None and (gap is None or worst < gap):
            best, gap = entry, worst
    return best


REHEARSED_BYTES = 1 << 18  # the largest result a rehearsed diagnosis keeps (the recording ships to every student)


def size_of(value) -> int:
    """The bytes of every tensor in ``value``."""
    import torch

    from grader.inside.protocol import mapped

    sizes = []
    mapped(lambda leaf: sizes.append(leaf.numel() * leaf.element_size()) if isinstance(leaf, torch.Tensor) else None,
           value)
    return sum(sizes)


def _plain(value) -> None:
    """Raises Unkeyable unless ``value`` is tensors, numbers, text and containers of them (what a
    recording can hold and torch.load(weights_only=True) reads back)."""
    import torch

    if isinstance(value, torch.Tensor) or value is None or isinstance(value, (bool, int, float, str)):
        return
    if isinstance(value, (tuple, list)):
        for v in value:
            _plain(v)
        return
    if isinstance(value, dict):
        for k, v in value.items():
            _plain(k)
            _plain(v)
        return
    raise Unkeyable(type(value).__name__)
