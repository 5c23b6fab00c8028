"""MultiHeadAttentionWithSWA: trims the keys to the last sliding_window_size before attending, so the first queries of a chunk lose keys they should see."""
import torch


class MultiHeadAttentionWithSWA:
    def forward(self, x, use_cache=False):
        num_tokens, window = x.shape[1], self.sliding_window_size
        queries = _heads(self.W_query(x), self.num_heads)  # [B, H, T, hd]
        keys = _heads(self.W_key(x), self.num_heads)
        values = _heads(self.W_value(x), self.num_heads)
        q_start = k_start = 0
        if use_cache:
            q_start = self.position
            if self.cache_k is not None:
                keys = torch.cat([self.cache_k, keys], dim=2)
                values = torch.cat([self.cache_v, values], dim=2)
            if window is not None:
                keys, values = keys[:, :, -window:], values[:, :, -window:]  # the window, and no more
            self.cache_k, self.cache_v = keys, values
            self.position = q_start + num_tokens
            k_start = q_start + num_tokens - keys.shape[2]
        hidden = sliding_window_mask(num_tokens, keys.shape[2], window, q_start=q_start, k_start=k_start,
                                     device=x.device)
        return self.out_proj(_attend(queries, keys, values, hidden, self.dropout))
