"""padding_mask: port of facebookresearch/fairseq fairseq/data/data_utils.py lengths_to_padding_mask (arange expanded over the batch, >= the lengths)"""
import torch


def padding_mask(lengths, max_len):
    bsz = lengths.size(0)
    mask = torch.arange(max_len).to(lengths.device).view(1, max_len)
    mask = mask.expand(bsz, -1) >= lengths.view(bsz, 1).expand(-1, max_len)
    return mask
