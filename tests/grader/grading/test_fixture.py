"""The suite-facing API of grader/grading/fixture.py, on paths the other tests do not take."""
import sys
from pathlib import Path

import pytest

from grader.grading.fixture import Grade
from grader.submission import resolve_submission

ROOT = Path(__file__).resolve().parents[3]


def test_half_precision_checks_pass_the_solutions_and_catch_an_unstable_softmax(course, grader, submission_dir,
                                                                                monkeypatch):
    # the float16/bfloat16 checks run on CUDA only; on this CPU we lift that gate to exercise them
    monkeypatch.setattr(Grade, "needs_cuda", lambda self: None)
    chosen = course.assignments
    result = grader.grade(resolve_submission(ROOT / "solutions", course), chosen, seed=31)
    half = [(a.id, e.name, c.name, c.status) for a in result.assignments for e in a.exercises for c in e.checks
            if c.name.endswith("half_precision")]
    assert len(half) == 16 and all(status == "passed" for *_, status in half), half
    module = submission_dir / "01_attention_basics" / "attention_basics.py"
    module.write_text(module.read_text().replace("x_max = x.amax(dim=dim, keepdim=True)  # [..., 1, ...]",
                                                 "x_max = x.amax(dim=dim, keepdim=True) * 0"))
    broken = grader.grade(resolve_submission(submission_dir, course), chosen[:1], seed=31)
    softmax = next(e for e in broken.assignments[0].exercises if e.name == "softmax")
    assert any(c.name == "softmax_half_precision" and c.status == "failed" for c in softmax.checks)


def test_checks_for_cuda_only_are_skipped_without_costing_points(solutions_result):
    names = [c.name for a in solutions_result.assignments for e in a.exercises for c in e.checks]
    # apply_rope's bfloat16 case runs on a CPU too (a result not cast back to x's dtype shows there: issue
    # 34); its float16 case and every other half-precision check need CUDA
    assert [name for name in names if name.endswith("half_precision")] == ["apply_rope_half_precision"]
    assert solutions_result.score == 600


# --- the grader verifies what the student's process says (issue 10, items 5 and 6) --------------------
SOLUTION_01 = (ROOT / "solutions" / "01_attention_basics" / "attention_basics.py").read_text()
SOLUTION_02 = (ROOT / "solutions" / "02_self_attention" / "self_attention.py").read_text()

# at import, rewrite the worker's replies as a hostile module can: the worker runs in its process
DROP_GRADIENTS = """
import sys as _sys
_worker = _sys.modules["grader.inside.worker"]
_call = _worker.Server.call
def _forged(self, request):
    reply = _call(self, request)
    reply["grads"] = []  # "nothing to check"
    reply.pop("grad_error", None)
    return reply
_worker.Server.call = _forged
"""
ZERO_BACKWARD_SOFTMAX = """
class _Softmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, dim):
        return torch.exp(x - x.amax(dim=dim, keepdim=True)) / torch.exp(x - x.amax(dim=dim, keepdim=True)).sum(dim=dim, keepdim=True)
    @staticmethod
    def backward(ctx, grad):
        return torch.zeros_like(grad), None
def softmax(x, dim=-1):
    return _Softmax.apply(x, dim)
"""


def _grade(course, grader, tmp_path, source: str, assignment="01_attention_basics", module="attention_basics.py",
           exercises=None, seed=7):
    path = tmp_path / module
    path.write_text(source)
    result = grader.grade(resolve_submission(path, course), (course.assignment(assignment),), seed=seed,
                          exercises=exercises)
    return {e.name: e for e in result.assignments[0].exercises}


def test_a_reply_that_drops_the_gradients_fails_the_gradient_checks_it_would_fail_anyway(course, grader, tmp_path,
                                                                                         boundary_alone):
    honest = _grade(course, grader, tmp_path, SOLUTION_01 + ZERO_BACKWARD_SOFTMAX, exercises=("softmax",))["softmax"]
    forged = _grade(course, grader, tmp_path, SOLUTION_01 + ZERO_BACKWARD_SOFTMAX + DROP_GRADIENTS,
                    exercises=("softmax",))["softmax"]
    assert honest.score < honest.max_score
    assert forged.score <= honest.score, (forged.score, honest.score)  # the forgery gains nothing
    assert any("no gradient flows" in c.message for c in forged.checks if c.status == "failed")
    right = _grade(course, grader, tmp_path, SOLUTION_01 + DROP_GRADIENTS, exercises=("softmax",))["softmax"]
    assert right.score < right.max_score  # a right answer whose gradients never arrive is not believed either


def test_a_reply_that_names_its_own_status_cannot_pass(course, grader, tmp_path):
    forged = SOLUTION_01 + ZERO_BACKWARD_SOFTMAX + """
import sys as _sys
_worker = _sys.modules["grader.inside.worker"]
_worker.Server.call = lambda self, request: {"ok": False, "kind": "passed", "message": "x" * 10**6}
"""
    ex = _grade(course, grader, tmp_path, forged, exercises=("softmax",))["softmax"]
    assert ex.score == 0 and {c.status for c in ex.checks} == {"error"}
    assert max(len(c.message) for c in ex.checks) < 5000  # the message is bounded too


FORBIDDEN_SOFTMAXES = {
    "an aten overload": "def softmax(x, dim=-1):\n    return torch.ops.aten._softmax.default(x, dim, False)\n",
    "the safe softmax": "def softmax(x, dim=-1):\n    return torch.ops.aten._safe_softmax.default(x, dim)\n",
    "an overload packet": "def softmax(x, dim=-1):\n    return torch.ops.aten._softmax(x, dim, False)\n",
    "TorchScript": "@torch.jit.script\ndef _s(x: torch.Tensor, dim: int) -> torch.Tensor:\n"
                   "    return torch.softmax(x, dim)\ndef softmax(x, dim=-1):\n    return _s(x, dim)\n",
    "a traced function": "_t = torch.jit.trace(lambda x: torch.softmax(x, -1), torch.randn(2, 3))\n"
                         "def softmax(x, dim=-1):\n    return _t(x.movedim(dim, -1)).movedim(-1, dim)\n",
    "torch.compile": "@torch.compile\ndef softmax(x, dim=-1):\n    return torch.softmax(x, dim)\n",
    "a caught refusal": "def softmax(x, dim=-1):\n    try:\n        return torch.softmax(x, dim)\n"
                        "    except BaseException:\n        return torch.softmax(x.double(), dim).to(x.dtype)\n",
}


@pytest.mark.parametrize("way", list(FORBIDDEN_SOFTMAXES))
def test_a_forbidden_operation_is_seen_however_it_is_called(course, grader, tmp_path, way):
    ex = _grade(course, grader, tmp_path, SOLUTION_01 + "\n" + FORBIDDEN_SOFTMAXES[way], exercises=("softmax",))
    softmax = ex["softmax"]
    assert softmax.status == "forbidden" and "forbidden-op" in softmax.misconceptions, (way, softmax.feedback)
    assert softmax.score == 0


def test_the_fused_attention_is_forbidden_by_its_aten_names_too(course, grader, tmp_path):
    source = SOLUTION_02 + """
def scaled_dot_product_attention(queries, keys, values, mask=None):
    return torch.ops.aten._scaled_dot_product_attention_math.default(queries, keys, values, mask)[0]
"""
    ex = _grade(course, grader, tmp_path, source, "02_self_attention", "self_attention.py",
                exercises=("scaled_dot_product_attention",))
    assert ex["scaled_dot_product_attention"].status == "forbidden"


def test_a_loop_inside_torchscript_is_still_a_loop(course, grader, tmp_path):
    source = SOLUTION_01 + """
@torch.jit.script
def attention_scores(inputs: torch.Tensor) -> torch.Tensor:
    rows = [torch.stack([torch.dot(inputs[i], inputs[j]) for j in range(inputs.shape[0])]) for i in range(inputs.shape[0])]
    return torch.stack(rows)
"""
    ex = _grade(course, grader, tmp_path, source, exercises=("attention_scores",))["attention_scores"]
    assert "not-vectorised" in ex.misconceptions, ex.feedback


def test_honest_torchscript_and_compiled_code_loses_nothing(course, grader, tmp_path):
    source = SOLUTION_01 + """
_reference_scores = attention_scores
@torch.jit.script
def attention_scores(inputs: torch.Tensor) -> torch.Tensor:
    return inputs @ inputs.transpose(-2, -1)
_plain_softmax = softmax
softmax = torch.compile(_plain_softmax)
"""
    for seed in (7, 2024, 31337):
        ex = _grade(course, grader, tmp_path, source, exercises=("attention_scores", "softmax"), seed=seed)
        assert all(e.score == e.max_score for e in ex.values()), {n: e.feedback for n, e in ex.items()}


def test_the_device_of_an_output_is_the_one_its_tensor_was_encoded_from(course):
    """Where the bytes came from is read off the tensor as it is encoded, not from a claim beside it."""
    import json

    import torch

    from grader.inside import protocol
    from grader.grading.fixture import CheckFailed, reply_of

    payload = protocol.encode({"ok": True, "out": torch.ones(2, 2), "out_device": "cuda:0"})
    reply = reply_of(protocol.decode(payload, limit=1 << 20))
    assert reply.device == "cpu"  # the claim beside it is not read
    size = int.from_bytes(payload[:4], "big")
    header = json.loads(payload[4:4 + size])
    header["tensors"][0][3] = "cuda:0"
    text = json.dumps(header, separators=(",", ":")).encode()
    moved = protocol.decode(len(text).to_bytes(4, "big") + text + payload[4 + size:], limit=1 << 20)
    reply = reply_of(moved)
    assert reply.device == "cuda:0"
    grade = Grade.__new__(Grade)
    grade.session = type("S", (), {"course": course, "seed": 1})()
    with pytest.raises(CheckFailed) as failure:
        grade.expect(reply, torch.ones(2, 2), "f(x)")
    assert failure.value.misconceptions == ("wrong-device",)


def test_a_reply_that_is_not_a_calls_is_the_students_error():
    from grader.grading.fixture import StudentFault, reply_of

    for reply in ({"ok": True}, {"ok": True, "out": None, "ops": -1}, {"ok": True, "out": None, "mutated": ["x"]}):
        with pytest.raises(StudentFault):
            reply_of(reply)


def test_a_module_of_constants_scores_nothing_in_any_assignment(course, grader, tmp_path):
    """Issue 11, item 1: properties (vectorised, operation counts, memory) score only with a right output
    on the same case; a module whose every function returns torch.zeros(1) earns no point anywhere."""
    import ast

    for assignment in course.assignments:
        reference = (ROOT / "solutions" / assignment.id / assignment.module).read_text()
        tree = ast.parse(reference)
        names = [node.name for node in tree.body if isinstance(node, ast.FunctionDef)]
        classes = [node.name for node in tree.body if isinstance(node, ast.ClassDef)]
        source = "import torch\n" + "".join(f"def {n}(*args, **kwargs):\n    return torch.zeros(1)\n" for n in names)
        source += "".join(f"class {c}(torch.nn.Module):\n    def __init__(self, *a, **k):\n        super().__init__()\n"
                          f"    def forward(self, *args, **kwargs):\n        return torch.zeros(1)\n" for c in classes)
        path = tmp_path / assignment.id / assignment.module
        path.parent.mkdir()
        path.write_text(source)
        result = grader.grade(resolve_submission(path, course), (assignment,), seed=7)
        earned = {e.name: e.score for e in result.assignments[0].exercises if e.score}
        assert earned == {}, (assignment.id, earned)


# correct implementations in styles the reference does not use (issue 11, item 4)
STYLES = {
    "logsumexp": """
def softmax(x, dim=-1):
    hidden = torch.isneginf(x).all(dim=dim, keepdim=True)
    lse = torch.logsumexp(x.masked_fill(hidden, 0.0), dim=dim, keepdim=True)
    return torch.exp(x - lse).masked_fill(hidden, 0.0)
""",
    "guarded two-pass": """
def softmax(x, dim=-1):
    m = x.max(dim=dim, keepdim=True).values
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    e = torch.exp(x - m)
    return e / e.sum(dim=dim, keepdim=True).clamp_min(1.0)  # a row's sum is 1 or more, 0 where all is -inf
""",  # (clamped at the smallest float instead, the gradient of an all -inf row overflows to NaN for an output
      # gradient past about 4: against the contract, and now caught on every seed, grad_scale)
    "einsum": """
def attention_scores(inputs):
    return torch.einsum("...id,...jd->...ij", inputs, inputs)
def simple_self_attention(inputs):
    weights = softmax(torch.einsum("...id,...jd->...ij", inputs, inputs), dim=-1)
    return torch.einsum("...ij,...jd->...id", weights, inputs)
""",
    "log domain": """
def softmax(x, dim=-1):
    m = x.amax(dim=dim, keepdim=True)
    shifted = x - m.masked_fill(torch.isinf(m), 0.0)
    log_total = torch.log(torch.exp(shifted).sum(dim=dim, keepdim=True).clamp_min(torch.finfo(x.dtype).tiny))
    return torch.exp(shifted - log_total)
""",
}


def test_a_softmax_whose_gradient_is_nan_on_a_hidden_row_loses_that_check_only(course, grader, tmp_path):
    """Issue 11, item 6: the all -inf case checks gradients too; a softmax that zeroes the NaN of the
    output (nan_to_num after the division) leaves NaN in the gradient, and loses that check alone."""
    source = SOLUTION_01 + """
def softmax(x, dim=-1):
    e = torch.exp(x - x.max(dim=dim, keepdim=True).values)
    return torch.nan_to_num(e / e.sum(dim=dim, keepdim=True), nan=0.0)
"""
    softmax = _grade(course, grader, tmp_path, source, exercises=("softmax",))["softmax"]
    failed = [c for c in softmax.checks if c.status != "passed"]
    assert [c.name for c in failed] == ["softmax_minus_infinity"] and "NaN" in failed[0].message, failed


@pytest.mark.slow
@pytest.mark.parametrize("style", list(STYLES))
def test_a_correct_answer_in_another_style_loses_no_point_on_twenty_seeds(course, grader, tmp_path, style):
    """Tolerances grounded in the reference's own rounding: each output and gradient may be off by a
    few times as much as the reference computed in float32 is from the reference in float64."""
    lost = []
    for seed in range(20):
        ex = _grade(course, grader, tmp_path, SOLUTION_01 + "\n" + STYLES[style], seed=seed,
                    exercises=("softmax", "attention_scores", "simple_self_attention"))
        lost += [(seed, e.name, e.feedback[:300]) for e in ex.values() if e.score < e.max_score]
    assert lost == []


def test_attention_weights_without_a_max_shift_is_caught_on_large_scores_and_named(course, grader, tmp_path):
    """Issue 11, item 6: a check whose scaled scores overflow a float32 exp."""
    source = SOLUTION_02 + """
def attention_weights(queries, keys, mask=None):
    scores = queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    e = torch.exp(scores)
    return e / e.sum(dim=-1, keepdim=True)
"""
    ex = _grade(course, grader, tmp_path, source, "02_self_attention", "self_attention.py",
                exercises=("attention_weights",))["attention_weights"]
    assert "attention_weights_large_scores" in [c.name for c in ex.checks if c.status == "failed"]
    assert ex.misconceptions == ["softmax-unstable"]


# --- hostile replies cost the grading process no more than a clean run, twice over (issue 21) -------------
@pytest.mark.slow
def test_hostile_replies_cost_the_grading_process_at_most_twice_a_clean_runs_memory(tmp_path):
    """benchmarks/red_team.py's attacks that cost the most before: 6.5 GB for broadcastable replies to
    03, 1.1 GB for replies just under the limit; issue 21's stride-0 reply and mask. Each ends in a
    result, not a traceback, at most twice the clean run's peak (VmHWM of the grading process)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import red_team

    chosen = ["broadcastable replies (03)", "64 MB replies (03)", "stride-0 replies (04)",
              "a [100000, 1, 1, 1, 1] mask (06)"]
    attacks = red_team.attacks()
    clean = {key: red_team.graded(red_team.build(tmp_path / f"clean-{key}", key, None)) for key in ("03", "04", "06")}
    for name in chosen:
        key, attack = attacks[name]
        got = red_team.graded(red_team.build(tmp_path / name.replace(" ", "_"), key, attack))
        assert got["code"] in (0, 1) and not got["traceback"], (name, got["stderr"])
        assert got["peak_mib"] <= 2 * clean[key]["peak_mib"], (name, got["peak_mib"], clean[key]["peak_mib"])
        assert got["score"] < 100, name


def test_a_module_of_an_earlier_assignment_missing_says_to_grade_the_two_together(course):
    """Issue 34, item 11(d): 04 graded alone gave a bare ModuleNotFoundError: causal_attention."""
    from grader.grading.outcomes import StudentFault
    from grader.grading.pytest_session import earlier_module_missing

    fourth = course.assignment("04_multi_head_attention")
    missing = StudentFault("error", "ModuleNotFoundError: No module named 'causal_attention'", "ModuleNotFoundError")
    said = earlier_module_missing(course, fourth, missing)
    assert "grade check 03_causal_attention 04_multi_head_attention" in said and "causal_attention.py" in said
    other = StudentFault("error", "ModuleNotFoundError: No module named 'einops'", "ModuleNotFoundError")
    assert earlier_module_missing(course, fourth, other) == ""


@pytest.mark.slow
def test_parameters_named_right_but_plain_tensors_are_said_to_be_plain_tensors(course, grader, tmp_path):
    """Issue 34, item 11: "missing W_query" for a W_query that is there, as a plain tensor, sent the
    student looking for a typo; the feedback says it is not an nn.Parameter."""
    root = Path(__file__).resolve().parents[3]
    sys.path.insert(0, str(root / "tests" / "corpus"))
    import corpus

    entry = corpus._entry(root / "tests" / "corpus" / "unnamed" / "issue34_02_SelfAttention_v1_plain_tensors.py", None)
    exercise, _ = corpus.grade_all([entry], course, grader, tmp_path, seed=3)[entry.name]
    assert exercise.score == 0
    assert "W_query, W_key, W_value are plain tensors, not nn.Parameter" in exercise.feedback, exercise.feedback


# --- float64 cases computed in float32 are said to be (issue 34) --------------------------------------
def test_a_float64_case_computed_in_float32_is_explained_without_an_id(course, grader, tmp_path):
    # llama2.c's F.softmax(scores.float()).type_as(q): right on float32 cases, float32's precision on float64
    source = SOLUTION_01.replace("return exp / total.clamp_min(1.0)",
                                 "return (exp.float() / total.float().clamp_min(1.0)).to(x.dtype)")
    assert source != SOLUTION_01
    softmax = _grade(course, grader, tmp_path, source, exercises=("softmax",))["softmax"]
    failed = [c for c in softmax.checks if c.status == "failed"]
    assert failed and not softmax.misconceptions
    clause = "right only to float32's precision: somewhere this is computed in float32"
    assert all(clause in c.message and "float64" in c.message for c in failed), [c.message for c in failed]
    assert all(clause not in c.message for c in softmax.checks if c.status == "passed")


def test_a_mistake_diagnosis_names_wins_over_the_float32_clause():
    import torch

    from grader.config import Tolerance
    from grader.grading.compare import rounded_in_float32
    from grader.grading.fixture import diagnosed
    from grader.grading.outcomes import CheckFailed

    class Stub:  # what diagnosis asks of a Grade
        case_slack = 0.0

        def tolerance(self, tensor):
            return Tolerance(rtol=1e-9, atol=1e-9)

    out = torch.ones(3, dtype=torch.float64)
    clause = f"; {rounded_in_float32()}"

    def check():
        raise CheckFailed(f"f: the output is off (seed 1){clause}", out=out)

    with pytest.raises(CheckFailed) as unnamed:  # no candidate explains it: the clause stays
        diagnosed(Stub(), check, [("wrong-scale", "scaled twice", torch.zeros(3, dtype=torch.float64))], None, None,
                  None)
    assert unnamed.value.message.endswith(clause) and unnamed.value.misconceptions == ()
    with pytest.raises(CheckFailed) as named:  # one does: it is what the student reads
        diagnosed(Stub(), check, [("wrong-scale", "scaled twice", out.clone())], None, None, None)
    assert named.value.misconceptions == ("wrong-scale",)
    assert named.value.message == "f: the output is off (seed 1); scaled twice", named.value.message
    assert named.value.unexplained.endswith(clause)  # what it says should another case contradict the name


def _bare_grade(memo, nodeid="suites/hidden/test_x.py::test_x"):
    """A Grade with nothing of a grading run but its seed and the batch's memo (``memo``, or None)."""
    from types import SimpleNamespace

    session = SimpleNamespace(memo=memo, recording=None, device="cpu", seed=7,
                              course=SimpleNamespace(grading=SimpleNamespace(cascades="once")))
    return Grade(session, None, None, nodeid, SimpleNamespace(args=()))


def test_a_large_draw_is_kept_for_the_batch_and_the_generator_goes_on_as_if_drawn():
    """Issue 47: 06's memory cases draw a million float64 entries (20 ms) for every submission of a batch.
    The batch's memo keeps a large draw under the generator's state before it, with the state after it:
    the next submission's same check gets the same tensor (a copy) and the same draws after it."""
    import torch

    from grader.grading.reference_cache import ReferenceMemo

    def draws(grade):
        return grade.randn(64, 32, 128, dtype=torch.float64), grade.randn(3), grade.rand(300, 1000), grade.randn(2, 2)

    alone = draws(_bare_grade(None))
    memo = ReferenceMemo()
    first = draws(_bare_grade(memo))
    first[0].zero_()  # a check that writes into what it was given
    second = draws(_bare_grade(memo))
    assert memo.hits == 2 and memo.misses == 2  # the two large draws, kept once and found once
    assert all(torch.equal(a, b) for a, b in zip(alone, second))
    other = draws(_bare_grade(memo, "suites/hidden/test_x.py::test_y"))  # another check: its own seed
    assert not torch.equal(other[0], alone[0]) and memo.misses == 4


def test_a_value_worked_out_by_a_check_is_kept_by_the_batch_under_what_it_reads():
    import torch

    from grader.grading.reference_cache import ReferenceMemo

    memo, calls = ReferenceMemo(), []
    x = torch.randn(512, 512, dtype=torch.float64)

    def work():
        calls.append(1)
        return torch.linalg.matrix_power(x, 8)

    values = [_bare_grade(memo).worked_out(work, x) for _ in range(3)]
    assert len(calls) == 1 and all(torch.equal(v, values[0]) for v in values)
    assert _bare_grade(None).worked_out(work, x) is not None and len(calls) == 2  # no batch: computed


def test_a_reference_functions_operator_count_is_kept_for_the_batch_and_a_modules_is_not():
    """Issue 47: 05's vectorisation checks count the reference's flash_attention and online_softmax on every
    case (60 ms of a grading). A reference function's count depends on its sizes and settings alone, so the
    batch's memo keeps it for the next submission; a module's may depend on what it keeps (a KV cache), so each
    grading counts its own; without a batch each grading counts."""
    from types import SimpleNamespace

    import torch

    from grader.grading.reference_cache import ReferenceMemo

    calls = []

    def attention(q, k):
        calls.append(1)
        return torch.softmax(q @ k.mT, dim=-1)

    layer = torch.nn.Linear(4, 4)
    reference = SimpleNamespace(attention=attention)
    memo, q = ReferenceMemo(), torch.randn(2, 3, 4)

    def counted(memo):
        grade = _bare_grade(memo)
        grade.session.reference_counts, grade.ref, grade.device, grade.reference_ops = {}, reference, "cpu", {}
        grade.count_reference("attention", lambda: reference.attention, (q, q), {})
        grade.count_reference("layer", lambda: layer, (q,), {})
        return grade.reference_ops

    first = counted(memo)
    assert first["attention"] >= 3 and first["layer"] >= 1 and len(calls) == 1
    assert counted(memo) == first and len(calls) == 1  # the batch's next submission: the function's count kept
    assert list(memo.counts.values()) == [first["attention"]]  # the function's count only
    assert counted(None) == first and len(calls) == 2  # no batch: counted again


def test_a_value_worked_out_ahead_is_computed_on_another_thread_in_the_callers_grad_mode():
    """grade check of 06: the memory cases' last-chunk attention (36 ms each) is worked out while the student's
    processes run the cached sequence; its value and any error are what computing it then would give."""
    import threading

    import torch

    from grader.grading.reference_cache import ReferenceMemo

    x = torch.randn(8, 8, requires_grad=True)
    threads = []

    def work():
        threads.append(threading.current_thread().name)
        return (x * 2).requires_grad

    with torch.no_grad():
        later = _bare_grade(None).worked_out_ahead(work, x)
    assert later() is False and threads[-1].startswith("worked-out")
    assert _bare_grade(None).worked_out_ahead(work, x)() is True

    def broken():
        raise ValueError("worked out wrong")

    with pytest.raises(ValueError, match="worked out wrong"):
        _bare_grade(None).worked_out_ahead(broken)()
    memo = ReferenceMemo()  # a batch: computed now, on this thread, and kept for the next submission
    assert _bare_grade(memo).worked_out_ahead(work, x)() is True and threads[-1] == threading.current_thread().name


# --- the reference computed while the worker runs the student's call (issue 47) -------------------------
def test_the_students_call_is_sent_before_the_references_work_and_a_failing_reference_drops_its_reply(
        course, grader, monkeypatch):
    """Grade.same and ModulePair.same send the student's call as soon as its inputs are known (before the
    reference's forward pass; with gradients, once the output gradient is drawn) and compute the reference
    while the worker runs it. Should the reference fail meanwhile, the reply is taken and dropped: every later
    request of the worker still gets its own reply (a stale one would fail every later check)."""
    import grader.grading.pytest_session as pytest_session

    order = []
    send, event = pytest_session.Student.send, Grade._event
    monkeypatch.setattr(pytest_session.Student, "send",
                        lambda self, payload: order.append(("send", payload.get("op"))) or send(self, payload))
    broken = []

    def traced(self, compute, *reads, **kwargs):
        order.append(("reference", compute.__name__))
        if compute.__name__ == "backward" and not broken and order[-2] == ("send", "call"):
            broken.append(self.nodeid)
            raise RuntimeError("the reference failed here")
        return event(self, compute, *reads, **kwargs)

    monkeypatch.setattr(Grade, "_event", traced)
    result = grader.grade(resolve_submission(ROOT / "solutions", course), course.assignments[:2], seed=5)
    assert ("send", "call") in order and ("reference", "forward") in order
    sent_first = [i for i in range(1, len(order)) if order[i] == ("reference", "forward")
                  and order[i - 1] == ("send", "call")]
    assert sent_first  # a call without gradients: sent before the reference's forward pass
    checks = [c for a in result.assignments for e in a.exercises for c in e.checks]
    failed = [c.name for c in checks if c.status != "passed"]
    assert broken and len(failed) == 1 and failed[0] in broken[0], [(c.name, c.message[:200]) for c in checks
                                                                   if c.status != "passed"][:4]
    assert len(checks) > 40
