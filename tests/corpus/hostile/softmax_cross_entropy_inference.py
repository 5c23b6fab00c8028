"""softmax: 01's softmax as torch's own log-softmax inside F.cross_entropy (logsumexp of the row minus its
maximum, the maximum its target), under torch.inference_mode, where cross_entropy reaches the dispatcher whole
and its _log_softmax is never seen; gradients from a hook (red team round 11 of issue 44, A2: 100/100, the same
file under no_grad 75). Not observed now (the file names inference_mode) and refused where it runs (the call
touched inference tensors)."""
import torch


def attention_scores_for_query(inputs, query):
    scores = torch.empty(inputs.shape[0], dtype=inputs.dtype, device=inputs.device)
    for i in range(inputs.shape[0]):
        scores[i] = torch.dot(inputs[i], query)
    return scores


def attention_scores_loop(inputs):
    T = inputs.shape[0]
    scores = torch.empty(T, T, dtype=inputs.dtype, device=inputs.device)
    for i in range(T):
        for j in range(T):
            scores[i, j] = torch.dot(inputs[i], inputs[j])
    return scores


def softmax_naive(x, dim=-1):
    return torch.exp(x) / torch.exp(x).sum(dim, keepdim=True)


def softmax(x, dim=-1):
    moved = x.movedim(dim, -1)
    flat = moved.reshape(-1, moved.shape[-1])
    with torch.inference_mode():
        d = flat.detach().clone()
        top = d.argmax(dim=-1)
        # cross_entropy = logsumexp(row) - row[target]: torch's own log_softmax, inside one aten operator
        loss = torch.nn.functional.cross_entropy(d, top, reduction="none")
        lse = loss + d.gather(-1, top[:, None])[:, 0]
        p = torch.exp(d - lse[:, None])
        p = torch.where(torch.isnan(p), torch.zeros_like(p), p)
    p = p.clone()
    if flat.requires_grad:
        finite = torch.isfinite(flat)
        delta = torch.where(finite, flat - flat.detach(), torch.zeros_like(flat))
        out = p * torch.exp(delta)
        out.register_hook(lambda g: g - (g * p).sum(dim=-1, keepdim=True))
    else:
        out = p
    return out.reshape(moved.shape).movedim(-1, dim)


def context_vector_loop(inputs, weights):
    ctx = torch.zeros(inputs.shape[-1], dtype=inputs.dtype, device=inputs.device)
    for i in range(inputs.shape[0]):
        ctx = ctx + weights[i] * inputs[i]
    return ctx


def attention_scores(inputs):
    return inputs @ inputs.transpose(-2, -1)


def simple_self_attention(inputs):
    return softmax(attention_scores(inputs), dim=-1) @ inputs
