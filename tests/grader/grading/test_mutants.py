"""For every exercise, a deliberately wrong implementation loses points on it (no check that cannot fail)."""
from pathlib import Path

import pytest

from grader.submission import resolve_submission

ROOT = Path(__file__).resolve().parents[3]

# exercise -> (assignment, text of the reference, what the mistake replaces it with)
MUTANTS = {
    "attention_scores_for_query": ("01_attention_basics", "scores[i] = torch.dot(x_i, query)",
                                   "scores[i] = torch.dot(x_i, x_i)"),
    "attention_scores_loop": ("01_attention_basics", "scores[i, j] = torch.dot(x_i, x_j)",
                              "scores[i, j] = torch.dot(x_i, x_i)"),
    "softmax_naive": ("01_attention_basics", "return exp / exp.sum(dim=dim, keepdim=True)",
                      "return exp / exp.sum()"),
    "softmax": ("01_attention_basics", "x_max = x.amax(dim=dim, keepdim=True)  # [..., 1, ...]",
                "x_max = x.amax(dim=dim, keepdim=True) * 0"),
    "context_vector_loop": ("01_attention_basics", "context = context + w_i * x_i", "context = context + x_i"),
    "attention_scores": ("01_attention_basics", "return inputs @ inputs.transpose(-2, -1)  # [..., T, T]",
                         "return (inputs @ inputs.transpose(-2, -1)).float()"),
    "simple_self_attention": ("01_attention_basics", "return weights @ inputs  # [..., T, d]",
                              "return weights.transpose(-2, -1) @ inputs"),
    "attention_weights": ("02_self_attention", "/ math.sqrt(keys.shape[-1])", ""),
    "scaled_dot_product_attention": ("02_self_attention", "return attention_weights(queries, keys, mask) @ values",
                                     "return attention_weights(queries, keys, mask) @ values[..., :1, :]"),
    "SelfAttention_v1": ("02_self_attention", "keys = x @ self.W_key  # [T, d_out]",
                         "keys = x @ self.W_query  # [T, d_out]"),
    "SelfAttention_v2": ("02_self_attention", "queries = self.W_query(x)  # [T, d_out]",
                         "queries = self.W_value(x)  # [T, d_out]"),
    "copy_v2_weights_into_v1": ("02_self_attention", "v1.W_query.copy_(v2.W_query.weight.T)",
                                "v1.W_query.copy_(v2.W_key.weight.T)"),
    "CrossAttention": ("02_self_attention", "keys = self.W_key(x_kv)  # [..., Tk, d_k]",
                       "keys = self.W_key(x_kv) * 2  # [..., Tk, d_k]"),
    "causal_mask": ("03_causal_attention", "return torch.triu(ones, diagonal=1)", "return torch.triu(ones)"),
    "apply_causal_mask": ("03_causal_attention", "return scores.masked_fill(mask, float(\"-inf\"))  # [..., T, T]",
                          "scores.masked_fill(mask, float(\"-inf\"))\n    return scores"),
    "renormalize_causal_weights": ("03_causal_attention", "return masked / masked.sum(dim=-1, keepdim=True)",
                                   "return masked"),
    "padding_mask": ("03_causal_attention", "return positions >= lengths[:, None]  # [B, max_len]",
                     "return positions > lengths[:, None]  # [B, max_len]"),
    "causal_padding_mask": ("03_causal_attention", "return future[None, :, :] | padding[:, None, :]",
                            "return future[None, :, :] | padding[:, :, None]"),
    "CausalAttention": ("03_causal_attention", "weights = self.dropout(weights)\n        return weights @ values",
                        "return self.dropout(weights @ values)"),
    "split_heads": ("04_multi_head_attention", "x = x.reshape(batch, num_tokens, num_heads, dim // num_heads)  # [B, T, H, hd]\n    return x.transpose(1, 2)",
                    "return x.reshape(batch, num_heads, num_tokens, dim // num_heads)"),
    "merge_heads": ("04_multi_head_attention", "x = x.transpose(1, 2)  # [B, T, H, hd], no longer contiguous\n",
                    "pass  # the transpose forgotten\n"),
    "split_qkv": ("04_multi_head_attention", "q, k, v = qkv.permute(2, 0, 3, 1, 4)  # each [B, H, T, hd]",
                  "k, q, v = qkv.permute(2, 0, 3, 1, 4)  # each [B, H, T, hd]"),
    "MultiHeadAttentionWrapper": ("04_multi_head_attention", "return torch.cat([head(x) for head in self.heads], dim=-1)",
                                  "return torch.cat([head(x) for head in reversed(self.heads)], dim=-1)"),
    "MultiHeadAttention": ("04_multi_head_attention", "weights = torch.softmax(scores / self.head_dim**0.5, dim=-1)",
                           "weights = torch.softmax(scores / self.d_out**0.5, dim=-1)"),
    "FusedQKVAttention": ("04_multi_head_attention", "return self.proj(attended) + merge_heads(v)",
                          "return self.proj(attended)"),
    "online_softmax": ("05_efficient_attention", "running_sum = running_sum * torch.exp(running_max - shift)",
                       "running_sum = running_sum"),
    "flash_attention": ("05_efficient_attention", "acc = acc * rescale[..., None] + p @ v", "acc = acc + p @ v"),
    "compute_rope_params": ("06_decoding_attention", "angles = torch.cat([angles, angles], dim=-1)",
                            "angles = angles.repeat_interleave(2, dim=-1)"),
    "apply_rope": ("06_decoding_attention", "rotated = torch.cat([-x2, x1], dim=-1)",
                   "rotated = torch.cat([x2, -x1], dim=-1)"),
    "repeat_kv": ("06_decoding_attention", "return x.repeat_interleave(group_size, dim=1)",
                  "return x.repeat(1, group_size, 1, 1)"),
    "sliding_window_mask": ("06_decoding_attention", "(queries - keys >= window)", "(queries - keys > window)"),
    "CachedMultiHeadAttention": ("06_decoding_attention", "start = self.position", "start = 0"),
    "GroupedQueryAttention": ("06_decoding_attention", "self.cache_k, self.cache_v = None, None  # [B, G, T_cached, hd]",
                              "self.cache_k, self.cache_v = getattr(self, 'cache_k', None), getattr(self, 'cache_v', None)"),
    "MultiHeadAttentionWithSWA": ("06_decoding_attention",
                                  "hidden = sliding_window_mask(num_tokens, keys.shape[2], window, q_start=q_start",
                                  "hidden = sliding_window_mask(num_tokens, keys.shape[2], window + 1, q_start=q_start"),
}

# the misconception each mutant's feedback must name, where the mistake is one of the catalogue's
NAMED = {
    "softmax_naive": "softmax-wrong-dim", "softmax": "softmax-unstable", "attention_scores": "wrong-dtype",
    "simple_self_attention": "softmax-wrong-dim", "attention_weights": "missing-scale",
    "SelfAttention_v1": "qkv-swapped", "SelfAttention_v2": "qkv-swapped", "causal_mask": "mask-hides-diagonal",
    "apply_causal_mask": "mask-not-applied", "renormalize_causal_weights": "mask-after-softmax-not-renormalized",
    "split_heads": "heads-split-without-transpose", "merge_heads": "heads-merged-without-transpose",
    "split_qkv": "qkv-swapped", "MultiHeadAttention": "wrong-scale", "copy_v2_weights_into_v1": "qkv-swapped",
    "compute_rope_params": "rope-pairs-interleaved", "repeat_kv": "kv-heads-tiled",
    "sliding_window_mask": "window-off-by-one", "CachedMultiHeadAttention": "cache-position-not-advanced",
    "GroupedQueryAttention": "cache-not-reset", "MultiHeadAttentionWithSWA": "window-off-by-one",
}


def test_every_exercise_has_a_mutant(course):
    assert sorted(MUTANTS) == sorted(name for a in course.assignments for name in a.exercises)


@pytest.mark.parametrize("exercise", sorted(MUTANTS))
def test_a_wrong_implementation_loses_points(course, grader, submission_dir, exercise):
    assignment_id, old, new = MUTANTS[exercise]
    assignment = course.assignment(assignment_id)
    path = submission_dir / assignment_id / assignment.module
    text = path.read_text()
    assert text.count(old) >= 1, f"the mutant for {exercise} no longer matches the reference"
    path.write_text(text.replace(old, new, 1))
    result = grader.grade(resolve_submission(submission_dir, course), (assignment,), seed=2024)
    scores = {e.name: e for e in result.assignments[0].exercises}
    assert scores[exercise].score < scores[exercise].max_score, f"{exercise}: the mistake was not noticed"
    assert scores[exercise].status in ("failed", "error"), scores[exercise].feedback
    if exercise in NAMED:
        assert NAMED[exercise] in scores[exercise].misconceptions, scores[exercise].feedback
