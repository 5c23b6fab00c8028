"""Running a check without pytest's per-item machinery, where that machinery has nothing to do.

A stream of submissions (``grade autograde``, ``grade check --watch``; grader.grading.pytest_session.GradingStream)
runs every check once per submission. pytest's protocol for one item (fixture requests, a report for
each of its three phases, the hooks that log them) costs about half a millisecond, a tenth of a
submission's grading. A check that asks for nothing but the ``grade`` fixture and its own direct
parameters, and carries no mark but the suites' own (``exercise``, ``assignment``, ``parametrize``),
needs none of it: it is called with its arguments, and its outcome recorded by the same hook as
pytest's run would (GradingPlugin.pytest_runtest_makereport). Any other check (another fixture, a
``skipif``, an ``xfail``, a fixture of a conftest, autouse ones included) runs pytest's protocol as
before.
"""
from __future__ import annotations

import pytest

OWN_MARKS = frozenset({"exercise", "assignment", "parametrize", "apart"})


def is_lean(item) -> bool:
    """Whether ``item`` can run without pytest's protocol: a plain test function whose fixtures are
    ``grade`` (and the ``request`` it takes) and direct parameters only, with no mark but the suites'."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None or not isinstance(item, pytest.Function):
        return False
    params = getattr(getattr(item, "callspec", None), "params", {})
    for name in item.fixturenames:
        defs = info.name2fixturedefs.get(name) or ()
        if name == "request" or (name == "grade" and len(defs) == 1):
            continue
        if name in params and defs and type(defs[-1]).__name__ == "DirectParamFixtureDef":
            continue
        return False
    return set(info.argnames) <= {"grade", *params} and all(m.name in OWN_MARKS for m in item.iter_markers())


class _Request:
    """What the ``grade`` fixture reads of its request: the item."""

    def __init__(self, item):
        self.node = item


def run_lean(item, plugin) -> None:
    """Run ``item`` (:func:`is_lean`) as pytest's call phase would, and record its outcome with
    ``plugin`` (grader.grading.pytest_session.GradingPlugin): a check that raises is failed or in error as before, a
    skip is a skip, and Ctrl-C or pytest.exit still stop the run."""
    params = getattr(getattr(item, "callspec", None), "params", {})

    def call():
        item.funcargs = {**params, "grade": plugin.make_grade(_Request(item))}
        item.runtest()

    try:
        info = pytest.CallInfo.from_call(call, when="call", reraise=(pytest.exit.Exception, KeyboardInterrupt))
        plugin.pytest_runtest_makereport(item, info)  # while the grade fixture is at hand (what it verified)
    finally:
        item.funcargs = None  # nothing of this submission's kept by the item (as pytest's teardown does)


def next_full(items, lean: list[bool]) -> list:
    """For each item, the next one that runs pytest's protocol (None after the last): what pytest's
    teardown of an item must see, so a module's setup lasts exactly as long as its items need it."""
    following, found = [None] * len(items), None
    for index in range(len(items) - 1, -1, -1):
        following[index] = found
        if not lean[index]:
            found = items[index]
    return following
