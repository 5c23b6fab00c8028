"""Reference outputs recorded once and replayed where the reference is absent.

Every use the suites make of the reference goes through one path (``Grade._event``): the output of
a call, the gradients of a backward pass, the weights of a module. A *recording* keeps each result
under the check's node id and the use's number, together with the run's seed (the inputs are drawn
again from it, so they are the same). Replaying such a recording runs the same suites with no
reference present: this is how a student distribution can grade fixed public cases offline. A
check that reaches for the reference in another way (``grade.ref``) cannot be replayed; it is
skipped, and neither earns nor costs points.
"""
from __future__ import annotations

from pathlib import Path

from grader.grading.outcomes import NotReplayable  # noqa: F401 - where the suites and the grader import it from
from grader.inside.protocol import on_device


class Recording:
    def __init__(self, seed: int, events: dict | None = None, *, replaying: bool = False, helpers: dict | None = None,
                 models=None):
        from grader.grading.models import Book

        self.seed = seed
        self.events = {} if events is None else events
        self.replaying = replaying
        # check -> what the reference's helpers were asked and answered in it (grader.grading.oracle.Recorder):
        # the answers a student distribution's stand-ins get
        self.helpers = {} if helpers is None else helpers
        # the lesson's computations (grader.grading.models): what each call gave, answered from here in a replay
        self.models = models if models is not None else Book(replaying=replaying)

    def event(self, key: str, compute):
        if self.replaying:
            if key not in self.events:
                raise NotReplayable(f"no recorded reference output for {key}")
            return self.events[key]
        value = compute()
        self.events[key] = _on_cpu(value, copy=True)  # a copy: the reference may change later (new weights)
        return value

    def save(self, path: Path) -> None:
        import torch

        torch.save({"schema": 3, "seed": self.seed, "events": self.events, "helpers": self.helpers,
                    "models": self.models.packed()}, path)

    @classmethod
    def load(cls, path: Path) -> "Recording":
        import torch

        from grader.grading.models import Book

        data = torch.load(path, weights_only=True)  # plain tensors and containers only
        return cls(int(data["seed"]), dict(data["events"]), replaying=True, helpers=dict(data.get("helpers") or {}),
                   models=Book.unpacked(data.get("models")))


def public_recording(course, device: str) -> Recording:
    """The public suites' reference outputs, recorded by `grade release --out`, on ``device``: what a
    student distribution (no solutions/, no suites/hidden/) grades with."""
    from grader.errors import GraderError

    path = course.layout.recording
    if not path.is_file():
        raise GraderError(f"this course has neither the reference (solutions/, suites/hidden/) nor recorded "
                          f"reference outputs ({path}): get a fresh copy of the course from your instructor")
    recording = Recording.load(path)
    recording.events = on_device(recording.events, device)
    recording.helpers = on_device(recording.helpers, device)
    return recording


def _on_cpu(value, copy=False):
    return on_device(value, "cpu", copy)
