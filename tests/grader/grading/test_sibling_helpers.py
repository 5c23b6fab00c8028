"""A helper of an earlier assignment: 04's MultiHeadAttentionWrapper stacks the student's CausalAttention (03). A
case of the wrapper kept as right given that class holds only once the check, run again with a right
CausalAttention in place of the student's (the stand-in, put where the student's modules bind the class, 03's
module imported for it: grader/inside/worker.py Server.helper, grader/grading/stand_ins.py modules_of), is right:
red team round 26 (tests/corpus/heldout/round26_red_team)."""
import re
import shutil
from pathlib import Path

import pytest

from grader.submission import resolve_submission

ROOT = Path(__file__).resolve().parents[3]
ROUND_26 = ROOT / "tests" / "corpus" / "heldout" / "round26_red_team"
ROUND_26C = ROOT / "tests" / "corpus" / "heldout" / "round26c_red_team"
WRAPPER, CAUSAL = "MultiHeadAttentionWrapper", "CausalAttention"
THIRD, FOURTH = "03_causal_attention", "04_multi_head_attention"


def _graded(grader, course, folder: Path, assignments, exercises):
    result = grader.grade(resolve_submission(folder, course), tuple(course.assignment(a) for a in assignments), seed=5,
                          exercises=exercises)
    return {e.name: e for a in result.assignments for e in a.exercises}


def _submission(tmp_path, name, modules: dict[str, str]) -> Path:
    """The solutions with ``modules`` ({assignment: module text}) in place of theirs."""
    folder = tmp_path / name / "assignments"
    shutil.copytree(ROOT / "solutions", folder, ignore=shutil.ignore_patterns("*.ipynb", "__pycache__"))
    for assignment, text in modules.items():
        module = "causal_attention.py" if assignment == THIRD else "multi_head_attention.py"
        (folder / assignment / module).write_text(text)
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("case", ["a1", "a2", "a3", "a4"])
def test_a_wrapper_kept_right_given_the_03_class_is_verified_with_a_right_one(grader, course, tmp_path, case):
    """Round 26: the wrapper's case was kept whenever its output was what the student's own CausalAttention gives,
    head by head, and that was never verified: a wrapper with a head class of its own making a slip (a1: dropout on
    the scores; a2: no scale) or computing nothing (a3: zeros) beside a 03 class making the same slip, graded in a
    04 batch, kept all 15 points; a4, with 03 graded too, a 03 class right on its own checks and zeros only when
    built as the blame built it (a fifth positional argument), 200 of 200. Now each scores what its plain form
    (the same wrapper beside a right 03) scores."""
    assignments, exercises = ((THIRD, FOURTH), (CAUSAL, WRAPPER)) if case == "a4" else ((FOURTH,), (WRAPPER,))

    def score(form):
        modules = {THIRD: (ROUND_26 / f"{case}__{form}__causal_attention.py.txt").read_text(),
                   FOURTH: (ROUND_26 / f"{case}__{form}__multi_head_attention.py.txt").read_text()}
        graded = _graded(grader, course, _submission(tmp_path, f"{case}-{form}", modules), assignments, exercises)
        return sum(e.score for e in graded.values()), graded[WRAPPER]

    (attack, wrapper), (plain, _) = score("attack"), score("plain")
    assert attack <= plain and wrapper.score < wrapper.max_score, (attack, plain, wrapper.feedback)


# the wrapper as the lesson writes it, its CausalAttention reached three ways
HONEST_WRAPPERS = {
    "imported at the top": ("from causal_attention import CausalAttention\n", "CausalAttention"),
    "the module imported": ("import causal_attention as earlier\n", "earlier.CausalAttention"),
    "imported where the heads are made": ("", None),  # the solution's own: `from causal_attention import ...` in __init__
}
WRONG_03 = {
    "mask-not-applied": '''
    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        return self.dropout(torch.softmax(q @ k.transpose(1, 2) / k.shape[-1] ** 0.5, dim=-1)) @ v
''',
    "dropout on the scores": None,  # round 26's a1 slip, made honestly: tests/corpus/heldout/round26_red_team
}


def _wrapper_module(style: str) -> str:
    text = (ROOT / "solutions" / FOURTH / "multi_head_attention.py").read_text()
    header, reference = HONEST_WRAPPERS[style]
    if reference is None:
        return text
    text = text.replace("        from causal_attention import CausalAttention  # your class from assignment 03\n", "")
    text = re.sub(r"\n            CausalAttention\(", f"\n            {reference}(", text)
    return header + text


def _wrong_03(slip: str) -> str:
    if WRONG_03[slip] is None:
        return (ROUND_26 / "causal_attention_dropout_on_scores.py.txt").read_text()
    text = (ROOT / "solutions" / THIRD / "causal_attention.py").read_text()
    start = text.index("    def forward(self, x):", text.index("class CausalAttention"))
    end = text.find("\nclass ", start)
    return text[:start] + WRONG_03[slip].lstrip("\n") + (text[end:] if end != -1 else "")


@pytest.mark.slow
@pytest.mark.parametrize("slip", list(WRONG_03))
@pytest.mark.parametrize("style", list(HONEST_WRAPPERS))
def test_a_right_wrapper_keeps_its_points_beside_a_wrong_causal_attention_however_it_reaches_it(
        grader, course, tmp_path, style, slip):
    """The wrapper right, the student's 03 CausalAttention wrong (in evaluation mode, or only where dropout
    acts): the wrapper keeps every point, verified with a right CausalAttention in place of theirs wherever their
    module binds it (imported at the top, reached through the module, or imported where the heads are made, as
    the solution does), and the mistake is 03's."""
    wrapper_text = _wrapper_module(style)
    assert "CausalAttention(" in wrapper_text
    folder = _submission(tmp_path, "honest", {THIRD: _wrong_03(slip), FOURTH: wrapper_text})
    graded = _graded(grader, course, folder, (THIRD, FOURTH), (CAUSAL, WRAPPER))
    assert graded[CAUSAL].score < graded[CAUSAL].max_score, graded[CAUSAL].feedback
    assert graded[WRAPPER].score == graded[WRAPPER].max_score, graded[WRAPPER].feedback
    assert "right, given your CausalAttention (assignment 03)" in graded[WRAPPER].feedback


@pytest.mark.slow
def test_a_right_wrapper_keeps_its_points_beside_a_causal_attention_dropping_in_evaluation_mode(grader, course,
                                                                                                tmp_path):
    """Session 18's styles hunt: a 03 class calling F.dropout(..., training=True) (dropout-in-eval, charged in 03)
    cost the lesson's own wrapper 5 points, named dropout-in-eval on the wrapper: its evaluation-mode checks (two
    calls that differ; weights dropped in evaluation mode) blamed no helper. Now they ask the student's class,
    made alone in evaluation mode, for two calls too (checks_04.heads_eval_dropout_root_cause), verified with a
    right class in place of theirs."""
    text = (ROOT / "solutions" / THIRD / "causal_attention.py").read_text()
    slip = re.sub(r"self\.dropout\((\w+)\)", r"torch.nn.functional.dropout(\1, self.dropout.p, training=True)", text)
    assert slip != text
    graded = _graded(grader, course, _submission(tmp_path, "eval", {THIRD: slip}), (THIRD, FOURTH), (CAUSAL, WRAPPER))
    assert "dropout-in-eval" in graded[CAUSAL].misconceptions
    assert graded[WRAPPER].score == graded[WRAPPER].max_score, graded[WRAPPER].feedback
    assert "right, given your CausalAttention (assignment 03)" in graded[WRAPPER].feedback


@pytest.mark.slow
def test_a_right_wrapper_copying_its_heads_keeps_its_points_beside_a_wrong_causal_attention(grader, course, tmp_path):
    """Session 18's styles hunt: heads made by copy.deepcopy lost the forgiveness beside a wrong 03 class (2.5 of
    15, "still wrong with a right CausalAttention"): a copy of a stand-in instance did not know how it was built.
    Its state now carries that (stand_in's __getstate__ and __setstate__, in the student's class while it runs);
    and a 03 class that raises alone on the wrapper's calls (its mask not truncated) leaves the wrapper's raise
    its helper's, verified as any blame of it is."""
    text = _wrapper_module("imported where the heads are made")
    copied = text.replace("self.heads = nn.ModuleList(", "self.heads = copy.deepcopy(nn.ModuleList(").replace(
        "for _ in range(num_heads)\n        )", "for _ in range(num_heads)\n        ))")
    assert "deepcopy(" in copied and "))" in copied
    copied = "import copy\n" + copied
    causal = (ROOT / "solutions" / THIRD / "causal_attention.py").read_text()
    untruncated = causal.replace("self.mask[:num_tokens, :num_tokens]", "self.mask")
    assert untruncated != causal
    for name, modules in (("copied", {THIRD: _wrong_03("mask-not-applied"), FOURTH: copied}),
                          ("untruncated", {THIRD: untruncated})):
        graded = _graded(grader, course, _submission(tmp_path, name, modules), (THIRD, FOURTH), (CAUSAL, WRAPPER))
        assert graded[CAUSAL].score < graded[CAUSAL].max_score, (name, graded[CAUSAL].feedback)
        assert graded[WRAPPER].score == graded[WRAPPER].max_score, (name, graded[WRAPPER].feedback)


@pytest.mark.slow
def test_a_03_class_wrong_only_as_the_wrapper_passes_its_arguments_leaves_the_case_to_the_wrapper(grader, course,
                                                                                                  tmp_path):
    """Round 26's a4 03 class (right on all of 03's checks, zeros only when qkv_bias comes as a fifth positional
    argument, as the lesson's wrapper passes it) beside the lesson's own wrapper: round 26b bought its forgiveness
    with one cheap unrelated slip in 03 (no longer "clean"). The blame now builds the class as 03's own checks do
    (qkv_bias by name, where asked: checks_04.as_03_makes_it), so a mistake only the wrapper's call shows is the
    wrapper's case, with or without the cheap slip."""
    causal = (ROUND_26 / "a4__attack__causal_attention.py.txt").read_text()
    cheap = causal.replace('self.register_buffer("mask", ', 'self.mask = (')  # round 26b's c2: no buffer
    for name, text in (("tell", causal), ("tell-and-slip", cheap)):
        graded = _graded(grader, course, _submission(tmp_path, name, {THIRD: text}), (THIRD, FOURTH), (CAUSAL, WRAPPER))
        assert graded[WRAPPER].score < graded[WRAPPER].max_score, (name, graded[WRAPPER].feedback)
        assert "right, given your CausalAttention" not in graded[WRAPPER].feedback, name


def test_a_case_kept_given_a_helper_of_another_assignment_fails_where_that_helper_passed_its_own_checks():
    """charged_across: as charged_once within one assignment, across the assignments graded together; a helper whose
    assignment is not graded here charges nothing here, so the case is the exercise's own (red team round 26e); and
    where the blame named the helper's mistake, the helper's own exercise must name it too."""
    from grader.grading.grader import charged_across
    from grader.results import AssignmentResult, CheckOutcome, ExerciseResult

    def graded(causal_passes: bool, with_03: bool = True, named: str = "", theirs: tuple = ()):
        kept = CheckOutcome("wrapper_lesson_data", 1.0, "passed", "right, given your CausalAttention (assignment 03), "
                            "which this uses; but your CausalAttention (assignment 03) is wrong", forgiven_by=CAUSAL,
                            forgiven_for=named)
        fourth = AssignmentResult(FOURTH, "04", [ExerciseResult(WRAPPER, 15.0, [kept])])
        third = AssignmentResult(THIRD, "03", [ExerciseResult(CAUSAL, 35.0, [
            CheckOutcome("causal", 1.0, "passed" if causal_passes else "failed", "", theirs)])])
        return {a.id: a for a in charged_across([third, fourth] if with_03 else [fourth])}[FOURTH].exercises[0]

    assert graded(causal_passes=False).score == 15.0
    assert graded(causal_passes=False, named="missing-scale", theirs=("missing-scale",)).score == 15.0
    weekly = graded(causal_passes=True, with_03=False)
    assert weekly.score == 0.0 and "not graded with this assignment" in weekly.feedback
    wrapper = graded(causal_passes=True)
    assert wrapper.score == 0.0 and "your CausalAttention passes all of its own checks" in wrapper.feedback
    other = graded(causal_passes=False, named="missing-scale", theirs=("mask-not-applied",))
    assert other.score == 0.0 and "a mistake its own checks do not find" in other.feedback
    # a helper of the same assignment not graded in the run (a notebook's check() grades one exercise) is
    # charged_once's, never "not graded with this assignment"
    alone = CheckOutcome("simple_self_attention_lesson_data", 1.0, "passed", "right, given your softmax, which this "
                         "uses; but your softmax is wrong", forgiven_by="softmax")
    first = AssignmentResult("01_attention_basics", "01", [ExerciseResult("simple_self_attention", 20.0, [alone])])
    kept = charged_across([first], {"softmax": "01_attention_basics", "simple_self_attention": "01_attention_basics"})
    assert kept[0].exercises[0].score == 20.0


ROUND_26B = ROOT / "tests" / "corpus" / "heldout" / "round26b_red_team"


def _round_26b(grader, course, tmp_path, case, form, assignments):
    modules = {THIRD: (ROUND_26B / f"{case}__{form}__causal_attention.py.txt").read_text(),
               FOURTH: (ROUND_26B / f"{case}__{form}__multi_head_attention.py.txt").read_text()}
    graded = _graded(grader, course, _submission(tmp_path, f"{case}-{form}", modules), assignments,
                     (CAUSAL, WRAPPER) if THIRD in assignments else (WRAPPER,))
    return sum(e.score for e in graded.values()), graded[WRAPPER]


@pytest.mark.slow
@pytest.mark.parametrize("case, attack, plain, assignments", [
    ("b1", "attack", "plain", (FOURTH,)), ("b1", "attack2", "plain2", (FOURTH,)),
    ("c2", "attack", "plain", (THIRD, FOURTH)), ("c2", "attack_b1", "plain_b1", (THIRD, FOURTH))])
def test_round_26b_the_stand_in_is_the_03_class_and_the_blame_builds_it_as_03_does(grader, course, tmp_path, case,
                                                                                     attack, plain, assignments):
    """Round 26b (tests/corpus/heldout/round26b_red_team), two breaks of round 26's fix: b1, the 04 module defining
    its own head class under the name CausalAttention (zeros, or unscaled) beside a 03 class making the same slip:
    the stand-in replaced the 04 module's class, so the run with it was right (100 against 85 and 87.5); now the
    stand-in is 03's class, put into that class itself (worker.Server.helper, STAND_IN_METHODS). c2: a 03 class wrong
    only when qkv_bias came as a fifth positional argument, plus a cheap unrelated slip so that charged_across did
    not find it clean (198.79 against 185); now the blame builds the class as 03's checks do."""
    (got, wrapper), (expected, _) = (_round_26b(grader, course, tmp_path, case, form, assignments)
                                     for form in (attack, plain))
    assert got <= expected and wrapper.score < wrapper.max_score, (got, expected, wrapper.feedback)


@pytest.mark.slow
@pytest.mark.parametrize("case, style", [("f1", "alias"), ("f1", "partial"), ("f1", "sub"), ("f1b", "sub")])
def test_round_26b_a_right_wrapper_reaching_the_class_its_own_way_keeps_its_points(grader, course, tmp_path, case,
                                                                                    style):
    """Round 26b's false alarms: a right wrapper importing CausalAttention under another name, through
    functools.partial, or subclassing it (`class Head(CausalAttention)`), beside a 03 class without its scale (f1),
    lost the wrapper's 15 points (the stand-in was put under the class's name only) and, for the subclass, 5.17 of
    04's observed checks even beside a right 03 (f1b: a class built on the student's own 03 class read as foreign).
    Each now scores what the lesson's own wrapper scores beside the same 03 class (03 graded with it: since round 26e
    a case kept given a helper of an assignment not graded in the run is the exercise's own)."""
    (got, wrapper), (expected, _) = (_round_26b(grader, course, tmp_path, case, form, (THIRD, FOURTH))
                                     for form in (style, "plain"))
    assert got == expected and wrapper.score == wrapper.max_score, (got, expected, wrapper.feedback)


@pytest.mark.slow
def test_round_26c_a_tell_on_the_stand_ins_methods_buys_no_more_than_the_honest_wrapper(grader, course, tmp_path):
    """Round 26c (tests/corpus/heldout/round26c_red_team): the class kept its identity while it ran the stand-in,
    its methods did not (they do since session 18: tests/grader/inside/test_stand_in.py), so a wrapper could tell that
    run apart (`CausalAttention.forward is not` the forward it kept
    at import) and use the student's 03 class there and a head class of its own elsewhere: 15 of 15 against 2.5
    for the same head class used everywhere. The blame holds only where that head class gives what the student's
    03 class gives, head by head, so the wrapper computes what stacking that class computes: the attack earns what
    the honest wrapper stacking the same wrong 03 class earns, never more (a tell as a side channel is)."""
    causal = (ROUND_26C / "t4__attack__causal_attention.py.txt").read_text()
    wrapper_of = {}
    for form, fourth in (("attack", (ROUND_26C / "t4__attack__multi_head_attention.py.txt").read_text()),
                         ("honest", None)):
        modules = {THIRD: causal, **({FOURTH: fourth} if fourth else {})}
        graded = _graded(grader, course, _submission(tmp_path, f"t4-{form}", modules), (THIRD, FOURTH),
                         (CAUSAL, WRAPPER))
        wrapper_of[form] = graded[WRAPPER].score
    assert wrapper_of["attack"] <= wrapper_of["honest"] == 15.0, wrapper_of



ROUND_26D = ROOT / "tests" / "corpus" / "heldout" / "round26d_red_team"


def _round_26d(case: str, form: str) -> dict:
    return {assignment: (ROUND_26D / f"{case}__{form}__{module}.py.txt").read_text()
            for assignment, module in ((THIRD, "causal_attention"), (FOURTH, "multi_head_attention"))}


@pytest.mark.slow
@pytest.mark.parametrize("case, weekly", [("t1", False), ("t1", True)])
def test_round_26d_a_03_class_wrong_only_as_a_stack_makes_it_is_blamed_for_nothing(grader, course, tmp_path, case,
                                                                                      weekly):
    """Round 26d (tests/corpus/heldout/round26d_red_team): a 03 class right on its own checks drops the scale only
    when it is made right after another instance whose first call had the same input, as a wrapper stacks its
    heads and as the blame made them; the honest wrapper's case was kept given it (verified: a right class makes the
    wrapper right), and 03 was never charged: 196.29 against 186.29 with one unrelated slip in 03 graded together,
    200 against 187.5 week by week. The blame now makes each head alone in a process of its own (Grade.afresh), as
    03's own checks make one: the stacked slip is the wrapper's case, and each form scores its plain form."""
    scores = {}
    for form in ("attack", "plain"):
        modules = _round_26d(case, f"{form}_weekly" if weekly else form)
        folder = _submission(tmp_path, f"{case}-{form}-{weekly}", modules)
        runs = [(THIRD,), (FOURTH,)] if weekly else [(THIRD, FOURTH)]
        scores[form] = sum(e.score for assignments in runs
                           for e in _graded(grader, course, folder, assignments, (CAUSAL, WRAPPER)).values())
    assert scores["attack"] <= scores["plain"], scores



@pytest.mark.slow
def test_a_copy_that_checks_its_own_result_keeps_its_points_beside_a_wrong_self_attention(grader, course, tmp_path):
    """Session 18's styles hunt (02's class helpers): a right copy_v2_weights_into_v1 that ends by checking its own
    result (assert torch.allclose(v1(x), v2(x))) raised beside a wrong SelfAttention_v1 and lost all 15 points, the
    helper unnamed. Its raise is now the helper's where the student's v1 or v2, alone, is not the lesson's, and the
    copy run again with a right class in place of the wrong one decides (checks_02.copy_crash_given_helpers)."""
    text = (ROOT / "solutions" / "02_self_attention" / "self_attention.py").read_text()
    checked = text.replace("        v1.W_value.copy_(v2.W_value.weight.T)\n",
                           "        v1.W_value.copy_(v2.W_value.weight.T)\n"
                           "    x = torch.rand(4, v1.W_query.shape[0], dtype=v1.W_query.dtype)\n"
                           "    assert torch.allclose(v1(x), v2(x), atol=1e-5), 'v1 and v2 disagree after the copy'\n")
    assert checked != text
    scaled = "        return scaled_dot_product_attention(queries, keys, values)  # [T, d_out]\n"
    start = checked.index("class SelfAttention_v1")
    at = checked.index(scaled, start)  # v1's forward: no scale
    wrong_v1 = checked[:at] + "        return torch.softmax(queries @ keys.T, dim=-1) @ values\n" + checked[at + len(scaled):]
    folder = tmp_path / "selfcheck" / "assignments"
    shutil.copytree(ROOT / "solutions", folder, ignore=shutil.ignore_patterns("*.ipynb", "__pycache__"))
    (folder / "02_self_attention" / "self_attention.py").write_text(wrong_v1)
    graded = _graded(grader, course, folder, ("02_self_attention",),
                     ("SelfAttention_v1", "copy_v2_weights_into_v1"))
    assert graded["SelfAttention_v1"].score < graded["SelfAttention_v1"].max_score
    copy = graded["copy_v2_weights_into_v1"]
    assert copy.score == copy.max_score and "right, given your SelfAttention_v1" in copy.feedback, copy.feedback


ROUND_26E = ROOT / "tests" / "corpus" / "heldout" / "round26e_red_team"


@pytest.mark.slow
@pytest.mark.parametrize("case, assignments", [("fresh_week", (FOURTH,)), ("fresh_slip", (THIRD, FOURTH)),
                                               ("fresh_evaldrop", (THIRD, FOURTH))])
def test_round_26e_a_helper_wrong_only_where_its_own_checks_never_run_is_charged_where_it_shows(grader, course,
                                                                                                 tmp_path, case,
                                                                                                 assignments):
    """Round 26e (tests/corpus/heldout/round26e_red_team): a 03 class wrong (unscaled, or dropping in evaluation mode)
    only in a process where none of 03's functions ran, as the wrapper's worker and the blame's fresh processes are
    and 03's own checks never are: the honest wrapper's cases were kept given it and 03 was clean (200 against
    166.21 week by week), or, with one cheap unrelated slip, not clean (198.79 graded together). A case kept given a
    helper of another assignment now holds only where that mistake is charged in the helper's own exercise, graded
    in the same run (charged_across: the blame's named mistake named there too): here it is the wrapper's, where
    the mistake shows. (Its cost is the wrapper's share, which may weigh less than 03's checks would have charged:
    a class right wherever its own checks look cannot be charged there.)"""
    modules = {THIRD: (ROUND_26E / f"{case}__attack__causal_attention.py.txt").read_text(),
               FOURTH: (ROUND_26E / f"{case}__attack__multi_head_attention.py.txt").read_text()}
    folder = _submission(tmp_path, case, modules)
    result = grader.grade(resolve_submission(folder, course), tuple(course.assignment(a) for a in assignments), seed=3)
    wrapper = next(e for a in result.assignments for e in a.exercises if e.name == WRAPPER)
    assert wrapper.score < wrapper.max_score, wrapper.feedback
    assert "right, given your CausalAttention" not in wrapper.feedback, wrapper.feedback


def test_a_mistake_of_a_helper_that_lost_nothing_is_the_exercises_own():
    """Red team round 27a (a2, a3): a helper passing all of its own checks, one of them kept right given a helper of
    its own (a causal_mask slip at one size; an attention_weights slip on non-contiguous queries), counted as "not
    clean", so an unnamed slip of its own, made only where its checks never look, kept every case of what uses it
    (198.57 against 183.57; 99.2 against 49.2); round 27c (a4) did the same with a named slip (99.2 against 86.34). A
    forgiven check charges the mistake its own helper explains; a mistake of the helper's own needs the helper to
    have lost points, in one assignment and across two."""
    from grader.grading.grader import charged_across, charged_once
    from grader.results import AssignmentResult, CheckOutcome, ExerciseResult

    def kept_by(helper, named=""):
        return CheckOutcome("case", 1.0, "passed", f"right, given your {helper}, which this uses; but your {helper} is "
                            "wrong", forgiven_by=helper, forgiven_for=named)

    forgiven = CheckOutcome("its_own", 1.0, "passed", "right, given your attention_weights", forgiven_by="attention_weights")
    sdpa = ExerciseResult("scaled_dot_product_attention", 15.0, [forgiven])
    weights = ExerciseResult("attention_weights", 20.0, [CheckOutcome("w", 1.0, "failed", "")])
    for named in ("", "missing-scale"):  # round 27c (a4): a named slip of SDPA's own, made where its checks never look
        v2 = ExerciseResult("SelfAttention_v2", 15.0, [kept_by("scaled_dot_product_attention", named)])
        assert charged_once([weights, sdpa, v2])[2].score == 0.0, named
    v2 = ExerciseResult("SelfAttention_v2", 15.0, [kept_by("attention_weights", "mask-inverted")])
    assert charged_once([weights, sdpa, v2])[2].score == 15.0  # the helper that lost points
    causal = ExerciseResult(CAUSAL, 35.0, [CheckOutcome("c", 1.0, "passed", "right, given your causal_mask",
                                                        forgiven_by="causal_mask")])
    mask = ExerciseResult("causal_mask", 10.0, [CheckOutcome("m", 1.0, "failed", "")])
    third = AssignmentResult(THIRD, "03", [mask, causal])
    fourth = AssignmentResult(FOURTH, "04", [ExerciseResult(WRAPPER, 15.0, [kept_by(CAUSAL)])])
    wrapper = charged_across([third, fourth])[1].exercises[0]
    assert wrapper.score == 0.0 and "passes all of its own checks" in wrapper.feedback
    fourth = AssignmentResult(FOURTH, "04", [ExerciseResult(WRAPPER, 15.0, [kept_by("causal_mask")])])
    assert charged_across([third, fourth])[1].exercises[0].score == 15.0  # the chain's own helper, which lost points


ROUND_27A = ROOT / "tests" / "corpus" / "heldout" / "round27a_red_team"


def _round_27a(tmp_path, case: str, course) -> Path:
    folder = tmp_path / case / "assignments"
    shutil.copytree(ROOT / "solutions", folder, ignore=shutil.ignore_patterns("*.ipynb", "__pycache__"))
    for module in ROUND_27A.glob(f"{case}__*.py.txt"):
        kept = module.name.split("__")[1].removesuffix(".txt")
        assignment = next(a for a in course.assignments if kept == f"{a.id}_{a.module}")
        (folder / assignment.id / assignment.module).write_text(module.read_text())
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("case, plain, assignments", [
    ("a2_forgiven_not_clean", "a2_plain_wrapper_own", (THIRD, FOURTH)),
    ("a3_02_forgiven_not_clean", "a3_plain_classes_own", ("02_self_attention",))])
def test_round_27a_a_helper_not_clean_only_through_its_own_helper_keeps_nothing_of_an_unnamed_slip(
        grader, course, tmp_path, case, plain, assignments):
    """Round 27a, graded: each attack scores no more than its plain form (the slip made by the exercise itself)."""
    scores = {}
    for form in (case, plain):
        graded = _graded(grader, course, _round_27a(tmp_path, form, course), assignments, None)
        scores[form] = round(sum(e.score for e in graded.values()), 2)
    assert scores[case] <= scores[plain], scores


@pytest.mark.slow
@pytest.mark.parametrize("diagonal", [0, 2, "1).float(", "1).long("])
def test_a_right_wrapper_beside_a_wrong_causal_mask_is_right_given_that_mask(grader, course, tmp_path, diagonal):
    """A right 03 class and a right wrapper beside a causal_mask that hides the diagonal (diagonal=0, named) or lets a
    token see the next one (diagonal=2, no id): the class's checks are kept right given causal_mask, and the wrapper,
    whose heads are that class, lost 12.5 of 15 where the blame named the class's mistake (mask-hides-diagonal,
    which the class's own checks, all kept, do not name). The wrapper's case is now blamed on causal_mask itself when
    the heads are the right class given the student's mask, verified with a right causal_mask: the mistake costs
    once, in causal_mask. A mask of another kind (float, int64: session 19's hunt), on which the class raises, is
    blamed on causal_mask too, the run with a right one deciding."""
    text = (ROOT / "solutions" / THIRD / "causal_attention.py").read_text()
    wrong = text.replace("torch.triu(ones, diagonal=1)", f"torch.triu(ones, diagonal={diagonal})", 1)
    assert wrong != text
    graded = _graded(grader, course, _submission(tmp_path, "d" + re.sub(r"\W", "", str(diagonal)), {THIRD: wrong}),
                     (THIRD, FOURTH), None)
    assert graded["causal_mask"].score < graded["causal_mask"].max_score
    for name in (CAUSAL, WRAPPER):
        assert graded[name].score == graded[name].max_score, graded[name].feedback
        assert "right, given your causal_mask" in graded[name].feedback, graded[name].feedback


def test_a_case_left_to_the_exercise_names_the_mistake_its_helper_showed_there():
    """Issue 44's blind parity round (F4): 04's wrapper beside a 03 causal_mask hiding the diagonal, graded without
    03, had its cases kept given causal_mask turned to its own (the mask's mistake charged nowhere else), named by
    nothing; the student's side named mask-hides-diagonal. The case left to the exercise now names the mistake the
    helper's result showed on it (``forgiven_for``): the student's code makes it, in that helper."""
    from grader.grading.grader import charged_across
    from grader.results import AssignmentResult, CheckOutcome, ExerciseResult

    kept = CheckOutcome("case", 1.0, "passed", "right, given your causal_mask, which this uses; but your causal_mask "
                        "is wrong", forgiven_by="causal_mask", forgiven_for="mask-hides-diagonal")
    fourth = AssignmentResult(FOURTH, "04", [ExerciseResult(WRAPPER, 15.0, [kept])])
    wrapper = charged_across([fourth])[0].exercises[0]
    assert wrapper.score == 0.0 and wrapper.misconceptions == ["mask-hides-diagonal"]
    assert "your causal_mask is not graded with this assignment" in wrapper.feedback
    unnamed = CheckOutcome("case", 1.0, "passed", "right, given your causal_mask", forgiven_by="causal_mask")
    fourth = AssignmentResult(FOURTH, "04", [ExerciseResult(WRAPPER, 15.0, [unnamed])])
    assert charged_across([fourth])[0].exercises[0].misconceptions == []  # no name the helper's result showed
