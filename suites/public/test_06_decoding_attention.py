"""Public checks for 06_decoding_attention: the lesson's data and fixed random cases, checked as the
instructor's grading checks them (the same kinds of checks, weights, named mistakes and "right, given
your helper": lesson.checks_06), on cases of their own.

Modules get the reference's weights by parameter name, so your outputs must agree with the reference's.
The cached classes are fed a sequence after ``reset_cache()``: in one call, token by token and in chunks,
each call with ``use_cache=True``; every call must give what one full pass gives for its tokens. What
your cache keeps is measured by the grader: outputs after the key and value weights change, and the
memory your process holds as a sequence grows. Masks are boolean and True means hidden. A class that is
right but for your own repeat_kv or sliding_window_mask keeps its points; the helper's exercise loses
them. `grade check` compares with reference outputs recorded at release, offline.
"""
import pytest
import torch

from grader.authoring import apart, assignment, exercise
from lesson import checks_06 as checks
from lesson import journey_batch, near_one_another, strided

pytestmark = assignment("06_decoding_attention")
FLOAT, DOUBLE = torch.float32, torch.float64
MHA, GQA, SWA = "CachedMultiHeadAttention", "GroupedQueryAttention", "MultiHeadAttentionWithSWA"  # checks_06's


def small(grade, name, dtype=None):
    """d_in 12, d_out 32, 4 heads of 8 features (GQA: in 2 groups; SWA: a window of 4), context 48."""
    return checks.make(grade, name, 12, 32, 4, 2, 4, 48, dtype=dtype)


# compute_rope_params(head_dim, theta_base=10_000, context_length=4096)
@exercise("compute_rope_params")
@pytest.mark.parametrize("head_dim,theta_base,context_length", [(6, 10_000, 48), (12, 1_000_000, 20), (4, 100, 3),
                                                              (32, 10_000, 2048)],
                         ids=["head6-L48", "head12-theta1e6", "head4-theta100-L3", "head32-L2048"])
def test_rope_params_of_several_sizes(grade, head_dim, theta_base, context_length):
    checks.rope_params_same(grade, head_dim, theta_base, context_length)


@exercise("compute_rope_params")
def test_rope_params_need_an_even_head_dim(grade):
    grade.raises(("ValueError", "AssertionError"), "compute_rope_params", 9)


@exercise("compute_rope_params")
def test_rope_params_are_built_at_once(grade):
    checks.expect_vectorised(grade, "compute_rope_params", (6, 10_000, 6), (6, 10_000, 96),
                             ("6 positions", "96 positions"))


# apply_rope(x, cos, sin, offset=0)
@exercise("apply_rope", weight=2)
@pytest.mark.parametrize("shape,offset,dtype,tables", [((1, 2, 6, 8), 0, FLOAT, FLOAT), ((2, 1, 1, 6), 11, DOUBLE, DOUBLE),
                                                       ((3, 2, 4, 12), 20, FLOAT, FLOAT),
                                                       ((1, 3, 7, 4), 5, DOUBLE, FLOAT)],
                         ids=["H2-T6", "one-token-at-11-double", "at-20", "double-x-float-tables"])
def test_apply_rope_on_random_data(grade, shape, offset, dtype, tables):
    """The last case: a float64 x rotated with float32 tables stays float64."""
    cos, sin = checks.rope_tables(shape[-1], 48, tables)
    checks.rope_same(grade, grade.randn(*shape, dtype=dtype), cos, sin, offset, grad=True)


@exercise("apply_rope")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["half", "bfloat"])
def test_apply_rope_keeps_half_precision(grade, dtype):
    """float32 tables promote a half x unless the result is cast back to x's dtype (bfloat16 on a CPU too,
    float16 on CUDA only)."""
    if dtype is torch.float16:
        grade.needs_cuda()
    cos, sin = checks.rope_tables(12, 48)
    checks.rope_same(grade, grade.randn(2, 3, 5, 12).to(dtype), cos, sin, 4)


@exercise("apply_rope")
def test_apply_rope_is_vectorised_on_transposed_keys(grade):
    """Keys reach apply_rope transposed from [B, T, H, hd] (not contiguous); 3 or 24 tokens cost as many
    operations."""
    cos, sin = checks.rope_tables(12, 48)
    few = strided(grade.randn(2, 3, 2, 12), (1, 2))  # [2, 2, 3, 12]
    many = strided(grade.randn(2, 24, 2, 12), (1, 2))  # [2, 2, 24, 12]
    checks.expect_vectorised(grade, "apply_rope", (few, cos, sin, 1), (many, cos, sin, 1), ("3 tokens", "24 tokens"))
    checks.rope_same(grade, many, cos, sin, 7, grad=True)


# repeat_kv(x, group_size)
@exercise("repeat_kv", weight=2)
@pytest.mark.parametrize("shape,group_size,dtype", [((1, 2, 4, 6), 3, FLOAT), ((2, 2, 1, 4), 2, DOUBLE),
                                                    ((1, 1, 5, 2), 4, FLOAT)],
                         ids=["2-groups-x3", "one-token-double", "1-group-x4"])
def test_repeat_kv_on_random_data(grade, shape, group_size, dtype):
    checks.repeat_kv_same(grade, grade.randn(*shape, dtype=dtype), group_size, grad=True)


@exercise("repeat_kv")
def test_repeat_kv_of_transposed_keys(grade):
    checks.repeat_kv_same(grade, strided(grade.randn(2, 6, 3, 2), (1, 2)), 2, grad=True)  # [2, 3, 6, 2]


# sliding_window_mask(num_queries, num_keys, window, q_start=0, k_start=0)
@exercise("sliding_window_mask", weight=2)
@pytest.mark.parametrize("args", [(7, 7, 2), (1, 1, 3), (3, 8, 3, 5, 0), (2, 4, 3, 7, 5), (6, 6, None),
                                  (3, 9, None, 6, 0), (3, 6, None, 8, 0)],
                         ids=["T7-window2", "one-token", "queries-from-5", "keys-from-5", "causal-only",
                              "causal-queries-from-6", "causal-keys-behind"])
def test_sliding_window_mask_of_several_cases(grade, args):
    checks.mask_same(grade, *args)


# every call this suite's class cases make of the helper: a class is right given it only on these
CLASS_CALLS = [(1, 1, None, 0, 0), (1, 1, 4, 0, 0), (1, 2, None, 1, 0), (1, 2, 4, 1, 0), (1, 3, None, 2, 0),
               (1, 3, 4, 2, 0), (1, 4, None, 3, 0), (1, 4, 4, 3, 0), (1, 4, 4, 4, 1), (1, 4, 4, 5, 2),
               (1, 4, 4, 12, 9), (1, 5, None, 4, 0), (1, 6, None, 5, 0), (1, 13, None, 12, 0), (2, 3, None, 1, 0), (2, 5, None, 3, 0),
               (2, 5, 4, 3, 0), (2, 5, 4, 6, 3), (2, 8, None, 6, 0), (3, 3, None, 0, 0), (3, 3, 4, 0, 0), (3, 4, None, 1, 0),
               (4, 4, None, 0, 0), (4, 4, 4, 0, 0), (5, 5, None, 0, 0), (5, 5, 2, 0, 0), (5, 5, 4, 0, 0),
               (6, 6, None, 0, 0), (6, 6, 4, 0, 0), (9, 9, None, 0, 0), (9, 9, 4, 0, 0), (12, 12, None, 0, 0),
               (12, 12, 1, 0, 0), (12, 12, 1, 12, 12), (12, 12, 1, 24, 24), (12, 12, 1, 36, 36), (12, 12, 1, 48, 48),
               (12, 12, 4, 0, 0), (12, 12, 5, 0, 0), (12, 16, 5, 12, 8), (12, 16, 5, 24, 20), (12, 16, 5, 36, 32),
               (12, 16, 5, 48, 44), (12, 24, None, 12, 0), (12, 36, None, 24, 0), (12, 48, None, 36, 0),
               (12, 60, None, 48, 0)]


@exercise("sliding_window_mask", weight=2)
def test_sliding_window_mask_as_the_classes_call_it(grade):
    checks.masks_as_called(grade, CLASS_CALLS)


@exercise("sliding_window_mask")
def test_sliding_window_mask_is_built_at_once(grade):
    checks.expect_vectorised(grade, "sliding_window_mask", (3, 3, 2), (24, 30, 3, 6, 0), ("3 x 3", "24 x 30"))


# the cached classes
@exercise(MHA)
def test_mha_on_the_lesson_batch(grade):
    pair = checks.make(grade, MHA, 3, 6, 3, 3, 4, 12)  # 3 heads of 2 features, context 12
    checks.uncached_same(grade, pair, journey_batch(), grad=True)


THRICE = [pytest.param(name, marks=exercise(name, weight=3), id=name) for name in (MHA, GQA, SWA)]


@pytest.mark.parametrize("name", THRICE)
@pytest.mark.parametrize("chunks", [(1,) * 6, (3, 2, 1), (6,)], ids=["one-by-one", "in-chunks", "all-at-once"])
def test_cached_calls_give_the_full_pass(grade, name, chunks):
    checks.decoded(grade, small(grade, name), grade.randn(2, 6, 12), chunks)


@apart  # its readings of the worker's memory on a worker of its own: a second process may grade it beside the rest
@pytest.mark.parametrize("name,window", [pytest.param(GQA, None, marks=exercise(GQA, weight=2), id=GQA),
                                         pytest.param(SWA, 5, marks=exercise(SWA, weight=2), id=SWA),
                                         pytest.param(SWA, 1, marks=exercise(SWA), id="SWA-a-window-of-one")])
def test_the_memory_your_cache_holds(grade, name, window):
    """A batch of 48, 168 tokens of 128 features in chunks of 12, d_out 128, float64: GQA with 8 heads in 2 groups grows by
    a quarter of what every head's keys and values would take; SWA not at all, with a window of 5 and with
    a window of 1 (each chunk longer than the window)."""
    if name == GQA:
        pair = grade.module(GQA, 128, 128, 0.0, 8, 2, dtype=DOUBLE, training=False)
    else:
        pair = grade.module(SWA, 128, 128, 0.0, 2, sliding_window_size=window, dtype=DOUBLE, training=False)
    if name == GQA:  # 8 heads in groups of 4: a crash of each group repeated twice (num_kv_groups) is said so
        checks.groups_of_another_size(lambda: checks.expect_held_memory(grade, pair, 48, 12, 14, 128), 8, 2)
    else:
        checks.expect_held_memory(grade, pair, 48, 12, 14, 128)


@pytest.mark.parametrize("name", THRICE)
def test_the_cache_keeps_keys_as_computed(grade, name):
    """5 tokens cached, then new key and value weights: the next calls (1 token, then 2) attend over the
    cached keys and values as they were computed."""
    checks.expect_cache_used(grade, small(grade, name), grade.randn(2, 8, 12), 5, (1, 2))


@pytest.mark.parametrize("name", THRICE)
def test_reset_cache_after_an_uncached_call(grade, name):
    pair = small(grade, name)
    sequences = grade.randn(2, 4, 12), grade.randn(2, 6, 12), grade.randn(1, 13, 12)
    checks.expect_reset_starts_anew(grade, pair, *sequences, (12, 1))


@pytest.mark.parametrize("name", THRICE)
def test_gradients_in_float64_training_mode(grade, name):
    sizes = {MHA: (12, 32, 48, 0.0, 4), GQA: (12, 32, 0.0, 4, 2), SWA: (12, 32, 0.0, 4)}[name]
    extra = {"sliding_window_size": 4} if name == SWA else {}
    pair = grade.module(name, *sizes, dtype=DOUBLE, **extra)
    checks.uncached_same(grade, pair, strided(grade.randn(2, 12, 9, dtype=DOUBLE), (1, 2)), grad=True)  # [2, 9, 12]


@pytest.mark.parametrize("name", THRICE)
def test_dropout_drops_attention_weights(grade, name):
    """5 one-hot tokens, heads of 10 features, dropout 0.5."""
    sizes = {MHA: (5, 20, 8, 0.5, 2), GQA: (5, 40, 0.5, 4, 2), SWA: (5, 20, 0.5, 2)}[name]
    extra = {"sliding_window_size": 2} if name == SWA else {}
    checks.expect_dropout(grade, grade.module(name, *sizes, dtype=DOUBLE, **extra), 5)


@pytest.mark.parametrize("name", THRICE)
def test_a_double_sequence_stays_double_in_the_cache(grade, name):
    pair = small(grade, name, dtype=DOUBLE)
    checks.expect_float64_cache(grade, pair, near_one_another(grade, 2, 5, 12, norm=60.0, spread=0.3, dtype=DOUBLE), 3, (1, 1))


@pytest.mark.parametrize("name", [pytest.param(name, marks=exercise(name), id=name) for name in (MHA, GQA, SWA)])
def test_scores_in_the_thousands(grade, name):
    pair = small(grade, name, dtype=DOUBLE)
    checks.expect_large_scores(grade, pair, near_one_another(grade, 2, 6, 12, norm=400.0, spread=0.05, dtype=DOUBLE))


@exercise(GQA)
def test_gqa_built_in_double(grade):
    pair = grade.module(GQA, 12, 32, 0.0, 4, 2, DOUBLE, training=False)  # dtype, the constructor's own argument
    checks.expect_layers_in_dtype(grade, pair, grade.randn(2, 6, 12, dtype=DOUBLE))


@exercise(GQA)
def test_gqa_with_groups_of_three_heads(grade):
    """6 heads in 2 groups: each group serves 3 query heads (not as many as there are groups)."""
    pair = checks.make(grade, GQA, 12, 36, 6, 2, None, 48)
    checks.decoded_in_groups_of_another_size(grade, pair, grade.randn(2, 4, 12), (1, 2, 1), 6, 2)


@exercise(SWA)
def test_swa_with_no_window_and_the_cache(grade):
    """sliding_window_size=None: every earlier key, the cache kept whole."""
    pair = checks.make(grade, SWA, 12, 32, 4, 2, None, 48)
    checks.decoded_without_a_window(grade, pair, grade.randn(2, 5, 12), (1, 3, 1))


@pytest.mark.parametrize("name,sizes", [
    pytest.param(MHA, (12, 30, 48, 0.0, 4), marks=exercise(MHA), id="MHA-30-by-4"),
    pytest.param(GQA, (12, 32, 0.0, 4, 3), marks=exercise(GQA), id="GQA-4-by-3-groups"),
    pytest.param(SWA, (12, 30, 0.0, 4), marks=exercise(SWA), id="SWA-30-by-4")])
def test_sizes_that_do_not_divide(grade, name, sizes):
    grade.raises(("ValueError", "AssertionError"), name, *sizes, new=True)
