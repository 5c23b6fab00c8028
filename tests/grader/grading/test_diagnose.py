"""Naming the mistake: the corpus of student code in tests/corpus, graded by the real grader.

Every mistaken implementation must be diagnosed with its misconception id; every correct one, however
it is written, must get full marks and no misconception; a mistake in a helper must be named as the
root cause of the exercises that use it.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from grader.config import load_course

ROOT = Path(__file__).resolve().parents[3]
CATALOGUE = load_course(ROOT).catalogue
_spec = importlib.util.spec_from_file_location("corpus", ROOT / "tests" / "corpus" / "corpus.py")
corpus = sys.modules["corpus"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(corpus)

MISTAKES = corpus.mistakes()
CORRECT = corpus.correct()
ON_CPU = [e for e in MISTAKES if e.misconception != "wrong-device"]  # a CPU has no other device to end up on


@pytest.fixture(scope="module")
def graded(course, grader, tmp_path_factory):
    """Every entry of the corpus, graded once (many to a grading run, on the exercises they touch)."""
    results = corpus.grade_all(ON_CPU, course, grader, tmp_path_factory.mktemp("mistakes"), quick=True)
    results.update(corpus.grade_all(CORRECT, course, grader, tmp_path_factory.mktemp("correct"), quick=True))
    return results


# 06_decoding_attention's ids: coded in the corpus together with 06's suite (issue 13)
DECODING_IDS = ("kv-heads-tiled", "cache-not-used", "cache-position-not-advanced", "rope-pairs-interleaved",
                "window-off-by-one", "cache-not-reset")


def test_the_corpus_codes_every_misconception_at_least_twice():
    root = Path(__file__).resolve().parents[3]
    pending = () if (root / "suites" / "hidden" / "test_06_decoding_attention.py").is_file() else DECODING_IDS
    counts = {m: sum(e.misconception == m for e in MISTAKES) for m in CATALOGUE if m not in pending}
    assert {m: n for m, n in counts.items() if n < 2} == {}
    assert len({e.exercise for e in CORRECT}) >= 10


@pytest.mark.parametrize("entry", ON_CPU, ids=[e.name for e in ON_CPU])
def test_a_mistake_is_named(graded, entry):
    exercise, _ = graded[entry.name]
    assert exercise.score < exercise.max_score
    assert entry.misconception in exercise.misconceptions, exercise.feedback
    assert set(exercise.misconceptions) <= set(CATALOGUE)
    # the feedback carries the catalogue's explanation and hint, and no hidden test code
    entry_text = CATALOGUE[entry.misconception]
    assert entry_text.explanation in exercise.feedback and entry_text.hint in exercise.feedback
    assert "grade.same" not in exercise.feedback and "suites" not in exercise.feedback


@pytest.mark.parametrize("entry", CORRECT, ids=[e.name for e in CORRECT])
def test_a_correct_implementation_in_another_style_gets_full_marks(graded, entry):
    exercise, assignment = graded[entry.name]
    assert exercise.status == "passed", exercise.feedback
    assert [e.name for e in assignment.exercises if e.misconceptions] == []


@pytest.mark.gpu
@pytest.mark.parametrize("entry", [e for e in MISTAKES if e.misconception == "wrong-device"],
                         ids=lambda e: e.name)
def test_a_result_on_the_wrong_device_is_named(course, tmp_path, entry):
    from grader.grading.grader import Grader

    cuda = Grader(course, device="cuda")
    try:
        exercise, _ = corpus.grade_all([entry], course, cuda, tmp_path)[entry.name]
    finally:
        cuda.close()
    assert "wrong-device" in exercise.misconceptions, exercise.feedback


def test_the_diagnosis_rate_is_complete(graded):
    named, total, missed = corpus.diagnosis_rate(ON_CPU, graded)
    print(f"\ndiagnosis rate: {named}/{total} mistakes named with the right id")
    assert missed == [] and named == total >= 46


# --- root causes -------------------------------------------------------------------------------------
CASCADES = {
    # a helper's mistake -> (the exercises that use it, the misconception they name with the helper)
    "softmax": ('''"""softmax: normalises dim 0 whatever it is asked."""
import torch


def softmax(x, dim=-1):
    e = torch.exp(x - x.amax(dim=0, keepdim=True))
    return e / e.sum(dim=0, keepdim=True)
''', ("simple_self_attention",), "softmax-wrong-dim"),
    "attention_weights": ('''"""attention_weights: forgets the scale."""
import torch


def attention_weights(queries, keys, mask=None):
    scores = queries @ keys.transpose(-2, -1)
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    return torch.softmax(scores, dim=-1).nan_to_num(0.0)
''', ("scaled_dot_product_attention", "SelfAttention_v1", "SelfAttention_v2", "CrossAttention"), "missing-scale"),
    "split_heads": ('''"""split_heads: reshapes straight to the head layout."""


def split_heads(x, num_heads):
    B, T, D = x.shape
    if D % num_heads:
        raise ValueError("indivisible")
    return x.reshape(B, num_heads, T, D // num_heads)
''', ("MultiHeadAttention",), "heads-split-without-transpose"),
    "merge_heads": ('''"""merge_heads: reshape without moving the heads back."""


def merge_heads(x):
    batch, heads, tokens, head_dim = x.shape
    return x.reshape(batch, tokens, heads * head_dim)
''', ("MultiHeadAttention", "FusedQKVAttention"), "heads-merged-without-transpose"),
    "split_qkv": ('''"""split_qkv: the parts in the order k, q, v."""


def split_qkv(qkv, num_heads):
    batch, tokens, three_dim = qkv.shape
    parts = qkv.reshape(batch, tokens, 3, num_heads, three_dim // (3 * num_heads)).permute(2, 0, 3, 1, 4)
    return parts[1], parts[0], parts[2]
''', ("FusedQKVAttention",), "qkv-swapped"),
    "causal_mask": ('''"""causal_mask: hides the diagonal."""
import torch


def causal_mask(num_tokens, device=None):
    return torch.ones(num_tokens, num_tokens, dtype=torch.bool, device=device).triu(0)
''', ("apply_causal_mask", "renormalize_causal_weights", "causal_padding_mask", "CausalAttention"),
                    "mask-hides-diagonal"),
    "repeat_kv": ('''"""repeat_kv: tiles the groups."""


def repeat_kv(x, group_size):
    return x.repeat(1, group_size, 1, 1)
''', ("GroupedQueryAttention",), "kv-heads-tiled"),
    "sliding_window_mask": ('''"""sliding_window_mask: one token too many in the window."""
import torch


def sliding_window_mask(num_queries, num_keys, window, q_start=0, k_start=0, device=None):
    queries = torch.arange(q_start, q_start + num_queries, device=device)[:, None]
    keys = torch.arange(k_start, k_start + num_keys, device=device)[None, :]
    hidden = keys > queries
    return hidden if window is None else hidden | (queries - keys > window)
''', ("MultiHeadAttentionWithSWA",), "window-off-by-one"),  # the other classes call it with no window
}


def _grade_cascades(course, grader, base):
    results = {}
    for helper, (source, _, misconception) in CASCADES.items():  # one grading run each: the helper's mistake alone
        path = base / "entries" / helper / f"{helper}.py"
        path.parent.mkdir(parents=True)
        path.write_text(source)
        results.update(corpus.grade_all([corpus.Entry(path, helper, misconception, source)], course, grader,
                                        base / helper))
    return results


@pytest.fixture(scope="module")
def cascades(course, grader, tmp_path_factory):
    """The course's default policy, cascades = "once"."""
    assert course.grading.cascades == "once"
    return _grade_cascades(course, grader, tmp_path_factory.mktemp("cascade"))


@pytest.fixture(scope="module")
def cascades_every(course, tmp_path_factory):
    """The same helpers' mistakes graded under ``[grading] cascades = "every"``."""
    from dataclasses import replace

    from grader.config import Grading
    from grader.grading.grader import Grader

    every = replace(course, grading=Grading(cascades="every"))
    grader = Grader(every, device="cpu")
    try:
        yield _grade_cascades(every, grader, tmp_path_factory.mktemp("cascade-every"))
    finally:
        grader.close()


@pytest.mark.parametrize("helper", sorted(CASCADES))
def test_a_mistake_in_a_helper_costs_points_once_in_the_helper(cascades, helper):
    """Under the default policy the exercises that use the faulty helper, right given it, keep every
    point, name no misconception of their own, and say which helper to fix."""
    _, users, misconception = CASCADES[helper]
    own, assignment = cascades[f"{helper}/{helper}"]
    assert misconception in own.misconceptions and own.score < own.max_score, own.feedback
    for user in users:
        dependent = next(e for e in assignment.exercises if e.name == user)
        assert dependent.status == "passed" and dependent.score == dependent.max_score, dependent.feedback
        assert dependent.misconceptions == []
        assert "right, given your " in dependent.feedback  # the classes of 02 name it through their sdpa
    first = next(e for e in assignment.exercises if e.name == users[0])
    assert f"right, given your {helper}" in first.feedback and f"fix the {helper} exercise" in first.feedback


def test_a_right_copy_keeps_its_points_when_the_v1_it_copies_into_is_wrong(cascades):
    """copy_v2_weights_into_v1 is graded by the v1's output after the copy: the v1's own mistake (its
    attention_weights without the scale) is charged in attention_weights alone, and the note names
    attention_weights, never SelfAttention_v1, which passed (issue 32)."""
    _, assignment = cascades["attention_weights/attention_weights"]
    copy = next(e for e in assignment.exercises if e.name == "copy_v2_weights_into_v1")
    assert copy.status == "passed" and copy.score == copy.max_score, copy.feedback
    assert "right, given your attention_weights" in copy.feedback and "SelfAttention_v1" not in copy.feedback


@pytest.mark.parametrize("helper", sorted(CASCADES))
def test_with_cascades_every_the_exercises_that_use_a_faulty_helper_lose_points_too(cascades_every, helper):
    _, users, misconception = CASCADES[helper]
    own, assignment = cascades_every[f"{helper}/{helper}"]
    assert misconception in own.misconceptions, own.feedback
    for user in users:
        dependent = next(e for e in assignment.exercises if e.name == user)
        assert dependent.status == "failed" and dependent.score < dependent.max_score
        assert misconception in dependent.misconceptions, dependent.feedback
        assert "the mistake is in your " in dependent.feedback
    assert f"the mistake is in your {helper}" in next(e for e in assignment.exercises if e.name == users[0]).feedback


def test_the_wrapper_keeps_its_points_when_the_causal_attention_it_stacks_is_wrong(course, grader, submission_dir):
    """MultiHeadAttentionWrapper (04) stacks the student's CausalAttention (03): a mistake there costs
    points in 03 only, and the wrapper says it is right given that CausalAttention."""
    from grader.submission import resolve_submission

    module = submission_dir / "03_causal_attention" / "causal_attention.py"
    module.write_text(corpus.splice(module.read_text(), '''
import torch


class CausalAttention:
    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        return self.dropout(torch.softmax(q @ k.transpose(1, 2) / k.shape[-1] ** 0.5, dim=-1)) @ v
'''))
    assignments = (course.assignment("03_causal_attention"), course.assignment("04_multi_head_attention"))
    result = grader.grade(resolve_submission(submission_dir, course), assignments, seed=5)
    causal = next(e for e in result.assignments[0].exercises if e.name == "CausalAttention")
    wrapper = next(e for e in result.assignments[1].exercises if e.name == "MultiHeadAttentionWrapper")
    assert "mask-not-applied" in causal.misconceptions and causal.score < causal.max_score, causal.feedback
    assert wrapper.status == "passed" and wrapper.score == wrapper.max_score, wrapper.feedback
    assert "right, given your CausalAttention (assignment 03)" in wrapper.feedback


# --- the rules that need no corpus run ----------------------------------------------------------------
class _Checks:
    """Just enough of a Grade for its comparison rules: float32's tolerance, a seed."""

    def tolerance(self, tensor):
        from grader.config import Tolerance

        return Tolerance(rtol=1e-4, atol=1e-5)

    def case(self):
        return " (seed 7)"

    def _numbered(self, diagnosed):
        from grader.grading.fixture import Grade

        return Grade._numbered(self, diagnosed)


def test_an_output_on_another_device_is_named_without_a_gpu():
    """What the worker reports for an output left on the CPU while grading on CUDA."""
    import torch

    from grader.grading.fixture import CheckFailed, Grade, Reply

    expected = torch.zeros(2, 3)
    with pytest.raises(CheckFailed) as failure:
        Grade.expect(_Checks(), Reply(out=torch.zeros(2, 3), device="cuda:0"), expected, "causal_mask(3)")
    assert failure.value.misconceptions == ("wrong-device",)


def test_a_diagnosis_is_claimed_only_when_it_tells_mistakes_apart():
    import torch

    from grader.grading import diagnose

    out = torch.ones(3)
    both = [("missing-scale", "a", lambda: torch.ones(3)), ("wrong-scale", "b", torch.ones(3))]
    assert diagnose.first_match(_Checks(), out, both) is None  # two ids explain it: none is claimed
    assert diagnose.first_match(_Checks(), out, both[:1]) == ("missing-scale", "a")
    assert diagnose.first_match(_Checks(), out, both[:1], right=torch.ones(3)) is None  # the output is right
    assert diagnose.first_match(_Checks(), out, [("wrong-scale", "c", torch.zeros(3))]) is None
    # an output with no finite entry equals every candidate that has none either (an inverted mask's NaN
    # rows, on a seed whose exp() overflowed everywhere): it tells nothing apart, so names nothing
    nan = torch.full((3,), float("nan"))
    assert diagnose.first_match(_Checks(), nan, [("mask-inverted", "d", nan.clone())]) is None
    partly = torch.tensor([0.5, float("nan"), 0.5])
    assert diagnose.first_match(_Checks(), partly, [("mask-inverted", "d", partly.clone())]) == ("mask-inverted", "d")


def test_inf_or_nan_is_unstable_only_where_the_right_answer_is_finite():
    import torch

    from grader.grading import diagnose

    right = torch.tensor([0.5, 0.5, 0.0])
    assert diagnose.unstable(torch.tensor([float("nan"), 0.5, 0.0]), right)
    assert not diagnose.unstable(torch.tensor([0.5, 0.5, 0.0]), right)
    assert not diagnose.unstable(torch.tensor([1.0, float("inf")]), torch.tensor([1.0, float("inf")]))
    from lesson.mistaken import safe_softmax

    zeros = safe_softmax(torch.full((2, 3), float("-inf")))
    assert torch.equal(zeros, torch.zeros(2, 3))


def test_a_crash_is_put_down_to_the_mask_buffer_only_when_its_error_names_the_buffer_size():
    from grader.grading import diagnose
    from grader.grading.fixture import StudentFault

    mismatch = StudentFault("error", "  File ..., line 10, in forward\nRuntimeError: The size of tensor a (4) must "
                                     "match the size of tensor b (10) at non-singleton dimension 2")
    assert diagnose.mentions(mismatch, 10) and diagnose.mentions(mismatch, 4)
    assert not diagnose.mentions(mismatch, 1)
    assert not diagnose.mentions(StudentFault("error", "line 100\nValueError: bad value 10.5"), 10)


def test_a_case_contradicts_an_id_only_when_every_candidate_of_it_is_far():
    """qkv-swapped has several permutations: one far from the output says nothing of another that this
    case could not compute (None) or that merely misses."""
    import torch

    from grader.grading import diagnose

    out, ruled_out = torch.ones(3), set()
    candidates = [("qkv-swapped", "keys from W_query", torch.full((3,), 50.0)), ("qkv-swapped", "values from W_key", None),
                  ("wrong-scale", "by d_k", torch.full((3,), 80.0))]
    assert diagnose.first_match(_Checks(), out, candidates, None, ruled_out) is None
    assert ruled_out == {"wrong-scale"}
    ruled_out.clear()
    near = [("qkv-swapped", "keys from W_query", torch.full((3,), 50.0)), ("qkv-swapped", "values", torch.full((3,), 1.01))]
    diagnose.first_match(_Checks(), out, near, None, ruled_out)
    assert ruled_out == set()


def test_non_finite_output_is_softmax_unstable_only_when_no_candidate_named_it():
    import torch

    from grader.grading.fixture import CheckFailed
    from lesson import mistaken

    def failing(out, ids=()):
        failure = CheckFailed("the output is off", ids)
        failure.out = out
        raise failure

    with pytest.raises(CheckFailed) as unnamed:
        mistaken.unstable_unless_named(lambda: failing(torch.tensor([float("nan"), 1.0])))
    assert unnamed.value.misconceptions == ("softmax-unstable",)
    with pytest.raises(CheckFailed) as named:  # a mask hiding a whole row gives NaN too: its own name stays
        mistaken.unstable_unless_named(lambda: failing(torch.tensor([float("nan"), 1.0]), ("mask-inverted",)))
    assert named.value.misconceptions == ("mask-inverted",)
    with pytest.raises(CheckFailed) as finite:
        mistaken.unstable_unless_named(lambda: failing(torch.tensor([2.0, 1.0])))
    assert finite.value.misconceptions == ()
    assert mistaken.unstable_unless_named(lambda: 7) == 7


def test_a_crash_that_a_class_built_for_the_sequence_does_not_have_is_mask_not_truncated():
    from grader.grading.fixture import CheckFailed, StudentFault
    from lesson import mistaken

    crash = StudentFault("error", "  File ..., line 10, in forward\nRuntimeError: The size of tensor a (4) must "
                                  "match the size of tensor b (10) at non-singleton dimension 2")

    def runs():
        return None

    def crashes():
        raise StudentFault("error", "RuntimeError: again")

    named = mistaken.not_truncated(crash, 4, 10, runs)
    assert isinstance(named, CheckFailed) and named.misconceptions == ("mask-not-truncated",)
    assert mistaken.not_truncated(crash, 4, 10, crashes) is crash  # it fails either way: not the buffer
    assert mistaken.not_truncated(crash, 10, 10, runs) is crash  # as long as the context: nothing to cut
    assert mistaken.not_truncated(crash, 4, 12, runs) is crash  # the error does not name the buffer


def test_a_scale_written_by_hand_is_found_by_search(graded):
    """No candidate divides by 8: the search over constants finds it, and says so."""
    exercise, _ = graded["wrong-scale/hand_written_eighth"]
    assert "(divided by 8)" in exercise.feedback and "wrong-scale" in exercise.misconceptions
    cross, _ = graded["wrong-scale/cross_input_width"]
    assert "(divided by 4)" in cross.feedback  # sqrt(16), the input width of the lesson's case


def test_one_head_shared_by_every_name_is_told_as_such(course, grader, submission_dir):
    """nn.ModuleList([head] * num_heads) shares one head: the feedback says so, not 'missing heads.1...'."""
    from grader.submission import resolve_submission

    module = submission_dir / "04_multi_head_attention" / "multi_head_attention.py"
    module.write_text(corpus.splice(module.read_text(), '''
import torch
from torch import nn


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        from causal_attention import CausalAttention

        head = CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
        self.heads = nn.ModuleList([head] * num_heads)

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)
'''))
    assignments = (course.assignment("03_causal_attention"), course.assignment("04_multi_head_attention"))
    result = grader.grade(resolve_submission(submission_dir, course), assignments, seed=3)
    wrapper = next(e for e in result.assignments[1].exercises if e.name == "MultiHeadAttentionWrapper")
    assert wrapper.score < wrapper.max_score
    assert "heads.1 is the same module object as heads.0" in wrapper.feedback, wrapper.feedback
    assert "missing heads.1" not in wrapper.feedback
    assert result.assignments[0].score == result.assignments[0].max_score  # 03 untouched


def _graded_01_with(course, grader, submission_dir, source: str) -> dict:
    """01's exercises graded (seed 11) with ``source`` spliced into the solution: exercise name -> result."""
    from grader.submission import resolve_submission

    module = submission_dir / "01_attention_basics" / "attention_basics.py"
    module.write_text(corpus.splice(module.read_text(), source))
    result = grader.grade(resolve_submission(submission_dir, course), (course.assignment("01_attention_basics"),),
                          seed=11)
    return {e.name: e for e in result.assignments[0].exercises}


LOOPING_SCORES = '''
import torch


def attention_scores(inputs):
    rows = [inputs[..., i, :] @ inputs.transpose(-2, -1) for i in range(inputs.shape[-2])]
    return torch.stack(rows, dim=-2)
'''


def test_a_loop_in_a_helper_is_charged_in_the_helper_not_in_what_uses_it(course, grader, submission_dir):
    """attention_scores written with a Python loop over tokens: not-vectorised there, and
    simple_self_attention, which uses it, keeps its vectorisation points."""
    by_name = _graded_01_with(course, grader, submission_dir, LOOPING_SCORES)
    assert "not-vectorised" in by_name["attention_scores"].misconceptions
    simple = by_name["simple_self_attention"]
    assert simple.status == "passed" and simple.score == simple.max_score, simple.feedback
    assert "right, given your attention_scores" in simple.feedback


def test_a_loop_of_the_callers_own_beside_a_looping_helper_costs_both(course, grader, submission_dir):
    """Two loops, two mistakes: attention_scores looping over tokens loses its rule, and simple_self_attention,
    which also loops over the queries (calling the student's softmax once a query), loses its own; the helper's
    share of each call is what ran inside its frames on that very call (grader.inside.tracer.Tracer.attribute),
    so the caller's loop is never taken for the helper's."""
    by_name = _graded_01_with(course, grader, submission_dir, LOOPING_SCORES + '''

def simple_self_attention(inputs):
    scores = attention_scores(inputs)
    rows = [softmax(scores[..., i:i + 1, :], dim=-1) @ inputs for i in range(inputs.shape[-2])]
    return torch.cat(rows, dim=-2)
''')
    assert "not-vectorised" in by_name["attention_scores"].misconceptions
    simple = by_name["simple_self_attention"]
    assert "not-vectorised" in simple.misconceptions, simple.feedback


# issue 34: feedback for the mistakes learners really make (items 1, 9, 10, 11b); items 8 and 10's correct
# buffer are corpus entries (mistakes/wrong-scale/issue34_04_*, correct/issue34_03_*), graded above
ISSUE_34 = {
    "unnamed/issue34_01_softmax_where_after_division": ("the NaN first appears in the gradient, on the slices that "
                                                        "are all -inf", "torch.where"),
    "unnamed/issue34_02_copy_v2_weights_into_v1_shared_storage_no_raise": ("share the v2's storage",),
    "unnamed/issue34_02_copy_v2_weights_into_v1_data_assignment": ("share the v2's storage",),
    "unnamed/issue34_02_copy_v2_weights_into_v1_no_bias_check": ("should raise ValueError", "qkv_bias=True"),
    "unnamed/issue34_03_CausalAttention_mask_plain_attribute": ("self.mask is a plain tensor attribute",),
    "attempts/learner_01_softmax_inplace_sub": ("modified its input x (argument 1) in place",),
}


@pytest.mark.parametrize("suite", ["hidden", "public"])
def test_issue_34_each_failure_is_explained_in_the_exercise_s_terms(course, grader, tmp_path, suite):
    entries = [e for e in corpus.unnamed() + corpus.learner("attempts") if e.name in ISSUE_34]
    assert len(entries) == len(ISSUE_34)
    results = corpus.grade_all(entries, course, grader, tmp_path, seed=2024, suite=suite)
    for name, phrases in ISSUE_34.items():
        exercise, _ = results[name]
        assert exercise.score < exercise.max_score, name
        for phrase in phrases:
            assert phrase in exercise.feedback, (name, exercise.feedback[:600])


# issue 46: a helper's breakage never hides the exercise's own mistake nor silences its name (the check run
# again with right helpers names it), and mistakes said as what they are
ISSUE_46 = {
    "wrong-scale/learner_mha_dout_scale_behind_split_without_transpose": (
        "with a right split_heads in place of yours", "scaled by 1/sqrt(d_out)"),
    "softmax-wrong-dim/learner_cross_softmax_batch_and_queries_flattened": ("the batch and the queries together",),
    "unnamed/learner_causal_padding_mask_pads_queries_both_helpers_wrong": (
        "with a right causal_mask and padding_mask in place of yours", "hides queries (rows) instead of keys"),
    "unnamed/learner_online_softmax_stale_numerators": ("against the running maximum of that moment",),
    # round 7's blind learner: misleading or numbers only before
    "unnamed/learner7_context_vector_divides_by_weight_sum": ("divided by the sum of the weights",),
    "unnamed/learner7_attention_weights_keys_dot_T": ("keys.T reverses every dimension",),
    "unnamed/learner7_flash_last_partial_key_tile_dropped": ("a key loop over the whole tiles only",),
    "unnamed/learner7_renormalize_by_column_sums": ("divided by its column's sum",),
    "unnamed/learner7_causal_padding_mask_combined_with_and": ("combined with & (and)",),
    "unnamed/learner7_online_softmax_maximum_not_running": ("each block's own maximum",),
    "softmax-unstable/learner7_softmax_global_max_guarded": ("x.max(), not each slice's maximum",),
    "unnamed/learner7_window_mask_ignores_q_start": ("positions start at 0",),
    # round 7's blind porter: numbers only, or a misleading id, before
    "unnamed/port_memcompressed_mask_after_softmax_plus_inf": ("with +inf (-float('-inf') is +inf)",),
    "unnamed/port_nisqa_minus_inf_on_weights_then_renormalised": ("fill the future with -inf after the softmax",),
    "unnamed/port_openlm_rope_along_the_heads": ("your rotation is along the heads",),
    "unnamed/learner_pointer_read_after_advancing": ("a position read after this call advanced it",),
    "unnamed/port_3_lagllama_CachedMultiHeadAttention_not_causal_with_cache": ("the cached path skips the mask",),
    "mask-fill-finite/port_bert_additive_minus10000": ("adds a finite -10000",),
    "mask-inverted/port_jiant_bert_mask_sign": ("marked True are the visible ones",),
    "heads-split-without-transpose/port_chinesetextcls_mha_reshape_only": ("merged back with one straight",),
}


@pytest.mark.parametrize("suite", ["hidden", "public"])
def test_issue_46_a_broken_helper_never_silences_the_exercise_s_own_mistake(course, grader, tmp_path, suite):
    entries = [e for e in corpus.mistakes() + corpus.unnamed() if e.name in ISSUE_46]
    assert len(entries) == len(ISSUE_46)
    results = corpus.grade_all(entries, course, grader, tmp_path, seed=7, suite=suite)
    for name, phrases in ISSUE_46.items():
        exercise, _ = results[name]
        assert exercise.score < exercise.max_score, name
        said = "\n".join([exercise.feedback, *(c.message for c in exercise.checks)])  # (one check's case may be 2-d)
        for phrase in phrases:
            assert phrase in said, (name, said[:1500])


def test_issue_34_two_stacked_mistakes_in_the_fused_block_name_the_one_that_separates(graded):
    for name in ("wrong-scale/issue34_04_fused_per_head_split_and_inverse_scale",
                 "wrong-scale/issue34_04_fused_own_split_per_head_and_inverse_scale"):
        exercise, assignment = graded[name]
        assert exercise.misconceptions == ["wrong-scale"], exercise.feedback
        split = next(e for e in assignment.exercises if e.name == "split_qkv")
        assert ("split_qkv" in exercise.feedback or "per-head layout" in exercise.feedback)
    assert split.status == "failed"  # the own split is charged in split_qkv


def test_issue_34_the_causal_mask_buffer_is_judged_by_behaviour_not_convention(graded):
    exercise, _ = graded["correct/issue34_03_CausalAttention_nanogpt_tril_buffer"]
    assert exercise.status == "passed" and exercise.score == exercise.max_score, exercise.feedback


def test_a_softmax_that_raises_for_an_in_place_op_is_not_said_to_lack_keepdim(course, grader, tmp_path):
    """A learner's softmax subtracted its maximum in place (x -= m): right on one slice, it raises on the
    cases whose input requires a gradient. The keepdim explanation, which also looks for a softmax right on
    one slice that raises on more, named sum-without-keepdim beside input-mutated: it now asks for the
    broadcast error a sum without keepdim gives."""
    entry = next(e for e in corpus.learner("attempts") if e.name.endswith("learner_3_70_softmax_inplace_subtract"))
    exercise, _ = corpus.grade_all([entry], course, grader, tmp_path)[entry.name]
    assert exercise.misconceptions == ["input-mutated"], exercise.feedback[:600]


INVERTED_WITH_NOT = '''"""attention_weights: the inverted mask, read with ~mask"""
import math

import torch


def attention_weights(queries, keys, mask=None):
    scores = queries @ keys.transpose(-2, -1) / math.sqrt(keys.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1)
'''


@pytest.mark.slow
@pytest.mark.parametrize("suite", ["hidden", "public"])
def test_an_inverted_mask_is_named_on_every_seed_whether_or_not_a_row_is_hidden_whole(course, grader, tmp_path,
                                                                                        suite):
    """Issue 43: masked_fill(~mask, -inf) gives NaN where the seed's mask leaves a query every key (seeds 1,
    4 and 8 here), numbers elsewhere. The name holds on every seed; the NaN is said where it shows."""
    path = tmp_path / "inverted.py"
    path.write_text(INVERTED_WITH_NOT)
    entry = corpus._entry(path, None)
    said = {}
    for seed in (1, 2, 4, 8):
        exercise, _ = corpus.grade_all([entry], course, grader, tmp_path / f"s{seed}", seed=seed, suite=suite)[entry.name]
        said[seed] = (tuple(exercise.misconceptions), exercise.score)
    assert {ids for ids, _ in said.values()} == {("mask-inverted",)}, said
    assert len({score for _, score in said.values()}) == 1, said
