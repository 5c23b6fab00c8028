"""A worker's private view of the file system (grader/mounts.py): each case forks a child that enters
the view, drops to an unprivileged uid and reports what it can read."""
from __future__ import annotations

import os

from test_confine import ROOT_ONLY, in_child, scratch, unused_uid  # noqa: F401 - scratch is a fixture

from grader.confine import drop_privileges, readable_by
from grader.mounts import enter_private_view


def _readable(path) -> bool:
    """Whether something of it can be read: a folder listed, a file's content (a covered file is empty)."""
    try:
        return True if os.path.isdir(path) and os.listdir(path) is not None else bool(open(path).read())
    except OSError:
        return False


def _look(uid, hide, reach, keep, paths):
    enter_private_view(hide=hide, reach=reach, keep=keep, can_enter=lambda path: readable_by(path, uid, 65534))
    drop_privileges(uid, 65534)
    seen = {path: _readable(path) for path in paths}
    seen["processes"] = sum(name.isdigit() for name in os.listdir("/proc"))
    return seen


def _tree(scratch):
    os.chmod(scratch, 0o755)
    made = {}
    for name in ("secret", "closed", "closed/python", "closed/other", "results", "results/copy"):
        made[name] = os.path.join(scratch, name)
        os.mkdir(made[name], 0o755)
    os.chmod(made["closed"], 0o700)  # like /root: Python lives inside
    made["file"] = os.path.join(scratch, "gradebook.db")
    with open(made["file"], "w") as stream:
        stream.write("grades")
    os.chmod(made["file"], 0o644)
    return made


@ROOT_ONLY
def test_secrets_are_covered_python_is_reachable_and_nothing_else_of_a_closed_folder(scratch):
    made = _tree(scratch)
    uid = unused_uid()
    paths = [made["secret"], made["file"], made["closed/python"], made["closed/other"], made["results/copy"]]
    before = in_child(lambda: (drop_privileges(uid, 65534), {p: _readable(p) for p in paths})[1])
    assert before == {made["secret"]: True, made["file"]: True, made["closed/python"]: False,
                      made["closed/other"]: False, made["results/copy"]: True}
    seen = in_child(_look, uid, [made["secret"], made["file"], made["results"]], [made["closed/python"]],
                    [made["results/copy"]], paths)
    assert seen[made["secret"]] is False and seen[made["file"]] is False  # covered, though others may read them
    assert seen[made["closed/python"]] is True  # the way through the closed folder...
    assert seen[made["closed/other"]] is False  # ...leads there alone
    assert seen[made["results/copy"]] is True  # a covered folder that holds what the worker needs stays
    assert seen["processes"] <= 2  # /proc: its own processes only
    assert os.access(made["file"], os.R_OK) and open(made["file"]).read() == "grades"  # nothing changed out here
    assert sorted(os.listdir(made["closed"])) == ["other", "python"]
