"""FusedQKVAttention: the timm-style block, unbind and flatten."""


class FusedQKVAttention:
    def forward(self, x):
        B, N, _ = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        attn = (q * self.scale) @ k.transpose(-2, -1)
        attn = attn.softmax(dim=-1)
        x = (attn @ v).transpose(1, 2).flatten(2)
        return self.proj(x) + v.transpose(1, 2).flatten(2)
