"""MultiHeadAttention: the book's code with the transposes left out of the split."""
import torch


class MultiHeadAttention:
    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x).view(b, self.num_heads, num_tokens, self.head_dim)
        queries = self.W_query(x).view(b, self.num_heads, num_tokens, self.head_dim)
        values = self.W_value(x).view(b, self.num_heads, num_tokens, self.head_dim)
        attn_scores = queries @ keys.transpose(2, 3)
        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = self.dropout(torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1))
        context_vec = (attn_weights @ values).transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)
        return self.out_proj(context_vec)
