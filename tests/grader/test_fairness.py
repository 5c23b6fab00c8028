"""Scores are fair: dropout judged by its effect, forgiveness only where it is owed, the exercise's
own checks charging a helper's mistake (docs/course-spec.md, "Scores are fair")."""
import json
import re
import sys
from pathlib import Path

import pytest
import torch

from grader.config import Tolerance
from lesson.dropout import judged
from grader.results import CheckOutcome, ExerciseResult
from grader.grading.grader import charged_once
from grader.submission import resolve_submission

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "corpus"))
import corpus  # noqa: E402

TOL = Tolerance(rtol=1e-7, atol=1e-9)


def _weights(batch=2, heads=2, tokens=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(batch, heads, tokens, tokens, generator=g, dtype=torch.float64)
    scores = scores.masked_fill(torch.ones(tokens, tokens).triu(1).bool(), float("-inf"))
    return scores.softmax(-1), g


def _as_output(w):
    """[B, H, T, T] weights as the design's output [B, T, H * 2T]: each row twice."""
    b, h, t, _ = w.shape
    return torch.cat([w, w], dim=-1).transpose(1, 2).reshape(b, t, h * 2 * t)


def test_any_draw_of_dropout_on_the_weights_passes_and_other_placements_do_not():
    w, g = _weights()
    keep = torch.rand(w.shape, generator=g) >= 0.5
    assert judged(_as_output(w), _as_output(w * keep / 0.5), 0.5, 6, TOL) == (None, ())
    unscaled = judged(_as_output(w), _as_output(w * keep), 0.5, 6, TOL)[0]
    assert "not scaled" in unscaled
    features = torch.rand(_as_output(w).shape, generator=g) >= 0.5
    assert "dropped differently" in judged(_as_output(w), _as_output(w) * features / 0.5, 0.5, 6, TOL)[0]
    shared = keep[:, :1].expand_as(w)
    assert "every head" in judged(_as_output(w), _as_output(w * shared / 0.5), 0.5, 6, TOL)[0]
    assert "kept" in judged(_as_output(w), _as_output(w / 0.5), 0.5, 6, TOL)[0]  # nothing dropped
    scores = w.log()  # dropout on the scores: some zeroed, the rest doubled, then the softmax
    on_scores = (torch.where(keep, scores * 2, torch.zeros_like(scores)).masked_fill(w == 0, float("-inf"))).softmax(-1)
    assert judged(_as_output(w), _as_output(on_scores), 0.5, 6, TOL)[1] == ("dropout-on-scores",)
    # p = 1: nothing reaches the output; a hand-made mask divided by 1 - p = 0 gives NaN
    assert judged(_as_output(w), _as_output(w * 0), 1.0, 6, TOL) == (None, ())
    assert "zero" in judged(_as_output(w), _as_output(w * 0 / torch.tensor(0.0)), 1.0, 6, TOL)[0]


def test_a_case_forgiven_for_a_helper_that_passes_its_own_checks_is_charged_where_it_was_made():
    helper = ExerciseResult("sliding_window_mask", 15, [CheckOutcome("mask", 1, "passed")])
    forgiven = CheckOutcome("cached", 1, "passed", "right, given your sliding_window_mask, which this uses; ...",
                            forgiven_by="sliding_window_mask")
    user = ExerciseResult("GroupedQueryAttention", 15, [forgiven, CheckOutcome("other", 1, "passed")])
    charged_once([helper, user])
    assert user.score == 7.5 and user.checks[0].status == "failed"
    failing_helper = ExerciseResult("sliding_window_mask", 15, [CheckOutcome("mask", 1, "failed", "wrong")])
    user = ExerciseResult("GroupedQueryAttention", 15, [forgiven])
    charged_once([failing_helper, user])
    assert user.score == 15
    # a chain: the helper passes only as right given its own faulty helper, which was charged; a case kept given the
    # middle helper is the exercise's own (red team rounds 27a and 27c: the middle helper's own slip, made where its
    # checks never look, hid behind a check of its kept given its helper); the blames name the chain's first helper
    # (a copy beside a wrong attention_weights is right given attention_weights: tests/grader/grading)
    middle = ExerciseResult("SelfAttention_v1", 15, [CheckOutcome("v1", 1, "passed", "right, given your attention_weights",
                                                                  forgiven_by="attention_weights")])
    copy = ExerciseResult("copy_v2_weights_into_v1", 15, [CheckOutcome("copy", 1, "passed", "right, given your "
                                                                       "SelfAttention_v1", forgiven_by="SelfAttention_v1")])
    charged_once([ExerciseResult("attention_weights", 20, [CheckOutcome("w", 1, "failed", "wrong")]), middle, copy])
    assert copy.score == 0 and middle.score == 15


def test_a_case_forgiven_on_a_call_the_helpers_exercise_never_graded_is_the_callers():
    """Issue 32: "right given your helper" stands only on a call the helper's own exercise graded and
    found wrong; a helper that loses a point elsewhere buys nothing for its other calls."""
    helper = ExerciseResult("sliding_window_mask", 15, [
        CheckOutcome("mask", 1, "failed", "wrong", wrong_calls=("sliding_window_mask(3, 5, 4, 8, 6)",)),
        CheckOutcome("other", 1, "passed")])
    graded = CheckOutcome("cached", 1, "passed", "right, given your sliding_window_mask, which this uses; ...",
                          forgiven_by="sliding_window_mask", forgiven_call="sliding_window_mask(3, 5, 4, 8, 6)")
    ungraded = CheckOutcome("chunked", 1, "passed", "right, given your sliding_window_mask, which this uses; ...",
                            forgiven_by="sliding_window_mask", forgiven_call="sliding_window_mask(16, 16, 4, 0, 0)")
    user = ExerciseResult("MultiHeadAttentionWithSWA", 15, [graded, ungraded])
    charged_once([helper, user])
    assert [c.status for c in user.checks] == ["passed", "failed"]
    assert "sliding_window_mask(16, 16, 4, 0, 0), a call its own exercise does not grade" in user.checks[1].message
    assert user.score == 7.5


def test_cases_kept_because_the_helper_raised_keep_no_more_than_the_exercise_earned_on_its_own():
    """Red team (issue 33): a case kept because the student's own helper raised shows nothing of the
    exercise: an exercise that only calls a raising helper (or raises the same way without calling it)
    earned 20/20. Such cases now keep no more weight than the exercise's own right outputs elsewhere."""
    def raised(name):
        return CheckOutcome(name, 1, "passed", "right, given your softmax, which this uses; but your softmax is wrong "
                            "(it raises ValueError on this case's inputs): fix the softmax exercise",
                            forgiven_by="softmax", forgiven_raise=True)

    helper = ExerciseResult("softmax", 25, [CheckOutcome("rows", 1, "failed", "raised")])
    nothing_own = ExerciseResult("simple_self_attention", 20, [raised("a"), raised("b"),
                                                               CheckOutcome("structure", 1, "passed")])
    charged_once([helper, nothing_own])
    assert [c.status for c in nothing_own.checks] == ["failed", "failed", "passed"]  # a check of no output earns none
    assert "not checked: your softmax raised on this case" in nothing_own.checks[0].message
    some_own = ExerciseResult("simple_self_attention", 20, [raised("a"), raised("b"), raised("c"),
                                                            CheckOutcome("d", 2, "passed", verified=True)])
    charged_once([helper, some_own])
    assert [c.status for c in some_own.checks] == ["passed", "passed", "failed", "passed"] and some_own.score == 16


FORGERS = {  # a softmax that raises, and a simple_self_attention that does none of its own work
    "a fake frame in its message": 'raise ValueError(\'File "x", line 1, in softmax\\nValueError: boom\')',
    "its helper's raise, copied": 'raise ValueError("boom")',
    "a raise of its own type": 'raise ValueError("shapes")',
}
RIGHT_ON_A_RAISING_HELPER = "return softmax(inputs @ inputs.transpose(-2, -1)) @ inputs"


def _forger(tmp_path, body):
    path = tmp_path / "forger.py"
    path.write_text('"""simple_self_attention: forged"""\n\n\ndef softmax(x, dim=-1):\n    raise ValueError("boom")'
                    f"\n\n\ndef simple_self_attention(inputs):\n    {body}\n")
    return corpus._entry(path, None)


@pytest.mark.slow
@pytest.mark.parametrize("how", list(FORGERS), ids=list(FORGERS))
def test_no_exercise_earns_points_from_its_helper_raising_alone(course, grader, tmp_path, how):
    """Red team (issue 33): each of these scored 20/20 on simple_self_attention "right, given your softmax".
    A case kept for a faulty helper is run again with the helper's stand-in (grader/grading/stand_ins.py):
    these raise then too."""
    entry = _forger(tmp_path, FORGERS[how])
    exercise, assignment = corpus.grade_all([entry], course, grader, tmp_path / "run")[entry.name]
    assert exercise.score == 0, exercise.feedback[:500]
    assert "with a right softmax in place of yours" in exercise.feedback
    assert {e.name: e.score for e in assignment.exercises}["softmax"] == 0


@pytest.mark.slow
def test_a_right_exercise_on_a_raising_helper_keeps_its_points_once_verified(course, grader, tmp_path):
    """The lesson's simple_self_attention on a softmax that raises: right with a right softmax in its
    place, so its mistake costs once, in softmax (it cost twice while such cases were only bounded)."""
    entry = _forger(tmp_path, RIGHT_ON_A_RAISING_HELPER)
    exercise, assignment = corpus.grade_all([entry], course, grader, tmp_path / "run")[entry.name]
    assert exercise.score == exercise.max_score and "right, given your softmax" in exercise.feedback
    assert {e.name: e.score for e in assignment.exercises}["softmax"] == 0


def test_what_a_stand_in_answers_never_outlives_its_verification_nor_reaches_the_feedback(course, grader, tmp_path):
    """Red team round 9 (issue 44): while a right sliding_window_mask stood in for an off-by-one one, the SWA
    class asked it calls of its own choosing, kept the answers (and the reference's own error messages) in
    a module-level list, and raised them from a later call, into the feedback. The stand-ins' worker now
    ends with the verification, a right helper's raise crosses as its kind alone, and what the student's
    code raised in a verification run is said by its kind."""
    entry = corpus._entry(ROOT / "tests" / "corpus" / "hostile" / "stand_in_answers_kept.py", None)
    _, assignment = corpus.grade_all([entry], course, grader, tmp_path, seed=7)[entry.name]
    said = "\n".join(e.feedback for e in assignment.exercises)
    assert "KEPT" not in said and "swm(" not in said and "not supported between" not in said, said
    exercises = {e.name: e for e in assignment.exercises}
    assert exercises["sliding_window_mask"].misconceptions == ["window-off-by-one"]
    assert exercises["MultiHeadAttentionWithSWA"].score < exercises["MultiHeadAttentionWithSWA"].max_score


@pytest.mark.parametrize("name,secret", [("stand_in_answers_as_a_class_name.py", "LEAK_"),
                                         ("stand_in_answers_as_a_shape.py", "14438")])
def test_a_verification_run_s_failure_says_nothing_the_student_s_code_chose(course, grader, tmp_path, name, secret):
    """Red team round 14 (issue 44): in the run with a right softmax standing in, simple_self_attention asked it
    a call of its own and carried the answer out in what the feedback said of the failure: an exception class
    named after it, an empty output's shape. The failure of that run is said in the suites' words only (the
    mistake named, if any): no exception name, shape or value of the student's."""
    entry = corpus._entry(ROOT / "tests" / "corpus" / "hostile" / name, None)
    exercise, assignment = corpus.grade_all([entry], course, grader, tmp_path, seed=7)[entry.name]
    said = "\n".join(e.feedback for e in assignment.exercises) + json.dumps(assignment.to_json())
    assert secret not in said and "0p1443" not in said and "57197" not in said, said[:2000]
    assert exercise.score < exercise.max_score and "with a right softmax in place of yours" in exercise.feedback


def test_a_cache_kept_in_a_pool_made_at_import_is_held_by_the_kernels_account(course, grader, tmp_path):
    """Red team round 9 (issue 44): GroupedQueryAttention keeping every head's keys and values in a pool
    allocated and written at import, just as large as the hidden memory case needs, grew in no reading
    and was given back by no instance (100/100). What the worker holds of its own is read now: 16.7 MiB
    where the right cache and weights take 4.1 (and the module's other memory checks see the pool too)."""
    entry = corpus._entry(ROOT / "tests" / "corpus" / "hostile" / "gqa_pool_at_import.py", None)
    _, assignment = corpus.grade_all([entry], course, grader, tmp_path, seed=7)[entry.name]
    gqa = next(e for e in assignment.exercises if e.name == "GroupedQueryAttention")
    assert gqa.score < gqa.max_score and "of its own" in gqa.feedback, gqa.feedback
    assert {e.name: e.status for e in assignment.exercises}["CachedMultiHeadAttention"] == "passed"


def test_a_cache_that_stops_the_heaps_trim_gains_nothing(course, grader, tmp_path):
    """Issue 47: what the student's process frees stays in its heap until the worker gives it back right before
    a reading (grader/inside/heap.py), the worker's own act in the student's process. A GQA caching every head
    that stops it (and leaves a freed block for the reading before its sequence to count) names what it reaches
    for: not observed, its memory checks earn nothing; stopping the trim could only make a reading larger."""
    entry = corpus._entry(ROOT / "tests" / "corpus" / "hostile" / "gqa_heads_cache_untrimmed.py", None)
    _, assignment = corpus.grade_all([entry], course, grader, tmp_path, seed=7)[entry.name]
    gqa = next(e for e in assignment.exercises if e.name == "GroupedQueryAttention")
    memory = next(c for c in gqa.checks if c.name == "the_cache_holds_what_it_should_as_the_kernel_counts_it")
    assert gqa.score < gqa.max_score and memory.status != "passed", gqa.feedback
    assert "not observed" in gqa.feedback or "of its own" in gqa.feedback, gqa.feedback


def test_a_window_cache_beside_a_small_history_of_every_token_loses_its_memory_check(course, grader, tmp_path):
    """Red team round 30 (M1): a right window cache beside every token's input kept as int8 and never attended grew
    by 0.065 of every head's keys and values, under the 0.1 a window cache was allowed, and kept 15/15 where the
    same history in float64 loses the memory check. A window cache may grow by 0.02 of it now (honest: at most
    0.0025 over 23 correct classes and the porters' five on three seeds)."""
    entry = corpus._entry(ROOT / "tests" / "corpus" / "hostile" / "swa_int8_history.py", None)
    exercise, _ = corpus.grade_all([entry], course, grader, tmp_path, seed=7)[entry.name]
    memory = next(c for c in exercise.checks if c.name.startswith("the_cache_holds_what_it_should"))
    assert exercise.score < exercise.max_score and memory.status == "failed", exercise.feedback
    assert "grew by" in memory.message, memory.message


UNWATCHED = {  # red team rounds 11 to 15 (issue 44): (exercise, what the computation earns written plainly, said)
    "softmax_cross_entropy_inference.py": ("softmax", 0.0, "inference"),  # 25/25; under no_grad _log_softmax: 0
    "online_softmax_layer_norm_inference.py": ("online_softmax", 36.36, "inference"),  # 40/40; two-pass 36.36
    "flash_in_python_floats_inference.py": ("flash_attention", 38.0, "inference"),  # 58/60; reads counted: 38
    # 15/15, called directly 0; refused at the dispatcher since round 13 (its math path), before the backward is
    "sdpa_in_a_backward_hook.py": ("scaled_dot_product_attention", 0.0, "backward|_safe_softmax"),
    "sdpa_in_an_iter_torch_calls.py": ("scaled_dot_product_attention", 0.0, "_safe_softmax"),  # round 13: 15/15
    "online_softmax_masked_scatter_rank.py": ("online_softmax", 36.36, "masked_scatter"),  # round 13: 40/40
    "mha_in_a_deepcopy_memo_factory.py": ("scaled_dot_product_attention", 0.0, "called back"),  # round 15: 15/15
}


@pytest.mark.parametrize("name", UNWATCHED)
def test_work_where_the_watching_is_off_is_not_observed_and_its_calls_are_refused(course, grader, tmp_path, name):
    """Torch's inference mode lets an operator reach the worker's watching whole, its insides unseen; a hook
    fired by a backward inside the call runs where the watching of torch functions is off. A file that
    names either is not observed (its watching checks earn nothing, saying so), and a watched call that
    touches an inference tensor or runs a backward pass is refused, saying why: the exercise earns no more
    than its computation written plainly."""
    entry = corpus._entry(ROOT / "tests" / "corpus" / "hostile" / name, None)
    exercise, assignment = corpus.grade_all([entry], course, grader, tmp_path, seed=7)[entry.name]
    target, plainly, said = UNWATCHED[name]
    assert exercise.name == target and exercise.score <= plainly, (exercise.score, exercise.feedback)
    assert any(word in exercise.feedback for word in said.split("|")), exercise.feedback


SNEAKY_WINDOW = """import torch


def sliding_window_mask(num_queries, num_keys, window, q_start=0, k_start=0, device=None):
    q = torch.arange(q_start, q_start + num_queries, device=device)[:, None]
    k = torch.arange(k_start, k_start + num_keys, device=device)[None, :]
    hidden = k > q
    if window is not None and window in (1, 2) or (window == 3 and num_queries == 6):
        hidden = hidden | (q - k >= window)
    return hidden
"""


@pytest.mark.slow
@pytest.mark.parametrize("suite", ["hidden", "public"])
def test_a_helper_right_only_where_its_checks_look_pays_in_its_own_exercise(course, grader, tmp_path, suite):
    """Issue 32: a sliding_window_mask right on the windows its exercise's cases use and wrong on the
    windows the classes use, where it loses a point on one case anyway. Its exercise grades the helper as
    the classes call it, so the classes' cases are kept and the mistake is charged there, on both sides."""
    entry = tmp_path / "sneaky_window.py"
    entry.write_text(SNEAKY_WINDOW)
    entry = corpus._entry(entry, None)
    exercise, assignment = corpus.grade_all([entry], course, grader, tmp_path / "graded", seed=3,
                                            suite=suite)[entry.name]
    failing = {c.name for c in exercise.checks if c.status == "failed"}
    assert "sliding_window_mask_as_the_classes_call_it" in failing, exercise.feedback
    classes = [e for e in assignment.exercises if e.name in ("MultiHeadAttentionWithSWA", "GroupedQueryAttention",
                                                             "CachedMultiHeadAttention")]
    assert all(e.status == "passed" for e in classes), [(e.name, e.feedback[:300]) for e in classes]
    assert any("given your sliding_window_mask" in e.feedback for e in classes)


def _class_of_06(tmp_path, hostile: dict[str, str]) -> Path:
    """alice hands in 06's solution; each of ``hostile`` (name -> a corpus/hostile file) the solution
    with that file's definitions in place of the reference's."""
    root = tmp_path / "class"
    module = ROOT / "solutions" / "06_decoding_attention" / "decoding_attention.py"
    for name, entry in {"alice": None, **hostile}.items():
        folder = root / name / "06_decoding_attention"
        folder.mkdir(parents=True)
        text = module.read_text()
        if entry:
            text = corpus.splice(text, (ROOT / "tests" / "corpus" / "hostile" / entry).read_text())
        (folder / "decoding_attention.py").write_text(text)
    return root


@pytest.mark.slow
def test_the_hostile_patterns_gain_nothing_beside_an_honest_bystander(course, tmp_path):
    """Issue 19, items 7 and 8, in one batch: a helper that hides nothing for window=None, used by the
    classes for their causal mask; an SWA that keeps every token while cache_k/cache_v show the window;
    a GQA that caches every head while its properties show the groups; an SWA that keeps every token in
    a buffer written at import (no memory reading moves) and attends over them all under a mask. Each loses points where its
    mistake is (memory measured from outside, the helper's own exercise); alice keeps all of hers."""
    from grader.batch.autograde import autograde

    root = _class_of_06(tmp_path, {"mallory": "window_none_hides_nothing.py", "trudy": "swa_property_cache.py",
                                   "eve": "gqa_heads_cache.py", "oscar": "swa_static_history.py"})
    out = tmp_path / "results"
    assert autograde(course=course, paths=[root], out=out, workers=2, shard=None, resume=False, device="cpu",
                     seed=7, assignments=(course.assignment("06_decoding_attention"),)) == 0
    results = {name: json.loads((out / f"{name}.json").read_text())
               for name in ("alice", "mallory", "trudy", "eve", "oscar")}
    scores = {name: {e["name"]: e for e in r["assignments"][0]["exercises"]} for name, r in results.items()}
    assert results["alice"]["score"] == 100, json.dumps(results["alice"])[:3000]
    assert scores["mallory"]["sliding_window_mask"]["score"] < 15
    swa, gqa = scores["trudy"]["MultiHeadAttentionWithSWA"], scores["eve"]["GroupedQueryAttention"]
    assert swa["score"] < 15 and "grew by" in swa["feedback"], swa["feedback"]
    assert gqa["score"] < 15 and "grew by" in gqa["feedback"], gqa["feedback"]
    # issue 44, round 7: the whole history in a buffer written at import, attended under a mask
    static = scores["oscar"]["MultiHeadAttentionWithSWA"]
    # caught by what the worker holds of its own (red team round 9), or else by the keys a cached call attends
    assert static["score"] < 15 and ("of its own" in static["feedback"] or "attends over more keys" in
                                     static["feedback"]), static["feedback"]
    assert all(r["score"] < 100 for name, r in results.items() if name != "alice")


def test_held_bytes_counts_what_a_process_tree_holds_from_outside(tmp_path):
    """The grader's own reading of a sandbox's memory: a child holding 64 MiB, and a file of 8 MiB in
    the working folder, show in the reading of its parent's tree."""
    import subprocess

    from grader.sandbox.client import held_bytes

    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\nblock = bytearray(64 << 20)\n"
                               "print('ready', flush=True)\ntime.sleep(30)"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        before = held_bytes(holder.pid, tmp_path)
        (tmp_path / "stash.bin").write_bytes(b"x" * (8 << 20))
        after = held_bytes(holder.pid, tmp_path)
    finally:
        holder.kill()
        holder.wait()
    assert before >= 64 << 20
    assert after - before == 8 << 20


def test_held_bytes_counts_a_child_started_by_another_thread():
    """The tree is read from each thread's children (where the kernel lists them): a process started by
    a thread other than the main one, holding 64 MiB, is counted as part of its parent's tree."""
    import subprocess

    from grader.sandbox.client import held_bytes

    code = ("import subprocess, sys, threading, time\n"
            "def start():\n"
            "    subprocess.Popen([sys.executable, '-c', 'import time\\nb = bytearray(64 << 20)\\nprint(1, flush=True)\\n"
            "time.sleep(30)'], stdout=sys.stdout).wait()\n"
            "threading.Thread(target=start, daemon=True).start()\ntime.sleep(30)\n")
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout.readline().strip() == "1"
        held = held_bytes(parent.pid)
    finally:
        subprocess.run(["pkill", "-KILL", "-P", str(parent.pid)], check=False)
        parent.kill()
        parent.wait()
    assert held >= 64 << 20


@pytest.mark.slow
def test_a_helper_wrong_only_outside_its_checks_is_charged_in_its_own_exercise(course, grader, tmp_path):
    """Issue 19, item 7: a sliding_window_mask that hides nothing for window=None, used by the classes
    for their causal mask. The classes are right given it (charged once), and the helper's own
    exercise grades window=None and loses points there: the trick does not score full marks."""
    entry = corpus._entry(ROOT / "tests" / "corpus" / "hostile" / "window_none_hides_nothing.py", None)
    results = corpus.grade_all([entry], course, grader, tmp_path, seed=11)
    exercise, assignment = results[entry.name]
    assert exercise.name == "sliding_window_mask" and exercise.score < exercise.max_score
    assert assignment.score < assignment.max_score
    assert "window" in exercise.feedback or "None" in exercise.feedback


@pytest.fixture(scope="module")
def unnamed_graded(course, grader, tmp_path_factory):
    """The mistakes no id describes, graded on two seeds, many to a run (corpus.batches: no two on one exercise,
    nor on exercises that use one another), each run on the exercises its entries touch."""
    return {seed: corpus.grade_all(corpus.unnamed(), course, grader, tmp_path_factory.mktemp(f"unnamed{seed}"),
                                   seed=seed, quick=True) for seed in (3, 11)}


@pytest.mark.slow
@pytest.mark.parametrize("entry", corpus.unnamed(), ids=lambda e: e.name)
def test_a_mistake_no_id_describes_loses_points_and_gets_no_name(unnamed_graded, entry):
    """Issue 19, item 6: an SWA that applies no window on cached calls was named window-off-by-one from
    the one case its output happened to match; another failing case contradicts that, so no id."""
    for seed, graded in unnamed_graded.items():
        exercise, _ = graded[entry.name]
        assert exercise.score < exercise.max_score, seed
        assert exercise.misconceptions == [], (seed, exercise.feedback)


# a helper's mistake that shows in the exercises using it as a raise, a dtype, a gradient that cannot be
# computed, or a cached call after the weights changed: each is charged in the helper's exercise only
ONCE = ["wrong-dtype/float_mask", "input-mutated/shift_in_place", "view-on-non-contiguous/merge_transpose_view",
        "cache-position-not-advanced/window_mask_triu_from_origin", "wrong-dtype/blind_06_repeat_kv_zeros_buffer",
        "wrong-dtype/blind_06_sliding_window_mask_float_ones", "view-on-non-contiguous/blind_06_repeat_kv_view_merge"]


@pytest.mark.slow
@pytest.mark.parametrize("name", ONCE)
def test_a_helper_mistake_costs_once_however_it_shows_in_the_exercises_using_it(course, grader, tmp_path, name):
    entry = next(e for e in corpus.mistakes() if e.name == name)
    exercise, assignment = corpus.grade_all([entry], course, grader, tmp_path, seed=5)[entry.name]
    assert exercise.score < exercise.max_score and entry.misconception in exercise.misconceptions
    others = [e for e in assignment.exercises if e.name != entry.exercise]
    assert all(e.status == "passed" for e in others), [(e.name, e.feedback[:300]) for e in others if e.status != "passed"]
    users = [e for e in others if f"given your {entry.exercise}" in e.feedback]
    assert users, "no exercise of the assignment uses the helper: the case shows nothing"


@pytest.mark.slow
@pytest.mark.parametrize("seed", [3, 2024])
def test_forgiveness_names_the_helper_where_the_mistake_is_never_an_exercise_that_passed(course, grader, tmp_path,
                                                                                         seed):
    """Issue 32: with the softmax's dimension wrong in attention_weights, copy_v2_weights_into_v1 said
    "your SelfAttention_v1 is wrong ... fix the SelfAttention_v1 exercise" while SelfAttention_v1 passed."""
    entry = next(e for e in corpus.mistakes() if e.name == "softmax-wrong-dim/weights_over_queries")
    _, assignment = corpus.grade_all([entry], course, grader, tmp_path, seed=seed)[entry.name]
    by_name = {e.name: e for e in assignment.exercises}
    assert by_name["attention_weights"].status != "passed"
    for name, exercise in by_name.items():
        blamed = {m for m in re.findall(r"fix the (\w+) exercise", exercise.feedback)}
        passed = {other for other in blamed if by_name[other].status == "passed"}
        assert not passed, (name, exercise.feedback[:500])
    assert "given your attention_weights" in by_name["copy_v2_weights_into_v1"].feedback


@pytest.mark.slow
def test_an_inverted_mask_is_named_on_every_seed_even_where_it_leaves_a_query_no_key(course, grader, tmp_path):
    """Issue 32: masked_fill(~mask, -inf) was named mask-inverted only on the seeds whose random mask left
    no query without keys once inverted; on the others (seed 4) the NaN it gives there was put down to
    the softmax (no id). The name and the score must not move with the seed."""
    entry = next(e for e in corpus.mistakes() if e.name == "mask-inverted/masked_fill_not_mask_nan_rows")
    seen = set()
    for seed in (1, 4, 9):
        exercise, assignment = corpus.grade_all([entry], course, grader, tmp_path / str(seed), seed=seed)[entry.name]
        assert exercise.misconceptions == ["mask-inverted"], (seed, exercise.feedback[:600])
        seen.add(assignment.score)
    assert len(seen) == 1, seen


# a blind learner's attempts (tests/corpus/learner/notes.md) that break the contract yet score full
# marks today: issue 34's to catch; strict, so that catching one says so here
# a float32 start is the right dtype and device on a CPU (float32 + float64 gives float64): the mistake
# shows only on CUDA, where the CPU zeros meet the inputs' device
# learner_3_68: attention_scores_for_query vectorised where its row says "written as a loop over rows": a
# right output, and the contract's checks are forbidden operations and vectorisation, not loops asked for
# round 4 (notes_4.md): what the contract leaves open. torch.softmax in simple_self_attention (forbidden
# in softmax alone); how v1's parameters are drawn and in which order a class creates its layers (the
# grader loads the weights by name); 04's mask as a plain attribute (a buffer is CausalAttention's rule);
# an AssertionError for indivisible heads (accepted); a device ignored and float32 accumulators on half
# inputs (both show on CUDA, where the hidden suite catches them: tests/grader/test_gpu.py)
LEARNER_FALSE_PASSES = {"learner_01_context_vector_loop_zeros_float32",
                        "learner_3_68_attention_scores_for_query_matmul_not_loop",
                        "learner_4a_14_simple_self_attention_uses_torch_softmax",
                        "learner_4a_19_SelfAttention_v1_randn_init",
                        "learner_4a_39_padding_mask_arange_ignores_device",
                        "learner_4a_42_causal_mask_device_ignored",
                        "learner_4a_51_SelfAttention_v1_wrong_creation_order",
                        "learner_4b_13_MultiHeadAttention_out_proj_created_first",
                        "learner_4b_14_MultiHeadAttention_mask_plain_attribute",
                        "learner_4b_15_MultiHeadAttention_assert_divisible",
                        "learner_4b_72_flash_attention_float32_state"}


@pytest.mark.slow
def test_a_blind_learners_final_versions_score_full_marks_on_two_seeds(course, grader, tmp_path):
    entries = corpus.learner("correct")
    assert len(entries) >= 30
    for seed in (2024, 5):
        results = corpus.grade_all(entries, course, grader, tmp_path / str(seed), seed=seed, quick=True)
        lost = {name: exercise.feedback[:300] for name, (exercise, _) in results.items() if exercise.status != "passed"}
        assert not lost, (seed, lost)


@pytest.mark.slow
def test_a_blind_learners_wrong_attempts_each_lose_points(course, grader, tmp_path):
    entries = corpus.learner("attempts")
    assert len(entries) >= 60
    results = corpus.grade_all(entries, course, grader, tmp_path, seed=2024, quick=True)
    passed = {name.split("/")[-1] for name, (exercise, _) in results.items() if exercise.status == "passed"}
    assert passed == LEARNER_FALSE_PASSES


@pytest.mark.slow
def test_a_missing_scale_costs_the_same_on_every_seed(course, grader, tmp_path):
    """Issue 32: 02's large-scores check drew keys whose weights came out one-hot on most seeds, where a
    missing scale passes: 2.4/20 on those, 0.8/20 on the others. Its keys now sit near one another."""
    entry = next(e for e in corpus.mistakes() if e.name == "missing-scale/plain_softmax_of_scores")
    scores = {corpus.grade_all([entry], course, grader, tmp_path / str(seed), seed=seed)[entry.name][0].score
              for seed in (1, 2, 8, 14)}  # 8 and 14: 0.8 before, the others 2.4
    assert len(scores) == 1, scores


# round 4 (tests/corpus/learner/notes_4.md): each of these cost a second exercise, the one that uses it
ROUND_4_CHARGED_TWICE = ["learner_4a_09_softmax_max_returns_tuple", "learner_4a_20_SelfAttention_v2_linear_bias_default",
                         "learner_4a_24_SelfAttention_v1_plain_tensors_not_parameters",
                         "learner_4b_76_split_heads_no_transpose", "learner_4b_51_sliding_window_mask_ignores_starts"]


@pytest.mark.slow
@pytest.mark.parametrize("suite", ["hidden", "public"])
def test_a_learners_helper_mistake_costs_its_own_exercise_only(course, grader, tmp_path, suite):
    """A softmax that raises, a v2 or v1 with other parameters, a split_heads without its transpose: the
    exercises that use them are right with a right helper in its place (grader/grading/stand_ins.py), so
    they keep their points; a sliding_window_mask ignoring its starts, on calls the classes make that the
    public suite now grades in its own exercise."""
    entries = [e for e in corpus.learner("attempts") if e.name.split("/")[-1] in ROUND_4_CHARGED_TWICE]
    assert len(entries) == len(ROUND_4_CHARGED_TWICE)
    for entry in entries:  # one at a time: each is judged by the other exercises of its assignment
        exercise, assignment = corpus.grade_all([entry], course, grader, tmp_path / entry.path.stem, seed=2024,
                                                suite=suite)[entry.name]
        assert exercise.score < exercise.max_score, entry.name
        charged = {e.name: e.feedback[:300] for e in assignment.exercises if e.name != entry.exercise
                   and e.score < e.max_score}
        assert charged == {}, entry.name


TWO_WRONG_HELPERS = '''"""simple_self_attention: both helpers wrong (issue 45)"""
import torch


def softmax(x, dim=-1):
    exp = torch.exp(x)
    return exp / exp.sum(dim=0, keepdim=True)


def attention_scores(inputs):
    return inputs @ inputs.transpose(-2, -1) / inputs.shape[-1] ** 0.5


def simple_self_attention(inputs):
    return softmax(attention_scores(inputs), dim=-1) @ inputs{own}
'''


@pytest.mark.slow
def test_a_right_exercise_on_two_wrong_helpers_costs_once_and_its_own_mistake_does_not_hide(course, grader,
                                                                                             tmp_path):
    """Issue 45: a right simple_self_attention scored 3.81/20 when both softmax and attention_scores were
    wrong (20/20 with one). It keeps its points once verified with right helpers in place of both; the same
    code with a mistake of its own (a factor) is not forgiven."""
    entries = []
    for name, own in (("right", ""), ("own_mistake", " * 1.5")):
        path = tmp_path / name / "two.py"
        path.parent.mkdir()
        path.write_text(TWO_WRONG_HELPERS.replace("{own}", own))
        entries.append(corpus._entry(path, None))
    right = corpus.grade_all(entries[:1], course, grader, tmp_path / "run")[entries[0].name][0]
    assert right.score == right.max_score, right.feedback[:600]
    assert "given your attention_scores" in right.feedback and "given your softmax" in right.feedback
    wrong = corpus.grade_all(entries[1:], course, grader, tmp_path / "run2")[entries[1].name][0]
    assert wrong.score < wrong.max_score / 2, wrong.feedback[:600]


IN_PLACE_SOFTMAX = '''"""softmax: right output, but an in-place division of exp's output breaks autograd (issue 46)"""
import torch


def softmax(x, dim=-1):
    shift = x.amax(dim=dim, keepdim=True)
    shift = torch.where(torch.isinf(shift), torch.zeros_like(shift), shift)
    exp = torch.exp(x - shift)
    exp /= exp.sum(dim=dim, keepdim=True).clamp_min(1.0)
    return exp
'''


@pytest.mark.slow
def test_a_right_forward_whose_backward_fails_keeps_the_forwards_share(course, grader, tmp_path):
    path = tmp_path / "in_place.py"
    path.write_text(IN_PLACE_SOFTMAX)
    entry = corpus._entry(path, None)
    exercise, _ = corpus.grade_all([entry], course, grader, tmp_path / "run")[entry.name]
    assert 0.4 * exercise.max_score <= exercise.score < exercise.max_score, exercise.feedback[:600]
    assert "keeps half its points (the forward's share)" in exercise.feedback
