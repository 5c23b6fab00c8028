"""MultiHeadAttention: keys projected with W_query."""
import torch


class MultiHeadAttention:
    def forward(self, x):
        b, n, _ = x.shape
        keys = self.W_query(x).view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
        queries = self.W_query(x).view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
        values = self.W_value(x).view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
        s = (queries @ keys.transpose(2, 3)).masked_fill(self.mask[:n, :n], -torch.inf)
        w = self.dropout(torch.softmax(s / keys.shape[-1] ** 0.5, dim=-1))
        return self.out_proj((w @ values).transpose(1, 2).reshape(b, n, self.d_out))
