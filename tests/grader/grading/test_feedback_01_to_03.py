"""Round 4 of blind learners, assignments 01-03: each wrong attempt's feedback says what is wrong, in the
exercise's terms, on the hidden and on the public suite (tests/corpus/learner/attempts/learner_4a_*)."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
_spec = importlib.util.spec_from_file_location("corpus", ROOT / "tests" / "corpus" / "corpus.py")
corpus = sys.modules["corpus"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(corpus)

# attempt -> phrases its exercise's feedback must hold
ROUND_4A = {
    # a loop over inputs.shape[1]: IndexError for d > T, a partial sum for d < T (was the raw IndexError)
    "attempts/learner_4a_05_context_vector_loop_loop_over_features": (
        "your loop runs over inputs.shape[1]", "range(inputs.shape[0])"),
    # context = inputs[0], then i from 1 (was a bare numeric difference)
    "attempts/learner_4a_10_context_vector_loop_first_row_unweighted": (
        "your sum starts from inputs[0] itself, unweighted", "torch.zeros_like(inputs[0])"),
    # x @ layer.weight: "mat1 and mat2 shapes cannot be multiplied" alone before
    "attempts/learner_4a_25_SelfAttention_v2_matmul_weight_untransposed": (
        "x @ weight", "nn.Linear stores its weight as [d_out, d_in]", "self.W_query(x)"),
    # [T, T] | [B, T]: a raw broadcast error before (and, with diagnose.device_ignored gone, a grader error)
    "attempts/learner_4a_34_causal_padding_mask_no_unsqueeze_broadcast": (
        "combine the [T, T] causal mask and the [B, T] padding mask as they are", "causal[None] | padding[:, None, :]"),
    # masked_fill(mask, 0.0): "largest error is 1.8e+308" before (and full marks behind a grader error)
    "attempts/learner_4a_48_apply_causal_mask_fill_zero": (
        "mask-fill-finite", "fills the future's scores with 0 instead of -inf"),
    # x - x.max(): named softmax-unstable with the generic words only
    "attempts/learner_4a_04_softmax_global_max_no_all_inf": (
        "softmax-unstable", "you subtract the maximum of the whole tensor, x.max()", "x.amax(dim=dim, keepdim=True)"),
    # nn.Linear(d_in, d_out) without bias=qkv_bias: "unexpected W_query.bias, ..." alone before
    "attempts/learner_4a_20_SelfAttention_v2_linear_bias_default": ("nn.Linear(d_in, d_out) has bias=True by default",
                                                                    "bias=qkv_bias"),
    # W_value = nn.Linear(d_in_kv, d_k): a parameter shape alone before
    "attempts/learner_4a_22_CrossAttention_value_size_dk": ("your W_value projects to d_k", "nn.Linear(d_in_kv, d_v)"),
    # returns v1: a false pass before (the contract is (v2, v1) -> None)
    "attempts/learner_4a_46_copy_v2_weights_into_v1_returns_v1": (
        "returned a SelfAttention_v1; it should return None",),
}


@pytest.mark.parametrize("suite", ["hidden", "public"])
def test_round_4a_each_failure_is_explained_in_the_exercise_s_terms(course, grader, tmp_path, suite):
    entries = [e for e in corpus.learner("attempts") if e.name in ROUND_4A]
    assert len(entries) == len(ROUND_4A)
    results = corpus.grade_all(entries, course, grader, tmp_path, seed=2024, suite=suite, quick=True)
    for name, phrases in ROUND_4A.items():
        exercise, _ = results[name]
        assert exercise.score < exercise.max_score, (name, exercise.feedback[:600])
        for phrase in phrases:
            assert phrase in exercise.feedback, (name, phrase, exercise.feedback[:1200])


# attempts whose wrong check was, before, a grader error (diagnose.device_ignored missing): the check failed
# with no points and no grader error now
GRADER_ERRORS = ("learner_4a_31_apply_causal_mask_masked_fill_inplace",
                 "learner_4a_32_renormalize_causal_weights_sum_without_keepdim",
                 "learner_4a_37_apply_causal_mask_size_from_shape0",
                 "learner_4a_38_renormalize_causal_weights_tril_minus1_drops_diagonal",
                 "learner_4a_40_causal_padding_mask_padding_on_queries",
                 "learner_4a_48_apply_causal_mask_fill_zero",
                 "learner_4a_34_causal_padding_mask_no_unsqueeze_broadcast")


def test_round_4a_a_wrong_masking_exercise_is_no_grader_error(course, grader, tmp_path):
    entries = [e for e in corpus.learner("attempts") if e.name.split("/")[-1] in GRADER_ERRORS]
    assert len(entries) == len(GRADER_ERRORS)
    results = corpus.grade_all(entries, course, grader, tmp_path, seed=2024, quick=True)
    for entry in entries:
        exercise, _ = results[entry.name]
        assert exercise.score < exercise.max_score, (entry.name, exercise.feedback[:600])
        assert not any(c.status == "grader-error" for c in exercise.checks), (entry.name, exercise.feedback[:600])


def test_round_4a_a_raise_only_when_a_gradient_is_asked_for_is_not_blamed_on_the_batch(course, grader, tmp_path):
    """masked_fill_ on the scores: right on a batch called plainly, it raised where a gradient was asked for;
    it was said to read T from the front (shape[0]), which it does not."""
    entry = next(e for e in corpus.learner("attempts")
                 if e.name.endswith("learner_4a_31_apply_causal_mask_masked_fill_inplace"))
    exercise, _ = corpus.grade_all([entry], course, grader, tmp_path, seed=2024, quick=True)[entry.name]
    assert "shape[0] is the batch size" not in exercise.feedback, exercise.feedback[:1200]
    raised = [c.message for c in exercise.checks if "raised" in (c.message or "")]
    assert raised and all("when no gradient is asked for" in m for m in raised), raised


# explained by the grader for any exercise (grader/grading/outcomes.py, main's 712064b): checked here on 01-02
GENERIC = {
    # m = x.max(dim, keepdim=True); x - m: TypeError on torch.return_types.max
    "attempts/learner_4a_09_softmax_max_returns_tuple": ("returns a pair (values, indices)", "x.amax(dim, keepdim=True)"),
    # param.copy_(...) outside torch.no_grad(): was named input-mutated, "compute a new tensor instead"
    "attempts/learner_4a_28_copy_v2_weights_into_v1_copy_without_no_grad": ("with torch.no_grad():",),
}


@pytest.mark.parametrize("suite", ["hidden", "public"])
def test_round_4a_a_crash_the_grader_explains_is_not_misnamed(course, grader, tmp_path, suite):
    entries = [e for e in corpus.learner("attempts") if e.name in GENERIC]
    assert len(entries) == len(GENERIC)
    results = corpus.grade_all(entries, course, grader, tmp_path, seed=2024, suite=suite, quick=True)
    for name, phrases in GENERIC.items():
        exercise, _ = results[name]
        assert exercise.score < exercise.max_score, name
        assert "input-mutated" not in exercise.misconceptions, (name, exercise.feedback[:600])
        for phrase in phrases:
            assert phrase in exercise.feedback, (name, phrase, exercise.feedback[:1200])


@pytest.mark.parametrize("suite", ["hidden", "public"])
def test_a_v2_that_ignores_qkv_bias_costs_its_own_exercise_not_the_copys(course, grader, tmp_path, suite):
    """A SelfAttention_v2 that never builds biases (tests/corpus/unnamed/blind_02_SelfAttention_v2_nobias) is
    charged in SelfAttention_v2; the copy's refusal of biases is asked with a right v2 in its place (the
    stand-in), and the student's copy, which refuses them, keeps its points (each mistake costs once)."""
    entry = corpus._entry(ROOT / "tests" / "corpus" / "unnamed" / "blind_02_SelfAttention_v2_nobias.py", None)
    own, assignment = corpus.grade_all([entry], course, grader, tmp_path, seed=2024, suite=suite)[entry.name]
    assert own.score < own.max_score and "W_query.bias" in own.feedback, own.feedback[:600]
    copy = next(e for e in assignment.exercises if e.name == "copy_v2_weights_into_v1")
    assert copy.score == copy.max_score, copy.feedback[:1200]
    assert "right, given your SelfAttention_v2" in copy.feedback, copy.feedback[:1200]


def test_a_copy_that_drops_biases_beside_a_v2_without_them_still_fails(course, grader, tmp_path):
    """The same v2 beside a copy that never refuses biases: the run with a right v2 finds the copy wrong, and
    that decides (the student's v2 does not earn the copy a pass)."""
    source = (ROOT / "tests" / "corpus" / "unnamed" / "blind_02_SelfAttention_v2_nobias.py").read_text()
    source += ("\n\ndef copy_v2_weights_into_v1(v2, v1):\n    with torch.no_grad():\n"
               + "".join(f"        v1.W_{r}.copy_(v2.W_{r}.weight.T)\n" for r in ("query", "key", "value")))
    path = tmp_path / "both.py"
    path.write_text(source)
    entry = corpus._entry(path, None)
    _, assignment = corpus.grade_all([entry], course, grader, tmp_path, seed=2024)[entry.name]
    copy = next(e for e in assignment.exercises if e.name == "copy_v2_weights_into_v1")
    failed = [c for c in copy.checks if c.status != "passed"]
    assert [c.name for c in failed] == ["copy_v2_weights_refuses_biases"], copy.feedback[:1200]
    assert "with a right SelfAttention_v2 in place of yours" in copy.feedback, copy.feedback[:1200]
