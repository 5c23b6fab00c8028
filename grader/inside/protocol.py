"""The one protocol between the grader and the sandboxed processes that run student code.

The grading side (:mod:`grader.sandbox.client`, :mod:`grader.grading.pytest_session`,
:mod:`grader.grading.fixture`) and the student side (:mod:`grader.inside.zygote`,
:mod:`grader.inside.worker`) share this module and nothing else: the trust boundary shows in the imports.

Every message, either way, is a length-prefixed frame of plain data (dicts, lists, tuples, strings,
numbers, dtypes, devices and plain tensors): a JSON header and the tensors' raw bytes, nothing
else. No pickle and no archive: no object of the sender's choosing is ever built, nothing is
compressed (a small reply cannot inflate a thousandfold), and :func:`decode` checks every tensor's
declared size against its bytes and the limit before it makes one, and counts each tensor at its
full size (zero or overlapping strides let a few bytes on the wire stand for gigabytes, which any
conversion on the grading side would build). Every send and every receive has a deadline and a size
bound.
"""
from __future__ import annotations

import json
import select
import socket
import struct
import sys
import time
from dataclasses import asdict, dataclass, fields

_HEADER = struct.Struct("!Q")
SMALL = 64 << 10  # a frame's length and payload are written together below this size, apart above it
PREALLOCATED = 64 << 20  # a frame announced up to this size is read into one buffer made for it
REQUEST_LIMIT = 1 << 34  # what the grader may send a worker (inputs; the grader is trusted)
CONTROL_LIMIT = 1 << 20  # a message to or from the zygote
MAX_ENTRIES = 4096  # tensors in one message
MESSAGE_LIMIT = 4000  # characters of a student's exception message that are kept


class ChannelClosed(Exception):
    """The other side went away (it exited, crashed or was killed)."""


class ChannelTimeout(Exception):
    """The message could not be sent or received within the time limit."""


class MessageTooLarge(Exception):
    """The other side announced, or its archive holds, more than the size limit."""


class MalformedMessage(Exception):
    """Not a message of plain data: an object, a tensor whose bytes do not match its header, ..."""


# --- framing ---------------------------------------------------------------------------------------
def send(sock: socket.socket, payload: bytes, *, timeout: float | None) -> None:
    """Send one frame; a peer that stops reading makes it fail after ``timeout`` seconds."""
    head = _HEADER.pack(len(payload))
    deadline = None if timeout is None else time.monotonic() + timeout
    if len(payload) < SMALL:  # one write; a large payload follows its length without being copied
        _send_all(sock, memoryview(head + payload), deadline)
    else:
        _send_all(sock, memoryview(head), deadline)
        _send_all(sock, memoryview(payload), deadline)


def _send_all(sock: socket.socket, data: memoryview, deadline: float | None) -> None:
    while data:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([], [sock], [], left)[1]:
                raise ChannelTimeout("the other side stopped reading")
        try:  # never blocks: a peer that reads nothing cannot hold us past the deadline
            sent = sock.send(data[: 1 << 20], socket.MSG_DONTWAIT if deadline is not None else 0)
        except BlockingIOError:
            continue
        except OSError as exc:
            raise ChannelClosed(str(exc)) from None
        data = data[sent:]


def recv(sock: socket.socket, *, limit: int, timeout: float | None) -> bytes:
    """Receive one frame of at most ``limit`` bytes within ``timeout`` seconds."""
    deadline = None if timeout is None else time.monotonic() + timeout
    (size,) = _HEADER.unpack(_recv_exact(sock, _HEADER.size, deadline))
    if size > limit:
        raise MessageTooLarge(f"{size} bytes, over the limit of {limit}")
    return _recv_exact(sock, size, deadline)


def receive(sock: socket.socket, *, limit: int, timeout: float | None = None):
    """One decoded message of at most ``limit`` bytes (see :func:`recv` and :func:`decode`)."""
    return decode(recv(sock, limit=limit, timeout=timeout), limit=limit)


def requests(sock: socket.socket, *, limit: int):
    """The messages that arrive on ``sock``, each as it comes, until the other end closes it."""
    while True:
        try:
            yield receive(sock, limit=limit)
        except (ChannelClosed, ChannelTimeout):
            return


def _recv_exact(sock: socket.socket, size: int, deadline: float | None) -> bytes | bytearray:
    """``size`` bytes, read straight into one buffer; a frame announced larger than PREALLOCATED is kept
    as it arrives (a sender that announces much and sends little costs no more than it sent)."""
    if size > PREALLOCATED:
        chunks, received = [], 0
        while received < size:
            chunks.append(_read(sock, deadline, lambda: sock.recv(min(size - received, 1 << 20))))
            received += len(chunks[-1])
        return b"".join(chunks)
    buffer = bytearray(size)
    view, received = memoryview(buffer), 0
    while received < size:
        received += _read(sock, deadline, lambda: sock.recv_into(view[received:], min(size - received, 1 << 20)))
    return buffer


def _read(sock: socket.socket, deadline: float | None, read):
    """What one ``read()`` gives (bytes, or how many it took) once ``sock`` has something, within the deadline."""
    while True:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([sock], [], [], left)[0]:
                raise ChannelTimeout("no complete message in time")
        try:
            got = read()
        except BlockingIOError:
            continue
        except OSError as exc:
            raise ChannelClosed(str(exc)) from None
        if not got:
            raise ChannelClosed("end of stream")
        return got


# --- encoding ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class HandleRef:
    """A module instance that lives in the worker, named by the grader."""

    id: int


_DTYPES = ("float16", "bfloat16", "float32", "float64", "complex64", "complex128", "bool", "uint8", "int8",
           "int16", "int32", "int64")
_HEAD = struct.Struct("!I")
MAX_DEPTH = 64  # nesting of lists, tuples and dicts in one message
MAX_SIZE = 1 << 48  # a tensor's size or stride in any dimension, at most (a zero-size one too)


def encode(obj) -> bytes:
    """A message: a 4-byte length, a JSON header (the structure, with tensors as references), then
    each tensor's bytes. Tensors keep dtype, shape and strides (a transposed input stays transposed)."""
    buffers: list[bytes] = []
    tensors: list[list] = []
    body = _encode(obj, buffers, tensors, 0)
    header = json.dumps({"body": body, "tensors": tensors}, separators=(",", ":")).encode()
    return b"".join([_HEAD.pack(len(header)), header, *buffers])


_SCALARS = frozenset({type(None), bool, int, float, str})


def _encode(value, buffers, tensors, depth):
    if type(value) in _SCALARS:  # the usual leaf, at the cost of one lookup (subclasses: below)
        return value
    torch = sys.modules.get("torch")  # none loaded yet (the zygote's first word): no value is a tensor

    if depth > MAX_DEPTH:
        raise ValueError("nested too deeply")
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if torch is not None and isinstance(value, torch.Tensor):
        tensors.append(_tensor_entry(value, buffers))
        return {"$t": len(tensors) - 1}
    if isinstance(value, HandleRef):
        return {"$h": value.id}
    if torch is not None and isinstance(value, torch.dtype):
        return {"$dtype": str(value).removeprefix("torch.")}
    if torch is not None and isinstance(value, torch.device):
        return {"$device": str(value)}
    if isinstance(value, (tuple, list)):  # leaves of plain data inline, the rest by a call each
        items = [item if type(item) in _SCALARS else _encode(item, buffers, tensors, depth + 1) for item in value]
        return {"$tuple": items} if isinstance(value, tuple) else items
    if isinstance(value, dict):
        return {"$d": [[k if type(k) in _SCALARS else _encode(k, buffers, tensors, depth + 1),
                        v if type(v) in _SCALARS else _encode(v, buffers, tensors, depth + 1)]
                       for k, v in value.items()]}
    raise TypeError(f"{type(value).__qualname__} is not plain data")


def _tensor_entry(tensor, buffers) -> list:
    """[dtype, shape, strides, device, bytes]: the smallest span of memory the strides reach."""
    import ctypes

    import torch

    plain = tensor.detach()
    if type(plain) is not torch.Tensor:
        plain = plain.as_subclass(torch.Tensor)
    device = str(plain.device)
    if plain.layout != torch.strided:
        plain = plain.to_dense()
    if plain.is_conj() or plain.is_neg():
        plain = plain.resolve_conj().resolve_neg()
    plain = plain.cpu()
    name = str(plain.dtype).removeprefix("torch.")
    if name not in _DTYPES:
        raise TypeError(f"tensors of {plain.dtype} are not plain data")
    shape, strides = list(plain.shape), list(plain.stride())
    span = 0 if plain.numel() == 0 else 1 + sum((n - 1) * s for n, s in zip(shape, strides))
    size = span * plain.element_size()
    # the span starts at the tensor's first element and ends at its last: memory of its own storage,
    # copied once, straight into the message
    buffers.append(ctypes.string_at(plain.data_ptr(), size) if size else b"")
    return [name, shape, strides, device, size]


def decode(payload: bytes, *, limit: int):
    """Read a message of plain data; anything else, or more than ``limit`` bytes of tensors, or a
    header that does not add up, is refused before any tensor is made. Tensors come back on the CPU
    (:func:`sent_from` says where the sender had each)."""
    try:
        (size,) = _HEAD.unpack_from(payload)
        header = json.loads(payload[_HEAD.size:_HEAD.size + size])
        entries, body = header["tensors"], header["body"]
        if not isinstance(entries, list) or len(entries) > MAX_ENTRIES:
            raise MalformedMessage(f"more than {MAX_ENTRIES} tensors")
        sizes, full_sizes = zip(*(_checked(entry) for entry in entries)) if entries else ((), ())
        full = sum(full_sizes)
    except MalformedMessage:
        raise
    except (struct.error, ValueError, KeyError, TypeError, RecursionError, UnicodeDecodeError) as exc:
        raise MalformedMessage(f"not a message of plain data ({type(exc).__name__})") from None
    if max(sum(sizes), full) > limit:  # the bytes sent, and what they stand for once made contiguous
        raise MessageTooLarge(f"{max(sum(sizes), full)} bytes of tensors, over the limit of {limit}")
    start = _HEAD.size + size
    if start + sum(sizes) != len(payload):
        raise MalformedMessage("the tensors' sizes do not add up to the message")
    tensors, offset, view = [], start, memoryview(payload)
    try:  # whatever torch makes of a header that passed the checks above is refused the same way
        for entry, nbytes in zip(entries, sizes):
            tensors.append(_tensor(entry, view[offset:offset + nbytes]))
            offset += nbytes
    except (TypeError, ValueError, RuntimeError, OverflowError, IndexError, MemoryError) as exc:
        raise MalformedMessage(f"not a message of plain data ({type(exc).__name__})") from None
    try:
        return _decode(body, tensors, entries, 0)
    except (ValueError, KeyError, TypeError, IndexError, RecursionError, RuntimeError, OverflowError) as exc:
        # (RuntimeError: torch's, for a device name it cannot read, red team round 18's re-test)
        raise MalformedMessage(f"not a message of plain data ({type(exc).__name__})") from None


def _checked(entry) -> tuple[int, int]:
    """(bytes sent, bytes the tensor stands for once made contiguous), or MalformedMessage."""
    name, shape, strides, device, nbytes = entry
    if name not in _DTYPES or type(device) is not str or type(shape) is not list or type(strides) is not list \
            or len(shape) != len(strides) or len(shape) > 16:
        raise MalformedMessage("a tensor of an unknown kind")
    numel, span = 1, 1
    for n, stride in zip(shape, strides):
        if type(n) is not int or type(stride) is not int or n < 0 or stride < 0:
            raise MalformedMessage("a tensor with a negative size or stride")
        if n > MAX_SIZE or stride > MAX_SIZE:  # (red team round 18: [0, 2**63] raised TypeError in torch)
            raise MalformedMessage("a tensor with a size or stride past any memory")
        numel *= n
        span += (n - 1) * stride
    itemsize = _ITEMSIZES[name]
    if nbytes != (0 if numel == 0 else span) * itemsize:
        raise MalformedMessage("a tensor whose bytes do not match its shape")
    return nbytes, numel * itemsize


_ITEMSIZES = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8, "complex64": 8, "complex128": 16, "bool": 1,
              "uint8": 1, "int8": 1, "int16": 2, "int32": 4, "int64": 8}


def _tensor(entry, data: memoryview):
    import torch

    name, shape, strides, _, nbytes = entry
    dtype = getattr(torch, name)
    # a private, writable copy of the bytes, which the tensor keeps (frombuffer shares its memory)
    base = torch.frombuffer(bytearray(data), dtype=dtype) if nbytes else torch.empty(0, dtype=dtype)
    tensor = base.as_strided(shape, strides)
    tensor._sent_from = entry[3]
    return tensor


def _decode(value, tensors, entries, depth):
    if type(value) in _SCALARS:  # what JSON gives: exact types
        return value
    if depth > MAX_DEPTH:
        raise ValueError("nested too deeply")
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        return [item if type(item) in _SCALARS else _decode(item, tensors, entries, depth + 1) for item in value]
    if isinstance(value, dict) and len(value) == 1:
        (kind, item), = value.items()
        if kind == "$t":
            tensor = tensors[item]
            return tensor
        if kind == "$h" and isinstance(item, int):
            return HandleRef(item)
        if kind == "$dtype" and item in _DTYPES:
            import torch

            return getattr(torch, item)
        if kind == "$device" and isinstance(item, str):
            import torch

            return torch.device(item)
        if kind == "$tuple" and isinstance(item, list):
            return tuple(_decode(x, tensors, entries, depth + 1) for x in item)
        if kind == "$d" and isinstance(item, list):
            out = {}
            for key, val in item:
                if type(key) not in _SCALARS:
                    key = _decode(key, tensors, entries, depth + 1)
                    if not isinstance(key, (str, int, float, bool, type(None), tuple)):
                        raise TypeError("a key that is not plain data")
                out[key] = val if type(val) in _SCALARS else _decode(val, tensors, entries, depth + 1)
            return out
    raise ValueError("not plain data")


def sent_from(tensor) -> str:
    """The device a decoded tensor was on where it was encoded, as the encoder read it off the tensor
    (decoded tensors are all on the CPU)."""
    return getattr(tensor, "_sent_from", str(tensor.device))


# Where a worker writes its threads' stacks just before a call (or its import) runs out of time: in its
# working folder, for the grader to say where the student's code was when it was stopped.
STACK_FILE = ".grade-stack"
STACK_MARGIN_S = 0.3  # written this long before the grader's deadline


# --- what the grader asks the zygote for -------------------------------------------------------------
@dataclass(frozen=True)
class WorkerSpec:
    """How to start one worker: what to import, where, under which limits. Paths are the sandbox's."""

    module_name: str  # what the student's module is imported as
    source: str  # the .py or .ipynb file, in the working copy
    search_path: tuple[str, ...]  # the working copy's assignment folders, importable by module name
    workdir: str  # the worker's cwd
    student_root: str  # paths under it are the student's own frames
    display_map: tuple[tuple[str, str], ...]  # (working-copy folder, the student's folder) for messages
    device: str
    memory_bytes: int
    reply_limit: int
    notebooks: tuple[tuple[str, str], ...] = ()  # (module name, .ipynb) importable by sibling modules
    uid: int | None = None  # the submission's own uid (as root), or None: the zygote's user
    gid: int = 65534
    cgroups: tuple[str, ...] = ()  # cgroup.procs files the worker joins (the submission's cgroups)
    blocked: tuple[str, ...] = ()  # folders dropped from sys.path (the reference, the suites)
    import_timeout_s: float = 0.0  # when the import's stack is written to STACK_FILE (0: never)
    hung: tuple[str, ...] = ()  # the module's functions a timeout stopped in: they raise at once instead
    # (module name, module, notebook beside it, the definitions taken from the notebook): see
    # grader/grading/graded_source.py; for this assignment's module and for siblings it imports
    overlays: tuple[tuple[str, str, str, tuple[str, ...]], ...] = ()

    def to_wire(self) -> dict:
        return asdict(self)

    @classmethod
    def from_wire(cls, data: dict) -> "WorkerSpec":
        known = {f.name for f in fields(cls)}
        # (the wire's lists as the tuples the fields are)
        return cls(**{key: mapped(lambda leaf: leaf, value, sequence=tuple) for key, value in data.items()
                      if key in known})


def mapped(function, value, sequence=None):
    """``value`` with ``function`` applied to every leaf of its lists, tuples and dicts, the containers
    rebuilt: each list or tuple as its own type, or as ``sequence`` where one is given. The one walk over
    nested values (the grader's copies, moves and widenings of arguments and outputs all go through it)."""
    if isinstance(value, (list, tuple)):
        return (sequence or type(value))(mapped(function, item, sequence) for item in value)
    if isinstance(value, dict):
        return {key: mapped(function, item, sequence) for key, item in value.items()}
    return function(value)


def on_device(value, device: str, copy: bool = False):
    """``value`` with every tensor in it detached and moved to ``device`` (a replay on CUDA compares there);
    with ``copy``, never sharing memory with the tensors given."""
    import torch

    return mapped(lambda leaf: leaf.detach().to(device, copy=copy) if isinstance(leaf, torch.Tensor) else leaf,
                  value)


def flatten(value):
    """Every leaf of nested lists, tuples and dicts."""
    if isinstance(value, (list, tuple)):
        for item in value:
            yield from flatten(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from flatten(item)
    else:
        yield value


def clip(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """At most ``limit`` characters, the cut marked."""
    return text if len(text) <= limit else text[:limit] + " ... (cut)"
