"""softmax: Moves dim last, computes exp(x - m - log(sum exp(x - m))) in the log domain, zeroes slices whose max is not finite, moves the dim back (written blind, from the contract alone)."""
import torch


def softmax(x, dim=-1):
    y = x.movedim(dim, -1)
    m = y.amax(-1, keepdim=True)
    finite_max = torch.isfinite(m)
    m = torch.where(finite_max, m, torch.zeros_like(m))
    shifted = y - m
    s = shifted.exp().sum(-1, keepdim=True)
    log_s = torch.log(torch.where(finite_max, s, torch.ones_like(s)))
    w = torch.exp(shifted - log_s)
    w = torch.where(finite_max, w, torch.zeros_like(w))
    return w.movedim(-1, dim)
