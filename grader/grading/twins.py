"""One submission's assignments graded by two grading processes at once (issue 47: `grade check` of several
assignments on a machine of two processors or more, where one process leaves the second processor idle: the
grading process and its worker take turns).

Once the suites are collected, the grading process asks its zygote for a twin (grader.sandbox.client.ZygoteClient.twin:
a fork of the zygote in the same sandbox, torch already loaded) and forks itself: the child grades through the twin,
the parent through the first zygote. The assignments wait in a queue (a pipe holding one byte an assignment, the
longest first); each process takes the next as it frees, so neither waits while the other has work. How long each
assignment takes is what its last grading here measured (kept in the user's cache, grader.grading.user_cache: it
only orders the queue, and decides nothing of a result), or, before any was measured, its number of checks: a check
of 05's (flash attention over 1024 tokens) costs about five of 02's, and a queue by checks alone left 05 last (issue
47: the second process went on 0.3 s after the first had ended).
An assignment is graded whole by one process: its checks, its workers, its figures; the child sends back its
outcomes, its figures and whether its twin saw every process of the submission gone, and the parent's grading goes
on as if it had run them (grader.grading.grader: the exercises' results, charged_once and the rules read over the
whole assignment, as before). Nothing of trust changes: both processes are the grader's, each worker is confined as
ever (the same cell: working copy, uid, cgroups), and each memory reading counts its own zygote's tree only.

Where the child cannot report (it died, or its report does not read), the parent grades the assignments the child
took itself, afresh. Not on CUDA (a context a process), nor with --debug, nor while the public suites are recorded.
"""
from __future__ import annotations

import json
import math
import os
import pickle
import select
import signal
import statistics
import tempfile
import time

from grader.grading import user_cache
from grader.inside.syscalls import PR_SET_PDEATHSIG, prctl

ENVIRONMENT = "GRADE_TWINS"  # "0": always one grading process


def wanted() -> bool:
    """Whether this machine and environment make a second grading process worth its fork: two processors or more,
    and one of them not already taken (the last minute's load average; on a machine busy with other work, a
    test run or a class's batch, a second process only adds its fork and its workers to the queue)."""
    try:
        processors = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        processors = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        load = 0.0
    return processors > 1 and load < processors - 0.25 and os.environ.get(ENVIRONMENT, "1") != "0"


def graded_in_two(plugin, items, run, figures) -> bool:
    """Run ``items`` (the collected checks) by unit in this process and a twin, ``run(indices)`` running some of them;
    ``figures(outcomes, assignment_ids)`` draws what those outcomes show wrong. A unit is an assignment's checks, and
    apart from them its checks marked apart (authoring.apart: 06's memory readings), which start from workers and
    state of their own wherever they run (GradingSession.enter), unless the assignment is pictured (its figures are
    drawn by the process that graded it whole). False (nothing run) where there are fewer than two units or no twin
    zygote."""
    session = plugin.session
    groups = units(items, pictured(session.course))
    if len(groups) < 2 or "" in groups or len(groups) > 255:
        return False
    twin = session.zygote.twin()
    if twin is None:
        return False
    course = str(session.course.root.resolve())
    order = longest_first(groups, measured(course))
    queue, queued = os.pipe()
    os.write(queued, bytes(range(len(order))))
    os.close(queued)
    report, reported = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(report)
        _child(plugin, twin, groups, order, queue, reported, run, figures, parent)
    os.close(reported)
    outcomes, seconds = {}, {}  # by unit
    try:
        while (taken := _take(queue)) is not None:
            seconds[order[taken]] = _graded(plugin, run, groups[order[taken]], outcomes, order[taken])
        said = _report(report, pid, session.timeout() + 30)
    except BaseException:
        _stop(pid)
        raise
    finally:
        os.close(queue)
        os.close(report)
        twin.close()  # this process's end of the twin's channel: the twin ends, with any worker the child left
    theirs = [unit for unit in order if unit not in outcomes]
    if said is None or set(said.get("outcomes", ())) != set(theirs):  # the child's units, graded here afresh
        for unit in theirs:
            _graded(plugin, run, groups[unit], outcomes, unit)
        plugin.outcomes[:] = [outcome for unit in groups for outcome in outcomes[unit]]
        return True
    outcomes.update(said["outcomes"])
    plugin.outcomes[:] = [outcome for unit in groups for outcome in outcomes[unit]]  # as one process orders them
    theirs_seconds = said.get("seconds")
    if isinstance(theirs_seconds, dict):
        seconds.update({name: value for name, value in theirs_seconds.items() if name in theirs})
    keep_measured(course, seconds)
    plugin.twin = {"assignments": _whole(groups, theirs), "figures": said.get("figures") or {},
                   "gone": said.get("gone") is True}
    return True


APART = "/apart"  # a unit's name: its assignment's, and this for the assignment's checks marked apart


def units(items, pictured_ids=frozenset()) -> dict[str, list[int]]:
    """The checks' places by unit, in the order one process runs them: each assignment's, then its apart ones
    (keep_graded put them last), for an assignment not in ``pictured_ids``."""
    groups: dict[str, list[int]] = {}
    for index, item in enumerate(items):
        marker = item.get_closest_marker("assignment")
        name = marker.args[0] if marker is not None and marker.args else ""
        if name and name not in pictured_ids and item.get_closest_marker("apart") is not None:
            name += APART
        groups.setdefault(name, []).append(index)
    return groups


def pictured(course) -> frozenset[str]:
    from grader.grading.pictures import course_pictures

    return frozenset(assignment for assignment, _ in course_pictures(course))


def _whole(groups, taken) -> set[str]:
    """The assignments every unit of which is in ``taken``."""
    taken = set(taken)
    return {unit for unit in groups if APART not in unit and unit in taken
            and (unit + APART not in groups or unit + APART in taken)}


def _graded(plugin, run, indices, outcomes: dict, unit: str) -> float:
    """Run one unit; its outcomes kept apart in ``outcomes``; the seconds it took."""
    before = len(plugin.outcomes)
    seconds = _timed(run, indices)
    outcomes[unit] = plugin.outcomes[before:]
    return seconds


def _timed(run, indices) -> float:
    started = time.monotonic()
    run(indices)
    return time.monotonic() - started


def longest_first(groups: dict[str, list[int]], seconds: dict[str, float]) -> list[str]:
    """The units of ``groups`` (each one's checks), longest first: as ``seconds`` measured them, and one not measured
    as its checks at the median seconds a check of those measured (all by their checks where none was).
    Longest first is what lets two processes taking the next as they free end together."""
    rates = [seconds[name] / len(checks) for name, checks in groups.items() if name in seconds and checks]
    rate = statistics.median(rates) if rates else 1.0
    estimate = {name: seconds.get(name, rate * len(checks)) for name, checks in groups.items()}
    return sorted(groups, key=lambda name: -estimate[name])


TIMES = "times.json"  # in the user's cache folder "twins": {course root: {unit: seconds}}
KEPT_COURSES = 16
_MOST = 1 << 16  # bytes read of the file, at most


def measured(course: str) -> dict[str, float]:
    """How long each assignment of the course at ``course`` took to grade, as the last two-process grading here
    measured it; empty where nothing was kept, or what is kept cannot be read as it must be."""
    kept = _kept()
    found = kept.get(course)
    return dict(found) if isinstance(found, dict) else {}


def keep_measured(course: str, seconds: dict[str, float]) -> None:
    """Keep ``seconds`` (unit: seconds) as the course's measures, beside those of its other units (the
    file replaced whole, never written in place; a few courses kept, the latest). Nothing where the cache cannot
    be written."""
    folder = user_cache.folder("twins")
    if folder is None or not seconds:
        return
    kept = _kept()
    mine = {**(kept.pop(course, None) or {}), **seconds}
    kept[course] = mine
    kept = dict(list(kept.items())[-KEPT_COURSES:])
    try:
        handle, scratch = tempfile.mkstemp(dir=folder, suffix=".partial")
    except OSError:
        return
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(kept, out)
        os.replace(scratch, os.path.join(folder, TIMES))
    except OSError:
        try:
            os.unlink(scratch)
        except OSError:
            pass


def _kept() -> dict[str, dict[str, float]]:
    """Every course's kept measures: only a plain file of the user's alone, read without following a link, and
    only its entries that are names and finite seconds."""
    import stat

    folder = user_cache.folder("twins")
    if folder is None:
        return {}
    try:
        handle = os.open(os.path.join(folder, TIMES), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return {}
    try:
        if not user_cache.users_alone(os.fstat(handle), stat.S_ISREG):
            return {}
        data = json.loads(os.read(handle, _MOST))
    except (OSError, ValueError):
        return {}
    finally:
        os.close(handle)
    if not isinstance(data, dict):
        return {}
    return {course: {name: float(value) for name, value in times.items() if isinstance(name, str) and _seconds(value)}
            for course, times in data.items() if isinstance(course, str) and isinstance(times, dict)}


def _seconds(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0


def _take(queue: int) -> int | None:
    """The next assignment's place in the order, or None when the queue is empty (each read takes one byte alone)."""
    taken = os.read(queue, 1)
    return taken[0] if taken else None


def _child(plugin, twin, groups, order, queue, reported, run, figures, parent: int) -> None:
    status = 1
    try:
        # Ctrl-C is the parent's to handle (grader/interrupt.py: one line, and this process killed with the rest);
        # a parent killed outright takes this one with it
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # gone before the line above
            return
        session = plugin.session
        session.zygote, session.students, plugin.outcomes = twin, {}, []
        outcomes, seconds = {}, {}
        while (taken := _take(queue)) is not None:
            seconds[order[taken]] = _graded(plugin, run, groups[order[taken]], outcomes, order[taken])
        claimed = _whole(groups, outcomes)
        drawn = figures([o for unit in outcomes.values() for o in unit], claimed) if figures is not None else {}
        gone = session.close()
        data = pickle.dumps({"outcomes": outcomes, "figures": drawn, "gone": gone, "seconds": seconds},
                            protocol=pickle.HIGHEST_PROTOCOL)
        view = memoryview(data)
        while view:
            view = view[os.write(reported, view):]
        status = 0
    except BaseException:  # noqa: BLE001 - the parent grades what this process could not report
        pass
    finally:
        os._exit(status)


def _report(report: int, pid: int, timeout: float) -> dict | None:
    """The child's report, read until it closes its end, then the child reaped; None where it did not come whole."""
    import time

    chunks, deadline = [], time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([report], [], [], left)[0]:
            _stop(pid)
            return None
        chunk = os.read(report, 1 << 20)
        if not chunk:
            break
        chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    if status != 0:
        return None
    try:
        said = pickle.loads(b"".join(chunks))
    except Exception:  # noqa: BLE001 - the grader's own child: a report that does not read is graded again here
        return None
    outcomes = said.get("outcomes") if isinstance(said, dict) else None
    if not isinstance(outcomes, dict) or not all(isinstance(unit, list) for unit in outcomes.values()):
        return None
    return said


def _stop(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass
