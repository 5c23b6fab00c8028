"""Observe or refuse: whether the grader can trust what it watches of a submission's computation.

Some checks watch the computation rather than its result: the operations an exercise may not call
(01's softmax), how many operations a call runs (vectorised forms), how wide a block is (05's tiles).
The watching is done in the student's process (torch's modes), where code could switch it off
(``torch._C.DisableTorchFunction``), compute where it does not look (NumPy, a ``torch.library``
operator, another process) or lie to it (a tensor subclass). The student's process cannot be asked
whether that happened: it would answer what it likes.

So the decision is made here, in the grading process, from the submission's source before any of it
runs, where the student's code cannot reach: a file is *observable* when everything it names is on
an allowlist of what cannot switch the watching off or work around it. Plain Python, the student's
own names, torch's tensor operations and modules (``torch``, ``torch.nn``, ``torch.nn.functional``,
...), ``math``, ``typing`` and a few other pure libraries pass; private and dunder names, names
looked up while the code runs (``getattr``, ``exec``, ``__import__``, ``globals``), other libraries
(``os``, ``ctypes``, ``numpy``, ``multiprocessing``, ``torch.library``, ``torch.overrides``,
``torch.autograd.Function``), tensor subclasses and tensor-to-Python escapes (``.numpy()``,
``.tolist()``, ``.apply_()``) do not. Torch names are resolved against torch itself, never by their
spelling. A file that is not observable still has its results checked, but the checks that watch
earn nothing, and the feedback says why in one line (the first thing found, with its line).

This is a reading of syntax: code that passes names nothing that could reach the watching, whatever
it computes; code that fails is refused whatever it meant. Every honest file of the corpora passes.
"""
from __future__ import annotations

import ast
import builtins
import hashlib
import importlib
import importlib.util
import io
import re
import sys
import tokenize
import types
from pathlib import Path

from grader.inside.notebook_source import LIMITS, cell_codes, code_problem, read_bounded
from grader.inside.notebook_source import _root  # the name a dotted name starts from (None: not a name)

# modules a submission may name, all of whose public names it may use (a module found behind one of
# them, e.g. ``typing.sys``, must be on this list too)
MODULES = frozenset({
    "torch", "torch.nn", "torch.nn.functional", "torch.nn.init", "torch.linalg", "torch.special", "torch.fft",
    "math", "__future__", "itertools", "operator", "cmath",
})
# modules of which only some names may be used
SOME_OF = {
    "dataclasses": {"dataclass", "field", "fields", "replace", "asdict", "astuple", "InitVar"},
    # (not functools.wraps: its assigned= and updated= read and write any attribute named by a string)
    "functools": {"partial", "reduce", "lru_cache", "cache", "cached_property", "total_ordering"},
    "typing": {"Optional", "Union", "Tuple", "List", "Dict", "Any", "Callable", "Sequence", "Iterable", "Iterator",
               "Mapping", "TYPE_CHECKING", "NamedTuple", "Literal", "cast", "Final", "ClassVar", "Type", "Set",
               "FrozenSet", "overload"},
    # (not enum.global_enum, nor the functional API's module=: they write into any module named by a string)
    "enum": {"Enum", "IntEnum", "Flag", "IntFlag", "StrEnum", "auto", "unique"},
    "abc": {"ABC", "abstractmethod"},
    "numbers": {"Number", "Real", "Integral", "Complex"},
    "einops": {"rearrange", "repeat", "reduce", "einsum", "pack", "unpack", "parse_shape", "layers"},
    "einops.layers": {"torch"},
    "einops.layers.torch": {"Rearrange", "Reduce", "EinMix"},
    "collections": {"namedtuple", "OrderedDict", "defaultdict", "deque", "Counter"},
    "time": {"sleep", "time", "perf_counter", "perf_counter_ns", "monotonic", "process_time"},
    "warnings": {"warn"},
    "copy": {"copy", "deepcopy"},
    "random": {"random", "seed", "randint", "uniform", "gauss", "choice", "shuffle", "sample"},
    "torch.cuda": {"is_available", "device_count", "manual_seed", "manual_seed_all"},
    # the worker runs TorchScript and torch.compile eagerly (grader.inside.worker.switch_off_compilers): what
    # they are given is the student's Python, read here like the rest; a saved program (torch.jit.load) is not
    "torch.jit": {"script", "trace", "ignore", "unused", "export", "is_scripting", "is_tracing", "Final", "annotate"},
    "torch.backends": {"mps", "cuda"},
    "torch.backends.mps": {"is_available", "is_built"},
    "torch.backends.cuda": {"is_built"},
}
# names of the listed modules that look things up by a string, evaluate text or load code
NOT_THESE = {
    "typing": {"get_type_hints", "ForwardRef", "evaluate_forward_ref"},
    "operator": {"attrgetter", "methodcaller"},
    "torch": {"load", "save", "cond", "from_numpy", "frombuffer", "from_file", "fork", "wait",
              "vmap", "set_default_tensor_type", "import_ir_module", "import_ir_module_from_buffer", "parse_ir",
              "Tensor.as_subclass"},
}
_REFUSED_PATHS = frozenset(f"{module}.{name}" for module, names in NOT_THESE.items() for name in names)
# builtins a submission may name (any other builtin, e.g. getattr, exec, open, vars, is refused)
BUILTINS = frozenset("""
    abs all any bool bytes callable chr classmethod complex dict divmod enumerate filter float format frozenset
    hash int isinstance issubclass iter len list map max min next object ord pow print property range repr
    reversed round set slice sorted staticmethod str sum super tuple zip hasattr id NotImplemented Ellipsis
    True False None
""".split()) | {n for n in dir(builtins) if n.endswith(("Error", "Exception", "Warning")) or n in ("StopIteration",)}
# modules whose classes may be looked at as bases where the grading process has loaded them already (torch's,
# and pure ones of the standard library): nothing is imported for a base
BASE_MODULES = frozenset({"torch", "enum", "abc", "typing", "collections", "dataclasses", "functools", "numbers",
                            "types"})
# torch's ignored functions (torch.overrides) that make or describe tensors, or switch gradients: allowed
IGNORED_BUT_PLAIN = frozenset("""
    arange as_tensor asarray empty empty_like empty_strided eye fill full linspace logspace normal ones rand
    rand_like randint randint_like randn randn_like randperm range scalar_tensor tensor tril_indices triu_indices
    zeros finfo iinfo is_tensor get_default_dtype is_grad_enabled is_inference_mode_enabled manual_seed seed
    initial_seed promote_types result_type can_cast broadcast_shapes no_grad enable_grad
    set_grad_enabled hann_window hamming_window bartlett_window blackman_window kaiser_window compile
    calculate_gain get_num_threads set_num_threads get_num_interop_threads get_default_device
    are_deterministic_algorithms_enabled use_deterministic_algorithms get_float32_matmul_precision
    set_float32_matmul_precision typename is_storage
""".split())
# torch's classes a submission may name (nn.Module's family besides)
# (not inference_mode: under it, and on the tensors made under it, an operator torch would split reaches the
# watching whole, its insides unseen: red team round 11, see grader/inside/tracer.py)
TORCH_CLASSES = ("Tensor", "Size", "Generator", "dtype", "device", "finfo", "iinfo", "no_grad", "enable_grad",
                 "set_grad_enabled")
# builtins that reach any name, code or file: never bound by a file (a name bound anywhere would stand for
# the builtin everywhere else to this reading)
LOOKUPS = frozenset({"exec", "eval", "compile", "open", "getattr", "setattr", "delattr", "vars", "globals", "locals",
                     "breakpoint", "memoryview", "dir", "__import__", "type", "object", "super",
                     # help() imports any module by its name (pydoc); the site's others reach help or end the
                     # process; __build_class__, __loader__, __spec__ make classes and load code (issue 44)
                     "help", "exit", "quit", "copyright", "credits", "license", "__build_class__", "__loader__",
                     "__spec__", "__builtins__"})
# names a submission may give an object only as a method's first parameter: private attributes are read
# on them (self._cache), so ``cls = torch.Tensor`` or ``def f(cls=torch.Tensor)`` would reach torch's
OWNERS = ("self", "cls")
# builtins that look a name up, allowed with a public name written in the file (see _named_plainly)
BY_NAME = frozenset({"getattr", "setattr", "hasattr"})
# dunder names a submission may use: defining the usual protocol methods, reading a name or a docstring
# (not the protocol methods torch's own Python code calls on an argument, __eq__, __hash__, __bool__, __len__,
# __iter__, __getitem__, __contains__, __repr__, __str__: they run inside a torch function's handling, where the
# watching of torch functions is off; red team round 13 ran a forbidden call in each of four)
DUNDER_DEFS = frozenset({"__init__", "__call__", "__post_init__", "__enter__", "__exit__"})
DUNDER_READS = frozenset({"__init__", "__name__", "__doc__", "__qualname__", "__file__"})
# the module's own strings, read as bare names (the builtins module has them too, which is not what is read)
MODULE_TEXTS = frozenset({"__name__", "__doc__"})
# methods of a tensor that hand its values to code the grader cannot watch (or make a tensor subclass)
ESCAPES = frozenset({"numpy", "tolist", "as_subclass", "data_ptr", "storage", "untyped_storage", "apply_", "map_",
                     "map2_", "__array__", "share_memory_", "pin_memory", "from_dlpack", "to_dlpack", "__dlpack__"}
                    # and the public ways to a frame, whose globals and builtins hold every name of the process
                    | {"gi_frame", "cr_frame", "ag_frame", "gi_code", "cr_code", "ag_code", "tb_frame", "tb_next",
                       "f_back", "f_globals", "f_locals", "f_builtins", "f_code", "co_consts"})
# methods that run a backward pass, or Python code during one: its hooks run inside a torch function's handling,
# where the watching of torch functions is off (red team round 12: F.scaled_dot_product_attention in a tensor
# hook, fired by a backward inside the graded call, was seen by neither watch)
# (and ``grad_fn``, the way to a graph node's hooks: red team round 32 set ``out.grad_fn.register_prehook`` to
# compute the gradient the grader's own backward pass asks for by F.softmax, after the tracer's call had ended)
BACKWARD = frozenset({"backward", "register_hook", "register_post_accumulate_grad_hook", "register_backward_hook",
                      "register_full_backward_hook", "register_full_backward_pre_hook", "register_prehook",
                      "grad_fn", "next_functions"})
# classes a student's class may derive from (besides its own classes and torch's nn.Module family)
BASES = frozenset({"object", "Exception", "ValueError", "RuntimeError", "TypeError", "NamedTuple", "Enum", "ABC"})


def _owners_only_first(function, method: bool) -> None:
    """``self`` and ``cls`` (OWNERS) are a method's first positional parameter, with no default, and nothing
    else: any other parameter of that name could be given any object, whose private names would be read."""
    args = function.args
    positional = args.posonlyargs + args.args
    defaulted = {id(a) for a in positional[len(positional) - len(args.defaults):]} if args.defaults else set()
    defaulted |= {id(a) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None}
    every = positional + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]
    for index, arg in enumerate(every):
        if arg.arg in OWNERS and not (method and index == 0 and arg in positional and id(arg) not in defaulted):
            raise _Found(arg, f"a parameter named {arg.arg} that is not a method's first (private names are read "
                              f"on {arg.arg})")


def _format_looks_up(call: ast.Call) -> str | None:
    """What a ``str.format`` (or ``format_map``) call looks up by text: a field with an attribute or an
    index (``"{0.__class__}"``, ``"{x[k]}"``), or a format string not written in the file. None for plain
    fields (``"{:.3f}"``, ``"{name}"``)."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr in ("format", "format_map")):
        return None
    if not (isinstance(func.value, ast.Constant) and isinstance(func.value.value, str)):
        return f".{func.attr}() of a format string the file does not write"
    import string

    def fields(text: str, depth: int = 0) -> list[str]:  # a field's spec may hold fields of its own
        found = []
        for _, name, spec, _ in string.Formatter().parse(text):
            found += [name] if name else []
            found += fields(spec, depth + 1) if spec and depth < 2 else []
        return found

    try:
        fields = fields(func.value.value)
    except ValueError:
        return None  # (it raises when called)
    for name in fields:
        if "." in name or "[" in name:
            return f"a format field {{{name}}}, which looks up a name by text"
    return None


class _Unread(Exception):
    """Code the worker would run that is not read here (a cell or a module past grader.inside.notebook_source's
    bounds): not observed."""


class _Found(Exception):
    def __init__(self, node: ast.AST, what: str):
        super().__init__(what)
        self.line, self.what = getattr(node, "lineno", 0), what


def unobserved(paths, *, course_files=None, course_modules=frozenset(), own=frozenset(),
               entry_points=frozenset()) -> str | None:
    """None when every file of ``paths`` (a submission's, as they run in the worker) is observable;
    else one line: the first thing found, where (the file as the student knows it, and its line).
    ``course_files``: the course's module names -> the submission's files of each (module, notebook laid
    over it; a Mapping, whose values are asked for only where a file read imports that module), read too
    there (as its syntax says, never its bytes);
    ``course_modules``: names a file may import as the student's own code (those of ``course_files`` too);
    ``own``: names of modules the submission's folders hold, never imported unread; ``entry_points``: the
    names the grader calls (the exercises), whose code runs whatever else the file does (with the file's
    top-level code: the code read; a function nothing of that names never runs). Whatever a file holds,
    this raises nothing: what cannot be read is not observed."""
    course_files = course_files if course_files is not None else {}  # a Mapping: values read when imported
    course_modules = frozenset(course_modules) | frozenset(course_files)
    codes, queue, seen = [], list(paths), set()
    trees: dict[bytes, ast.Module] = {}  # the code's digest -> its tree, parsed once for both readings here
    while queue:
        path = queue.pop(0)
        if path in seen:
            continue
        seen.add(path)
        try:
            code, places = kept_code(path)
            imported = _course_imports(code, course_modules, trees)
        except _Unread as why:
            return str(why)
        except Exception as error:  # noqa: BLE001 - whatever cannot be read here is not trusted
            return f"{path.name}, which the grader could not read ({type(error).__name__})"
        codes.append((path, code, places))
        queue += [p for module in sorted(imported) for p in course_files.get(module, ())]
        # and a course module's file beside the notebook that imports it (a kernel's module beside its
        # history, which the notebook's cells import by their own name: grader.inside.importer.exec_as_module)
        if path.suffix == ".ipynb":
            queue += [beside for module in sorted(imported) if (beside := path.with_name(module + ".py")).is_file()]
    words = [frozenset(re.findall(r"\w+", code)) for _, code, _ in codes]
    for index, (path, code, places) in enumerate(codes):
        # what the other files may call of this one: every name they write (``from causal_attention import x``)
        called = frozenset(entry_points).union(*(w for i, w in enumerate(words) if i != index))
        found = _reading(code, course_modules, frozenset(own), called, trees)
        if found is not None:
            line, what = found
            name, first = path.name, 1
            for start, label in places:  # a notebook's cells, joined: say the cell and its own line
                if start <= line:
                    name, first = label, start
            return f"{name}" + (f" line {line - first + 1}" if line else "") + f" uses {what}"
    return None


# the module's own names, which a definition at module level would replace (``__name__`` decides the main guard)
MODULE_NAMES = frozenset({"__name__", "__file__", "__doc__", "__spec__", "__loader__", "__builtins__", "__package__",
                          "__path__", "__dict__", "__qualname__", "__class__", "__annotations__"})


def _own_nodes(body):
    """The nodes of the statements ``body``, not those of the functions, lambdas and classes defined in them."""
    stack = list(body)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))


def _finalised(function):
    """A try or with statement of a generator function that holds one of its yields, or None: a generator let go
    while it waits at such a yield runs that statement's ``finally``, ``except`` and ``with`` exit then, whenever
    that is (red team round 27b: a generator kept on a tensor the watching held ran the library softmax when the
    watching let it go). A try or with block around no yield runs only while the generator runs (session 19's hunt:
    honest generators with a try block lost their file's watched checks)."""
    guarded = (ast.Try, ast.TryStar, ast.With, ast.AsyncWith)
    return next((n for n in _own_nodes(function.body) if isinstance(n, guarded) and _runs_when_closed(n)
                 and any(isinstance(m, (ast.Yield, ast.YieldFrom)) for m in _own_nodes([n]))), None)


def _runs_when_closed(statement) -> bool:
    """Whether closing a generator that waits inside ``statement`` runs code: a with block's exit does; a try's
    ``finally`` does unless it only passes or deletes names (letting go of what they hold runs nothing of the
    student's: a generator so let go is read by this same rule, a ``__del__`` is refused), and its handlers do where
    one catches GeneratorExit (bare, BaseException, GeneratorExit)."""
    if isinstance(statement, (ast.With, ast.AsyncWith)):
        return True
    idle = all(isinstance(s, ast.Pass) or isinstance(s, ast.Delete) and all(isinstance(t, ast.Name) for t in s.targets)
               for s in statement.finalbody)
    caught = [h.type for h in statement.handlers]
    names = [n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else None
             for t in caught if t is not None for n in (t.elts if isinstance(t, ast.Tuple) else [t])]
    return not idle or None in caught or any(n in ("BaseException", "GeneratorExit", None) for n in names)


def _bindable(node, name: str) -> None:
    """A name a match pattern, an ``except ... as``, or an import binds: never a builtin that looks things up,
    a method's owner, or a dunder (round 8: ``case __name__:`` made the main guard true at import, so code
    the reading skips as never running ran)."""
    if name in LOOKUPS or name in OWNERS or (name.startswith("__") and name.endswith("__")):
        raise _Found(node, f"the name {name} bound")


def _class_scoped_imports(every) -> set[int]:
    """The imports whose names a class body binds (directly, or under an ``if``, ``try`` or ``with`` there; not
    in a method): they become the class's attributes, reached as ``Quiet.name`` or ``self.name``, where the
    names an import binds are followed only as names."""
    found = set()
    for cls in (n for n in every if isinstance(n, ast.ClassDef)):
        stack = list(cls.body)
        while stack:
            item = stack.pop()
            if isinstance(item, (ast.Import, ast.ImportFrom)):
                found.add(id(item))
            elif not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                stack.extend(ast.iter_child_nodes(item))
    return found


def _remembered(cache: dict, key, compute):
    """``compute()``, or what it gave for ``key`` earlier in this process (a class hands in the same files
    again and again: the released stubs, the lessons); at most 256 kept, the oldest dropped first."""
    if key not in cache:
        if len(cache) >= 256:
            cache.pop(next(iter(cache)))
        cache[key] = compute()
    return cache[key]


def _digest(code: str) -> bytes:
    return hashlib.blake2b(code.encode("utf-8", "surrogatepass"), digest_size=20).digest()


_IMPORTS: dict = {}  # by the code's digest


def _course_imports(code: str, course_modules, trees: dict | None = None) -> set[str]:
    """The course's modules ``code`` imports, by its syntax (a name in any spelling Python reads as it);
    the tree parsed for it goes into ``trees``, by the code's digest, for the reading that follows."""
    digest = _digest(code)
    return set(_remembered(_IMPORTS, digest, lambda: frozenset(_imported_names(code, digest, trees)))
               & set(course_modules))


def _imported_names(code: str, digest: bytes = b"", trees: dict | None = None) -> set[str]:
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()  # not read: _reading says why
    if trees is not None:
        trees[digest] = tree
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module.split(".")[0])
    return found


_READ: dict = {}  # by the code's digest and the names given: a class hands in the same files again


def _reading(code: str, course_modules, own, entry_points, trees: dict | None = None) -> tuple[int, str] | None:
    digest = _digest(code)
    return _remembered(_READ, (digest, course_modules, own, entry_points),
                       lambda: _read(code, course_modules, own, entry_points, (trees or {}).get(digest)))


def _read(code: str, course_modules, own, entry_points, tree: ast.Module | None = None) -> tuple[int, str] | None:
    try:
        tree = tree if tree is not None else ast.parse(code)
    except (SyntaxError, ValueError):  # (the worker's import fails too, and says so first)
        return 0, "code that does not parse"
    except (RecursionError, MemoryError):  # nested past what is read here: not read, not trusted
        return 0, "code nested too deeply to read"
    try:
        _Reader(tree, course_modules, own, entry_points).read()
        return None
    except _Found as found:
        return found.line, found.what
    except Exception as error:  # noqa: BLE001 - RecursionError included: what is not read is not trusted
        return 0, f"code the grader could not read ({type(error).__name__})"


class _Reader:
    def __init__(self, tree: ast.Module, course_modules=frozenset(), own=frozenset(), entry_points=frozenset()):
        self.tree = tree
        self.course_modules, self.own, self.entry_points = course_modules, own, entry_points
        self.students: set[str] = set()  # names imported from the course's modules: the student's own code
        self.foreign: dict[str, str] = {}  # names imported from other modules: refused where used
        self.running: set[int] = set()  # functions whose bodies may run
        self.used_classes: set[int] = set()  # classes that code that runs mentions (their bases are checked)
        self.calls: list[ast.Call] = []  # every call of a name or an attribute, for _passed_strings
        self.parameters: dict[str, list] = {}  # parameter name -> (function, its position, a method?)
        self.stored: set[str] = set()  # names bound by assignment (not only as parameters)
        self.plain_lookups: set[int] = set()  # getattr(...) names whose lookups are of public names written here
        # ``type(x)`` and ``x.__class__`` read for their name alone (``type(x).__name__`` in an error message):
        # the nodes of ``type`` and ``.__class__`` so read (a learner's input check lost 52 points on it)
        self.names_only: set[int] = set()
        self.loop_strings: dict[str, bool] = {}  # name -> bound only by loops over public strings
        self.imported: dict[str, str] = {}  # name -> the dotted path it stands for (torch.nn.functional)
        self.bound: set[str] = set()  # every name the file binds
        self.classes: set[str] = set()  # classes the file defines
        self.own_private: set[str] = set()  # _names the file defines (methods, attributes it assigns)
        self.checked: dict[str, object] = {}  # dotted path -> its object, for paths found allowed

    def read(self) -> None:
        body = []  # `if __name__ == "__main__":` never runs in the worker (its else does)
        for node in self.tree.body:
            body += node.orelse if _runs_as_main(node) else [node]
        every = [n for top in body for n in ast.walk(top)]
        methods = {id(item) for n in every if isinstance(n, ast.ClassDef) for item in n.body}
        in_classes = _class_scoped_imports(every)
        over_strings = {id(n.target) for n in every if isinstance(n, (ast.For, ast.comprehension))
                        and isinstance(n.target, ast.Name) and isinstance(n.iter, (ast.Tuple, ast.List))
                        and all(isinstance(e, ast.Constant) and _public(e.value) for e in n.iter.elts)}
        for node in every:  # what the file binds, first: a name is the student's wherever it is bound
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                if node.name in LOOKUPS or (node.name in MODULE_NAMES and id(node) not in methods):
                    raise _Found(node, f"a definition named {node.name}")
                self.bound.add(node.name)
                if isinstance(node, ast.ClassDef):
                    self.classes.add(node.name)
                    # a class attribute of its own body (_split = staticmethod(split_qkv)): read as self._split
                    self.own_private.update(
                        target.id for item in node.body if isinstance(item, (ast.Assign, ast.AnnAssign))
                        for target in (item.targets if isinstance(item, ast.Assign) else [item.target])
                        if isinstance(target, ast.Name) and target.id.startswith("_")
                        and not target.id.startswith("__"))
                if node.name.startswith("_") and not node.name.startswith("__"):
                    self.own_private.add(node.name)
            elif isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
                self.calls.append(node)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                _owners_only_first(node, id(node) in methods)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                method = id(node) in methods
                for index, arg in enumerate(node.args.posonlyargs + node.args.args):
                    self.parameters.setdefault(arg.arg, []).append((node.name, index, method))
                for arg in node.args.kwonlyargs + [a for a in (node.args.vararg, node.args.kwarg) if a]:
                    self.parameters.setdefault(arg.arg, []).append((node.name, -1, method))
            elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                if node.id in LOOKUPS:
                    raise _Found(node, f"the name {node.id} bound (it would stand for the builtin elsewhere)")
                if node.id in OWNERS:
                    raise _Found(node, f"the name {node.id} assigned (only a method's first parameter may be "
                                       f"{node.id}: private names are read on it)")
                self.stored.add(node.id)
                self.bound.add(node.id)
                self.loop_strings.setdefault(node.id, True)
                self.loop_strings[node.id] &= id(node) in over_strings
            elif isinstance(node, ast.arg):
                if node.arg in LOOKUPS:
                    raise _Found(node, f"a parameter named {node.arg}")
                self.bound.add(node.arg)
                self.loop_strings[node.arg] = False
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and \
                    node.attr.startswith("_") and not node.attr.startswith("__") and \
                    isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                self.own_private.add(node.attr)  # self._cache = ...: the instance's own
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                self.bound.update(node.names)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                _bindable(node, node.name)
                self.bound.add(node.name)
            elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
                _bindable(node, node.name)
                self.bound.add(node.name)
            elif isinstance(node, ast.MatchMapping) and node.rest:
                _bindable(node, node.rest)
                self.bound.add(node.rest)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                if id(node) in in_classes:  # its names are the class's attributes, never read as names (round 7)
                    raise _Found(node, "an import inside a class (import at the top of the file)")
                self._imports(node)
        # a library's name bound again (assigned, a parameter, a definition): read as the library, it runs
        # as something else (round 8: F.X resolved against torch.nn.functional where F was torch._C)
        twice = sorted(self.bound & (set(self.imported) | set(self.foreign)))
        if twice:
            where = next((n for n in every if (isinstance(n, ast.Name) and n.id == twice[0] and
                                                 not isinstance(n.ctx, ast.Load)) or
                          (isinstance(n, ast.arg) and n.arg == twice[0]) or
                          (isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name == twice[0])),
                         body[0] if body else self.tree)
            raise _Found(where, f"the name {twice[0]}, which is both imported and bound otherwise (give one of them "
                                "another name)")
        self.bound -= set(self.imported) | set(self.foreign) | self.students
        self.chained = {id(n.value) for n in every if isinstance(n, ast.Attribute)}  # x in x.attr
        for node in self._runs(body, every):
            self._node(node)

    def _runs(self, body: list, every: list) -> list:
        """The nodes of the code that may run: the top-level statements (a definition's decorators and
        defaults, a class's body run at import), the bodies of the functions the grader calls (the
        entry points) and of every function or method whose name code that runs mentions, and every
        method and base of a class that code that runs mentions. Nothing else can be called: no name
        is looked up by a string (getattr with a computed name, globals() are refused)."""
        functions, classes = {}, {}  # name -> its definitions (functions and methods), its classes
        for node in every:  # (every node of ``body``)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                functions.setdefault(node.name, []).append(node)
            elif isinstance(node, ast.ClassDef):
                classes.setdefault(node.name, []).append(node)
        bodies = {id(n) for defs in functions.values() for n in defs}
        nodes, named, queue = [], set(), []

        def mention_class(cls):
            if id(cls) not in self.used_classes:
                self.used_classes.add(id(cls))
                queue.extend(cls.bases)  # a class that may be made: what it is built on matters
                queue.extend(item for item in cls.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)))

        def mention(name):
            if name in named:
                return
            named.add(name)
            queue.extend(functions.get(name, ()))
            for cls in classes.get(name, ()):
                mention_class(cls)

        def visit(root):  # the nodes of ``root`` that run, not entering function bodies (queued by name)
            stack = [root]
            while stack:
                node = stack.pop()
                nodes.append(node)
                if id(node) in bodies:
                    stack += node.decorator_list + [node.args] + ([node.returns] if node.returns else [])
                    if node.decorator_list:  # a decorator is handed the function itself: it may call it
                        queue.append(node)
                    continue
                if isinstance(node, ast.ClassDef):  # its body runs; its bases matter once it is used
                    if node.decorator_list:  # a decorator is handed the class itself
                        mention_class(node)
                    stack += node.decorator_list + [k.value for k in node.keywords] + node.body
                    stack += [b for b in node.bases if not _plain_reference(b)]
                    for base in node.bases:  # making it calls its bases' hooks (__init_subclass__): theirs run
                        mention(_root(base))
                    if any(not self._plain_base(b) for b in node.bases) or node.keywords:
                        # made by a metaclass of a library's (Enum's calls _generate_next_value_): all may run
                        queue.extend(i for i in node.body if isinstance(i, (ast.FunctionDef, ast.AsyncFunctionDef)))
                    continue
                if isinstance(node, ast.Name):
                    mention(node.id)
                elif isinstance(node, ast.Attribute):
                    mention(node.attr)
                elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                    mention(node.value)  # getattr(obj, "name"), a name a loop or a caller gives as a string
                elif isinstance(node, ast.MatchClass):
                    for attr in node.kwd_attrs:  # case Point(x=...) reads subject.x
                        mention(attr)
                stack.extend(ast.iter_child_nodes(node))

        methods = {id(item) for defs in classes.values() for cls in defs for item in cls.body}
        for name in [*self.entry_points, *(n.name for defs in functions.values() for n in defs
                                             if n.name.startswith("__") and id(n) not in methods)]:
            mention(name)  # and a module's __getattr__ and its kind (under an if too), which Python calls unasked
        for top in body:
            visit(top)
        done = set()
        while queue:
            item = queue.pop()
            if id(item) in done:
                continue
            done.add(id(item))
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.running.add(id(item))
                for statement in item.body:
                    visit(statement)
            else:
                visit(item)  # a base of a class used
        return nodes

    def _plain_base(self, base) -> bool:
        """A base whose making of a subclass calls none of the subclass's methods: the student's own
        classes (whose hooks are read, as theirs), object and the exceptions, and classes of torch and of
        the standard library's pure modules made by plain ``type`` (nn.Module's family). A library's
        metaclass (Enum's, ABC's) may call a class's methods as it makes it."""
        if isinstance(base, ast.Name) and (base.id in self.classes or base.id in BASES - {"Enum", "ABC", "NamedTuple"}
                                           and base.id not in self.imported and base.id not in self.foreign):
            return True
        parts = []
        while isinstance(base, ast.Attribute):
            parts.append(base.attr)
            base = base.value
        if not isinstance(base, ast.Name):
            return False
        path = self.imported.get(base.id) or self.foreign.get(base.id)
        if path is None:
            return False
        path = ".".join([path, *reversed(parts)])
        module, _, name = path.rpartition(".")
        loaded = sys.modules.get(module)  # looked at only where loaded already: nothing is imported for it
        if module.split(".")[0] not in BASE_MODULES or loaded is None:
            return False
        try:
            obj = getattr(loaded, name)
        except Exception:  # noqa: BLE001
            return False
        return isinstance(obj, type) and type(obj) is type

    # imports --------------------------------------------------------------------------------------
    def _imports(self, node) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                name = alias.asname or alias.name.split(".")[0]
                _bindable(node, name)
                self._imported_once(node, name, alias.name if alias.asname else name)
                if self._allowed_module(node, alias.name):
                    self.imported[name] = alias.name if alias.asname else name
                elif alias.name in self.course_modules:
                    self.students.add(name)
                else:
                    self.foreign[name] = alias.name
            return
        if node.level or not node.module:
            raise _Found(node, "a relative import")
        if node.module in self.course_modules:
            self.students.update(alias.asname or alias.name for alias in node.names)
            return
        allowed = node.module == "__future__" or self._allowed_module(node, node.module)
        for alias in node.names:
            if alias.name == "*":
                raise _Found(node, f"`from {node.module} import *` (name what you import)")
            path = f"{node.module}.{alias.name}"
            _bindable(node, alias.asname or alias.name)
            self._imported_once(node, alias.asname or alias.name, path)
            if allowed:
                self.imported[alias.asname or alias.name] = path
                if node.module != "__future__":
                    self._path(node, path)
            else:
                self.foreign[alias.asname or alias.name] = path

    def _imported_once(self, node, name: str, path: str) -> None:
        """A name is imported from one place only: ``import torch.nn.functional as F`` then ``import torch._C as
        F`` was read as the first and ran as the second (round 8)."""
        earlier = self.imported.get(name) or self.foreign.get(name) or (name if name in self.students else None)
        if earlier is not None and earlier != path:
            raise _Found(node, f"the name {name} imported twice ({earlier} and {path}): give each its own name")

    def _allowed_module(self, node, name: str) -> bool:
        """Whether the names of module ``name`` are read (else they are foreign: refused where used). A
        module of the submission's own folders that is not the course's is refused at once: importing it
        runs code not read here."""
        if name.split(".")[0] in self.own and name not in self.course_modules:
            raise _Found(node, f"`import {name}`, a file of yours the grader does not read (write your code in "
                               "the assignment's file)")
        return name in MODULES or name in SOME_OF

    # every node -----------------------------------------------------------------------------------
    def _node(self, node) -> None:
        if isinstance(node, ast.Name):
            self._name(node)
        elif isinstance(node, ast.Attribute):
            self._attribute(node)
        elif isinstance(node, ast.MatchClass):
            for attr in node.kwd_attrs:  # ``case object(__globals__=g)`` reads the attribute as subject.__globals__
                self._attribute_name(node, attr)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and id(node) in self.running:
            if node.name.startswith("__") and node.name.endswith("__") and node.name not in DUNDER_DEFS:
                raise _Found(node, f"a method named {node.name}, which torch's own code may call where the grader "
                                   "cannot watch it")
            if (guarded := _finalised(node)) is not None:
                raise _Found(guarded, f"a generator ({node.name}) with a try or with block around a yield, whose code "
                                      "runs whenever the generator is let go, where the grader may not watch it")
        elif isinstance(node, ast.ClassDef) and id(node) in self.used_classes:
            self._class(node)
        elif isinstance(node, ast.Call) and (looked_up := _format_looks_up(node)):
            raise _Found(node, looked_up)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id not in self.bound:
            if node.func.id == "type" and (len(node.args) != 1 or node.keywords):
                raise _Found(node, "type(...) to make a class")
            if node.func.id in BY_NAME and self._named_plainly(node):
                self.plain_lookups.add(id(node.func))

    def _named_plainly(self, call: ast.Call) -> bool:
        """getattr(obj, name) (setattr, hasattr) with a public name written in the file: a string, or a
        variable bound only by loops over strings (``for name in ("W_query", "W_key")``), on an object
        that is not a module."""
        if len(call.args) < 2 or call.keywords or any(isinstance(a, ast.Starred) for a in call.args):
            return False
        target, name = call.args[0], call.args[1]
        root = target
        while isinstance(root, (ast.Attribute, ast.Subscript, ast.Call)):
            root = root.func if isinstance(root, ast.Call) else root.value
        if isinstance(root, ast.Name) and (root.id in self.imported or root.id in self.foreign):
            return False
        if isinstance(name, ast.Constant):
            return _public(name.value)
        if not isinstance(name, ast.Name):
            return False
        return bool(self.loop_strings.get(name.id)) or self._passed_strings(name.id)

    def _passed_strings(self, name: str) -> bool:
        """``name`` is only ever a parameter, of functions (or methods) that the file alone calls, and
        every call gives it a public string written there: ``self._project(x, "W_query")``."""
        if name in self.stored or name not in self.parameters:
            return False
        for function, index, method in self.parameters[name]:
            if function in self.entry_points or function.startswith("__"):
                return False
            calls = [c for c in self.calls if (c.func.id if isinstance(c.func, ast.Name) else c.func.attr) == function]
            if not calls:
                return False
            for call in calls:
                position = index - (1 if method and isinstance(call.func, ast.Attribute) else 0)
                given = [k.value for k in call.keywords if k.arg == name] or \
                    call.args[position:position + 1] if 0 <= position else []
                if len(given) != 1 or not isinstance(given[0], ast.Constant) or not _public(given[0].value) \
                        or any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
                    return False
        return True

    def _name(self, node: ast.Name) -> None:
        name = node.id
        if name.startswith("__") and (name not in DUNDER_READS or not isinstance(node.ctx, ast.Load)):
            raise _Found(node, f"the name {name}" + ("" if isinstance(node.ctx, ast.Load) else " bound"))
        if name in self.imported:
            if isinstance(node.ctx, ast.Load):
                self._value(node, name, self._path(node, self.imported[name]))
        elif name in self.foreign:
            raise _Found(node, f"{self.foreign[name]} (the grader watches only code that uses torch, math and "
                               "plain Python)")
        elif name not in self.bound and name not in self.students and hasattr(builtins, name) \
                and name not in BUILTINS and name not in MODULE_TEXTS and id(node) not in self.plain_lookups \
                and id(node) not in self.names_only:
            raise _Found(node, f"{name}(), which the grader does not follow")
        elif name not in self.bound and name not in self.students and not hasattr(builtins, name) \
                and isinstance(node.ctx, ast.Load):
            # a name nothing here defines: a NameError, or one put into the module's globals by a way round
            raise _Found(node, f"{name}, which nothing in the file defines")

    def _attribute(self, node: ast.Attribute) -> None:
        attr = node.attr
        if attr in ("__name__", "__qualname__"):  # a class's name, read from type(x) or x.__class__: a string
            inner = node.value
            if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.func.id == "type" \
                    and len(inner.args) == 1 and not inner.keywords and not isinstance(inner.args[0], ast.Starred):
                self.names_only.add(id(inner.func))
            elif isinstance(inner, ast.Attribute) and inner.attr == "__class__":
                self.names_only.add(id(inner))
        owner = isinstance(node.value, ast.Name) and node.value.id in OWNERS
        self._attribute_name(node, attr, owner)
        path = self._dotted(node)
        if path is not None:
            if not isinstance(node.ctx, ast.Load):
                raise _Found(node, f"an assignment to {path}")
            self._value(node, path, self._path(node, path))

    def _attribute_name(self, node, attr: str, owner: bool = False) -> None:
        """An attribute read or written by name: ``x.attr``, or a class pattern's keyword (``case C(attr=...)``).
        ``owner``: read on a method's ``self`` or ``cls`` (the file's own private names may be)."""
        if attr.startswith("__") and attr.endswith("__"):
            if attr not in DUNDER_READS and id(node) not in self.names_only:
                raise _Found(node, f".{attr}")
        elif attr.startswith("_") and not (attr in self.own_private and owner):
            raise _Found(node, f".{attr} (a private name)")
        if attr in ESCAPES:
            raise _Found(node, f".{attr}(), which takes values where the grader cannot watch them")
        if attr in BACKWARD:
            raise _Found(node, f".{attr}, a backward pass inside your code, whose hooks run where the grader "
                               "cannot watch them")

    def _value(self, node, path: str, obj) -> None:
        """A module is only ever the start of a dotted name read here: kept in a variable or passed on
        (``t = torch``), what code did with it next would not be read."""
        if isinstance(obj, types.ModuleType) and id(node) not in self.chained:
            raise _Found(node, f"the module {path} as a value (write {path}.<name> where you use it)")

    def _dotted(self, node: ast.Attribute) -> str | None:
        """``torch.nn.functional.softmax`` for an attribute chain rooted at an imported name, else None."""
        parts = [node.attr]
        value = node.value
        while isinstance(value, ast.Attribute):
            parts.append(value.attr)
            value = value.value
        if isinstance(value, ast.Name) and value.id in self.imported and value.id not in self.bound:
            return ".".join([self.imported[value.id], *reversed(parts)])
        return None

    def _class(self, node: ast.ClassDef) -> None:
        if node.keywords:
            raise _Found(node, f"class {node.name}(..., {node.keywords[0].arg}=...)")
        for base in node.bases:
            if isinstance(base, ast.Name) and (base.id in self.classes or base.id in BASES and
                                               base.id not in self.imported):
                continue
            root = base
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in self.students and root.id not in self.imported:
                continue  # a class of the student's own module of the course (read on its own): 03's CausalAttention
            path = base.id if isinstance(base, ast.Name) and base.id in self.imported else \
                self._dotted(base) if isinstance(base, ast.Attribute) else None
            target = self._path(base, self.imported.get(path, path)) if path else None
            if not _module_class(target) and not (path and path.rsplit(".", 1)[-1] in BASES):
                raise _Found(node, f"class {node.name} built on {_shown(base)} (only nn.Module and your own "
                                   "classes)")

    # what a dotted path stands for ------------------------------------------------------------------
    def _path(self, node, path: str):
        """The object ``path`` names, when every step of it is allowed; else _Found."""
        if path in self.checked:
            return self.checked[path]
        parts = path.split(".")
        module_name, obj = None, None
        for end in range(len(parts), 0, -1):  # the longest importable prefix
            prefix = ".".join(parts[:end])
            if prefix in MODULES or prefix in SOME_OF:
                module_name = prefix
                break
        if module_name is None:
            raise _Found(node, f"{path} (the grader watches only code that uses torch, math and plain Python)")
        try:
            obj = importlib.import_module(module_name)
        except ImportError:
            raise _Found(node, f"{module_name}, which the grader cannot read") from None
        where = module_name
        for part in parts[len(module_name.split(".")):]:
            where_module = obj.__name__ if isinstance(obj, types.ModuleType) else None  # the module, however reached
            if part.startswith("_") and not (part.startswith("__") and part in DUNDER_READS):
                raise _Found(node, f"{where}.{part} (a private name)")
            if where_module == "torch" and part.endswith("Storage"):  # UntypedStorage.from_file: memory off the books
                raise _Found(node, f"{where}.{part}, which the grader does not follow")
            if where_module is not None and (part in NOT_THESE.get(where_module, ()) or
                                             (where_module in SOME_OF and part not in SOME_OF[where_module])):
                raise _Found(node, f"{where}.{part}, which the grader does not follow")
            if f"{where}.{part}" in _REFUSED_PATHS:
                raise _Found(node, f"{where}.{part}, which the grader does not follow")
            try:
                obj = getattr(obj, part)
            except AttributeError:  # (round 8: a name shadowed by another import was read here as missing)
                raise _Found(node, f"{where}.{part}, which {where} does not have") from None
            except Exception as error:  # noqa: BLE001 - a name torch will not give (torch.qint8.is_signed)
                raise _Found(node, f"{where}.{part}, which the grader could not read ({type(error).__name__})") from None
            if where_module is not None and where_module.split(".")[0] == "torch" and not _torch_object(obj):
                raise _Found(node, f"{where}.{part}, which the grader does not follow (not a tensor operation)")
            where = f"{where}.{part}"
            if isinstance(obj, types.ModuleType) and obj.__name__ not in MODULES and obj.__name__ not in SOME_OF \
                    and where not in MODULES and where not in SOME_OF:
                raise _Found(node, f"{where} (the grader watches only code that uses torch, math and plain Python)")
            if part in ESCAPES:
                raise _Found(node, f"{where}, which takes values where the grader cannot watch them")
        self.checked[path] = obj
        return obj


def _shown(node) -> str:
    """A base as the student wrote it, read without recursion and cut short."""
    parts = []
    while isinstance(node, ast.Attribute) and len(parts) < 8:
        parts.append(node.attr)
        node = node.value
    root = node.id if isinstance(node, ast.Name) else "..."
    return ".".join([root, *reversed(parts)])


def _plain_reference(node) -> bool:
    """A name or a dotted name (``nn.Module``): evaluating it calls nothing."""
    return _root(node) is not None


_TORCH_FUNCTIONS: set = set()  # ids of torch's tensor operations (overridable), made once


def _torch_object(obj) -> bool:
    """What torch's namespaces may give a submission: its modules on the list, tensor operations (those
    torch.overrides can watch, and the factories and switches of its ignored ones that make or describe
    tensors), the classes a lesson builds on or names, dtypes, devices and plain constants. Not the
    classes and switches of torch._C it re-exports under public names (DisableTorchFunction,
    ExcludeDispatchKeyGuard, DispatchKeySet), which take the watching off."""
    import torch

    if not _TORCH_FUNCTIONS:
        from torch.overrides import get_ignored_functions, get_overridable_functions

        _TORCH_FUNCTIONS.update(id(f) for fs in get_overridable_functions().values() for f in fs)
        _TORCH_FUNCTIONS.update(id(f) for f in get_ignored_functions()
                                if getattr(f, "__name__", "") in IGNORED_BUT_PLAIN)
        _TORCH_FUNCTIONS.update(id(getattr(torch, n)) for n in TORCH_CLASSES if hasattr(torch, n))
        _TORCH_FUNCTIONS.update(id(getattr(torch.jit, n)) for n in SOME_OF["torch.jit"] if hasattr(torch.jit, n))
    if isinstance(obj, types.ModuleType):
        return True  # judged as a module (MODULES)
    if isinstance(obj, (bool, int, float, complex, str, type(None), torch.dtype, torch.device, torch.layout,
                        torch.memory_format)):
        return True
    if isinstance(obj, type):
        return issubclass(obj, torch.nn.Module) or obj in (torch.nn.Parameter, getattr(torch.nn, "Buffer", None)) \
            or id(obj) in _TORCH_FUNCTIONS
    return id(obj) in _TORCH_FUNCTIONS or getattr(obj, "__module__", "") in ("torch.nn.init", "math")


def _public(value) -> bool:
    return isinstance(value, str) and value.isidentifier() and not value.startswith("_") and value not in ESCAPES


def _module_class(obj) -> bool:
    """nn.Module or one of its subclasses that torch defines."""
    import torch

    return isinstance(obj, type) and issubclass(obj, torch.nn.Module)


def _runs_as_main(node: ast.stmt) -> bool:
    test = node.test if isinstance(node, ast.If) else None
    return isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__" \
        and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq) and len(test.comparators) == 1 and isinstance(test.comparators[0], ast.Constant) \
        and test.comparators[0].value == "__main__"


_KEPT: dict = {}  # by the file's name and bytes


def kept_code(path: Path) -> tuple[str, list[tuple[int, str]]]:
    """The code of a submission's file that runs in the worker: a module's text, or a notebook's kept
    statements (grader.inside.notebook_source), its cells joined; and where each cell starts (line,
    the cell's name as tracebacks show it). What was read of the same bytes under the same name is
    read once in a process."""
    data = read_bounded(path)

    def read():
        try:
            return _kept_code(path, data)
        except _Unread as why:
            return why

    kept = _remembered(_KEPT, (path.name, hashlib.blake2b(data, digest_size=20).digest()), read)
    if isinstance(kept, _Unread):
        raise _Unread(str(kept))
    return kept


def _kept_code(path: Path, data: bytes) -> tuple[str, list[tuple[int, str]]]:
    if path.suffix != ".ipynb":
        try:  # Python reads a module in the encoding its first lines declare (a utf-7 one hides code in a comment)
            encoding = tokenize.detect_encoding(io.BytesIO(data).readline)[0]
        except SyntaxError:
            encoding = "unknown"
        if encoding not in ("utf-8", "utf-8-sig"):
            raise _Unread(f"{path.name} declares the source encoding {encoding}, which the grader does not read "
                          "(write it in UTF-8)")
        try:
            text = importlib.util.decode_source(data)  # as the importer reads it (a BOM dropped)
        except (SyntaxError, ValueError):
            raise _Unread(f"{path.name} is not UTF-8 text, which the grader does not read") from None
        problem = code_problem(text)
        if problem is not None:
            raise _Unread(f"{path.name} holds {problem}, which is more than the grader reads")
        return text, []
    pieces, places, line = [], [], 1
    for filename, code, problem in cell_codes(data, path.name, cell_chars=LIMITS.cell_chars):
        if problem is not None and not problem.startswith("a syntax error"):  # (one that does not compile stops the import)
            raise _Unread(f"{filename} holds {problem}, which is more than the grader reads")
        code = "" if problem is not None else code
        places.append((line, filename))
        pieces.append(code)
        line += code.count("\n") + 1
    return "\n".join(pieces), places
