"""CachedMultiHeadAttention: caches the inputs and projects every earlier token again at each call."""
import torch


class CachedMultiHeadAttention:
    def reset_cache(self):
        self.cache_x = None  # the tokens seen so far
        self.cache_k, self.cache_v = None, None
        self.position = 0

    def forward(self, x, use_cache=False):
        b, num_tokens, _ = x.shape
        head_dim = self.W_query.out_features // self.num_heads
        start = 0
        if use_cache:
            start = self.position
            if self.cache_x is not None:
                self.cache_x = torch.cat([self.cache_x, x], dim=1)
            else:
                self.cache_x = x
            seen = self.cache_x
            self.position += num_tokens
        else:
            seen = x
        queries = self.W_query(x).view(b, num_tokens, self.num_heads, head_dim).transpose(1, 2)
        keys = self.W_key(seen).view(b, seen.shape[1], self.num_heads, head_dim).transpose(1, 2)
        values = self.W_value(seen).view(b, seen.shape[1], self.num_heads, head_dim).transpose(1, 2)
        if use_cache:
            self.cache_k, self.cache_v = keys, values

        mask = sliding_window_mask(num_tokens, keys.shape[2], None, q_start=start, device=x.device)
        scores = (queries @ keys.transpose(2, 3)).masked_fill(mask, -torch.inf)
        weights = self.dropout(torch.softmax(scores / head_dim ** 0.5, dim=-1))
        context = (weights @ values).transpose(1, 2).contiguous().view(b, num_tokens, -1)
        return self.out_proj(context)
