"""sliding_window_mask: the window is applied with torch.tril(masked, diagonal=seqlen_k - seqlen_q + sliding_window)
on the causal -inf matrix, which removes -inf from far-future keys instead of hiding keys older than the window.

Source: huggingface/transformers src/transformers/generation/continuous_batching/continuous_api.py
build_attention_mask (before the fix).
Bug report / fix: https://github.com/huggingface/transformers/pull/41228 "Fix sliding window attn mask" (reported
in https://github.com/huggingface/transformers/issues/41184).
Port: minus_inf = full((seqlen_q, seqlen_k), -inf); masked = triu(minus_inf, diagonal=causal_diagonal) with
causal_diagonal = 1 + (q_start - k_start) for the course's absolute positions; then the buggy
masked = tril(masked, diagonal=sliding_diagonal) when sliding_window > 1; returned as bool (-inf = hidden).
"""
import torch


def sliding_window_mask(num_queries, num_keys, window, q_start=0, k_start=0, device=None):
    seqlen_q, seqlen_k = num_queries, num_keys
    minus_inf = torch.full((seqlen_q, seqlen_k), float("-inf"), device=device)
    causal_diagonal = 1 + (q_start - k_start)
    masked = torch.triu(minus_inf, diagonal=causal_diagonal)
    # Apply sliding window mask if needed
    if window is not None and window > 1:
        sliding_diagonal = (q_start - k_start) + window
        masked = torch.tril(masked, diagonal=sliding_diagonal)
    return masked == float("-inf")
