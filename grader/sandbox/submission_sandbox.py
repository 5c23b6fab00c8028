"""One grader's sandbox, and a cell in it per submission.

A :class:`Sandbox` owns what one grading process keeps for student code: its zygote (started fresh,
restarted when it dies or cannot vouch that a submission is gone) and its cgroup hierarchy, under the
confinement planned for this machine (:mod:`grader.sandbox.confine`). Before each submission it asks
the zygote's probe whether that confinement holds, and takes the next weaker mode where it does not.
A :class:`Cell` is one submission's place in it: its working copy (handed to its own uid, as root),
its uid and its cgroup. The grading (grader.grading.grader) reaches student code through these two only.
"""
from __future__ import annotations

import sys

from grader.config import Course
from grader.errors import IsolationError
from grader.sandbox import leftovers
from grader.sandbox.confine import NOBODY, blocked_paths, describe, prepare_workdir, submission_uid, weaker
from grader.submission import Submission, WorkingCopy

NPROC_LIMIT = 128  # processes and threads a submission may have at once, where cgroups count them


class Cell:
    """One submission in the sandbox: its working copy, its uid (None: the zygote's user) and its cgroup."""

    def __init__(self, sandbox: "Sandbox", submission: Submission, number: int):
        self.uid = submission_uid() if sandbox.confinement.root else None
        self.copy = WorkingCopy(submission, parent=sandbox.zygote.work, relative=sandbox.relative_paths)
        self.cgroup = None
        try:
            if self.uid is not None:
                prepare_workdir(str(self.copy.root), self.uid, NOBODY)
            if sandbox.hierarchy is not None:
                from grader.sandbox.cgroups import SubmissionCgroup

                self.cgroup = SubmissionCgroup(sandbox.hierarchy, f"s{number}",
                                               memory_bytes=sandbox.course.limits.memory_mb << 20, pids=NPROC_LIMIT)
        except BaseException:
            self.copy.close()
            raise
        self.cgroups = self.cgroup.procs_files(sandbox.inside_cgroups()) if self.cgroup else ()  # as workers see them
        sandbox.zygote.prepare(self.cgroups)  # its process started and in its cgroups before its first worker

    def close(self) -> None:
        """The cgroup emptied and removed, the working copy deleted."""
        try:
            if self.cgroup is not None:
                self.cgroup.remove()
        finally:
            self.copy.close()


class Sandbox:
    """The zygote and cgroups of one grading process, under ``confinement``."""

    def __init__(self, course: Course, confinement, *, batch: bool = False, relative_paths: bool = False):
        """``batch``: many submissions will be graded here (see grader.sandbox.client.ZygoteClient).
        ``relative_paths``: messages name files from each submission's own folder (a class's batch)."""
        self.course, self.confinement, self.batch = course, confinement, batch
        self.relative_paths = relative_paths
        self.blocked = blocked_paths(course)
        self.hierarchy = None
        self.cells = 0
        leftovers.sweep()  # what graders killed before this one left: scratch folders, cgroups
        if confinement.cgroups:
            from grader.sandbox.cgroups import hierarchy_name, make_hierarchy

            self.hierarchy = make_hierarchy(hierarchy_name(leftovers.owner_prefix()))
        self.zygote = self._start_zygote()  # it imports torch while the grader does the same

    def _start_zygote(self):
        from grader.sandbox.client import ZygoteClient

        cgroups = None
        if self.hierarchy is not None:
            cgroups = {str(folder): f"/grade/cgroup/{i}" for i, folder in enumerate(self.hierarchy.folders)}
        return ZygoteClient(self.confinement, blocked=self.blocked, cgroups=cgroups, batch=self.batch)

    def inside_cgroups(self) -> dict:
        return {folder: f"/grade/cgroup/{i}" for i, folder in enumerate(self.hierarchy.folders)}

    def restart(self) -> None:
        """A fresh zygote: the last one died, or cannot vouch that a submission's processes are gone."""
        self.zygote.close()
        self.zygote = self._start_zygote()

    def cell(self, submission: Submission) -> Cell:
        """A place for ``submission``, in a zygote that is alive and confined as planned."""
        if not self.zygote.alive:  # killed from outside, or out of memory: a fresh one, no fault of this student
            self.restart()
        self._confined()
        self.cells += 1
        return Cell(self, submission, self.cells)

    def end(self, cell: Cell, *, gone: bool) -> None:
        """``cell``'s submission ended: ``gone`` when the zygote confirmed none of its processes is left
        (else the zygote is replaced: its sandbox ended first, with every process in it); its cgroup and
        working copy are removed, and whatever else it left in the working folder (a zygote that cannot
        empty it is replaced too: the next submission gets all of its quota)."""
        try:
            if not gone:
                self.zygote.stop()
            cell.close()
        finally:
            if not gone or not self.zygote.clear_work():
                self.restart()

    def _confined(self) -> None:
        """The zygote's probe (said before it loads torch, so this waits for nothing): where a worker cannot
        be confined as planned, the next weaker mode, said on stderr, or under ``separate_user =
        "required"`` nothing weaker (the checks then say grader-error). A zygote that did not start at
        all is left to the checks, which say grader-error."""
        try:
            problem = self.zygote.probe()
        except IsolationError:
            return
        if problem is None:
            return
        fallback = weaker(self.confinement, problem, self.course.isolation.separate_user)
        if fallback is None:
            return
        print(describe(fallback), file=sys.stderr)
        self.zygote.close()
        self._remove_hierarchy()  # no cgroups without the sandbox that binds them
        self.confinement = fallback
        self.zygote = self._start_zygote()

    def close(self) -> None:
        self.zygote.close()
        self._remove_hierarchy()

    def _remove_hierarchy(self) -> None:
        from grader.sandbox.cgroups import remove_hierarchy

        remove_hierarchy(self.hierarchy)
        self.hierarchy = None
