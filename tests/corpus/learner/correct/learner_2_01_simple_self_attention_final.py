"""simple_self_attention: Final correct version (helpers softmax and attention_scores included)."""
import torch


def softmax(x, dim=-1):
    """Numerically stable softmax along ``dim``, for any shape.

    Subtract each slice's maximum before exponentiating so that nothing overflows. ``-inf`` entries
    get weight 0, and a slice that is entirely ``-inf`` gives all zeros (never NaN).
    Do not call a library softmax (torch.softmax, F.softmax, nn.Softmax, log_softmax, ...).
    Lesson section 4, "A softmax that does not overflow".
    """
    m = x.amax(dim=dim, keepdim=True)
    m = torch.where(torch.isinf(m), torch.zeros_like(m), m)
    e = torch.exp(x - m)
    s = e.sum(dim=dim, keepdim=True)
    return e / torch.where(s == 0, torch.ones_like(s), s)


def attention_scores(inputs):
    """All pairwise dot products, vectorised: no Python loop over tokens.

    inputs: [..., T, d]  ->  scores: [..., T, T]
    Lesson section 6, "From loops to matrix products".
    """
    return inputs @ inputs.transpose(-2, -1)


def simple_self_attention(inputs):
    """Simplified self-attention softmax(X Xᵀ) X, vectorised, using your ``softmax`` above.

    inputs: [..., T, d]  ->  context vectors: [..., T, d]
    Lesson section 7, "Simplified self-attention".
    """
    weights = softmax(attention_scores(inputs), dim=-1)
    return weights @ inputs
