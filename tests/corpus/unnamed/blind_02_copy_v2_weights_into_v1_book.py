"""copy_v2_weights_into_v1: The book's exercise 3.1 answer: replace each v1 parameter with `nn.Parameter(v2.W_x.weight.T)` (shares storage with v2, transposed view). (written blind, from the contract alone). Under the contract's row it is a mistake: v1's parameters are replaced by views of v2's storage, and a biased v2 does not raise (issue 34, item 9)."""
import torch


def copy_v2_weights_into_v1(v2, v1):
    # The book's solution to exercise 3.1: wrap the transposed Linear weights as new Parameters.
    v1.W_query = torch.nn.Parameter(v2.W_query.weight.T)
    v1.W_key = torch.nn.Parameter(v2.W_key.weight.T)
    v1.W_value = torch.nn.Parameter(v2.W_value.weight.T)
