"""Assignment 05: efficient attention (beyond the classic course).

Lesson: the notebook ``efficient_attention.ipynb`` beside this file. The [Tq, Tk] score matrix of
plain attention grows with the square of the sequence length. Flash-style attention never builds
it: it walks over blocks of keys, keeping for every query a running maximum, a running sum of
exponentials and a running weighted sum of values, and rescales them whenever the maximum grows.
"""
import math  # noqa: F401 - for your code: the lesson scales the scores by 1 / math.sqrt(d)
import torch


def _shift(running_max):
    """The running maximum with -inf (nothing visible yet) replaced by 0, to subtract safely."""
    return torch.where(torch.isinf(running_max), torch.zeros_like(running_max), running_max)


def online_softmax(x, block_size):
    """Softmax over the last dim, with the statistics gathered block by block in one pass.

    x: [..., N]  ->  [..., N]. Walk over blocks of ``block_size`` entries keeping a running maximum
    m and a running sum s of exp(x - m); when m grows, rescale s by exp(m_old - m_new). Then
    normalise. -inf entries get weight 0; an all -inf row gives zeros.
    Lesson section 2, "Online softmax".
    """
    ### BEGIN SOLUTION
    running_max = x.new_full(x.shape[:-1], float("-inf"))  # [...]
    running_sum = x.new_zeros(x.shape[:-1])  # [...]
    for start in range(0, x.shape[-1], block_size):
        block = x[..., start : start + block_size]  # [..., b]
        new_max = torch.maximum(running_max, block.amax(dim=-1))  # [...]
        shift = _shift(new_max)
        running_sum = running_sum * torch.exp(running_max - shift)  # rescale to the new maximum
        running_sum = running_sum + torch.exp(block - shift[..., None]).sum(dim=-1)
        running_max = new_max
    exp = torch.exp(x - _shift(running_max)[..., None])  # [..., N]
    return exp / running_sum.clamp_min(1.0)[..., None]  # the sum is >= 1 unless the row is all -inf
    ### END SOLUTION


def flash_attention(queries, keys, values, block_size=64, causal=False):
    """Exact scaled dot-product attention, computed block by block with online-softmax rescaling.

    queries: [..., Tq, d], keys: [..., Tk, d], values: [..., Tk, dv]  ->  [..., Tq, dv].
    Scores are scaled by 1/sqrt(d). With ``causal=True`` query i sees keys j <= i (top-left aligned,
    as ``F.scaled_dot_product_attention(is_causal=True)``). Never build a [Tq, Tk] score matrix:
    work on [block_size, block_size] tiles of it.
    Lesson section 3, "Flash attention".
    """
    ### BEGIN SOLUTION
    num_queries, num_keys = queries.shape[-2], keys.shape[-2]
    outputs = []
    for q_start in range(0, num_queries, block_size):
        q = queries[..., q_start : q_start + block_size, :] / queries.shape[-1] ** 0.5  # [..., bq, d]
        q_pos = torch.arange(q_start, q_start + q.shape[-2], device=q.device)  # [bq]
        running_max = q.new_full(q.shape[:-1], float("-inf"))  # [..., bq]
        running_sum = q.new_zeros(q.shape[:-1])  # [..., bq]
        acc = q.new_zeros(*q.shape[:-1], values.shape[-1])  # [..., bq, dv]
        key_end = min(num_keys, q_start + q.shape[-2]) if causal else num_keys  # later keys: all future
        for k_start in range(0, key_end, block_size):
            k = keys[..., k_start : k_start + block_size, :]  # [..., bk, d]
            v = values[..., k_start : k_start + block_size, :]  # [..., bk, dv]
            scores = q @ k.transpose(-2, -1)  # [..., bq, bk]: one tile of the score matrix
            if causal:
                k_pos = torch.arange(k_start, k_start + k.shape[-2], device=q.device)  # [bk]
                scores = scores.masked_fill(k_pos[None, :] > q_pos[:, None], float("-inf"))
            new_max = torch.maximum(running_max, scores.amax(dim=-1))  # [..., bq]
            shift = _shift(new_max)
            rescale = torch.exp(running_max - shift)  # [..., bq], 0 on the first visible block
            p = torch.exp(scores - shift[..., None])  # [..., bq, bk]
            running_sum = running_sum * rescale + p.sum(dim=-1)
            acc = acc * rescale[..., None] + p @ v  # [..., bq, dv]
            running_max = new_max
        outputs.append(acc / running_sum.clamp_min(1.0)[..., None])  # [..., bq, dv]
    return torch.cat(outputs, dim=-2)  # [..., Tq, dv]
    ### END SOLUTION
