"""The student's process's heap, as glibc's malloc keeps it, and what the grader reads of it.

06's checks weigh a KV cache by the memory the kernel counts for the student's processes
(grader.sandbox.client.held_bytes and own_bytes, read from /proc, never asked of them). Freed memory
must then not count: glibc's malloc gives a large block back when it is freed (mmap'd), or keeps it in
its heap, where the kernel still counts it, raising its threshold after each large block freed.

Blocks given back at once (every tensor over 128 kB in its own mapping) make the kernel fault in and
zero fresh pages for every tensor a call makes: half of 06's cached sequences' time (issue 47). So
the heap keeps what is freed, for the next call to use again, and gives it all back (malloc_trim)
right before each reading: the worker's ``ping``, which precedes every one (grader.grading.fixture).

The trim is the worker's own act, and the student's code runs in the same process: code that stops
it only makes what is read larger. The absolute reading (own_bytes: what the worker holds however
long it has held it) then fails a cache that keeps too much whatever the growth readings showed.
"""
from __future__ import annotations

import ctypes

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_KEPT_UP_TO = 32 << 20  # glibc's largest mmap threshold: blocks up to it come from the heap
_NEVER_TRIMMED = (1 << 31) - 1  # mallopt's largest (an int): the heap's free top waits for the grader's reading

try:
    _libc = ctypes.CDLL(None)
    _libc.mallopt, _libc.malloc_trim  # noqa: B018 - glibc's, or another allocator with its own accounting
except (OSError, AttributeError):
    _libc = None


def keep_freed() -> None:
    """What the process frees stays in its heap for the next allocation (before torch: every worker
    inherits it). Fixed thresholds: glibc no longer moves them after what is freed."""
    if _libc is not None:
        _libc.mallopt(_M_MMAP_THRESHOLD, _KEPT_UP_TO)
        _libc.mallopt(_M_TRIM_THRESHOLD, _NEVER_TRIMMED)


def give_back_freed() -> None:
    """Every free page of the heap given back to the kernel (malloc_trim(0): the free top and the free
    pages inside it), so that what the kernel counts is what the process holds."""
    if _libc is not None:
        _libc.malloc_trim(0)
