"""copy_v2_weights_into_v1: Assigns `.data` from each Linear weight without transposing it (shape error for d_in != d_out, wrong output when square). (written blind, from the contract alone). The blind author filed it as unnamed."""
import torch


def copy_v2_weights_into_v1(v2, v1):
    # Forgets that nn.Linear stores its weight as [d_out, d_in]: copies it without transposing.
    v1.W_query.data = v2.W_query.weight.data.clone()
    v1.W_key.data = v2.W_key.weight.data.clone()
    v1.W_value.data = v2.W_value.weight.data.clone()
