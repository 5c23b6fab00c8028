"""A notebook kernel's own sandbox (grader/sandbox/kernel_sandbox.py, grader/inside/kernel_start.py): what the
kernel writes stays in file systems of its own, it holds no capability, it is interrupted, and it holds no more
processes than a submission; the sandboxes a run starts are gone with it. Red team rounds 18 and 19."""
from pathlib import Path

import pytest

from test_kernel_boundary import ROOT, SOFTMAX, WRITE_UNTIL_REFUSED, confine, run  # the same notebooks, run the same way


FILL_SOCKETS = """
import json, os
from ipykernel.kernelapp import IPKernelApp
folder = os.path.dirname(json.load(open(IPKernelApp.instance().connection_file))["ip"])
print("SOCKETS", sorted(os.listdir(folder)))""" + WRITE_UNTIL_REFUSED.format(path='os.path.join(folder, "big.bin")',
                                                                            limit="(64 << 20)")


@pytest.mark.nbgrader
@pytest.mark.slow
@pytest.mark.parametrize("mode", ["separate-user", "user-namespace"])
def test_what_a_notebook_writes_beside_its_sockets_stays_in_its_sandbox(tmp_path, monkeypatch, mode):
    """Red team round 18 (issue 44): the kernel's socket folder was a folder of the grader's disk, bound into
    the sandbox: a notebook wrote 1.5 GiB there while it ran. The sockets now live on a file system of
    IPC_QUOTA bytes that only the sandbox has, reached by Jupyter through the sandbox's root: the kernel
    still answers, its writes stop at the quota, and the grader's folder stays empty."""
    import os

    import grader.sandbox.kernel_sandbox as kernel_sandbox
    import grader.sandbox.leftovers as leftovers

    confine(monkeypatch, mode)
    monkeypatch.setenv("GRADE_DEVICE", "cpu")
    seen = []
    original = leftovers.remove_tree

    def remove_tree(folder, *args, **kwargs):  # what the grader's own folder holds when the kernel is gone
        ipc = Path(folder) / "ipc"
        if ipc.is_dir():
            seen.append(sorted(os.listdir(ipc)))
        return original(folder, *args, **kwargs)

    monkeypatch.setattr(leftovers, "remove_tree", remove_tree)
    outputs = run(tmp_path, FILL_SOCKETS, SOFTMAX, "from grader.notebook_checks import check\ncheck('softmax')")
    written = int(outputs[0].split("WROTE ")[1].split()[0])
    assert "stopped:" in outputs[0] and written <= kernel_sandbox.IPC_QUOTA >> 20, outputs[0]
    assert "kernel-" in outputs[0].split("SOCKETS")[1], outputs[0]  # its sockets were in that folder
    assert "softmax: 25/25 points, passed" in outputs[2], outputs[2]  # the kernel answered after it
    assert seen and all(held == [] for held in seen), seen


REMOUNT = r"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
here = os.path.dirname(os.__file__)
mounts = [line.split()[4] for line in open("/proc/self/mountinfo")]
point = max((m for m in mounts if here == m or here.startswith(m.rstrip("/") + "/")), key=len)
print("remount", libc.mount(None, point.encode(), None, 32 | 4096, None), os.strerror(ctypes.get_errno()))
try:
    open(os.path.join(here, "written_by_a_kernel.txt"), "w").close()
    print("WROTE")
except OSError as error:
    print("refused:", error.errno)
print("umount", libc.umount2(os.getcwd().encode(), 2), os.strerror(ctypes.get_errno()))
print([line.split()[1] for line in open("/proc/self/status") if line.startswith(("CapEff", "CapPrm", "CapAmb"))])
for folder in ("/grade/work", "/grade/seed", "/grade/lib"):
    try:
        open(folder + "/written.bin", "wb").close()
        print("WROTE", folder)
    except OSError as error:
        print("refused:", folder, error.errno)
"""


@pytest.mark.nbgrader
@pytest.mark.slow
@pytest.mark.parametrize("mode", ["separate-user", "user-namespace"])
def test_a_kernel_holds_no_capability_to_make_the_runtime_writable(tmp_path, monkeypatch, mode):
    """Found while building the kernels started ahead (issue 47): bubblewrap left an ordinary user's kernel
    every capability of its user namespace, and a notebook remounted the runtime's read-only view writable and
    wrote into the Python installation (the grader's own code, where it is the instructor's). The kernel now
    gives up every capability before anything else, in both modes. Nor is any folder of the grader's disk
    bound writable (the notebook's copy was, at /grade/work: a kernel wrote there with no quota)."""
    confine(monkeypatch, mode)
    monkeypatch.setenv("GRADE_DEVICE", "cpu")
    import os

    written = Path(os.__file__).parent / "written_by_a_kernel.txt"
    try:
        (output,) = run(tmp_path, REMOUNT)
    finally:
        written.unlink(missing_ok=True)  # where it broke: nothing left in the runtime
    assert "remount -1" in output and "WROTE" not in output and "umount -1" in output, output
    assert "['0000000000000000', '0000000000000000', '0000000000000000']" in output, output


LIMITS = """
import os, resource
for folder in ("/tmp", "/dev/shm", "."):
    stat = os.statvfs(folder)
    print("SIZE", folder, stat.f_blocks * stat.f_frsize)
print("NPROC", resource.getrlimit(resource.RLIMIT_NPROC)[0])
"""


@pytest.mark.nbgrader
@pytest.mark.slow
@pytest.mark.parametrize("mode", ["separate-user", "user-namespace"])
def test_a_kernel_is_interrupted_past_its_cells_timeout_and_holds_no_more_than_a_submission(tmp_path, monkeypatch,
                                                                                          mode):
    """Red team round 19. nbgrader interrupts a cell past its timeout; the signal reached bubblewrap's process
    group only, never the kernel, and nbgrader dropped the whole notebook (an ungraded 40 s demo cell cost 100
    points): the kernel is interrupted, and the cells after it run. The kernel's /tmp and /dev/shm (memory)
    had no size, and it started 300 processes: each file system is the working folder's size, and its
    processes and threads are limited as a submission's."""
    from grader.inside.zygote import NPROC_LIMIT
    from grader.sandbox.confine import WORK_QUOTA

    confine(monkeypatch, mode)
    monkeypatch.setenv("GRADE_DEVICE", "cpu")
    outputs = run(tmp_path, "import time\ntime.sleep(60)", "print('AFTER')", LIMITS, timeout=5)
    assert "KeyboardInterrupt" in outputs[0] and "AFTER" in outputs[1], outputs
    sizes = {line.split()[1]: int(line.split()[2]) for line in outputs[2].splitlines() if line.startswith("SIZE")}
    assert sizes and all(size <= WORK_QUOTA for size in sizes.values()), outputs[2]
    nproc = int(outputs[2].split("NPROC ")[1].split()[0])
    assert nproc <= NPROC_LIMIT + 16, outputs[2]


@pytest.mark.nbgrader
def test_a_sandbox_started_ahead_or_left_by_its_kernel_manager_is_gone_with_the_run(monkeypatch):
    """Red team round 19: failed notebooks' kernel folders (copies of the notebooks) outlived the run. Every
    kernel sandbox a process started is closed, its folder removed, when the run ends (AHEAD.stop, at exit)."""
    from grader.config import find_course_root, load_course
    from grader.sandbox.confine import confinement_for
    from grader.sandbox.kernel_sandbox import AHEAD

    monkeypatch.chdir(ROOT)
    course = load_course(find_course_root())
    confinement = confinement_for(course)
    if not confinement.sandboxed:
        pytest.skip("no sandbox on this machine")
    taken = AHEAD.take(course, confinement)  # as a kernel manager that never cleans up leaves it
    ahead = AHEAD.sandbox
    assert taken.folder.is_dir() and ahead is not None and ahead.folder.is_dir()
    AHEAD.stop()
    assert not taken.folder.exists() and not ahead.folder.exists()
    assert taken.process.poll() is not None and ahead.process.poll() is not None


SHARED = """
import mmap
held = mmap.mmap(-1, {mib} << 20)  # shared, anonymous
held[::4096] = b"x" * len(held[::4096])
print("MAPPED", {mib})
"""
HOLD = """
import torch
held = [torch.ones({mib} << 18)]  # {mib} MiB written
print("HELD", {mib})
"""


@pytest.mark.nbgrader
@pytest.mark.slow
@pytest.mark.parametrize("mode", ["separate-user", "user-namespace"])
def test_a_kernel_holds_no_more_memory_than_a_submission(tmp_path, monkeypatch, mode):
    """Red team rounds 19 and 20 (issue 44): what a kernel allocates beyond its file systems had no limit but the
    machine's. As root, each kernel's sandbox is in a cgroup of its own from its first instruction (its memory,
    files in memory included, and its processes): a notebook that holds more is stopped there, the kernel alone
    dies, and the cgroup is gone with it. Without cgroups (an ordinary user) each of the kernel's processes may
    allocate no more: the allocation fails in its cell, and the cells after it run."""
    import grader.sandbox.kernel_sandbox as kernel_sandbox
    from grader.sandbox.cgroups import available

    if mode == "separate-user" and available() is not None:
        pytest.skip(available())
    confine(monkeypatch, mode)
    monkeypatch.setenv("GRADE_DEVICE", "cpu")
    kernel_sandbox.AHEAD.stop()  # none started ahead under another limit
    monkeypatch.setattr(kernel_sandbox, "kernel_memory_bytes", lambda course: 1 << 30)
    made = []
    original = kernel_sandbox._kernel_cgroup
    monkeypatch.setattr(kernel_sandbox, "_kernel_cgroup", lambda *a: made.append(original(*a)) or made[-1])
    cells = HOLD.format(mib=128), HOLD.format(mib=2048), "print('AFTER')"
    if mode == "user-namespace":  # red team round 20: shared memory past a data limit (7 GiB held of 6)
        outputs = run(tmp_path, *cells, SHARED.format(mib=2048))
        assert "HELD 128" in outputs[0] and "HELD 2048" not in outputs[1] and "AFTER" in outputs[2], outputs
        assert "memory" in outputs[1], outputs[1]  # torch's own words: it could not allocate
        assert "MAPPED 2048" not in outputs[3] and "OSError" in outputs[3], outputs[3]
        return
    from nbclient.exceptions import DeadKernelError

    with pytest.raises(DeadKernelError):
        run(tmp_path, *cells)
    left = {str(f): f.exists() and (f / "cgroup.procs").read_text() for c in made for f in c.folders}
    assert made and not any(left.values()), left
    (folder := tmp_path / "next").mkdir()
    assert "HELD 128" in run(folder, HOLD.format(mib=128))[0]  # the next kernel, as any other
