"""sliding_window_mask: right everywhere except window=None, where it hides nothing (the hostile pattern of issue 19 item 7)."""
import torch


def sliding_window_mask(num_queries, num_keys, window, q_start=0, k_start=0, device=None):
    queries = torch.arange(q_start, q_start + num_queries, device=device)[:, None]
    keys = torch.arange(k_start, k_start + num_keys, device=device)[None, :]
    if window is None:
        return torch.zeros(num_queries, num_keys, dtype=torch.bool, device=device)
    return (keys > queries) | (queries - keys >= window)
