"""The zygote's own preparation (grader/inside/zygote.py): what makes its forks cheap for a batch."""
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
