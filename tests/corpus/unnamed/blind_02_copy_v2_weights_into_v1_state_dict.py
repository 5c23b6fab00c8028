"""copy_v2_weights_into_v1: Builds a v1 state dict from `v2.state_dict()` with transposed `.weight` entries and calls `v1.load_state_dict`. (written blind, from the contract alone). Under the contract's row it is a mistake: a v2 with biases is copied (strict=False drops them) instead of raising ValueError (issue 34, item 9)."""
import torch


def copy_v2_weights_into_v1(v2, v1):
    """Build a v1-shaped state dict from v2's state dict and load it (load_state_dict copies in place)."""
    sd2 = v2.state_dict()
    new_sd = {}
    for name in ("W_query", "W_key", "W_value"):
        new_sd[name] = sd2[f"{name}.weight"].t().contiguous()
    v1.load_state_dict(new_sd, strict=False)
