"""Correct port: tspeterkim/flash-attention-minimal, flash.cu, forward_kernel (CUDA -> torch):

    for (int j = 0; j < Tc; j++) {            // key/value tiles
      for (int i = 0; i < Tr; i++)  {         // query tiles
        // S = QK^T * softmax_scale, row_m = rowmax(S)
        // P = exp(S - row_m), row_l = rowsum(P)
        float row_m_new = max(row_m_prev, row_m);
        float row_l_new = (__expf(row_m_prev - row_m_new) * row_l_prev) + (__expf(row_m - row_m_new) * row_l);
        O = (1 / row_l_new) * ((row_l_prev * __expf(row_m_prev - row_m_new) * O) + (__expf(row_m - row_m_new) * PV));
        m = row_m_new; l = row_l_new;

Threads over rows become vectorised rows; tiles are Br = Bc = block_size. Upstream has no causal mask:
the course's top-left causal mask is applied per tile, fully-masked tiles are skipped, and -inf maxima
go through _shift so that a row with nothing visible yet never forms -inf - -inf.
Covers: flash_attention (05).
"""
import math  # noqa: F401
import torch


def _shift(running_max):
    """The running maximum with -inf (nothing visible yet) replaced by 0, to subtract safely."""
    return torch.where(torch.isinf(running_max), torch.zeros_like(running_max), running_max)


def online_softmax(x, block_size):
    n = x.shape[-1]
    m = torch.full(x.shape[:-1] + (1,), float("-inf"), dtype=x.dtype, device=x.device)
    s = torch.zeros(x.shape[:-1] + (1,), dtype=x.dtype, device=x.device)
    for start in range(0, n, block_size):
        blk = x[..., start:start + block_size]
        m_new = torch.maximum(m, blk.amax(dim=-1, keepdim=True))
        alpha = torch.where(torch.isinf(m), torch.zeros_like(m), torch.exp(m - _shift(m_new)))
        s = s * alpha + torch.exp(blk - _shift(m_new)).sum(dim=-1, keepdim=True)
        m = m_new
    out = torch.exp(x - _shift(m))
    return out / torch.where(s == 0, torch.ones_like(s), s)


def flash_attention(queries, keys, values, block_size=64, causal=False):
    Q, K, V = queries, keys, values
    N, d = Q.shape[-2], Q.shape[-1]
    Nk = K.shape[-2]
    Br = Bc = block_size
    softmax_scale = 1.0 / math.sqrt(d)
    O = torch.zeros(Q.shape[:-1] + (V.shape[-1],), dtype=Q.dtype, device=Q.device)
    l = torch.zeros(Q.shape[:-1] + (1,), dtype=Q.dtype, device=Q.device)
    m = torch.full(Q.shape[:-1] + (1,), float("-inf"), dtype=Q.dtype, device=Q.device)
    O_tiles, l_tiles, m_tiles = list(O.split(Br, dim=-2)), list(l.split(Br, dim=-2)), list(m.split(Br, dim=-2))
    for j in range(0, Nk, Bc):
        Kj, Vj = K[..., j:j + Bc, :], V[..., j:j + Bc, :]
        for ti, i in enumerate(range(0, N, Br)):
            if causal and j > i + Br - 1:
                continue
            Qi = Q[..., i:i + Br, :]
            S = (Qi @ Kj.transpose(-2, -1)) * softmax_scale
            if causal:
                rows = torch.arange(i, i + Qi.shape[-2], device=Q.device)[:, None]
                cols = torch.arange(j, j + Kj.shape[-2], device=Q.device)[None, :]
                S = S.masked_fill(cols > rows, float("-inf"))
            row_m = S.amax(dim=-1, keepdim=True)
            P = torch.exp(S - _shift(row_m))
            row_l = P.sum(dim=-1, keepdim=True)
            row_m_prev, row_l_prev, Oi = m_tiles[ti], l_tiles[ti], O_tiles[ti]
            row_m_new = torch.maximum(row_m_prev, row_m)
            a_prev = torch.where(torch.isinf(row_m_prev), torch.zeros_like(row_m_prev), torch.exp(row_m_prev - _shift(row_m_new)))
            a_cur = torch.where(torch.isinf(row_m), torch.zeros_like(row_m), torch.exp(row_m - _shift(row_m_new)))
            row_l_new = a_prev * row_l_prev + a_cur * row_l
            inv = torch.where(row_l_new == 0, torch.zeros_like(row_l_new), 1 / torch.where(row_l_new == 0, torch.ones_like(row_l_new), row_l_new))
            O_tiles[ti] = inv * ((row_l_prev * a_prev * Oi) + (a_cur * (P @ Vj)))
            m_tiles[ti], l_tiles[ti] = row_m_new, row_l_new
    return torch.cat(O_tiles, dim=-2)
