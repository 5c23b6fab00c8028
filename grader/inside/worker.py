"""The worker: the only process that imports and runs student code.

It is forked from the zygote (see :mod:`grader.sandbox.client`), locks itself down (own session, memory
limit, scrubbed environment, a sys.path without the reference), imports the submission, then serves
requests: construct a module, call a function or method on the tensors the grader sent, and reply
with plain tensors and facts it observed (op counts, forbidden ops, mutated inputs, gradients).
"""
from __future__ import annotations

import gc
import importlib.machinery
import importlib.util
import os
import sys
import traceback
import types

from grader.inside import heap, protocol
from grader.inside.protocol import HandleRef, WorkerSpec, clip, flatten, mapped
from grader.inside.importer import import_submission, lock_down
from grader.inside.operators import _operator_facts, op_name
from grader.inside.tracer import ForbiddenOperation, make_tracer, uncompiled
from grader.inside.stand_in import stand_ins

MAX_FRAMES = 20  # of a student's traceback, the last ones


# --- other threads and processes during a graded call ---------------------------------------------
# Torch's modes are per thread: a Tracer entered in the thread that runs a graded call sees nothing that
# another thread computes. A correct solution never needs one, so a watched call (one that forbids
# something or is measured) is refused when any operation of it may have run elsewhere: in a thread the
# student's code started (at import, fed through a queue, or during the call: every thread started from
# Python runs under sentries that report its torch operations while a watched call is in progress), in a
# thread the worker could not give sentries to (one with Python frames while the call starts or ends:
# started from C), or in a process started during the call. The calling thread's own cost is unchanged.
_CALL: list = [None]  # the Tracer of the watched call in progress, for the sentries and process starters
_MAIN: list = [None]  # the ident of the thread that serves requests
# what starts a process from Python (subprocess, os.popen and multiprocessing's spawn and forkserver all
# go through _posixsubprocess.fork_exec; its fork context and pty.fork through os.fork and os.forkpty).
# Wrapped rather than audited: an audit hook is a Python call on every id(), which the tracer makes per
# operation
_PROCESSES = {"os": ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system", "spawnv", "spawnve", "spawnvp",
                     "spawnvpe"), "_posixsubprocess": ("fork_exec",)}


class Elsewhere(Exception):
    """A watched call some of whose work may have run where the tracer cannot see it."""

    def __init__(self, where: str):
        super().__init__(f"your code ran {where} during a graded call; the grader must see every operation, so "
                         "a graded call must compute in the thread that called it, on ordinary tensors (no threads, "
                         "thread pools, processes, backward passes or torch.inference_mode)")


def watch_threads() -> None:
    """Give every thread started from Python, by ``threading`` or ``_thread``, sentries for its whole
    life, and refuse starting a process during a watched call. Called once, before the student's import."""
    import _thread
    import threading

    _MAIN[0] = _thread.get_ident()
    start = _thread.start_new_thread

    def start_new_thread(function, args, kwargs=None, /):
        return start(_sentried, (function, args, {} if kwargs is None else kwargs))

    _thread.start_new_thread = _thread.start_new = threading._start_new_thread = start_new_thread
    joinable = getattr(_thread, "start_joinable_thread", None)  # Python 3.13's threading starts threads so
    if joinable is not None:
        def start_joinable_thread(function, *args, **kwargs):
            return joinable(lambda: _sentried(function, (), {}), *args, **kwargs)

        _thread.start_joinable_thread = threading._start_joinable_thread = start_joinable_thread
    for module_name, names in _PROCESSES.items():
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        for name in names:
            if hasattr(module, name):
                setattr(module, name, _refused_in_a_call(getattr(module, name), f"{module_name}.{name}"))


def _refused_in_a_call(start, name: str):
    """``start`` (a function that starts a process), refused while a watched call is in progress."""
    def watched(*args, **kwargs):
        tracer = _CALL[0]
        if tracer is not None:
            tracer.elsewhere = tracer.elsewhere or f"another process ({name})"
            raise Elsewhere(tracer.elsewhere)
        return start(*args, **kwargs)
    return watched


def _sentried(function, args, kwargs):
    """A thread's body: the student's function, under sentries that report its torch operations to the
    watched call in progress (see :func:`_sentry_classes`)."""
    functions, operators = _sentry_classes()
    with functions(), operators():
        return function(*args, **kwargs)


def _seen_elsewhere(bare: str) -> None:
    """A sentry's report: ``bare`` ran in this (non-serving) thread. Outside a watched call, nothing."""
    tracer = _CALL[0]
    if tracer is None:
        return
    import threading

    if bare in tracer.forbidden_names and bare not in tracer.forbidden:
        tracer.forbidden.append(bare)  # the op runs: raising here could leave the calling thread waiting
    if tracer.elsewhere is None:
        tracer.elsewhere = f"torch operations in another thread ({threading.current_thread().name}: {bare})"


def strangers() -> str | None:
    """A thread with Python frames that neither serves requests nor runs under sentries (started from C)."""
    for ident, frame in sys._current_frames().items():
        if ident == _MAIN[0]:
            continue
        while frame.f_back is not None:
            frame = frame.f_back
        if frame.f_code is not _sentried.__code__:
            return f"code in a thread the grader cannot watch (one not started by threading: {frame.f_code.co_name})"
    return None


_SENTRIES: tuple = ()


def _sentry_classes() -> tuple:
    global _SENTRIES
    if _SENTRIES:
        return _SENTRIES
    from torch.overrides import TorchFunctionMode, resolve_name
    from torch.utils._python_dispatch import TorchDispatchMode

    class FunctionSentry(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            if _CALL[0] is not None:
                _seen_elsewhere(op_name(resolve_name(func) or getattr(func, "__name__", None) or repr(func)))
            return func(*args, **(kwargs or {}))

    class OperatorSentry(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if _CALL[0] is not None:
                _seen_elsewhere(_operator_facts(func)[0])
            return func(*args, **(kwargs or {}))

    _SENTRIES = (FunctionSentry, uncompiled(OperatorSentry))
    return _SENTRIES


# --- a tensor's values as text during a measured call ---------------------------------------------
# str(t), repr(t), f"{t}" and print(t) hand every value of t to Python at once, as text the student's code
# can read back (float() of its pieces) and compute with in plain Python, where no operation is counted
# (torch formats with every mode switched off, so not even the formatting's own operators are seen): a
# Python loop would pass for vectorised, a whole row for a block. A measure during which any tensor was
# written out, even one value (repr of each element of a loop, round 5), is not observed
# (grader.grading.fixture.Grade.call says so). f"{t:.3f}" of a 0-dimensional tensor is .item(), an
# operator, counted. All formatting of a tensor goes through torch._tensor_str._str; an observable file
# names nothing private, so cannot undo this.
def watch_text(spec: WorkerSpec) -> None:
    """Note, in the measured call in progress, the first tensor written out as text and where. Called once,
    before the student's import."""
    import torch._tensor_str as tensor_str

    written = tensor_str._str

    def _str(self, *args, **kwargs):
        tracer = _CALL[0]
        if tracer is not None and tracer.measure and tracer.as_text is None:
            tracer.as_text = {"values": int(self.numel()), "line": _student_line(spec)}
        return written(self, *args, **kwargs)

    tensor_str._str = _str


def _student_line(spec: WorkerSpec) -> str:
    """The innermost line of the student's code on the stack, as the student knows the file."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if _students(filename, spec):
            return f"{_shown(filename, spec)}, line {frame.f_lineno}"
        frame = frame.f_back
    return ""


def _trampoline(free: int, key: str):
    """A code object that calls ``globals()[key]`` with its arguments, with ``free`` free variables (as many as the
    function it is put in has closure cells: Python requires it; they are never read)."""
    names = [f"_cell{i}" for i in range(free)]
    source = ("def _outer():\n" + "".join(f"    {n} = None\n" for n in names)
              + "    def stand_in(*args, **kwargs):\n"
              + (f"        ({', '.join(names)},)\n" if names else "")
              + "        return _STAND_IN_(*args, **kwargs)\n    return stand_in\n")
    namespace: dict = {}
    exec(compile(source, "<stand-in>", "exec"), namespace)  # noqa: S102 - the grader's own text
    code = namespace["_outer"]().__code__
    return code.replace(co_names=tuple(key if name == "_STAND_IN_" else name for name in code.co_names))


def _computing(obj, depth: int = 0):
    """The plain function that computes when ``obj`` is called: ``obj`` itself, what ``__wrapped__`` names (a
    decorator made with functools.wraps), a partial's function, a callable object's ``__call__``; None if none."""
    import functools

    while depth < 8:
        depth += 1
        try:
            if isinstance(obj, types.FunctionType):
                wrapped = obj.__dict__.get("__wrapped__")
                if wrapped is None:
                    return obj
                obj = wrapped
            elif isinstance(obj, functools.partial):
                obj = obj.func
            elif isinstance(obj, types.MethodType):
                obj = obj.__func__
            elif obj is not None and not isinstance(obj, type) and callable(obj):
                obj = type(obj).__call__
            else:
                return None
        except Exception:  # noqa: BLE001 - the student's object: no function the grader can follow
            return None
    return None


def _held_by(obj):
    """The one student's function a wrapper holds (a decorator's: a function's closure, an object's attributes, red
    team round 25b), else None."""
    try:
        held = ([cell.cell_contents for cell in obj.__closure__ or () if _filled(cell)]
                if isinstance(obj, types.FunctionType) else list(vars(obj).values()))
    except Exception:  # noqa: BLE001 - the student's object: nothing the grader can follow
        return None
    functions = [_computing(value) for value in held if callable(value) and not isinstance(value, type)]
    functions = [f for f in functions if f is not None]
    return functions[0] if len(functions) == 1 else None


def _filled(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:  # an empty cell
        return False
    return True


# what a class helper's stand-in puts into the student's own class (a copy's state carries how it was built)
STAND_IN_METHODS = ("__init__", "forward", "__getstate__", "__setstate__")


def _students(filename: str, spec: WorkerSpec) -> bool:
    """Whether code of ``filename`` is the student's: their working copy, or a cell of their notebook."""
    return filename.startswith(spec.student_root) or ".ipynb [cell " in filename


def switch_off_compilers() -> None:
    """TorchScript and ``torch.compile`` run the student's code eagerly, where the tracer sees every
    call by name: ``torch.jit.script``/``trace`` give back what they were given, ``torch.compile`` too.
    A saved TorchScript program (``torch.jit.load``) is code the tracer could not name: refused."""
    import torch

    def unchanged(obj=None, *args, **kwargs):
        return obj if obj is not None else (lambda fn: fn)

    def refused(*args, **kwargs):
        raise ForbiddenOperation("torch.jit.load")

    os.environ["TORCH_COMPILE_DISABLE"] = "1"
    for name in ("script", "trace", "trace_module", "optimize_for_inference", "freeze"):
        if hasattr(torch.jit, name):
            setattr(torch.jit, name, unchanged)
    torch.jit.load = refused
    torch.compile = unchanged


class OutputTooLarge(Exception):
    pass


def _containers(value):
    """The lists and tuples of a student's return value, as plain lists and tuples, read as the base type
    stores them: a subclass's own ``__iter__`` (a NamedTuple's), which the reading of the reply would
    otherwise call after the tracer has stopped watching, never runs (round 6 of issue 44: compute_rope_params
    returned a NamedTuple whose __iter__ built the tables in a Python loop, and its count was 2)."""
    if isinstance(value, list):
        return [_containers(item) for item in list.__iter__(value)]
    if isinstance(value, tuple):
        return tuple(_containers(item) for item in tuple.__iter__(value))
    return value


def _plain(value):
    """Encode a student's return value as plain data: tensors detached to plain tensors, where they
    are (the encoder notes each tensor's device as it copies the bytes)."""
    import torch

    if isinstance(value, torch.Tensor):
        plain = value.detach()
        if type(plain) is not torch.Tensor:
            plain = plain.as_subclass(torch.Tensor)
        return plain.clone()
    if isinstance(value, (list, tuple)):
        return {"__sequence__": [_plain(item) for item in value]}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, torch.dtype):
        return {"__dtype__": str(value)}
    return {"__unsupported__": type(value).__qualname__}


def _shown(filename: str, spec: WorkerSpec) -> str:
    for copy, original in spec.display_map:
        if filename.startswith(copy + os.sep):
            return original + filename[len(copy):]
    return filename


def _student_traceback(exc: BaseException, spec: WorkerSpec) -> str:
    frames = [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if _students(frame.filename, spec)
    ]
    lines = [f"  ... {len(frames) - MAX_FRAMES} earlier frames of your code"] if len(frames) > MAX_FRAMES else []
    for frame in frames[-MAX_FRAMES:]:  # a deep recursion shows where it ended
        lines.append(clip(f'  File "{_shown(frame.filename, spec)}", line {frame.lineno}, in {frame.name}', 300))
        if frame.line:
            lines.append(clip(f"    {frame.line.strip()}", 300))
    if isinstance(exc, SyntaxError) and exc.filename:
        shown = _shown(str(exc.filename), spec)
        lines.append(clip(f'  File "{shown}", line {exc.lineno}', 300))
        if exc.text:
            lines.append(clip(f"    {exc.text.strip()}", 300))
    return clip("\n".join(lines + [_describe_exception(exc)]), 3 * protocol.MESSAGE_LIMIT)


def _describe_exception(exc: BaseException) -> str:
    try:
        text = str(exc)
    except BaseException:  # noqa: BLE001 - a hostile __str__ must not break the worker
        text = "<the exception's message could not be shown>"
    text = clip(text)
    name = type(exc).__name__ if isinstance(type(exc).__name__, str) else "Exception"
    return f"{name}: {text}" if text else name


# --- where the code was when time ran out ------------------------------------------------------------
class StackWatch:
    """Writes every thread's stack to ``STACK_FILE`` (in the worker's folder) shortly before the
    grader's deadline for the running call, so a timeout can say where the student's code was."""

    def __init__(self):
        import faulthandler
        import signal

        self.file = open(protocol.STACK_FILE, "w")  # noqa: SIM115 - open for the worker's life
        # written by faulthandler's own signal handler, in C: it needs no Python code to run, so a call
        # stuck inside one long torch operation is seen too. Armed by a timer, one system call a request
        # (faulthandler.dump_traceback_later starts and joins a thread each time: 0.1 ms a request)
        faulthandler.register(signal.SIGALRM, file=self.file, all_threads=True, chain=False)

    def arm(self, seconds) -> None:
        import signal

        if isinstance(seconds, (int, float)) and seconds > protocol.STACK_MARGIN_S:
            fd = self.file.fileno()  # faulthandler writes to the descriptor: its offset says whether it wrote
            if os.lseek(fd, 0, os.SEEK_CUR):
                os.lseek(fd, 0, os.SEEK_SET)
                os.ftruncate(fd, 0)
            signal.setitimer(signal.ITIMER_REAL, seconds - protocol.STACK_MARGIN_S)

    def disarm(self) -> None:
        import signal

        signal.setitimer(signal.ITIMER_REAL, 0)


def warm_device(device: str) -> None:
    """On a GPU, the process's CUDA context made now, while it waits for its first request: its workers are
    asked for ahead (grader.grading.pytest_session.Student.start_ahead), so the context (a large part of a
    worker's first call there) is made while the grader grades the assignments before it. Nothing on the
    CPU; where CUDA cannot start here, the first call that needs it says so, as before."""
    if not device.startswith("cuda"):
        return
    import torch

    try:
        torch.empty(1, device=device)
    except Exception:  # noqa: BLE001 - reported by the first call that needs the device
        pass


def stop_hung(module: types.ModuleType, name: str) -> None:
    """Make the module's function ``name``, which ran out of time in an earlier check, fail at once:
    an exercise that uses it then gets an error naming it instead of waiting out its own time limit."""
    if isinstance(module.__dict__.get(name), types.FunctionType):
        def stopped(*args, **kwargs):
            raise TimeoutError(f"{name}() ran out of time in an earlier check (see its feedback for where it was "
                               "stuck), so it was not run again")

        setattr(module, name, stopped)


# --- serving ---------------------------------------------------------------------------------------
class Server:
    def __init__(self, spec: WorkerSpec, module, watch: StackWatch, ask=None):
        self.spec = spec
        self.ask = ask  # one question to the grader, its answer back (a stand-in's call: grader.inside.stand_in)
        self.module = module
        self.watch = watch
        self.handles: dict[int, object] = {}
        self.replaced: list[tuple[dict, str, object]] = []  # (a module's namespace, name, the student's own)
        self.swapped: list[tuple] = []  # (the student's function, its own code, its globals, the stand-in's key)
        self.remade: list[tuple] = []  # (the student's class, what its own __dict__ held of STAND_IN_METHODS)

    def resolve(self, value, device: str | None = None):
        """A request's value with handles replaced by their instances and tensors on ``device`` (default:
        the grading device)."""
        import torch

        device = device or self.spec.device

        def resolved(leaf):
            if isinstance(leaf, HandleRef):
                return self.handles[leaf.id]
            if isinstance(leaf, torch.Tensor) and device != "cpu":
                return leaf.to(device)
            return leaf

        return mapped(resolved, value)

    def handle(self, request: dict) -> dict:
        # armed again by the next request (re-arming replaces the deadline), never disarmed in
        # between: a dump written while the worker waits for a request is never read
        self.watch.arm(request.get("timeout_s"))
        return self._handle(request)

    def _handle(self, request: dict) -> dict:
        op = request["op"]
        if op == "new":
            return self.new(request)
        if op == "call":
            return self.call(request)
        if op == "state":
            return self.state(request)
        if op == "load":
            return self.load(request)
        if op == "ping":  # runs no student code: its reply says the last call's reply is sent and cleaned up,
            heap.give_back_freed()  # and what the process freed given back (grader.inside.heap): a reading follows
            return {"ok": True}
        if op == "mode":
            module = self.handles[request["handle"]]
            module.train(request["train"])
            return {"ok": True}
        if op == "stand_in":
            return self.stand_in(request)
        if op == "drop":  # the grader lets go of an instance: what it held is given back (grade.held_bytes reads it)
            self.handles[int(request["handle"])] = None
            gc.collect()
            return {"ok": True}
        if op == "attr":  # what an instance keeps (a KV cache): the tensors themselves, for the grader to measure
            instance = self.handles[request["handle"]]
            return {"ok": True, "values": {name: _plain(getattr(instance, name, None)) for name in request["names"]
                                           if isinstance(name, str) and not name.startswith("_")}}
        raise ValueError(f"unknown op {op!r}")

    def stand_in(self, request: dict) -> dict:
        """Stand-ins for the student's helpers named in ``helpers`` (functions or classes: see
        grader.inside.stand_in, which ask the grader for each call's result) put in place of the student's
        own until the next stand_in request (an empty one restores them all). A function helper keeps its
        identity: its own function object runs the stand-in (its code swapped for one that calls it, see
        :func:`_trampoline`), so every way the exercise reaches it (an alias, a closure, a default argument, a
        class attribute, an ``is`` test against a name kept at import) reaches the stand-in, and no test tells
        the run apart by it (red team rounds 24d and 25). A class helper (an nn.Module) keeps its identity too: its
        own class constructs and runs forward as the stand-in does (STAND_IN_METHODS put into it, restored after); a
        helper neither is, is replaced wherever a module binds it under that name. A helper of an earlier
        assignment (``modules``: its module's name) is that module's own, imported for it. The reply names those
        put in place."""
        for namespace, name, own in reversed(self.replaced):
            namespace[name] = own
        self.replaced = []
        for function, code, namespace, key in reversed(self.swapped):
            function.__code__ = code
            namespace.pop(key, None)
        self.swapped = []
        for cls, saved in reversed(self.remade):
            for method in STAND_IN_METHODS:
                if method in saved:
                    setattr(cls, method, saved[method])
                elif method in cls.__dict__:
                    delattr(cls, method)
        self.remade = []
        owned = {name: self.helper(name, (request.get("modules") or {}).get(name))
                 for name in request.get("helpers") or () if isinstance(name, str)}
        owned = {name: own for name, own in owned.items() if callable(own)}
        helpers = {name: "class" if isinstance(own, type) else "function" for name, own in owned.items()}
        placed = []
        for name, stand_in in stand_ins(self.ask, helpers, self.spec.device).items():
            own = owned[name]
            if isinstance(own, types.FunctionType):
                key = f"grader stand-in for {name}"  # no name a program can write: never the student's to reach
                self.swapped.append((own, own.__code__, own.__globals__, key))
                own.__globals__[key] = stand_in
                own.__code__ = _trampoline(len(own.__code__.co_freevars), key)
                placed.append(name)
                continue
            if isinstance(own, type) and issubclass(own, sys.modules["torch"].nn.Module):
                # the student's own class runs the stand-in's construction and forward pass: every way of reaching
                # it (an alias, a partial, a subclass, a class attribute, an import inside a function) reaches the
                # stand-in, and neither the class's identity (red team round 26b) nor its methods' (round 26c) tells
                # the run apart: a method the class defines keeps its function object, its code swapped as a
                # function helper's is
                self.remade.append((own, {m: own.__dict__[m] for m in STAND_IN_METHODS if m in own.__dict__}))
                for method in STAND_IN_METHODS:
                    theirs = own.__dict__.get(method)
                    if isinstance(theirs, types.FunctionType):  # its own method object runs the stand-in's (round 26c)
                        key = f"grader stand-in for {name}.{method}"
                        self.swapped.append((theirs, theirs.__code__, theirs.__globals__, key))
                        theirs.__globals__[key] = stand_in.__dict__[method]
                        theirs.__code__ = _trampoline(len(theirs.__code__.co_freevars), key)
                    else:  # inherited (or not a plain function): the stand-in's, on this class alone
                        setattr(own, method, stand_in.__dict__[method])
                placed.append(name)
                continue
            for module in list(sys.modules.values()):
                namespace = getattr(module, "__dict__", None)
                if isinstance(namespace, dict) and namespace.get(name) is own:
                    self.replaced.append((namespace, name, own))
                    namespace[name] = stand_in
            placed.append(name)
        return {"ok": True, "placed": placed}

    def helper(self, name: str, module: str | None):
        """The student's helper ``name``: as this assignment's module binds it, or, for a helper of an earlier
        assignment, as the student's own module ``module`` defines it (imported now, as the exercise's code would
        import it: 04's wrapper stacks 03's CausalAttention, imported where the wrapper is made), never a class the
        exercise's module defines under that name. None where it has none."""
        if not isinstance(module, str) or not module.isidentifier():
            return getattr(self.module, name, None)
        try:  # the earlier assignment's own class, never one this module defines under its name (red team round 26b)
            sibling = importlib.import_module(module)
        except Exception:  # noqa: BLE001 - the student's module does not import: no helper of theirs to stand in for
            return None
        if not _students(getattr(sibling, "__file__", None) or "", self.spec):
            return None  # only the student's own modules: never a library's class of that name
        return getattr(sibling, name, None)

    def target(self, name: str):
        target = getattr(self.module, name, None)
        if target is None:
            raise AttributeError(f"your module defines no {name!r}")
        return target

    def helpers_code(self, names: list, fn) -> dict:
        """The code objects of the student's own functions ``names`` (as the module binds them now), other than
        ``fn``'s: code object -> name (grader.inside.tracer.Tracer.attribute). Each is the function that computes:
        behind a decorator's ``__wrapped__``, a ``functools.partial``, a callable object's ``__call__``, and, where
        its code is another's too (one decorator's wrapper on two functions, a factory's product), the one
        function of the student's its closure holds (red team round 25: a wrapper shared by the caller and a helper
        counted the caller's loop as the helper's; a helper written as a partial or a callable object lost its
        loop to the caller). A code that stays shared with the caller or another helper is left out: its
        operators are the caller's."""
        objects = {name: getattr(self.module, name, None) for name in names if isinstance(name, str)}
        first = {name: _computing(obj) for name, obj in objects.items()}
        own = _computing(fn)
        counts: dict = {}
        for function in (*first.values(), own):
            if function is not None:
                counts[function.__code__] = counts.get(function.__code__, 0) + 1
        codes: dict = {}
        for name, function in first.items():
            if function is not None and counts[function.__code__] > 1:
                function = _held_by(objects[name])
            if function is not None and function is not own and _students(function.__code__.co_filename, self.spec):
                codes.setdefault(function.__code__, set()).add(name)
        caller = _held_by(fn) if own is not None and counts.get(own.__code__, 0) > 1 else own
        return {code: next(iter(named)) for code, named in codes.items()
                if len(named) == 1 and (caller is None or code is not caller.__code__)}

    def new(self, request: dict) -> dict:
        cls = self.target(request["name"])
        instance = cls(*self.resolve(request["args"]), **self.resolve(request["kwargs"]))
        if hasattr(instance, "to") and (self.spec.device != "cpu" or request.get("dtype") is not None):
            instance = instance.to(self.spec.device, request.get("dtype"))
        if request.get("training") is False and hasattr(instance, "train"):
            instance.train(False)  # before its state is read: "training" comes back as the grader asked
        handle = len(self.handles) + 1
        self.handles[handle] = instance
        reply = {"ok": True, "handle": handle, **(self._state(instance) if request.get("state") else {})}
        params = request.get("params")
        if isinstance(params, dict) and hasattr(instance, "named_parameters"):
            own = dict(instance.named_parameters())
            if set(own) == set(params) and all(tuple(own[n].shape) == tuple(p.shape) for n, p in params.items()):
                self.load({"handle": handle, "params": params})
                reply["loaded"] = True  # the grader checks names and shapes itself before it believes this
        return reply

    def state(self, request: dict) -> dict:
        return {"ok": True, **self._state(self.handles[request["handle"]])}

    def _state(self, module) -> dict:
        params = {name: _plain(p) for name, p in module.named_parameters()}
        buffers = {name: _plain(b) for name, b in module.named_buffers()}
        kinds = {name: type(m).__name__ for name, m in module.named_modules()}
        first: dict[int, str] = {}
        shared = {}  # a submodule reached again under another name: the same object (for feedback only)
        for name, m in module.named_modules(remove_duplicate=False):
            if first.setdefault(id(m), name) != name:
                shared[name] = first[id(m)]
        return {"params": params, "buffers": buffers, "modules": kinds, "shared": shared,
                "training": bool(module.training)}

    def load(self, request: dict) -> dict:
        import torch

        module = self.handles[request["handle"]]
        own = dict(module.named_parameters())
        with torch.no_grad():
            for name, value in request["params"].items():
                own[name].copy_(value.to(own[name].device, own[name].dtype))
        return {"ok": True}

    def call(self, request: dict) -> dict:
        import torch

        target = request["target"]
        if isinstance(target, HandleRef):
            owner = self.handles[target.id]
            method = request.get("method")  # forward (the module called), or one of its methods by name
            fn = getattr(owner, method) if isinstance(method, str) and not method.startswith("_") else owner
            for parameter in owner.parameters():  # each call's gradients are its own
                parameter.grad = None
        else:
            fn, owner = self.target(target), None
        on = "cpu" if request.get("on_cpu") is True else None  # a function's call kept on the CPU (diagnose)
        args = self.resolve(request["args"], on)
        kwargs = self.resolve(request["kwargs"], on)
        grad_out = request.get("grad_out")
        tensors = [a for a in flatten(args) if isinstance(a, torch.Tensor)]
        if grad_out is not None:
            chosen = request.get("grad_args")  # None: every floating-point argument; else their indices
            for index, tensor in enumerate(tensors):
                if tensor.is_floating_point() and (not isinstance(chosen, list) or index in chosen):
                    tensor.requires_grad_(True)
        before = [(t, t._version, t.detach().clone()) for t in tensors]
        if request.get("seed") is not None:
            seed_all(request["seed"])
        measure = request.get("measure") is True
        tracer = make_tracer(frozenset(request.get("forbidden", ())), measure)
        tracer.students = lambda filename: _students(filename, self.spec)  # called back inside torch: refused
        if measure and owner is None and isinstance(request.get("within"), list):
            tracer.within = self.helpers_code(request["within"], fn)
        # the grader's grad mode (a cached sequence is decoded under torch.no_grad(), as generation runs)
        grad_mode = request.get("grad_enabled") is not False or grad_out is not None
        # a watched call is watched in every thread until its output is copied (another thread could
        # still write into it after the call returned)
        watched = bool(tracer.modes)
        if watched:
            tracer.elsewhere = strangers()
            _CALL[0] = tracer
        try:
            try:
                with tracer, torch.set_grad_enabled(grad_mode):
                    out = _containers(fn(*args, **kwargs))
            except BaseException:
                if tracer.forbidden:  # whatever the student's code made of the refusal
                    raise ForbiddenOperation(tracer.forbidden[0]) from None
                if tracer.elsewhere:
                    raise Elsewhere(tracer.elsewhere) from None
                raise
            size = sum(t.numel() * t.element_size() for t in flatten(out) if isinstance(t, torch.Tensor))
            if size > self.spec.reply_limit:  # refused before any copy is made
                raise OutputTooLarge(f"your code returned too much data ({size >> 20} MiB; "
                                     f"the limit is {self.spec.reply_limit >> 20} MiB)")
            reply = {"ok": True, "out": _plain(out), "forbidden": tracer.forbidden}
        finally:
            _CALL[0] = None
        if watched:
            tracer.elsewhere = tracer.elsewhere or strangers()
            if tracer.forbidden:
                raise ForbiddenOperation(tracer.forbidden[0])
            if tracer.elsewhere:
                raise Elsewhere(tracer.elsewhere)
        if measure:
            if tracer.as_text is not None:
                reply["as_text"] = tracer.as_text
            reply.update(ops=tracer.count, op_names=tracer.names, max_numel=tracer.max_numel,
                         max_operand=tracer.max_operand,
                         widest=tracer.widest, widest_op=tracer.widest_op,
                         widest_along=tracer.widest_along, widest_along_op=tracer.widest_along_op,
                         widths=tracer.widths, sizes=tracer.sizes)
            if tracer.within:
                reply["within"] = tracer.helpers_inside()
        reply["mutated"] = [
            i for i, (t, version, copy) in enumerate(before)
            if t._version != version or not torch.equal(t.detach(), copy)
        ]
        if grad_out is not None and isinstance(out, torch.Tensor) and out.requires_grad:
            grad_out = grad_out.to(out.device, out.dtype)
            if grad_out.shape == out.shape:
                try:
                    (out * grad_out).sum().backward()  # as out.backward(grad_out), without sympy
                except Exception as exc:  # noqa: BLE001 - reported, after the facts above
                    reply["grad_error"] = _student_traceback(exc, self.spec)
                    return reply
                # one entry per tensor argument, in order; the grader requires each it asked for
                reply["grads"] = [_plain(t.grad) if t.grad is not None else None for t in tensors]
                if owner is not None:
                    reply["param_grads"] = {
                        n: _plain(p.grad) for n, p in owner.named_parameters() if p.grad is not None
                    }
        return reply


def seed_all(seed: int) -> None:
    """Seed the generators a graded call may draw from (dropout): the CPU's, and CUDA's once in use.
    Not ``torch.manual_seed``, which costs tens of milliseconds a call in formatting the stack."""
    import torch

    torch.default_generator.manual_seed(seed)
    if torch.cuda.is_initialized():
        torch.cuda.manual_seed_all(seed)


def _error_reply(exc: BaseException, spec: WorkerSpec) -> dict:
    if isinstance(exc, ForbiddenOperation) or isinstance(exc.__context__, ForbiddenOperation):
        name = exc.name if isinstance(exc, ForbiddenOperation) else exc.__context__.name
        return {"ok": False, "kind": "forbidden", "message": f"your code called {name}, which this exercise forbids"}
    if isinstance(exc, SystemExit):
        return {"ok": False, "kind": "crashed", "exception": "SystemExit",
                "message": f"your code tried to exit the process (exit code {exc.code!r})"}
    if isinstance(exc, (OutputTooLarge, Elsewhere)):
        return {"ok": False, "kind": "error", "exception": type(exc).__name__, "message": str(exc)}
    kind = "not_implemented" if _is_stub(exc, spec) else "error"
    return {"ok": False, "kind": kind, "exception": type(exc).__name__, "message": _student_traceback(exc, spec)}


def _is_stub(exc: BaseException, spec: WorkerSpec) -> bool:
    """A stub's own ``raise NotImplementedError``, not one that torch raised inside the student's code."""
    if not isinstance(exc, NotImplementedError):
        return False
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return False
    last = frames[-1]
    return _students(last.filename, spec) and (last.line or "").lstrip().startswith("raise NotImplementedError")


def serve(sock, spec: WorkerSpec) -> None:
    """The worker's whole life once confined: import the submission, answer requests until EOF."""
    def reply(obj):
        protocol.send(sock, protocol.encode(obj), timeout=60)

    lock_down(spec)
    import torch

    torch.set_num_threads(1)
    switch_off_compilers()
    watch_threads()
    watch_text(spec)

    watch = StackWatch()
    watch.arm(spec.import_timeout_s)
    try:
        module = import_submission(spec)
    except BaseException as exc:  # noqa: BLE001 - anything the student's import does is reported
        watch.disarm()
        reply(_error_reply(exc, spec) | {"stage": "import"})
        return
    watch.disarm()
    for name in spec.hung:
        stop_hung(module, name)
    def ask(question: dict):  # in the middle of a request: the grader answers, then the request goes on
        reply({"ask": question})
        return protocol.receive(sock, limit=protocol.REQUEST_LIMIT, timeout=None)

    server = Server(spec, module, watch, ask)
    reply({"ok": True})
    warm_device(spec.device)
    for request in protocol.requests(sock, limit=protocol.REQUEST_LIMIT):
        try:
            answer = server.handle(request)
        except BaseException as exc:  # noqa: BLE001
            answer = _error_reply(exc, spec)
        tracer_forbidden = answer.get("forbidden") if answer.get("ok") else None
        if tracer_forbidden:
            answer = {"ok": False, "kind": "forbidden",
                      "message": f"your code called {tracer_forbidden[0]}, which this exercise forbids"}
        size = sum(t.numel() * t.element_size() for t in flatten(answer) if isinstance(t, torch.Tensor))
        if size > spec.reply_limit:
            answer = {"ok": False, "kind": "error", "message": f"your code returned too much data "
                      f"({size >> 20} MiB; the limit is {spec.reply_limit >> 20} MiB)"}
        try:
            reply(answer)
        except Exception as exc:  # noqa: BLE001 - e.g. an output that cannot be saved
            reply({"ok": False, "kind": "error", "message": f"the result could not be sent back: {_describe_exception(exc)}"})
