"""The checks of 01_attention_basics that name mistakes, shared by the hidden and the public suites.

Each compares the student's code with the reference on a case the suite chooses (``grade.same``) and,
when it fails, names the mistake: a known wrong computation (suites/lesson/mistaken.py), inf or NaN
where the right answer is finite, or the student's own helper from another exercise (the root cause:
"right, given your softmax", a mistake costs once). Everything here is computed from the lesson's
formulas and the student's own calls, never from the reference: it works the same when the reference
is present (the instructor's grading) and when its outputs are replayed (a student distribution).
"""
from __future__ import annotations

import torch

from grader.authoring import (CheckFailed, GradientFailure, Mistake, RaisedFailure, StudentFault, diagnose,
                              helper_calls_not_growing, model, operations_allowed, shape_mismatch, shape_str)
from lesson import LAYOUT_OPS, VECTORISED, lengthened, mistaken, vectorised_on


def softmax_same(grade, name, x, dim=None, grad=False, grad_scale=1.0):
    """``name`` (softmax or softmax_naive) matches the reference; if not, name the mistake: inf or NaN
    where the right answer is finite, or a softmax along another dimension. ``dim`` None: the
    function's default dimension (the last), not passed. ``grad_scale``: the output gradient's size
    (grader.grading.fixture.Grade.same)."""
    kwargs = {} if dim is None else {"dim": dim}
    dim = -1 if dim is None else dim
    right = mistaken.safe_softmax(x, dim)

    def overflowed(out):
        return mistaken.UNSTABLE if diagnose.unstable(out, right) else None

    gradient = nan_gradient_explained(x, dim) if grad else None
    crash = sum_crash_explained(grade, name, x, dim, kwargs)

    def root_cause(failure, out):
        return crash(failure, out) or (gradient(failure, out) if gradient else None)

    grade.same(name, x, grad=grad, grad_scale=grad_scale, mistakes=[*mistaken.softmax_mistakes(x, dim),
                                                                    *global_max(x, dim)], right=right,
               explain=overflowed if name == "softmax" else None, normalised_exponential=name == "softmax",
               root_cause=root_cause, **kwargs)


def global_max(x, dim):
    """The softmax shifted by the maximum of the whole tensor, x.max(), instead of each slice's: offered only
    where that gives NaN on a slice that a shift by each slice's own maximum keeps finite (elsewhere the two
    agree, and a NaN is the all -inf slices', which softmax-unstable's own words explain)."""
    def output(guarded=False):
        return _globally_shifted(x, dim, guarded)

    try:
        if x.dim() == 0 or x.numel() == 0:
            return []
        nan = bool((output().isnan() & ~_torch_softmax(x, dim).isnan()).any())
        # guarded (a -inf maximum shifted by 0, a zero sum divided by 1): a slice far below loses entries to
        # underflow, or gives zeros, not NaN
        guarded, right = output(True), mistaken.safe_softmax(x, dim)
        zeros = not bool(torch.isclose(guarded, right, rtol=1e-3, atol=1e-6, equal_nan=True).all())
    except RuntimeError:  # a dtype these have no kernel for here
        return []
    hidden = bool(torch.isneginf(x).all(dim=dim).any())
    said = ("you subtract the maximum of the whole tensor, x.max(), not each slice's maximum along dim: a slice "
            "whose scores are far below that maximum underflows to exp() = 0 everywhere and gives {what}. Subtract "
            "x.amax(dim=dim, keepdim=True)")
    found = [Mistake("softmax-unstable", said.format(what="0/0 = NaN") +
                     ("; and a slice that is all -inf gives 0/0 = NaN too: give it zeros (shift it by 0, divide by "
                      "a sum that cannot be 0)" if hidden else ""), output)] if nan else []
    if zeros:
        found.append(Mistake("softmax-unstable", said.format(what="zeros (your guard turns its 0/0 into 0), or loses "
                                                              "its smaller entries, where its own entries must sum "
                                                              "to 1"),
                             lambda: output(True)))
    return found


@model
def _globally_shifted(x, dim, guarded: bool):
    """The softmax of ``x`` along ``dim`` shifted by the maximum of the whole tensor, x.max(): plainly, or
    ``guarded`` (a -inf maximum shifted by 0, a zero sum divided by 1)."""
    top = x.max()
    e = torch.exp(x - (torch.where(torch.isinf(top), torch.zeros_like(top), top) if guarded else top))
    total = e.sum(dim=dim, keepdim=True)
    return e / (torch.where(total == 0, torch.ones_like(total), total) if guarded else total)


@model
def _torch_softmax(x, dim):
    """torch.softmax of ``x`` along ``dim`` (NaN on an all -inf slice)."""
    return torch.softmax(x, dim=dim)


@model
def first_slice(x, dim):
    """The first slice of ``x`` along ``dim`` (every other index 0), [n]."""
    return x.movedim(dim, -1)[(0,) * (x.dim() - 1)]


def sum_crash_explained(grade, name, x, dim, kwargs):
    """A root cause (grader.grading.fixture.Grade.same) that blames no helper but explains a raise of the
    softmax on an ``x`` of several dimensions when the student's code is right on one slice of it along
    ``dim`` (a 1-d vector): the sum is taken without keepdim=True, so that its shape no longer lines up
    with the exponentials along ``dim``. None for any other failure."""
    def explain(failure, out):
        if not isinstance(failure, RaisedFailure) or x.dim() < 2 or \
                shape_mismatch(failure.fault.message, "broadcast") is None:  # a broadcast of the sums, not any raise
            return None
        d = dim % x.dim()
        one = first_slice(x, d)  # one slice along dim, [n]
        theirs = diagnose.their(grade, name, one.clone(), **({"dim": -1} if kwargs else {}))
        if not isinstance(theirs, torch.Tensor) or not diagnose.matches(grade, theirs, mistaken.safe_softmax(one, -1)):
            return None
        reduced = list(x.shape[:d]) + list(x.shape[d + 1:])
        return CheckFailed(
            f"{failure.message}\nyour {name} is right on one slice {list(one.shape)} but raised on {list(x.shape)} "
            f"along dim {dim}: a sum (or maximum) over dim without keepdim=True has shape {reduced}, which does not "
            f"line up with the {list(x.shape)} exponentials it divides. Keep the reduced "
            f"dimension: e.sum(dim=dim, keepdim=True), of shape {list(x.shape[:d]) + [1] + list(x.shape[d + 1:])}",
            ("sum-without-keepdim",))
    return explain


def loop_scores_same(grade, x, grad=False):
    """attention_scores_loop matches the reference; if not, say which entries a loop that exploits the
    symmetry of the scores left unfilled (the diagonal, or one triangle)."""
    scores, diagonal, upper, lower, strict_upper, strict_lower = _loop_scores(x)
    grade.same("attention_scores_loop", x, grad=grad, right=scores, mistakes=[
        Mistake(None, "the diagonal of your scores is 0: the score of each token with itself (i == j) is never "
                      "filled in (a loop such as range(i) stops before j == i)", diagonal),
        Mistake(None, "only the upper triangle of your scores is filled in (j >= i): the scores are symmetric, so "
                      "scores[j, i] = scores[i, j] must be written too, or loop over every pair",
                upper),
        Mistake(None, "only the lower triangle of your scores is filled in (j <= i): the scores are symmetric, so "
                      "scores[j, i] = scores[i, j] must be written too, or loop over every pair",
                lower),
        Mistake(None, "only the upper triangle of your scores is filled in, without the diagonal (j > i)",
                strict_upper),
        Mistake(None, "only the lower triangle of your scores is filled in, without the diagonal (j < i)",
                strict_lower)])


@model
def _loop_scores(x):
    """The scores x @ x.T ([T, T]) and what a loop that leaves entries unfilled gives: (the scores, the diagonal
    0, only the upper triangle (j >= i), only the lower (j <= i), only the upper without the diagonal (j > i),
    only the lower without it (j < i)), the rest 0."""
    scores = x @ x.T
    eye = torch.eye(x.shape[0], dtype=torch.bool)
    upper, lower = eye.logical_not().triu(), eye.logical_not().tril()
    return (scores, scores.masked_fill(eye, 0.0), scores.masked_fill(lower, 0.0), scores.masked_fill(upper, 0.0),
            scores.masked_fill(lower | eye, 0.0), scores.masked_fill(upper | eye, 0.0))


def context_vector_same(grade, inputs, weights, grad=False):
    """context_vector_loop matches the reference; a raise on T tokens of size d (T != d) is explained when
    the student's code is right on a square case (as many tokens as features): an accumulator of the
    weights' shape [T] where the context vector has the shape of one input row [d]."""
    tokens, width = inputs.shape

    def explain(failure, out):
        return over_features(failure) or square_only(failure)

    def over_features(failure):
        """A raise for more features than tokens (d > T) explained by a loop over inputs.shape[1]: on
        d + 1 tokens of size d, the student's code (which then does not raise) sums the first d rows."""
        if not isinstance(failure, RaisedFailure) or width <= tokens:
            return None
        rows = width + 1
        tall, w = _tall_case(rows, width, inputs.dtype)
        theirs = diagnose.their(grade, "context_vector_loop", tall, w)
        if not isinstance(theirs, torch.Tensor) or \
                not diagnose.matches(grade, theirs, _context(w[:width], tall[:width])) \
                or diagnose.matches(grade, theirs, _context(w, tall)):
            return None
        return CheckFailed(f"{failure.message}\n{FEATURES.format(tokens=tokens, width=width)}")

    def square_only(failure):
        k = min(tokens, width)
        if not isinstance(failure, RaisedFailure) or tokens == width or k < 2:
            return None
        square, w = inputs[:k, :k].clone(), weights[:k].clone()
        theirs = diagnose.their(grade, "context_vector_loop", square, w)
        if not isinstance(theirs, torch.Tensor) or not diagnose.matches(grade, theirs, _context(w, square)):
            return None
        return CheckFailed(
            f"{failure.message}\nyour code is right when there are as many tokens as features ({k} of size {k}) but "
            f"raised on {tokens} tokens of size {width}: something shaped like the weights, [{tokens}], meets an "
            f"input row, [{width}]. The context vector has the shape of one input row: start the sum from "
            "torch.zeros_like(inputs[0]) (not zeros_like(weights)), and add weights[i] * inputs[i]")
    mistakes = [Mistake(None, "your context vector is divided by the sum of the weights (weights.sum()): the weights "
                              "come from a softmax, so they sum to 1 already, and the context vector is the plain "
                              "weighted sum of weights[i] * inputs[i]; whatever weights it is given, do not "
                              "renormalise them", lambda: _renormalised_context(weights, inputs))]
    if tokens > 1:  # (with one token, the unweighted start is what the division by the sum gives too)
        mistakes.append(Mistake(None, "your sum starts from inputs[0] itself, unweighted: the first term must be "
                                      "weights[0] * inputs[0] like every other. Start from torch.zeros_like(inputs[0]) "
                                      "and loop over every token, i = 0 included",
                                lambda: _unweighted_first(weights, inputs)))
    if tokens > width:  # a loop over the features sums the first d tokens only (with more features it raises)
        mistakes.append(Mistake(None, FEATURES.format(tokens=tokens, width=width),
                                lambda: _context(weights[:width], inputs[:width])))
    grade.same("context_vector_loop", inputs, weights, grad=grad, root_cause=explain, mistakes=mistakes)


@model
def _tall_case(rows: int, width: int, dtype):
    """A case of ``rows`` tokens of ``width`` features, (inputs [rows, width], softmax weights [rows])."""
    tall = torch.linspace(-1.0, 1.0, rows * width, dtype=dtype).reshape(rows, width).cos()
    w = torch.softmax(torch.linspace(0.0, 2.0, rows, dtype=dtype), dim=0)
    return tall, w


@model
def _context(weights, inputs):
    """The context vector: the weighted sum of the rows of ``inputs``, weights @ inputs."""
    return weights @ inputs


@model
def _renormalised_context(weights, inputs):
    """The context vector divided by the sum of the weights."""
    return (weights @ inputs) / weights.sum()


@model
def _unweighted_first(weights, inputs):
    """The context vector's sum started from inputs[0] itself, unweighted."""
    return inputs[0] + weights[1:] @ inputs[1:]


FEATURES = ("your loop runs over inputs.shape[1], the {width} features of a row, instead of inputs.shape[0], the "
            "{tokens} tokens: the context vector sums weights[i] * inputs[i] over every token i. Loop over "
            "range(inputs.shape[0]) (or len(weights))")


def nan_gradient_explained(x, dim):
    """A root cause (grader.grading.fixture.Grade.same) that blames no helper but explains a right output whose
    gradient has NaN: where the NaN first appears (the backward pass; on the slices of ``x`` that are
    all -inf, when it is only there) and its usual cause. None for any other failure."""
    def explain(failure, out):
        grads = failure.reply.grads if isinstance(failure, GradientFailure) else None
        grad = grads[0] if grads else None
        if not isinstance(grad, torch.Tensor) or grad.shape != x.shape or not grad.isnan().any():
            return None
        nan = grad.detach().cpu().isnan()
        hidden = torch.isneginf(x).all(dim=dim, keepdim=True).expand_as(x)
        if hidden.any() and not (nan & ~hidden).any():
            return CheckFailed(
                f"{failure.message}; your output is right: the NaN first appears in the gradient, on the slices "
                "that are all -inf (and only there). Its usual cause is a division that is 0/0 on those slices, "
                "hidden from the output by a torch.where (or nan_to_num, masked_fill) placed after it: autograd "
                "still differentiates the branch the where does not select, and 0 × NaN is NaN. Divide by a sum "
                "that cannot be 0 instead (s.clamp_min(tiny), or torch.where(s > 0, s, 1)), so that no 0/0 is "
                "ever computed")
        return CheckFailed(
            f"{failure.message}; your output is right: the NaN first appears in the gradient (the backward "
            "pass). Its usual cause is a step whose derivative is infinite or 0/0 where its result is not used "
            "(a division by a sum that can be 0, hidden afterwards by torch.where or nan_to_num): compute no such "
            "value at all, e.g. divide by s.clamp_min(tiny)")
    return explain


def simple_attention_root_cause(grade, x):
    """The student's own softmax or attention_scores, when simple_self_attention(x) is right given it."""
    scores = _scores(x)
    weights = mistaken.safe_softmax(scores)

    def root_cause(failure, out):
        given_softmax = mistaken.blame(
            grade, failure, out, "softmax", diagnose.their(grade, "softmax", scores, dim=-1), weights,
            lambda w: _context(w, x), mistaken.softmax_mistakes(scores, -1),
            chain=((x,), lambda x: _scores(x), lambda w, x: _context(w, x), {"dim": -1}, mistaken.safe_softmax))
        their_scores = diagnose.their(grade, "attention_scores", x)
        return given_softmax or mistaken.blame(
            grade, failure, out, "attention_scores", their_scores, scores,
            lambda s: _attended(s, x),
            chain=((x,), lambda x: x, lambda s, x: _attended(s, x), {},
                   lambda x: _scores(x))) or given_both(failure, out, their_scores)

    def given_both(failure, out, their_scores):
        """Both helpers wrong, the output their composition: attention_scores blamed provisionally; the
        run with its stand-in (grader.grading.pytest_session._verify) then finds the softmax at fault and
        stands in for it too, and only the run with both right decides."""
        def with_their_softmax(s):
            weights = diagnose.their(grade, "softmax", s, dim=-1)
            if not isinstance(weights, torch.Tensor):
                raise ValueError("their softmax gave no tensor")
            return _context(weights.to(s.device, s.dtype), x)
        return mistaken.blame(grade, failure, out, "attention_scores", their_scores, scores, with_their_softmax,
                              provisional=True)
    return root_cause


@model
def _scores(x):
    """The simplified attention's scores, x @ x.transpose(-2, -1)."""
    return x @ x.transpose(-2, -1)


@model
def _attended(scores, x):
    """The simplified attention given its ``scores``: safe_softmax(scores) @ x."""
    return mistaken.safe_softmax(scores) @ x


@model
def _scaled_attended(scores, x):
    """The simplified attention with its ``scores`` scaled by 1/sqrt(d), d = x.shape[-1]."""
    return mistaken.safe_softmax(scores / x.shape[-1] ** 0.5) @ x


@model
def _simple_attention(x):
    """simple_self_attention(x): safe_softmax(x @ x.transpose(-2, -1)) @ x."""
    return mistaken.safe_softmax(x @ x.transpose(-2, -1)) @ x


def simple_attention_mistakes(x) -> list:
    """simple_self_attention(x) with one of the lesson's mistakes: a softmax along another dimension,
    the weights returned instead of the context vectors, a 1/sqrt(d) scale the lesson does not use."""
    scores = _scores(x)
    weights = mistaken.safe_softmax(scores)
    return [
        *(Mistake(m, what, lambda wrong=wrong: _context(wrong(), x))
          for m, what, wrong in mistaken.softmax_mistakes(scores, -1)),
        Mistake("values-not-used", "your output is the attention weights: multiply them by the inputs", weights),
        Mistake("wrong-scale", "your scores are scaled by 1/sqrt(d); the simplified attention of this lesson is "
                               "unscaled", lambda: _scaled_attended(scores, x))]


def simple_attention_same(grade, x, grad=False):
    """simple_self_attention matches the reference; if not, say whether the student's own softmax or
    attention_scores is to blame (the root cause), or which mistake of its own explains the output. The
    vectorised rule is read on the call too (:func:`vectorised_here`)."""
    right = _simple_attention(x)
    counted = []
    grade.same("simple_self_attention", x, grad=grad, right=right, root_cause=simple_attention_root_cause(grade, x),
               explain=lambda out: mistaken.UNSTABLE if diagnose.unstable(out, right) else None,
               mistakes=simple_attention_mistakes(x), rules=[(VECTORISED, counted.append)])
    vectorised_here(grade, "simple_self_attention", x, grad, counted)


def attention_scores_same(grade, x, grad=False):
    """attention_scores matches the reference; a raise on a batch that one sequence of it does not cause
    is explained (the transpose of the last two dimensions). The vectorised rule is read on the call too."""
    counted = []
    grade.same("attention_scores", x, grad=grad, root_cause=batched_crash_explained(grade, x),
               rules=[(VECTORISED, counted.append)])
    vectorised_here(grade, "attention_scores", x, grad, counted)


def vectorised_here(grade, name, x, grad, counted):
    """``name``'s vectorised rule read on a right comparing call of ``x`` (its reply in ``counted``;
    lesson.vectorised_on): the same function on more tokens of x's own (lesson.lengthened), from a generator of
    its own (the check's other inputs are drawn as before). Red team round 22b: a loop over the tokens of a batched
    input, where the rule was read on plain [T, d] inputs only, hid a transpose of every dimension. For
    simple_self_attention, what ran inside the student's attention_scores and softmax on the two calls
    (:func:`helpers_inside`): a loop that is theirs alone is theirs to charge, once the same two calls with right
    ones in their place show the rest vectorised (:func:`vectorised_given_right`)."""
    if not counted or x.ndim < 2 or x.shape[-2] < 2:
        return
    tokens = x.shape[-2]
    generator = torch.Generator().manual_seed(grade.seed ^ (tokens * 7919 + x.ndim))
    seen, longer = [], []

    def call_with(other):
        made, got = lengthened(x, other, generator), []  # x's values and layout (round 23b: tells)
        longer[:] = [made]
        grade.same(name, made, grad=grad, rules=[(VECTORISED, got.append)],
                   root_cause=simple_attention_root_cause(grade, made) if name == "simple_self_attention" else None)
        seen[:] = got
        return got[0].ops if got else None

    def helpers(other):
        names, short_ops, long_ops = helpers_inside(counted[0], seen[0])
        if names and not vectorised_given_right(grade, name, names, x, longer[0]):
            return [], 0, 0
        return names, short_ops, long_ops

    vectorised_on(grade, name, f"{name}(<{shape_str(x.shape)}>)", tokens, counted[0].ops,
                  lambda: grade.count_reference(name, lambda: getattr(grade.ref, name), (x,), {}), call_with,
                  helpers=helpers if name == "simple_self_attention" else None)


def helpers_inside(short, long):
    """What ran inside the student's attention_scores and softmax on two calls of simple_self_attention
    (``Reply.within``: by the frames on the stack as each operator ran): (the names of those whose share grew or
    passed what any vectorised call may make, their operators on ``short``, on ``long``). None of it where the
    call's own calls of them grew (a loop of the caller's that calls them) or nothing was counted apart. Red team
    round 24d: counted on the grader's own calls of the helpers, a helper padded there to grow as the caller's own
    loop took the loop as its own."""
    if short.within is None or long.within is None or not helper_calls_not_growing(short, long):
        return [], 0, 0
    names = [helper for helper, (ops, _) in long.within.items()
             if ops != short.within.get(helper, (0, 0))[0] or max(ops, short.within.get(helper, (0, 0))[0])
             > operations_allowed(0)]
    return (names, sum(ops for ops, _ in short.within.values()), sum(ops for ops, _ in long.within.values()))


def vectorised_given_right(grade, name, helpers, short, long) -> bool:
    """Whether ``name`` on ``short`` and on ``long`` (more tokens), with right ``helpers`` in place of the student's
    (Grade.stood_in), is right on both, makes as many operations on both, no more than a vectorised call may, and
    calls the helpers as a right exercise does: then a loop the frames counted inside those helpers is theirs. Red
    team round 25: a flag passed to attention_scores ran the caller's own loop inside its frame on batched calls."""
    counts = []
    try:
        with grade.stood_in(helpers) as oracle:
            for x in (short, long):
                grade.same(name, x, rules=[(VECTORISED, lambda reply: counts.append(reply.ops))])
            refused = bool(oracle.refused)
        if refused or None in counts or len(counts) != 2:
            return False
        grade.expect_few_operations(name, *counts)
    except (CheckFailed, StudentFault):
        return False
    return abs(counts[1] - counts[0]) <= LAYOUT_OPS


def batched_crash_explained(grade, x):
    """A root cause (grader.grading.fixture.Grade.same) that blames no helper but explains a raise on a batched
    ``x`` ([..., T, d]) when the student's code is right on one sequence of it ([T, d]): its transpose
    swaps the wrong dimensions (.T reverses every one, transpose(0, 1) swaps the batch with the tokens)."""
    def explain(failure, out):
        if not isinstance(failure, RaisedFailure) or x.dim() < 3:
            return None
        one = x[(0,) * (x.dim() - 2)]  # [T, d]
        theirs = diagnose.their(grade, "attention_scores", one)
        if not isinstance(theirs, torch.Tensor) or not diagnose.matches(grade, theirs, _gram(one)):
            return None
        batch, (tokens, _) = tuple(x.shape[:-2]), x.shape[-2:]
        # the raise is on the batch: what in the line raised is the student's traceback's to show (an
        # unpacking of the shape, a transpose), so both usual causes are said, neither asserted
        return CheckFailed(
            f"{failure.message}\nyour code is right on one sequence {list(one.shape)} but raised on the batch "
            f"{list(x.shape)}, where the scores should be {list(batch) + [tokens, tokens]}: work over the last two "
            "dimensions only, whatever comes before them. Read the sizes from the end (inputs.shape[-2:]) and "
            "transpose only the last two dimensions, inputs.transpose(-2, -1) (or inputs.mT): inputs.T reverses "
            f"every dimension of a batched tensor ({list(x.shape)} becomes {list(reversed(x.shape))}) and "
            "transpose(0, 1) swaps a batch dimension with another")
    return explain


@model
def _gram(x):
    """The scores of one sequence ``x`` ([T, d]), x @ x.T."""
    return x @ x.T


def scores_not_growing(grade, short, long):
    """attention_scores makes as many torch operations on ``long`` (more tokens) as on ``short``."""
    grade.reads_rule(VECTORISED)
    few = grade.measured("attention_scores", short).ops
    many = grade.measured("attention_scores", long).ops
    grade.expect_not_growing("attention_scores", few, many)


def simple_attention_not_growing(grade, short, long):
    """simple_self_attention makes as many torch operations on ``long`` as on ``short``; a loop that is
    the student's own attention_scores' or softmax's, inside them on these very calls, is charged there (the root
    cause), once a run with right ones in their place shows the rest vectorised (each helper named in turn: red
    team round 25, two helpers growing skipped that run). A softmax has no vectorised rule to lose: a loop in a
    softmax that passes its own checks is this exercise's (grader.grading.grader.charged_once)."""
    grade.reads_rule(VECTORISED)
    few = grade.measured("simple_self_attention", short, root_cause=simple_attention_root_cause(grade, short))
    many = grade.measured("simple_self_attention", long, root_cause=simple_attention_root_cause(grade, long))
    grade.expect_not_growing("simple_self_attention", few.ops, many.ops, inside=(few, many), helpers=[
        ("attention_scores", (short,), (long,)),
        ("softmax", (_scores(short), -1), (_scores(long), -1))])
