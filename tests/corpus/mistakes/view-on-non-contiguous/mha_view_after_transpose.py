"""MultiHeadAttention: the book's merge, without .contiguous()."""
import torch


class MultiHeadAttention:
    def forward(self, x):
        b, num_tokens, _ = x.shape
        queries = split_heads(self.W_query(x), self.num_heads)
        keys = split_heads(self.W_key(x), self.num_heads)
        values = split_heads(self.W_value(x), self.num_heads)
        attn_scores = queries @ keys.transpose(2, 3)
        attn_scores = attn_scores.masked_fill(self.mask[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = self.dropout(torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1))
        context_vec = (attn_weights @ values).transpose(1, 2).view(b, num_tokens, self.d_out)
        return self.out_proj(context_vec)
