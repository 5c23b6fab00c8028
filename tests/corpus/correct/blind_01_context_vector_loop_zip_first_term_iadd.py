"""context_vector_loop: Zips weights with rows, starts from the first product (a new tensor) and adds the rest with += on that own accumulator (written blind, from the contract alone)."""
import torch


def context_vector_loop(inputs, weights):
    context = None
    for w, x in zip(weights, inputs):
        term = w * x
        if context is None:
            context = term          # a fresh tensor, never an input
        else:
            context += term         # in place on our own tensor only
    return context
