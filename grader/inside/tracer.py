"""What a worker observes of a graded call: the torch functions and the aten operators it reaches,
through a torch function mode and a dispatch mode entered for the call (the operators' rules, sizes
and widths are grader/inside/operators.py). Runs in the worker, and in the grading process to count
the reference's operations (grader/grading/operation_count.py)."""
from __future__ import annotations

import sys

from grader.inside.operators import (_at_widest, _complex, _one_entry, _operator_facts, _overlapping, _tensors, _unknown,
                                     op_name)

_getframe = sys._getframe  # taken before any student's code is imported
_ACCESSOR = type(object().__str__)  # method-wrapper: what torch hands a mode for a tensor's property
_getprofile, _setprofile = sys.getprofile, sys.setprofile

# what a watched call that touched an inference tensor ran (red team round 11): under torch.inference_mode an
# operator torch would split into smaller ones (layer_norm, cross_entropy, item) reaches the dispatcher whole,
# its insides unseen, and a tensor made there keeps that when the mode is off
INFERENCE_TENSORS = "operations on inference tensors (made under torch.inference_mode), which the grader sees only whole"
# a backward pass run inside a watched call: its hooks run within Tensor.backward's handling, where torch has
# switched the watching of torch functions off (red team round 12: a forbidden call in a tensor hook)
BACKWARD_PASS = "a backward pass (Tensor.backward), whose hooks the grader cannot watch"
_BACKWARDS = frozenset({"backward", "grad"})  # Tensor.backward, torch.autograd.backward, torch.autograd.grad
# the student's own code run by torch while it handles a torch function, where torch has switched the watching of
# torch functions off (red team round 15: a defaultdict's factory, called by copy.deepcopy's memo inside
# Tensor.__deepcopy__, ran F.multi_head_attention_forward unseen)
CALLED_BACK = "code of yours that torch called back while it ran {} (a factory, a key, a memo's method), where " \
              "the grader's watching of torch functions is off"


class ForbiddenOperation(Exception):
    def __init__(self, name):
        super().__init__(f"{name} may not be used in this exercise")
        self.name = name


class Tracer:
    """Observes a graded call at two levels. Torch functions (``torch.softmax``, ``F.scaled_dot_product_attention``)
    are seen before they decompose; aten operators are seen as the dispatcher runs them, whatever called
    them: ``torch.ops.aten.*`` with any overload, TorchScript and traced functions, ``torch.compile``.
    Counts and the largest result come from the dispatcher; a forbidden name at either level stops the call.
    A measure also keeps the widest reduction: the most entries one operator combined into one entry of
    its result (see :func:`rule_of`), and that operator's name."""

    def __init__(self, forbidden: frozenset[str], measure: bool = True):
        functions, operators = _mode_classes()
        self.forbidden_names = forbidden
        self.count = 0
        self.names: dict[str, int] = {}
        self.forbidden: list[str] = []
        self.max_numel = 0
        self.max_operand = 0  # with measure: the most entries one operator read from one of its tensors
        self.measure = measure
        self.widest = 0
        self.widest_op = ""
        # with measure: the widest reduction by an operator whose result kept more than one entry (05's key
        # tiles: a test of a whole tile reduces it to one entry; a softmax over every key of a query tile, or a
        # maximum over them folded into dimensions of a block each, keeps an entry a query)
        self.widest_along = 0
        self.widest_along_op = ""
        # with measure: each reducing operator's widest reduction, by its aten name (06's window: a softmax, a
        # maximum or a sum over the keys, told from a product's sum over the features by the operator)
        self.widths: dict[str, int] = {}
        # with measure: each operator's largest result, by its aten name (06's keys-once rule: a projection, an
        # addmm or mm, of every input kept, where the right call projects the new tokens only), and a matrix
        # product's by its name and the length it contracted too ("bmm@16": a projection of 16 features, told from
        # attention's scores, which contract a head's features, whatever operator torch runs it as)
        self.sizes: dict[str, int] = {}
        # a whole tensor reduced to one true-or-false entry, not yet read into Python: id -> (width, name). Read
        # there (``if not torch.isfinite(x).all():``), it is a test of the input, which decides what runs and
        # adds nothing to the output; its width is not a reduction the block rules weigh (a learner's input
        # checks lost 30 of 05's points). Never read, it counts when the call ends (settle). What Python reads
        # is counted apart (``_local_scalar_dense``: 05's values read into Python, one a block of each row).
        # Each is held until the call ends, so that no other tensor takes its id.
        self.tests: dict[int, tuple[int, str, object]] = {}
        # a reduction to one entry that is not true-or-false (a maximum, a sum, a product of two vectors), not yet
        # read into Python: id -> (width, name). Read there, it is one of the values Python reads (counted apart);
        # never read, it counts in ``widest_along`` when the call ends (settle), as wide as it is: a loop over
        # single queries that reduces every key of each to one entry is no key tile (red team round 21b, b02)
        self.ones: dict[int, tuple[int, str, object]] = {}
        self.elsewhere: str | None = None  # where work of the call ran unseen (see watch_threads)
        self.as_text: dict | None = None  # a tensor's values written out as text during a measure (watch_text)
        # filename -> whether it is the student's code (set by the worker): the student's code is watched for
        # while torch handles a torch function (CALLED_BACK); None: not watched for
        self.students = None
        self.handling = ""  # the torch function being handled, while the student's code is watched for
        self._theirs: dict = {}  # code object -> whether it is the student's (self.students of its file)
        self.watch = self.called_back  # the profile function, one object: Operators knows it is this one
        # the student's own helpers the call uses (set by the worker: their code objects -> names; see attribute):
        # each operator is counted as the innermost helper's on the stack when it runs, or as the call's own
        self.within: dict = {}
        self.entry = None  # the frame that entered the tracer: the stack above it is the worker's
        self.inside: dict[str, int] = {}  # helper name -> operators run inside its frames
        self._frames: dict[str, dict] = {}  # helper name -> id -> its frames that ran one (kept: ids not reused)
        # each view costs a Python call per operation (the dispatcher's about 6 us, the functions' about 4):
        # taken only where needed. The functions' view refuses names and counts nothing: a measure alone
        # needs the dispatcher's only; a call with neither is watched by nothing but its deadline
        self.modes = (functions(self), operators(self)) if forbidden else (operators(self),) if measure else ()

    def called_back(self, frame, event, arg) -> None:
        """The profile function while a torch function is handled: the first call into the student's code
        (``self.students`` of its file) is noted as work the watching did not see (CALLED_BACK)."""
        if event != "call" or self.elsewhere is not None:
            return
        code = frame.f_code
        theirs = self._theirs.get(code)
        if theirs is None:
            theirs = self._theirs[code] = bool(self.students(code.co_filename))
        if theirs:
            self.elsewhere = CALLED_BACK.format(self.handling)

    def attribute(self, frame) -> None:
        """The operator running now, from ``frame`` outwards: the innermost frame of a helper's code on the stack
        (``self.within``) owns it, counted there with that frame (one call of the helper); none, the call's own.
        Frames are the interpreter's: an observed file names neither ``sys`` nor a frame's attributes
        (grader.grading.observable), so its code cannot pose as a helper nor a helper as its caller (red team
        round 24d: a caller's loop charged to a helper that loops on the grader's own calls)."""
        within, entry = self.within, self.entry
        while frame is not None and frame is not entry:
            name = within.get(frame.f_code)
            if name is not None:
                self.inside[name] = self.inside.get(name, 0) + 1
                self._frames.setdefault(name, {}).setdefault(id(frame), frame)
                return
            frame = frame.f_back

    def helpers_inside(self) -> dict:
        """Each helper's share of the call: name -> [operators run inside it, its calls that ran any]."""
        return {name: [self.inside.get(name, 0), len(self._frames.get(name, ()))] for name in set(self.within.values())}

    def refuse(self, bare: str, unknown: bool = False) -> None:
        """Refuse ``bare`` where it is forbidden; ``unknown``: an operator the grader cannot see into (see
        grader.inside.operators._unknown), refused wherever something is forbidden."""
        if unknown:
            bare = f"{bare} (an operator whose inside the grader cannot watch: it may compute what is forbidden)"
        if unknown or bare in self.forbidden_names:
            if bare not in self.forbidden:
                self.forbidden.append(bare)
            raise ForbiddenOperation(bare)

    def __enter__(self):
        self.entry = _getframe(1)
        for mode in self.modes:
            mode.__enter__()
        return self

    def __exit__(self, *exc):
        try:  # what the call's watching held is let go while the modes are on: a finaliser of the student's that
            for _ in range(4):  # it sets off (a generator kept on a tensor) is watched as the call is (red team
                if not self.holding():  # round 27b), and what that one's own operations keep, in turn
                    break
                self.settle()
        finally:
            for mode in reversed(self.modes):
                mode.__exit__(*exc)
            self.entry = None
        self.settle()  # and what that finaliser's own operations left
        return False

    def holding(self) -> bool:
        """Whether the watching still holds anything the call made (a test, an entry, a helper's frame)."""
        return bool(self.tests or self.ones) or any(f is not None for kept in self._frames.values() for f in kept.values())

    def settle(self) -> None:
        """The tests never read into Python count as the reductions they are."""
        for width, name, _ in self.tests.values():
            if width > self.widest:
                self.widest, self.widest_op = width, name
        for width, name, _ in self.ones.values():
            if width > self.widest_along:
                self.widest_along, self.widest_along_op = width, name
        self.tests.clear()
        self.ones.clear()
        self._frames = {name: dict.fromkeys(frames) for name, frames in self._frames.items()}  # counted, let go


_MODES: tuple = ()
PRODUCTS = frozenset({"mm", "addmm", "bmm", "baddbmm", "matmul", "_addmm_activation", "addmv", "mv", "linear"})


def _mode_classes() -> tuple:
    """The two torch modes a Tracer enters, made once per process."""
    global _MODES
    if _MODES:
        return _MODES
    import torch
    from torch.overrides import TorchFunctionMode, resolve_name
    from torch.utils._python_dispatch import TorchDispatchMode

    names: dict = {}  # id(torch function) -> (it, its bare name): resolve_name costs a warnings filter a call
    accessors: dict = {}  # (id(descriptor), slot) -> (the descriptor, its bare name): see __torch_function__
    operators: dict = {}  # id(operator) -> (it, its name, its rule_of): its packet's name costs a property a call

    class Functions(TorchFunctionMode):
        def __init__(self, tracer: Tracer):
            super().__init__()
            self.tracer = tracer

        def __torch_function__(self, func, types, args=(), kwargs=None):
            known = names.get(id(func))  # by identity: no object of the student's can pose as another
            if known is not None and known[0] is func:
                bare = known[1]
            elif type(func) is _ACCESSOR:  # a tensor's property read or set (x.shape, x.grad = None): a new
                # method-wrapper on every access, named by its descriptor and slot, which are kept
                key = (id(func.__self__), func.__name__)
                known = accessors.get(key)
                if known is not None and known[0] is func.__self__:
                    bare = known[1]
                else:
                    bare = op_name(resolve_name(func) or func.__name__)
                    accessors[key] = (func.__self__, bare)
            else:
                bare = op_name(resolve_name(func) or getattr(func, "__name__", None) or repr(func))
                names[id(func)] = (func, bare)  # the function is kept: its id is never reused
            tracer = self.tracer
            tracer.refuse(bare)
            if bare in _BACKWARDS and tracer.elsewhere is None:
                tracer.elsewhere = BACKWARD_PASS  # the call is refused (worker.Elsewhere)
            if tracer.students is None or sys.getprofile() is not None:
                return func(*args, **(kwargs or {}))
            tracer.handling = bare
            sys.setprofile(tracer.watch)  # the student's code run from inside func is seen
            try:
                return func(*args, **(kwargs or {}))
            finally:
                sys.setprofile(None)

    class Operators(TorchDispatchMode):
        def __init__(self, tracer: Tracer):
            super().__init__()
            self.tracer = tracer

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            # one Python call per operator of a measured call: kept lean (the mode's own cost is about as much).
            # Its own code runs with the profile function that watches a torch function's handling (Functions)
            # set aside: the watching is for code of the student's that torch calls back, and none runs here (an
            # observed file defines no __del__ nor tensor subclass); Python run under a profile function is not
            # specialised, which made every operator of a call with forbidden names three times as slow
            tracer = self.tracer
            watching = _getprofile() is tracer.watch
            if watching:
                _setprofile(None)
            try:
                known = operators.get(id(func))
                if known is None or known[0] is not func:  # kept: its id is never reused
                    known = operators[id(func)] = (func, *_operator_facts(func), getattr(func, "_op", func))
                _, name, rule, run = known  # run: the operator itself, without OpOverload.__call__'s frame
                if tracer.forbidden_names and (name in tracer.forbidden_names or rule is _unknown
                                               and next(_tensors(args), None) is not None
                                               and not _inference(args, tracer)):
                    tracer.refuse(name, unknown=rule is _unknown)  # (one of no tensor, promote_types, computes none)
                tracer.count += 1
                names = tracer.names
                names[name] = names.get(name, 0) + 1
                if tracer.within:
                    tracer.attribute(_getframe(1))
                if kwargs:
                    result = run(*args, **kwargs)
                else:
                    kwargs = {}
                    result = run(*args)
                numel = result.numel() if isinstance(result, Tensor) else -1
                if numel > tracer.max_numel:
                    tracer.max_numel = numel
                elif numel < 0 and isinstance(result, (tuple, list)):
                    for item in result:
                        if isinstance(item, Tensor) and item.numel() > tracer.max_numel:
                            tracer.max_numel = item.numel()
                tensors = []  # its operands, a list's included: read once
                for value in args:
                    if isinstance(value, Tensor):
                        tensors.append(value)
                    elif isinstance(value, (list, tuple)):
                        tensors.extend(item for item in value if isinstance(item, Tensor))
                if tracer.elsewhere is None:
                    for t in tensors:
                        if t.is_inference():
                            tracer.elsewhere = INFERENCE_TENSORS  # the call is refused (worker.Elsewhere)
                            break
                if tracer.measure:
                    sizes = tracer.sizes
                    if numel > sizes.get(name, 0):
                        sizes[name] = numel
                    for t in tensors:
                        if t.numel() > tracer.max_operand:
                            tracer.max_operand = t.numel()
                    width = 0
                    if rule is not None:
                        try:
                            width = rule(args, kwargs, result)
                        except Exception:  # noqa: BLE001 - arguments no rule foresaw: taken at their widest
                            width = _at_widest(args, kwargs, result)
                    if name[-1] == "_" and args and _overlapping(args[0]):
                        width = max(width, args[0].numel())
                    if width and _complex(tensors):
                        width *= 2
                    if width > tracer.widths.get(name, 0):
                        tracer.widths[name] = width
                    if numel >= 0 and name in PRODUCTS:  # a product's result by what it contracted too
                        key = f"{name}@{width}"
                        if numel > sizes.get(key, 0):
                            sizes[key] = numel
                    read = False  # a test read into Python here
                    if name == "_local_scalar_dense" and args:
                        test = tracer.tests.get(id(args[0]))
                        if test is not None and test[2] is args[0]:
                            del tracer.tests[id(args[0])]  # a test, read: it decided what runs
                            read = True
                        one = tracer.ones.get(id(args[0]))
                        if one is not None and one[2] is args[0]:
                            del tracer.ones[id(args[0])]  # read into Python: one of the values read there
                    if width > tracer.widest or width > tracer.widest_along:
                        one_entry = _one_entry(result)
                        test = one_entry and getattr(result, "dtype", None) == torch.bool
                        if width > tracer.widest and not read:
                            if test:
                                tracer.tests[id(result)] = (width, name, result)  # a test, unless never read (settle)
                            else:
                                tracer.widest, tracer.widest_op = width, name
                        if width > tracer.widest_along:
                            if not one_entry:
                                tracer.widest_along, tracer.widest_along_op = width, name
                            elif not test:  # (a test is weighed by its growth alone)
                                tracer.ones[id(result)] = (width, name, result)  # unless it is read (settle)
                return result
            finally:
                if watching:
                    _setprofile(tracer.watch)

    Tensor = torch.Tensor
    _MODES = (Functions, uncompiled(Operators))
    return _MODES


def _inference(args, tracer) -> bool:
    """Whether the call is refused as work the tracer did not see whole already, or an operand is an inference
    tensor, which reaches the dispatcher whole (cross_entropy as one operator): that says why better than the
    operator's name."""
    import torch

    if any(isinstance(a, torch.Tensor) and a.is_inference() for a in args):
        tracer.elsewhere = tracer.elsewhere or INFERENCE_TENSORS
    return tracer.elsewhere is not None  # (refused as work seen elsewhere already: an inference tensor's result)


def uncompiled(mode_class):
    """``mode_class`` (a TorchDispatchMode) with its ``__torch_dispatch__`` called as it is: torch wraps it
    to keep torch.compile out of it, importing torch._dynamo (a second and a half, and memory) at its first
    call, and the wrapper is a Python call of its own for every operator; neither the worker (see
    switch_off_compilers) nor the grader's counting of the reference (grader.grading.operation_count) compiles
    anything."""
    raw = getattr(mode_class.__torch_dispatch__, "__wrapped__", None)
    if raw is not None:  # the wrapper itself gone too: one Python call less an operator
        mode_class.__torch_dispatch__ = raw
    return mode_class


def make_tracer(forbidden: frozenset[str], measure: bool = True) -> Tracer:
    return Tracer(forbidden, measure)
