"""What an exercise may not call is exactly what its row in the contract names, exercise by exercise, as
course.toml's [assignments.forbidden] says it; the grader knows only the calls and their operators."""
import re
from pathlib import Path

import pytest
import torch

from grader.config import load_course
from grader.errors import ConfigError
from grader.inside.forbidden import OPERATIONS_OF, forbidden_operations

ROOT = Path(__file__).resolve().parents[3]
COURSE = load_course(ROOT)


def forbidden_of(exercise: str) -> tuple[str, ...]:
    return forbidden_operations(COURSE.forbidden_calls(exercise))


def contract_rows() -> dict[str, str]:
    """exercise -> the meaning cell of its row in docs/course-spec.md's curriculum tables."""
    rows = {}
    for line in (ROOT / "docs" / "course-spec.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and re.fullmatch(r"`\w+`", cells[0]):
            rows[cells[0].strip("`")] = " | ".join(cells[2:])
    return rows


def forbidden_by_contract(meaning: str) -> tuple[str, ...]:
    said = re.search(r"may not (?:call|use) (?:any [^(]*\()?([^;)]*)", meaning)
    return tuple(re.findall(r"`([^`]+)`", said.group(1))) if said else ()


def test_every_exercise_forbids_exactly_what_its_row_in_the_contract_names():
    rows = contract_rows()
    course = load_course(ROOT)
    exercises = [e for a in course.assignments for e in a.exercises]
    assert set(exercises) <= set(rows), "an exercise of course.toml has no row in the contract"
    library_softmaxes = ("F.scaled_dot_product_attention", "nn.MultiheadAttention", "F.multi_head_attention_forward")
    for exercise in exercises:
        # "any library softmax": the attention functions that take a softmax inside too (red team round 9)
        more = library_softmaxes if "any library softmax" in rows[exercise] else ()
        assert course.forbidden_calls(exercise) == forbidden_by_contract(rows[exercise]) + more, exercise
    assert forbidden_by_contract(rows["softmax"]) == ("torch.softmax", "F.softmax", "nn.Softmax", "log_softmax",
                                                      "torch.special.softmax")
    assert len(forbidden_by_contract(rows["scaled_dot_product_attention"])) == 3


def test_06_and_the_classes_of_02_to_05_forbid_nothing():
    for exercise in ("CachedMultiHeadAttention", "GroupedQueryAttention", "MultiHeadAttentionWithSWA",
                     "MultiHeadAttention", "attention_weights", "flash_attention", "online_softmax", "CausalAttention"):
        assert forbidden_of(exercise) == ()


def test_each_forbidden_call_is_refused_at_the_function_and_at_the_dispatcher():
    assert {"softmax", "_softmax", "_safe_softmax", "log_softmax", "_log_softmax"} <= set(forbidden_of("softmax"))
    # round 9: SDPA with a query e0, keys x_j e0, values I and scale 1 is x's softmax, and its CPU kernel
    # dispatches no _softmax
    assert {"scaled_dot_product_attention", "_scaled_dot_product_flash_attention_for_cpu"} <= \
        set(forbidden_of("softmax"))
    sdpa = set(forbidden_of("scaled_dot_product_attention"))
    assert {"scaled_dot_product_attention", "_scaled_dot_product_flash_attention_for_cpu",
            "multi_head_attention_forward", "_native_multi_head_attention"} <= sdpa
    assert all(OPERATIONS_OF[call] for a in COURSE.assignments for _, calls in a.forbidden for call in calls)


def test_sdpa_s_math_path_is_refused_at_the_dispatcher_where_the_function_level_watch_is_off():
    """Red team round 13: torch's own Python code calls an argument's __eq__, __iter__, __bool__ or
    __contains__ inside a torch function's handling, where the function-level watching is off; SDPA called
    there on 3-d inputs took its math path, which reaches the dispatcher as matmul and _safe_softmax. The
    forbidden SDPA is refused there too (and such methods make a file not observed: test_observable)."""
    import numbers

    from grader.inside.tracer import ForbiddenOperation, make_tracer

    q = torch.randn(2, 4, 6)
    ran = []

    class Probe:
        def __eq__(self, other):
            ran.append(torch.nn.functional.scaled_dot_product_attention(q, q, q))
            return False

    numbers.Number.register(Probe)  # Tensor.__contains__ compares a Number with every entry
    tracer = make_tracer(frozenset(forbidden_of("scaled_dot_product_attention")), measure=False)
    with pytest.raises(ForbiddenOperation), tracer:
        Probe() in q
    assert tracer.forbidden == ["_safe_softmax"] and not ran


def test_a_fused_layer_that_attends_inside_one_operator_is_refused_where_a_softmax_is_forbidden():
    """Red team round 27b (tests/corpus/heldout/round27b_red_team, a1): 01's softmax computed by
    nn.TransformerEncoderLayer's fast path, run as F.triplet_margin_with_distance_loss's distance function, where
    torch's handling has the function-level watching off: the dispatcher saw one operator,
    _transformer_encoder_layer_fwd, whose kernel attends (and softmaxes) below it (98.1 against 75). The fused
    layers are forbidden wherever a softmax or SDPA is, and so is any operator no table describes (its inside
    is not seen) wherever something is forbidden; an honest softmax that asserts with torch.allclose is not."""
    from grader.inside.tracer import ForbiddenOperation, make_tracer

    assert {"_transformer_encoder_layer_fwd", "_masked_softmax", "_native_multi_head_attention"} <= \
        set(forbidden_of("softmax"))
    layer = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=1, dropout=0.0, batch_first=True).eval()
    for parameter in layer.parameters():
        parameter.requires_grad_(False)
    x, masks = torch.randn(1, 3, 8), torch.zeros(2, 3, 3)
    with torch.no_grad():  # the layer as the loss's distance function (a module of torch's: no code of the student's)
        tracer = make_tracer(frozenset(forbidden_of("softmax")), measure=True)
        with pytest.raises(ForbiddenOperation), tracer:
            torch.nn.functional.triplet_margin_with_distance_loss(x, masks, masks, distance_function=layer)
    assert tracer.forbidden == ["_transformer_encoder_layer_fwd"], tracer.forbidden
    unknown = make_tracer(frozenset({"softmax"}), measure=True)
    with pytest.raises(ForbiddenOperation), unknown:
        torch.nn.functional.nll_loss(x[0], torch.zeros(3, dtype=torch.long))
    assert "cannot watch" in unknown.forbidden[0]
    honest = make_tracer(frozenset(forbidden_of("softmax")), measure=True)
    with honest:  # (an operator of no tensor, as torch.promote_types, computes nothing: corpus, fairseq's port)
        e = (x.to(torch.promote_types(x.dtype, torch.float32)) - x.amax(-1, keepdim=True)).exp()
        out = e / e.sum(-1, keepdim=True)
        assert torch.allclose(out.sum(-1), torch.ones(2, 3))
    assert honest.forbidden == [] and honest.elsewhere is None
    free = make_tracer(frozenset(), measure=True)  # nothing forbidden: measured at its widest, not refused
    with free:
        torch.nn.functional.nll_loss(x[0], torch.zeros(3, dtype=torch.long))
    assert free.forbidden == []


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the finaliser's refusal
def test_what_the_watching_held_is_let_go_while_it_watches():
    """Red team round 27b (a2, a3, a5): a started generator kept on a one-entry test tensor, which the tracer holds
    until the call ends (Tracer.tests), ran the library softmax in its ``finally`` when the tracer let it go,
    after its modes had ended: 01's softmax 100 against 75, 05's online_softmax and flash_attention at full marks
    with the whole row softmaxed there. The tracer now lets go of what it held while its modes are still on, so
    the finaliser's work is watched as the call's own (such generators also leave the file unobserved:
    test_observable)."""
    from grader.inside.tracer import ForbiddenOperation, make_tracer

    x = torch.randn(3, 5)
    ran = []

    def finaliser():
        try:
            yield
        finally:
            ran.append(torch.softmax(x, -1))

    for kept in ("test", "one"):
        ran.clear()
        tracer = make_tracer(frozenset(forbidden_of("softmax")), measure=True)
        with tracer:
            held = torch.isfinite(x).all() if kept == "test" else x.reshape(-1)[:1].sum()
            generator = finaliser()
            next(generator)
            held.generator = generator
            del generator, held
        assert tracer.forbidden and "softmax" in tracer.forbidden[0] and not ran, kept
        with pytest.raises(ForbiddenOperation):
            tracer.refuse(tracer.forbidden[0].split(" ")[0])


def test_any_torch_function_is_forbidden_by_its_dotted_name_at_both_levels():
    """A course of its own forbids what its exercises would shortcut (a newcomer's RMSNorm course: F.rms_norm,
    F.softplus) without a word in the grader: the bare name at the function level, whichever spelling or
    module reaches it, and the operator (and its underscored twin) at the dispatcher."""
    from grader.inside.forbidden import forbidden_operations, operations_of
    from grader.inside.tracer import ForbiddenOperation, make_tracer

    assert operations_of("F.rms_norm") == ("rms_norm", "_rms_norm") == operations_of("torch.nn.functional.rms_norm")
    assert operations_of("Tensor.logsumexp") == ("logsumexp", "_logsumexp") and operations_of("numpy.exp") is None
    x = torch.randn(3, 8)
    for spelled in (lambda: torch.nn.functional.rms_norm(x, (8,)), lambda: torch.nn.RMSNorm(8)(x),
                    lambda: torch.nn.functional.softplus(x), lambda: torch.nn.Softplus()(x)):
        tracer = make_tracer(frozenset(forbidden_operations(("F.rms_norm", "F.softplus"))))
        with pytest.raises(ForbiddenOperation), tracer:
            spelled()
    allowed = make_tracer(frozenset(forbidden_operations(("F.rms_norm",))))
    with allowed:
        (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)).sum()
    assert allowed.forbidden == []


@pytest.mark.parametrize("table,said", [
    ('[assignments.forbidden]\nsoftmax = ["torch.softmax"]\nnot_an_exercise = ["F.softmax"]\n',
     "not_an_exercise: not an exercise of this assignment's points"),
    ('[assignments.forbidden]\nsoftmax = ["numpy.exp"]\n', "'numpy.exp' is not a call the grader can forbid"),
    ('[assignments.forbidden]\nsoftmax = ["nn.RMSNorm"]\n', "'nn.RMSNorm' is not a call the grader can forbid"),
    ('[assignments.forbidden]\nsoftmax = "F.softmax"\n', "must be an array of strings"),
])
def test_a_forbidden_table_the_grader_cannot_enforce_is_refused_naming_the_key(tmp_path, table, said):
    text = (ROOT / "course.toml").read_text()
    text = re.sub(r"(?ms)^\[assignments\.forbidden\]\nsoftmax = .*?\n\n", table + "\n", text, count=1)
    (tmp_path / "course.toml").write_text(text.replace('misconceptions = "suites', '# misconceptions = "suites'))
    with pytest.raises(ConfigError, match=re.escape(said)):
        load_course(tmp_path)


def test_the_tracer_keeps_each_operators_largest_result_by_name():
    """06's keys-once rule reads a projection's largest result (an addmm or mm, as torch runs nn.Linear) apart from
    attention's batched products (red team round 23: inputs kept and projected again on calls its own check did
    not make)."""
    import torch

    from grader.inside.tracer import Tracer

    linear = torch.nn.Linear(4, 6)
    with torch.no_grad(), Tracer(frozenset()) as tracer:
        keys = linear(torch.randn(2, 5, 4))  # [2, 5, 6]: 60 entries, made by an addmm of [10, 6]
        torch.randn(2, 3, 6) @ keys.transpose(1, 2)  # [2, 3, 5]: scores by a batched product
    assert tracer.sizes["addmm"] == 60 and tracer.sizes["bmm"] == 30
