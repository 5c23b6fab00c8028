"""The zygote's own preparation (grader/inside/zygote.py): what makes its forks cheap for a batch."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest


def _huge_pages_possible() -> bool:
    try:
        setting = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
    except OSError:
        return False
    major, minor = (int(n) for n in re.match(r"(\d+)\.(\d+)", __import__("platform").release()).groups())
    return "[never]" not in setting and (major, minor) >= (6, 1)


@pytest.mark.skipif(not _huge_pages_possible(), reason="needs Linux 6.1+ with transparent huge pages allowed")
def test_a_batch_zygote_backs_torch_with_huge_pages_and_its_forks_still_compute():
    """Collapsed, torch's writable memory is in 2 MB pages (AnonHugePages), and a forked child still
    computes, writes to that memory and exits cleanly."""
    code = """
import os, torch
torch.set_num_threads(1)  # as the zygote: no thread pool to break in a fork
from grader.inside.zygote import collapse_into_huge_pages
x = torch.randn(64, 64) @ torch.randn(64, 64)
collapsed = collapse_into_huge_pages()
huge = sum(int(line.split()[1]) for line in open('/proc/self/smaps') if line.startswith('AnonHugePages:'))
child = os.fork()
if child == 0:
    y = torch.randn(64, 64) @ torch.randn(64, 64)
    os._exit(0 if torch.allclose(y @ torch.eye(64), y) else 1)
_, status = os.waitpid(child, 0)
print(collapsed >> 20, huge >> 10, status)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         timeout=120).stdout.split()
    collapsed_mb, huge_mb, status = map(int, out)
    assert collapsed_mb >= 32 and huge_mb >= 32, out
    assert status == 0


def test_the_warm_up_pays_what_a_worker_that_forbids_something_would_pay_first():
    """Torch's table of overridable functions, which the tracer's functions' view names functions by, is
    built by the zygote's warm-up (8 ms), so no worker of an exercise that forbids something builds it."""
    code = """
import torch.overrides
from grader.inside.zygote import _warm_up
_warm_up()
print(torch.overrides._get_overridable_functions.cache_info().currsize)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.split() == ["1"]


@pytest.mark.parametrize("takes_it_back", [True, False], ids=["setns-back", "through-a-starter"])
def test_a_worker_is_pid_1_of_its_own_namespace_and_its_forker_keeps_its_own(takes_it_back):
    """fork_worker gives the worker a PID namespace of its own, by setns back where the forker may (as
    root) or through a starter where it may not (an ordinary user's nested user namespaces): either way
    the worker is PID 1 there, the forker's next child is born in the forker's own namespace, and a pipe
    the worker closes is closed (no starter holds the worker's descriptors open)."""
    if os.geteuid() != 0:
        pytest.skip("new PID namespaces need root here")
    code = f"""
import os
from grader.inside import zygote
zygote._TAKES_IT_BACK = {takes_it_back}
r, w = os.pipe()
for _ in range(2):
    worker = zygote.fork_worker(True)
    if worker == 0:
        os.write(w, f"{{os.getpid()}} ".encode())
        os._exit(0)
plain = os.fork()
if plain == 0:
    os.write(w, f"{{os.getpid() > 1}} ".encode())
    os._exit(0)
held_r, held_w = os.pipe()  # a worker's pipe: once it closes its end, nothing else may hold it open
sleeper = zygote.fork_worker(True)
if sleeper == 0:
    os.close(held_w)
    import time
    time.sleep(60)
    os._exit(0)
os.close(held_w)
import time
started = time.monotonic()
os.read(held_r, 1)  # end of file at once: not held open by a starter between them
os.write(w, f"{{time.monotonic() - started < 10}} ".encode())
os.kill(sleeper, 9)
os.close(w)
said = b""
while chunk := os.read(r, 100):  # until every child has exited (each holds the pipe's end)
    said += chunk
print(said.decode())
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert sorted(out.stdout.split()) == ["1", "1", "True", "True"], out.stdout + out.stderr
