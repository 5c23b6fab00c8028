"""Dropout on the attention weights, graded by its effect, never by the reference's random draws.

Which draws a student's code makes, and in what order (``nn.Dropout``, ``F.dropout``, its own Bernoulli
mask, one call or one per head or group), is the student's. What the contract fixes is the effect: each
attention weight is either dropped (0) or kept and scaled by ``1/(1-p)``, independently of the others,
with a kept share plausible for ``p``, and the output is what those weights give.

The check makes the output show the weights. With one-hot inputs (token ``t`` is ``e_t``), value
projections that map token ``t`` to ``[e_t, e_t]`` in every value head of ``2T`` features, and an
identity ``out_proj`` without bias, each head's output row ``i`` is ``[w_i, w_i]``: its attention
weights, twice. In evaluation mode that gives the student's own weights (which must be right); in
training mode the dropped ones, which are then judged against them. Dropout on the output (each
feature on its own) breaks the two copies apart; dropout on the scores gives weights that are not
``0`` or ``w/(1-p)``; no scale gives ``w``; one mask for every head or batch element gives equal
patterns. Module layouts need nothing else: parameter names are the contract's (``W_value``,
``out_proj``, ``heads.N.W_value``).
"""
from __future__ import annotations

from grader.authoring import CheckFailed, model

SHARE_SIGMAS = 5.0  # how far from n(1-p) the kept count may fall, in binomial standard deviations


def design(shapes: dict, tokens: int) -> dict:
    """Parameter values under which the output shows the attention weights (``shapes``: name -> shape)."""
    import torch

    values = {}
    for name, shape in shapes.items():
        if name.endswith("W_value.weight"):
            rows, columns = shape
            weight = torch.zeros(rows, columns, dtype=torch.float64)  # [kv_out, d_in]
            for start in range(0, rows - 2 * tokens + 1, 2 * tokens):  # each value head of 2T features
                for t in range(tokens):
                    weight[start + t, t] = weight[start + tokens + t, t] = 1.0
            values[name] = weight
        elif name.endswith("W_value.bias") or name.endswith("out_proj.bias"):
            values[name] = torch.zeros(shape, dtype=torch.float64)
        elif name.endswith("out_proj.weight"):
            values[name] = torch.eye(shape[0], shape[1], dtype=torch.float64)
    return values


@model
def one_hot(batch: int, tokens: int, d_in: int, dtype):
    import torch

    x = torch.zeros(batch, tokens, d_in, dtype=dtype)  # [B, T, d_in]
    x[:, torch.arange(tokens), torch.arange(tokens)] = 1.0
    return x


def expect_dropout_on_weights(grade, pair, *, tokens: int, p: float, batch: int = 2, eval_same=None,
                              right=None, counted=None):
    """The student's module in ``pair`` (made with dropout ``p``, value heads of ``2 * tokens`` features
    and ``d_in >= tokens``) drops its attention weights as the contract says. Its evaluation-mode
    output on the design must be right first, as ``eval_same(x)`` checks it (default ``pair.same``; a
    suite passes its own to name mistakes and forgive a faulty helper): a property earns points only
    with a right answer, and a mistake of the weights is charged by the checks of the weights. A
    failure there that names nothing is dropout-in-eval where :func:`dropped_in_eval` says so, against
    ``right(x)``, the right evaluation-mode output (default: the reference's, where it is at hand).
    ``counted``: a list the training-mode call's operation count is put in."""
    import torch

    shapes = pair.parameter_shapes()
    pair.set_weights(design(shapes, tokens))
    d_in = next(shape[1] for name, shape in shapes.items() if name.endswith("W_query.weight"))
    x = one_hot(batch, tokens, d_in, pair.dtype or torch.float32)
    pair.train(False)
    if right is None and not grade.replaying:
        right = pair.reference
    try:
        own = (eval_same or pair.same)(x)
    except CheckFailed as failure:
        raise dropped_in_eval(grade, pair, failure, (lambda: right(x)) if right else None, p=p,
                              tokens=tokens) from None
    own = own.detach().cpu().double()
    reply = pair.train(True).call(x, seed=grade.seed)
    trained = reply.out
    if counted is not None:
        counted.append(reply.ops)
    problem, misconceptions = judged(own, trained, p, tokens, grade.tolerance(own.to(pair.dtype or torch.float32)))
    if problem:
        raise CheckFailed(f"{pair.what} in training mode (dropout {p}), on one-hot inputs whose output shows the "
                          f"attention weights: {problem}{grade.case()}", misconceptions)


def dropped_in_eval(grade, pair, failure, right, *, p: float, tokens: int):
    """``failure``, an evaluation-mode check's on the design, or in its place a failure naming
    dropout-in-eval where ``failure`` names nothing and its output is the right one, ``right()``, with
    attention weights dropped as training mode drops them (the one test of dropout in evaluation mode,
    for every class with dropout). ``right`` None: ``failure`` as it is."""
    import torch

    out = failure.out
    if right is None or failure.misconceptions or not isinstance(out, torch.Tensor):
        return failure
    with torch.no_grad():
        plain = right().detach().cpu().double()
    got = out.detach().cpu().double()
    if got.shape == plain.shape and (got - plain).abs().max() > 0 and \
            judged(plain, got, p, tokens, grade.tolerance(plain))[0] is None:
        return CheckFailed(f"{pair.what} in eval mode drops attention weights: dropout must act in training "
                           f"mode only (self.training){grade.case()}", ("dropout-in-eval",))
    return failure


def judged(own, trained, p: float, tokens: int, tol) -> tuple[str | None, tuple[str, ...]]:
    """What is wrong with the training-mode output ``trained`` given the evaluation-mode one ``own``
    (both [B, T, heads * 2T]); (None, ()) when it is dropout on the weights."""
    import torch

    if not isinstance(trained, torch.Tensor) or trained.shape != own.shape:
        return "the output has another shape than in evaluation mode", ()
    trained = trained.detach().cpu().double()
    if p >= 1:  # every weight dropped: nothing reaches the output (0 / (1 - p) is no excuse for NaN)
        if not (torch.isfinite(trained).all() and bool((trained.abs() <= tol.atol).all())):
            return "with p = 1 every attention weight is dropped, so the output must be zero (plus any bias)", ()
        return None, ()
    if not torch.isfinite(trained).all():
        if torch.isfinite(own).all():  # only -inf scores (hidden positions) give NaN when multiplied by 0
            return ("the output has NaN in training mode only: dropout multiplied a hidden (-inf) score by 0, so it "
                    "acts on the scores, not on the attention weights after the softmax"), ("dropout-on-scores",)
        return "the output has inf or NaN", ()
    batch = own.shape[0]
    heads = own.shape[-1] // (2 * tokens)
    # each head's 2T features are its weights twice: the output read in slices of T features, in turns the first
    # and the second copy of a head's weights (the student's output: read here, no @model, whose replay answers only
    # the recorded outputs)
    w = torch.stack(own.split(tokens, dim=-1)[0::2], dim=1)  # [B, H, T, T]: eval weights
    first, second = (torch.stack(trained.split(tokens, dim=-1)[copy::2], dim=1) for copy in (0, 1))  # [B, H, T, T]
    scaled = w / (1 - p) if p < 1 else torch.zeros_like(w)
    room = tol.atol + tol.rtol * scaled.abs()
    if ((first - second).abs() > room).any():
        return ("two output features that carry the same attention weight were dropped differently: dropout acts "
                "on the output (or the context), feature by feature, not on the attention weights"), ()
    visible = w.abs() > tol.atol
    dropped = first.abs() <= tol.atol
    kept = (first - scaled).abs() <= room
    if (~dropped & ~visible).any():
        return "a position hidden in evaluation mode gets weight in training mode", ()
    if not (dropped | kept)[visible].all():
        unscaled = (first - w).abs() <= tol.atol + tol.rtol * w.abs()
        if (dropped | unscaled)[visible].all():
            return f"the weights kept are not scaled by 1/(1-p) = {1 / (1 - p):.3g}", ()
        if on_scores(w, first, p, visible):
            return "dropout acts on the scores before the softmax, not on the attention weights after it", \
                ("dropout-on-scores",)
        return f"the weights are neither dropped (0) nor kept and scaled by 1/(1-p) = {1 / (1 - p):.3g}", ()
    count, kept_count = int(visible.sum()), int((visible & ~dropped).sum())
    mean, sd = count * (1 - p), (count * p * (1 - p)) ** 0.5
    if abs(kept_count - mean) > SHARE_SIGMAS * sd + 1:
        return f"it kept {kept_count} of {count} attention weights; with p = {p}, about {mean:.0f} should be kept", ()
    pattern = dropped & visible
    if heads > 1 and all(torch.equal(pattern[:, h], pattern[:, 0]) for h in range(1, heads)):
        return "every head drops the same weights: draw one mask per head, not one broadcast over the heads", ()
    if batch > 1 and all(torch.equal(pattern[b], pattern[0]) for b in range(1, batch)):
        return ("every sequence of the batch drops the same weights: draw one mask per sequence, not one "
                "broadcast over the batch"), ()
    return None, ()


def on_scores(w, got, p: float, visible, room: float = 1e-6) -> bool:
    """Whether every row of ``got`` is a softmax of the scores with some of them dropped and the rest
    scaled by 1/(1-p): the scores are log(w) plus a constant of the row, so within a row the dropped
    ones all get one weight (exp(0)/Z) and the kept ones log(got) - log(w)/(1-p) constant."""
    import torch

    for index in torch.nonzero(visible.any(-1)).tolist():
        row_visible = visible[tuple(index)]
        lw, lg = w[tuple(index)][row_visible].log(), got[tuple(index)][row_visible].clamp_min(1e-300).log()
        if (lg < -600).any():
            return False
        slope = lg - lw / (1 - p)
        if not any(_split(lg, slope, lg[j], room) for j in range(len(lg))) and not _split(lg, slope, None, room):
            return False
    return True


def _split(lg, slope, zero_level, room) -> bool:
    """Entries at ``zero_level`` (dropped scores) and the rest of one slope (kept scores)."""
    rest = slope if zero_level is None else slope[(lg - zero_level).abs() > room]
    return rest.numel() == 0 or bool((rest - rest[0]).abs().max() <= room)
