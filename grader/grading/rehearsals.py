"""A release's rehearsals: what a failing student's check will ask, asked while the reference is at hand.

A student distribution answers the lesson's computations (grader.grading.models) and the stand-ins of a run with
right helpers (grader.grading.oracle.RecordedAnswers) from the recording alone, and a passing check on the
reference makes only the calls a passing check makes. So a release (``grade release --out``, the plugin's
``recorder`` set) runs each passing check again:

- once per output it compared whose failure the lesson's own code diagnoses (``Grade.diagnosable``), that output
  made wrong (``Grade.fail_at``): the diagnosis runs as a failing student's would (the lesson's ``except
  CheckFailed`` blocks, its root causes), and its calls of the lesson's computations are kept
  (:func:`rehearse_diagnoses`);
- once per student's helper that those diagnoses judged (``Grade.helpers_judged``), that helper behind a stand-in
  asking the reference: the questions the recorder's record of the reference's own calls does not answer (06's
  memory case, whose right output is a lesson computation and whose reference class never runs; a class calling
  its helper on other values than the reference's) are kept, with their answers, for the student side's run with
  right helpers (:func:`rehearse_stand_ins`), within :data:`REHEARSED_BYTES`.
"""
from __future__ import annotations

from grader.grading.models import REHEARSED_BYTES, rehearse, size_of
from grader.grading.oracle import LiveAnswers, Oracle, Raised, RecordedAnswers, budget
from grader.grading.outcomes import StudentFault
from grader.grading.stand_ins import has_stand_in, modules_of, restore


def rehearse_diagnoses(plugin, item, args: dict) -> set[str]:
    """The passing check ``item`` run again with each diagnosable output made wrong; returns the student's helpers
    its diagnoses judged (blamed, or found right)."""
    first = args.get("grade")
    judged = set(getattr(first, "helpers_judged", ()))
    for number in getattr(first, "diagnosable", ()):
        grade = plugin.make_grade(item._request)
        grade.fail_at = number
        rehearse(lambda grade=grade: item.obj(**{**args, "grade": grade}))
        judged |= grade.helpers_judged
    return judged


def rehearse_stand_ins(plugin, item, args: dict, helpers) -> None:
    """The passing check ``item`` run once more for each of ``helpers`` that has a stand-in, that helper behind a
    stand-in asking the reference; the questions no record of the check answers yet, with their answers, are kept
    under the check where they take at most REHEARSED_BYTES in all (06's repeat_kv on the memory case answers
    megabytes: a student distribution cannot run that case with a right repeat_kv, and says so)."""
    for helper in sorted(h for h in helpers if has_stand_in(h)):
        kept = _asked_of(plugin, item, args, helper)
        records = plugin.recorder.calls.setdefault(item.nodeid, [])
        known = RecordedAnswers(list(records), plugin.session.course.tolerance)
        new = [record for record in kept if not _answered(known, record)]
        if new and size_of(new) <= REHEARSED_BYTES:
            records.extend(new)


def _asked_of(plugin, item, args: dict, helper: str) -> list:
    """What the check asked a stand-in for ``helper`` (the reference answering), as the recorder keeps it."""
    from grader.sandbox.client import WorkerFault

    grade = plugin.make_grade(item._request)
    # the reference's own helper, not the recorder's stand-in for it in the reference's module (which would answer
    # through the recorder, keeping the answer a second time and spending the recorder's time)
    functions = {name: own for _, name, own in plugin.recorder.replaced if name == helper}
    kept = []
    oracle = grade.student.oracle = Oracle(LiveAnswers(functions, plugin.session.device, kept), [helper],
                                           budget([helper], None))
    try:
        placed = grade.student.request({"op": "stand_in", "helpers": [helper], "modules": modules_of(
            plugin.session.course, grade.student.assignment, [helper])}).get("placed")
        if placed != [helper]:
            return []
        rehearse(lambda: _with_gradients(item.obj, {**args, "grade": grade}))  # (checks of gradients too)
    except (StudentFault, WorkerFault):  # the reference's own code: nothing to keep
        return []
    finally:
        restore(grade.student)
    return [] if oracle.refused else kept


def _answered(known: RecordedAnswers, record) -> bool:
    """Whether ``known`` already answers the question of ``record`` (a recorded raise answers it too)."""
    question = record["q"]
    try:
        known.new(question) if question.get("op") == "new" else known.forward(question)
    except Raised:
        return True
    except Exception:  # noqa: BLE001 - NotOnRecord: not answered yet
        return False
    return True


def _with_gradients(check, args: dict) -> None:
    import torch

    with torch.enable_grad():
        check(**args)
