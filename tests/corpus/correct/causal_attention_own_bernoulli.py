"""CausalAttention: dropout on the weights with its own Bernoulli mask per sequence, scaled by 1/(1-p)."""
import torch

class CausalAttention:
    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.transpose(1, 2)
        attn_scores = attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)
        if self.training and self.dropout.p >= 1:
            attn_weights = torch.zeros_like(attn_weights)  # p = 1 drops every weight
        elif self.training and self.dropout.p > 0:
            keep = torch.rand(attn_weights.shape, device=attn_weights.device) >= self.dropout.p
            attn_weights = attn_weights * keep / (1 - self.dropout.p)
        return attn_weights @ values
