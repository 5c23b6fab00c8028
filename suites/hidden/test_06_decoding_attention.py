"""Hidden grading suite for 06_decoding_attention. Never shipped to students.

Every check compares the student's code with the reference on the same inputs. The cached classes are
fed a sequence in one call, token by token and in chunks (``use_cache=True`` after ``reset_cache()``);
each call's output must be the reference's, and the cache the student keeps is measured from the
tensors themselves. What is checked, the mistakes named and the helpers blamed are lesson.checks_06's,
which the public suite shares: this suite gives its cases.
"""
import pytest
import torch

from grader.authoring import apart, assignment, exercise
from lesson import journey_batch, near_one_another
from lesson.checks_06 import (masks_as_called, expect_cache_used, expect_dropout, expect_float64_cache,
                              expect_held_memory, expect_large_scores, expect_layers_in_dtype,
                              expect_reset_starts_anew, expect_vectorised, decoded, decoded_in_groups_of_another_size,
                              decoded_without_a_window, make, mask_same,
                              repeat_kv_same, rope_angles, rope_params_same, rope_same, uncached_same)

pytestmark = assignment("06_decoding_attention")
F32, F64 = torch.float32, torch.float64
MHA, GQA, SWA = "CachedMultiHeadAttention", "GroupedQueryAttention", "MultiHeadAttentionWithSWA"


def instance(grade, name, dtype=None):
    """d_in 16, d_out 24, 4 heads (GQA: in 2 groups; SWA: a window of 3), context 64, evaluation mode."""
    return make(grade, name, 16, 24, 4, 2, 3, 64, dtype=dtype)


# --- rotary positions --------------------------------------------------------------------------------
@exercise("compute_rope_params")
@pytest.mark.parametrize("head_dim,theta_base,context_length", [(8, 10_000, 64), (16, 500_000, 32), (2, 10_000, 5),
                                                              (16, 10_000, 4096)],
                         ids=["hd8", "hd16-theta5e5", "hd2-L5", "hd16-L4096"])
def test_rope_params(grade, head_dim, theta_base, context_length):
    rope_params_same(grade, head_dim, theta_base, context_length)


@exercise("compute_rope_params")
def test_rope_params_odd_head_dim(grade):
    grade.raises(("ValueError", "AssertionError"), "compute_rope_params", 7)


@exercise("apply_rope", weight=2)
@pytest.mark.parametrize("shape,offset,dtype,tables", [((2, 3, 5, 8), 0, F32, F32), ((1, 2, 1, 4), 9, F64, F64),
                                                       ((2, 4, 6, 16), 17, F32, F32), ((2, 2, 5, 8), 3, F64, F32)],
                         ids=["B2-H3-T5", "T1-offset9-f64", "offset17", "f64-x-f32-tables"])
def test_apply_rope(grade, shape, offset, dtype, tables):
    """The last case: float64 x with the float32 tables compute_rope_params makes keeps x's dtype."""
    angles = rope_angles(shape[-1], 10_000, 64)
    cos, sin = angles.cos().to(tables), angles.sin().to(tables)
    rope_same(grade, grade.randn(*shape, dtype=dtype), cos, sin, offset, grad=True)


@exercise("apply_rope")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
def test_apply_rope_half_precision(grade, dtype):
    """bfloat16 runs on a CPU too: float32 tables promote a half x unless the result is cast back."""
    if dtype is torch.float16:
        grade.needs_cuda()
    angles = rope_angles(16, 10_000, 64)  # float32 tables, as compute_rope_params makes them, for a half x
    rope_same(grade, grade.randn(2, 4, 6, 16).to(dtype), angles.cos().float(), angles.sin().float(), 3)


# --- repeat_kv ---------------------------------------------------------------------------------------
@exercise("repeat_kv", weight=2)
@pytest.mark.parametrize("shape,group_size,dtype", [((2, 2, 5, 4), 2, F32), ((1, 3, 1, 2), 4, F64),
                                                    ((2, 1, 7, 8), 3, F32)], ids=["G2x2", "T1-G3x4-f64", "G1x3"])
def test_repeat_kv(grade, shape, group_size, dtype):
    repeat_kv_same(grade, grade.randn(*shape, dtype=dtype), group_size, grad=True)


@exercise("repeat_kv")
def test_repeat_kv_non_contiguous(grade):
    """Keys and values come transposed from [B, T, G, hd], as the classes make them: not contiguous."""
    repeat_kv_same(grade, grade.randn(2, 5, 2, 4).transpose(1, 2), 3, grad=True)


@exercise("repeat_kv")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
def test_repeat_kv_half_precision(grade, dtype):
    grade.needs_cuda()
    grade.same_low_precision("repeat_kv", grade.randn(2, 2, 5, 8), 3, dtype=dtype)


# --- sliding_window_mask -----------------------------------------------------------------------------
@exercise("sliding_window_mask", weight=2)
@pytest.mark.parametrize("args", [(6, 6, 3), (1, 1, 1), (4, 9, 2, 5, 0), (3, 5, 4, 8, 6), (5, 5, None),
                                  (2, 7, None, 5, 0), (3, 5, None, 6, 0)],
                         ids=["T6-W3", "T1-W1", "chunk-at-5", "cached-keys-from-6", "no-window", "no-window-cached",
                              "no-window-keys-far-back"])
def test_sliding_window_mask(grade, args):
    mask_same(grade, *args)


# every call this suite's class cases make of the helper: a class is right given it only on these
CLASS_CALLS = [(1, 1, None, 0, 0), (1, 1, 3, 0, 0), (1, 2, None, 1, 0), (1, 2, 3, 1, 0), (1, 3, None, 2, 0),
               (1, 3, 3, 2, 0), (1, 3, 3, 3, 1), (1, 3, 3, 6, 4), (1, 3, 3, 11, 9), (1, 4, None, 3, 0),
               (1, 7, None, 6, 0), (1, 12, None, 11, 0), (2, 2, None, 0, 0), (2, 2, 3, 0, 0), (2, 3, None, 1, 0),
               (2, 3, 3, 1, 0), (2, 4, 3, 3, 1), (2, 4, 3, 4, 2), (2, 5, None, 3, 0), (2, 6, None, 4, 0),
               (4, 4, None, 0, 0), (4, 4, 3, 0, 0), (5, 5, None, 0, 0), (5, 5, 3, 0, 0), (6, 6, None, 0, 0),
               (6, 6, 3, 0, 0), (7, 7, None, 0, 0), (7, 7, 3, 0, 0), (11, 11, None, 0, 0), (11, 11, 3, 0, 0),
               (16, 16, None, 0, 0), (16, 16, 1, 0, 0), (16, 16, 1, 16, 16), (16, 16, 1, 32, 32), (16, 16, 1, 48, 48),
               (16, 16, 4, 0, 0), (16, 19, 4, 16, 13), (16, 19, 4, 32, 29), (16, 19, 4, 48, 45),
               (16, 32, None, 16, 0), (16, 48, None, 32, 0), (16, 64, None, 48, 0),
               # test_swa_a_wider_window_token_by_token: the full pass, then one token at a time (window 5)
               (9, 9, 5, 0, 0), (1, 1, 5, 0, 0), (1, 2, 5, 1, 0), (1, 3, 5, 2, 0), (1, 4, 5, 3, 0), (1, 5, 5, 4, 0),
               (1, 5, 5, 5, 1), (1, 5, 5, 6, 2), (1, 5, 5, 7, 3), (1, 5, 5, 8, 4)]


@exercise("sliding_window_mask", weight=2)
def test_sliding_window_mask_as_the_classes_call_it(grade):
    masks_as_called(grade, CLASS_CALLS)


@exercise("sliding_window_mask")
def test_sliding_window_mask_vectorised(grade):
    expect_vectorised(grade, "sliding_window_mask", (4, 4, 2), (32, 40, 2, 8, 0), ("4 x 4 positions", "32 x 40"))


@exercise("compute_rope_params")
def test_rope_params_vectorised(grade):
    expect_vectorised(grade, "compute_rope_params", (8, 10_000, 8), (8, 10_000, 128),
                      ("context_length 8", "context_length 128"))


@exercise("apply_rope")
def test_apply_rope_vectorised_and_non_contiguous(grade):
    """Keys come to apply_rope transposed from [B, T, H, hd], as the classes make them: not contiguous."""
    angles = rope_angles(8, 10_000, 64)
    cos, sin = angles.cos().float(), angles.sin().float()
    x_short, x_long = grade.randn(2, 4, 3, 8).transpose(1, 2), grade.randn(2, 32, 3, 8).transpose(1, 2)
    expect_vectorised(grade, "apply_rope", (x_short, cos, sin, 2), (x_long, cos, sin, 2), ("4 tokens", "32 tokens"))
    rope_same(grade, x_long, cos, sin, 5, grad=True)


# --- the cached classes --------------------------------------------------------------------------------
@exercise(MHA)
def test_mha_lesson_batch_in_one_call(grade):
    pair, x = make(grade, MHA, 3, 4, 2, 2, 3, 64), journey_batch()
    uncached_same(grade, pair, x, grad=True)


CLASSES = [pytest.param(name, marks=exercise(name, weight=3), id=name)
           for name in (MHA, GQA, SWA)]


@pytest.mark.parametrize("name", CLASSES)
@pytest.mark.parametrize("chunks", [(1,) * 4, (1, 2, 2), (5,)], ids=["token-by-token", "chunks", "one-call"])
def test_cached_calls_give_the_full_pass(grade, name, chunks):
    """Each cached call gives what one full pass gives for its tokens (what the cache holds is measured
    by the memory it takes: test_the_cache_holds_what_it_should_as_the_kernel_counts_it)."""
    pair = instance(grade, name)
    decoded(grade, pair, grade.randn(2, sum(chunks), 16), chunks)


@apart  # its readings of the worker's memory on a worker of its own: a second process may grade it beside the rest
@pytest.mark.parametrize("name,window", [pytest.param(GQA, None, marks=exercise(GQA, weight=2), id=GQA),
                                         pytest.param(SWA, 4, marks=exercise(SWA, weight=2), id=SWA),
                                         pytest.param(SWA, 1, marks=exercise(SWA), id="SWA-window-1")])
def test_the_cache_holds_what_it_should_as_the_kernel_counts_it(grade, name, window):
    """A batch of 32, 256 tokens of 128 features in chunks of 16, d_out 128, float64 (lesson.checks_06.expect_held_memory):
    GQA with one group for 4 heads grows by a quarter of what every head's keys and values would take
    (measured: exactly 0.25 of it, and 0.0 for SWA, at batches of 32 and 64); SWA, whose cache stays
    within its window, not at all: a window of 4, and the edge, a window of 1 (where a slice
    [-(window - 1):] keeps everything), both with chunks of more tokens than the window."""
    pair = (grade.module(GQA, 128, 128, 0.0, 4, 1, dtype=F64, training=False) if name == GQA else
            grade.module(SWA, 128, 128, 0.0, 2, sliding_window_size=window, dtype=F64, training=False))
    # every head's keys of 256 tokens: 12 MiB past the right cache; their inputs (128 features, as wide as the
    # keys they make): 8 MiB (red team round 10: SWA kept every token's input in 0.44 MiB at 16 features)
    expect_held_memory(grade, pair, 32, 16, 16, 128)


@pytest.mark.parametrize("name", CLASSES)
def test_cached_keys_are_not_computed_again(grade, name):
    """Keys and values are computed once, when their token arrives: after the key and value weights
    change, a cached call still attends over the earlier tokens' keys and values as they were
    computed (the reference's cache keeps them). Read from the outputs alone."""
    pair = instance(grade, name)
    expect_cache_used(grade, pair, grade.randn(2, 7, 16), 4, (2, 1))


@pytest.mark.parametrize("name", CLASSES)
def test_an_uncached_call_then_reset_cache_starts_a_new_sequence(grade, name):
    """use_cache=False after a cached call attends over its own tokens only (the cache may be kept or
    cleared); reset_cache() then empties cache_k and cache_v, and the next cached sequence (another batch
    size, long enough that a position kept from before still hides some keys) starts at position 0."""
    pair = instance(grade, name)
    first, uncached, then = grade.randn(2, 5, 16), grade.randn(2, 4, 16), grade.randn(1, 12, 16)
    expect_reset_starts_anew(grade, pair, first, uncached, then, (11, 1))


@pytest.mark.parametrize("name", CLASSES)
def test_float64_training_mode_with_gradients(grade, name):
    """One uncached pass in float64 on a non-contiguous batch, in training mode (dropout 0: gradients are
    graded on single calls, dropout by its effect below): outputs, input and weight gradients."""
    args = {MHA: (16, 24, 64, 0.0, 4), GQA: (16, 24, 0.0, 4, 2), SWA: (16, 24, 0.0, 4)}[name]
    pair = grade.module(name, *args, dtype=F64, **({"sliding_window_size": 3} if name == SWA else {}))
    x = grade.randn(2, 16, 7, dtype=F64).transpose(1, 2)
    uncached_same(grade, pair, x, grad=True)


@pytest.mark.parametrize("name", CLASSES)
def test_dropout_on_the_attention_weights(grade, name):
    """Dropout 0.5 by its effect (lesson/dropout.py): T = 6 one-hot tokens, heads of 2T = 12 features."""
    args = {MHA: (6, 24, 8, 0.5, 2), GQA: (6, 48, 0.5, 4, 2), SWA: (6, 24, 0.5, 2)}[name]
    pair = grade.module(name, *args, dtype=F64, **({"sliding_window_size": 3} if name == SWA else {}))
    expect_dropout(grade, pair, 6)


@pytest.mark.parametrize("name", CLASSES)
def test_a_float64_sequence_is_cached_in_float64(grade, name):
    """After a first float64 chunk cache_k and cache_v hold float64 tensors, and the tokens after it get
    float64 outputs of float64 precision."""
    pair = instance(grade, name, dtype=F64)
    expect_float64_cache(grade, pair, near_one_another(grade, 2, 4, 16, norm=60.0, spread=0.3, dtype=F64), 2, (1, 1))


@pytest.mark.parametrize("name", [pytest.param(name, marks=exercise(name), id=name) for name in (MHA, GQA, SWA)])
def test_large_scores(grade, name):
    """Scores in the thousands (float64 throughout, so that the rounding of so large scores stays far
    below the tolerance)."""
    pair = instance(grade, name, dtype=F64)
    expect_large_scores(grade, pair, near_one_another(grade, 2, 5, 16, norm=400.0, spread=0.05,
                                                                dtype=F64))


@exercise(GQA)
def test_gqa_dtype_builds_its_layers_in_that_dtype(grade):
    """GroupedQueryAttention(..., dtype=torch.float64) builds its layers in float64, as the book's does."""
    pair = grade.module(GQA, 16, 24, 0.0, 4, 2, F64, training=False)  # dtype given to the constructor
    expect_layers_in_dtype(grade, pair, grade.randn(2, 5, 16, dtype=F64))


@exercise(GQA)
def test_gqa_groups_of_another_size_than_their_number(grade):
    """8 heads in 2 groups: each group serves 4 query heads (the group size is not the number of groups)."""
    pair = make(grade, GQA, 16, 32, 8, 2, None, 64)
    decoded_in_groups_of_another_size(grade, pair, grade.randn(2, 4, 16), (2, 1, 1), 8, 2)


@exercise(SWA)
def test_swa_a_wider_window_token_by_token(grade):
    """A window of 5, token by token over 9 tokens (the other cases have a window of 3): a cache trimmed with
    a slice whose start goes negative while the cache is shorter than the window drops keys still inside
    it, which a window of 3 cannot show (a porter's slip, caught only by the public suite's window of 4)."""
    pair = make(grade, SWA, 16, 24, 4, 2, 5, 64)
    decoded(grade, pair, grade.randn(2, 9, 16), (1,) * 9)


@exercise(SWA)
def test_swa_without_a_window_cached(grade):
    """sliding_window_size=None: every earlier key, the cache kept whole, token by token and in chunks."""
    pair = make(grade, SWA, 16, 24, 4, 2, None, 64)
    decoded_without_a_window(grade, pair, grade.randn(2, 5, 16), (2, 1, 2))


@pytest.mark.parametrize("name,args", [
    pytest.param(MHA, (16, 18, 64, 0.0, 4), marks=exercise(MHA), id="MHA-18-by-4"),
    pytest.param(GQA, (16, 24, 0.0, 4, 3), marks=exercise(GQA), id="GQA-4-heads-3-groups"),
    pytest.param(SWA, (16, 18, 0.0, 4), marks=exercise(SWA), id="SWA-18-by-4")])
def test_indivisible_sizes_raise(grade, name, args):
    grade.raises(("ValueError", "AssertionError"), name, *args, new=True)
