"""context_vector_loop: started from inputs[0] and accumulated with *= and +=, which overwrote row 0 of inputs"""
import torch


def context_vector_loop(inputs, weights):
    context = inputs[0]
    context *= weights[0]
    for i in range(1, inputs.shape[0]):
        context += weights[i] * inputs[i]
    return context
