"""GroupedQueryAttention: keeps a list of the chunks it was given and computes keys and values of all of them."""
import torch


class GroupedQueryAttention:
    def reset_cache(self):
        self.seen = []
        self.cache_k, self.cache_v = None, None
        self.position = 0

    def forward(self, x, use_cache=False):
        b, num_tokens, _ = x.shape
        head_dim = self.W_query.out_features // self.num_heads
        start = 0
        if use_cache:
            start = self.position
            self.seen.append(x)
            self.position += num_tokens
            context_tokens = torch.cat(self.seen, dim=1)
        else:
            context_tokens = x
        num_keys = context_tokens.shape[1]
        queries = self.W_query(x).view(b, num_tokens, self.num_heads, head_dim).transpose(1, 2)
        keys = self.W_key(context_tokens).view(b, num_keys, self.num_kv_groups, head_dim).transpose(1, 2)
        values = self.W_value(context_tokens).view(b, num_keys, self.num_kv_groups, head_dim).transpose(1, 2)
        if use_cache:
            self.cache_k, self.cache_v = keys, values

        group_size = self.num_heads // self.num_kv_groups
        keys, values = repeat_kv(keys, group_size), repeat_kv(values, group_size)
        mask = sliding_window_mask(num_tokens, num_keys, None, q_start=start, device=x.device)
        scores = queries @ keys.transpose(2, 3) / head_dim ** 0.5
        weights = self.dropout(torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1))
        return self.out_proj((weights @ values).transpose(1, 2).reshape(b, num_tokens, -1))
