"""Stand-ins for a student's helpers, in the student's process, while the grader verifies a case kept as
"right, given your helper" (grader.grading.oracle).

A stand-in has the helper's name and takes the helper's arguments, but computes nothing: it sends the
call's values to the grader, which answers with the right result of that call (or refuses), and
returns that. A class stand-in holds parameters of the shapes the grader names, and asks the grader for
its forward pass, parameters included. Gradients go the same way: the backward pass sends the gradient of
the output and receives the gradients of the inputs. Nothing of a right helper is here: no formula, no
source, no code object; only values cross the boundary (the trust model: "answers stay on the grader's
side").
"""
from __future__ import annotations

import weakref

from grader.inside.protocol import flatten, mapped


class Refused(RuntimeError):
    """The grader did not answer this call (the grader knows, whatever the student's code does with this)."""


def stand_ins(ask, helpers: dict, device: str) -> dict:
    """``{name: stand-in}`` for ``helpers`` (``{name: "function" | "class"}``); ``ask(question) -> answer``
    sends one question to the grader and waits for its answer."""
    ask = _reporting(ask)
    return {name: (_module_class if kind == "class" else _function)(ask, name, device)
            for name, kind in helpers.items()}


def _reporting(ask):
    """``ask``, where a question that cannot be sent (arguments that are not values: a function, an object) is
    still told to the grader, as a call no right exercise makes, before the stand-in refuses it (red team round
    25: a helper passed a function as a flag ran the caller's loop in its frame; the stand-in's failure to send
    it was caught, and the exercise's other code taken as verified)."""
    def asked(question: dict):
        try:
            return ask(question)
        except (TypeError, ValueError, RecursionError):  # the encoder's refusals: nothing was sent
            ask({"op": question.get("op"), "name": question.get("name"), "misused": True})
            raise Refused("a call with arguments that are not values") from None

    return asked


def _function(ask, name: str, device: str):
    def stand_in(*args, **kwargs):
        return _asked(ask, {"name": name}, args, kwargs, (), device)

    stand_in.__name__ = stand_in.__qualname__ = name
    return stand_in


def _module_class(ask, name: str, device: str):
    import torch

    built_with: dict = {}  # id(instance) -> (a reference to it, its build arguments): nothing on the instance to read

    def remember(instance, args, kwargs) -> None:
        built_with[id(instance)] = (weakref.ref(instance, lambda _, key=id(instance): built_with.pop(key, None)),
                                    args, kwargs)

    def built(instance):
        """(args, kwargs) ``instance`` was built with by this stand-in; None for any other."""
        entry = built_with.get(id(instance))
        return entry[1:] if entry is not None and entry[0]() is instance else None

    class StandIn(torch.nn.Module):  # its __init__ and forward run in the student's own class (worker.Server.stand_in)
        def __init__(self, *args, **kwargs):
            torch.nn.Module.__init__(self)
            built = _answer(ask({"op": "new", "name": name, "args": args, "kwargs": kwargs}))
            remember(self, args, kwargs)
            for path, (features_in, features_out, bias) in built["linears"].items():
                _place(self, path, torch.nn.Linear(features_in, features_out, bias=bias))
            for path, value in built["params"].items():
                owner, leaf = _owner(self, path)
                if not isinstance(getattr(owner, leaf, None), torch.nn.Parameter):
                    owner.register_parameter(leaf, torch.nn.Parameter(value.to(device)))
                else:
                    with torch.no_grad():
                        getattr(owner, leaf).copy_(value)

        def __getstate__(self):  # a copy (copy.deepcopy of the heads, session 18's styles) is built as this was
            state = torch.nn.Module.__getstate__(self)
            return state if built(self) is None else {**state, _BUILT: built(self)}

        def __setstate__(self, state):
            state = dict(state)
            built = state.pop(_BUILT, None)
            torch.nn.Module.__setstate__(self, state)
            if isinstance(built, tuple) and len(built) == 2:
                remember(self, *built)

        def forward(self, *args, **kwargs):
            names, params = zip(*self.named_parameters()) if list(self.parameters()) else ((), ())
            if built(self) is None:
                raise Refused("an instance the stand-in did not build")
            args_of, kwargs_of = built(self)
            question = {"name": name, "new_args": args_of, "new_kwargs": kwargs_of, "training": self.training,
                        "param_names": list(names)}
            return _asked(ask, question, args, kwargs, params, device)

    StandIn.__name__ = StandIn.__qualname__ = name
    return StandIn


_BUILT = "grader stand-in: built with"  # a key of a copy's state only, never an attribute (not a name)


def _place(root, path: str, module) -> None:
    owner, leaf = _owner(root, path)
    owner.add_module(leaf, module)


def _owner(root, path: str):
    """The module that holds ``path``'s last part, plain containers made on the way."""
    import torch

    *parents, leaf = path.split(".")
    owner = root
    for part in parents:
        if not isinstance(getattr(owner, part, None), torch.nn.Module):
            owner.add_module(part, torch.nn.Module())
        owner = getattr(owner, part)
    return owner, leaf


_RAISES = {"ValueError": ValueError, "RuntimeError": RuntimeError, "TypeError": TypeError,
           "IndexError": IndexError, "AssertionError": AssertionError}


def _answer(reply) -> dict:
    """The grader's answer; where a right helper raises on these arguments, the same kind of exception."""
    if isinstance(reply, dict) and reply.get("raises") in _RAISES:
        raise _RAISES[reply["raises"]](str(reply.get("message", "")))
    if not isinstance(reply, dict) or "refused" in reply:
        raise Refused(str(reply.get("refused") if isinstance(reply, dict) else "no answer"))
    return reply


def _asked(ask, question: dict, args, kwargs, params, device):
    """The grader's answer for ``question`` on these arguments (and a module's ``params``), differentiable
    where an input requires gradients."""
    import torch

    tensors = [t for t in flatten((args, kwargs)) if isinstance(t, torch.Tensor)] + list(params)
    wanted = [i for i, t in enumerate(tensors) if torch.is_grad_enabled() and t.requires_grad]
    if not wanted:
        return _on(_answer(ask(_forward(question, args, kwargs, params, wanted)))["out"], device)
    return _Asked.apply(ask, question, args, kwargs, params, wanted, device, *tensors)


def _forward(question, args, kwargs, params, wanted) -> dict:
    return {**question, "op": "forward", "args": args, "kwargs": kwargs, "params": list(params), "grad": wanted}


def _on(value, device: str):
    import torch

    if device == "cpu":
        return value
    return mapped(lambda leaf: leaf.to(device) if isinstance(leaf, torch.Tensor) else leaf, value)


def _make_asked():
    import torch

    class Asked(torch.autograd.Function):
        @staticmethod
        def forward(ctx, ask, question, args, kwargs, params, wanted, device, *tensors):
            answer = _answer(ask(_forward(question, args, kwargs, params, wanted)))
            ctx.ask, ctx.call, ctx.count, ctx.device = ask, answer.get("call"), len(tensors), device
            out = _on(answer["out"], device)
            return tuple(out) if isinstance(out, (tuple, list)) else out

        @staticmethod
        def backward(ctx, *grads):
            answer = _answer(ctx.ask({"op": "backward", "call": ctx.call, "grads": list(grads)}))
            back = list(answer.get("grads") or ())[: ctx.count]
            back += [None] * (ctx.count - len(back))
            return (None,) * 7 + tuple(_on(g, ctx.device) for g in back)

    return Asked


class _Lazy:
    """torch.autograd.Function made on first use (the worker imports torch after this module)."""

    def __init__(self):
        self.made = None

    def apply(self, *args):
        if self.made is None:
            self.made = _make_asked()
        return self.made.apply(*args)


_Asked = _Lazy()
