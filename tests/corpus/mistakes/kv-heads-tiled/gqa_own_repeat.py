"""GroupedQueryAttention: expands its cached groups to the heads with its own .repeat (tiled)."""
import torch


class GroupedQueryAttention:
    def forward(self, x, use_cache=False):
        b, num_tokens, _ = x.shape
        head_dim = self.W_query.out_features // self.num_heads
        queries = self.W_query(x).view(b, num_tokens, self.num_heads, head_dim).transpose(1, 2)
        keys = self.W_key(x).view(b, num_tokens, self.num_kv_groups, head_dim).transpose(1, 2)
        values = self.W_value(x).view(b, num_tokens, self.num_kv_groups, head_dim).transpose(1, 2)

        start = 0
        if use_cache:
            start = self.position
            if self.cache_k is not None:
                keys = torch.cat([self.cache_k, keys], dim=2)
                values = torch.cat([self.cache_v, values], dim=2)
            self.cache_k, self.cache_v = keys, values
            self.position += num_tokens

        # one copy of the groups for every query head they serve
        group_size = self.num_heads // self.num_kv_groups
        keys = keys.repeat(1, group_size, 1, 1)
        values = values.repeat(1, group_size, 1, 1)

        mask = sliding_window_mask(num_tokens, keys.shape[2], None, q_start=start, device=x.device)
        scores = queries @ keys.transpose(2, 3) / head_dim ** 0.5
        weights = self.dropout(torch.softmax(scores.masked_fill(mask, -torch.inf), dim=-1))
        context = (weights @ values).transpose(1, 2).reshape(b, num_tokens, -1)
        return self.out_proj(context)
