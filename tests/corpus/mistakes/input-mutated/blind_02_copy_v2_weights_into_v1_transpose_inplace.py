"""copy_v2_weights_into_v1: Transposes v2's weights by reassigning `w.data = w.data.T` on v2 itself before copying, so v2 is modified. (written blind, from the contract alone)."""
import torch


def copy_v2_weights_into_v1(v2, v1):
    for name in ("W_query", "W_key", "W_value"):
        w = getattr(v2, name).weight
        # Transposes v2's own weight storage in place, so v2 is left transposed (broken) afterwards.
        w.data = w.data.T
        getattr(v1, name).data = w.data.clone()
