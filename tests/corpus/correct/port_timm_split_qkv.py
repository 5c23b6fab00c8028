"""split_qkv: port of huggingface/pytorch-image-models timm/layers/attention.py Attention.forward (qkv.reshape(B, N, 3, H, hd).permute(2, 0, 3, 1, 4).unbind(0))"""


def split_qkv(qkv, num_heads):
    B, N, C3 = qkv.shape
    if C3 % 3 != 0 or (C3 // 3) % num_heads != 0:
        raise ValueError("qkv width must be 3 * a multiple of num_heads")
    head_dim = C3 // 3 // num_heads
    q, k, v = qkv.reshape(B, N, 3, num_heads, head_dim).permute(2, 0, 3, 1, 4).unbind(0)
    return q, k, v
