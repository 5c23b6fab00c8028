"""CausalAttention: dropout on the masked, scaled scores (a hidden -inf times 0 is NaN)."""
import torch

class CausalAttention:
    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.transpose(1, 2)
        attn_scores = attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(self.dropout(attn_scores / keys.shape[-1]**0.5), dim=-1)
        return attn_weights @ values
