"""MultiHeadAttentionWithSWA: its own mask hides keys window - 1 tokens back, so each query sees window - 1 tokens."""
import torch


class MultiHeadAttentionWithSWA:
    def forward(self, x, use_cache=False):
        b, num_tokens, _ = x.shape
        head_dim = self.W_query.out_features // self.num_heads
        queries = self.W_query(x).view(b, num_tokens, self.num_heads, head_dim).transpose(1, 2)
        keys = self.W_key(x).view(b, num_tokens, self.num_heads, head_dim).transpose(1, 2)
        values = self.W_value(x).view(b, num_tokens, self.num_heads, head_dim).transpose(1, 2)
        window = self.sliding_window_size

        q_start = 0
        if use_cache:
            q_start = self.position
            if self.cache_k is not None:
                keys = torch.cat([self.cache_k, keys], dim=2)
                values = torch.cat([self.cache_v, values], dim=2)
            if window is not None:
                self.cache_k, self.cache_v = keys[:, :, -window:], values[:, :, -window:]
                keys, values = keys[:, :, -(window + num_tokens - 1):], values[:, :, -(window + num_tokens - 1):]
            else:
                self.cache_k, self.cache_v = keys, values
            self.position += num_tokens
        k_start = q_start + num_tokens - keys.shape[2]

        q_pos = torch.arange(q_start, q_start + num_tokens, device=x.device)
        k_pos = torch.arange(k_start, k_start + keys.shape[2], device=x.device)
        diff = q_pos[:, None] - k_pos[None, :]
        mask = diff < 0
        if window is not None:
            mask = mask | (diff >= window - 1)  # the query itself plus window - 1 before it

        scores = (queries @ keys.transpose(2, 3) / head_dim ** 0.5).masked_fill(mask, -torch.inf)
        weights = self.dropout(torch.softmax(scores, dim=-1))
        return self.out_proj((weights @ values).transpose(1, 2).reshape(b, num_tokens, -1))
