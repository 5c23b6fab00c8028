"""Framing of messages between the grader and the worker that runs student code.

Grader -> worker: pickles (the grader is trusted; the worker may unpickle what it sends).
Worker -> grader: ``torch.save`` bytes that the grader reads with ``torch.load(weights_only=True)``:
plain tensors, numbers, strings, lists and dicts only, never an object of the worker's choosing.
"""
from __future__ import annotations

import io
import pickle
import select
import socket
import struct
import time

_HEADER = struct.Struct("!Q")


class ChannelClosed(Exception):
    """The other side went away (it exited, crashed or was killed)."""


class ChannelTimeout(Exception):
    """No complete message arrived within the time limit."""


class MessageTooLarge(Exception):
    """The other side announced a message above the size limit."""


def send_bytes(sock: socket.socket, payload: bytes) -> None:
    try:
        sock.sendall(_HEADER.pack(len(payload)) + payload)
    except OSError as exc:
        raise ChannelClosed(str(exc)) from None


def recv_bytes(sock: socket.socket, *, limit: int, timeout: float | None = None) -> bytes:
    deadline = None if timeout is None else time.monotonic() + timeout
    header = _recv_exact(sock, _HEADER.size, deadline)
    (size,) = _HEADER.unpack(header)
    if size > limit:
        raise MessageTooLarge(f"{size} bytes, over the limit of {limit}")
    return _recv_exact(sock, size, deadline)


def _recv_exact(sock: socket.socket, size: int, deadline: float | None) -> bytes:
    chunks, received = [], 0
    while received < size:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([sock], [], [], left)[0]:
                raise ChannelTimeout()
        try:
            chunk = sock.recv(min(size - received, 1 << 20))
        except OSError as exc:
            raise ChannelClosed(str(exc)) from None
        if not chunk:
            raise ChannelClosed("end of stream")
        chunks.append(chunk)
        received += len(chunk)
    return b"".join(chunks)


def dump_request(obj) -> bytes:
    return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)


def load_request(payload: bytes):
    return pickle.loads(payload)


def dump_reply(obj) -> bytes:
    import torch

    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


def load_reply(payload: bytes):
    """Read a worker's reply; only plain data and plain tensors are accepted (weights_only)."""
    import torch

    return torch.load(io.BytesIO(payload), weights_only=True)
