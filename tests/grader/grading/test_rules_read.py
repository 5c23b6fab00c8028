"""Rules read on every call (grader/grading/rules_read.py): a rule broken on a right comparing call fails the
checks that read it; where one of them finds it broken itself, that is the mistake's one cost."""
import dataclasses
import textwrap
from pathlib import Path

import pytest

from grader.grading.rules_read import kept_where_read
from grader.results import CheckOutcome, ExerciseResult
from grader.submission import resolve_submission


def _exercise(rule_check_status: str, *, broken_in_passed=True) -> ExerciseResult:
    return ExerciseResult("online_softmax", 40, [
        CheckOutcome("random", 2, "passed", rules_broken=(("block rule", "an operation reduced 20 entries"),)
                     if broken_in_passed else ()),
        CheckOutcome("wrong_too", 2, "failed", "your output is wrong", rules_broken=(("block rule", "reduced 20"),)),
        CheckOutcome("other_rule", 2, "passed", rules_broken=(("score matrix", "the whole matrix"),)),
        CheckOutcome("walks_over_blocks", 2, rule_check_status, rules_read=("block rule",)),
    ])


def test_a_rule_broken_on_a_right_comparing_call_fails_the_checks_that_read_it():
    exercise = kept_where_read([_exercise("passed")])[0]
    by_name = {c.name: c for c in exercise.checks}
    assert by_name["walks_over_blocks"].status == "failed" and not by_name["walks_over_blocks"].verified
    assert by_name["walks_over_blocks"].message.startswith("an operation reduced 20 entries. That call's answer came "
                                                           "from code that breaks the rule this check reads")
    assert by_name["random"].status == "passed"  # a right answer keeps its points: the rule costs its checks
    assert by_name["wrong_too"].message == "your output is wrong"  # its own mistake is what it says
    assert by_name["other_rule"].status == "passed"  # a rule no check here reads
    assert exercise.score == 20.0  # two of four checks of equal weight


def test_a_rule_broken_where_read_costs_once():
    exercise = kept_where_read([_exercise("failed")])[0]
    assert [c.status for c in exercise.checks] == ["passed", "failed", "passed", "failed"]
    assert exercise.checks[0].message == ""


def test_a_rule_broken_only_on_a_wrong_or_forgiven_call_costs_nothing_more():
    """A wrong answer is its own cost; a call right only given the student's faulty helper broke the rule by that
    helper, whose own exercise charges it (where it loses that rule: round 24b, below)."""
    assert [c.status for c in kept_where_read([_exercise("passed", broken_in_passed=False)])[0].checks] == \
        ["passed", "failed", "passed", "passed"]
    exercise = _exercise("passed")
    exercise.checks[0] = dataclasses.replace(exercise.checks[0], forgiven_by="softmax")
    softmax = ExerciseResult("softmax", 25, [CheckOutcome("walks", 2, "failed", rules_read=("block rule",))])
    assert kept_where_read([softmax, exercise])[1].checks[3].status == "passed"


def _unverified(own_status: str, own_weight: float = 2) -> ExerciseResult:
    """A comparing check whose reading call (the same call of its own values on more tokens) answered wrong, beside
    the rule's own check (weight 2) and one check of the exercise's own cases."""
    return ExerciseResult("simple_self_attention", 20, [
        CheckOutcome("large_scores", 2, "passed", rules_unverified=(("vectorised", "the same call on 80 tokens was "
                                                                                  "not right"),)),
        CheckOutcome("random", own_weight, own_status, "" if own_status == "passed" else "your output is wrong"),
        CheckOutcome("not_growing", 2, "passed", rules_read=("vectorised",)),
    ])


def test_a_rule_its_reading_call_could_not_read_fails_the_checks_that_read_it():
    """Red team round 23b: a loop padded under the bound on short calls told apart by their values, the
    rule-abiding code's slip run on the call that reads the rule (of the same values, longer), whose wrong answer
    was no one's to charge: unverified, the rule costs what its checks weigh, and right answers keep theirs."""
    exercise = kept_where_read([_unverified("passed")])[0]
    assert [c.status for c in exercise.checks] == ["passed", "passed", "failed"]
    assert exercise.checks[2].message.startswith("the same call on 80 tokens was not right. This check reads that "
                                                 "rule on every call")


def test_a_wrong_reading_call_leaves_the_rule_unread_whatever_else_failed():
    """Red team round 24 (a04lost): an excuse where the exercise's other failures cost as much as the rule let an
    unrelated slip, shared by every form of the code, free a loop run only on short calls. A measured property
    earns only with a right answer, on the comparing calls as in the rule's own checks."""
    for own_weight in (1, 2, 5):
        assert [c.status for c in kept_where_read([_unverified("failed", own_weight)])[0].checks] == \
            ["passed", "failed", "failed"]


def _forgiven(helper_keeps_the_rule: bool) -> list:
    """simple_self_attention's rule check kept as right given the student's softmax, a comparing call of it
    breaking the rule by the softmax's counts alone, and softmax's own exercise keeping or losing the rule."""
    softmax = ExerciseResult("softmax", 25, [
        CheckOutcome("large_values", 2, "failed", "NaN"),
        CheckOutcome("softmax_vectorised", 2, "passed" if helper_keeps_the_rule else "failed",
                     rules_read=("vectorised",))])
    attention = ExerciseResult("simple_self_attention", 20, [
        CheckOutcome("batched", 2, "passed", rules_broken=(("vectorised", "it grew on 80 tokens", ("softmax",)),)),
        CheckOutcome("not_growing", 2, "passed", rules_read=("vectorised",), forgiven_by="softmax")])
    return kept_where_read([softmax, attention])


def test_a_call_kept_as_right_given_a_helper_breaks_a_rule_the_helper_keeps():
    """Red team round 24b (a01forgive): a softmax wrong on purpose on the score matrices of the calls where
    simple_self_attention looped made each of those calls "right given your softmax", and a forgiven call's broken
    rule was never charged. It is, unless the helper's own exercise loses that rule."""
    for helper_keeps_the_rule, charged in ((True, True), (False, False)):
        exercises = _forgiven(helper_keeps_the_rule)
        exercises[1].checks[0] = dataclasses.replace(exercises[1].checks[0], forgiven_by="softmax")
        exercises[1].checks[1] = dataclasses.replace(exercises[1].checks[1], forgiven_by="")
        assert (kept_where_read(exercises)[1].checks[1].status == "failed") is charged


def test_a_rule_broken_by_the_helpers_alone_is_theirs_where_they_lose_it():
    """Red team round 24c (h01): attention_scores looping everywhere, paying its own rule, and simple_self_attention
    looping behind a tell, its rule check forgiven through attention_scores, which exempted the rule on every call
    of the exercise. A break is the helpers' only where their counts on the same calls account for it
    (``(rule, how, helpers)``, lesson.vectorised_on) and they lose the rule; the caller's own loop is charged."""
    def graded(by):
        scores = ExerciseResult("attention_scores", 15, [CheckOutcome("scores_vectorised", 2, "failed",
                                                                      rules_read=("vectorised",))])
        attention = ExerciseResult("simple_self_attention", 20, [
            CheckOutcome("large_scores", 2, "passed", rules_broken=(("vectorised", "it grew", *by),)),
            CheckOutcome("not_growing", 2, "passed", rules_read=("vectorised",), forgiven_by="attention_scores")])
        return kept_where_read([scores, attention])[1].checks[1].status

    assert graded((("attention_scores",),)) == "passed"  # the helper's loop alone: the helper pays, once
    assert graded(()) == "failed"  # the caller's own loop, whatever forgave its rule check
    assert graded((("softmax",),)) == "failed"  # a helper that keeps the rule in its own exercise pays nothing


def test_a_rule_broken_by_a_helper_that_keeps_it_says_where_the_loop_is():
    """Session 22 (the corpus's correct softmax that loops over the entries of its dim, seeds 2 to 21):
    simple_self_attention, whose own code has no loop, loses its rule check for the helper's loop; its feedback
    names that helper, where it told the student to vectorise code that was vectorised already."""
    attention = ExerciseResult("simple_self_attention", 20, [
        CheckOutcome("large_scores", 2, "passed", rules_broken=(("vectorised", "it made 737 operations",
                                                                 ("softmax",)),)),
        CheckOutcome("not_growing", 2, "passed", rules_read=("vectorised",))])
    check = kept_where_read([attention])[0].checks[1]
    assert check.status == "failed"
    assert "run inside your softmax, which simple_self_attention calls" in check.message
    own = ExerciseResult("simple_self_attention", 20, [
        CheckOutcome("large_scores", 2, "passed", rules_broken=(("vectorised", "it made 737 operations"),)),
        CheckOutcome("not_growing", 2, "passed", rules_read=("vectorised",))])
    assert "inside your" not in kept_where_read([own])[0].checks[1].message  # its own loop: nothing more said


def test_a_rule_is_a_helpers_to_charge_only_where_the_helpers_exercise_loses_it():
    """Red team round 24 (a01help): a softmax looping only on the score matrices it recognises made the rule check
    of simple_self_attention right given that softmax, which exempted the rule on every call there. The helper
    pays for a rule it loses in its own exercise (the exemption stands: a mistake costs once); a rule it keeps
    there is the exercise's own."""
    assert _forgiven(helper_keeps_the_rule=False)[1].checks[1].status == "passed"
    kept = _forgiven(helper_keeps_the_rule=True)[1].checks[1]
    assert kept.status == "failed" and kept.message.startswith("it grew on 80 tokens")


PLAIN = '''

def online_softmax(x, block_size):
    return torch.softmax(x, dim=-1).nan_to_num(0.0)
'''


def test_whole_rows_everywhere_lose_the_rule_check_alone(submission_dir, grader, course):
    """Whole rows in every call break the block rule where it is read too: the rule check charges it, and
    every comparing check keeps what its answer earns (each mistake costs once)."""
    module = submission_dir / "05_efficient_attention" / "efficient_attention.py"
    module.write_text(module.read_text() + textwrap.dedent(PLAIN))
    result = grader.grade(resolve_submission(submission_dir, course), (course.assignment("05_efficient_attention"),),
                          seed=5).assignments[0]
    exercise = {e.name: e for e in result.exercises}["online_softmax"]
    failed = {c.name for c in exercise.checks if c.status != "passed"}
    assert "online_softmax_walks_over_blocks" in failed
    assert {c.name for c in exercise.checks if c.status == "passed"} >= {"online_softmax_random",
                                                                         "online_softmax_lesson_scores"}


HELDOUT = Path(__file__).resolve().parents[2] / "corpus" / "heldout"
ROUND_21 = HELDOUT / "round21_red_team"


def _graded(grader, course, folder, text, exercises=None):
    folder = folder / "05_efficient_attention"
    folder.mkdir(parents=True)
    (folder / "efficient_attention.py").write_text(text)
    result = grader.grade(resolve_submission(folder, course), (course.assignment("05_efficient_attention"),),
                          seed=3, exercises=exercises)
    return {e.name: e for e in result.assignments[0].exercises}


@pytest.mark.parametrize("attack", ["round21_red_team/a02_flash_key_tile_gap", "round21_red_team/a03_flash_width_below_tk",
                                    "round21_red_team/a04_key_tile_of_tq", "round21b_red_team/b01_fold_dims",
                                    "round21b_red_team/b03_fold_vs_inplace"])
def test_flash_that_reduces_every_key_where_a_call_cannot_tell_gains_nothing(grader, course, tmp_path, attack):
    """Red team round 21: flash_attention with one softmax over every key where the key-tile rule was judged
    by the widest reduction of all (a test of a whole tile reduces as many): in the gradient calls whose sizes
    could not tell (a02: 92.55 against its own 87.05), over all keys but one where they could (a03: 94.55),
    and with key tiles as wide as the queries everywhere (a04: 100, where its plain form scores 80). Round 21b:
    a query's keys folded into dimensions of a block each and reduced at once (b01: 96, 100 with a tell; b03:
    98 against its own 92.5). The tracer reads the widest reduction of an operator whose result keeps more
    than one entry too (a test of a whole tile reduces it to one), on every call."""
    scores = {kind: _graded(grader, course, tmp_path / kind, (HELDOUT / f"{attack}__{kind}.py.txt").read_text(),
                            ("flash_attention",))["flash_attention"]
              for kind in ("attack", "honest")}
    assert scores["attack"].score <= scores["honest"].score, {k: v.score for k, v in scores.items()}
    if attack.endswith(("a04_key_tile_of_tq", "b01_fold_dims")):
        assert scores["attack"].score <= 40.0
        key_tiles = [c for c in scores["attack"].checks if c.name == "flash_key_tiles"]
        assert all(c.status == "failed" and "for each entry of its result" in c.message for c in key_tiles)


@pytest.mark.parametrize("style", ["round21_red_team/f01_honest__" + s for s in
                                   ("std", "pad", "f64", "keysouter", "tiletest", "batchtiletest")]
                         + ["round21b_red_team/f02_honest__" + s for s in ("flat", "onescol", "validateq")]
                         + ["learner12_05_styles/" + s for s in
                            ("lesson_loops", "kv_outer", "running_lse", "running_lse_f32state", "float64_acc",
                             "padded", "causal_tile_test", "einsum", "flatten_batch", "prealloc_out", "validated")])
def test_block_wise_code_of_every_style_keeps_every_point(grader, course, tmp_path, style):
    """The red team's honest styles (round 21: padding to whole blocks, float64 accumulation, key tiles outside
    the query tiles, causal tiles skipped by a test of the whole tile or of every batch element's; round 21b:
    the batch flattened, the running sum as a column beside the values', a test that the queries are finite,
    which cost 2 points on a call whose keys were fewer than the queries' entries); a blind learner's eleven
    versions, one of which checked its inputs (types named in its errors, ``isnan(x).any()``,
    ``isfinite(keys).all()``) and scored 44.67 where it was right): no rule read on any call costs them a
    point."""
    exercises = _graded(grader, course, tmp_path, (HELDOUT / f"{style}.py.txt").read_text())
    assert {name: e.score for name, e in exercises.items()} == {"online_softmax": 40.0, "flash_attention": 60.0}


def test_a_loop_over_single_queries_reducing_every_key_to_one_entry_loses_the_key_tile_checks(grader, course,
                                                                                               tmp_path):
    """Round 21b's b02: one query at a time, each reduction over every key ending in one entry (max(), sum(),
    dot), beside a test that the queries are finite (as wide in both of the key-tile check's calls): 98, where
    the same computation written plainly scores 80. A reduction to one entry that is not a test (true or false)
    and is not read into Python counts as wide as it is (grader.inside.tracer's ``ones``)."""
    flash = _graded(grader, course, tmp_path, (HELDOUT / "round21b_red_team/b02_one_entry_loop__attack.py.txt")
                    .read_text(), ("flash_attention",))["flash_attention"]
    assert flash.score <= 40.0


def test_a_reading_call_carries_the_checked_calls_values_and_repeats_none_of_them():
    """The call that reads a rule on a comparing call (lesson.lengthened, lesson.doubled_blocks) is of the checked
    call's own values: their signs, scale, infinities and layout; no token of it equals another, so a loop over the
    distinct tokens of the reading call makes as many rounds as there are tokens (a loop over the checked call's few
    tokens, run on its repeats and gathered back, would make as many as on the checked call)."""
    import torch
    from lesson import carried, doubled_blocks, lengthened

    generator = torch.Generator().manual_seed(0)
    x = (torch.randn(2, 5, 3, generator=generator) * 1000.0).transpose(0, 1).contiguous().transpose(0, 1)
    x[0, 1, 2] = float("-inf")
    longer = lengthened(x, 80, generator)
    assert longer.shape == (2, 80, 3) and longer.dtype == x.dtype and longer.stride()[1] > longer.stride()[0]
    assert len({tuple(row.tolist()) for row in longer[1]}) == 80  # no token twice
    assert torch.isneginf(longer[0, :, 2]).sum() == 16 and not torch.isneginf(longer[1]).any()
    finite = longer[torch.isfinite(longer)]
    assert finite.abs().min() > 0 and finite.abs().max() > 500  # the scale carried
    assert torch.equal(torch.sign(longer[1]).sum(0), 16 * torch.sign(x[1]).sum(0))  # every sign kept
    row = torch.tensor([[float("-inf")] * 4 + [1.0, 2.0, 3.0, 4.0, 5.0]])  # blocks of 4: [-inf x4] [1..4] [5]
    doubled = carried(row, doubled_blocks(9, 4, generator), generator, dim=-1)
    assert torch.isneginf(doubled[0, :8]).all() and torch.isfinite(doubled[0, 8:]).all() and doubled.shape == (1, 18)


def _unverified_by(*entries) -> list:
    """MultiHeadAttention's rule check beside a comparing check whose reading calls (``entries``) answered wrong,
    and split_heads's own exercise, which lost points."""
    split_heads = ExerciseResult("split_heads", 15, [CheckOutcome("random", 2, "failed", "off")])
    attention = ExerciseResult("MultiHeadAttention", 25, [
        CheckOutcome("lesson_data", 2, "passed", rules_unverified=entries),
        CheckOutcome("vectorised", 2, "passed", rules_read=("vectorised",))])
    return kept_where_read([split_heads, attention])


def test_a_rule_unread_only_by_a_helpers_mistake_is_kept_given_that_helper():
    """Issue 44's blind parity round (session 25): a split_heads wrong on long sequences alone made the reading call
    of 80 tokens wrong, and MultiHeadAttention lost its rule check for it beside split_heads's own loss. Where the
    same calls with a right split_heads are right and keep the rule (``(rule, why, (helper,))``, lesson.vectorised_on),
    the checks that read it are kept as right given that helper, whose exercise pays for them (charged_once,
    charges): the mistake costs once, where it is."""
    check = _unverified_by(("vectorised", "the same call on 80 tokens was not right", ("split_heads",)))[1].checks[1]
    assert check.status == "passed" and check.forgiven_by == "split_heads"
    assert check.message.startswith("right, given your split_heads, which this uses; but your split_heads is wrong "
                                    "(the same call on 80 tokens was not right")
    # a reading call wrong by the exercise's own code, beside it: the rule is unread, whatever a helper did elsewhere
    both = _unverified_by(("vectorised", "80 tokens, by split_heads", ("split_heads",)),
                          ("vectorised", "the same call on 80 tokens was not right"))[1].checks[1]
    assert both.status == "failed" and not both.forgiven_by


def test_a_rule_kept_given_a_helper_that_passes_everything_is_the_exercises_own():
    """What kept_where_read forgives through a helper, charged_once takes back where the helper lost nothing (a
    split_heads wrong only on calls of 64 tokens or more, which its own checks never make, beside a caller whose
    rule then goes unread): the case is the caller's."""
    from grader.grading.grader import charged_once

    split_heads = ExerciseResult("split_heads", 15, [CheckOutcome("random", 2, "passed")])
    attention = ExerciseResult("MultiHeadAttention", 25, [
        CheckOutcome("lesson_data", 2, "passed",
                     rules_unverified=(("vectorised", "80 tokens wrong", ("split_heads",)),)),
        CheckOutcome("vectorised", 2, "passed", rules_read=("vectorised",))])
    check = charged_once(kept_where_read([split_heads, attention]))[1].checks[1]
    assert check.status == "failed" and "your split_heads passes all of its own checks" in check.message


PARITY = HELDOUT / "round32_parity"


@pytest.mark.parametrize("variant,helper,caller", [
    ("f04_split_wrong_bigT_noextra", "split_heads", "MultiHeadAttention"),  # wrong on long sequences alone
    ("a04_split_wrong_bigT", "split_heads", "MultiHeadAttention"),  # ... and one operation more there
    ("f04_merge_wrong_bigT", "merge_heads", "FusedQKVAttention"),
])
def test_a_helper_wrong_on_long_sequences_costs_in_the_helper_alone(grader, course, submission_dir, variant, helper,
                                                                      caller):
    """Issue 44's blind parity round (F1): the caller, the reference's own code, lost its rule checks (named
    not-vectorised where the helper made one operation more on long sequences) for its helper's mistake, which its
    own exercise charged too; the student's side, judging the same calls with a right helper, did not. Now the
    calls that read the rule are read with a right helper too (the reading call, Grade.read_given_right; a
    measured call right only given the helper, Grade.measured_given): the caller keeps every point and names
    nothing, and the helper pays for what the caller kept."""
    module = submission_dir / "04_multi_head_attention" / "multi_head_attention.py"
    module.write_text((PARITY / f"{variant}__multi_head_attention.py.txt").read_text())
    result = grader.grade(resolve_submission(submission_dir, course), (course.assignment("04_multi_head_attention"),),
                          seed=3, exercises=(helper, caller)).assignments[0]
    exercises = {e.name: e for e in result.exercises}
    assert exercises[caller].score == exercises[caller].max_score and not exercises[caller].misconceptions, \
        exercises[caller].feedback
    assert exercises[helper].score < exercises[helper].max_score
    kept = sum(c.weight for c in exercises[caller].checks if c.forgiven_by == helper)
    moved = exercises[caller].max_score * kept / sum(c.weight for c in exercises[caller].checks)
    assert kept and exercises[helper].score <= max(0.0, exercises[helper].max_score - moved) + 0.01


ROUND_33 = HELDOUT / "round33_red_team"


def _helper_from(text: str, donor: str, name: str) -> str:
    """``text`` with its function ``name`` replaced by ``donor``'s."""
    import re

    def function(source):
        return re.search(rf"^def {name}\(.*?(?=^def |^class |^@)", source, re.S | re.M).group(0)

    return text.replace(function(text), function(donor))


@pytest.mark.parametrize("attack,assignment,module,helper,caller", [
    ("given_right_absorbs_loop", "04_multi_head_attention", "multi_head_attention", "split_heads", "MultiHeadAttention"),
    ("given_right_absorbs_loop", "01_attention_basics", "attention_basics", "softmax", "simple_self_attention"),
])
def test_a_caller_that_loops_unless_its_helper_is_the_graders_buys_its_honest_form_alone(
        grader, course, submission_dir, attack, assignment, module, helper, caller):
    """Red team round 33 (A2, A5): a caller looping on the short calls unless a stand-in is in place (told by the
    layout of its answer), beside its helper made wrong only at the lengths the reading calls use and one cheap slip
    of the helper's own, keeps its rule through the run with a right helper. It scores what the same helper beside
    the reference's caller scores, no more: the caller's right code is in the file, and the points it keeps move to
    the helper (whose slip, the larger, already costs them: charges.py's residual)."""
    path = submission_dir / assignment / f"{module}.py"
    solution = path.read_text()
    scores = {}
    attacking = (ROUND_33 / f"{attack}__{module}.py.txt").read_text()
    for kind, text in (("attack", attacking), ("honest", _helper_from(solution, attacking, helper))):
        path.write_text(text)
        result = grader.grade(resolve_submission(submission_dir, course), (course.assignment(assignment),), seed=3,
                              exercises=(helper, caller)).assignments[0]
        scores[kind] = sum(e.score for e in result.exercises)
    assert scores["attack"] <= scores["honest"] + 1e-6, scores
