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
        attn_weights = attn_weights * (torch.rand(attn_weights.shape, device=attn_weights.device) >= self.dropout.p) / (1 - self.dropout.p) if self.training else attn_weights
        return attn_weights @ values
