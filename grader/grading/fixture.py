"""What the grading suites are written against: the ``grade`` fixture (see :mod:`grader.grading.pytest_session`).

A suite is a pytest module whose tests are marked with the exercise they grade::

    @pytest.mark.exercise("softmax")
    def test_softmax_random(grade):
        grade.same("softmax", grade.randn(3, 5) * 4, dim=0, grad=True)

``grade.same`` runs the reference here and the student's code in its worker on the same inputs, then
checks the output (shape, dtype, device, values), the gradients, and that the inputs are unchanged.
A failed check raises :class:`CheckFailed`; a problem in the student's code raises
:class:`StudentFault`; the session's plugin turns each into a :class:`~grader.results.CheckOutcome`.
"""
from __future__ import annotations

import contextlib
import contextvars
import hashlib
import os
from dataclasses import dataclass, field

import pytest

from grader.grading.compare import (difference, float32_precision, manual_seed, rounded_in_float32, shape_str,
                                    widen)
from grader.inside.forbidden import forbidden_operations
from grader.grading.outcomes import (CheckFailed, GradientFailure, RightGivenHelper, StudentFault,  # noqa: F401
                                     explained, plain_call)
from grader.grading.models import rehearse, rehearsing
from grader.grading.recorded_outputs import NotReplayable
from grader.grading.tolerance import (PATTERNS, PERTURBED_NUMEL, _exponent_room, _perturbed,
                                      _room, _widened, _widest)
from grader.inside.protocol import HandleRef, clip, flatten, mapped, sent_from



LARGE_DRAW = 1 << 18  # entries: a draw at least this large is kept by the batch's memo (Grade._drawn)
_BACKGROUND = []  # the grading process's one thread for values worked out ahead (Grade.worked_out_ahead)
# a forked grading process (grader.grading.twins) has none of its parent's threads: it starts its own when it needs one
# (the parent's pool, kept, would take work that no thread runs: a twin forked after a first grading waited for ever)
os.register_at_fork(after_in_child=_BACKGROUND.clear)


def _background():
    if not _BACKGROUND:
        from concurrent.futures import ThreadPoolExecutor

        _BACKGROUND.append(ThreadPoolExecutor(max_workers=1, thread_name_prefix="worked-out"))
    return _BACKGROUND[0]


@dataclass
class Reply:
    out: object
    ops: int | None = None  # with Grade.call(measure=True) only
    max_numel: int | None = None
    max_operand: int | None = None  # with measure: the most entries one operator read from one tensor
    device: str | None = None
    mutated: tuple[int, ...] = ()
    grads: list | None = None
    param_grads: dict | None = None
    grad_error: str | None = None
    op_names: dict = field(default_factory=dict)
    widest: int | None = None  # with measure: the most entries one operator reduced at once
    widest_op: str | None = None  # that operator's aten name
    widest_along: int | None = None  # with measure: the widest reduction by an operator whose result kept more
    widest_along_op: str | None = None  # than one entry (grader.inside.tracer), and that operator's name
    widths: dict = field(default_factory=dict)  # with measure: each reducing operator's widest reduction, by name
    sizes: dict = field(default_factory=dict)  # with measure: each operator's largest result (entries), by name
    # the student's own helpers' share of the call (grader.grading.stand_ins.uses): name -> (operators run inside
    # it, its calls that ran any); None where the call counted none apart
    within: dict | None = None


def reply_of(reply: dict) -> Reply:
    """A call's reply as facts the checks use, read from the data: the output's dtype, shape and
    device are the tensor's own (the device as the encoder read it off the tensor), never a claim
    beside it. A reply that is not shaped like one is the student's code misbehaving."""
    import torch

    try:
        out = decode(reply["out"])
        grads = reply.get("grads")
        param_grads = reply.get("param_grads")
        checked = Reply(
            out=out, ops=_count(reply.get("ops")), max_numel=_count(reply.get("max_numel")),
            max_operand=_count(reply.get("max_operand")),
            device=sent_from(out) if isinstance(out, torch.Tensor) else None,
            mutated=tuple(_count(i) for i in reply.get("mutated", ())),
            grads=None if grads is None else [decode(g) for g in grads],
            param_grads=None if param_grads is None else {str(k): v for k, v in dict(param_grads).items()},
            op_names=dict(reply.get("op_names", {})),
            widest=_count(reply.get("widest")),
            widest_op=None if reply.get("widest_op") is None else str(reply["widest_op"]),
            widest_along=_count(reply.get("widest_along")),
            widest_along_op=None if reply.get("widest_along_op") is None else str(reply["widest_along_op"]),
            widths={str(name): _count(width) for name, width in dict(reply.get("widths") or {}).items()},
            sizes={str(name): _count(size) for name, size in dict(reply.get("sizes") or {}).items()},
            within=None if reply.get("within") is None else {
                str(name): _share(share) for name, share in dict(reply["within"]).items()},
            grad_error=None if reply.get("grad_error") is None else str(reply["grad_error"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise StudentFault("error", "the process running your code sent back a reply that is not "
                                    f"a call's ({type(exc).__name__})") from None
    return checked


def loop_in_helpers(short: Reply, long: Reply, helpers) -> bool:
    """Whether what ``long`` (a call on more tokens) made beyond ``short`` ran inside the student's own ``helpers``
    (``Reply.within``, counted by the frames on the stack as each operator ran): the call's own operators (those of
    its other helpers included) and its calls of each helper are no more on ``long``. Red team round 24d: a caller's
    own loop, charged to a helper whose growth on the grader's direct calls matched it."""
    if short.within is None or long.within is None or short.ops is None or long.ops is None:
        return False

    def own(reply):
        return reply.ops - sum(ops for name, (ops, _) in reply.within.items() if name in helpers)

    return own(long) <= own(short) and helper_calls_not_growing(short, long)


def helper_calls_not_growing(short: Reply, long: Reply) -> bool:
    """``long`` (a call on more tokens) calls each of the student's helpers (``Reply.within``) no more often than
    ``short``: a loop that calls them is the caller's."""
    return all(calls <= short.within.get(helper, (0, 0))[1] for helper, (_, calls) in long.within.items())


def _share(value) -> tuple[int, int]:
    ops, calls = value  # (a ValueError or TypeError where it is not a pair)
    return _count(ops) or 0, _count(calls) or 0


def _count(value) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError("not a count")
    return value


def decode(value):
    """The inverse of the worker's ``_plain``: sequences back to tuples."""
    if isinstance(value, dict):
        if "__sequence__" in value:
            return tuple(decode(v) for v in value["__sequence__"])
        if "__dtype__" in value:
            return value["__dtype__"]
        if "__unsupported__" in value:
            return _Unsupported(value["__unsupported__"])
    return value


class _Unavailable:
    """The reference while a recording is replayed: any use of it makes the check unreplayable."""

    def __getattr__(self, name):
        raise NotReplayable("this check uses the reference directly")

    def __call__(self, *args, **kwargs):
        raise NotReplayable("this check uses the reference directly")


@dataclass(frozen=True)
class _Unsupported:
    type_name: str

    def __repr__(self):
        return f"a {self.type_name}"


# --- what a suite's test receives --------------------------------------------------------------------

def _a_value_check(method):
    """Marks the check's Grade where this comparison of the student's output (or gradients) with the right one
    fails (``value_failed``): a failure a wrong helper of theirs can cause, which grader.grading.chains may run
    again with a right one, unlike a rule of how the exercise computes, broken in its own frames."""
    import functools

    @functools.wraps(method)
    def compared(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except (CheckFailed, StudentFault):
            self.value_failed = True
            raise
    return compared


class Grade:
    """The ``grade`` fixture: inputs from this check's seed, the reference, the student, the checks."""

    def __init__(self, session, student, reference, nodeid: str, marker):
        """``session``: the run's GradingSession and ``student`` its Student (grader/grading/pytest_session.py,
        which imports this module: neither is imported here, not even for type checking)."""
        import torch

        self.session = session
        self.student = student
        self.replaying = session.recording is not None and session.recording.replaying
        self.ref = _Unavailable() if self.replaying else reference
        self.diagnosing = 0  # inside a root cause (grader.grading.diagnose.cause): a replay may use no recorded output
        self.case_slack = 0.0  # the room beyond the dtype's tolerance of the case whose output just failed
        self.verified = 0  # outputs of the student's found right in this check (expect)
        self.compared = 0  # the outputs compared (expect), numbered: a release's rehearsal fails one (fail_at)
        # those whose failure the lesson's own code diagnoses (a module's forward, a root cause): a release reruns
        # the check with each made wrong (a function's candidates are rehearsed where they are given: diagnosed)
        self.diagnosable: list[int] = []
        self.fail_at: int | None = None
        self.gradients_alone_failed = False  # set where a right output's gradients alone failed (_blame_gradients)
        # the student's helpers the check's own blame found right on its model of their call: a failure is then
        # the exercise's, never run again with right versions of them (grader.grading.chains.ChainRuns)
        self.helpers_right: set[str] = set()
        # every helper of the student's its diagnoses judged (grader.grading.diagnose.blame, helper_at_fault): a
        # release keeps what stand-ins for them answer (grader.grading.rehearsals)
        self.helpers_judged: set[str] = set()
        self.value_failed = False  # a comparison of an output or gradient with the right one failed (_a_value_check)
        self.nodeid = nodeid
        self._events = 0
        self._worked = 0  # values worked out by the check itself (worked_out), numbered for the batch's memo
        self.device = session.device
        self.seed = int.from_bytes(hashlib.sha256(f"{session.seed}:{nodeid}".encode()).digest()[:4], "little")
        self.generator = torch.Generator().manual_seed(self.seed)
        # what the course forbids the exercise to call, and nothing else (course.toml, grader/inside/forbidden.py)
        self.forbidden = forbidden_operations(session.course.forbidden_calls(str(marker.args[0]))) \
            if marker.args else ()
        # "once": a case right but for the student's own faulty helper keeps its points (course.toml)
        self.cascades = session.course.grading.cascades
        self.reference_ops: dict[str, int] = {}  # a measured call's name -> the most operators the reference ran
        self.rules_read: list[str] = []  # the rules this check reads on its own calls (reads_rule)
        self.rules_broken: list[tuple] = []  # (rule, what broke it[, the helpers alone]) on this check's comparing calls
        # (rule, why[, (helper,)]) where a call made to read the rule on a comparing call answered wrong (by that
        # helper of the student's alone: read_given_right) (grader.grading.rules_read)
        self.rules_unverified: list[tuple] = []
        self.given_right: dict[str, list] = {}  # helper -> [(rule, why, read)] to run with a right one (read_given_right)
        # the first measured call right only given a helper of the student's (expect_right): where a property measured
        # on the check's calls then fails (operations that grow, memory), the run with a right helper measures it
        # again (grader.grading.pytest_session._judged): the helper's own operations are not the exercise's
        self.measured_given: RightGivenHelper | None = None

    # inputs ------------------------------------------------------------------------------------------
    def randn(self, *shape, dtype=None, scale=1.0):
        import torch

        dtype = dtype or torch.float32
        drawn = self._drawn("randn", shape, dtype, lambda: torch.randn(*shape, generator=self.generator, dtype=dtype))
        return drawn if scale == 1.0 else drawn * scale

    def rand(self, *shape, dtype=None):
        import torch

        dtype = dtype or torch.float32
        return self._drawn("rand", shape, dtype, lambda: torch.rand(*shape, generator=self.generator, dtype=dtype))

    def _drawn(self, kind, shape, dtype, draw):
        """``draw()``; a large one (06's memory cases: a million float64 entries, 20 ms) kept by the batch's
        memo under the generator's state before it, with its state after, so that the next submission's same
        check draws the same tensor and goes on from the same state without drawing it again."""
        memo = self.session.memo
        entries = 1
        for size in (shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape):
            entries *= int(size)
        if memo is None or entries < LARGE_DRAW:
            return draw()
        from grader.grading.reference_cache import fingerprint, known_as

        key = fingerprint("drawn", kind, tuple(shape), dtype, self.generator.get_state())
        value, after = memo.get(key, lambda: (draw(), self.generator.get_state()))
        self.generator.set_state(after)
        return known_as(value, key)  # a memo's reads name it by its draw, not by its bytes, until it changes

    def worked_out_ahead(self, compute, *reads):
        """:meth:`worked_out`, begun now and taken later: a callable that gives its value (or raises what it
        raised). With no batch to keep it for, it is computed on another thread while this one waits for the
        student's processes (a sequence of calls: the grading process's core is idle meanwhile); in a batch,
        where the next submissions find it kept, now. ``compute`` must read nothing that changes meanwhile."""
        if self.session.memo is not None:
            value = self.worked_out(compute, *reads)
            return lambda: value
        import torch

        self._worked += 1
        grad_enabled = torch.is_grad_enabled()  # a thread's own: the caller's carried over

        def in_its_mode():
            with torch.set_grad_enabled(grad_enabled):
                return compute()

        # in this thread's context: where a release keeps (a replay answers) the lesson's @model calls
        return _background().submit(contextvars.copy_context().run, in_its_mode).result

    def worked_out(self, compute, *reads):
        """``compute()``: a value the check works out from what it holds already (a formula on the pair's
        weights and the check's inputs, which a replayed run has too), not a use of the reference: never
        recorded. ``reads``: everything it depends on; the batch's memo keeps it for the next submission."""
        memo = self.session.memo
        self._worked += 1
        if memo is None:
            return compute()
        use = f"{self.nodeid}~{self._worked}"
        if use in memo.cheap:  # computes faster than its reads can be fingerprinted
            return compute()
        return memo.lookup(use, (use, self.device, *reads), compute)

    def randint(self, low, high, shape):
        import torch

        return torch.randint(low, high, shape, generator=self.generator)

    def case(self) -> str:
        """Where a failure's inputs came from: the run's seed (``grade check --seed`` draws them again)."""
        return f" (seed {self.session.seed})"

    def tolerance(self, tensor):
        import torch

        name = str(tensor.dtype).replace("torch.", "") if isinstance(tensor, torch.Tensor) else "float32"
        return self.session.course.tolerance(name)

    # calls -------------------------------------------------------------------------------------------
    def call(self, target, *args, grad_out=None, grad_args=None, seed=None, label=None, measure=False, method=None,
             on_cpu=False, unwatched=False, **kwargs) -> Reply:
        """Run the student's ``target`` (a name, or a module handle named ``label``) in the worker. Every call
        is watched alike (grader.grading.pytest_session.Student.send): its reply counts the operations and the
        largest intermediate (``ops``, ``max_numel``); with ``measure`` the check relies on them, so a file
        that cannot be observed, or a tensor written out as text during the call, fails it. ``on_cpu``: a
        function's tensors stay on the CPU whatever the grading device (a diagnosis on CUDA asks it).
        ``unwatched``: a cached sequence whose memory the kernel's account reads, run with no watching (what
        the watching holds for a call would count in the reading)."""
        return self.sent_call(target, *args, grad_out=grad_out, grad_args=grad_args, seed=seed, label=label,
                              measure=measure, method=method, on_cpu=on_cpu, unwatched=unwatched, **kwargs)()

    def sent_call(self, target, *args, grad_out=None, grad_args=None, seed=None, label=None, measure=False,
                  method=None, on_cpu=False, unwatched=False, **kwargs):
        """:meth:`call`, sent: what it returns, called, gives the Reply (or raises as :meth:`call`), so that the
        grader computes the reference's side while the worker runs the student's. Nothing else is sent to the
        worker before it is called."""
        import torch

        self._called = (target, label, args)  # for naming an argument in what the checks say (argument_name)
        pending = self.student.send({"op": "call", "target": target, "args": args, "kwargs": kwargs,
                                     "name": label, "grad_out": grad_out, "grad_args": grad_args, "seed": seed,
                                     "forbidden": self.forbidden, "measure": measure, "method": method,
                                     "grad_enabled": torch.is_grad_enabled(), **({"on_cpu": True} if on_cpu else {}),
                                     **({"unwatched": True} if unwatched and not measure else {})})

        def reply() -> Reply:
            try:
                answer = pending()
            except StudentFault as fault:
                if fault.kind == "error" and fault.exception:  # it raised in this call: say which call, on what
                    called = label + " forward" if isinstance(target, HandleRef) and label else str(target)
                    fault = StudentFault(fault.kind, f"{called}{_signature(args, kwargs)} raised:\n{fault.message}",
                                         fault.exception)
                raise explained(fault, function=isinstance(target, str),
                                modules=any(isinstance(a, HandleRef) for a in args)) from None
            if self.forbidden or measure:  # after the call: a stub, or a raise, says so first
                self.expect_observed()
            if measure and isinstance(answer.get("as_text"), dict):  # (grader.inside.worker.watch_text)
                written = answer["as_text"]
                where = f" at {clip(str(written.get('line')), 200)}" if written.get("line") else ""
                values = _count(written.get("values"))
                raise CheckFailed(f"not observed: your code wrote a tensor ({values} value"
                                  f"{'' if values == 1 else 's'}) out as text during the call{where} (print, str, "
                                  "repr or an f-string), and what Python does with text cannot be counted; this "
                                  "check, which counts how your code computes, earns nothing until that is gone")
            return reply_of(answer)

        return reply

    def same(self, name, *args, grad=False, mistakes=(), explain=None, right=None, root_cause=None, slack=0.0,
             normalised_exponential=False, grad_scale=1.0, rules=(), **kwargs):
        """The student's ``name(*args, **kwargs)`` must match the reference's, gradients included
        (``grad=True``: for every floating-point argument; a tuple of positions: for those data inputs
        only, never for constant tables such as ``cos`` and ``sin``, which the contract leaves alone),
        within the dtype's tolerance widened by how far the reference itself lands from float64 (and by
        ``slack``, a rounding the check measures itself where no input is a float32 tensor to widen,
        e.g. float32 angles that grow with the position). ``normalised_exponential``: the output is a
        softmax of the first argument along ``dim``, whose every formulation rounds the shift of its
        exponents (a maximum, a log-sum-exp) at the scale of the largest input (see ``_exponent_room``).
        ``grad_scale``: the size of the output gradient (drawn with standard deviation 1 unless a check
        needs one large on every seed, e.g. where a backward pass divides by a clamped zero).

        When the output is wrong, the mistake that explains it is named (see :func:`diagnosed`):
        ``mistakes`` (grader.authoring.Mistake and ScaleSearch), ``explain(out)`` naming one from the
        output alone, ``right`` the right output (a tensor, or a function computing it) when at
        hand, ``root_cause(failure, out)`` blaming a helper of the student's from another exercise.
        ``rules``: (rule, judge) pairs read on this call as it ran (see :meth:`keeps_rules`)."""
        def check():
            sent = Sent(lambda grad_out: self.sent_call(name, *args, grad_out=grad_out,
                                                        grad_args=differentiated(args, grad), **kwargs))
            expected, grad_out, ref_grads, _ = self._reference(name, args, kwargs, grad, grad_scale=grad_scale,
                                                               send=sent)
            number = self._events  # the room's use of the reference, numbered whether it is computed or not
            self._events += 1
            widening = []

            def room():  # (output slack, gradient slacks), measured once, and only when needed
                if not widening:
                    widened, grad_slack = self._slack(name, args, kwargs, expected, grad_out, ref_grads, grad,
                                                      number=number)
                    if normalised_exponential:
                        exponent, grad_room = _exponent_room(args[0], expected, grad_out, kwargs.get("dim", -1))
                        widened = _widest(widened, exponent)
                        grad_slack = grad_slack if grad_room is None or not grad_slack else \
                            [_widest(grad_slack[0], grad_room), *grad_slack[1:]]
                    widening.append((widened, grad_slack))
                return widening[0]

            if self.session.recording is not None:  # recorded or replayed: every use of the reference, in order
                room()
            self.case_slack = 0.0
            with self._graded_call(name, args, kwargs):
                reply = sent.reply()
                self.keeps_rules(reply, rules)
                what = f"{name}{_signature(args, kwargs)}"
                # the room only widens the tolerance: an answer within the dtype's own needs no measuring
                try:
                    _widening_on_failure(bool(widening),
                                         lambda: self.expect(reply, expected, what, slack=slack, carry=True),
                                         lambda: self.expect(reply, expected, what, slack=room()[0] + slack, carry=True))
                except CheckFailed:  # a mistake's output is recognised within the same room (diagnose.matches)
                    self.case_slack = room()[0] + slack if widening else slack
                    raise
            if grad:
                try:
                    _widening_on_failure(bool(widening), lambda: self._expect_grads(reply, ref_grads, name),
                                         lambda: self._expect_grads(reply, ref_grads, name, slack=room()[1]))
                except (CheckFailed, StudentFault) as problem:
                    self._blame_gradients(problem, reply, grad_out, root_cause)
            return reply.out

        return diagnosed(self, check, mistakes, explain, right, root_cause)

    @contextlib.contextmanager
    def _graded_call(self, name, args, kwargs):
        """A call of plain arguments (numbers, None) this check finds wrong (a wrong output, or a raise)
        is recorded as one this exercise grades and the student's code fails: a case of another exercise
        kept as right given this helper on that very call is forgiven (grader.grading.grader.charged_once); on
        any other call, the caller owns the result."""
        try:
            yield
        except (CheckFailed, StudentFault):
            if (call := plain_call(name, args, kwargs)) is not None:
                self.session.wrong_calls.setdefault(self.nodeid, set()).add(call)
            raise

    def _blame_gradients(self, problem, reply, grad_out, root_cause):
        """A gradient failure on a right output, judged given the student's own helper: ``root_cause``
        sees a GradientFailure and may blame the helper (see grader.grading.diagnose.blame's ``chain``)."""
        from grader.grading.diagnose import cause

        self.gradients_alone_failed = True  # the output was right: the check keeps the forward's share
        if root_cause is None:
            raise problem
        blamed = cause(self, root_cause, GradientFailure(problem, reply, grad_out), reply.out)
        raise named_wins(blamed) if isinstance(blamed, CheckFailed) else (blamed or problem) from None

    def _slack(self, name, args, kwargs, expected, grad_out, ref_grads, grad=True, number=None):
        """The room a correct answer needs beyond the dtype's tolerance, from the problem itself: for the
        output and for each input's gradient, SLACK_FACTOR times the larger of how far the reference
        computed in the case's dtype lands from the float64 one (its own rounding), and, entry by entry,
        how far the exact (float64) result moves when the float32 inputs move by PERTURB_ULPS units in
        their last place (the conditioning: a float32 logsumexp of large inputs rounds its lse by
        about eps·|x|, and so does every formulation). Zero where every input is float64 already."""
        import torch

        if not any(isinstance(a, torch.Tensor) and a.dtype in (torch.float32,) for a in flatten((args, kwargs))):
            return 0.0, None

        def run(inputs_of):
            fn = getattr(self.ref, name)
            inputs = _on_args(self.device, inputs_of(_widened(_cloned(args))), grad if grad_out is not None else False)
            with torch.enable_grad():
                out = fn(*inputs, **_on(self.device, _widened(_cloned(kwargs)), False))
            grads = None
            if grad_out is not None and isinstance(out, torch.Tensor) and out.requires_grad:
                (out * grad_out.to(out.device, out.dtype)).sum().backward()
                grads = [a.grad for a in flatten(inputs) if isinstance(a, torch.Tensor)]
            return _detached(out), grads

        def wide():
            out, grads = run(lambda a: a)
            slack = _room(expected, out, ())
            grad_slack = None if grads is None else [_room(e, g, ()) for e, g in zip(ref_grads or (), grads)]
            large = any(isinstance(a, torch.Tensor) and a.numel() > PERTURBED_NUMEL for a in flatten(args))
            for pattern in range(0 if large else PATTERNS):  # a long case keeps the reference's own rounding
                moved_out, moved_grads = run(lambda a: _perturbed(a, args, pattern))
                slack = _widest(slack, _room(expected, out, (moved_out,)))
                if grad_slack is not None and moved_grads is not None:
                    grad_slack = [_widest(s, _room(e, g, (m,)))
                                  for s, e, g, m in zip(grad_slack, ref_grads or (), grads, moved_grads)]
            return slack, grad_slack

        return self._event(wide, name, args, kwargs, expected, grad_out, ref_grads, number=number)

    def measured(self, name, *args, root_cause=None, **kwargs) -> Reply:
        """The student's ``name(*args, **kwargs)``, its output checked against the reference's: a
        property measured on the reply (operations, memory) scores only with a right answer, or, under
        the cascade policy "once", one right given the student's own helper (``root_cause(failure,
        out)``, as for grader.grading.diagnose.diagnosed)."""
        expected, _, _, _ = self._reference(name, args, kwargs, False)
        self.count_reference(name, lambda: getattr(self.ref, name), args, kwargs)
        reply = self._call_blaming(root_cause, name, *args, measure=True, **kwargs)
        self.expect_right(reply, expected, f"{name}{_signature(args, kwargs)}", root_cause)
        return reply

    @property
    def counts_seen(self) -> dict:
        """This submission's right calls' operation counts, kept across its checks by what a rule tells them
        apart by (lesson.checks_06.not_growing: a cached sequence's instance and its sizes) -> a list of
        (tokens, count): a count read once is compared with the others', not read again."""
        return self.session.counts_seen

    @property
    def live_reference(self) -> bool:
        """Whether the reference runs here (neither recorded nor replayed): a check may use it beyond what a
        recording holds (a rule read with a call of its own, lesson.vectorised_on)."""
        return self.session.recording is None

    @contextlib.contextmanager
    def stood_in(self, helpers):
        """The student's ``helpers`` (function names) replaced by stand-ins that ask the grader for each call's right
        result (grader.inside.stand_in, grader.grading.oracle), while the block runs its calls; it gets the Oracle,
        whose ``refused`` says whether the exercise called them as no right exercise does. The worker that held
        them ends after (nothing a stand-in answered outlives the block); the next call has a fresh one. Raises
        CheckFailed where they cannot be placed."""
        oracle = self.student.oracle = self.session.oracle(self.nodeid, list(helpers), self.ref)
        try:
            placed = self.student.request({"op": "stand_in", "helpers": list(helpers)}).get("placed")
            if sorted(placed or ()) != sorted(helpers):
                raise CheckFailed(f"{' and '.join(helpers)} could not be stood in for")
            yield oracle
        finally:
            self.student.oracle = None
            self.student.renew()

    def read_given_right(self, helper: str, rule: str, why: str, read) -> None:
        """Once the check has run to its end, ``read()`` with a right ``helper`` in place of the student's
        (:meth:`stood_in`); ``rule`` is then unverified as ``why`` says, by that helper alone (``(rule, why,
        (helper,))``) where ``read()`` was true, called the helper as a right exercise does and raised nothing, or
        as the exercise's own (``(rule, why)``) where not (lesson.vectorised_on: a rule read again where its reading
        call was wrong by that helper alone). After the check, not during it: the worker that held the stand-in
        ends with it, and with it every instance the check made (:meth:`settle_reads`)."""
        self.given_right.setdefault(helper, []).append((rule, why, read))

    def settle_reads(self) -> None:
        """What :meth:`read_given_right` asked, for the check that has just run to its end (one run with right
        versions for each helper; none inside a run that already has them: grader.grading.pytest_session._verify,
        whose verdict stands as its own)."""
        pending, self.given_right = self.given_right, {}
        for helper, reads in pending.items():
            kept = [False] * len(reads)
            if self.student.oracle is None:
                try:
                    with self.stood_in([helper]) as oracle:
                        for index, (_, _, read) in enumerate(reads):
                            try:
                                kept[index] = bool(read())
                            except (CheckFailed, StudentFault, RightGivenHelper):
                                pass
                        if oracle.refused or not oracle.used:
                            kept = [False] * len(reads)
                except (CheckFailed, StudentFault):
                    kept = [False] * len(reads)
            self.rules_unverified += [(rule, why, (helper,)) if one else (rule, why)
                                      for (rule, why, _), one in zip(reads, kept)]

    def reads_rule(self, rule: str) -> None:
        """This check reads ``rule`` (a rule of the contract that the tracer watches: 05's block rule, its
        score matrix) on calls of its own. Where every check that reads a rule passes, the student's code keeps
        it where it is read, and a right answer elsewhere given by code that broke it earns nothing
        (grader.grading.rules_read: red team round 20c, a function that told the calls reading its rules
        from those comparing its answers by their inputs); where one fails, that failure is the mistake's one
        cost."""
        self.rules_read.append(rule)

    def keeps_rules(self, reply: Reply, rules) -> None:
        """Read ``rules`` ((rule, judge) pairs, ``judge(reply)`` saying how the call broke its rule, or None)
        on a comparing call: every function's call is measured (grader.grading.pytest_session.Student.send),
        so what it ran is on the reply. A rule broken is kept here and charged by grader.grading.rules_read
        once the exercise's checks have all run."""
        for rule, judge in rules:
            said = judge(reply)
            if said:
                self.rules_broken.append((rule, said))

    def count_reference(self, name, reference, args, kwargs) -> None:
        """Keep how many operators the reference's function (``reference()`` gives it) runs on these inputs
        (grader.grading.operation_count), the measure of ``name``'s counts. Not where outputs are recorded or
        replayed (a student distribution has no reference: no bound there)."""
        if self.session.recording is not None:
            return
        import torch

        def sized(value):  # what the reference's count depends on: the sizes and settings, not the values
            if isinstance(value, torch.Tensor):
                return ("tensor", tuple(value.shape), str(value.dtype), value.stride(), value.requires_grad)
            if isinstance(value, (tuple, list)):
                return tuple(sized(v) for v in value)
            return repr(value)

        fn = reference()
        module = isinstance(fn, torch.nn.Module)
        made = repr(fn) if module else getattr(fn, "__qualname__", repr(fn))  # its layers
        key = (name, made, getattr(fn, "training", None), sized(args), sized(sorted(kwargs.items())))
        # a reference function's count is its sizes' and settings' alone (no branch on a value): kept for the
        # batch's next submission; a module's may depend on what it keeps (a KV cache): this grading's alone
        counts = self.session.memo.counts if self.session.memo is not None and not module else \
            self.session.reference_counts
        count = counts.get(key)
        if count is None:
            from grader.grading.operation_count import operations

            with torch.random.fork_rng(devices=[]):  # a dropout of the reference's draws nothing of what follows
                count = operations(fn, _on_args(self.device, _cloned(args), False),
                                   _on(self.device, _cloned(kwargs), False))
            counts[key] = count
        self.reference_ops[name] = max(self.reference_ops.get(name, 0), count)

    def expect_few_operations(self, name, *counts: int) -> None:
        """Counts that do not grow with the sequence are a vectorised answer's only where they are about the
        reference's (grader.grading.operation_count): a loop padded with operations that do nothing, fewer
        as the sequence grows, is not."""
        from grader.grading.operation_count import bound

        reference = self.reference_ops.get(name)
        most = max((c for c in counts if c is not None), default=0)
        if reference is not None and most > bound(reference):
            raise CheckFailed(f"{name} made {most} torch operations for one call, where the computation takes "
                              f"{reference} and a vectorised one at most {bound(reference)}: it runs operations "
                              "for each token in Python (or adds operations that do nothing); use matrix products "
                              "instead", ("not-vectorised",))

    def _call_blaming(self, root_cause, target, *args, **kwargs) -> Reply:
        """:meth:`call`; should the student's code raise, the raise is their helper's when the right
        computation on that helper raises the same way (grader.grading.diagnose.raised)."""
        return self._blaming(root_cause, lambda: self.call(target, *args, **kwargs))

    def _blaming(self, root_cause, reply) -> Reply:
        """``reply()``, a raise judged as :meth:`_call_blaming` judges it."""
        from grader.grading.diagnose import raised

        try:
            return reply()
        except StudentFault as fault:
            raise raised(self, fault, root_cause) from None
        except CheckFailed as failure:
            if failure.fault is None:
                raise
            raise raised(self, failure.fault, root_cause, failure) from None

    def expect_right(self, reply: Reply, expected, what: str, root_cause=None) -> None:
        """:meth:`expect`, except that an output right given the student's own faulty helper passes
        (its mistake is charged where it is made) when the course's cascade policy is "once"."""
        try:
            self.expect(reply, expected, what, diagnosed=root_cause is not None)
        except CheckFailed as failure:
            from grader.grading.diagnose import cause

            if root_cause is None or failure.misconceptions:
                raise
            explained = cause(self, root_cause, failure, reply.out)
            if isinstance(explained, RightGivenHelper) and explained.unverified is not None:
                # (kept in place, as below, where that run stands for a composition the student side has no record of)
                explained.kept_in_place = explained.composition_unrecorded
                raise explained from None  # only the run with a right helper can show it right: that run measures
            if isinstance(explained, RightGivenHelper):
                self.value_failed = False  # (kept: what fails later is no comparison of this one)
                if self.measured_given is None:  # what is measured on it is the helper's too: see measured_given
                    self.measured_given = explained
                return
            raise named_wins(explained) if isinstance(explained, CheckFailed) else (explained or failure) from None

    def same_low_precision(self, name, *args, dtype, root_cause=None, rules=(), **kwargs):
        """The student's ``name`` on ``dtype`` (float16, bfloat16) inputs matches the reference computed
        in float32 on the same rounded inputs, then rounded: the student's own rounding is allowed for
        by the dtype's tolerance, and no implementation is favoured for rounding like the reference.
        ``root_cause(failure, out)`` blames a helper of the student's, as in :meth:`same`: give it the
        inputs already rounded (``low_precision``), so that it asks the helper what this case gave it."""
        import torch

        low = low_precision(dtype, *args)
        wide = tuple(a.float() if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in low)

        def check():
            expected, _, _, _ = self._reference(name, wide, kwargs, False)
            expected = expected.to(dtype) if isinstance(expected, torch.Tensor) else expected
            with self._graded_call(name, low, kwargs):
                reply = self.call(name, *low, **kwargs)
                self.keeps_rules(reply, rules)
                self.expect(reply, expected, f"{name}{_signature(low, kwargs)}", carry=True)
            return reply.out

        return diagnosed(self, check, (), None, None, root_cause)

    def held_bytes(self) -> int:
        """The memory the student's processes hold now, read by the grader from the kernel's accounting
        (grader.sandbox.client.held_bytes), never from an attribute or a number they report. Compare two
        readings around a long computation: what it leaves held is the difference. A round trip first,
        so that the worker has finished with the last reply it sent (its buffers freed) and waits."""
        self.expect_observed()
        self.student.request({"op": "ping"})
        return self.student._worker().held_bytes()

    def own_bytes(self) -> int | None:
        """What the worker that runs the student's code holds of its own now, however long it has held it
        (grader.sandbox.client.own_bytes: beyond what it got from the process it was forked from, its
        memfds and the sandbox's tmpfs files included): an absolute amount, where held_bytes is read as
        growth. None where the kernel's account of that process cannot be read."""
        self.expect_observed()
        self.student.request({"op": "ping"})
        return self.student._worker().own_bytes()

    def expect_observed(self):
        """A check that watches how the student's code computes (what it calls, how many operations, how
        wide, how much memory it holds) earns nothing where the grader cannot trust the watching: the
        submission's files name something that could switch it off or compute out of its sight, read in
        the grading process before any of it ran (grader/grading/observable.py)."""
        why = self.session.unobserved(self.student.assignment.id)
        if why:
            raise CheckFailed(f"not observed: {why}, so this check, which watches how your code computes, "
                              "earns nothing")

    def needs_cuda(self):
        """Skip this check (no points either way) unless grading runs on CUDA."""
        if self.device != "cuda":
            pytest.skip("checked on CUDA only")

    def reference_value(self, compute, *reads, unchanged=None):
        """``compute()``: a value the check works out itself on the reference's side (the expected output
        of a case, from the reference module's parts or a plain formula in float64). It is one use of the
        reference like the others: numbered, recorded and replayed with them, and kept by the grading
        process for the batch's next submission that asks the same. ``reads``: everything ``compute``
        depends on (a module by its weights, buffers, mode and state; tensors by their bytes);
        ``unchanged``: a reference module it runs, whose state it must leave as it found it."""
        return self._event(compute, *reads, unchanged=unchanged)

    def _event(self, compute, *reads, unchanged=None, number=None):
        """One use of the reference, numbered within this check: computed, recorded or replayed. With
        ``reads`` (everything ``compute`` depends on), the result may come from the grading process's
        memo of earlier submissions' identical uses (grader/grading/reference_cache.py), if ``compute`` leaves
        ``unchanged`` (the reference module it runs) as it was. ``number``: one taken earlier, for a use
        made only when needed (the uses after it keep their numbers either way)."""
        if rehearsing():  # a diagnosis rehearsed (a release): the passing run's uses, as recorded; no other
            key = f"{self.nodeid}#{self._events if number is None else number}"
            if number is None:
                self._events += 1
            recording = self.session.recording
            if recording is not None and key in recording.events:
                return recording.events[key]
            raise NotReplayable("a rehearsed diagnosis makes no use of the reference")
        if number is None:
            number = self._events
            self._events += 1
        key = f"{self.nodeid}#{number}"
        recording = self.session.recording
        if self.replaying and self.diagnosing:
            raise NotReplayable("a diagnosis of a replayed run cannot use the reference")
        if recording is not None:
            return recording.event(key, compute)
        memo = self.session.memo
        if memo is None or not reads or key in memo.cheap:
            return compute()
        return memo.lookup(key, (key, self.device, *reads), compute, unchanged)

    def _reference(self, target, args, kwargs, grad, seed=None, grad_scale=1.0, send=None):
        """The reference's output for ``target`` (a function's name, or a module) on these inputs, and
        with ``grad``: the output gradient drawn from this check's generator, and the reference's
        gradients for the inputs and the module's parameters. ``send`` (a :class:`Sent`), called once: the
        student's call of the same inputs, sent as soon as they are known (before the reference's forward
        pass, or with ``grad`` once the output gradient is drawn), so that the reference computes while the
        worker runs; its reply is taken after (should the reference fail, it is taken and dropped)."""
        try:
            return self._reference_of(target, args, kwargs, grad, seed, grad_scale, send)
        except BaseException:
            if send is not None and send.reply is not None:
                _drop(send.reply)  # the worker answers before anything else is sent to it
            raise  # a reference that fails before the inputs are known: no call sent, as before

    def _reference_of(self, target, args, kwargs, grad, seed, grad_scale, send):
        import torch

        if send is not None and not grad:
            send(None)
            send = None

        live = {}

        def forward():
            live.clear()
            fn = getattr(self.ref, target) if isinstance(target, str) else target
            inputs = _on_args(self.device, _cloned(args), grad)
            if seed is not None:
                manual_seed(seed)
            with torch.enable_grad():
                out = fn(*inputs, **_on(self.device, _cloned(kwargs), grad is True))
            live.update(out=out, module=fn, leaves=[a for a in flatten(inputs) if isinstance(a, torch.Tensor)])
            return _detached(out), isinstance(out, torch.Tensor) and out.requires_grad

        module = target if not isinstance(target, str) else None
        expected, differentiable = self._event(forward, target, args, kwargs, grad, seed, unchanged=module)
        if not grad or not differentiable:
            if send is not None:
                send(None)
            return expected, None, None, None
        grad_out = torch.randn(expected.shape, generator=self.generator, dtype=expected.dtype) * grad_scale
        # an infinite output (a masked score) passes no gradient on that anything could use (a softmax
        # gives it none), so whether code masks with masked_fill or by adding -inf does not matter there
        grad_out = grad_out.masked_fill(expected.isinf().cpu(), 0.0)
        if send is not None:
            send(grad_out)

        def backward():
            if not live:  # the forward pass came from the memo
                forward()
            out, module = live["out"], live["module"]
            # sum(out * grad_out) has the gradients of out.backward(grad_out) without torch importing
            # sympy (0.6 s) to compare symbolic shapes
            (out * grad_out.to(out.device)).sum().backward()
            grads = [_detached(a.grad) if a.grad is not None else None for a in live["leaves"]]
            params = {}
            if isinstance(module, torch.nn.Module):
                params = {n: _detached(p.grad) for n, p in module.named_parameters() if p.grad is not None}
                module.zero_grad(set_to_none=True)
            return grads, params

        grads, param_grads = self._event(backward, target, args, kwargs, seed, grad_out)
        return expected, grad_out, grads, param_grads

    def expect(self, reply: Reply, expected, what: str, slack: float = 0.0, carry: bool = False,
               diagnosed: bool = False):
        """Outputs match (within the dtype's tolerance, plus ``slack``), live on the right device, and
        the inputs were left alone. With ``carry``, a wrong output goes with the failure (``out``), for
        diagnosis to name the mistake without running the student's code again."""
        number = self._numbered(diagnosed)
        try:
            Grade._expect(self, reply, expected, what, slack)
            if number == getattr(self, "fail_at", None):  # a release rehearses the diagnosis of a wrong output here
                raise CheckFailed(f"{what}: rehearsed", out=perturbed(reply.out) if carry else None)
        except CheckFailed as failure:
            if carry and failure.out is None and failure.misconceptions in ((), ("wrong-dtype",)):
                failure.out = reply.out
            raise
        self.verified += 1  # an output of the student's, right (grader.grading.grader.charged_once counts them)

    @_a_value_check
    def _expect(self, reply: Reply, expected, what: str, slack: float = 0.0):
        import torch

        if reply.mutated:
            raise CheckFailed(f"{what} modified its input {self.argument_name(reply.mutated[0])} in place; "
                              "compute a new tensor instead", ("input-mutated",))
        out = reply.out
        pairs = list(zip(out, expected)) if isinstance(out, tuple) and isinstance(expected, tuple) \
            and len(out) == len(expected) else [(out, expected)]
        for index, (o, e) in enumerate(pairs):
            if isinstance(o, torch.Tensor) and isinstance(e, torch.Tensor) and o.dtype != e.dtype:
                which = f"output[{index}]" if len(pairs) > 1 or isinstance(out, tuple) else "output"
                raise CheckFailed(f"{what}: the {which} has dtype {o.dtype}, expected {e.dtype} "
                                  "(outputs keep the input's dtype)", ("wrong-dtype",))
        tolerance = self.tolerance(expected)
        tolerance = widen(tolerance, slack, expected)
        problem = difference(out, expected, tolerance, "the output")
        if problem:
            raise CheckFailed(f"{what}: {problem}{self.case()}{float32_only(out, expected)}")
        if isinstance(expected, torch.Tensor) and reply.device and reply.device != str(expected.device):
            raise CheckFailed(f"{what}: the output is on {reply.device}, expected {expected.device} "
                              "(outputs stay on the input's device)", ("wrong-device",))

    @_a_value_check
    def _expect_grads(self, reply: Reply, expected, name, slack=None):
        """A gradient for every input the reference has one for, matching it (within the dtype's
        tolerance plus that input's ``slack``): one missing, or a reply with fewer, is a failure."""
        if reply.grad_error:
            raise StudentFault("error", f"{name}: computing gradients through your output failed:\n{reply.grad_error}")
        got = reply.grads
        wanted = [index for index, e in enumerate(expected or ()) if e is not None]
        if wanted and got is None:
            raise CheckFailed(f"{name}: no gradient flows from the output back to the inputs "
                              "(was something detached, or computed outside autograd?)")
        for index in wanted:
            g = got[index] if index < len(got) else None
            if g is None:
                raise CheckFailed(f"{name}: no gradient flows from the output back to {self.argument_name(index)} "
                                  "(was it detached, or used outside autograd?)")
            tolerance = self.tolerance(expected[index])
            extra = slack[index] if slack and index < len(slack) else 0.0
            tolerance = widen(tolerance, extra, expected[index])
            problem = difference(g, expected[index], tolerance, f"the gradient for {self.argument_name(index)}")
            if problem:
                raise CheckFailed(f"{name}: {problem}{self.case()}{float32_only(g, expected[index], 'gradient')}")

    def argument_name(self, index: int) -> str:
        """The last call's tensor argument ``index`` (its tensors flattened, as the worker numbers them), named
        as the exercise's signature names it: "x (argument 1)"; "argument 1" where the reference is not at
        hand (a replayed run) or the tensor is one of several in an argument."""
        import inspect

        import torch

        plain = f"argument {index + 1}"
        target, label, args = getattr(self, "_called", (None, None, ()))
        seen = 0
        for position, arg in enumerate(args):
            count = sum(isinstance(a, torch.Tensor) for a in flatten(arg))
            if index < seen + count:
                break
            seen += count
        else:
            return plain
        if self.replaying or not isinstance(arg, torch.Tensor):
            return plain
        try:
            fn = getattr(self.ref, target) if isinstance(target, str) else getattr(getattr(self.ref, label), "forward")
            names = [p.name for p in inspect.signature(fn).parameters.values()
                     if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)][0 if isinstance(target, str) else 1:]
        except (AttributeError, TypeError, ValueError):
            return plain
        return f"{names[position]} ({plain})" if position < len(names) else plain

    @_a_value_check
    def _expect_param_grads(self, reply: Reply, expected: dict | None, what: str):
        """A gradient for every parameter the reference's has one for, matching it."""
        got = reply.param_grads or {}
        for n, expected_grad in (expected or {}).items():
            if got.get(n) is None:
                raise CheckFailed(f"{what}: no gradient reaches parameter {n} (is it used in forward?)")
            problem = difference(got[n], expected_grad, self.tolerance(expected_grad), f"the gradient of {n}")
            if problem:
                raise CheckFailed(f"{what}: {problem}{self.case()}{float32_only(got[n], expected_grad, 'gradient')}")

    def _numbered(self, diagnosed: bool) -> int:
        """The number of this comparison of the check's (``compared``), kept among those a release rehearses where
        the suite diagnoses its failure (``diagnosable``)."""
        number = getattr(self, "compared", 0)
        self.compared = number + 1
        if diagnosed:
            getattr(self, "diagnosable", []).append(number)
        return number

    @_a_value_check
    def expect_close(self, actual, expected, what: str, misconceptions: tuple[str, ...] = (), diagnosed: bool = False):
        """``actual`` matches ``expected`` within the tolerance of its dtype. ``diagnosed``: the suite diagnoses
        this failure itself (an ``except CheckFailed`` around it), which a release rehearses as :meth:`expect`'s."""
        number = self._numbered(diagnosed)
        problem = difference(actual, expected, self.tolerance(expected), "the output")
        if problem:
            said = "" if misconceptions else float32_only(actual, expected)
            raise CheckFailed(f"{what}: {problem}{self.case()}{said}", misconceptions)
        if number == getattr(self, "fail_at", None):  # a release rehearses the diagnosis of a wrong output here
            raise CheckFailed(f"{what}: rehearsed")

    def expect_not_growing(self, name, short_ops: int, long_ops: int, helpers=(), *, inside=None,
                           cases=("on a short sequence", "on a longer one"),
                           hint="it loops over tokens in Python; use matrix products instead"):
        """A vectorised exercise makes as many torch operations for a long sequence as for a short one, and
        about as many as the reference (:meth:`expect_few_operations`). ``helpers``: ``(helper, args_short,
        args_long)`` for the student's own functions it uses, and ``inside`` the two calls' replies: where the
        growth is inside those helpers on these very calls (its own operators and its calls of them as many on
        both: :func:`loop_in_helpers`) and their own growth accounts for all of it, the loop is theirs and is
        charged there (cascade policy). ``cases`` and ``hint``: the two cases and what to do, as the failure says
        them."""
        if long_ops <= short_ops:
            self.expect_few_operations(name, short_ops, long_ops)
            return
        message = f"{name} made {short_ops} torch operations {cases[0]} but {long_ops} {cases[1]}: {hint}"
        grown = {}
        for helper, args_short, args_long in helpers:
            try:
                growth = (self.call(helper, *args_long, measure=True).ops or 0) - \
                         (self.call(helper, *args_short, measure=True).ops or 0)
            except (StudentFault, CheckFailed):
                continue
            if growth > 0:
                grown[helper] = growth
        if grown and long_ops - short_ops <= sum(grown.values()) and (inside is None or loop_in_helpers(*inside, grown)):
            which = " and ".join(grown)
            if self.cascades == "once":  # verified with a right one in its place (red team round 25: never skipped)
                raise RightGivenHelper(f"right, given your {which}, which this uses; but your {which} loops over "
                                       f"tokens in Python: fix the {which} exercise", helper=next(iter(grown)))
            raise CheckFailed(f"{message}; the loop is in your {which}, which this uses", ("not-vectorised",))
        raise CheckFailed(message, ("not-vectorised",))

    def raises(self, exception_names, name, *args, new=False, **kwargs):
        """The student's ``name(...)`` (with ``new``: constructing the class ``name``) must raise one of
        ``exception_names``, e.g. ``("ValueError",)``."""
        try:
            self.student.request({"op": "new" if new else "call", "target": name, "name": name, "args": args,
                                  "kwargs": kwargs, "forbidden": self.forbidden})
        except StudentFault as fault:
            if fault.kind == "error" and fault.exception in exception_names:
                return
            if fault.kind != "error":
                raise
            raise CheckFailed(f"{name}{_signature(args, kwargs)} should raise {' or '.join(exception_names)}, "
                              f"but raised {fault.exception}") from None
        raise CheckFailed(f"{name}{_signature(args, kwargs)} should raise {' or '.join(exception_names)}, "
                          "but returned normally")

    def sibling(self, assignment_id: str) -> "Grade":
        """A grade on another assignment of the same submission, for naming a root cause there (a
        class that stacks the student's own class from an earlier assignment)."""
        return Grade(self.session, self.session.student(assignment_id), self.session.references.get(assignment_id),
                     f"{self.nodeid}@{assignment_id}", pytest.mark.exercise(assignment_id).mark)

    def afresh(self) -> None:
        """The student's next request is served by a new process, their module imported again: nothing the
        module kept from earlier instances or calls (a count of instances, the last input) reaches it. A call of a
        helper "that its own exercise grades" is of a class as its own checks make one, not as a sequence of others
        left it (red team round 26d: a 03 class wrong only when built right after another on the same input, as a
        wrapper stacks its heads, was blamed for the wrapper's output and never charged in 03)."""
        self.student.renew()

    def module(self, name, *args, dtype=None, training=True, weights=None, **kwargs) -> "ModulePair":
        """The reference's and the student's ``name(*args, **kwargs)``, same weights, in ``dtype``, in
        training mode or (``training=False``) already in evaluation mode, as ``.train(False)`` gives
        without another round trip. ``weights`` (name -> tensor): values both start with in place of the
        seeded ones, in the same round trip (another instance's, lesson.checks_04.longer_twin)."""
        return ModulePair(self, name, args, kwargs, dtype, training, weights)


def _copy_into(module, values: dict) -> None:
    """``module``'s parameters named in ``values`` (name -> tensor) given those values."""
    import torch

    with torch.no_grad():
        for n, p in module.named_parameters():
            if n in values:
                p.copy_(values[n].to(p.device, p.dtype))


class ModulePair:
    """The reference's and the student's instance of one class, with the reference's weights in both."""

    def __init__(self, grade: Grade, name: str, args, kwargs, dtype=None, training=True, weights=None):
        self.grade, self.name = grade, name
        self.args, self.kwargs, self.dtype = args, kwargs, dtype  # to build another one like it
        if grade.replaying:
            self.ref = _Unavailable()
        else:
            manual_seed(grade.seed)
            self.ref = getattr(grade.ref, name)(*args, **kwargs)
            if grade.device != "cpu" or dtype is not None:  # else .to() gives back every tensor as it is
                self.ref = self.ref.to(grade.device, dtype)
            self.ref.train(training)
            if weights:
                _copy_into(self.ref, weights)
        # one round trip: the reference's weights go with the request (the worker loads them where
        # every name and shape fits), and the instance's parameters, buffers and submodules come back
        ours = self.reference_parameters()
        # the weights both instances hold, at hand without a use of the reference: a root cause in a
        # replay (a student distribution) computes the right projections from them (grader.grading.diagnose.cause)
        self.weights = {n: p.detach().cpu() for n, p in ours.items()}
        self.state = grade.student.request({"op": "new", "name": name, "args": args, "kwargs": kwargs,
                                            "dtype": dtype, "state": True, "training": bool(training),
                                            "params": self.weights})
        self.handle = HandleRef(self.state["handle"])
        self.what = f"{name}{_signature(args, kwargs)}"
        self._load_reference_weights(ours, loaded=self.state.get("loaded") is True)

    def release(self):
        """The student's process lets go of its instance (the worker drops its handle and collects
        garbage): what the instance held is given back to the kernel, which grade.held_bytes reads."""
        self.grade.student.request({"op": "drop", "handle": self.handle.id})

    def use_weights_of(self, module):
        """Give both instances ``module``'s weights (a reference module of the same class), e.g. one head
        of a reference wrapper, and take it as this pair's reference."""
        self.ref = module
        self._load_reference_weights()
        return self

    def new_weights(self, *names):
        """Fresh values, drawn from this check's seed, for the parameters ``names`` (a submodule's name
        takes all of its own: ``"W_key"`` is ``W_key.weight`` and ``W_key.bias``), in both instances.
        Between two cached calls, keys kept in a cache and keys computed again then differ, so what a
        cache keeps is read from the outputs, never from what the student's process reports."""
        shapes = self.grade._event(lambda: [(n, list(p.shape)) for n, p in self.ref.named_parameters()])
        fresh = {n: self.grade.randn(*shape, scale=0.3) for n, shape in shapes
                 if any(n == name or n.startswith(name + ".") for name in names)}
        return self.set_weights(fresh)

    def set_weights(self, values: dict):
        """Give both instances these parameter values (name -> tensor; the others are kept), e.g. a
        design that makes the output show the attention weights (suites/lesson/dropout.py)."""

        if not self.grade.replaying:
            _copy_into(self.ref, values)
        self._load_reference_weights()
        return self

    def parameter_shapes(self) -> dict:
        """name -> shape of the reference's parameters (recorded and replayable)."""
        return dict(self.grade._event(lambda: [(n, list(p.shape)) for n, p in self.ref.named_parameters()]))

    def reference_parameters(self) -> dict:
        return self.grade._event(lambda: {n: p.detach() for n, p in self.ref.named_parameters()})

    def _load_reference_weights(self, ours=None, loaded=False):
        """Check the student's parameter names and shapes against the reference's, then give the
        student's instance the reference's weights (unless the worker ``loaded`` them already)."""
        theirs = {n: p.shape for n, p in self.state["params"].items()}
        if ours is None:  # new weights: both instances get them (self.weights, as in __init__)
            ours = self.reference_parameters()
            self.weights = {n: p.detach().cpu() for n, p in ours.items()}
        missing = [n for n in ours if n not in theirs]
        extra = [n for n in theirs if n not in ours]
        shared = self.state.get("shared") if isinstance(self.state.get("shared"), dict) else {}
        for name, original in shared.items():  # e.g. nn.ModuleList([head] * num_heads): one head, many names
            if isinstance(name, str) and isinstance(original, str) and any(n.startswith(name + ".") for n in missing):
                raise CheckFailed(f"{self.what}: {name} is the same module object as {original}, so they share "
                                  f"one set of weights; create a new module for each, e.g. "
                                  f"nn.ModuleList([Module(...) for _ in range(n)]) rather than [module] * n")
        if missing or extra:
            parts = []
            if missing:
                parts.append("missing " + ", ".join(missing))
            if extra:
                parts.append("unexpected " + ", ".join(extra))
            raise CheckFailed(f"{self.what}: the parameters are not named as the lesson asks: {'; '.join(parts)}"
                              + self._unregistered(missing))
        for n, p in ours.items():
            if tuple(theirs[n]) != tuple(p.shape):
                raise CheckFailed(f"{self.what}: parameter {n} has shape {shape_str(theirs[n])}, "
                                  f"expected {shape_str(p.shape)}")
        if not loaded:
            self.grade.student.request({"op": "load", "handle": self.handle.id, "params": self.weights})

    def _unregistered(self, missing: list[str]) -> str:
        """Why names the reference has are missing when the student's instance holds an attribute of that
        name: a plain tensor (not an nn.Parameter) or modules in a Python list or dict (not registered)."""
        import torch

        tops = list(dict.fromkeys(n.split(".")[0] for n in missing if not n.startswith("_")))
        found = self.attributes(*tops) if tops else {}
        tensors = [t for t in tops if isinstance(found.get(t), torch.Tensor)]
        sequences = [t for t in tops if isinstance(found.get(t), (list, tuple))]
        said = []
        if tensors:
            said.append(f"{', '.join(tensors)} {'is a plain tensor' if len(tensors) == 1 else 'are plain tensors'}, "
                        "not nn.Parameter: wrap each in nn.Parameter(...) so that the module registers, trains and "
                        "moves it")
        if sequences:
            said.append(f"{', '.join(sequences)} {'holds' if len(sequences) == 1 else 'hold'} modules in a Python "
                        "list, which does not register them: use nn.ModuleList([...])")
        return "; " + "; ".join(said) if said else ""

    def student_parameters(self) -> dict:
        return self.grade.student.request({"op": "state", "handle": self.handle.id})["params"]

    def expect_same_parameters(self, what: str):
        """The student's instance holds the same parameter values as the reference's."""
        theirs = self.student_parameters()
        for n, p in self.reference_parameters().items():
            problem = difference(theirs.get(n), p, self.grade.tolerance(p), f"parameter {n}")
            if problem:
                raise CheckFailed(f"{what}: {problem}")

    def train(self, mode: bool = True):
        if not self.grade.replaying:
            self.ref.train(mode)
        self.grade.student.request({"op": "mode", "handle": self.handle.id, "train": mode})
        return self

    def call(self, *args, seed=None, grad_out=None, root_cause=None, **kwargs) -> Reply:
        """forward(*args, **kwargs) of the student's instance; with ``root_cause``, a raise is judged
        given the student's own helpers (Grade._call_blaming)."""
        return self.grade._call_blaming(root_cause, self.handle, *args, seed=seed, grad_out=grad_out,
                                        label=self.name, **kwargs)

    def method(self, name: str, *args):
        """Call the method ``name`` (``reset_cache``) of both instances; the student's result."""
        if not self.grade.replaying:
            getattr(self.ref, name)(*args)
        return self.grade.call(self.handle, *args, label=f"{self.name}.{name}", method=name).out

    def attributes(self, *names) -> dict:
        """The student's instance's attributes ``names`` (tensors, None, or a type's name), for the
        grader to measure: read from the data it receives, never from what the student's code says."""
        reply = self.grade.student.request({"op": "attr", "handle": self.handle.id, "names": list(names)})
        values = reply.get("values")
        return {name: decode(values.get(name)) if isinstance(values, dict) else None for name in names}

    def measured(self, *args, root_cause=None) -> Reply:
        """forward(*args), its output checked against the reference's (see Grade.measured)."""
        expected = self.reference(*args)
        self.grade.count_reference(self.name, lambda: self.ref, args, {})
        reply = self.grade._call_blaming(root_cause, self.handle, *args, label=self.name, measure=True)
        self.grade.expect_right(reply, expected, f"{self.what} forward{_signature(args, {})}", root_cause)
        return reply

    def reference(self, *args, seed=None):
        """The reference instance's forward(*args) (recorded and replayable like every reference use)."""
        return self.grade._reference(self.ref, args, {}, False, seed=seed)[0]

    def same(self, *args, grad=False, seed=None, mistakes=(), explain=None, right=None, root_cause=None, rules=(),
             **kwargs):
        """forward(*args, **kwargs) matches the reference's (same dropout under the same seed), gradients
        too; a wrong output is diagnosed as in :meth:`Grade.same`. ``rules``: (rule, judge) pairs read on
        this call as it ran (:meth:`Grade.keeps_rules`: every module's call is watched too)."""
        def check():
            sent = Sent(lambda grad_out: self.grade.sent_call(self.handle, *args, seed=seed, grad_out=grad_out,
                                                              label=self.name, **kwargs))
            expected, grad_out, ref_grads, ref_param_grads = self.grade._reference(self.ref, args, kwargs, grad,
                                                                                   seed=seed, send=sent)
            reply = self.grade._blaming(None, sent.reply)
            self.grade.keeps_rules(reply, rules)
            self.grade.expect(reply, expected, f"{self.what} forward{_signature(args, kwargs)}", carry=True,
                              diagnosed=True)
            if grad:
                self.grade._expect_grads(reply, ref_grads, f"{self.what} forward")
                self.grade._expect_param_grads(reply, ref_param_grads, self.what)
            return reply.out

        return diagnosed(self.grade, check, mistakes, explain, right, root_cause)


class Sent:
    """The student's call of a check, sent by Grade._reference as soon as its inputs are known (``send``:
    grad_out -> what :meth:`Grade.sent_call` returns); ``reply`` takes its Reply."""

    def __init__(self, send):
        self.send, self.reply = send, None

    def __call__(self, grad_out) -> None:
        self.reply = self.send(grad_out)


def _drop(pending) -> None:
    """Take a sent call's reply and drop it, whatever it is (the grader's own side failed meanwhile)."""
    try:
        pending()
    except Exception:  # noqa: BLE001 - the failure being raised is the grader's, not this reply's
        pass


def _widening_on_failure(measured: bool, narrow, wide):
    """``narrow()``, and only if it fails, ``wide()``: the same comparison with a tolerance widened by
    a room that costs reference runs to measure (the verdict is wide()'s either way, since widening
    only adds to the tolerance). ``measured``: the room is at hand already, so wide() alone."""
    if measured:
        return wide()
    try:
        narrow()
    except CheckFailed:
        wide()


def low_precision(dtype, *args) -> tuple:
    """``args`` with every floating-point tensor rounded to ``dtype`` (float16, bfloat16)."""
    import torch

    return tuple(a.to(dtype) if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args)


def perturbed(out):
    """A wrong output of ``out``'s kind (a release's rehearsal of a failure: every candidate is tried on it)."""
    import torch

    from grader.inside.protocol import mapped

    def wrong(leaf):
        if not isinstance(leaf, torch.Tensor):
            return leaf
        if leaf.dtype == torch.bool:
            return ~leaf
        return leaf * 1.5 + 0.25 if leaf.is_floating_point() or leaf.is_complex() else leaf + 1

    return mapped(wrong, out)


def diagnosed(grade: Grade, check, mistakes, explain, right, root_cause):
    """``check()``, its failure with the student's mistake named when any way to name one is given."""
    if not (mistakes or explain or root_cause):
        passed = check()
        if callable(right):
            rehearse(right)
        return passed
    from grader.grading.diagnose import diagnosed as named

    try:
        return named(grade, check, None, mistakes, explain_output=explain,
                     right=right if callable(right) or right is None else (lambda: right), root_cause=root_cause)
    except CheckFailed as failure:
        raise named_wins(failure) from None


def float32_only(actual, expected, what: str = "output") -> str:
    """What a failing comparison adds when float64 ``actual`` is right only to float32's precision
    (grader.grading.compare.float32_precision): the likely cause, as the failure's last clause, which
    gives way to a mistake that diagnosis names afterwards (:func:`named_wins`); "" otherwise."""
    return f"; {rounded_in_float32(what)}" if float32_precision(actual, expected) else ""


def named_wins(failure: CheckFailed) -> CheckFailed:
    """``failure`` without the float32 clause (:func:`float32_only`) where diagnosis went on to explain
    it (a mistake named, a helper blamed: something said after that clause): the named cause wins."""
    for what in ("output", "gradient"):
        clause = f"; {rounded_in_float32(what)}"
        if clause in failure.message and not failure.message.endswith(clause):
            failure.message = failure.message.replace(clause, "", 1)
            failure.args = (failure.message,)  # (``unexplained`` keeps it, for a case contradicting the name)
    return failure


def _signature(args, kwargs) -> str:
    import torch

    def show(v):
        if isinstance(v, torch.Tensor):
            strided = "" if v.is_contiguous() else ", non-contiguous"
            return f"<{shape_str(v.shape)} {str(v.dtype).replace('torch.', '')}{strided}>"
        if isinstance(v, HandleRef):
            return "<module>"
        return repr(v)

    parts = [show(a) for a in args] + [f"{k}={show(v)}" for k, v in kwargs.items()]
    return "(" + ", ".join(parts) + ")"


def _cloned(value):
    import torch

    return mapped(lambda leaf: leaf.clone() if isinstance(leaf, torch.Tensor) else leaf,  # keeps the strides
                  value)


def _on(device, value, grad):
    import torch

    def moved(leaf):
        if not isinstance(leaf, torch.Tensor):
            return leaf
        leaf = leaf.to(device)
        return leaf.requires_grad_(True) if grad and leaf.is_floating_point() else leaf

    return mapped(moved, value)


def _on_args(device, args, grad):
    """The positional arguments on ``device``; floating-point ones requiring gradients where ``grad``
    says: True (all), False (none), or a tuple of positions."""
    return tuple(_on(device, a, grad is True or (isinstance(grad, tuple) and i in grad)) for i, a in enumerate(args))


def differentiated(args, grad) -> list[int] | None:
    """Which of the call's tensor arguments (flattened, in order) the worker differentiates: None for
    every floating-point one (``grad=True``), else those of the positions ``grad`` names."""
    import torch

    if not isinstance(grad, tuple):
        return None
    leaves, index = [], 0
    for position, arg in enumerate(args):
        for leaf in flatten(arg):
            if isinstance(leaf, torch.Tensor):
                if position in grad:
                    leaves.append(index)
                index += 1
    return leaves


def _detached(value):
    """Every tensor detached, every list a tuple (as outputs come back from a worker)."""
    import torch

    return mapped(lambda leaf: leaf.detach() if isinstance(leaf, torch.Tensor) else leaf, value, sequence=tuple)


