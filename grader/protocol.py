"""The one protocol between the grader and the sandboxed processes that run student code.

The grading side (:mod:`grader.sandbox`, :mod:`grader.session`, :mod:`grader.harness`) and the
student side (:mod:`grader.zygote`, :mod:`grader.worker`) share this module and nothing else: the
trust boundary shows in the imports.

Every message, either way, is a length-prefixed frame holding a ``torch.save`` archive of plain data
(dicts, lists, tuples, strings, numbers, dtypes, plain tensors) that the reader loads with
``weights_only=True``: no object of the sender's choosing is ever built. The grader reads what the
student side sends with :func:`decode`, which refuses before loading anything an archive whose
entries are compressed (a small reply that inflates a thousandfold), too many, or too large.
Every send and every receive has a deadline and a size bound.
"""
from __future__ import annotations

import io
import select
import socket
import struct
import time
import zipfile
from dataclasses import asdict, dataclass, fields

_HEADER = struct.Struct("!Q")
REQUEST_LIMIT = 1 << 34  # what the grader may send a worker (inputs; the grader is trusted)
CONTROL_LIMIT = 1 << 20  # a message to or from the zygote
MAX_ENTRIES = 4096  # entries of one archive: a tensor each, and a few of torch's own
MESSAGE_LIMIT = 4000  # characters of a student's exception message that are kept


class ChannelClosed(Exception):
    """The other side went away (it exited, crashed or was killed)."""


class ChannelTimeout(Exception):
    """The message could not be sent or received within the time limit."""


class MessageTooLarge(Exception):
    """The other side announced, or its archive holds, more than the size limit."""


class MalformedMessage(Exception):
    """Not an archive of plain data: compressed entries, links, or something torch will not load."""


# --- framing ---------------------------------------------------------------------------------------
def send(sock: socket.socket, payload: bytes, *, timeout: float | None) -> None:
    """Send one frame; a peer that stops reading makes it fail after ``timeout`` seconds."""
    data = memoryview(_HEADER.pack(len(payload)) + payload)
    deadline = None if timeout is None else time.monotonic() + timeout
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


def _recv_exact(sock: socket.socket, size: int, deadline: float | None) -> bytes:
    chunks, received = [], 0
    while received < size:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([sock], [], [], left)[0]:
                raise ChannelTimeout("no complete message in time")
        try:
            chunk = sock.recv(min(size - received, 1 << 20))
        except BlockingIOError:
            continue
        except OSError as exc:
            raise ChannelClosed(str(exc)) from None
        if not chunk:
            raise ChannelClosed("end of stream")
        chunks.append(chunk)
        received += len(chunk)
    return b"".join(chunks)


# --- encoding --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class HandleRef:
    """A module instance that lives in the worker, named by the grader."""

    id: int


def _plain(value):
    """Plain data for torch.save: a HandleRef becomes a marked dict, containers are walked."""
    if isinstance(value, HandleRef):
        return {"__handle__": value.id}
    if isinstance(value, tuple):
        return tuple(_plain(item) for item in value)
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


def encode(obj) -> bytes:
    import torch

    buffer = io.BytesIO()
    torch.save(_plain(obj), buffer)
    return buffer.getvalue()


def decode(payload: bytes, *, limit: int):
    """Load a message of plain data. Refused, before torch reads a byte of it: anything but a zip
    archive of at most ``MAX_ENTRIES`` stored (uncompressed) regular entries adding up to ``limit``."""
    import torch

    try:
        archive = zipfile.ZipFile(io.BytesIO(payload))
        entries = archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise MalformedMessage(f"not an archive of plain data ({exc})") from None
    if len(entries) > MAX_ENTRIES:
        raise MalformedMessage(f"{len(entries)} entries, over the limit of {MAX_ENTRIES}")
    total = 0
    for entry in entries:
        if entry.compress_type != zipfile.ZIP_STORED or entry.flag_bits & 0x1:
            raise MalformedMessage(f"entry {entry.filename[:80]!r} is compressed or encrypted")
        if entry.compress_size != entry.file_size:
            raise MalformedMessage(f"entry {entry.filename[:80]!r} declares two sizes")
        total += entry.file_size
    if total > limit:
        raise MessageTooLarge(f"{total} bytes unpacked, over the limit of {limit}")
    try:
        return _restore(torch.load(io.BytesIO(payload), weights_only=True))
    except Exception as exc:  # noqa: BLE001 - anything torch will not load as plain data
        raise MalformedMessage(f"not plain data ({type(exc).__name__})") from None


def _restore(value):
    if isinstance(value, dict):
        if set(value) == {"__handle__"} and isinstance(value["__handle__"], int):
            return HandleRef(value["__handle__"])
        return {key: _restore(item) for key, item in value.items()}
    if isinstance(value, tuple):
        return tuple(_restore(item) for item in value)
    if isinstance(value, list):
        return [_restore(item) for item in value]
    return value


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

    def to_wire(self) -> dict:
        return asdict(self)

    @classmethod
    def from_wire(cls, data: dict) -> "WorkerSpec":
        known = {f.name for f in fields(cls)}
        return cls(**{key: _tuples(value) for key, value in data.items() if key in known})


def _tuples(value):
    if isinstance(value, (list, tuple)):
        return tuple(_tuples(item) for item in value)
    return value


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
