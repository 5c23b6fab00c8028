"""sliding_window_mask ported from google/gemma_pytorch gemma/model.py GemmaForCausalLM.generate (mask_tensor and
local_mask_tensor, rows selected by input positions).

Source: https://github.com/google/gemma_pytorch/blob/014acb7ac4563a5f77c76d7ff98f31b568c16508/gemma/model.py#L669-L679
Kept: mask_tensor = triu(full((max_seq_len, max_seq_len), -2.3819763e38), diagonal=1); local_mask_tensor =
mask_tensor + tril(full(..., -2.3819763e38), diagonal=-sliding_window_size); rows picked with index_select over the
query positions (Gemma's input_positions_tensor).
Adapted: no (1, 1) leading dims; the columns are picked at the key positions k_start ... too; max_seq_len is the
largest position needed; window None uses mask_tensor alone; returned as bool (True where the additive mask < 0).
"""
import torch


def sliding_window_mask(num_queries, num_keys, window, q_start=0, k_start=0, device=None):
    max_seq_len = max(q_start + num_queries, k_start + num_keys)
    mask_tensor = torch.full((max_seq_len, max_seq_len), -2.3819763e38).to(torch.float)
    mask_tensor = torch.triu(mask_tensor, diagonal=1).to(device)
    local_mask_tensor = mask_tensor + torch.tril(
        torch.full((max_seq_len, max_seq_len), -2.3819763e38, device=device),
        diagonal=-window,
    ) if window else mask_tensor
    input_positions_tensor = torch.arange(q_start, q_start + num_queries, device=device)
    key_positions_tensor = torch.arange(k_start, k_start + num_keys, device=device)
    curr = local_mask_tensor.index_select(0, input_positions_tensor).index_select(1, key_positions_tensor)
    return curr < 0
