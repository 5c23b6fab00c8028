"""One grader's sandbox and a cell per submission (grader/sandbox/cells.py): what runner.py reaches
student code through."""
import os
from pathlib import Path

from grader.sandbox.cells import Sandbox
from grader.sandbox.confine import FIRST_UID, plan
from grader.submission import resolve_submission

ROOT = Path(__file__).resolve().parents[3]


def test_a_cell_is_a_working_copy_its_own_uid_and_cgroup_and_goes_with_its_end(course):
    sandbox = Sandbox(course, plan("auto"))
    try:
        submission = resolve_submission(ROOT / "solutions" / "01_attention_basics", course)
        first, second = sandbox.cell(submission), sandbox.cell(submission)
        assert first.copy.root.is_dir() and first.copy.root.parent == sandbox.zygote.work
        if sandbox.confinement.root:
            assert FIRST_UID < first.uid != second.uid and os.stat(first.copy.root).st_uid == first.uid
        if sandbox.hierarchy is not None:
            assert all(folder.is_dir() for folder in first.cgroup.folders) and first.cgroups
        zygote = sandbox.zygote
        sandbox.end(first, gone=True)  # the zygote vouched for it: kept
        assert sandbox.zygote is zygote and not first.copy.root.exists()
        assert first.cgroup is None or not any(folder.exists() for folder in first.cgroup.folders)
        sandbox.end(second, gone=False)  # it could not: a fresh zygote for the next submission
        assert sandbox.zygote is not zygote and not second.copy.root.exists()
    finally:
        sandbox.close()
    assert sandbox.hierarchy is None
