"""The Slurm template on a real one-node Slurm: Debian's slurm-wlm and munge, started by the test in a
folder of its own (its own key, state, spool and free ports; the node as `slurmd -C` finds this machine),
the template submitted with sbatch as its header says, waited for, its shards merged with grade export.
Skipped, with the reason, where Slurm cannot start; every process it started is ended, pass or fail."""
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from test_templates import ROOT, TEMPLATES, course_folder, merged, shell  # noqa: F401 (course_folder: a fixture)

SBIN = "/usr/sbin:/sbin"
NEEDED = ("munged", "mungekey", "munge", "slurmctld", "slurmd", "sbatch", "scontrol", "scancel")
TERMINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE"}


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


class Node:
    """One Slurm node and its controller, with munge, all under ``folder``."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.path = f"{os.environ['PATH']}:{SBIN}"
        self.conf = folder / "slurm.conf"
        self.env = {"SLURM_CONF": str(self.conf), "PATH": self.path}  # sbatch and the jobs: this cluster only
        self.daemons: list[subprocess.Popen] = []

    def run(self, *args: str, timeout: float = 30) -> subprocess.CompletedProcess:
        return subprocess.run(args, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, **self.env})

    def start(self, name: str, *args: str) -> None:
        log = open(self.folder / f"{name}.out", "w")
        self.daemons.append(subprocess.Popen([name, *args], stdout=log, stderr=subprocess.STDOUT,
                                             env={**os.environ, **self.env}, start_new_session=True))
        log.close()

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-1500:]}"
                         for p in sorted(self.folder.glob("*.out")) + sorted(self.folder.glob("*.log")))

    def up(self) -> str | None:
        """Start munged, slurmctld and slurmd; None once the node is idle, else why it is not."""
        munge = self.folder / "munge"
        munge.mkdir(mode=0o755)
        key = munge / "munge.key"
        made = self.run("mungekey", "--create", f"--keyfile={key}")
        if made.returncode:
            return f"mungekey failed: {made.stderr.strip()}"
        sock = munge / "munge.socket"
        self.start("munged", "--foreground", "--force", f"--key-file={key}", f"--socket={sock}",
                   f"--pid-file={munge / 'munged.pid'}", f"--seed-file={munge / 'munged.seed'}",
                   f"--log-file={munge / 'munged.log'}")
        if not self._wait(lambda: sock.exists() and self.run("munge", "-n", "-S", str(sock)).returncode == 0, 20):
            return "munged did not start"
        found = self.run("slurmd", "-C").stdout  # NodeName=... CPUs=... RealMemory=...: this machine as it is
        node = next((line for line in found.splitlines() if line.startswith("NodeName=")), None)
        if node is None:
            return f"slurmd -C did not describe this machine: {found.strip()!r}"
        name = re.search(r"NodeName=(\S+)", node)[1]
        ctld_port, slurmd_port = _free_ports(2)
        for folder in ("state", "spool"):
            (self.folder / folder).mkdir()
        (self.folder / "plugstack.conf").write_text("")
        self.conf.write_text("\n".join([
            "ClusterName=gradetest", f"SlurmctldHost={name}(127.0.0.1)",
            f"SlurmctldPort={ctld_port}", f"SlurmdPort={slurmd_port}",
            "AuthType=auth/munge", "CredType=cred/munge", f"AuthInfo=socket={sock}",
            "SlurmUser=root", "SlurmdUser=root",
            f"StateSaveLocation={self.folder / 'state'}", f"SlurmdSpoolDir={self.folder / 'spool'}",
            f"SlurmctldPidFile={self.folder / 'slurmctld.pid'}", f"SlurmdPidFile={self.folder / 'slurmd.pid'}",
            f"SlurmctldLogFile={self.folder / 'slurmctld.log'}", f"SlurmdLogFile={self.folder / 'slurmd.log'}",
            f"PlugStackConfig={self.folder / 'plugstack.conf'}",
            "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", "MpiDefault=none",
            "SchedulerType=sched/backfill", "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core_Memory",
            "ReturnToService=2", "MinJobAge=600",
            "JobCompType=jobcomp/none", "AccountingStorageType=accounting_storage/none",
            "JobAcctGatherType=jobacct_gather/none",
            f"{node} NodeAddr=127.0.0.1 State=UNKNOWN",
            "PartitionName=grading Nodes=ALL Default=YES MaxTime=INFINITE State=UP", ""]))
        self.start("slurmctld", "-D", "-i")
        self.start("slurmd", "-D", "-N", name)
        idle = lambda: self.run("sinfo", "-h", "-o", "%T").stdout.strip() == "idle"  # noqa: E731
        if not self._wait(idle, 60):
            return f"the node did not come up: sinfo says {self.run('sinfo', '-h').stdout.strip()!r}"
        return None

    def wait_for(self, job: int, tasks: int, timeout: float) -> dict[int, str]:
        """Each array task's state once all are over; fails at once on a task that can never start."""
        deadline = time.monotonic() + timeout
        while True:
            shown = self.run("scontrol", "-o", "show", "job", str(job)).stdout.splitlines()
            states = {int(m[1]): re.search(r"JobState=(\S+)", line)[1]
                      for line in shown if (m := re.search(r"ArrayTaskId=(\d+)\b", line))}
            reasons = {re.search(r"Reason=(\S+)", line)[1] for line in shown if "JobState=PENDING" in line}
            assert not reasons & {"PartitionConfig", "Resources_Unavailable", "BadConstraints"}, \
                f"the template's tasks can never start on this node: Reason={reasons}\n{self.logs()}"
            if len(states) == tasks and set(states.values()) <= TERMINAL:
                return states
            assert time.monotonic() < deadline, f"still running after {timeout:.0f} s: {shown}\n{self.logs()}"
            time.sleep(1)

    def down(self) -> None:
        """Cancel every job, then end each daemon this node started and any process of its jobs left."""
        if self.conf.exists() and self.daemons:
            self.run("scancel", "--quiet", "--user", str(os.getuid()))
            self._wait(lambda: not self.run("squeue", "-h").stdout.strip(), 20)
        for daemon in reversed(self.daemons):  # slurmd before slurmctld before munged
            if daemon.poll() is None:
                os.killpg(daemon.pid, signal.SIGTERM)
                try:
                    daemon.wait(15)
                except subprocess.TimeoutExpired:
                    os.killpg(daemon.pid, signal.SIGKILL)
                    daemon.wait(5)
        for pid in self.left_over():  # a job step's slurmstepd or a job's own processes: they carry SLURM_CONF
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def left_over(self) -> list[int]:
        """The processes still alive whose environment names this node's slurm.conf."""
        mark = f"SLURM_CONF={self.conf}".encode()
        found = []
        for proc in Path("/proc").iterdir():
            if proc.name.isdigit() and int(proc.name) != os.getpid():
                try:
                    if mark in (proc / "environ").read_bytes().split(b"\0"):
                        found.append(int(proc.name))
                except OSError:
                    pass
        return found

    @staticmethod
    def _wait(ready, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if ready():
                return True
            time.sleep(0.5)
        return False


@pytest.fixture
def slurm_node(tmp_path_factory):
    missing = [name for name in NEEDED if not shutil.which(name, path=f"{os.environ['PATH']}:{SBIN}")]
    if missing:
        pytest.skip(f"no Slurm to start here: {', '.join(missing)} not found (Debian: apt-get install slurm-wlm munge)")
    if os.geteuid() != 0:
        pytest.skip("a test node's slurmd runs as root (SlurmdUser=root): run the tests as root to start one")
    node = Node(tmp_path_factory.mktemp("slurm"))
    try:
        why = node.up()
        if why:
            pytest.skip(f"Slurm could not start here: {why}\n{node.logs()}")
        yield node
    finally:
        node.down()
        assert all(d.poll() is not None for d in node.daemons) and not node.left_over(), "a Slurm process outlived the test"


@pytest.mark.slurm
@pytest.mark.slow  # a real cluster's start, two array tasks of one grading each
def test_the_slurm_template_runs_on_a_small_node_as_written_and_its_shards_merge(slurm_node, course_folder):
    (course_folder / "templates").symlink_to(ROOT / "templates")
    header = (TEMPLATES / "autograde.slurm").read_text()
    submit = next(line.lstrip("# ").strip() for line in header.splitlines() if line.lstrip("# ").startswith("sbatch "))
    submit = submit.replace("--array=1-8", "--array=1-2").replace(" [SEED]", "")  # two shards, the job's own seed
    done = shell(course_folder, submit, **slurm_node.env)
    assert done.returncode == 0, done.stderr
    job = int(re.search(r"Submitted batch job (\d+)", done.stdout)[1])
    states = slurm_node.wait_for(job, tasks=2, timeout=600)
    outputs = {task: (course_folder / f"slurm-{job}_{task}.out").read_text() for task in (1, 2)}
    assert states == {1: "COMPLETED", 2: "COMPLETED"}, (states, outputs, slurm_node.logs())
    for task, output in outputs.items():
        assert f"shard {task}/2 done" in output, output
    merge = next(line.split("(when every task is done)", 1)[1].strip() for line in header.splitlines()
                 if "grade export" in line)
    done = shell(course_folder, merge)
    assert done.returncode == 0, done.stderr
    rows = merged(course_folder)  # every student once, all on one seed, each 100/100
    assert {row["seed"] for row in rows.values()} == {str(job)}  # the seed: the array's job id
    assert {p.parent.name for p in course_folder.glob("grades-*/*.json")} == {"grades-1", "grades-2"}  # both graded
