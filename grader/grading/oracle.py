"""The grader's side of the stand-ins: the right results of a student's helper calls, answered from
outside the student's process while a case kept as "right, given your helper" is verified.

The student's process gets stand-ins (grader.inside.stand_in) that send each call's values here. An
:class:`Oracle` answers them for one verification run only, for the helpers being replaced only, a
bounded number of times, with nothing but the right result of that call (or the exception a right
helper raises). Where the answers come from:

- :class:`LiveAnswers`: the reference itself, in the grading process (the instructor's side);
- :class:`RecordedAnswers`: what the reference's helpers answered on the public cases, recorded by
  ``grade release --out`` (:class:`Recorder`): a student distribution, which has no reference, answers
  a call whose values match a recorded one and refuses the rest (the case is then "not checked on your
  side").

No code of a right helper ever reaches the student's process: only tensors and plain values cross.
"""
from __future__ import annotations

from grader.inside.protocol import flatten, mapped, on_device

LIVE_CALLS = 256  # answers per helper per verification run, from the reference (the longest decoding check
# of this course makes 64 calls of one helper)
RECORDED_FACTOR = 4  # answers per helper per run, from a recording: this many times the reference's calls
RECORDED_MINIMUM = 16
BACKWARDS_A_CALL = 2  # backward passes through one answered call (the check's own asks one)
MAX_RUN_SECONDS = 10.0  # the grading process's processor time for one run's questions (a right one's: milliseconds)
RAISES = ("ValueError", "RuntimeError", "TypeError", "IndexError", "AssertionError")  # a right helper's raise


class Unanswerable(Exception):
    """No right result can be had for this call here (not this check's helper, not a call a right helper
    takes): refused, and nothing else follows from it."""


class NotOnRecord(Unanswerable):
    """A student distribution's gap: a call of a helper being verified whose values its recording does
    not hold (the only refusal that makes a case "not checked on your side"; the reference never gives it)."""


class Oracle:
    """Answers the stand-ins' questions of one verification run: ``helpers`` only, at most ``budget[name]``
    calls each. ``unanswered``: the calls a student distribution's recording does not hold (NotOnRecord);
    every other question it cannot answer (malformed, of another helper, one the right helper fails on
    other than by a raise a right one makes) is refused and counts for nothing, whatever the student's
    process sends: from the reference, nothing is ever "not checked". ``exhausted``: a helper called more often than a right exercise would."""

    def __init__(self, answers, helpers, budget: dict[str, int]):
        self.answers, self.helpers, self.budget = answers, frozenset(helpers), budget
        self.used: dict[str, int] = {}
        self.unanswered: list[str] = []
        self.answered = 0  # questions answered with a result (a construction's included)
        self.exhausted: list[str] = []
        self.calls: dict[int, object] = {}  # this run's answered forward calls, for their backward passes
        self.backs: dict[int, int] = {}  # how many backward passes each was asked for
        self.spent = 0.0  # the grading process's processor time answering them
        # the questions no right exercise asks (a helper called outside its signature, another helper, more often
        # than a right exercise, sizes past the bound): refused, and the run shows nothing of the exercise's own
        # (red team round 25: a flag passed to a helper ran the caller's loop in its frame; where the stand-in
        # refused it, the exercise's own vectorised code, caught falling back, was taken as verified)
        self.refused: list[str] = []

    def gap_keeps_the_case(self) -> bool:
        """After a gap (``unanswered``): whether the case stands as kept. It does where some call was on
        record (the exercise computed the reference's values up to the helper), or where the recording
        holds no call of these helpers on this check at all (nothing to compare with: a check that never
        asks the reference, such as a memory measure); not where calls were recorded and none matched (the
        exercise's own values went wrong before the helper)."""
        return self.answered > 0 or not self.answers.holds(self.helpers)

    def __call__(self, question: dict) -> dict:
        import time

        if self.spent > MAX_RUN_SECONDS:  # the grading process's own time (red team round 27a: a minute of it)
            return self._refuse("more of the grader's time than a right exercise's questions take in one run")
        started = time.process_time()
        try:
            return self._answer(question)
        except NotOnRecord as why:
            self.unanswered.append(str(why))
            return {"refused": str(why)}
        except Unanswerable as why:
            return self._refuse(str(why))
        except Exception as exc:  # noqa: BLE001 - a question no right helper's call makes: the student's doing
            return self._refuse(f"not a call of a right {question.get('name')!s:.40} ({type(exc).__name__})")
        finally:
            self.spent += time.process_time() - started

    def _refuse(self, why: str) -> dict:
        self.refused.append(why)
        return {"refused": why}

    def _answer(self, question: dict) -> dict:
        op, name = question.get("op"), question.get("name")
        if op == "backward":
            call = question.get("call")
            if call not in self.calls:
                raise Unanswerable("a backward pass of no call of this verification")
            # one a call, as the grader's own backward pass asks (red team round 27a: backward passes through one
            # answered call, asked for eight seconds a call, took a minute of the grading process)
            backs = self.backs[call] = self.backs.get(call, 0) + 1
            if backs > BACKWARDS_A_CALL:
                return self._refuse("a backward pass through one call more often than a right exercise asks")
            return {"grads": self.answers.backward(self.calls[call], question.get("grads") or [])}
        if name not in self.helpers or op not in ("new", "forward"):
            raise Unanswerable(f"{name!r} is not being verified")
        if question.get("misused"):  # (grader.inside.stand_in._reporting)
            raise Unanswerable(f"a call of {name} with arguments that are not values (a function, an object)")
        used = self.used[name] = self.used.get(name, 0) + 1
        if used > self.budget.get(name, 0):
            self.exhausted.append(name)
            return self._refuse(f"{name} was called more often than a right exercise calls it")
        try:
            answer, handle = (self.answers.new(question), None) if op == "new" else self.answers.forward(question)
        except Raised as raised:
            # the kind only: a right helper's own words would say how it computes (red team round 9: the
            # reference's messages named the torch functions it calls); recordings made before keep theirs out too
            return {"raises": raised.kind, "message": f"a right {name} raises {raised.kind} on these arguments"}
        self.answered += 1
        if handle is not None:
            self.calls[len(self.calls) + 1] = handle
            answer = {**answer, "call": len(self.calls)}
        return answer


class Raised(Exception):
    """A right helper raised on these arguments (the stand-in raises the same kind)."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind, self.message = kind, message


# --- answers from the reference ---------------------------------------------------------------------
# how large an answer the reference computes in the grading process for a stand-in's question: at most this
# many elements, or GROWTH times the question's largest tensor (a right exercise asks for nothing larger than
# what the check gave it; a question of sizes 24000 x 24000 is refused before anything is computed)
MAX_ELEMENTS = 1 << 23
GROWTH = 16
MAX_INT = 1 << 10  # where the size cannot be worked out beforehand (the right helper raises), no integer past this
# all the answers of one verification run together (each kept until the run ends, its graph with it): at most this
# many bytes, counting everything the reference made on the way (red team round 26e: up to 256 questions of the
# bound each; round 27a: eight questions within the bound of elements kept 3.6 GiB of graphs)
MAX_RUN_BYTES = 1 << 28


def _sized(name: str, target, question: dict) -> int:
    """Refuses (Unanswerable) a question whose answer, with what the reference makes to give it (a class's
    parameters), would hold more than the bound: worked out on torch's meta device, without computing it; and
    one that cannot be worked out there (red team round 27a: a tensor for qkv_bias, which the reference reads as
    a bool, made the meta run fail, and the fallback let a 9000-feature class be built, 3 GB). The bytes it
    keeps: everything the reference makes on the way, which an answer's autograd graph may hold until the run
    ends (round 27a: 417 MiB a question where its output counted 62 MiB)."""
    import torch

    largest = max([t.numel() for t in flatten((question.get("args"), question.get("kwargs"), question.get("params")))
                   if isinstance(t, torch.Tensor)] + [0])
    bound = max(MAX_ELEMENTS, GROWTH * largest)
    made = None
    for settings in (False, True):  # its tensors as they are; then a one-entry one as the value it holds
        try:  # (round 27c: causal_mask(torch.tensor(30000)), whose size only its value gives, built 4.7 GB)
            widest = _Widest.made()
            with widest:
                made = [t for t in flatten(_on_meta(target, question, settings)) if isinstance(t, torch.Tensor)]
            break
        except Exception:  # noqa: BLE001 - not on meta; tried again, or below
            made = None
    if made is None:  # the right helper raises (its raise is the answer): small numbers only
        numbers = [v.item() if isinstance(v, torch.Tensor) else v for v in flatten(
            (question.get("args"), question.get("kwargs"), question.get("new_args"), question.get("new_kwargs")))
            if isinstance(v, int) and not isinstance(v, bool) or isinstance(v, torch.Tensor) and v.numel() == 1]
        if any(not isinstance(v, (int, float)) or abs(v) > MAX_INT for v in numbers if not isinstance(v, bool)):
            raise Unanswerable(f"a call of {name} whose size cannot be worked out before it is computed, with "
                               f"sizes past {MAX_INT}") from None
        return MAX_ELEMENTS * 8
    size = max(sum(t.numel() for t in made), widest.most)
    if size > bound:
        raise Unanswerable(f"a call of {name} whose answer, or what the reference makes on the way to it, holds "
                           f"{size:,} elements (a right exercise asks for at most {bound:,})")
    # kept until the run ends where a gradient may be asked through it: the answer and its graph (at most everything
    # made on the way); else nothing (computed, sent, let go)
    graph = question.get("op") == "new" or bool(question.get("grad")) or bool(question.get("params"))
    return widest.total + sum(t.numel() * t.element_size() for t in made) if graph else 0


class _Widest:
    """A dispatch mode that keeps the most entries any operator made (on the meta device: nothing computed), so
    that what the reference makes on the way to an answer is sized too (red team round 26e: four questions of a
    [64, 2048, 1] input made [64, 2048, 2048] scores each, 11.6 GiB in the grading process, their answers small)."""

    _class = None

    @classmethod
    def made(cls):
        if cls._class is None:
            from torch.utils._python_dispatch import TorchDispatchMode

            from grader.inside.tracer import uncompiled

            class Widest(TorchDispatchMode):
                most = 0  # the most entries one operator made
                total = 0  # the bytes every operator made, together

                def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                    out = func(*args, **(kwargs or {}))
                    new = not func.is_view and not func._schema.is_mutable  # (a view or an in-place result: none)
                    for leaf in flatten(out):
                        if hasattr(leaf, "numel"):
                            self.most = max(self.most, leaf.numel())
                            self.total += leaf.numel() * leaf.element_size() if new else 0
                    return out

            cls._class = uncompiled(Widest)
        return cls._class()


def _called_as_written(name: str, target, question: dict) -> None:
    """Refuses (Unanswerable) a call of a helper whose arguments its signature in the contract does not take (a
    flag the student's own helper reads, red team round 25): no right exercise makes it. A class helper is held to
    its constructor's signature where it is made, and to its forward's where it is called (round 26d)."""
    import functools
    import inspect

    if "new_args" in question:  # a class's forward: how the instance was made, then the call itself
        _called_as_written(name, target, {"args": question["new_args"], "kwargs": question["new_kwargs"]})
        forward = getattr(target, "forward", None)
        if not callable(forward):
            return
        target = functools.partial(forward, None)  # the instance's place left out
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):  # no signature to hold it to
        return
    args, kwargs = question.get("args", ()), question.get("kwargs", {})
    try:
        signature.bind(*(args if isinstance(args, (list, tuple)) else ()), **(kwargs if isinstance(kwargs, dict) else {}))
    except TypeError:
        raise Unanswerable(f"a call of {name} with arguments its signature does not take") from None


def _on_meta(target, question: dict, settings: bool = False) -> list:
    """What the reference makes to answer ``question``, on torch's meta device (shapes, no memory): a new
    instance's parameters and buffers (a mask of its context's size: red team round 26d built one of 60000
    tokens); a call's output, and for a class's forward its instance's parameters and buffers too. A one-entry
    tensor among a class's settings, or (``settings``) among a call's arguments, is the value it holds there
    (qkv_bias=torch.tensor(True); a size given as a tensor)."""
    import torch

    def valued(values):  # a one-entry tensor as its value, which a meta tensor, whose truth is unknown, cannot give
        return mapped(lambda v: v.item() if isinstance(v, torch.Tensor) and v.numel() == 1 else v, values)

    made_with = valued((question.get("new_args", ()), question.get("new_kwargs", {})))  # (a class's, to call it)
    called = (question.get("args", ()), question.get("kwargs", {}))
    args, kwargs = on_device(valued(called) if question.get("op") == "new" or settings else called, "meta")
    with torch.device("meta"), torch.no_grad():
        if question.get("op") == "new":
            instance = target(*args, **kwargs)
            return [*instance.parameters(), *instance.buffers()]
        if "new_args" in question:
            instance = target(*made_with[0], **made_with[1])
            return [instance(*args, **kwargs), *instance.parameters(), *instance.buffers()]
        return [target(*args, **kwargs)]


class LiveAnswers:
    """The reference's helpers (``functions``: name -> the reference's function or class), run on
    ``device`` in the grading process."""

    def __init__(self, functions: dict, device: str, record: list | None = None, *, one_run: bool = True):
        self.functions, self.device, self.record = functions, device, record
        self.made = 0  # the bytes of every answer so far, with what was made on the way (_sized)
        self.one_run = one_run  # the answers of one verification run (not the recorder's, of a whole recording)

    def _within_run(self, name: str, size: int) -> None:
        if self.one_run and self.made + size > MAX_RUN_BYTES:
            raise Unanswerable(f"more of {name} than a right exercise asks for in one run")
        self.made += size

    def _target(self, name):
        target = self.functions.get(name)
        if target is None:
            raise Unanswerable(f"no right {name} at hand")
        return target

    def new(self, question: dict) -> dict:
        import torch

        target = self._target(question["name"])
        _called_as_written(question["name"], target, question)
        self._within_run(question["name"], _sized(question["name"], target, question))
        instance = target(*question.get("args", ()), **question.get("kwargs", {}))
        linears = {path: [m.in_features, m.out_features, m.bias is not None]
                   for path, m in instance.named_modules() if path and type(m) is torch.nn.Linear}
        answer = {"linears": linears, "params": on_device(dict(instance.named_parameters()), "cpu")}
        if self.record is not None:
            self.record.append({"q": on_device(question, "cpu", copy=True), "a": on_device(answer, "cpu", copy=True)})
        return answer

    def forward(self, question: dict):
        import torch

        target = self._target(question["name"])
        _called_as_written(question["name"], target, question)
        # before anything is made of it (a class's instance too)
        self._within_run(question["name"], _sized(question["name"], target, question))
        # the reference's leaves: copies, never the tensors asked about (in a recording, the reference's own)
        args = on_device(question.get("args", ()), self.device, copy=True)
        kwargs = on_device(question.get("kwargs", {}), self.device, copy=True)
        params = list(question.get("params") or [])
        tensors = [t for t in flatten((args, kwargs)) if isinstance(t, torch.Tensor)]
        with torch.enable_grad():
            fn, slots = target, list(tensors)  # slots: what each tensor the stand-in sent stands for here
            if "new_args" in question:  # a class helper's forward: the reference's, with these parameters
                with torch.random.fork_rng(devices=[]):  # its initial weights are replaced: no draw counts
                    fn = target(*question["new_args"], **question["new_kwargs"])
                fn = fn.to(self.device, params[0].dtype) if params and params[0].is_floating_point() else fn.to(self.device)
                fn.train(bool(question.get("training")))
                own, names = dict(fn.named_parameters()), list(question.get("param_names") or [])
                if sorted(names) != sorted(own) or len(names) != len(params) \
                        or any(tuple(own[n].shape) != tuple(p.shape) for n, p in zip(names, params)):
                    raise Unanswerable(f"a {question['name']} of other parameters than the lesson's")
                with torch.no_grad():
                    for n, p in zip(names, params):
                        own[n].copy_(p)
                slots += [own[n] for n in names]
            elif params:
                raise Unanswerable(f"{question['name']} is not a class")
            wanted = [i for i in sorted(set(question.get("grad") or ())) if isinstance(i, int) and 0 <= i < len(slots)]
            for i in wanted:
                if i < len(tensors) and slots[i].is_floating_point():
                    slots[i].requires_grad_(True)
            wanted = [i for i in wanted if slots[i].requires_grad]
            try:
                out = fn(*args, **kwargs)
            except Exception as exc:  # noqa: BLE001 - a right helper's raise, which the stand-in repeats
                kind = type(exc).__name__
                if kind not in RAISES:
                    raise Unanswerable(f"the right {question['name']} fails here ({kind})") from None
                raised = Raised(kind, "")  # its kind alone crosses: its message is the reference's text
                if self.record is not None:
                    self.record.append({"q": on_device(question, "cpu", copy=True), "raises": [raised.kind, raised.message]})
                raise raised from None
        answer = {"out": on_device(out, self.device)}
        entry = None
        if self.record is not None:
            entry = {"q": on_device(question, "cpu", copy=True), "a": on_device(answer, "cpu", copy=True), "back": []}
            self.record.append(entry)
        if not wanted:  # no gradient can be asked through it: nothing of it is kept for the run (a 06 memory case's
            out = None  # sixteen cached calls of [32, 8, 256, 16] keys, answered and let go)
        return answer, (out, [slots[i] for i in wanted], wanted, len(slots), entry)

    def backward(self, handle, grads: list) -> list:
        import torch

        out, leaves, wanted, count, entry = handle
        outs = [o for o in flatten(out) if hasattr(o, "requires_grad")] if out is not None else []
        pairs = [(o, g.to(o.device, o.dtype)) for o, g in zip(outs, grads) if g is not None and o.requires_grad]
        found = [None] * count
        if pairs and leaves:
            back = torch.autograd.grad([o for o, _ in pairs], leaves, [g for _, g in pairs], allow_unused=True,
                                       retain_graph=True)
            for index, grad in zip(wanted, back):
                found[index] = None if grad is None else grad.detach().cpu()
        if entry is not None:
            entry["back"].append([on_device(grads, "cpu", copy=True), on_device(found, "cpu", copy=True)])
        return found


# --- answers from a recording -----------------------------------------------------------------------
class RecordedAnswers:
    """What the reference's helpers answered on this check's public cases (``records``, made by
    :class:`Recorder`): a question is answered when its values match a recorded one's within ``tolerance``
    (``(dtype name) -> Tolerance``)."""

    def __init__(self, records: list, tolerance, signatures: dict | None = None):
        self.records, self.tolerance = records, tolerance
        self.signatures = signatures or {}  # a function of the student's -> its inspect.Signature: signatures_in

    def holds(self, helpers) -> bool:
        """Whether any call of ``helpers`` is on record for this check."""
        return any(record["q"].get("name") in helpers for record in self.records)

    def new(self, question: dict) -> dict:
        for record in self.records:
            q = record["q"]
            if q.get("op") == "new" and q.get("name") == question.get("name") and "a" in record \
                    and self._same([q.get("args"), q.get("kwargs")], [question.get("args"), question.get("kwargs")]):
                return record["a"]
        raise NotOnRecord(f"constructing {question.get('name')} with these arguments is not on record")

    def forward(self, question: dict):
        """The recorded answer to a call of these values, or NotOnRecord (the case is then not checked on
        the student's side: the preview runs on the student's own machine, so what its code asks can only
        change its own preview, never the instructor's grade, which asks the reference)."""
        keys = ("name", "new_kwargs", "training", "param_names")
        parts = ("new_args", "args", "kwargs", "params")
        for record in self.records:
            q = record["q"]
            if q.get("op") != "forward" or any(q.get(k) != question.get(k) for k in keys):
                continue
            if not self._same([q.get(part) for part in parts], [question.get(part) for part in parts]) and \
                    not self._same_call(q, question):
                continue
            if "raises" in record:
                raise Raised(*record["raises"])
            return {"out": record["a"]["out"]}, record
        raise NotOnRecord(f"this call of {question.get('name')} is not on record")

    def _same_call(self, q: dict, question: dict) -> bool:
        """Whether the recorded call ``q`` and ``question``, of a function of the student's whose signature is known
        (``signatures``), bind the same values to the same parameters: ``softmax(scores, -1)`` asks what
        ``softmax(scores, dim=-1)`` was answered, and a ``dim`` counted from the end or from the start of the first
        tensor's dimensions is the same dim (issue 44's blind parity re-run, session 26: a simple_self_attention
        calling its wrong softmax positionally scored 0 of 20 on the student's side, 20 on the instructor's)."""
        if q.get("new_args") is not None or question.get("new_args") is not None:
            return False  # (a class's forward: its construction is compared as it was written)
        ours, theirs = (_bound(self.signatures.get(q.get("name")), one) for one in (q, question))
        return ours is not None and theirs is not None and self._same([ours, q.get("params")],
                                                                       [theirs, question.get("params")])

    def backward(self, record, grads: list) -> list:
        for recorded, found in record.get("back", ()):
            if self._same(recorded, grads):
                return found
        raise NotOnRecord(f"this gradient through {record['q'].get('name')} is not on record")

    def _same(self, ours, theirs) -> bool:
        """Whether two questions' values agree (tensors within the dtype's tolerance)."""
        import torch

        if isinstance(ours, torch.Tensor) or isinstance(theirs, torch.Tensor):
            if not (isinstance(ours, torch.Tensor) and isinstance(theirs, torch.Tensor)) \
                    or ours.shape != theirs.shape or ours.dtype != theirs.dtype:
                return False
            if ours.dtype == torch.bool or not ours.is_floating_point():
                return torch.equal(ours.cpu(), theirs.cpu())
            rule = self.tolerance(str(ours.dtype).removeprefix("torch."))
            return bool(torch.allclose(theirs.cpu(), ours.cpu(), rtol=rule.rtol, atol=rule.atol, equal_nan=True))
        if isinstance(ours, (list, tuple)) and isinstance(theirs, (list, tuple)):
            return len(ours) == len(theirs) and all(self._same(a, b) for a, b in zip(ours, theirs))
        if isinstance(ours, dict) and isinstance(theirs, dict):
            return ours.keys() == theirs.keys() and all(self._same(ours[k], theirs[k]) for k in ours)
        return ours == theirs


class Recorder:
    """Records what the reference's helpers answer while the public suites run on the reference (``grade
    release --out``): each helper of the reference modules is put behind a stand-in that asks
    :class:`LiveAnswers` in this process, which keeps every question and answer under the running check."""

    def __init__(self, references: dict, helpers, device: str):
        self.references, self.helpers, self.device = references, tuple(helpers), device
        self.calls: dict[str, list] = {}
        self.check = ""
        self.installed = False
        self.replaced: list[tuple[dict, str, object]] = []

    def install(self) -> None:
        from grader.inside.stand_in import stand_ins

        self.installed = True
        originals = {}
        for module in self.references.values():
            for name in self.helpers:
                if callable(getattr(module, name, None)) and name not in originals:
                    originals[name] = getattr(module, name)
        kinds = {name: "class" if isinstance(own, type) else "function" for name, own in originals.items()}
        placed = stand_ins(self._ask(originals), kinds, self.device)
        for module in self.references.values():
            for name, own in originals.items():
                if module.__dict__.get(name) is own:
                    self.replaced.append((module.__dict__, name, own))
                    module.__dict__[name] = placed[name]

    def _ask(self, originals):
        answers = LiveAnswers(originals, self.device, [], one_run=False)  # the reference's own calls, every check
        oracle = Oracle(answers, originals, {name: 1 << 30 for name in originals})

        def ask(question: dict) -> dict:
            if answers.record is not self.calls.get(self.check):  # a new check: its own budgets (time, calls), as a
                # verification run's; one oracle's time over a whole recording refused the reference itself under load
                oracle.spent, oracle.used = 0.0, {}
            answers.record = self.calls.setdefault(self.check, [])
            return oracle(question)

        return ask

    def restore(self) -> None:
        for namespace, name, own in reversed(self.replaced):
            namespace[name] = own
        self.replaced = []


def budget(helpers, records: list | None) -> dict[str, int]:
    """How many calls of each helper one verification run may ask: from the reference (``records`` None),
    :data:`LIVE_CALLS`; from a recording, a small multiple of the calls the reference made on the check."""
    if records is None:
        return {name: LIVE_CALLS for name in helpers}
    counts = {name: sum(1 for r in records if r["q"].get("name") == name) for name in helpers}
    return {name: max(RECORDED_MINIMUM, RECORDED_FACTOR * count) for name, count in counts.items()}


def _bound(signature, question: dict) -> dict | None:
    """``question``'s arguments bound to ``signature`` (an ``inspect.Signature``), defaults applied, a ``dim`` as
    counted from the start of the first argument's dimensions; None where they do not bind."""
    import torch

    if signature is None:
        return None
    try:
        bound = signature.bind(*(question.get("args") or ()), **(question.get("kwargs") or {}))
    except TypeError:
        return None
    bound.apply_defaults()
    values = dict(bound.arguments)
    first, dim = next(iter(values.values()), None), values.get("dim")
    if isinstance(dim, int) and not isinstance(dim, bool) and isinstance(first, torch.Tensor) and \
            -first.dim() <= dim < first.dim():
        values["dim"] = dim % first.dim()
    return values


def signatures_in(paths) -> dict:
    """The signatures of the functions the files ``paths`` (the student's modules, a notebook laid over one) define
    at module level, read from their code, never run: name -> ``inspect.Signature``. A function with ``*args``,
    ``**kwargs``, keyword-only or positional-only parameters, or a default that is no literal, is left out (its
    calls are compared as they were written)."""
    import ast
    import inspect

    from grader.grading.observable import kept_code

    found: dict = {}
    for path in paths:
        try:
            tree = ast.parse(kept_code(path)[0])
        except Exception:  # noqa: BLE001 - what cannot be read gives no signature
            continue
        for node in tree.body:
            if not isinstance(node, ast.FunctionDef):
                continue
            spec = node.args
            try:
                if spec.vararg or spec.kwarg or spec.kwonlyargs or spec.posonlyargs:
                    raise ValueError(node.name)
                defaults = [ast.literal_eval(d) for d in spec.defaults]
            except ValueError:
                found.pop(node.name, None)
                continue
            names = [a.arg for a in spec.args]
            given = dict(zip(names[len(names) - len(defaults):], defaults))
            found[node.name] = inspect.Signature([
                inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=given.get(name,
                                  inspect.Parameter.empty)) for name in names])
    return found
