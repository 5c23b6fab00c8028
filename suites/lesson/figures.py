"""The lesson's pictures: for each pictured exercise, its calls on the lesson's own data ("Your journey
starts with one step") and how its output is drawn when it is wrong (grader.authoring.Picture; course.toml's
``[course] figures`` names this file). The grader calls the student's function on them, in its worker,
after grading, and draws theirs beside the right output (``grade check --figures``, a notebook's
``check()``, the class report's pictures)."""
from __future__ import annotations

from grader.authoring import Picture, model
from lesson import JOURNEY_WORDS, journey, journey_batch, journey_scores


def _words():
    return list(JOURNEY_WORDS)


@model
def _weights_of():  # the lesson's projections (02 section 1: W_query, W_key, W_value; suites/public/test_02)
    import torch

    generator = torch.Generator().manual_seed(123)
    w_query, w_key, w_value = (torch.rand(3, 2, generator=generator) for _ in range(3))
    x = journey()
    return x @ w_query, x @ w_key, x @ w_value


def _lesson_mask():
    """02 section 2's mask (True = hidden): the keys "one" and "step" hidden from every query, and every key
    from the query "step" (a row with nothing visible, whose weights are all zero)."""
    import torch

    mask = torch.zeros(6, 6, dtype=torch.bool)  # [6, 6]
    mask[:, 4:] = True
    mask[5, :] = True
    return mask


@model
def _causal():
    import torch

    return torch.ones(6, 6, dtype=torch.bool).triu(1)  # [6, 6], True above the diagonal: the future


@model
def _softmaxed(scores):
    return scores.softmax(-1)  # the input of renormalize_causal_weights: weights whose rows sum to 1


@model
def _products():
    """The journey's tokens against one another, inputs @ inputs.T ([6, 6]): the pictures' scores."""
    inputs = journey()
    return inputs @ inputs.T


@model
def _hidden_products(hidden):
    """:func:`_products` with the positions ``hidden`` marks set to -inf."""
    return _products().masked_fill(hidden, float("-inf"))


# A class's picture: the output shows the attention weights. Each token is its 3 features followed by a
# one-hot of its position ([1, 6, 9]); queries and keys read the features through the lesson's projections
# (02 section 1, doubled so that the weights are not all alike), each head's values are the one-hot part,
# and out_proj is the identity, so row i of the output is query i's weights over the six keys, head by head.
_SHOWN_TOKENS, _SHARPER = 6, 2.0


def _shown_inputs():
    import torch

    return (torch.cat((journey(), torch.eye(_SHOWN_TOKENS)), dim=-1)[None],)  # [1, 6, 3 + 6]


def _shown_weights(num_heads: int, out_proj: bool):
    def weights():
        import torch

        generator = torch.Generator().manual_seed(123)
        w_query, w_key = (torch.rand(3, 2, generator=generator) for _ in range(2))  # [3, 2] each
        d_out = _SHOWN_TOKENS * num_heads
        query, key, value = (torch.zeros(d_out, 3 + _SHOWN_TOKENS) for _ in range(3))  # nn.Linear's [out, in]
        for h in range(num_heads):
            sign = 1.0 if h % 2 == 0 else -1.0  # head 1 prefers the keys head 0 likes least
            start = h * _SHOWN_TOKENS
            query[start:start + 2, :3] = sign * _SHARPER * w_query.T
            key[start:start + 2, :3] = _SHARPER * w_key.T
            value[start:start + _SHOWN_TOKENS, 3:] = torch.eye(_SHOWN_TOKENS)
        found = {"W_query.weight": query, "W_key.weight": key, "W_value.weight": value}
        if out_proj:
            found.update({"out_proj.weight": torch.eye(d_out), "out_proj.bias": torch.zeros(d_out)})
        return found

    return weights


_FEATURES = lambda n: (lambda: [f"dim {i}" for i in range(n)])  # noqa: E731
_SCORES = dict(rows=_words, cols=_words, kind="scores")
_WEIGHTS = dict(rows=_words, cols=_words, kind="weights")
_MASKED = "with the lesson's mask (02 section 2: \"one\" and \"step\" hidden, and all from \"step\")"

FIGURES: dict[tuple[str, str], Picture] = {
    ("01_attention_basics", "attention_scores_for_query"): Picture(
        'attention_scores_for_query(inputs, inputs[1]): the query "journey" against each token',
        lambda: (journey(), journey()[1]), lambda: ["journey"], _words,
        kind="scores", view=lambda out: out[None]),
    ("01_attention_basics", "attention_scores_loop"): Picture(
        "attention_scores_loop(inputs): each query (row) against each key (column)",
        lambda: (journey(),), **_SCORES),
    ("01_attention_basics", "attention_scores"): Picture(
        "attention_scores(inputs): each query (row) against each key (column)",
        lambda: (journey(),), **_SCORES),
    ("01_attention_basics", "softmax_naive"): Picture(
        "softmax_naive(inputs @ inputs.T): each row's weights should sum to 1",
        lambda: (_products(),), **_WEIGHTS),
    ("01_attention_basics", "softmax"): Picture(
        "softmax(inputs @ inputs.T): each row's weights should sum to 1",
        lambda: (_products(),), **_WEIGHTS),
    ("01_attention_basics", "simple_self_attention"): Picture(
        "simple_self_attention(inputs): each token's context vector",
        lambda: (journey(),), _words, _FEATURES(3), kind="values"),
    ("02_self_attention", "attention_weights"): Picture(
        "attention_weights(queries, keys): each query's weights over the keys",
        lambda: _weights_of()[:2], **_WEIGHTS,
        also=(Picture(f"attention_weights(queries, keys, mask) {_MASKED}: each query's weights over the keys",
                      lambda: _weights_of()[:2], **_WEIGHTS,
                      kwargs=lambda: {"mask": _lesson_mask()}),)),
    ("02_self_attention", "scaled_dot_product_attention"): Picture(
        "scaled_dot_product_attention(queries, keys, values): each token's context",
        _weights_of, _words, _FEATURES(2), kind="values",
        also=(Picture(f"scaled_dot_product_attention(queries, keys, values, mask) {_MASKED}: each token's context",
                      _weights_of, _words, _FEATURES(2), kind="values",
                      kwargs=lambda: {"mask": _lesson_mask()}),)),
    ("03_causal_attention", "causal_mask"): Picture(
        "causal_mask(6): True (dark) where a query (row) may not see a key (column)",
        lambda: (6,), _words, _words, kind="mask"),
    ("03_causal_attention", "apply_causal_mask"): Picture(
        "apply_causal_mask(the sentence's scaled scores): the future set to -inf",
        lambda: (journey_scores(),), **_SCORES),
    ("03_causal_attention", "renormalize_causal_weights"): Picture(
        "renormalize_causal_weights(softmax of the sentence's scaled scores)",
        lambda: (_softmaxed(journey_scores()),), **_WEIGHTS),
    ("03_causal_attention", "padding_mask"): Picture(
        "padding_mask(lengths=[6, 4], max_len=6): True (dark) at padded positions",
        lambda: (_lengths(), 6), lambda: ["length 6", "length 4"], _words, kind="mask"),
    ("03_causal_attention", "causal_padding_mask"): Picture(
        "causal_padding_mask(lengths=[6, 4], 6), the sequence of length 4: True (dark) where hidden",
        lambda: (_lengths(), 6), _words, _words, kind="mask", view=lambda out: out[1]),
    ("03_causal_attention", "CausalAttention"): Picture(
        "CausalAttention(9, 6, context_length=8, dropout=0.5) in eval mode on the sentence, each token's 3 "
        "features followed by a one-hot of its position; its values are that one-hot, so each output row is "
        "one query's attention weights",
        _shown_inputs, **_WEIGHTS, view=lambda out: out[0],
        module=((3 + _SHOWN_TOKENS, _SHOWN_TOKENS), {"context_length": 8, "dropout": 0.5}),
        weights=_shown_weights(1, out_proj=False)),
    ("04_multi_head_attention", "split_heads"): Picture(
        "split_heads(inputs[None], num_heads=3): the whole sentence as a batch of one; head (row) by token "
        "(column), one feature each",
        lambda: (journey()[None], 3), lambda: ["head 0", "head 1", "head 2"], _words,
        kind="values", view=lambda out: out[0, :, :, 0]),
    ("04_multi_head_attention", "merge_heads"): Picture(
        "merge_heads(batch[None]): the lesson's batch (two copies of the sentence) merged as two heads, token "
        "(row) by feature",
        lambda: (journey_batch()[None],), _words,
        lambda: [f"h{h}·{i}" for h in range(2) for i in range(3)], kind="values",
        view=lambda out: out[0]),
    ("04_multi_head_attention", "MultiHeadAttention"): Picture(
        "MultiHeadAttention(9, 12, context_length=8, dropout=0.5, num_heads=2) in eval mode on the sentence, "
        "each token's 3 features followed by a one-hot of its position; each head's values are that one-hot "
        "and out_proj is the identity, so each output row is one query's weights in head 0, then head 1",
        _shown_inputs, _words, lambda: [f"h{h}·{w}" for h in range(2) for w in _words()],
        view=lambda out: out[0],
        module=((3 + _SHOWN_TOKENS, 2 * _SHOWN_TOKENS), {"context_length": 8, "dropout": 0.5, "num_heads": 2}),
        weights=_shown_weights(2, out_proj=True)),
    ("05_efficient_attention", "online_softmax"): Picture(
        "online_softmax(inputs @ inputs.T, block_size=2): each row's weights should sum to 1",
        lambda: (_products(), 2), **_WEIGHTS,
        also=(Picture("online_softmax(masked, block_size=2), the scores with the future set to -inf: each row's "
                      "weights over the keys it sees",
                      lambda: (_hidden_products(_causal()), 2),
                      **_WEIGHTS),
              Picture("online_softmax(inputs @ inputs.T with the keys \"one\" and \"step\" set to -inf, and every key "
                      "of the query \"step\", block_size=2): a row with nothing visible gets zeros",
                      lambda: (_hidden_products(_lesson_mask()), 2),
                      **_WEIGHTS))),
    ("05_efficient_attention", "flash_attention"): Picture(
        "flash_attention(inputs, inputs, inputs, block_size=2): each token's context",
        lambda: (journey(), journey(), journey()), _words, _FEATURES(3),
        kind="values", kwargs=lambda: {"block_size": 2},
        also=(Picture("flash_attention(inputs, inputs, inputs, block_size=2, causal=True): each token's context",
                      lambda: (journey(), journey(), journey()), _words, _FEATURES(3),
                      kind="values", kwargs=lambda: {"block_size": 2, "causal": True}),)),
}


def _lengths():
    import torch

    return torch.tensor([6, 4])
