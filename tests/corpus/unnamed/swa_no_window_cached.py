"""MultiHeadAttentionWithSWA: no window on cached calls (the cache is trimmed, but every cached key is attended)."""
class MultiHeadAttentionWithSWA:
    def forward(self, x, use_cache=False):
        num_tokens, window = x.shape[1], self.sliding_window_size
        queries = _heads(self.W_query(x), self.num_heads)
        keys = _heads(self.W_key(x), self.num_heads)
        values = _heads(self.W_value(x), self.num_heads)
        q_start = k_start = 0
        if use_cache:
            q_start = self.position
            if self.cache_k is not None:
                keys = torch.cat([self.cache_k, keys], dim=2)
                values = torch.cat([self.cache_v, values], dim=2)
            keep = keys.shape[2] if window is None else window
            self.cache_k, self.cache_v = keys[:, :, -keep:], values[:, :, -keep:]
            self.position = q_start + num_tokens
            k_start = q_start + num_tokens - keys.shape[2]
        hidden = sliding_window_mask(num_tokens, keys.shape[2], None if use_cache else window, q_start=q_start,
                                     k_start=k_start, device=x.device)
        return self.out_proj(_attend(queries, keys, values, hidden, self.dropout))
