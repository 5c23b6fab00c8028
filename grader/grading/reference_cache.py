"""The reference's results, kept for the next submission that asks the same.

``grade autograde`` draws one seed per run, so every submission of a batch gets the same cases, and a
grading process would compute the reference on the same inputs once per submission. The memo keeps
each result under a fingerprint of everything the computation reads (the check, the use, the inputs'
dtypes, shapes, strides and bytes, a reference module's weights, buffers, mode and other state), so a hit is the
very same computation; anything it cannot fingerprint is computed every time. It holds the grader's
own computations only: no value of a student's reaches it except as part of a key, and every hit is
handed out as a copy, so nothing a check does to a result can change it for another submission.
"""
from __future__ import annotations

import hashlib

from grader.inside.protocol import flatten, mapped

MAX_ENTRIES = 20_000
MAX_BYTES = 256 << 20


class Unfingerprintable(Exception):
    """A value the memo cannot identify by its contents."""


def fingerprint(*parts) -> bytes | None:
    """A digest of ``parts`` by content, or None where some part cannot be identified."""
    digest = hashlib.blake2b(digest_size=20)
    text: list[str] = []  # described values, hashed together (one update, not one each)
    try:
        for part in parts:
            _feed(digest, part, text)
    except (Unfingerprintable, RuntimeError, TypeError, ValueError):  # e.g. a sparse tensor
        return None
    digest.update("".join(text).encode())
    return digest.digest()


_PLAIN = frozenset({type(None), bool, int, float, str})


def _feed(digest, value, text: list[str]) -> None:
    import torch

    if type(value) in _PLAIN or isinstance(value, (bool, int, float, str, torch.dtype, torch.device)):
        text.append(f"{type(value).__name__}:{value!r};")
    elif type(value) is torch.Tensor and (known := _known(value)) is not None:
        text.append(f"K{known.hex()}{value.requires_grad};")  # what it was made as, unchanged since (known_as)
    elif isinstance(value, torch.Tensor):
        plain = value.detach()
        text.append(f"T{plain.dtype}{tuple(plain.shape)}{plain.stride()}{plain.device.type}{value.requires_grad};")
        digest.update("".join(text).encode())  # what came before, then the bytes, in order
        text.clear()
        try:  # its memory as it is, where that is one C-contiguous block numpy can show: no copy
            data = plain.numpy() if plain.device.type == "cpu" and plain.is_contiguous() else None
        except (TypeError, RuntimeError):  # bfloat16, a conjugate view
            data = None
        digest.update(data if data is not None else plain.cpu().contiguous().reshape(-1).view(torch.uint8).numpy())
    elif isinstance(value, (tuple, list)):
        text.append(f"{type(value).__name__}{len(value)}(")
        for item in value:
            _feed(digest, item, text)
        text.append(")")
    elif isinstance(value, dict):
        text.append(f"dict{len(value)}(")
        for key in sorted(value, key=repr):
            _feed(digest, key, text)
            _feed(digest, value[key], text)
        text.append(")")
    elif isinstance(value, torch.nn.Module):
        text.append(f"M{type(value).__module__}.{type(value).__qualname__};")
        modules = list(value.named_modules())
        _feed(digest, [(name, m.training, type(m).__qualname__) for name, m in modules], text)
        _feed(digest, dict(value.named_parameters()), text)
        _feed(digest, dict(value.named_buffers()), text)
        # and what else a module keeps between calls (a KV cache, a position): plain values only, or none
        _feed(digest, [(name, {k: v for k, v in vars(m).items() if not k.startswith("_") and k != "training"})
                       for name, m in modules], text)
    else:
        raise Unfingerprintable(type(value).__name__)


def known_as(tensor, key: bytes):
    """``tensor``, marked as made by what ``key`` fingerprints (a draw of the grader's: its generator's
    state, the shape and dtype), so that a fingerprint reads the key rather than its bytes while it is as
    it was made (its version counter, which every in-place change and every change through a view moves,
    unchanged). The grader's own tensors only: a tensor from the student's process is never marked."""
    tensor._grade_known = (key, tensor._version)
    return tensor


def _known(tensor) -> bytes | None:
    mark = getattr(tensor, "_grade_known", None)
    if type(mark) is not tuple:
        return None
    key, version = mark
    return key if version == tensor._version else None


def copied(value):
    """``value`` with every tensor in it cloned (containers rebuilt, the rest as it is)."""
    import torch

    return mapped(lambda leaf: leaf.clone() if isinstance(leaf, torch.Tensor) else leaf, value)


def _size(value) -> int:
    import torch

    return sum(leaf.numel() * leaf.element_size() if isinstance(leaf, torch.Tensor) else 64
               for leaf in flatten(value))


_NOT_KEPT = object()  # a computation that changed what it read: computed again each time


class ReferenceMemo:
    """Results by fingerprint, bounded in count and bytes (full: emptied, and filled again)."""

    def __init__(self, *, max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_BYTES):
        self.entries: dict[bytes, object] = {}
        self.bytes = 0
        self.max_entries, self.max_bytes = max_entries, max_bytes
        self.hits = self.misses = 0
        # uses (a check's numbered use of the reference) that compute faster than their reads can be
        # fingerprinted, or that change what they read (never kept): computed each time, never looked up
        # (computing is always right)
        self.cheap: set[str] = set()
        # the operators a reference function runs, by its name, sizes and settings (Grade.count_reference)
        self.counts: dict[tuple, int] = {}

    def lookup(self, use: str, reads: tuple, compute, unchanged=None):
        """:meth:`get` under the fingerprint of ``reads``; a ``use`` whose computation took less time
        than that fingerprint is marked cheap, and computed from then on without one."""
        import time

        started = time.perf_counter()
        key = fingerprint(*reads)
        fingerprinted = time.perf_counter()
        computed = key is not None and key not in self.entries  # else looked up, or not keyable
        value = self.get(key, compute, unchanged)
        if computed and time.perf_counter() - fingerprinted < fingerprinted - started:
            self.cheap.add(use)
        if key is not None and self.entries.get(key) is _NOT_KEPT:  # it changes what it reads: never kept,
            self.cheap.add(use)  # so never fingerprinted again either
        return value

    def get(self, key: bytes | None, compute, unchanged=None):
        """``compute()``, or a copy of what it gave last time under ``key`` (None: not kept). A result
        is kept only if ``compute`` left ``unchanged`` (a module whose forward may update a cache) as it
        found it: skipping a computation must not skip what it does."""
        kept = self.entries.get(key, None) if key is not None else None
        if kept is _NOT_KEPT:
            return compute()
        if kept is not None:
            self.hits += 1
            return copied(kept)
        before = fingerprint(unchanged) if key is not None and unchanged is not None else None
        value = compute()
        if key is None:
            return value
        self.misses += 1
        if unchanged is not None and (before is None or fingerprint(unchanged) != before):
            self.entries[key] = _NOT_KEPT
            return value
        size = _size(value)
        if len(self.entries) >= self.max_entries or self.bytes + size > self.max_bytes:
            self.entries.clear()
            self.bytes = 0
        self.entries[key] = copied(value)
        self.bytes += size
        return value
