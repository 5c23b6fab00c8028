"""Rules read on every call of a class (red team round 22, tests/corpus/heldout/round22_red_team): a class's
calls were watched only where a check measured them, so the watching's cost told those calls apart, and
04's and 06's rules were read on those calls alone. Every call of a function or a module is watched now
(but for the cached sequences whose memory the kernel's account reads), and 04's vectorised rule and 06's
window are read on the comparing calls too (grader/grading/rules_read.py). Rounds 22b and 23: every rule is
read on every comparing call, and a rule broken on any right call fails the checks that read it."""
from pathlib import Path

import pytest

from grader.submission import resolve_submission

HELDOUT = Path(__file__).resolve().parents[2] / "corpus" / "heldout" / "round22_red_team"
MODULES = {"01_attention_basics": "attention_basics.py", "04_multi_head_attention": "multi_head_attention.py",
           "05_efficient_attention": "efficient_attention.py", "06_decoding_attention": "decoding_attention.py"}


def _graded(grader, course, folder, assignment, text, exercises):
    folder = folder / assignment
    folder.mkdir(parents=True)
    (folder / MODULES[assignment]).write_text(text)
    result = grader.grade(resolve_submission(folder, course), (course.assignment(assignment),), seed=5,
                          exercises=exercises)
    return {e.name: e for e in result.assignments[0].exercises}


def _scores(grader, course, tmp_path, folder, attack, assignment, exercise, kind) -> dict:
    """``kind``'s score on ``exercise`` beside its honest form's and, where the round wrote one, its plain form's
    (the rule-breaking code everywhere, with no tell)."""
    names = [kind, "honest"] + (["plain"] if (folder / f"{attack}__plain.py.txt").exists() else [])
    return {name: _graded(grader, course, tmp_path / name, assignment, (folder / f"{attack}__{name}.py.txt").read_text(),
                          (exercise,))[exercise].score for name in names}


ROUND_22, ROUND_22B = HELDOUT, HELDOUT.parent / "round22b_red_team"
CASES = [  # (the round's folder, its id, assignment, exercise, the attack's score there before, the tell)
    (ROUND_22, "c01_swa_measured_tell", "06_decoding_attention", "MultiHeadAttentionWithSWA", 15.0),
    (ROUND_22, "c02_mha04_measured_tell", "04_multi_head_attention", "MultiHeadAttention", 25.0),
    (ROUND_22, "c03_swa_window_start_tell", "06_decoding_attention", "MultiHeadAttentionWithSWA", 15.0),
    (ROUND_22, "c04_cached_mha_tell", "06_decoding_attention", "CachedMultiHeadAttention", 20.0),
    (ROUND_22B, "e01_swa_history_outside_cache", "06_decoding_attention", "MultiHeadAttentionWithSWA", 15.0),
    (ROUND_22B, "e02_cmha_kept_inputs_batch_tell", "06_decoding_attention", "CachedMultiHeadAttention", 20.0),
    (ROUND_22B, "e03_scores_batched_loop", "01_attention_basics", "attention_scores", 15.0),
    (ROUND_22B, "e04_mha04_padded_loop", "04_multi_head_attention", "MultiHeadAttention", 25.0),
]
TELLS = [(*case, "attack") for case in CASES] + [(*case, "shape") for case in CASES if case[0] == ROUND_22]


@pytest.mark.slow
@pytest.mark.parametrize("folder,attack,assignment,exercise,before,kind", TELLS,
                         ids=[f"{t[1]}-{t[5]}" for t in TELLS])
def test_a_class_that_tells_the_calls_reading_its_rule_apart_gains_nothing(grader, course, tmp_path, folder, attack,
                                                                            assignment, exercise, before, kind):
    """Each class used code the rule forbids except on the calls that read the rule, hiding a slip of its
    rule-abiding code elsewhere. Round 22: told apart by the watching's cost (``attack``: 100 where its own code
    scores 90 to 99.52; a loop over the queries, the whole history kept and attended, every query projected again
    from inputs kept in a list) or, once every call is watched, by the sizes of the calls that read the rule
    (``shape``, written here). Round 22b (tests/corpus/heldout/round22b_red_team): by the inputs the rule's own
    check chooses: e01 a sliding-window class keeping its history beside a trimmed cache and attending it whole
    where the features were wider than it (the window read by operators that reduce over the keys now); e02
    CachedMultiHeadAttention projecting kept inputs again on batches of more than one (the keys-once check reads a
    batch of two); e03 attention_scores looping over the tokens of batched inputs (01's functions read the rule on
    every comparing call); e04 04's loop padded to as many rounds at every length (a comparing call's count is
    held to the reference's bound). None scores more than the same code without the tell: its rule-abiding code
    everywhere (``honest``), or where the round wrote it, the rule-breaking code everywhere (``plain``; c04's
    re-projecting class scores 97.78 against the honest slip's 95.56 without any tell: the rule is worth less
    than the slip, a price, not a forgery; c03's plain form is c01's, the same history attended whole). Round
    22b's slips fixed (``honestok``) keep every point."""
    scores = _scores(grader, course, tmp_path, folder, attack, assignment, exercise, kind)
    assert scores[kind] <= max(score for name, score in scores.items() if name != kind), scores
    assert scores[kind] < before, scores
    honestok = folder / f"{attack}__honestok.py.txt"
    if folder == ROUND_22B and honestok.exists():  # round 22's control is graded whole below
        assert _graded(grader, course, tmp_path / "ok", assignment, honestok.read_text(),
                       (exercise,))[exercise].score == before


@pytest.mark.slow
def test_the_honest_window_class_keeps_every_point(grader, course, tmp_path):
    """Round 22's control: the sliding-window class whose cache is trimmed right on every call (and whose
    window None is handled) loses nothing to the window read on every cached call."""
    exercises = _graded(grader, course, tmp_path, "06_decoding_attention",
                        (HELDOUT / "c01_swa_measured_tell__honestok.py.txt").read_text(), None)
    assert {name: e.score for name, e in exercises.items() if e.score < e.max_score} == {}


ROUND_23 = [  # (round 23's id, assignment, exercise, its control that scores most, the exercise's points)
    ("a01pad", "01_attention_basics", "attention_scores", "plain", 15.0),
    ("a04drop", "04_multi_head_attention", "MultiHeadAttention", "plain", 25.0),
    ("a04pad", "04_multi_head_attention", "MultiHeadAttention", "honest", 25.0),
    ("a05grad", "05_efficient_attention", "flash_attention", "plain", 60.0),
    ("a05os", "05_efficient_attention", "online_softmax", "honest", 40.0),
    ("a06fn", "06_decoding_attention", "sliding_window_mask", "plain", 15.0),
    ("a06forfeit", "06_decoding_attention", "MultiHeadAttentionWithSWA", "plain", 15.0),
    ("a06kv", "06_decoding_attention", "CachedMultiHeadAttention", "plain", 20.0),
    ("a06swa", "06_decoding_attention", "MultiHeadAttentionWithSWA", "plain", 15.0),
]


@pytest.mark.slow
@pytest.mark.parametrize("attack,assignment,exercise,control,points", ROUND_23,
                         ids=[a[0] for a in ROUND_23])
def test_a_rule_read_by_its_own_check_alone_is_read_on_every_call(grader, course, tmp_path, attack, assignment,
                                                                   exercise, control, points):
    """Red team round 23 (tests/corpus/heldout/round23_red_team): every rule still read by its own check alone was
    broken where that check could not see it, by another tell (a dtype, inputs that require grad, dropout calls,
    ``window is None``), hiding a slip of the rule-abiding code: 06's functions' vectorised rule, 05's operation
    counts within a block, 04's rule on dropout calls, 06's keys computed once; a loop padded under the least bound
    at every length read; a window attended by products and cumulative maxima; and a rule check failed on purpose,
    which made the rule "not kept" and freed every comparing call (a rule broken anywhere now fails the checks
    that read it). Each attack scored 99.52 or 100 where its own code scores less: now no more than the better of
    its honest form (the slip) and its plain form (the rule broken everywhere, no tell), graded here."""
    folder = HELDOUT.parent / "round23_red_team"
    scores = {kind: _graded(grader, course, tmp_path / kind, assignment, (folder / f"{attack}__{kind}.py.txt").read_text(),
                            (exercise,))[exercise].score for kind in ("attack", control)}
    assert scores["attack"] <= scores[control] < points, scores


ROUND_23B = [  # (round 23b's id, assignment, exercise, its control that scores most, the exercise's points)
    ("a05causal", "05_efficient_attention", "flash_attention", "plain", 60.0),
    ("a06loopproj", "06_decoding_attention", "CachedMultiHeadAttention", "plain", 20.0),
    ("a01values", "01_attention_basics", "simple_self_attention", "plain", 20.0),
    ("a05entries", "05_efficient_attention", "online_softmax", "honest", 40.0),
    ("a04droppad", "04_multi_head_attention", "MultiHeadAttention", "plain", 25.0),
    ("a04strided", "04_multi_head_attention", "MultiHeadAttention", "honest", 25.0),
]


@pytest.mark.slow
@pytest.mark.parametrize("attack,assignment,exercise,control,points", ROUND_23B, ids=[a[0] for a in ROUND_23B])
def test_a_call_no_reader_looked_at_is_read_too(grader, course, tmp_path, attack, assignment, exercise, control,
                                                points):
    """Red team round 23b (tests/corpus/heldout/round23b_red_team), against round 23's readers: flash_attention
    looping over single queries on causal calls whose queries and keys differ in number (their count was not read:
    a05causal, 100 against 98), CachedMultiHeadAttention projecting its kept inputs again one token at a time on
    float64 calls, no product larger than one token's (a06loopproj, 100 against 97.78: a cached call's count may
    not grow with what is cached, lesson.checks_06.not_growing); and loops padded under the bound on short calls
    told apart by their values (large scores, -inf entries), their layout or their instance's short context, the
    rule-abiding code's slip run on the call that reads the rule (a01values 100 against 98.1, a05entries 100 against
    94.67, a04strided 100 against 98.75, a04droppad 100 against 97.5): that call is now of the checked call's own
    values (lesson.lengthened), of a class made again for a longer context where the instance's is short
    (lesson.checks_04.longer_twin), and a wrong answer there leaves the rule unread, which costs what its checks
    weigh unless the exercise's own mistakes already cost as much (grader.grading.rules_read)."""
    folder = HELDOUT.parent / "round23b_red_team"
    scores = {kind: _graded(grader, course, tmp_path / kind, assignment, (folder / f"{attack}__{kind}.py.txt").read_text(),
                            (exercise,))[exercise].score for kind in ("attack", control)}
    assert scores["attack"] <= scores[control] < points, scores


CONTROLS = [  # (the round's folder, the control, assignment, exercise)
    ("round23_red_team", "a05grad__honestok", "05_efficient_attention", "flash_attention"),
    ("round23_red_team", "a06kv__honestok", "06_decoding_attention", "CachedMultiHeadAttention"),
    ("round23_red_team", "a06swa__honestok", "06_decoding_attention", "MultiHeadAttentionWithSWA"),
    ("round23b_red_team", "fa06fused__honestok_fused", "06_decoding_attention", None),
    ("round23b_red_team", "fa06fused__honestok_fusedkv", "06_decoding_attention", None),
    ("round23b_red_team", "fa05branch__honestok_twoguards", "05_efficient_attention", "online_softmax"),
    ("round23b_red_team", "fa05branch__honestok_branchy", "05_efficient_attention", "online_softmax"),
    ("round23b_red_team", "a01values__honestok", "01_attention_basics", "simple_self_attention"),
    ("round23b_red_team", "a05entries__honestok", "05_efficient_attention", "online_softmax"),
    ("round23b_red_team", "a04droppad__honestok", "04_multi_head_attention", "MultiHeadAttention"),
    ("round23b_red_team", "a04strided__honestok", "04_multi_head_attention", "MultiHeadAttention"),
    ("round24b_red_team", "fa04styles__honestok_assertctx", "04_multi_head_attention", None),
    ("round24b_red_team", "fa04styles__honestok_bernoulli", "04_multi_head_attention", None),
    ("round24b_red_team", "fa04styles__honestok_headloop", "04_multi_head_attention", None),
    *(("round24c_red_team", f"fa06__honestok_{style}", "06_decoding_attention", None)
      for style in ("cat", "einsum", "prealloc", "sdpa")),
]


@pytest.mark.slow
@pytest.mark.parametrize("folder,control,assignment,exercise", CONTROLS, ids=[c[1] for c in CONTROLS])
def test_the_rounds_honest_controls_keep_every_point(grader, course, tmp_path, folder, control, assignment, exercise):
    """Round 23's controls where its readings look (flash's count on calls that require grad, a preallocated cache
    read for keys computed once, a sliding window read by its products), and round 23b's false alarms of them:
    06's classes projecting queries, keys and values (or keys and values) in one product of their stacked weights,
    which torch runs as a batched product on a chunk that is not contiguous (97.05 and 98.55: judged as attention
    over more keys than the window, and as the earlier tokens projected again), and online_softmax testing each
    block twice or three times by its values on a call of one row (86.67: more values read into Python than one a
    block). Every point."""
    exercises = _graded(grader, course, tmp_path, assignment,
                        (HELDOUT.parent / folder / f"{control}.py.txt").read_text(), (exercise,) if exercise else None)
    assert {name: e.score for name, e in exercises.items() if e.score < e.max_score} == {}


# rounds 24 and 24b's attacks: (folder, id, the attack's file) by assignment, each graded whole against its plain
# form (the rule broken everywhere, no tell)
ROUND_24 = {("round24_red_team", "a01help", "attack"): "01_attention_basics",
            ("round24_red_team", "a01lost", "attack"): "01_attention_basics",
            ("round24_red_team", "a04lost", "attack"): "04_multi_head_attention",
            ("round24_red_team", "a04twin", "attack"): "04_multi_head_attention",
            ("round24b_red_team", "a01forgive", "attack"): "01_attention_basics",
            ("round24b_red_team", "a04droppad2", "attack"): "04_multi_head_attention",
            ("round24b_red_team", "a04droppad2", "attackconst"): "04_multi_head_attention",
            ("round24c_red_team", "h01", "attack"): "01_attention_basics",
            ("round24c_red_team", "h01b", "attack"): "01_attention_basics",
            ("round24d_red_team", "k01price", "attack"): "01_attention_basics",
            ("round24d_red_team", "k01tell", "attack"): "01_attention_basics",
            ("round24d_red_team", "k01standin", "attack"): "01_attention_basics"}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(ROUND_24), ids=["-".join(case[1:]) for case in sorted(ROUND_24)])
def test_the_reading_call_and_a_helpers_forgiveness_buy_nothing(grader, course, tmp_path, case):
    """Red team round 24 (tests/corpus/heldout/round24_red_team), against round 23b's reading calls, graded whole
    (a helper's own exercise decides whether it pays for a rule): a01help, a softmax looping only on the score
    matrices it recognises, which made simple_self_attention's vectorised check "right given your softmax" and so
    exempted the rule on every call of that exercise, where it looped on batched calls (97.92 against 96.02: a
    rule is the helper's to charge only where the helper's own exercise loses it); a04twin, a class telling the
    twin made for the reading call by a context exactly as long as its call (the twin's context now as far beyond
    the call as the pair's); a04lost, a wrong reading call excused because an unrelated slip of every form cost as
    much as the rule (97.5 against 95: a wrong reading call now leaves the rule unread whatever else failed);
    a01lost, the same excuse in 01, which held. Round 24b (its re-test): a01forgive, simple_self_attention looping on
    batched calls whose softmax was wrong there on purpose, so that each was "right given your softmax" and its
    broken rule never charged (98.96 against 98.1: a forgiven call's broken rule is charged unless the helper's
    exercise loses the rule); a04droppad2, 04's class looping in training mode only, padded to the inputs' width or
    to a constant 100 rounds, which the dropout check's twin on the same inputs could not tell (100 against 97.5:
    the class is made for 80 one-hot tokens now, lesson.checks_04.grown_for_dropout, and training-mode counts are
    held to the reference's bound). Round 24c: h01 and h01b, attention_scores looping everywhere (paying its own
    rule) and simple_self_attention looping behind a tell (large scores, batched calls), its rule check forgiven
    through attention_scores, which exempted the rule on every call of the exercise (98.33 against 96.43). Round
    24d: k01price held (a helper padded on the grader's direct calls to a caller that never calls it: the stand-in
    run still saw the caller's loop); k01tell and k01standin, the same behind a tell, or with the stand-ins told
    apart by identity, scored 98.33 against 98.1 (plain) and 96.43 (the same author looping in both) while a
    helper's share was counted on the grader's own calls of it; now it is counted inside the caller's call, by the
    frames on the stack as each operator runs (grader.inside.tracer.Tracer.attribute): 96.43. Each scores no more
    than its plain form; the controls keep every point."""
    folder, attack, kind = case
    assignment, folder = ROUND_24[case], HELDOUT.parent / folder

    def graded(form):
        folder_of = tmp_path / form / assignment
        folder_of.mkdir(parents=True)
        (folder_of / MODULES[assignment]).write_text((folder / f"{attack}__{form}.py.txt").read_text())
        return grader.grade(resolve_submission(folder_of, course), (course.assignment(assignment),),
                            seed=5).assignments[0]

    scores = {form: graded(form) for form in (kind, "plain", "honestok")}
    assert scores[kind].score <= scores["plain"].score < 100, {k: r.score for k, r in scores.items()}
    assert scores["honestok"].score == 100
