"""How a check can end, as the suites and the grading session both see it: a wrong answer
(:class:`CheckFailed`), a right answer given a faulty helper of the student's (:class:`RightGivenHelper`),
or a fault of the student's code (:class:`StudentFault`: it raised, hung, crashed, or used a
forbidden operation). Their own module, so that the harness and the session need not import each other.
"""
from __future__ import annotations

import re


class NotReplayable(Exception):
    """The check needs the reference itself, or was not recorded (grader.grading.recorded_outputs)."""


class CheckFailed(AssertionError):
    """The student's code ran but gave a wrong answer. ``out``: the student's output on the case, when
    the check had it (diagnosis then names the mistake without running the student's code again)."""

    def __init__(self, message: str, misconceptions: tuple[str, ...] = (), out=None):
        super().__init__(message)
        self.message = message
        self.misconceptions = misconceptions
        self.out = out
        self.ruled_out: tuple[str, ...] = ()  # ids this case contradicts (grader.grading.diagnose.first_match)
        self.unexplained = message  # the message without the explanation of a mistake named
        self.fault = None  # the StudentFault a named crash came from (``explained``)


class RightGivenHelper(Exception):
    """The check's case is right but for a faulty helper of the student's own that the exercise uses
    (its output is what a right version gives from that helper): under the cascade policy "once" the
    check keeps its points, and ``message`` names the helper to fix. ``call``: the helper's call on this
    case (:func:`plain_call`) when its arguments are plain, which the helper's own exercise must grade and
    find wrong for the case to stay kept (grader.grading.grader.charged_once). ``raised``: the helper raised,
    so nothing of the exercise's own was seen on this case (charged_once bounds what such cases keep).
    ``helper``: its name, for the check to be run again with a right version in its place
    (grader.grading.stand_ins); ``verified``: it was, and the exercise was right then. ``unverified``:
    the verdict should that run not be had (no stand-in, or none placed), where nothing else of the
    grader's shows the case right given the helper (a blame the stand-in alone can confirm).
    ``by_stand_in_only``: the helper is wrong on the case but the grader's own computation from its result is
    not the student's output (grader.grading.diagnose._unexplained): nothing but that run keeps the case."""

    def __init__(self, message: str, call: str | None = None, raised: bool = False, helper: str = "",
                 unverified: Exception | None = None):
        super().__init__(message)
        self.message = message
        self.call = call or ""
        self.raised = raised
        self.helper = helper
        self.verified = False
        self.unverified = unverified
        self.named = ""  # the helper's mistake this case shows, by its id, where the blame named one
        self.by_stand_in_only = False  # the helper does not explain the output: only that run keeps the case
        self.also: list[str] = []  # the helper's own helpers each of which, alone put right, made it right (verified)
        self.either: list[str] = []  # other helpers of the exercise's own each of which, alone put right, did
        self.forward_right = False  # the first run's output was right, its gradients alone failed
        # a student distribution's stand-in for the instructor's composition (the grader's own computation from the
        # helper's result, not on record there: grader.grading.diagnose._blame): where Grade.expect_right met it, the
        # instructor's side keeps that comparison in place, on no record of forgiveness, and so does a verified run
        self.composition_unrecorded = False
        self.kept_in_place = False


def plain_call(name: str, args: tuple, kwargs: dict | None = None) -> str | None:
    """``name(*args, **kwargs)`` as text when every argument is plain (None, a bool, an int, a float or
    a string), so that two calls compare; None when one is a tensor or anything else."""
    values = [*args, *(kwargs or {}).values()]
    if not all(v is None or type(v) in (bool, int, float, str) for v in values):
        return None
    parts = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in sorted((kwargs or {}).items())]
    return f"{name}({', '.join(parts)})"


class GradientFailure(CheckFailed):
    """A case whose output is right but whose gradients are not, or could not be computed: ``problem``
    is that failure (a CheckFailed, or the StudentFault of a backward pass that raised), ``reply`` the
    student's reply (its ``grads``, ``grad_error``) and ``grad_out`` the gradient sent back through the
    output, so that :func:`grader.grading.diagnose.blame` can judge the gradients given the student's helper."""

    def __init__(self, problem: Exception, reply, grad_out):
        super().__init__(getattr(problem, "message", str(problem)), out=reply.out)
        self.problem = problem
        self.reply = reply
        self.grad_out = grad_out


class RaisedFailure(CheckFailed):
    """A case on which the student's code raised (``fault``, a StudentFault naming the exception's
    type), handed to a root cause: the same raise from the right computation on the student's own
    helper is the helper's mistake (see :func:`grader.grading.diagnose.blame`)."""

    def __init__(self, fault):
        super().__init__(fault.message)
        self.fault = fault


class GraderFault(Exception):
    """The grader's own machinery failed (confinement, spawning, a suite's own bug): no fault of the
    student's. The check takes and gives no points and says so (status ``grader-error``)."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class StudentFault(Exception):
    """The student's code raised, timed out, crashed or used a forbidden operation."""

    def __init__(self, kind: str, message: str, exception: str | None = None):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.exception = exception  # the type name of what the student's code raised, if it raised


# the error PyTorch raises for .view() on a tensor whose strides do not allow it
_VIEW_ERROR = "view size is not compatible with input tensor's size and stride"


# the error PyTorch raises for an in-place operation on a tensor the grader asked gradients for, or on a
# view of one ("a view of a leaf Variable that requires grad is being used in an in-place operation"): in
# a function's call, only its inputs are such leaves
_LEAF_ERROR = "leaf Variable that requires grad is being used in an in-place operation"


# the errors PyTorch raises for one operation on tensors of two devices (masked_fill, matmul, cat, indexing)
_DEVICE_ERROR = re.compile(r"(to be on the same device|on the same device as|different from other tensors on)",
                           re.IGNORECASE)


# the pair (values, indices) that max, min, sort and their kin return along a dimension, used as a tensor
_PAIR_ERROR = re.compile(r"torch\.return_types\.(\w+)")


def explained(fault: StudentFault, function: bool = False, modules: bool = False) -> Exception:
    """A crash whose error says which mistake caused it becomes a failure that names it (``function``:
    the call was a function's, whose only leaves that require gradients are its inputs, or, ``modules``,
    the parameters of the modules it was given)."""
    if fault.kind != "error":
        return fault
    last = last_line(fault.message)
    if function and _LEAF_ERROR in fault.message:
        if modules:  # copy_v2_weights_into_v1: param.copy_(...) while autograd records
            return _carrying(fault, "your code changes a module's parameter in place while autograd records it "
                                    "(PyTorch refuses that for a parameter, which requires gradients): do it inside "
                                    "`with torch.no_grad():`.")
        return _carrying(fault, "your code modifies its input in place (PyTorch refuses that for an input whose "
                                "gradients are asked for); compute a new tensor instead.", ("input-mutated",))
    if pair := _PAIR_ERROR.search(last):
        which = pair[1]
        return _carrying(fault, f"x.{which}(dim) returns a pair (values, indices), not a tensor: take its .values"
                                + (" (or use x.amax(dim, keepdim=True))" if which == "max" else
                                   " (or use x.amin(dim, keepdim=True))" if which == "min" else "") + ".")
    if _VIEW_ERROR in fault.message:
        return _carrying(fault, "your code calls .view() on a tensor that is not contiguous (after a transpose, or for "
                                "a non-contiguous input); use .reshape(), or .contiguous().view().",
                         ("view-on-non-contiguous",))
    if _DEVICE_ERROR.search(last):
        return _carrying(fault, "your code mixes devices: a tensor it creates (a mask, an index, a buffer) lives on "
                                "the CPU while its inputs are on the GPU; create it on the input's device "
                                "(device=x.device, or x.new_zeros(...)).", ("wrong-device",))
    return fault


def _carrying(fault: StudentFault, explanation: str, misconceptions: tuple = ()) -> CheckFailed:
    """The failure that says ``explanation`` (and names ``misconceptions``), then the student's own raise,
    which it carries (``failure.fault``: a helper that raises so too is still blamed)."""
    failure = CheckFailed(f"{explanation} Your code raised:\n{fault.message}", misconceptions)
    failure.fault = fault
    return failure


def last_line(message: str) -> str:
    """A raise as the student sees it: its last line ("ValueError: ..."), the traceback above it aside."""
    lines = (message or "").strip().splitlines()
    return lines[-1].strip() if lines else ""
