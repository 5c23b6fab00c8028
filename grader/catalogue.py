"""The misconception catalogue: every mistake the feedback can name (the course spec's ids).

Each entry says, in the student's words, what went wrong, where in the lessons to look, and what the
slip typically looks like. Suites name a misconception only when a known-wrong computation reproduces
the student's output (see :mod:`grader.grading.diagnose`); this module only holds the words.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Misconception:
    id: str
    explanation: str  # what is wrong, said to the student
    hint: str  # what to do, and the lesson section that shows it
    example: str  # one line of code that makes the mistake

    def feedback(self) -> str:
        """The paragraph a report shows under a failed exercise."""
        return f"{self.id}: {self.explanation}\n  Hint: {self.hint}\n  The slip often looks like: {self.example}"


_ENTRIES = (
    Misconception(
        "softmax-wrong-dim",
        "Your softmax normalises along the wrong dimension, so the weights do not sum to 1 over the keys.",
        "Normalise along the dimension you are given (the last one, the keys, in attention): "
        "01 section 4, \"A softmax that does not overflow\"; for attention's weights, 01 section 7, "
        "\"Simplified self-attention\", and 02 section 2, \"Scaled dot-product attention\".",
        "weights = torch.softmax(scores, dim=0)"),
    Misconception(
        "softmax-unstable",
        "Your softmax gives inf or NaN: large scores overflow exp(), or a slice that is all -inf gives NaN "
        "(0/0, or -inf - -inf in a shift or an online softmax's rescale) instead of zeros; or zeros where "
        "exp() underflows, scores shifted by something other than their own maximum (an online softmax's "
        "running maximum left at the 0 that stood in for -inf).",
        "Subtract each slice's maximum before exp() (a slice that is all -inf: shift it by 0, but keep the "
        "maximum itself -inf; in an online softmax the rescale too, exp(m_old - _shift(m_new))), and give "
        "such a slice zeros rather than 0/0 (divide by a sum that cannot be 0, e.g. s.clamp_min(tiny): a "
        "torch.where placed after a 0/0 hides it from the output but not from the gradient): "
        "01 section 3, \"Where the naive formula breaks\", and section 4, \"A softmax that does not overflow\".",
        "return torch.exp(x) / torch.exp(x).sum(dim, keepdim=True)"),
    Misconception(
        "missing-scale",
        "Your scores are not scaled, so the softmax saturates as the key size grows.",
        "Divide the scores by sqrt(d_k), the size of a key (of one head's key in multi-head attention): "
        "02 section 2, \"Why divide by sqrt(d_k)?\".",
        "weights = torch.softmax(queries @ keys.transpose(-2, -1), dim=-1)"),
    Misconception(
        "wrong-scale",
        "Your scores are scaled by the wrong amount: by d_k instead of sqrt(d_k), multiplied instead of "
        "divided, or by the model width instead of the head size.",
        "Divide by sqrt(d_k), where d_k is the key size of one head (d_out / num_heads): "
        "02 section 2, \"Why divide by sqrt(d_k)?\", and 04 section 4, \"Why the scale uses the head size\".",
        "scores = queries @ keys.transpose(-2, -1) / keys.shape[-1]"),
    Misconception(
        "scores-transposed",
        "Your scores are K Qᵀ instead of Q Kᵀ: row i holds the scores of key i, not of query i.",
        "Compute queries @ keys.transpose(-2, -1), so that rows are queries and columns are keys: "
        "02 section 2, \"Scaled dot-product attention\".",
        "scores = keys @ queries.transpose(-2, -1)"),
    Misconception(
        "qkv-swapped",
        "A projection is used in the wrong role: the queries, keys or values come from another weight "
        "matrix than their own (in cross-attention: or from the other input).",
        "Queries come from W_query, keys from W_key and values from W_value (for cross-attention: the "
        "queries from x_q, keys and values from x_kv): 02 section 1, \"Queries, keys and values\".",
        "keys = x @ self.W_query"),
    Misconception(
        "values-not-used",
        "Your attention weights multiply something other than the values (the keys, the queries or the "
        "raw inputs).",
        "The context is weights @ values, with values = W_value(x): 02 section 2, \"Scaled dot-product "
        "attention\", and section 3, \"A self-attention class\".",
        "return attention_weights(queries, keys) @ keys"),
    Misconception(
        "mask-not-applied",
        "Your mask has no effect: hidden positions still get attention weight. A common cause is "
        "masked_fill (without the underscore), which returns a new tensor that is then thrown away.",
        "Use the result: scores = scores.masked_fill(mask, float('-inf')) (or masked_fill_ in place on a "
        "tensor you own): 03 section 2, \"Masking with -inf\".",
        "scores.masked_fill(mask, float('-inf'))  # result dropped"),
    Misconception(
        "mask-inverted",
        "Your mask is the wrong way round: it hides what should be visible (the past, or the real tokens) "
        "and shows what should be hidden. Masks here are boolean and True means hidden.",
        "Hide the positions where the mask you are given is True, scores.masked_fill(mask, float('-inf')), never "
        "where it is False (not ~mask): 02 section 2, \"Masks\". A mask you build yourself (from 03 on) is True "
        "on the future, j > i (torch.triu(ones, diagonal=1)), or on the padding, position >= length: 03 section "
        "1, \"Hiding the future\", and section 4, \"Padding\".",
        "scores = scores.masked_fill(~mask, float('-inf'))  # or, from 03 on, mask = torch.tril(ones)"),
    Misconception(
        "mask-hides-diagonal",
        "Your causal mask hides the diagonal too, so a token cannot attend to itself (and the first token "
        "sees nothing).",
        "Hide only j > i: torch.triu(ones, diagonal=1): 03 section 1, \"Hiding the future\".",
        "mask = torch.triu(torch.ones(T, T, dtype=torch.bool))"),
    Misconception(
        "mask-after-softmax-not-renormalized",
        "You zero the future after the softmax but do not rescale, so each row no longer sums to 1.",
        "Either mask with -inf before the softmax, or divide each row by its new sum after zeroing: "
        "03 section 3, \"Masking after the softmax\".",
        "weights = torch.softmax(scores, dim=-1).masked_fill(mask, 0.0)"),
    Misconception(
        "mask-not-truncated",
        "Your module works when the sequence is exactly context_length tokens long but fails for shorter "
        "ones: the causal mask buffer is used whole.",
        "Use the top-left corner of the buffer, self.mask[:T, :T] with T = x.shape[1]: "
        "03 section 5, \"A causal attention class\".",
        "scores.masked_fill(self.mask, float('-inf'))"),
    Misconception(
        "heads-split-without-transpose",
        "Your heads are split with a view/reshape straight to [B, H, T, hd], which mixes the features of "
        "different tokens into one head.",
        "Reshape to [B, T, H, hd] first, then transpose(1, 2): 04 section 2, \"The tempting shortcut, and "
        "why it is wrong\".",
        "x.view(B, num_heads, T, head_dim)"),
    Misconception(
        "heads-merged-without-transpose",
        "Your heads are merged back with a reshape straight from [B, H, T, hd], which interleaves tokens "
        "and heads.",
        "Transpose to [B, T, H, hd] first, then reshape to [B, T, H*hd]: 04 section 2, \"Splitting into "
        "heads\".",
        "context.reshape(B, T, num_heads * head_dim)"),
    Misconception(
        "view-on-non-contiguous",
        "Your code calls .view() on a tensor that is not contiguous (after a transpose, or for a "
        "non-contiguous input), which PyTorch refuses.",
        "Use .reshape(), or .contiguous().view(): 04 section 2, \"Transposes and contiguous memory\".",
        "context.transpose(1, 2).view(B, T, d_out)"),
    Misconception(
        "out-proj-missing",
        "Your module returns the heads' concatenated context without the output projection.",
        "Apply the final linear layer (out_proj, or proj in the fused block) to the merged heads: "
        "04 section 4, \"What out_proj adds\".",
        "return context  # instead of self.out_proj(context)"),
    Misconception(
        "dropout-in-eval",
        "Your dropout is active in evaluation mode: two calls on the same input give different outputs.",
        "Use the module self.dropout (nn.Dropout follows train()/eval()), or pass training=self.training "
        "to F.dropout: 03 section 5, \"Dropout on the attention weights\".",
        "weights = F.dropout(weights, p=0.5)"),
    Misconception(
        "dropout-on-scores",
        "Your dropout acts on the scores before the softmax; it belongs on the attention weights after it.",
        "Apply self.dropout to the weights that the softmax returns: 03 section 5, \"Dropout on the "
        "attention weights\".",
        "weights = torch.softmax(self.dropout(scores), dim=-1)"),
    Misconception(
        "input-mutated",
        "Your code modifies its input in place, so the caller's tensor changes.",
        "Compute a new tensor (masked_fill, x - m) instead of an in-place operation (masked_fill_, -=, "
        "x[...] = ...) on an argument: see the conventions at the top of each lesson.",
        "scores.masked_fill_(mask, float('-inf'))"),
    Misconception(
        "wrong-device",
        "Your output lives on another device than the input (a tensor created without device=).",
        "Create new tensors on the input's device: torch.ones(T, T, device=x.device), or x.new_zeros(...): "
        "03 section 1, \"Hiding the future\".",
        "mask = torch.ones(T, T, dtype=torch.bool)  # always on the CPU"),
    Misconception(
        "wrong-dtype",
        "Your output has another dtype than expected: for example float32 for a float64 input, or a float "
        "mask where a boolean one is asked for.",
        "Create new tensors with the input's dtype (x.new_zeros(...), torch.zeros_like(x), dtype=x.dtype), "
        "and masks with dtype=torch.bool: see the conventions at the top of each lesson.",
        "scores = torch.zeros(T, T)  # float32, whatever the input"),
    Misconception(
        "forbidden-op",
        "Your code calls a library function this exercise asks you to write yourself.",
        "Write it from torch's basic operations (exp, sum, amax, matmul, masked_fill): the exercise's "
        "docstring lists what is not allowed.",
        "return torch.softmax(x, dim=dim)"),
    Misconception(
        "not-vectorised",
        "Your code loops over tokens in Python: the number of tensor operations grows with the sequence "
        "length.",
        "Use matrix products over the whole sequence (inputs @ inputs.transpose(-2, -1)): 01 section 6, "
        "\"From loops to matrix products\".",
        "for i in range(T): scores[i] = inputs @ inputs[i]"),
    # 06_decoding_attention (its lesson: solutions/06_decoding_attention/decoding_attention.ipynb)
    Misconception(
        "kv-heads-tiled",
        "Your key/value groups are repeated as a tile ([K1, K2, K1, K2]) instead of each group in a row "
        "([K1, K1, K2, K2]), so query heads read the wrong group.",
        "Query head h uses group h // (num_heads / num_kv_groups): repeat each group in place with "
        "repeat_interleave along the head dimension, not repeat (which tiles): 06 section 3, "
        "\"Grouped-query attention\".",
        "keys = keys.repeat(1, group_size, 1, 1)"),
    Misconception(
        "cache-not-used",
        "Your cached attention computes the keys and values of earlier tokens again on every call instead "
        "of reading them from the cache.",
        "With use_cache=True, project only the new tokens, append their keys and values to cache_k and "
        "cache_v, and attend over the whole cache: 06 section 2, \"A KV cache\".",
        "keys = self.W_key(all_tokens_so_far)"),
    Misconception(
        "cache-position-not-advanced",
        "Your cached calls place the new tokens at the wrong positions: the causal mask or the rotary angles "
        "restart at 0 (for the queries, or for the keys a window kept) or advance by one per call, instead of "
        "continuing after the cached tokens.",
        "Keep the number of cached tokens and use it as the offset of the new queries, for the mask "
        "(q_start) and for apply_rope (offset): 06 section 1, \"Rotary positions\", and section 2, \"A KV cache\".",
        "mask = causal_mask(num_tokens)  # ignores the tokens already in the cache"),
    Misconception(
        "rope-pairs-interleaved",
        "Your rotary embedding rotates adjacent pairs (x0, x1), (x2, x3), ... instead of the two halves of "
        "each head (x_i with x_{i + head_dim/2}).",
        "Split each head into its first and second half and rotate x*cos + cat(-x2, x1)*sin, as the "
        "angles from compute_rope_params are laid out over both halves: 06 section 1, \"Rotary positions\".",
        "rotated = torch.stack((-x[..., 1::2], x[..., ::2]), dim=-1).flatten(-2)"),
    Misconception(
        "window-off-by-one",
        "Your sliding window shows one key too many or too few: each query must see itself and exactly "
        "the window - 1 tokens before it.",
        "Hide key j from query i when j > i or i - j >= window; compare with >=, not >: 06 section 4, "
        "\"Sliding windows\".",
        "hidden = (j > i) | (i - j > window)"),
    Misconception(
        "cache-not-reset",
        "Your reset_cache does not start a new sequence afresh: it leaves keys and values of the previous "
        "sequence in the cache (so the new one attends to tokens of the old), or it keeps the position counter "
        "(so the new sequence's positions continue after the old one's).",
        "Set cache_k and cache_v (and the position counter) back to None or 0 in reset_cache: 06 section 2, "
        "\"A KV cache\".",
        "def reset_cache(self): pass"),
    # 06's mistakes beyond the contract's ids (issue 34: common, and none of those fits)
    Misconception(
        "rope-frequencies-wrong",
        "Your rotary frequencies are wrong: the angle of pair i is pos * theta_base^(-2i/head_dim), but yours "
        "use another exponent (i/head_dim, the factor 2 lost, or a positive one), so the pairs turn at the "
        "wrong speeds.",
        "Take the exponents from torch.arange(0, head_dim, 2) / head_dim (2i/head_dim for i < head_dim/2) and "
        "invert: 1.0 / theta_base ** exponents: 06 section 1, \"Rotary positions\".",
        "inv_freq = 1.0 / theta_base ** (torch.arange(head_dim // 2) / head_dim)"),
    Misconception(
        "window-cache-too-small",
        "Your sliding-window cache keeps, and attends over, only the last sliding_window_size keys: a cached "
        "call of T tokens needs window + T - 1 of them, since its first query still sees the window - 1 "
        "tokens before it.",
        "Attend over the cached keys together with the new ones (the last window + T - 1 of them), and trim "
        "the cache to the last window positions after attending: 06 section 4, \"Sliding windows\".",
        "keys = torch.cat([self.cache_k, keys], dim=2)[:, :, -window:]"),
    Misconception(
        "sum-without-keepdim",
        "Your sum over a dimension drops that dimension (no keepdim=True): the sums no longer line up with the "
        "tensor they divide, so the division fails, or broadcasts along the wrong dimension and divides each "
        "entry by another row's sum.",
        "Keep the reduced dimension, e.sum(dim=dim, keepdim=True), so that it broadcasts back along dim: 01 "
        "section 3, \"Normalising with softmax\".",
        "weights = e / e.sum(dim=-1)"),
    Misconception(
        "mask-fill-finite",
        "Your mask fills the hidden scores with a finite number (-1e9, -1e4, the dtype's lowest) instead of "
        "-inf: a query whose keys are all hidden gets uniform weights instead of zeros, and scores as low as "
        "the fill let the hidden keys through.",
        "Fill with float('-inf'), and give a row with no visible key all-zero weights: 03 section 2, "
        "\"Masking with -inf\".",
        "scores = scores.masked_fill(mask, -1e9)"),
)

CATALOGUE: dict[str, Misconception] = {entry.id: entry for entry in _ENTRIES}


def lookup(misconception_id: str) -> Misconception:
    """The catalogue's entry; a KeyError names an id a suite uses but the catalogue lacks."""
    try:
        return CATALOGUE[misconception_id]
    except KeyError:
        raise KeyError(f"{misconception_id!r} is not in the misconception catalogue") from None
