"""grader/inside/heap.py: what the student's process frees stays in its heap for the next call (no page
faults on each tensor), and all of it is given back right before the grader reads the kernel's account."""
import subprocess
import sys

import pytest

PROBE = """
import ctypes, sys
from grader.inside import heap

libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]

def anon():
    return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("RssAnon:")) >> 10

heap.keep_freed()
start = anon()
blocks = [libc.malloc(1 << 20) for _ in range(48)]  # 48 blocks of 1 MiB, each written
for block in blocks:
    ctypes.memset(block, 1, 1 << 20)
held = anon()
for block in blocks:
    libc.free(block)
freed = anon()
again = [libc.malloc(1 << 20) for _ in range(48)]
for block in again:
    ctypes.memset(block, 2, 1 << 20)
reused = anon()
for block in again:
    libc.free(block)
heap.give_back_freed()
print(start, held, freed, reused, anon())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc and /proc")
def test_freed_memory_is_kept_for_the_next_call_and_given_back_for_a_reading():
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True).stdout
    start, held, freed, reused, read = map(int, out.split())
    assert held - start >= 46  # MiB: the blocks came from the heap and are counted
    assert freed - start >= 46 and reused - freed <= 2  # kept when freed, and used again by the next blocks
    assert read - start <= 2, (start, held, freed, reused, read)  # given back before a reading
