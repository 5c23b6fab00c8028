"""Round 4 (b): feedback for a blind learner's wrong attempts at 04-06 (tests/corpus/learner/attempts/
learner_4b_*), each explained in the exercise's terms on the hidden and the public suite alike."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
_spec = importlib.util.spec_from_file_location("corpus", ROOT / "tests" / "corpus" / "corpus.py")
corpus = sys.modules.setdefault("corpus", importlib.util.module_from_spec(_spec))
if not hasattr(corpus, "grade_all"):
    _spec.loader.exec_module(corpus)

# attempt -> what its feedback must say (the first failing check's explanation, and the fix)
ROUND_4B = {
    # a blind judge's verdicts on the feedback after round 4's fixes: two bare shapes and one misleading
    "attempts/learner_4b_24_online_softmax_all_hidden_nan": ("running sum stays 0, and 0/0 gives NaN",),
    "attempts/learner_4b_49_repeat_kv_wrong_dim": ("along dimension 2, the tokens", "dim=1"),
    "attempts/learner_4b_76_split_heads_no_transpose": ("reshaped, but not transposed", ".transpose(1, 2)"),
    "attempts/learner_4b_31_flash_attention_skips_diagonal_tile": ("skips the key tile on the diagonal",
                                                                   "ks >= qe"),
    "attempts/learner_4b_32_flash_attention_mask_hides_diagonal": ("mask-hides-diagonal",),
    "attempts/learner_4b_36_flash_attention_normalize_every_tile": ("inside the key loop", "divide once"),
    "attempts/learner_4b_22_online_softmax_rescale_inverted": ("exp(m_new - m_old)", "exp(m_old - m_new)"),
    "attempts/learner_4b_27_online_softmax_global_block_max": ("one maximum shared by every row",
                                                               "block.amax(dim=-1)"),
    "attempts/learner_4b_34_flash_attention_unclamped_query_end": ("qe = min(qs + block_size, Tq)",),
    "attempts/learner_4b_35_flash_attention_acc_width_d": ("values' width dv",),
    "attempts/learner_4b_37_flash_attention_keys_dot_T": ("transpose(-2, -1)", ".T"),
    "attempts/learner_4b_69_MultiHeadAttention_no_dropout": ("no attention weight is dropped",),
    "attempts/learner_4b_58_CachedMultiHeadAttention_cache_overwritten": ("holds only the previous call's keys",
                                                                        "torch.cat([self.cache_k, k], dim=2)"),
    "attempts/learner_4b_42_compute_rope_params_theta_hardcoded": ("those of theta_base = 10000",),
    "attempts/learner_4b_47_apply_rope_offset_plus_one": ("offset + 1", "cos[offset:offset + T]"),
    "attempts/learner_4b_52_sliding_window_mask_ignores_k_start": ("keys' positions start at 0, not at k_start",),
    "attempts/learner_4b_08_MultiHeadAttentionWrapper_stack": ("features interleaved", "torch.cat(outs, dim=-1)"),
    "attempts/learner_4b_20_FusedQKVAttention_skip_split_v": ("v still split into heads", "merge_heads(v)"),
    # false passes before: cases the contract asks for (docs/course-spec.md)
    "attempts/learner_4b_06_split_qkv_check_only_heads": ("should raise ValueError", "3 * num_heads"),
    "attempts/learner_4b_64_GroupedQueryAttention_repeat_by_num_groups": ("num_heads // num_kv_groups",),
    "attempts/learner_4b_68_MultiHeadAttentionWithSWA_none_window_crash": ("sliding_window_size=None means no window",),
}


@pytest.mark.parametrize("suite", ["hidden", "public"])
def test_round_4b_each_attempt_is_explained_in_the_exercise_s_terms(course, grader, tmp_path, suite):
    entries = [e for e in corpus.learner("attempts") if e.name in ROUND_4B]
    assert len(entries) == len(ROUND_4B)
    results = corpus.grade_all(entries, course, grader, tmp_path, seed=2024, suite=suite, quick=True)
    for name, phrases in ROUND_4B.items():
        exercise, _ = results[name]
        assert exercise.score < exercise.max_score, name
        for phrase in phrases:
            assert phrase in exercise.feedback, (name, phrase, exercise.feedback[:800])


def test_scores_keys_times_queries_crash_on_a_cached_call_is_not_named_a_square_mask(course, grader, tmp_path):
    """A GQA computing K Qᵀ with a right mask crashes on cached calls on the same sizes as a square mask laid on
    [T, cached + T] scores: 'cache-position-not-advanced' was named beside 'scores-transposed' (diagnosis_rate:
    3 wrong ids on three seeds). The square mask is named only where the class's own uncached call is right."""
    entry = next(e for e in corpus.mistakes() if e.name.endswith("blind_06_GroupedQueryAttention_keys_times_queries"))
    exercise, _ = corpus.grade_all([entry], course, grader, tmp_path, seed=2024, quick=True)[entry.name]
    named = {m for check in exercise.checks for m in check.misconceptions}
    assert named == {"scores-transposed"}, (named, exercise.feedback)


def test_a_cache_that_keeps_too_much_costs_its_own_class_not_the_next_ones_memory_reading(course, grader, tmp_path):
    """A GQA that keeps every chunk it was given failed its memory case and kept its instance (16 MiB of inputs)
    in the module's worker, where the SWA class's reading of what the worker holds of its own counted it (SWA lost
    points beside it: diagnosis_rate's collateral). The memory case lets go of its instance however it ends."""
    entry = next(e for e in corpus.mistakes() if e.name.endswith("cache-not-used/gqa_token_list"))
    exercise, assignment = corpus.grade_all([entry], course, grader, tmp_path, seed=2024)[entry.name]
    swa = next(e for e in assignment.exercises if e.name == "MultiHeadAttentionWithSWA")
    assert exercise.score < exercise.max_score and swa.status == "passed", swa.feedback
