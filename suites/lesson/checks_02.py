"""The checks of 02_self_attention that name mistakes, shared by the hidden and the public suites.

Each compares the student's code with the reference on a case the suite chooses (``grade.same``,
``pair.same``) and, when it fails, names the mistake: one of attention's usual wrong computations
(suites/lesson/mistaken.py), a projection in the wrong role, or the student's own helper from another
exercise (the root cause: "right, given your attention_weights", a mistake costs once). Everything here
is computed from the lesson's formulas, the student's own calls and the weights both instances of a
module hold (``pair.weights``), never from the reference: it works the same when the reference is
present (the instructor's grading) and when its outputs are replayed (a student distribution).
"""
from __future__ import annotations

import functools

from grader.authoring import (CheckFailed, HandleRef, Mistake, RaisedFailure, StudentFault, diagnose, difference,
                              model, shape_mismatch, shape_str)
from lesson import mistaken


# --- attention as the lesson computes it -------------------------------------------------------------
def right_attention(q, k, v=None, mask=None):
    """softmax(Q Kᵀ / sqrt(d_k)) (@ V), hidden positions (True) removed, all-hidden rows zero."""
    return mistaken.attend(q, k, v, scale=k.shape[-1] ** -0.5, hidden=mask)


def attention_mistakes(q, k, v=None, mask=None):
    return mistaken.attention_mistakes(q, k, v, scale=k.shape[-1] ** -0.5, hidden=mask)


@model
def _weighted_values(weights, v):
    """The attention output of ``weights`` over the values ``v``: weights @ v."""
    return weights @ v


# --- the functions -----------------------------------------------------------------------------------
def weights_same(grade, queries, keys, mask=None, grad=False, overflow=False, grad_scale=1.0):
    """attention_weights matches the reference; if not, name the mistake that explains it. ``overflow``:
    scores large enough that inf or NaN in the output is a softmax that overflowed (softmax-unstable);
    otherwise NaN where the right answer is finite is a row whose keys are all hidden."""
    kwargs = {} if mask is None else {"mask": mask}
    right = functools.cache(lambda: right_attention(queries, keys, None, mask))  # only once a check failed

    def explain(out):
        if not diagnose.unstable(out, right()):
            return None
        return mistaken.UNSTABLE if overflow else \
            (None, "a query whose keys are all hidden must get all-zero weights, not NaN")

    grade.same("attention_weights", queries, keys, grad=grad, mistakes=attention_mistakes(queries, keys, None, mask),
               right=right, explain=explain, grad_scale=grad_scale,
               root_cause=batched_weights_crash(grade, queries, keys, mask), **kwargs)


def batched_weights_crash(grade, queries, keys, mask):
    """A raise of attention_weights on batched queries and keys ([..., T, d]) explained when the student's
    code is right on one sequence of them: its transpose swaps the wrong dimensions (keys.T reverses every
    one; transpose(0, 1) swaps the batch with the tokens), as 01's attention_scores can (round 7's learner:
    a traceback alone here, where 01 explained the same slip)."""
    import torch

    def explain(failure, out):
        if not isinstance(failure, RaisedFailure) or queries.dim() < 3 or keys.dim() != queries.dim():
            return None
        lead = (0,) * (queries.dim() - 2)
        one_mask = mask if mask is None or mask.dim() <= 2 else mask[(0,) * (mask.dim() - 2)]
        one_q, one_k = queries[lead].detach().clone(), keys[lead].detach().clone()
        theirs = diagnose.their(grade, "attention_weights", one_q, one_k,
                                **({} if one_mask is None else {"mask": one_mask}))
        if not isinstance(theirs, torch.Tensor):
            return None
        right = right_attention(one_q.double(), one_k.double(), None, one_mask)  # (scores in the hundreds too)
        if not diagnose.matches(grade, theirs, right.to(theirs.dtype)):
            return None
        return CheckFailed(
            f"{failure.message}\nyour attention_weights is right on one sequence {list(one_q.shape)} but raised on "
            f"the batch {list(queries.shape)}: work over the last two dimensions only, whatever comes before them. "
            "Transpose only the keys' last two dimensions, keys.transpose(-2, -1) (or keys.mT): keys.T reverses "
            f"every dimension of a batched tensor ({list(keys.shape)} becomes {list(reversed(keys.shape))}), and "
            "read sizes from the end (keys.shape[-1])")
    return explain


def sdpa_same(grade, queries, keys, values, mask=None, grad=False):
    """scaled_dot_product_attention matches the reference; if not, blame the student's attention_weights
    when that explains it, or name the mistake."""
    kwargs = {} if mask is None else {"mask": mask}
    grade.same("scaled_dot_product_attention", queries, keys, values, grad=grad, **kwargs,
               mistakes=attention_mistakes(queries, keys, values, mask),
               right=lambda: right_attention(queries, keys, values, mask),
               root_cause=lambda failure, out: attention_root_cause(grade, failure, out, queries, keys, values, mask))


def attention_root_cause(grade, failure, out, q, k, v, mask=None, *, via_sdpa=False):
    """The failure blamed on the student's attention_weights (or, ``via_sdpa``, scaled_dot_product_attention)
    when the output is what the student's own helper gives on the right queries, keys and values."""
    import torch

    kwargs = {} if mask is None else {"mask": mask}
    # an exercise may pass a mask that hides nothing where it has none (the same call, by the contract)
    empty = {"mask": torch.zeros(q.shape[-2], k.shape[-2], dtype=torch.bool)} if mask is None else None
    with torch.no_grad():
        right_weights = right_attention(q, k, None, mask)
        blamed = mistaken.blame(grade, failure, out, "attention_weights",
                                diagnose.their(grade, "attention_weights", q, k, **kwargs), right_weights,
                                lambda w: _weighted_values(w, v), attention_mistakes(q, k, None, mask),
                                chain=((q, k, v), lambda q, k, v: (q, k), lambda w, q, k, v: _weighted_values(w, v),
                                       kwargs,
                                       lambda q, k, mask=None: right_attention(q, k, None, mask)),
                                also=(((EMPTY_MASK, (q, k), empty),) if empty else ()))
        if blamed or not via_sdpa:
            return blamed
        return mistaken.blame(grade, failure, out, "scaled_dot_product_attention",
                              diagnose.their(grade, "scaled_dot_product_attention", q, k, v, **kwargs),
                              _weighted_values(right_weights, v), lambda o: o, attention_mistakes(q, k, v, mask),
                              also=(((EMPTY_MASK, (q, k, v), empty),) if empty else ()))


EMPTY_MASK = "with a mask that hides nothing"


# --- the modules: the right projections, from the weights both instances hold -------------------------
def v1_roles(pair):
    """x -> the right {"query", "key", "value"} of a SelfAttention_v1 pair (x @ W)."""
    w = pair.weights
    return lambda x: _v1_projections(w, x)


@model
def _v1_projections(weights, x):
    """The right {"query", "key", "value"} of x for a SelfAttention_v1's ``weights`` (x @ W)."""
    return {role: x @ weights[f"W_{role}"].to(x.device) for role in mistaken.ROLES}


def linear_roles(pair):
    """x -> the right {"query", "key", "value"} of a SelfAttention_v2 pair (nn.Linear projections)."""
    return lambda x: _linear_projections(pair.weights, x)


@model
def _linear_projections(weights, x):
    """The right {"query", "key", "value"} of x for a SelfAttention_v2's ``weights`` (nn.Linear projections)."""
    return {role: mistaken.linear(weights, f"W_{role}", x) for role in mistaken.ROLES}


def cross_roles(pair):
    """(x_q, x_kv) -> the right projections of a CrossAttention pair: the queries of x_q, the keys and
    values of x_kv."""
    w = pair.weights
    return lambda x_q, x_kv: _cross_projections(w, x_q, x_kv)


@model
def _cross_projections(weights, x_q, x_kv):
    """The right projections for a CrossAttention's ``weights``: the queries of x_q, the keys and values of x_kv."""
    return {"query": mistaken.linear(weights, "W_query", x_q), "key": mistaken.linear(weights, "W_key", x_kv),
            "value": mistaken.linear(weights, "W_value", x_kv)}


def projected(grade, project, *inputs) -> dict:
    import torch

    with torch.no_grad():
        return {role: t.detach().cpu() for role, t in project(*(x.to(grade.device) for x in inputs)).items()}


def module_same(grade, pair, *inputs, grad=False, project):
    """The student's module gives the reference's output; if not, name the mistake: in a helper it uses
    (the root cause), a projection in the wrong role, or one of attention's usual mistakes.
    ``project(x...)`` gives the right {"query", "key", "value"} projections of the inputs (``v1_roles``,
    ``linear_roles``, ``cross_roles`` of the pair)."""
    roles = functools.cache(lambda: projected(grade, project, *inputs))

    def candidates():
        q, k, v = roles().values()
        yield from mistaken.attention_mistakes(q, k, v, scale=k.shape[-1] ** -0.5, inputs=inputs[-1], roles=True)
        yield from mistaken.role_mistakes(roles(), right_attention)
        weight = pair.weights.get("W_query.weight") if pair.name == "SelfAttention_v2" else None
        if weight is not None and weight.shape[0] == weight.shape[1]:  # square: x @ layer.weight runs, the wrong way
            yield Mistake(None, UNTRANSPOSED, lambda: _untransposed_attention(pair.weights, inputs[0].detach().cpu()))

    def root_cause(failure, out):
        blamed = attention_root_cause(grade, failure, out, *roles().values(), via_sdpa=True)
        if blamed is None and isinstance(failure, RaisedFailure) and len(inputs) == 2:
            return cross_crash_explained(grade, pair, failure, *inputs)
        if blamed is None and isinstance(failure, RaisedFailure) and pair.name == "SelfAttention_v2":
            return weight_untransposed(grade, pair, failure, inputs[0])
        return blamed


    pair.same(*inputs, grad=grad, mistakes=candidates(), right=lambda: right_attention(*roles().values()),
              root_cause=root_cause)


UNTRANSPOSED = ("your forward multiplies x @ self.W_query.weight: nn.Linear stores its weight as [d_out, d_in], so "
                "that raises unless d_in == d_out, and even then uses the transposed projection (and no bias). Call "
                "the layer, self.W_query(x) (it computes x @ weight.T + bias), and the same for W_key and W_value")


@model
def _untransposed_attention(weights, x):
    """Attention whose projections are x @ layer.weight (no transpose, no bias)."""
    import torch

    with torch.no_grad():
        q, k, v = (x @ weights[f"W_{role}.weight"].to(x.dtype) for role in mistaken.ROLES)
        return right_attention(q, k, v)


def weight_untransposed(grade, pair, failure, x):
    """A raise of SelfAttention_v2's forward on ``x`` explained by projections written x @ layer.weight:
    the student's own SelfAttention_v2(d_in, d_in), where those shapes fit, given weights drawn here,
    gives that attention (and not the right one). None otherwise."""
    d_in = x.shape[-1]
    try:
        handle, named = their_module(grade, "SelfAttention_v2", d_in, d_in, dtype=pair.dtype)
    except _Unjudged:
        return None
    if set(named) != {f"W_{role}.weight" for role in mistaken.ROLES}:
        return None
    weights = {n: grade.randn(*p.shape, dtype=p.dtype, scale=0.5) for n, p in named.items()}
    probe = grade.randn(*x.shape, dtype=x.dtype)
    try:
        grade.student.request({"op": "load", "handle": handle.id, "params": weights})
        out = grade.call(handle, probe, label="SelfAttention_v2").out
    except (StudentFault, CheckFailed):
        return None
    wrong = _untransposed_attention(weights, probe)
    right = _v2_attention(weights, probe)
    if not diagnose.matches(grade, out, wrong) or diagnose.matches(grade, out, right):
        return None
    return CheckFailed(f"{failure.message}\non a SelfAttention_v2({d_in}, {d_in}), where it runs, your forward gives "
                       f"attention over x @ weight: {UNTRANSPOSED.split(': ', 1)[1]}")


@model
def _v2_attention(weights, x):
    """The right attention of a SelfAttention_v2 of ``weights`` on ``x`` (nn.Linear projections)."""
    return right_attention(*(mistaken.linear(weights, f"W_{role}", x) for role in mistaken.ROLES))


@model
def _v1_attention(params, x):
    """The right attention of a SelfAttention_v1 of parameters ``params`` on ``x`` (x @ W, W on the cpu)."""
    return right_attention(*(x @ params[f"W_{r}"].cpu() for r in mistaken.ROLES))


@model
def _attention_of_sources(weights, x_query, x_key, x_value):
    """The attention of a CrossAttention of ``weights`` whose query, key and value projections read
    ``x_query``, ``x_key`` and ``x_value`` (each the input a right or a wrong forward gives that role)."""
    import torch

    project = {role: mistaken.linear(weights, f"W_{role}", x)
               for role, x in zip(mistaken.ROLES, (x_query, x_key, x_value))}
    with torch.no_grad():
        return right_attention(*(project[r].detach().cpu() for r in mistaken.ROLES))


CROSS_SOURCES = {"x_q": 0, "x_kv": 1}


def cross_crash_explained(grade, pair, failure, x_q, x_kv):
    """A raise of CrossAttention's forward on ``x_q`` and ``x_kv`` explained by the input a projection
    read: the student's module, called on an ``x_kv`` as long as ``x_q``, gives the output of keys,
    values or queries taken from the other input (qkv-swapped, as the catalogue's hint says of
    cross-attention); or the raise is a projection built for one input's width fed the other's. None
    when neither explains it."""
    import itertools

    tq, tk, d_q, d_kv = x_q.shape[-2], x_kv.shape[-2], x_q.shape[-1], x_kv.shape[-1]
    if d_q == d_kv and tq != tk and x_q.shape[:-2] == x_kv.shape[:-2]:
        probe = x_kv[..., :tq, :] if tk > tq else grade.randn(*x_q.shape, dtype=x_q.dtype)
        try:
            out = pair.call(x_q, probe).out
        except (StudentFault, CheckFailed):
            out = None
        if out is not None:
            sources = (x_q, probe)
            for chosen in itertools.product(CROSS_SOURCES, repeat=3):
                if chosen == ("x_q", "x_kv", "x_kv"):
                    continue
                wrong = [f"{mistaken._PLURAL[role]} from {source}" for role, source, right in
                         zip(mistaken.ROLES, chosen, ("x_q", "x_kv", "x_kv")) if source != right]
                candidate = _attention_of_sources(pair.weights, *(sources[CROSS_SOURCES[source]].to(grade.device)
                                                                  for source in chosen))
                if diagnose.matches(grade, out, candidate):
                    return CheckFailed(
                        f"{failure.message}\nyour code computes the {' and the '.join(wrong)} (it gives that output "
                        f"when x_kv is as long as x_q): the queries come from x_q, the keys and values from x_kv, "
                        f"which may have another number of tokens ({tk} here, against x_q's {tq})", ("qkv-swapped",))
    found = shape_mismatch(failure.message, "matmul")
    if found is None or d_q == d_kv:
        return None
    _, given, takes, gives = found.sizes
    widths = {role: tuple(pair.weights[f"W_{role}.weight"].shape) for role in mistaken.ROLES}  # [d_out, d_in]
    if (given, takes) == (d_q, d_kv):
        fed, built = "x_q", [r for r in ("key", "value") if widths[r] == (gives, takes)] or ["key", "value"]
    elif (given, takes) == (d_kv, d_q) and widths["query"] == (gives, takes):
        fed, built = "x_kv", ["query"]
    else:
        return None
    layers = " or ".join(f"W_{r}" for r in built)
    owner = "x_kv" if fed == "x_q" else "x_q"
    return CheckFailed(f"{failure.message}\n{layers} (built for {owner}'s {takes} features) was given {fed}, of "
                       f"{given} features: the queries come from x_q (d_in_q = {d_q}), the keys and values from "
                       f"x_kv (d_in_kv = {d_kv})")


# --- building the modules ----------------------------------------------------------------------------
def module(grade, name, *args, **kwargs):
    """grade.module(name, *args, **kwargs), its failure to build the lesson's parameters told in the
    lesson's terms where the student's own module shows why (:func:`construction_hint`)."""
    try:
        return grade.module(name, *args, **kwargs)
    except CheckFailed as failure:
        hint = construction_hint(grade, name, args, kwargs)
        if not hint:
            raise
        raise CheckFailed(f"{failure.message}: {hint}", failure.misconceptions) from None


def construction_hint(grade, name, args, kwargs) -> str | None:
    """Why the student's own ``name(*args, **kwargs)`` has other parameters than the lesson's: biases
    that nn.Linear adds by default, or a CrossAttention projection sized by d_k where d_v is asked (or the
    reverse). None where neither explains it."""
    built = {k: v for k, v in kwargs.items() if k != "dtype"}
    try:
        _, named = their_module(grade, name, *args, dtype=kwargs.get("dtype"), **built)
    except _Unjudged:
        return None
    if not built.get("qkv_bias", False) and any(n.endswith(".bias") for n in named):
        return ("your layers have biases although qkv_bias=False: nn.Linear(d_in, d_out) has bias=True by default; "
                "build each with bias=qkv_bias")
    if name == "CrossAttention" and len(args) >= 4:
        d_k, d_v = args[2], args[3]
        sizes = {"query": ("d_k", d_k, "d_v", d_v), "key": ("d_k", d_k, "d_v", d_v),
                 "value": ("d_v", d_v, "d_k", d_k)}
        for role, (want, size, other, wrong) in sizes.items():
            weight = named.get(f"W_{role}.weight")
            if size != wrong and weight is not None and tuple(weight.shape)[0] == wrong:
                source = "d_in_q" if role == "query" else "d_in_kv"
                return (f"your W_{role} projects to {other} = {wrong}, but the {role}s have size {want} = {size}: "
                        f"nn.Linear({source}, {want})")
    return None


# --- copy_v2_weights_into_v1 -------------------------------------------------------------------------
def copied_pairs(grade, d_in, d_out, dtype=None, probe=None):
    """A SelfAttention_v2 and a SelfAttention_v1 (reference and student, each with the reference's weights),
    after copy_v2_weights_into_v1 ran on both sides. When the student's own SelfAttention_v1 cannot take
    the lesson's weights (its parameters have other shapes), the copy is judged given that v1
    (:func:`copy_given_their_v1`; ``probe``: what else this case checks, "storage" or "biases")."""
    try:
        v2 = grade.module("SelfAttention_v2", d_in, d_out, dtype=dtype)
    except CheckFailed as failure:  # the copy judged with a right SelfAttention_v2 in place of theirs
        raise diagnose.helper_at_fault(grade, failure, "SelfAttention_v2", "its parameters are not the lesson's",
                                       provisional=True) from None
    try:
        v1 = grade.module("SelfAttention_v1", d_in, d_out, dtype=dtype)
    except CheckFailed as failure:
        judged = copy_given_their_v1(grade, failure, d_in, d_out, dtype, probe)
        if isinstance(judged, CheckFailed):  # or with a right SelfAttention_v1 in place of theirs
            judged = diagnose.helper_at_fault(grade, judged, "SelfAttention_v1", "its parameters are not the "
                                              "lesson's", provisional=True)
        raise judged from None
    try:
        returned = grade.call("copy_v2_weights_into_v1", v2.handle, v1.handle).out
    except StudentFault as fault:
        explained = copy_crash_explained(grade, fault, d_in, d_out, dtype)
        raise (explained if explained is not fault else copy_crash_given_helpers(grade, fault, d_in, d_out, dtype)) \
            from None
    v1.copy_returned = returned  # the contract: (v2, v1) -> None (judged by copy_gives_output)
    if not grade.replaying:  # a replayed run has the reference's parameters after the copy on record
        grade.ref.copy_v2_weights_into_v1(v2.ref, v1.ref)
    return v2, v1


class _Unjudged(Exception):
    """The student's own modules cannot stand in for the lesson's here (a constructor raised, other names)."""


def their_module(grade, name, *args, dtype=None, **kwargs):
    """The student's own ``name(*args, **kwargs)`` as it builds itself, no weights loaded: (its handle, its
    parameters). Only the student's worker is asked, never the reference: it works the same in a replay."""
    try:
        state = grade.student.request({"op": "new", "name": name, "args": args, "kwargs": kwargs, "dtype": dtype,
                                       "state": True, "training": True, "params": None})
    except (StudentFault, CheckFailed):
        raise _Unjudged(name) from None
    return HandleRef(state["handle"]), dict(state.get("params") or {})


def _their_parameters(grade, handle) -> dict:
    return dict(grade.student.request({"op": "state", "handle": handle.id})["params"])


def _their_v2(grade, d_in, d_out, dtype=None):
    """The student's own SelfAttention_v2 of these sizes, given weights drawn here: (its handle, the
    weights by name). Raises _Unjudged where its parameters are not the lesson's W_query, W_key, W_value."""
    v2, named = their_module(grade, "SelfAttention_v2", d_in, d_out, dtype=dtype)
    if set(named) != {f"W_{role}.weight" for role in mistaken.ROLES}:
        raise _Unjudged("SelfAttention_v2")
    weights = {n: grade.randn(*p.shape, dtype=p.dtype, scale=0.3) for n, p in named.items()}
    grade.student.request({"op": "load", "handle": v2.id, "params": weights})
    return v2, weights


def _v1_problem(grade, theirs, weights, transposed=True):
    """The first role whose v1 parameter (in ``theirs``) does not hold the v2's weight, transposed as a
    right copy gives it (or, ``transposed=False``, as it is): (the role, the difference); else None."""
    for role in mistaken.ROLES:
        weight = weights[f"W_{role}.weight"]
        problem = difference(theirs.get(f"W_{role}"), weight.T if transposed else weight, grade.tolerance(weight),
                             f"parameter W_{role}")
        if problem:
            return role, problem
    return None


def copy_into_their_v1(grade, d_in, d_out, dtype=None, probe=None):
    """copy_v2_weights_into_v1 run on the student's own SelfAttention_v2 (given weights drawn here) and
    SelfAttention_v1 of these sizes, judged from the lesson's rule alone (the v1 holds the v2's weights,
    transposed, in storage of its own; the v2 is left alone; a v2 with biases is refused): what is wrong,
    or None. Raises _Unjudged where the student's modules cannot stand in for the lesson's."""
    v2, weights = _their_v2(grade, d_in, d_out, dtype)
    v1, _ = their_module(grade, "SelfAttention_v1", d_in, d_out, dtype=dtype)
    try:
        grade.call("copy_v2_weights_into_v1", v2, v1)
    except (StudentFault, CheckFailed) as fault:
        return f"it raised:\n{fault.message}"
    theirs = _their_parameters(grade, v1)
    found = _v1_problem(grade, theirs, weights)
    if found:
        role, problem = found
        return f"the v1's {problem} (it should hold the v2's W_{role}.weight, transposed)"
    if any(difference(p, weights[n], grade.tolerance(weights[n]), n) for n, p in _their_parameters(grade, v2).items()):
        return "your copy changed the v2's weights; it must leave the v2 alone"
    if probe == "storage":
        fresh = {n: grade.randn(*w.shape, dtype=w.dtype, scale=0.3) for n, w in weights.items()}
        grade.student.request({"op": "load", "handle": v2.id, "params": fresh})
        after = _their_parameters(grade, v1)
        moved = [f"W_{r}" for r in mistaken.ROLES if difference(after.get(f"W_{r}"), theirs[f"W_{r}"],
                                                                grade.tolerance(theirs[f"W_{r}"]), r)]
        if moved:
            return (f"a change to the v2's weights changed the v1's {', '.join(moved)} too: they share the v2's "
                    "storage (weight.T is a view); copy the values into the v1's own parameters")
    if probe == "biases":
        biased, _ = their_module(grade, "SelfAttention_v2", d_in, d_out, dtype=dtype, qkv_bias=True)
        v1, _ = their_module(grade, "SelfAttention_v1", d_in, d_out, dtype=dtype)
        try:
            grade.raises(("ValueError",), "copy_v2_weights_into_v1", biased, v1)
        except CheckFailed as failure:
            return f"with a SelfAttention_v2(qkv_bias=True) it {failure.message.rsplit(', but ', 1)[-1]}, not ValueError"
    return None


def copy_crash_explained(grade, fault, d_in, d_out, dtype=None):
    """A raise of the copy on a v1 of the lesson's shapes, explained when the copy run on the student's
    modules of a square size (where any layout fits) gives the v1 the v2's weights untransposed: the
    weight of nn.Linear is [d_out, d_in], the v1's [d_in, d_out]. Otherwise ``fault`` itself."""
    if fault.kind != "error" or d_in == d_out:
        return fault
    try:
        v2, weights = _their_v2(grade, d_in, d_in, dtype)
        v1, _ = their_module(grade, "SelfAttention_v1", d_in, d_in, dtype=dtype)
        grade.call("copy_v2_weights_into_v1", v2, v1)
        theirs = _their_parameters(grade, v1)
    except (_Unjudged, StudentFault, CheckFailed):
        return fault
    if _v1_problem(grade, theirs, weights, transposed=False):
        return fault
    return CheckFailed(f"{fault.message}\nyour copy gives the v1 the v2's weights without transposing them (on a "
                       f"SelfAttention_v1({d_in}, {d_in}), where that runs, the v1's W_query is the v2's "
                       "W_query.weight itself): nn.Linear stores its weight as [d_out, d_in], and the v1 wants "
                       "[d_in, d_out]: copy weight.T, v1.W_query.copy_(v2.W_query.weight.T)")


def copy_crash_given_helpers(grade, fault, d_in, d_out, dtype=None):
    """A raise of the copy where the student's own SelfAttention_v1 or SelfAttention_v2, of these sizes and alone,
    gives another output than the lesson's (a copy that checks its own result, ``assert torch.allclose(v1(x),
    v2(x))``, raises beside a wrong v1: session 18's styles hunt, 0 of 15): the helper's, provisionally, the copy
    run again with a right class in place of the wrong one deciding (as for any helper that stands in). Otherwise
    ``fault``. Computed from the student's own classes and the lesson's formula: the same in a replay."""
    import torch

    if fault.kind != "error":
        return fault
    x = grade.randn(3, d_in, dtype=dtype)
    try:
        v2, weights = _their_v2(grade, d_in, d_out, dtype)
        v1, params = their_module(grade, "SelfAttention_v1", d_in, d_out, dtype=dtype)
        outputs = {"SelfAttention_v2": grade.call(v2, x, label="SelfAttention_v2").out,
                   "SelfAttention_v1": grade.call(v1, x, label="SelfAttention_v1").out}
    except (_Unjudged, StudentFault, CheckFailed):
        return fault
    plain_x = x.detach().cpu()
    with torch.no_grad():
        right = {"SelfAttention_v2": _v2_attention(weights, plain_x),
                 "SelfAttention_v1": _v1_attention(params, plain_x)
                 if set(params) == {f"W_{r}" for r in mistaken.ROLES} else None}
    for name in ("SelfAttention_v1", "SelfAttention_v2"):
        if right[name] is not None and difference(outputs[name], right[name], grade.tolerance(right[name]), name):
            return diagnose.helper_at_fault(grade, fault, name, "it gives another output than the lesson's on its own",
                                            provisional=True)
    return fault


def copy_given_their_v1(grade, failure, d_in, d_out, dtype=None, probe=None):
    """The copy judged given the student's own SelfAttention_v1, whose parameters have other shapes than
    the lesson's [d_in, d_out] (``failure`` says so), so that no copy can write the v2's weights into it:
    the case is right given that v1 (it keeps its points, and the v1 is named) when the copy is right on
    the student's modules of a square size, where those shapes fit (the weights, the v2 left alone, and
    what else this case checks, ``probe``), and on the student's v1 of this case does what a right copy does
    there: raises on the sizes, or gives the v1 the v2's weights transposed. Otherwise ``failure``, or what
    the square copy shows wrong. Computed without the reference: the same in a replay."""
    try:
        _, shapes = their_module(grade, "SelfAttention_v1", d_in, d_out, dtype=dtype)
        roles = {f"W_{role}" for role in mistaken.ROLES}
        misshapen = {n: tuple(p.shape) for n, p in shapes.items() if tuple(p.shape) != (d_in, d_out)}
        if set(shapes) != roles or not misshapen:
            return failure
        _, square = their_module(grade, "SelfAttention_v1", d_in, d_in, dtype=dtype)
        if set(square) != roles or any(tuple(p.shape) != (d_in, d_in) for p in square.values()):
            return failure
        problem = copy_into_their_v1(grade, d_in, d_in, dtype, probe)
        if problem:
            return CheckFailed(f"{failure.message}; so your copy was judged on a SelfAttention_v1({d_in}, {d_in}), "
                               f"whose shapes fit: {problem}")
        v2, weights = _their_v2(grade, d_in, d_out, dtype)
        v1, _ = their_module(grade, "SelfAttention_v1", d_in, d_out, dtype=dtype)
        try:
            grade.call("copy_v2_weights_into_v1", v2, v1)
        except StudentFault as fault:  # a right copy raises on these shapes too: one that names them
            if fault.kind != "error" or not (diagnose.mentions(fault, d_in) and diagnose.mentions(fault, d_out)):
                return failure
        except CheckFailed:
            return failure
        else:  # or it replaced the parameters: then they must be the v2's weights, transposed
            if _v1_problem(grade, _their_parameters(grade, v1), weights):
                return failure
    except _Unjudged:
        return failure
    name, shape = next((n, misshapen[n]) for n in sorted(roles) if n in misshapen) if "W_query" not in misshapen \
        else ("W_query", misshapen["W_query"])
    return diagnose.helper_at_fault(
        grade, failure, "SelfAttention_v1",
        f"its parameter {name} has shape {shape_str(shape)}, not [d_in, d_out] = [{d_in}, {d_out}], so no copy can "
        f"write the v2's weights into it; your copy is right on a SelfAttention_v1({d_in}, {d_in}), whose shapes fit")


def v2_weights(v2) -> dict:
    """The v2's W_query, W_key, W_value weights, [d_out, d_in] each (as nn.Linear stores them)."""
    return {f"W_{role}": v2.weights[f"W_{role}.weight"] for role in mistaken.ROLES}


def copied_wrongly(grade, v2, v1) -> str | None:
    """What is wrong with the v1's parameters after the copy (the v2's weights, transposed), or None."""
    theirs = v1.student_parameters()
    for name, weight in v2_weights(v2).items():
        problem = difference(theirs.get(name), weight.T, grade.tolerance(weight), f"parameter {name}")
        if problem:
            return problem
    return None


def copied_mistake(grade, failure, v2, v1):
    """Name what the v1 received: another projection's weights (qkv-swapped), or a weight not transposed."""
    theirs = v1.student_parameters()
    weights = v2_weights(v2)  # W_query, W_key, W_value, as the v2 holds them
    for name, weight in weights.items():  # the right weights, in another dtype
        param, got = weight.T, theirs.get(name)
        if got is not None and got.shape == param.shape and got.dtype != param.dtype \
                and diagnose.matches(grade, got.to(param.dtype), param):
            return CheckFailed(f"{failure.message}; the values are right, the dtype is not: keep the modules' "
                               "dtype", ("wrong-dtype",))
    for role, got in theirs.items():
        for source, weight in weights.items():
            if source != role and diagnose.matches(grade, got, weight.T):
                return CheckFailed(f"{failure.message}; the v1's {role} received the v2's {source}",
                                   ("qkv-swapped",))
        if role in weights and diagnose.matches(grade, got, weights[role]) \
                and not diagnose.matches(grade, got, weights[role].T):
            return CheckFailed(f"{failure.message}; the v1's {role} received the v2's {role}.weight without "
                               "transposing it: nn.Linear stores [d_out, d_in]")
    return failure


def copy_gives_parameters(grade, v2, v1):
    """After the copy the v1 holds the v2's weights, transposed (else the mistake is named), and the v2
    is left as it was (else input-mutated)."""
    problem = copied_wrongly(grade, v2, v1)
    if problem:
        failure = CheckFailed(f"after copy_v2_weights_into_v1(v2, v1), the v1: {problem}")
        raise copied_mistake(grade, failure, v2, v1)
    v1.expect_same_parameters("after copy_v2_weights_into_v1(v2, v1), the v1")  # as the reference's holds them
    try:
        v2.expect_same_parameters("copy_v2_weights_into_v1(v2, v1) must leave the v2 alone, but the v2")
    except CheckFailed as failure:  # the v2 is the function's input: changing it is input-mutated
        raise CheckFailed(failure.message, ("input-mutated",)) from None


def copy_keeps_own_storage(grade, d_in, d_out, dtype=None):
    """After a right copy the v1's parameters hold storage of their own: new weights written into the v2
    (in place, as an optimizer step would) leave the v1 as it was. Parameters replaced by the v2's
    transposed weights (nn.Parameter(weight.T), or .data = weight.T: a view) change with the v2."""
    v2, v1 = copied_pairs(grade, d_in, d_out, dtype, probe="storage")
    copy_gives_parameters(grade, v2, v1)  # the points come with a right copy
    v2.new_weights(*(f"W_{role}" for role in mistaken.ROLES))
    theirs = v1.student_parameters()
    moved = [n for n, p in v1.reference_parameters().items()
             if difference(theirs.get(n), p, grade.tolerance(p), f"parameter {n}")]
    if moved:
        raise CheckFailed(f"after copy_v2_weights_into_v1(v2, v1), a change to the v2's weights changed the v1's "
                          f"{', '.join(moved)} too: they share the v2's storage (weight.T is a view, and "
                          "nn.Parameter(weight.T) or .data = weight.T keeps it). Copy the values into the v1's own "
                          "parameters: with torch.no_grad(): v1.W_query.copy_(v2.W_query.weight.T)")


def copy_refuses_biases(grade, d_in, d_out):
    """After a right copy of a v2 without biases, a v2 with biases (qkv_bias=True) is refused with a
    ValueError: the v1 has no biases to receive them, so its output would differ."""
    copy_gives_parameters(grade, *copied_pairs(grade, d_in, d_out, probe="biases"))  # the points come with a right copy
    try:
        biased = grade.module("SelfAttention_v2", d_in, d_out, qkv_bias=True)
    except CheckFailed as failure:  # their v2 cannot be built with biases: its own exercise's mistake, not the copy's;
        # the check is run again with a right v2 in its place (the stand-in), which alone decides this case
        raise diagnose.helper_at_fault(grade, failure, "SelfAttention_v2", failure.message, provisional=True) from None
    v1 = grade.module("SelfAttention_v1", d_in, d_out)
    try:
        grade.raises(("ValueError",), "copy_v2_weights_into_v1", biased.handle, v1.handle)
    except CheckFailed as failure:
        what = failure.message.rsplit(", but ", 1)[-1]
        raise CheckFailed("copy_v2_weights_into_v1(v2, v1) with a SelfAttention_v2(qkv_bias=True) should raise "
                          "ValueError (the v1 has no biases to receive the v2's, so its output would differ), but "
                          + ("it returned normally: the biases were dropped" if what == "returned normally"
                             else what)) from None


def copy_gives_output(grade, v2, v1, x):
    """After the copy the v1's forward gives the v2's output on ``x``; when its weights arrived right, a
    wrong output is its forward's (the attention it calls, where that explains it, else SelfAttention_v1)."""
    expected = v2.reference(x)
    out = v1.call(x).out
    try:
        grade.expect_close(out, expected, "after copy_v2_weights_into_v1(v2, v1), the v1 should give the v2's output",
                           diagnosed=True)
    except CheckFailed as failure:
        if copied_wrongly(grade, v2, v1):
            raise failure from None
        # the helper where the mistake is: the attention the v1's forward calls, where that explains its
        # output, else the SelfAttention_v1 exercise itself (never one that is not at fault)
        roles = projected(grade, linear_roles(v2), x)
        blamed = diagnose.cause(grade, lambda f, o: attention_root_cause(grade, f, o, *roles.values(), via_sdpa=True),
                                failure, out)
        raise (blamed or diagnose.helper_at_fault(grade, failure, "SelfAttention_v1", "its forward gives another "
                                                  "output than the v2's from the same weights")) from None
    returned = getattr(v1, "copy_returned", None)
    if returned is not None:
        what = getattr(returned, "type_name", None) or type(returned).__name__  # a module comes back by its type's name
        what = f"a {what}"
        raise CheckFailed(f"copy_v2_weights_into_v1(v2, v1) returned {what}; it should return None: it changes the v1 "
                          "in place (its parameters receive the v2's weights), so a caller needs nothing back. "
                          "Remove the return statement")
