"""MultiHeadAttention: reshapes each projection straight to [B, H, T, hd]."""
import torch


class MultiHeadAttention:
    def forward(self, x):
        B, T, _ = x.shape
        shape = (B, self.num_heads, T, self.head_dim)
        q = self.W_query(x).reshape(shape)
        k = self.W_key(x).reshape(shape)
        v = self.W_value(x).reshape(shape)
        att = q @ k.transpose(-2, -1) / self.head_dim**0.5
        att = att.masked_fill(self.mask[:T, :T], float("-inf"))
        out = self.dropout(torch.softmax(att, dim=-1)) @ v
        return self.out_proj(out.transpose(1, 2).reshape(B, T, self.d_out))
