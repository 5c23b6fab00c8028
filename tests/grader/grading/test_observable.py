"""Observe or refuse (issue 44): what the grader watches of a computation (forbidden operations, operation
counts, block widths, memory) scores only where the submission's files, read in the grading process before
any of them runs, name nothing that could switch the watching off or compute out of its sight."""
import sys
import textwrap
from pathlib import Path

import pytest

from grader.config import load_course
from grader.grading.observable import unobserved
from grader.submission import resolve_submission

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tests" / "corpus"))
import corpus  # noqa: E402

COURSE = load_course(ROOT)
MODULES = frozenset(a.module_name for a in COURSE.assignments)
EXERCISES = frozenset(e for a in COURSE.assignments for e in a.exercises)


def reading(tmp_path, code: str, name: str = "attention_basics.py", **given) -> str | None:
    path = tmp_path / name
    path.write_text("import torch\nfrom torch import nn\nimport torch.nn.functional as F\n" + textwrap.dedent(code))
    return unobserved([path], course_modules=MODULES, entry_points=EXERCISES, **given)


# what each route of the attacks needs to name: refused, with the line
ROUTES = {
    "modes switched off": """
        def softmax(x, dim=-1):
            with torch._C.DisableTorchFunction():
                return torch.softmax(x, dim)
        """,
    "modes of torch's own, public path": """
        from torch.utils._python_dispatch import _disable_current_modes
        def softmax(x, dim=-1):
            with _disable_current_modes():
                return torch.softmax(x, dim)
        """,
    "an operator of one's own": """
        lib = torch.library.Library("mine", "DEF")
        def softmax(x, dim=-1):
            return torch.ops.mine.sm(x, dim)
        """,
    "numpy in an autograd.Function": """
        import numpy as np
        class Step(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return torch.from_numpy(np.exp(x.numpy()))
        def online_softmax(x, block_size):
            return Step.apply(x)
        """,
    "a tensor subclass": """
        class Liar(torch.Tensor):
            pass
        def flash_attention(q, k, v, block_size=64, causal=False):
            return Liar(q)
        """,
    "a subclass by as_subclass": """
        def flash_attention(q, k, v, block_size=64, causal=False):
            return q.as_subclass(torch.Tensor)
        """,
    "another process": """
        import multiprocessing
        POOL = multiprocessing.get_context("forkserver")
        def softmax(x, dim=-1):
            return x
        """,
    "a memfd": """
        import os
        def sliding_window_mask(num_queries, num_keys, window, q_start=0, k_start=0, device=None):
            os.memfd_create("cache")
        """,
    "a name looked up by a string": """
        def softmax(x, dim=-1):
            return getattr(torch, "_C")
        """,
    "a name made at run time": """
        def softmax(x, dim=-1):
            name = "".join(["soft", "max"])
            return getattr(torch, name)(x, dim)
        """,
    "exec": """
        def softmax(x, dim=-1):
            exec("y = 1")
        """,
    "__import__": """
        def softmax(x, dim=-1):
            return __import__("torch").softmax(x, dim)
        """,
    "globals": """
        def softmax(x, dim=-1):
            return globals()
        """,
    "a star import": """
        from torch import *
        """,
    "torch rebound, then torch.library": """
        def softmax(x, dim=-1):
            t = torch
            return torch.library
        """,
    "torch patched": """
        torch.softmax = lambda x, dim: x
        """,
    "a class made by type()": """
        Sub = type("Sub", (torch.Tensor,), {})
        """,
    "a used class's __torch_function__": """
        class Watcher(nn.Module):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                return func(*args, **kwargs)
        def softmax(x, dim=-1):
            return Watcher()
        """,
    "tolist": """
        def attention_scores(inputs):
            return torch.tensor([[sum(a * b for a, b in zip(p, q)) for q in inputs.tolist()] for p in inputs.tolist()])
        """,
    "operator.attrgetter": """
        import operator
        def softmax(x, dim=-1):
            return operator.attrgetter("_C")(torch)
        """,
    "typing.get_type_hints (evaluates text)": """
        import typing
        def softmax(x, dim=-1):
            return typing.get_type_hints(softmax)
        """,
    "a metaclass": """
        class Head(nn.Module, metaclass=type):
            pass
        def softmax(x, dim=-1):
            return Head()
        """,
    "a module __getattr__": """
        def __getattr__(name):
            return 1
        """,
    "a dunder name": """
        def softmax(x, dim=-1):
            return __builtins__
        """,
    "a module kept in a variable": """
        def softmax(x, dim=-1):
            t = torch
            return t.library
        """,
    "a module passed on": """
        def softmax(x, dim=-1):
            return (lambda m: m.library)(torch)
        """,
    "a module reached through typing": """
        import typing
        def softmax(x, dim=-1):
            return typing.functools.singledispatch
        """,
    "a generator's frame": """
        def softmax(x, dim=-1):
            g = (i for i in range(1))
            return g.gi_frame.f_builtins["getattr"](torch, "_C")
        """,
    "a module as a default argument": """
        def softmax(x, dim=-1, t=torch):
            return t.utils
        """,
    "__name__ rebound to run the __main__ block": """
        __name__ = "__main__"
        if __name__ == "__main__":
            import ctypes
        """,
    "another object's private name the file assigns to itself": """
        class Names:
            def __init__(self):
                self._C = None
        def softmax(x, dim=-1):
            return [torch][0]._C
        """,
    "a base class's __init_subclass__": """
        class Base:
            def __init_subclass__(cls):
                global softmax
                softmax = None
        class Child(Base):
            pass
        """,
    "an Enum's _generate_next_value_": """
        from enum import Enum, auto
        class Kind(Enum):
            def _generate_next_value_(name, start, count, last):
                return torch._C
            PLAIN = auto()
        """,
    "torch._C's switches under public names": """
        def softmax(x, dim=-1):
            with torch.DisableTorchFunction(), torch.ExcludeDispatchKeyGuard(torch.DispatchKeySet(torch.DispatchKey.Python)):
                return torch.softmax(x, dim)
        """,
    "the else of the __main__ guard": """
        if __name__ == "__main__":
            pass
        else:
            def softmax(x, dim=-1):
                return torch._C
        """,
    "a guard that is not ==": """
        if __name__ != "__main__":
            import ctypes
            ctypes.CDLL(None)
        """,
    "a decorator handed the function": """
        registry = []
        @registry.append
        def payload(x, dim=-1):
            return torch._C
        def softmax(x, dim=-1):
            return registry[0](x, dim)
        """,
    "a decorator handed a class": """
        box = []
        @box.append
        class Payload:
            def __call__(self, x):
                return torch._C
        """,
    "a module __getattr__ under an if": """
        if True:
            def __getattr__(name):
                return torch._C
        """,
    "a builtin's name bound elsewhere": """
        def unused(exec):
            return exec
        def softmax(x, dim=-1):
            exec("y = 1")
        """,
    "a torch name that raises when read": """
        SIGNED = torch.qint8.is_signed
        """,
    "a base 500 attributes deep": """
        class Deep(thing""" + ".a" * 500 + """):
            pass
        def softmax(x, dim=-1):
            return Deep()
        """,
    "functools.wraps copying a module's globals": """
        import functools
        from torch import Tensor
        def holder():
            pass
        functools.wraps(Tensor.backward, assigned=(), updated=("__globals__",))(holder)
        def softmax(x, dim=-1):
            return torch.softmax(x, dim)
        """,
    "enum.global_enum writing into another module": """
        import enum
        enum.global_enum(enum.Enum("Modes", {"_MODES": (1, 2)}, type=tuple, module="grader.inside.worker"))
        """,
    "a name nothing in the file defines": """
        def softmax(x, dim=-1):
            with _C.DisableTorchFunction():
                return torch.softmax(x, dim)
        """,
    "a storage made from a file": """
        def softmax(x, dim=-1):
            return torch.UntypedStorage.from_file("cache", True, 100)
        """,
    "torch.load": """
        def softmax(x, dim=-1):
            return torch.load("weights.pt", weights_only=False)
        """,
    # issue 44, round 4: help() imports any module by name (pydoc); a parameter named help elsewhere made the
    # top-level call look like the student's own name
    "help bound as a parameter, called as the builtin": """
        def _keep(help):
            return help
        help("causal_attention")
        def softmax(x, dim=-1):
            return torch.softmax(x, dim)
        """,
    "torch's class kept in a name private names are read on": """
        class Own:
            def _disabled_torch_function_impl(self):
                return None
        cls = torch.Tensor
        def softmax(x, dim=-1):
            return cls._disabled_torch_function_impl(x)
        """,
    "torch's class as a default of cls": """
        class Own:
            def _disabled_torch_function_impl(self):
                return None
        def softmax(x, dim=-1, cls=torch.Tensor):
            return cls._disabled_torch_function_impl(x)
        """,
    "a format string that looks up an attribute": """
        def softmax(x, dim=-1):
            kind = "{0.__class__.__mro__}".format(x)
            return torch.softmax(x, dim)
        """,
    "a format string the file does not write": """
        def softmax(x, dim=-1, text="{0}"):
            kind = text.format(x)
            return torch.softmax(x, dim)
        """,
    # round 5: a class pattern's keyword is an attribute read, written as a string in the syntax tree
    "a class pattern that reads a dunder": """
        def helper(x):
            return x
        def softmax(x, dim=-1):
            match helper:
                case object(__globals__=g):
                    b = g["__builtins__"]
            with b["__import__"]("torch._C", None, None, ["x"]).DisableTorchFunction():
                return torch.softmax(x, dim)
        """,
    # round 7: an import in a class body binds the class's attributes, read as Quiet.off, never as a name
    "an import inside a class": """
        class Quiet:
            from torch._C import DisableTorchFunction as off
        def softmax(x, dim=-1):
            with Quiet.off():
                return torch.softmax(x, dim)
        """,
    "an import under an if in a class": """
        class Quiet:
            if True:
                import numpy as np
        def softmax(x, dim=-1):
            return torch.from_dlpack(Quiet.np.exp(x))
        """,
    # round 8: a capture pattern bound __name__, so the main guard's body (never read) ran at import
    "a capture pattern that binds __name__": """
        match "__main__":
            case __name__:
                pass
        if __name__ == "__main__":
            def softmax(x, dim=-1):
                with torch._C.DisableTorchFunction():
                    return torch.softmax(x, dim)
        """,
    "an import that binds __name__": """
        from math import pi as __name__
        def softmax(x, dim=-1):
            return torch.softmax(x, dim)
        """,
    # round 8: a name imported twice was read as the first import and ran as the second
    "a name imported twice": """
        import torch.nn.functional as F
        import torch._C as F
        def softmax(x, dim=-1):
            with F.DisableTorchFunction():
                return torch.softmax(x, dim)
        """,
    "a library's name given to something else": """
        import math
        class Quiet:
            pass
        def softmax(x, dim=-1, math=Quiet):
            return math.off(x, dim)
        """,
    "a class pattern that reads a private name": """
        def softmax(x, dim=-1):
            match torch.Tensor:
                case type(_disabled_torch_function_impl=impl):
                    return impl(torch.softmax, (), (x, dim))
        """,
    # round 11: under inference_mode (and on the tensors made there) an operator torch would split reaches the
    # watching whole: cross_entropy's _log_softmax, layer_norm's sums, item's reads were never seen
    "torch.inference_mode around the work": """
        def softmax(x, dim=-1):
            with torch.inference_mode():
                return torch.nn.functional.cross_entropy(x, x.argmax(dim), reduction="none")
        """,
    "torch.inference_mode as a decorator": """
        @torch.inference_mode()
        def softmax(x, dim=-1):
            return torch.softmax(x, dim)
        """,
    # round 12: a hook fired by a backward inside the call runs within Tensor.backward's handling, where torch
    # has switched the watching of torch functions off
    "a forbidden call in a tensor hook": """
        def softmax(x, dim=-1):
            box = {}
            trigger = torch.zeros(1, requires_grad=True)
            trigger.register_hook(lambda g: box.setdefault("out", torch.softmax(x, dim)) and g)
            with torch.enable_grad():
                (trigger * 1.0).sum().backward()
            return box["out"]
        """,
    # round 32: a hook on the output's graph node runs in the grader's own backward pass, after the watched call
    "a forbidden gradient in a graph node's pre-hook": """
        def softmax(x, dim=-1):
            out = torch.exp(x - x.amax(dim, keepdim=True))
            out = out / out.sum(dim, keepdim=True)
            if out.requires_grad:
                out.grad_fn.register_prehook(lambda grads: grads)
            return out
        """,
    "a hook on a node further down the graph": """
        def softmax(x, dim=-1):
            out = torch.exp(x) / torch.exp(x).sum(dim, keepdim=True)
            node = out.grad_fn.next_functions[0][0]
            node.register_hook(lambda grads, outs: grads)
            return out
        """,
    "a backward pass alone": """
        def softmax(x, dim=-1):
            w = x.detach().requires_grad_()
            torch.logsumexp(w, dim).sum().backward()
            return w.grad
        """,
    # round 13: torch's own Python code calls an argument's protocol methods inside a torch function's handling,
    # where the watching of torch functions is off: a forbidden call in each ran unseen
    "an __eq__ that torch's __contains__ calls": """
        class Probe:
            def __eq__(self, other):
                return torch.softmax(other, -1)
        def softmax(x, dim=-1):
            return Probe() in x
        """,
    "an __iter__ that F.unfold's _pair calls": """
        class Kernel:
            def __iter__(self):
                yield from (1, 1)
        def softmax(x, dim=-1):
            return torch.nn.functional.unfold(x, Kernel())
        """,
    "a __bool__ that unflatten tests": """
        class Sizes(tuple):
            def __bool__(self):
                return True
        def softmax(x, dim=-1):
            return x.unflatten(-1, Sizes((2, 3)))
        """,
    "a __contains__ that deepcopy's memo calls": """
        import copy
        class Memo(dict):
            def __contains__(self, key):
                return False
        def softmax(x, dim=-1):
            return copy.deepcopy(x, Memo())
        """,
    "a __repr__ that an error message formats": """
        class Size:
            def __repr__(self):
                return "2"
        def softmax(x, dim=-1):
            return x.reshape(Size())
        """,
    "torch.inference_mode under another name": """
        from torch import inference_mode as quiet
        def softmax(x, dim=-1):
            with quiet(True):
                return torch.softmax(x, dim)
        """,
}


@pytest.mark.parametrize("route", ROUTES)
def test_every_route_around_the_watching_is_refused_with_its_line(tmp_path, route):
    why = reading(tmp_path, ROUTES[route])
    assert why is not None and why.startswith("attention_basics.py line "), (route, why)
    assert int(why.split(" line ")[1].split()[0]) > 3  # the student's line, not the header of this test


def test_a_module_is_read_as_the_importer_reads_it(tmp_path):
    """A byte-order mark (read as UTF-8 it made the file not parse, taken as observed) and a cookie naming
    an encoding Python knows but this reading could not."""
    path = tmp_path / "attention_basics.py"
    path.write_bytes(b"\xef\xbb\xbfimport torch\ndef softmax(x, dim=-1):\n    return torch._C\n")
    assert "._C" in unobserved([path], course_modules=MODULES, entry_points=EXERCISES)
    path.write_bytes(b"# -*- coding: latin-1 -*- \xff\nimport torch\n")
    assert unobserved([path], course_modules=MODULES, entry_points=EXERCISES)


def test_another_course_file_is_read_where_the_syntax_imports_it(tmp_path):
    """A fullwidth letter (from ｃausal_attention import ...) is the same module to Python: found by the
    syntax, not by searching the bytes, and 03's file is read."""
    helper = tmp_path / "causal_attention.py"
    helper.write_text("import torch\ndef fast(x, dim):\n    return torch._C\n")
    user = tmp_path / "attention_basics.py"
    user.write_text("from \uff43ausal_attention import fast\ndef softmax(x, dim=-1):\n    return fast(x, dim)\n")
    why = unobserved([user], course_files={"causal_attention": [helper]}, course_modules=MODULES,
                     entry_points=EXERCISES)
    assert why and why.startswith("causal_attention.py line 3"), why


def test_a_module_in_another_encoding_is_not_read_as_utf8(tmp_path):
    """A utf-7 cookie: read as UTF-8, the hidden code is one comment; Python imports it as code."""
    path = tmp_path / "attention_basics.py"
    hidden = "def softmax(x, dim=-1):\n    return torch._C\n"
    path.write_bytes(b"# -*- coding: utf-7 -*-\nimport torch\n# end " + hidden.encode("utf-7").replace(b"\n", b"+AAo-"))
    why = unobserved([path], course_modules=MODULES, entry_points=EXERCISES)
    assert why and "utf-7" in why


def test_a_file_of_the_students_own_beside_the_module_is_not_imported_unread(tmp_path):
    why = reading(tmp_path, "import helpers\n", own=frozenset({"helpers"}))
    assert why and "helpers" in why and "a file of yours" in why
    assert reading(tmp_path, "from causal_attention import CausalAttention\n") is None  # the course's: read too


def test_what_another_file_of_the_course_imports_runs(tmp_path):
    """A function of 03's file that only 04's names (``from causal_attention import helper``) runs when
    04's checks do: it is read as 03's own exercises are."""
    helper = tmp_path / "causal_attention.py"
    helper.write_text("import numpy as np\ndef helper(x):\n    return np.exp(x.numpy())\n")
    user = tmp_path / "multi_head_attention.py"
    user.write_text("from causal_attention import helper\ndef split_heads(x, num_heads):\n    return helper(x)\n")
    why = unobserved([user, helper], course_modules=MODULES, entry_points=EXERCISES)
    assert why and why.startswith("causal_attention.py line 3"), why
    user.write_text("import causal_attention\ndef split_heads(x, num_heads):\n    return getattr(causal_attention, 'helper')(x)\n")
    assert unobserved([user, helper], course_modules=MODULES, entry_points=EXERCISES)


def test_plain_python_torch_and_math_pass(tmp_path):
    assert reading(tmp_path, """
        import math
        import time
        from typing import Optional
        from functools import partial
        START = time.perf_counter()
        def softmax(x, dim=-1):
            shifted = x - x.amax(dim=dim, keepdim=True)
            e = shifted.exp()
            return e / e.sum(dim=dim, keepdim=True)
        class Heads(nn.Module):
            def __init__(self, d):
                super().__init__()
                self._scale = 1 / math.sqrt(d)
                for name in ("W_query", "W_key"):
                    setattr(self, name, nn.Linear(d, d))
            def forward(self, x: Optional[torch.Tensor] = None):
                return getattr(self, "W_query")(x) * self._scale
        if __name__ == "__main__":
            import numpy as np
            print(np.array(softmax(torch.ones(3)).tolist()))
        """) is None


def test_the_modules_own_name_read_in_a_function_passes(tmp_path):
    """A blind hunt for false alarms (session 18, tests/corpus/heldout/session18_styles2): ``assert __name__`` in
    simple_self_attention left the whole file unobserved ("__name__(), which the grader does not follow": the
    builtins module has a ``__name__`` too), softmax losing 25 points. The module's name and docstring are
    strings; binding them, or reaching the module through them, is still refused."""
    assert reading(tmp_path, """
        def simple_self_attention(x):
            assert __name__ is not None and (__doc__ is None or isinstance(__doc__, str))
            return torch.softmax(x @ x.mT, dim=-1) @ x
        """) is None
    for route in ("import sys\n            kind = sys.modules[__name__]", "kind = globals()[__name__]",
                  "__name__ = 'x'", "kind = __builtins__"):
        why = reading(tmp_path, f"""
            def simple_self_attention(x):
                {route}
                return torch.softmax(x @ x.mT, dim=-1) @ x
            """)
        assert why is not None, route


def test_a_private_class_attribute_of_the_files_own_class_is_read_on_self(tmp_path):
    """The same hunt: a helper kept as a private class attribute (``_split = staticmethod(split_qkv)``, read as
    ``self._split``) left 04's file unobserved, MultiHeadAttention losing 2.5 points. A private name the class's
    own body binds is the file's own, as ``self._cache = ...`` is; a private name it does not bind is not."""
    def fused(body: str) -> str | None:
        return reading(tmp_path, f"""
            def split_qkv(x, heads):
                return x.chunk(3, dim=-1)
            class FusedQKVAttention(nn.Module):
                {body}
                def forward(self, x):
                    q, k, v = self._split(x, self._heads)
                    return torch.softmax(q @ k.mT, dim=-1) @ v
            """, "multi_head_attention.py")

    assert fused("_split = staticmethod(split_qkv)\n                _heads: int = 2") is None
    assert fused("split = staticmethod(split_qkv)\n                heads: int = 2") is not None  # not its own


def test_a_generator_whose_code_runs_when_it_is_let_go_is_not_observed(tmp_path):
    """Red team round 27b (a2, a3, a5): a started generator's ``finally`` runs whenever the generator is let go,
    which its author can arrange for after a watched call (a generator kept on a tensor that outlives the call).
    A generator function with a try or with block around a yield leaves the file unobserved; generators and
    generator expressions without one (nothing of theirs runs when they are let go) are observed as before."""
    assert reading(tmp_path, """
        def rows(x):
            try:  # (a try block around no yield runs only while the generator runs)
                x = x.double()
            finally:
                pass
            try:  # (nor does one whose finally only lets names go, nor a handler GeneratorExit passes by)
                for row in x:
                    yield row.exp()
            except ValueError:
                raise
            finally:
                del x
        def softmax(x, dim=-1):
            e = torch.stack(list(rows(x - x.amax(dim=dim, keepdim=True))))
            return e / sum(e[..., i:i + 1] for i in range(e.shape[-1]))
        """) is None
    for block in ("try:\n                    yield\n                finally:\n                    x.exp()",
                  "try:\n                    yield\n                except GeneratorExit:\n                    x.exp()",
                  "try:\n                    yield\n                except:\n                    x.exp()",
                  "try:\n                    yield\n                except (ValueError, BaseException):\n                    x.exp()",
                  "with torch.no_grad():\n                    yield"):
        why = reading(tmp_path, f"""
            def later(x):
                {block}
            def softmax(x, dim=-1):
                kept = later(x)
                next(kept)
                return torch.softmax(x, dim)
            """)
        assert why is not None and "generator (later)" in why, block


def test_a_class_read_for_its_name_alone_passes(tmp_path):
    """A learner's input check named the type it was given in its error (``type(x).__name__``) and lost 52 of
    05's points as not observed: a class's name is a string. ``type(x)`` or ``x.__class__`` as a value, or any
    other attribute of them, is still refused."""
    assert reading(tmp_path, """
        def softmax(x, dim=-1):
            if not isinstance(x, torch.Tensor):
                raise TypeError(f"expected a tensor, got {type(x).__name__} ({x.__class__.__qualname__})")
            return torch.softmax(x, dim=dim)
        """) is None
    for route in ("kind = type(x)", "kind = type(x).__mro__", "kind = x.__class__", "kind = x.__class__.__base__",
                  "kind = type(x, (), {}).__name__"):
        why = reading(tmp_path, f"""
            def softmax(x, dim=-1):
                {route}
                return torch.softmax(x, dim=dim)
            """)
        assert why is not None, route


def test_code_that_never_runs_is_not_held_against_the_file(tmp_path):
    """A notebook's plotting helper (a function no code that runs names) and a class nothing uses may
    use what a graded computation may not."""
    assert reading(tmp_path, """
        from torch.overrides import TorchFunctionMode
        class CallLog(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                return func(*args, **(kwargs or {}))
        def draw(ax, grid):
            ax.imshow(grid.numpy())
        def softmax(x, dim=-1):
            return x.softmax(dim)
        """) is None
    assert reading(tmp_path, """
        import numpy as np
        def helper(x):
            return np.exp(x.numpy())
        def softmax(x, dim=-1):
            return helper(x)
        """) is not None  # named by an exercise: it runs


def test_a_name_passed_as_a_string_by_every_caller_may_be_looked_up(tmp_path):
    code = """
        class MultiHeadAttentionWrapper(nn.Module):  # an exercise: the grader makes it
            def _project(self, x, name):
                return getattr(self.head, name)(x)
            def forward(self, x):
                return self._project(x, "W_query") + self._project(x, {which})
        """
    assert reading(tmp_path, code.format(which='"W_key"')) is None
    assert reading(tmp_path, code.format(which='"_" + "C"')) is not None


def test_every_honest_file_of_the_corpora_and_the_solutions_is_observed(tmp_path):
    """Observe-or-refuse refuses no honest code: the solutions (modules and lesson notebooks), and every
    corpus entry (correct, mistaken, unnamed, the learner's) spliced into its assignment's module."""
    solutions = sorted((ROOT / "solutions").glob("*/*.py")) + sorted((ROOT / "solutions").glob("*/*.ipynb"))
    refused = [why for path in solutions if (why := unobserved([path], course_modules=MODULES,
                                                                entry_points=EXERCISES))]
    entries = corpus.mistakes() + corpus.unnamed() + corpus.correct() + corpus.learner("attempts") + \
        corpus.learner("correct")
    assert len(entries) > 500
    for number, entry in enumerate(entries):
        assignment = COURSE.assignment(corpus.assignment_of(COURSE, entry.exercise))
        path = tmp_path / f"{number}" / assignment.module
        path.parent.mkdir()
        module = ROOT / "solutions" / assignment.id / assignment.module
        path.write_text(corpus.splice(module.read_text(), entry.source))
        why = unobserved([path], course_modules=MODULES, entry_points=EXERCISES)
        if why:
            refused.append(f"{entry.name}: {why}")
    assert refused == []


def test_a_check_that_watches_earns_nothing_where_the_file_is_not_observed(submission_dir, grader, course):
    """01's softmax by torch.softmax behind DisableTorchFunction and _disable_current_modes (which took the
    worker's watching off, and scored 25/25 before issue 44): its checks (each watches for the forbidden
    call) fail, saying why in one line; a check that does not watch (the loops' values) keeps its points."""
    module = submission_dir / "01_attention_basics" / "attention_basics.py"
    module.write_text(module.read_text() + textwrap.dedent("""

        def softmax(x, dim=-1):
            with torch._C.DisableTorchFunction(), torch.utils._python_dispatch._disable_current_modes():
                return torch.softmax(x, dim)
        """))
    result = grader.grade(resolve_submission(submission_dir, course), (course.assignment("01_attention_basics"),),
                          seed=5).assignments[0]
    by_name = {e.name: e for e in result.exercises}
    assert by_name["softmax"].score == 0
    said = [c.message for c in by_name["softmax"].checks if c.status != "passed"]
    assert said and all(m.startswith("not observed: attention_basics.py line ") for m in said)
    assert "_disable_current_modes" in said[0] or "_C" in said[0]
    assert by_name["attention_scores_loop"].score == by_name["attention_scores_loop"].max_score


AS_TEXT = {
    # the whole tensor at once, each value scaled to an integer so that str() writes it exactly
    "str of the whole tensor": """
        def values_of(inputs):
            text = str((inputs.double() * 2**40).round().long())
            rows = [r.strip(" [],\\n") for r in text[text.index("["):text.rindex("]") + 1].split("]")]
            return [float(v) / 2**40 for r in rows for v in r.replace("[", "").split(",") if v.strip()]
        """,
    # round 5's: repr of each element's mantissa and exponent (iterating is one unbind; torch formats with its
    # modes switched off, so not even an .item() is counted)
    "repr of each element": """
        def values_of(inputs):
            whole, power = torch.frexp(inputs.double().reshape(-1))
            whole = (whole * 2.0**53).to(torch.int64)
            return [math.ldexp(int(repr(m)[7:-1]), int(repr(e)[7:].split(",")[0].rstrip(")")) - 53)
                    for m, e in zip(whole, power)]
        """,
}


@pytest.mark.parametrize("how", AS_TEXT)
def test_a_tensor_written_out_as_text_during_a_measure_is_not_observed(submission_dir, grader, course, how):
    """attention_scores as a Python loop over the values of its inputs read from their text: a handful of
    operators for any length, so it passed for vectorised before round 5 of issue 44. Its values are
    right, so the checks that compare them pass; the vectorised one says what it could not count and where."""
    module = submission_dir / "01_attention_basics" / "attention_basics.py"
    module.write_text(module.read_text() + "\n\nimport math\n" + textwrap.dedent(AS_TEXT[how]) + textwrap.dedent('''

        def attention_scores(inputs):
            flat = values_of(inputs)
            T, d = inputs.shape[-2], inputs.shape[-1]
            out = []
            for b in range(len(flat) // (T * d)):
                m = [flat[b * T * d + t * d:b * T * d + (t + 1) * d] for t in range(T)]
                out.append([[sum(x * y for x, y in zip(m[i], m[j])) for j in range(T)] for i in range(T)])
            return torch.tensor(out, dtype=inputs.dtype).reshape(*inputs.shape[:-1], T)
        '''))
    result = grader.grade(resolve_submission(submission_dir, course), (course.assignment("01_attention_basics"),),
                          seed=5).assignments[0]
    checks = {c.name: c for c in {e.name: e for e in result.exercises}["attention_scores"].checks}
    said = checks["attention_scores_vectorised"]
    assert said.status == "failed", said.message
    assert said.message.startswith("not observed: your code wrote a tensor (")
    assert "attention_basics.py, line " in said.message and "as text" in said.message


LAZY_TABLES = '''

import math
from typing import NamedTuple


class Tables(NamedTuple):
    cos: object
    sin: object

    def __iter__(self):  # what a reader of the reply would call: a Python loop over positions
        hd, theta, length, dtype = self.cos
        rows_c, rows_s = [], []
        for pos in range(length):
            angles = [pos * theta ** (-(2 * i) / hd) for i in range(hd // 2)]
            rows_c.append([math.cos(a) for a in angles + angles])
            rows_s.append([math.sin(a) for a in angles + angles])
        yield torch.tensor(rows_c, dtype=dtype)
        yield torch.tensor(rows_s, dtype=dtype)


def compute_rope_params(head_dim, theta_base=10_000, context_length=4096, dtype=torch.float32):
    if head_dim % 2:
        raise ValueError("head_dim must be even")
    return Tables((head_dim, theta_base, context_length, dtype), None)
'''


def test_a_returned_tuple_is_read_as_a_tuple_stores_it(submission_dir, grader, course):
    """Round 6 of issue 44: compute_rope_params returned a NamedTuple whose own __iter__ built the tables in a
    Python loop; the worker read the reply after its tracer stopped watching, so the call counted two
    operations and scored 10/10. The reply is read as the tuple stores it (the arguments it was made with):
    not the tables, so no check of it passes."""
    module = submission_dir / "06_decoding_attention" / "decoding_attention.py"
    module.write_text(module.read_text() + LAZY_TABLES)
    result = grader.grade(resolve_submission(submission_dir, course), (course.assignment("06_decoding_attention"),),
                          seed=5, exercises=("compute_rope_params",)).assignments[0]
    exercise = {e.name: e for e in result.exercises}["compute_rope_params"]
    assert [c.name for c in exercise.checks if c.status == "passed"] == ["rope_params_odd_head_dim"]


def test_each_file_is_parsed_once_for_its_imports_and_its_reading(tmp_path, monkeypatch):
    """The imports that decide which files are read, and the reading itself, share one parse of each file
    (a class of distinct files paid two); what is read is the same: a route in the imported file is found."""
    import ast

    from grader.grading import observable

    helper = tmp_path / "causal_attention.py"
    helper.write_text("import torch\ndef fast(x, dim):\n    return torch._C\n# parsed once\n")
    user = tmp_path / "attention_basics.py"
    user.write_text("from causal_attention import fast\ndef softmax(x, dim=-1):\n    return fast(x, dim)\n# once\n")
    parsed = []
    real = ast.parse
    monkeypatch.setattr(observable.ast, "parse", lambda code, *a, **k: parsed.append(code) or real(code, *a, **k))
    why = unobserved([user], course_files={"causal_attention": [helper]}, course_modules=MODULES,
                     entry_points=EXERCISES)
    assert why and why.startswith("causal_attention.py line 3"), why
    assert sorted(parsed) == sorted([helper.read_text(), user.read_text()]), len(parsed)


ROUND_27B = Path(__file__).resolve().parents[2] / "corpus" / "heldout" / "round27b_red_team"


@pytest.mark.slow
@pytest.mark.parametrize("attack", ["a1_hidden_softmax", "a2_finalizer_after_watch", "a3_finalizer_05",
                                    "a5_finalizer_flash"])
def test_work_the_watching_cannot_see_earns_no_more_than_the_same_work_done_openly(grader, course, tmp_path, attack):
    """Red team round 27b (blind, white box; tests/corpus/heldout/round27b_red_team): 01's softmax computed inside
    nn.TransformerEncoderLayer's fused operator (a1: 98.1 against 75 for torch.softmax called openly), and the
    library softmax or the whole score matrix run by a generator's ``finally`` that the tracer let go after its
    modes ended (a2: 01 100 against 75; a3: 05 100 against 86.67; a5: 05 100 against 60). Each now earns at most
    what the same work done openly earns."""
    scores = {}
    for form in ("attack", "plain"):
        module = next(ROUND_27B.glob(f"{attack}__{form}__*.py.txt"))
        name = module.name.split("__")[2].removesuffix(".txt")
        assignment = next(a for a in course.assignments if a.module == name)
        folder = tmp_path / form / assignment.id
        folder.mkdir(parents=True)
        (folder / name).write_text(module.read_text())
        result = grader.grade(resolve_submission(folder, course), (assignment,), seed=3)
        scores[form] = round(sum(e.score for e in result.assignments[0].exercises), 2)
    assert scores["attack"] <= scores["plain"], scores
