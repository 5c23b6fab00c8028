"""sliding_window_mask: torch.meshgrid of absolute positions, logical_or of causal and window conditions."""
import torch


def sliding_window_mask(num_queries, num_keys, window, q_start=0, k_start=0, device=None):
    qi, kj = torch.meshgrid(
        torch.arange(q_start, q_start + num_queries, device=device),
        torch.arange(k_start, k_start + num_keys, device=device),
        indexing="ij",
    )
    future = torch.gt(kj, qi)
    if window is None:
        return future
    too_old = torch.ge(qi - kj, window)
    return torch.logical_or(future, too_old)
