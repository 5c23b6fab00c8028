"""attention_scores: port of karpathy/nanoGPT model.py CausalSelfAttention.forward (att = q @ k.transpose(-2, -1) with q = k = the inputs)"""


def attention_scores(inputs):
    return inputs @ inputs.transpose(-2, -1)
