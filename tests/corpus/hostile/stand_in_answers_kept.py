"""MultiHeadAttentionWithSWA over an off-by-one sliding_window_mask of its own (so that its cases are kept as
"right, given your sliding_window_mask" and verified with a right one in its place): while the right one
stands in, it asks it about calls of its own choosing (and calls that make it raise) and keeps the answers in
a module-level list; any later call raises them, for the feedback to show (red team round 9 of issue 44: the
right helper's answers and the reference's own error messages reached the student's feedback)."""
import torch
import torch.nn as nn


def sliding_window_mask(num_queries, num_keys, window, q_start=0, k_start=0, device=None):
    q = torch.arange(q_start, q_start + num_queries, device=device)[:, None]
    k = torch.arange(k_start, k_start + num_keys, device=device)[None, :]
    hidden = k > q
    if window is not None:
        hidden = hidden | (k < q - window)
    return hidden


KEPT = []


def probe(tag, *args, **kwargs):
    try:
        out = sliding_window_mask(*args, **kwargs)
        KEPT.append(tag + " = " + "".join(str(int(v)) for v in out.flatten()))
    except Exception as exc:
        KEPT.append(tag + " -> " + str(exc))


class MultiHeadAttentionWithSWA(nn.Module):
    OWN = [sliding_window_mask]  # its own helper, to tell when another stands in

    def __init__(self, d_in, d_out, dropout, num_heads, qkv_bias=False, sliding_window_size=None):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError("d_out must be divisible by num_heads")
        self.num_heads, self.head_dim, self.window = num_heads, d_out // num_heads, sliding_window_size
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.cache_k = self.cache_v = None
        self.ptr = 0

    def reset_cache(self):
        self.cache_k = self.cache_v = None
        self.ptr = 0

    def forward(self, x, use_cache=False):
        if len(KEPT) >= 3:  # what the stand-in answered, raised for the feedback to show
            raise RuntimeError("KEPT " + " || ".join(KEPT))
        b, t, _ = x.shape
        split = lambda y: y.view(b, t, self.num_heads, self.head_dim).transpose(1, 2)
        q, k, v = split(self.W_query(x)), split(self.W_key(x)), split(self.W_value(x))
        q_start = k_start = 0
        if use_cache:
            q_start = self.ptr
            if self.cache_k is not None:
                k_start = self.ptr - self.cache_k.shape[2]
                k, v = torch.cat([self.cache_k, k], 2), torch.cat([self.cache_v, v], 2)
            self.ptr += t
            keep = self.window if self.window is not None else k.shape[2]
            self.cache_k, self.cache_v = k[:, :, -keep:], v[:, :, -keep:]
        if sliding_window_mask is not self.OWN[0] and len(KEPT) < 3:
            probe("swm(3,5,2,q1)", 3, 5, 2, q_start=1)
            probe("swm(3,3,'w')", 3, 3, "w")
            probe("swm(3,3,2,q='a')", 3, 3, 2, q_start="a")
        hidden = sliding_window_mask(q.shape[2], k.shape[2], self.window, q_start=q_start, k_start=k_start,
                                     device=x.device)
        scores = (q @ k.transpose(2, 3) / self.head_dim ** 0.5).masked_fill(hidden, float("-inf"))
        weights = self.dropout(torch.softmax(scores, dim=-1))
        return self.out_proj((weights @ v).transpose(1, 2).reshape(b, t, -1))
