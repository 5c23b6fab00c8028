"""An exercise written on another helper exercise of the student's than its checks model (grader/grading/chains.py
ChainRuns, run by GradingPlugin.pytest_pyfunc_call in grader/grading/pytest_session.py; charged_once's chains in
grader/grading/grader.py):
session 19's blind hunt for false alarms (tests/corpus/heldout/hunt27_chains), where a right exercise lost the points
of its helper's mistake a second time, and the rules that keep the run with right helpers the only judge."""
import shutil
from pathlib import Path

import pytest

from grader.submission import resolve_submission

ROOT = Path(__file__).resolve().parents[3]
HUNT = ROOT / "tests" / "corpus" / "heldout" / "hunt27_chains"
MODULES = ("01_attention_basics", "02_self_attention", "03_causal_attention", "04_multi_head_attention",
           "06_decoding_attention")

# the hunt's variant -> (assignments graded, the helper whose own mistake it is, the exercises right given it)
CHAINS = {
    "b03_apply_dropped": (("03_causal_attention", "04_multi_head_attention"), "apply_causal_mask",
                          ("CausalAttention", "MultiHeadAttentionWrapper")),
    "b03_renorm_nokeepdim": (("03_causal_attention",), "renormalize_causal_weights", ("CausalAttention",)),
    "b04_split_notranspose_viasplit_sol": (("04_multi_head_attention",), "split_heads",
                                           ("split_qkv", "FusedQKVAttention")),
    "b04_fused_direct_split_notranspose": (("04_multi_head_attention",), "split_heads", ("FusedQKVAttention",)),
    "b04_mha_import_cm_diag": (("03_causal_attention", "04_multi_head_attention"), "causal_mask",
                               ("MultiHeadAttention",)),
    "h01_forquery_selfdot": (("01_attention_basics",), "attention_scores_for_query", ("attention_scores_loop",)),
    "b02_mutates_natural_sol": (("02_self_attention",), "attention_weights", ("scaled_dot_product_attention",)),
    "b06_rkv_wrongdim": (("06_decoding_attention",), "repeat_kv", ("GroupedQueryAttention",)),
    # FA9: the copy exercise's check runs the student's classes, which call attention_weights (suites' runs())
    "b02_float64_out_sol": (("02_self_attention",), "attention_weights", ("copy_v2_weights_into_v1",)),
}


# session 20's hunt (tests/corpus/heldout/hunt28_aliases): a right exercise reaching its helper through a module-level
# alias, partial or lambda, or a name imported under another, lost the helper's points (15 false alarms)
ALIASES = {
    "acm_drop__ca_apply_alias_unscaled": (("03_causal_attention",), "apply_causal_mask", ("CausalAttention",)),
    "acm_diag0__ca_apply_lambda": (("03_causal_attention",), "apply_causal_mask", ("CausalAttention",)),
    "acm_drop__ca_apply_modpartial": (("03_causal_attention",), "apply_causal_mask", ("CausalAttention",)),
    "q_dtype__asl_rows_alias": (("01_attention_basics",), "attention_scores_for_query", ("attention_scores_loop",)),
    "cm_diag0__mha_cm03_as": (("03_causal_attention", "04_multi_head_attention"), "causal_mask",
                              ("MultiHeadAttention",)),
    "sh_notrans__fq_viaheads_alias": (("03_causal_attention", "04_multi_head_attention"), "split_heads",
                                      ("FusedQKVAttention",)),
}


def _submission(tmp_path, variant: str) -> Path:
    """The solutions with the variant's modules in place of theirs."""
    folder = tmp_path / variant / "assignments"
    shutil.copytree(ROOT / "solutions", folder, ignore=shutil.ignore_patterns("*.ipynb", "__pycache__"))
    kept_in = HUNT if variant in CHAINS else HUNT.parent / "hunt28_aliases"
    for kept in kept_in.glob(f"{variant}__0*.py.txt"):
        _, assignment, module = kept.name.removesuffix(".txt").rsplit("__", 2)
        (folder / assignment / module).write_text(kept.read_text())
    return folder


def _graded(grader, course, folder, assignments):
    result = grader.grade(resolve_submission(folder, course), tuple(course.assignment(a) for a in assignments), seed=3)
    return {e.name: e for a in result.assignments for e in a.exercises}


@pytest.mark.slow
@pytest.mark.parametrize("variant", sorted(CHAINS) + sorted(ALIASES))
def test_an_exercise_right_given_a_helper_its_checks_do_not_model_keeps_its_points(grader, course, tmp_path, variant):
    """Session 19's hunt, FA2 to FA8 and FA10: CausalAttention on the student's apply_causal_mask (1.21 of 35) or
    renormalize_causal_weights (0), split_qkv and FusedQKVAttention on split_heads (4.55 of 10, 5.33 of 20), a
    MultiHeadAttention importing 03's causal_mask (2.5 of 25), attention_scores_loop on attention_scores_for_query
    (4.44 of 10), scaled_dot_product_attention on an attention_weights that scales its queries in place (0 of 15),
    GroupedQueryAttention's memory beside a repeat_kv along the tokens (14 of 15), the copy exercise whose check runs
    the student's classes beside an attention_weights returning float64 (12.5 of 15): each is right given the
    helper, whose mistake its own exercise charges, once. Session 20's hunt: the same through a module-level alias,
    partial or lambda, or an import under another name."""
    assignments, helper, users = CHAINS.get(variant) or ALIASES[variant]
    graded = _graded(grader, course, _submission(tmp_path, variant), assignments)
    assert graded[helper].score < graded[helper].max_score, graded[helper].feedback
    for user in users:
        assert graded[user].score == graded[user].max_score, (user, graded[user].feedback)
    assert f"right, given your {helper}" in graded[users[0]].feedback, graded[users[0]].feedback


@pytest.mark.slow
def test_an_exercise_wrong_on_its_own_beside_a_wrong_helper_keeps_its_failure(grader, course, tmp_path):
    """The run with a right helper decides both ways: attention_scores_loop doubling what it stacks, beside the
    hunt's wrong attention_scores_for_query, is wrong with a right one too; its own failure stands, as the first run
    showed it (the student's own output), and no case is kept given the helper."""
    folder = _submission(tmp_path, "h01_forquery_selfdot")
    module = folder / "01_attention_basics" / "attention_basics.py"
    text = module.read_text()
    doubled = text.replace("return torch.stack([attention_scores_for_query(inputs, x_i) for x_i in inputs])",
                           "return 2 * torch.stack([attention_scores_for_query(inputs, x_i) for x_i in inputs])")
    assert doubled != text
    module.write_text(doubled)
    loop = _graded(grader, course, folder, ("01_attention_basics",))["attention_scores_loop"]
    assert loop.score < loop.max_score / 2, loop.feedback
    assert "right, given your" not in loop.feedback and "attention_scores_loop(<" in loop.feedback, loop.feedback


def _write(tmp_path, text: str, name: str = "causal_attention.py") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


HELPERS = frozenset({"causal_mask", "apply_causal_mask", "softmax", "split_heads", "CausalAttention"})


def test_the_helpers_an_exercise_calls_are_read_from_its_definition_and_its_own_functions(tmp_path):
    from grader.grading.chains import helpers_named

    path = _write(tmp_path, (
        "import torch\nfrom multi_head_attention import split_heads as sh\nimport causal_attention as ca\n"
        "def causal_mask(n):\n    return torch.ones(n, n).triu(1).bool()\n"
        "def apply_causal_mask(s):\n    return s.masked_fill(causal_mask(s.shape[-1]), float('-inf'))\n"
        "def _scores(q, k):\n    return apply_causal_mask(q @ k.mT)\n"
        "class CausalAttention(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        w = torch.softmax(_scores(x, x), -1)  # softmax here is torch's, not the student's\n"
        "        return ca.split_heads(w) if False else w\n"
        "def unrelated(x):\n    return sh(x)\n"))
    modules = frozenset({"causal_attention", "multi_head_attention"})
    named = helpers_named([path], "CausalAttention", HELPERS, modules)
    assert sorted(named) == ["apply_causal_mask", "causal_mask", "split_heads"], named
    assert named.index("apply_causal_mask") < named.index("causal_mask")  # the nearest first
    assert helpers_named([path], "causal_mask", HELPERS, modules) == ()
    # through a module-level alias, partial or lambda, and a name imported under another (session 20's hunt: 15 false
    # alarms, each a right exercise reaching its helper through such a name)
    aliased = _write(tmp_path, (
        "import functools\nfrom causal_attention import causal_mask as _future\n"
        "def apply_causal_mask(s):\n    return s\n"
        "_mask = apply_causal_mask\n_part = functools.partial(apply_causal_mask)\n_lam = lambda s: _future(3)\n"
        "def by_alias(s):\n    return _mask(s)\n"
        "def by_partial(s):\n    return _part(s)\n"
        "def by_lambda(s):\n    return _lam(s)\n"), "aliased.py")
    assert helpers_named([aliased], "by_alias", HELPERS, modules) == ("apply_causal_mask",)
    assert helpers_named([aliased], "by_partial", HELPERS, modules) == ("apply_causal_mask",)
    assert helpers_named([aliased], "by_lambda", HELPERS, modules) == ("causal_mask",)
    # a name in a string or a comment is no call; a file that does not parse names nothing
    assert helpers_named([_write(tmp_path, "def f(x):\n    return 'causal_mask'  # causal_mask\n", "a.py")], "f",
                         HELPERS) == ()
    assert helpers_named([_write(tmp_path, "def f(x:\n", "b.py")], "f", HELPERS) == ()


def test_a_case_kept_given_a_helper_also_right_given_its_own_helper_holds_where_either_lost_points():
    """charged_once along a chain: the wrapper kept given CausalAttention, also found right with the student's
    CausalAttention and a right apply_causal_mask alone (``forgiven_also``). CausalAttention passed (its own cases kept
    given apply_causal_mask): the case holds by apply_causal_mask's lost points, named so; where apply_causal_mask lost
    nothing either, it is the exercise's own. A case kept given a helper that lost nothing, and no other (red team
    round 27a: a helper's own slip where its checks never look), stays the exercise's."""
    from grader.grading.grader import charged_once
    from grader.results import CheckOutcome, ExerciseResult

    def graded(helper_lost: bool, also=("apply_causal_mask",)):
        apply = ExerciseResult("apply_causal_mask", 15.0, [
            CheckOutcome("apply", 1.0, "failed" if helper_lost else "passed", "", ("mask-not-applied",))])
        causal = ExerciseResult("CausalAttention", 35.0, [CheckOutcome(
            "causal", 1.0, "passed", "right, given your apply_causal_mask, which this uses; but your "
            "apply_causal_mask is wrong", forgiven_by="apply_causal_mask")])
        user = ExerciseResult("user", 10.0, [CheckOutcome(
            "user", 1.0, "passed", "right, given your CausalAttention, which this uses; but your CausalAttention "
            "is wrong", forgiven_by="CausalAttention", forgiven_for="mask-not-applied", forgiven_also=also)])
        return {e.name: e for e in charged_once([apply, causal, user])}

    kept = graded(helper_lost=True)
    assert kept["CausalAttention"].score == 35.0 and kept["user"].score == 10.0
    assert kept["user"].checks[0].forgiven_by == "apply_causal_mask"
    assert "right, given your apply_causal_mask" in kept["user"].feedback
    own = graded(helper_lost=False)
    assert own["CausalAttention"].score == 0.0 and own["user"].score == 0.0, own["user"].feedback
    alone = graded(helper_lost=True, also=())
    assert alone["user"].score == 0.0 and "your CausalAttention passes all of its own checks" in alone["user"].feedback
    # a deeper helper the middle one kept no check of its own given is no chain (red team round 28a's a3 variant)
    unrelated = ExerciseResult("softmax_naive", 10.0, [CheckOutcome("naive", 1.0, "failed", "")])
    mid = ExerciseResult("softmax", 25.0, [CheckOutcome("softmax", 1.0, "passed", "")])
    user = ExerciseResult("simple_self_attention", 20.0, [CheckOutcome(
        "ssa", 1.0, "passed", "right, given your softmax, which this uses; but your softmax is wrong",
        forgiven_by="softmax", forgiven_also=("softmax_naive",))])
    assert charged_once([unrelated, mid, user])[2].score == 0.0
    # another helper of the exercise's own, found right alone too, holds the case where it lost points, whichever
    # of the two was tried first (grader.grading.chains: that depends on what the process had graded)
    user = ExerciseResult("simple_self_attention", 20.0, [CheckOutcome(
        "ssa", 1.0, "passed", "right, given your softmax, which this uses; but your softmax is wrong",
        forgiven_by="softmax", forgiven_either=("softmax_naive",))])
    either = charged_once([unrelated, mid, user])[2]
    assert either.score == 20.0 and either.checks[0].forgiven_by == "softmax_naive"


ROUND_28A = ROOT / "tests" / "corpus" / "heldout" / "round28a_red_team"


def _round_28a(tmp_path, case: str, form: str) -> tuple[Path, tuple[str, ...]]:
    folder = tmp_path / f"{case}-{form}" / "assignments"
    shutil.copytree(ROOT / "solutions", folder, ignore=shutil.ignore_patterns("*.ipynb", "__pycache__"))
    assignments = []
    for kept in sorted(ROUND_28A.glob(f"{case}__{form}__*.py.txt")):
        module = kept.name.split("__")[2].removesuffix(".txt")
        assignment = next(a for a in MODULES if (ROOT / "solutions" / a / module).is_file())
        (folder / assignment / module).write_text(kept.read_text())
        assignments.append(assignment)
    return folder, tuple(assignments)


@pytest.mark.slow
@pytest.mark.parametrize("case", ["A14", "A1", "A5"])
def test_round_28a_a_chain_keeps_no_case_through_a_clean_helper_nor_given_the_exercise_itself(grader, course,
                                                                                              tmp_path, case):
    """Red team round 28a, against the chain runs: A14, an attention_weights whose code names
    scaled_dot_product_attention: SDPA's cases were kept given itself (90.79 against 86.5); an exercise is never stood
    in for in its own check. A1 and A5, a helper wrong only on the calls its users make, beside a cheap unrelated slip
    its own checks see (98.89 against 94.45; 198.96 against 178.96): the cases kept given it cost the helper
    (grader.grading.charges). Each now scores no more than its plain form."""
    scores = {}
    for form in ("attack", "plain"):
        folder, assignments = _round_28a(tmp_path, case, form)
        graded = _graded(grader, course, folder, assignments)
        scores[form] = round(sum(e.score for e in graded.values()), 2)
    assert scores["attack"] <= scores["plain"], scores


@pytest.mark.slow
def test_round_28a_a3_a_hidden_mistake_costs_at_least_what_it_costs_made_openly_where_it_is(grader, course, tmp_path):
    """A3: softmax_naive wrong only on square inputs (none of its or softmax's checks use them) beside a cheap slip;
    simple_self_attention wrong on every call, kept given softmax, also given softmax_naive (96.67). The cases kept
    cost softmax_naive, which has 10 points to give: the file scores what the same code with softmax_naive wrong on
    every call scores (the mistake costs once, in the exercise where it is made: all of it), never more."""
    folder, assignments = _round_28a(tmp_path, "A3", "attack")
    graded = _graded(grader, course, folder, assignments)
    assert graded["softmax_naive"].score == 0.0 and graded["softmax_naive"].charges, graded["softmax_naive"].feedback
    assert round(sum(e.score for e in graded.values()), 2) <= 100.0 - graded["softmax_naive"].max_score


ROUND_29A = ROOT / "tests" / "corpus" / "heldout" / "round29a_red_team"


def _round_29a(tmp_path, case: str, form: str) -> Path:
    """The solutions with the round's modules of ``case`` in place (a form without a module of the attack's keeps
    the attack's: A3's plain form rewrites the wrapper too)."""
    folder = tmp_path / f"{case}-{form}" / "assignments"
    shutil.copytree(ROOT / "solutions", folder, ignore=shutil.ignore_patterns("*.ipynb", "__pycache__"))
    for kept in sorted(ROUND_29A.glob(f"{case}__{form}__*.py.txt")):
        module = kept.name.split("__")[2].removesuffix(".txt")
        assignment = next(a for a in MODULES if (ROOT / "solutions" / a / module).is_file())
        (folder / assignment / module).write_text(kept.read_text())
    return folder


def _own_lost(exercise) -> float:
    """What an exercise's own checks took, before any charge (grader.grading.charges)."""
    return exercise.max_score - exercise.own_score


@pytest.mark.slow
@pytest.mark.parametrize("case, assignments, helper", [
    ("A1", ("01_attention_basics",), "softmax"),
    ("A2", ("04_multi_head_attention",), "split_heads"),
    ("A3", ("03_causal_attention", "04_multi_head_attention"), "CausalAttention")])
def test_round_29a_a_name_excuses_no_charge(grader, course, tmp_path, case, assignments, helper):
    """Red team round 29a: a helper wrong only on its users' calls (a softmax over the wrong dim on square inputs
    alone; a split_heads without the transpose but on its own checks' shapes; a 03 class unscaled only as the
    wrapper builds it), named by one check of its own: the name freed every case kept given it (98.96 against a
    helper form of 88.54 and a plain form of 82.77; 98.64 against 90.45 and 78.64; 191.55 against 166.21 and
    179.05). A name no longer excuses: each scores at most the better of its honest forms (the helper wrong openly
    on every call; the same wrong outputs made in the user), but for what the helper's own checks took, which the
    larger of the two charges absorbs (A3: the class's own 8.45, the module's documented residual)."""
    scores, lost = {}, 0.0
    for form in ("attack", "plain", "helperform"):
        graded = _graded(grader, course, _round_29a(tmp_path, case, form), assignments)
        scores[form] = round(sum(e.score for e in graded.values()), 2)
        if form == "attack":
            lost = _own_lost(graded[helper])
    assert scores["attack"] <= max(scores["plain"], scores["helperform"]) + lost + 0.01, (scores, lost)
    if case != "A3":  # (its helper's own checks took 8.45: absorbed)
        assert scores["attack"] <= max(scores["plain"], scores["helperform"]), scores


@pytest.mark.slow
def test_a_case_the_suites_blame_does_not_keep_is_run_again_with_the_helper_its_code_calls(grader, course, tmp_path):
    """Red team round 29b's F2: simple_self_attention calling the student's softmax_naive (wrong on every call), the
    suite's blame modelling softmax: the run with a right softmax failed, and no run with a right softmax_naive
    followed (71.9: the one mistake charged twice). The chain runs follow a blame that a run did not confirm."""
    folder = tmp_path / "assignments"
    shutil.copytree(ROOT / "solutions", folder, ignore=shutil.ignore_patterns("*.ipynb", "__pycache__"))
    kept = ROOT / "tests" / "corpus" / "heldout" / "round29b_red_team" / "F2__helperform__attention_basics.py.txt"
    (folder / "01_attention_basics" / "attention_basics.py").write_text(kept.read_text())
    graded = _graded(grader, course, folder, ("01_attention_basics",))
    assert graded["simple_self_attention"].score == 20.0, graded["simple_self_attention"].feedback
    assert graded["softmax_naive"].score == 0.0
