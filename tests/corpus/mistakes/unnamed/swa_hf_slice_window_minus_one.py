"""MultiHeadAttentionWithSWA: keeps the last window - 1 positions with Hugging Face's slice [-(window - 1):], which for a window of 1 is [0:], the whole sequence."""
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
            if window is not None:  # what the next call needs besides its own tokens: window - 1 positions
                self.cache_k, self.cache_v = keys[:, :, -window + 1:], values[:, :, -window + 1:]
            else:
                self.cache_k, self.cache_v = keys, values
            self.position = q_start + num_tokens
            k_start = q_start + num_tokens - keys.shape[2]
        hidden = sliding_window_mask(num_tokens, keys.shape[2], window, q_start=q_start, k_start=k_start,
                                     device=x.device)
        return self.out_proj(_attend(queries, keys, values, hidden, self.dropout))
