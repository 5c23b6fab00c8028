"""The grader's side of the stand-ins (grader/grading/oracle.py): issue 43, answers stay on the grader's side."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "corpus"))
import corpus  # noqa: E402

from grader.grading.oracle import LiveAnswers, NotOnRecord, Oracle, RecordedAnswers, budget, signatures_in  # noqa: E402
from grader.submission import resolve_submission  # noqa: E402

HUNTER = '"""scaled_dot_product_attention: an attacker that searches its own process for the grader\'s answers while\nits kept case is verified (issue 43), and reports what it finds through its feedback"""\nimport gc\nimport sys\n\nimport torch\n\n\ndef attention_weights(queries, keys, mask=None):\n    scores = queries @ keys.transpose(-2, -1) / keys.shape[-1]  # wrong on purpose: divided by d_k\n    if mask is not None:\n        scores = scores.masked_fill(mask, float("-inf"))\n    return torch.softmax(scores, dim=-1)\n\n\ndef _found():\n    """Every code object in the process that this file did not bring and Python or torch did not either."""\n    import inspect\n    import os\n    import types\n\n    mine = os.path.realpath(__file__)\n    bases = tuple({os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, os.__file__.rsplit("/", 1)[0])})\n    seen, found = set(), set()\n\n    def visit(code):\n        if id(code) in seen:\n            return\n        seen.add(id(code))\n        name = code.co_filename\n        path = os.path.realpath(name) if name.startswith("/") else name\n        if path != mine and not path.startswith(bases) and not name.startswith("<frozen"):\n            found.add(f"{name}:{code.co_name}")\n        for const in code.co_consts:\n            if isinstance(const, types.CodeType):\n                visit(const)\n\n    for obj in gc.get_objects():\n        try:\n            code = getattr(obj, "__code__", None) if callable(obj) else None\n        except Exception:\n            continue\n        if isinstance(obj, types.CodeType):\n            visit(obj)\n        elif isinstance(code, types.CodeType):\n            visit(code)\n    frame = sys._getframe()\n    while frame is not None:\n        visit(frame.f_code)\n        frame = frame.f_back\n    for module in list(sys.modules.values()):\n        for value in list(getattr(module, "__dict__", {}).values()):\n            try:\n                code = getattr(value, "__code__", None)\n            except Exception:\n                continue\n            if isinstance(code, types.CodeType):\n                visit(code)\n    modules = sorted(n for n in sys.modules if n.startswith(("grader.grading", "lesson", "solutions", "suites")))\n    stand_in = globals()["attention_weights"]\n    source = ""\n    try:\n        source = inspect.getsource(stand_in)\n    except (OSError, TypeError):\n        pass\n    return sorted(found), modules, source\n\n\ndef scaled_dot_product_attention(queries, keys, values, mask=None):\n    if getattr(globals()["attention_weights"], "__code__", None) is None or globals()["attention_weights"].__code__.co_filename != __file__:  # a stand-in is in place: the grader is verifying\n        found, modules, source = _found()\n        foreign = sorted({f.rsplit(":", 1)[0] for f in found if "/grader/inside/" not in f})\n        words = [w for w in ("sqrt", "softmax", "masked_fill", "transpose", "exp(") if w in source]\n        stand_in = globals()["attention_weights"]\n        where = getattr(getattr(stand_in, "__code__", None), "co_filename", "")\n        raise ValueError("HUNT" + repr({"foreign": foreign, "modules": modules, "words": words, "where": where}) + "HUNT")\n    return attention_weights(queries, keys, mask) @ values\n'


@pytest.mark.slow
@pytest.mark.parametrize("suite", ["hidden", "public"])
def test_a_submission_that_searches_its_process_while_verified_finds_no_answer(course, grader, tmp_path, suite,
                                                                              boundary_alone):
    """Issue 43: a wrong attention_weights, and a scaled_dot_product_attention that, once a stand-in is in
    place (the grader verifying "right, given your attention_weights"), searches its process (gc, frames,
    sys.modules, its own module) for code it did not bring and reports it in its feedback. Its raise costs
    the exercise its points, and since red team round 9 a verification run's raise is not said (round 14:
    not even its exception's name, which the code chooses), so that no report of what it found (nor any
    answer it was given) reaches the feedback (what the search found, while it could say it: grader/inside's
    own code, no right helper's, session 5's notes)."""
    path = tmp_path / "answer_hunter.py"
    path.write_text(HUNTER)
    entry = corpus._entry(path, None)
    exercise, _ = corpus.grade_all([entry], course, grader, tmp_path / "run", suite=suite, quick=True)[entry.name]
    assert "HUNT" not in exercise.feedback, exercise.feedback[:800]
    assert "with a right attention_weights in place of yours" in exercise.feedback
    assert "ValueError" not in exercise.feedback and "fixed to see where" in exercise.feedback
    assert exercise.score < exercise.max_score / 2


def _softmax(x, dim=-1):
    import torch

    return torch.softmax(x, dim=dim)


def test_the_oracle_answers_only_its_helpers_within_their_budget():
    import torch

    oracle = Oracle(LiveAnswers({"softmax": _softmax}, "cpu"), ["softmax"], {"softmax": 2})
    x = torch.randn(3, 4)
    question = {"op": "forward", "name": "softmax", "args": (x,), "kwargs": {}, "params": [], "grad": []}
    assert torch.allclose(oracle(question)["out"], torch.softmax(x, dim=-1))
    assert "refused" in oracle({**question, "name": "attention_weights"})  # not being verified
    oracle(question)
    assert "refused" in oracle(question) and oracle.exhausted == ["softmax"]  # a third call: over the budget
    assert "refused" in oracle({"op": "backward", "call": 99, "grads": []})  # no such call of this run


def test_the_oracle_gives_the_gradients_of_the_call_it_answered():
    import torch

    oracle = Oracle(LiveAnswers({"softmax": _softmax}, "cpu"), ["softmax"], {"softmax": 4})
    x = torch.randn(2, 5, dtype=torch.float64)
    answer = oracle({"op": "forward", "name": "softmax", "args": (x,), "kwargs": {}, "params": [], "grad": [0]})
    g = torch.randn(2, 5, dtype=torch.float64)
    grads = oracle({"op": "backward", "call": answer["call"], "grads": [g]})["grads"]
    leaf = x.clone().requires_grad_()
    torch.softmax(leaf, dim=-1).backward(g)
    assert torch.allclose(grads[0], leaf.grad)
    # red team round 27a (r3): backward passes through one answered call, asked again and again, were free
    again = [oracle({"op": "backward", "call": answer["call"], "grads": [g]}) for _ in range(3)]
    assert "grads" in again[0] and all("refused" in a for a in again[1:]) and oracle.refused
    slow = Oracle(LiveAnswers({"softmax": _softmax}, "cpu"), ["softmax"], {"softmax": 4})
    slow.spent = 11.0  # past the run's time: every later question refused
    assert "refused" in slow({"op": "forward", "name": "softmax", "args": (x,), "kwargs": {}, "params": [], "grad": []})


def test_a_right_helpers_raise_is_answered_as_a_raise_of_the_same_kind():
    import torch

    def split(x, heads):
        if x.shape[-1] % heads:
            raise ValueError("does not split")
        return x

    oracle = Oracle(LiveAnswers({"split_heads": split}, "cpu"), ["split_heads"], {"split_heads": 4})
    answer = oracle({"op": "forward", "name": "split_heads", "args": (torch.zeros(1, 2, 5), 2), "kwargs": {},
                     "params": [], "grad": []})
    # its kind only: the reference's own words ("does not split") would say how it computes (round 9)
    assert answer == {"raises": "ValueError", "message": "a right split_heads raises ValueError on these arguments"}
    record: list = []
    recorded = Oracle(LiveAnswers({"split_heads": split}, "cpu", record), ["split_heads"], {"split_heads": 4})
    recorded({"op": "forward", "name": "split_heads", "args": (torch.zeros(1, 2, 5), 2), "kwargs": {}, "params": [],
              "grad": []})
    assert record[0]["raises"] == ["ValueError", ""]  # nor is it written into a student distribution's recording


def test_a_recording_answers_the_calls_it_holds_and_refuses_the_rest(course):
    import torch

    record: list = []
    live = Oracle(LiveAnswers({"softmax": _softmax}, "cpu", record), ["softmax"], {"softmax": 4})
    x = torch.randn(3, 4)
    question = {"op": "forward", "name": "softmax", "args": (x,), "kwargs": {"dim": -1}, "params": [], "grad": []}
    live(question)
    replay = Oracle(RecordedAnswers(record, course.tolerance), ["softmax"], budget(["softmax"], record))
    nearby = {**question, "args": (x * (1 + 1e-7),)}  # the same call, computed another way: rounding apart
    assert torch.equal(replay(nearby)["out"], torch.softmax(x, dim=-1))
    assert "refused" in replay({**question, "args": (x * 2,)})  # another call: not on record, said so
    assert replay.unanswered and budget(["softmax"], record)["softmax"] >= 4


GAP_FORGER = '''"""scaled_dot_product_attention: a forger that, while its kept case is verified, asks the grader through
the stand-in's channel one question no right helper's call makes, and returns a wrong output"""
import torch


def attention_weights(queries, keys, mask=None):
    scores = queries @ keys.transpose(-2, -1) / keys.shape[-1]  # wrong on purpose: divided by d_k
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    return torch.softmax(scores, dim=-1)


def scaled_dot_product_attention(queries, keys, values, mask=None):
    weights = attention_weights(queries, keys, mask)
    # the stand-in (the helper's own function runs it, grader.inside.worker.Server.stand_in): where the worker keeps it
    helper = globals().get("grader stand-in for attention_weights")
    if getattr(helper, "__closure__", None):  # a stand-in: its closure holds the channel to the grader
        for cell in helper.__closure__:
            ask = cell.cell_contents
            if callable(ask) and getattr(ask, "__name__", "") == "ask":
                ask({"op": "forward", "name": "attention_weights", "args": ("not a tensor",), "kwargs": {},
                     "params": [], "grad": []})
                ask({"op": "new", "name": "attention_weights", "args": ("object",), "kwargs": {}})
        return torch.zeros(*weights.shape[:-1], values.shape[-1], dtype=values.dtype)  # wrong on purpose
    return weights @ values
'''


@pytest.mark.slow
@pytest.mark.parametrize("suite", ["hidden", "public"])
def test_a_question_no_right_call_makes_is_refused_and_keeps_no_case(course, grader, tmp_path, suite, boundary_alone):
    """Review of issue 43: a question the reference cannot answer (not a tensor; a function built as a
    class) raised out of the oracle into the grading (a grader error: the check neither cost nor earned);
    and an unanswered question could have made a wrong exercise's case stand as kept. Now it is refused,
    the verification goes on, and the exercise's own mistake is the verdict."""
    path = tmp_path / "gap_forger.py"
    path.write_text(GAP_FORGER)
    entry = corpus._entry(path, None)
    exercise, _ = corpus.grade_all([entry], course, grader, tmp_path / "run", suite=suite, quick=True)[entry.name]
    assert exercise.status == "failed" and exercise.score < exercise.max_score / 2, exercise.feedback[:500]
    assert "with a right attention_weights in place of yours" in exercise.feedback
    assert "could not be checked" not in exercise.feedback


def test_a_malformed_question_is_refused_and_is_no_recordings_gap(course):
    import torch

    live = Oracle(LiveAnswers({"softmax": _softmax}, "cpu"), ["softmax"], {"softmax": 8})
    assert "refused" in live({"op": "new", "name": "softmax", "args": ("x",), "kwargs": {}})
    # the right softmax raises TypeError on a string: answered as that raise, as any right helper's raise
    assert live({"op": "forward", "name": "softmax", "args": ("x",), "kwargs": {}, "grad": []})["raises"] == "TypeError"
    assert live.unanswered == []
    record: list = []
    x = torch.randn(3, 4)
    Oracle(LiveAnswers({"softmax": _softmax}, "cpu", record), ["softmax"], {"softmax": 4})(
        {"op": "forward", "name": "softmax", "args": (x,), "kwargs": {}, "params": [], "grad": []})
    replay = Oracle(RecordedAnswers(record, course.tolerance), ["softmax"], {"softmax": 8})
    assert "refused" in replay({"op": "new", "name": "softmax", "args": ("x",), "kwargs": {}})  # nothing like it
    assert "refused" in replay({"op": "forward", "name": "softmax", "args": (x + 1,), "kwargs": {}, "params": []})
    # a call the recording lacks: the student's preview says it could not check the case (on the student's
    # own machine, where nothing its code asks reaches the instructor's grade)
    assert len(replay.unanswered) == 2


def test_a_gap_keeps_the_case_only_where_nothing_on_record_was_missed(course):
    """A student distribution's gap keeps a case as it stood where some call was on record, or where the
    check has no call of the helper on record at all (a memory measure never asks the reference); not where
    calls were recorded and none matched (the exercise's own values went wrong before the helper)."""
    import torch

    record: list = []
    x = torch.randn(3, 4)
    Oracle(LiveAnswers({"softmax": _softmax}, "cpu", record), ["softmax"], {"softmax": 4})(
        {"op": "forward", "name": "softmax", "args": (x,), "kwargs": {}, "params": [], "grad": []})
    call = {"op": "forward", "name": "softmax", "kwargs": {}, "params": []}
    missed = Oracle(RecordedAnswers(record, course.tolerance), ["softmax"], {"softmax": 8})
    missed({**call, "args": (x * 3,)})
    assert missed.unanswered and not missed.gap_keeps_the_case()
    partly = Oracle(RecordedAnswers(record, course.tolerance), ["softmax"], {"softmax": 8})
    partly({**call, "args": (x,)})
    partly({**call, "args": (x * 3,)})
    assert partly.unanswered and partly.gap_keeps_the_case()
    nothing = Oracle(RecordedAnswers([], course.tolerance), ["softmax"], {"softmax": 8})
    nothing({**call, "args": (x,)})
    assert nothing.unanswered and nothing.gap_keeps_the_case()


def test_a_question_of_sizes_no_right_exercise_asks_is_refused_before_anything_is_computed():
    """The red team's memory bomb: sliding_window_mask(24000, 24000, 3) asked of the stand-in made the
    grading process compute three 576-million-element masks (8 GB). Sizes are worked out on torch's meta
    device first: answers past 2**23 elements, or 16 times the question's largest tensor, are refused."""
    import resource

    import torch

    def mask(num_queries, num_keys, window, q_start=0, k_start=0, device=None):
        rows = torch.arange(q_start, q_start + num_queries, device=device)[:, None]
        cols = torch.arange(k_start, k_start + num_keys, device=device)[None, :]
        return (cols > rows) | (cols <= rows - window)

    def repeat(x, group_size):
        return x.repeat_interleave(group_size, dim=1)

    class Linear(torch.nn.Module):
        def __init__(self, d_in, d_out):
            super().__init__()
            self.W = torch.nn.Linear(d_in, d_out)

        def forward(self, x):
            return self.W(x)

    oracle = Oracle(LiveAnswers({"mask": mask, "repeat": repeat, "Linear": Linear}, "cpu"), ["mask", "repeat", "Linear"],
                    {"mask": 8, "repeat": 8, "Linear": 8})
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert "576,000,000 elements" in oracle({"op": "forward", "name": "mask", "args": [24000, 24000, 3], "kwargs": {}})["refused"]
    assert "refused" in oracle({"op": "forward", "name": "repeat", "args": [torch.ones(1, 2, 1000, 64), 5000], "kwargs": {}})
    assert "refused" in oracle({"op": "new", "name": "Linear", "args": [24000, 24000], "kwargs": {}})
    assert "refused" in oracle({"op": "forward", "name": "Linear", "new_args": [24000, 24000], "new_kwargs": {},
                                "args": [torch.ones(1, 24000)], "kwargs": {}, "params": [], "param_names": []})
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200 * 1024  # KiB: nothing of it was made
    assert oracle.unanswered == []  # a refusal, never a recording's gap
    right = oracle({"op": "forward", "name": "mask", "args": [6, 6, 3], "kwargs": {}})
    assert torch.equal(right["out"], mask(6, 6, 3))


def _masked():
    """A class helper as the lesson writes one: its mask a buffer of context_length x context_length."""
    import torch

    class CausalAttention(torch.nn.Module):
        def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
            super().__init__()
            self.W_query = torch.nn.Linear(d_in, d_out, bias=qkv_bias)
            self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

        def forward(self, x):
            return self.W_query(x)

    return CausalAttention


def test_a_class_helpers_question_is_sized_by_its_buffers_and_held_to_its_signature():
    """Red team round 26d (t3): only in the run with stand-ins, a wrapper made CausalAttention(1, 1, 60000, 0.0),
    and the grader made the reference's 60000 x 60000 mask in its own process (7.3 GB): a question was sized by the
    parameters it would make alone. And a class helper's question was never held to its signature (a flag the
    student's own class reads, as round 25's was for functions)."""
    import torch

    def oracle():
        return Oracle(LiveAnswers({"CausalAttention": _masked()}, "cpu"), ["CausalAttention"], {"CausalAttention": 8})

    new = {"op": "new", "name": "CausalAttention", "args": (1, 1, 60000, 0.0), "kwargs": {}}
    asked = oracle()
    assert "refused" in asked(new) and asked.refused
    right = oracle()({**new, "args": (2, 3, 6, 0.0)})
    assert set(right["params"]) == {"W_query.weight"}  # a right size is answered
    flagged = oracle()
    assert "refused" in flagged({**new, "args": (2, 3, 6, 0.0), "kwargs": {"stacked": True}}) and flagged.refused
    forward = {"op": "forward", "name": "CausalAttention", "new_args": (2, 3, 6, 0.0), "new_kwargs": {},
               "training": False, "param_names": ["W_query.weight"], "args": (torch.zeros(1, 6, 2),), "kwargs": {},
               "params": [right["params"]["W_query.weight"]], "grad": []}
    assert oracle()(forward)["out"].shape == (1, 6, 3)
    for question in ({**forward, "kwargs": {"flag": 1}}, {**forward, "new_args": (2, 3, 60000, 0.0)}):
        refused = oracle()
        assert "refused" in refused(question) and refused.refused, question
    # round 26e: small answers of large work ([64, 2048, 2048] scores on the way), sized on meta as they are made
    wide = oracle()
    scores = {**forward, "args": (torch.ones(64, 2048, 2),), "kwargs": {}}
    scores["params"] = [torch.zeros(3, 2)]
    import grader.grading.oracle as module

    class Scoring(_masked()):
        def forward(self, x):
            return self.W_query(x) + (x @ x.transpose(-2, -1)).sum(-1, keepdim=True)

    wide.answers.functions["CausalAttention"] = Scoring
    assert "refused" in wide(scores) and "on the way" in wide.refused[0]
    assert module.MAX_RUN_BYTES < 256 * module.MAX_ELEMENTS  # and all of a run's answers together are bounded


def test_a_runs_answers_are_bounded_with_what_their_graphs_keep_and_an_unsizable_question_is_refused():
    """Red team round 27a (r1, r2; tests/corpus/heldout/round27a_red_team): eight questions of a dropout class on
    [1900, 64, 1] float64 inputs, each within the bound of elements and together within the run's, kept 3.6 GiB in
    the grading process (each answer's autograd graph: the scores, the softmax, the dropout's mask), 14 GiB once
    every run's were kept; and a tensor for qkv_bias made the meta run fail, whose fallback bounded only the
    integers (a 9000-feature class built, 3 GB). A run's answers are now bounded by the bytes the reference makes
    on the way to them, a one-entry tensor given as a setting is sized as its value, and where the meta run fails
    (the right helper raises) no integer may pass 1024."""
    import torch

    import grader.grading.oracle as module

    class Dropping(_masked()):
        def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
            super().__init__(d_in, d_out, context_length, dropout, qkv_bias)
            self.dropout = torch.nn.Dropout(dropout)

        def forward(self, x):
            scores = self.W_query(x) @ self.W_query(x).transpose(-2, -1)
            return self.dropout(torch.softmax(scores, dim=-1)) @ self.W_query(x)

    oracle = Oracle(LiveAnswers({"CausalAttention": Dropping}, "cpu"), ["CausalAttention"], {"CausalAttention": 64})
    params = oracle({"op": "new", "name": "CausalAttention", "args": (1, 64, 64, 0.5), "kwargs": {}})["params"]
    question = {"op": "forward", "name": "CausalAttention", "new_args": (1, 64, 64, 0.5), "new_kwargs": {},
                "training": True, "param_names": ["W_query.weight"], "params": [params["W_query.weight"].double()],
                "kwargs": {}, "grad": [0]}
    answered = 0
    for i in range(8):
        reply = oracle({**question, "args": (torch.full((400, 64, 1), float(i + 1), dtype=torch.float64),)})
        answered += "out" in reply
    assert 0 < answered < 8 and oracle.refused and "in one run" in oracle.refused[-1]
    assert oracle.answers.made <= module.MAX_RUN_BYTES + 400 * 64 * 64 * 8 * 12
    unsized = Oracle(LiveAnswers({"CausalAttention": _masked()}, "cpu"), ["CausalAttention"], {"CausalAttention": 8})
    reply = unsized({"op": "new", "name": "CausalAttention", "args": (9000, 9000, 9000, 0.0, torch.tensor(True)),
                     "kwargs": {}})
    assert "refused" in reply and "elements" in unsized.refused[0]  # sized with the setting's value: too large
    small = unsized({"op": "new", "name": "CausalAttention", "args": (2, 3, 6, 0.0, torch.tensor(True)), "kwargs": {}})
    assert set(small["params"]) == {"W_query.weight", "W_query.bias"}

    def causal_mask(n, device=None):  # round 27c (r2): a size given as a tensor, causal_mask(torch.tensor(30000))
        return torch.triu(torch.ones(n, n, dtype=torch.bool, device=device), diagonal=1)

    masks = Oracle(LiveAnswers({"causal_mask": causal_mask}, "cpu"), ["causal_mask"], {"causal_mask": 8})
    call = {"op": "forward", "name": "causal_mask", "kwargs": {}, "params": [], "grad": []}
    assert "refused" in masks({**call, "args": (torch.tensor(30000),)}) and "900,000,000" in masks.refused[0]
    assert masks({**call, "args": (torch.tensor(6),)})["out"].shape == (6, 6)


ROUND_27A = Path(__file__).resolve().parents[2] / "corpus" / "heldout" / "round27a_red_team"


@pytest.mark.slow
@pytest.mark.parametrize("attack", ["r1_oracle_memory", "r2_sized_fallback", "r3_backward_cpu"])
def test_questions_asked_only_in_the_run_with_stand_ins_cost_the_grader_little(course, grader, tmp_path, attack):
    """Red team round 27a (blind, white box; tests/corpus/heldout/round27a_red_team): a wrapper that tells the run with
    stand-ins apart (a stand-in never runs the student's own __init__) asked there eight graph-heavy questions a run
    (r1: 14 GiB kept over the runs, 54 s), a class whose size the meta device could not work out (r2: 3 GiB, and a
    16384-feature one killed by the kernel), or backward passes through one answered call for eight seconds a call
    (r3: 76 s). Each now grades in seconds (the run's answers bounded by the bytes they keep, each run's let go when it
    ends, settings sized by their values, one backward pass a call, a run's processor time bounded), its wrapper
    scoring what the plain form's does."""
    import time

    folder = tmp_path / attack
    for module in ROUND_27A.glob(f"{attack}__*.py.txt"):  # <attack>__<assignment id>_<module file>.txt
        kept = module.name.split("__")[1].removesuffix(".txt")
        assignment = next(a for a in course.assignments if kept == f"{a.id}_{a.module}")
        (folder / assignment.id).mkdir(parents=True)
        (folder / assignment.id / assignment.module).write_text(module.read_text())
    started = time.monotonic()
    result = grader.grade(resolve_submission(folder, course), (course.assignment("04_multi_head_attention"),), seed=3)
    assert time.monotonic() - started < 30
    wrapper = next(e for e in result.assignments[0].exercises if e.name == "MultiHeadAttentionWrapper")
    assert wrapper.score < wrapper.max_score  # its head class is unscaled: the wrapper's cases are its own


def test_a_recording_gives_each_check_its_own_budget_of_the_graders_time():
    """A release's recorder answers the reference's helpers for every check of the course through one oracle: its
    time (MAX_RUN_SECONDS, a verification run's) counted across checks refused the reference itself under load (CI:
    "the reference solutions fail the public suite ... (Refused)"). Each check starts with the budget whole."""
    import torch

    from grader.grading.oracle import MAX_RUN_SECONDS, Oracle, Recorder

    def helper(x):
        return x * 2

    recorder = Recorder({}, ["helper"], "cpu")
    asked = recorder._ask({"helper": helper})
    oracle = next(c.cell_contents for c in asked.__closure__ if isinstance(c.cell_contents, Oracle))
    question = {"op": "forward", "name": "helper", "args": (torch.ones(2),), "kwargs": {}}
    recorder.check = "first"
    assert torch.equal(asked(question)["out"], torch.full((2,), 2.0))
    oracle.spent = MAX_RUN_SECONDS + 1  # the first check took the grader's whole budget
    assert "refused" in asked(question)  # within one check, the budget holds
    recorder.check = "second"
    assert "refused" not in asked(question) and len(recorder.calls["second"]) == 1


def test_a_case_the_students_side_cannot_check_names_no_mistake_a_wrong_helper_may_give(course):
    """Issue 44's blind parity round (F2): a caller that called its wrong helper with arguments no recording holds
    (sliding_window_mask with another window, repeat_kv before the cache) failed on the student's side, as it must
    (said so), but named the mistake a right caller's output shows given that helper (mask-hides-diagonal on
    CachedMultiHeadAttention), which the instructor's run with a right helper does not: only that run tells whose
    the mistake is, so the student's side names none."""
    from grader.grading.outcomes import CheckFailed, RightGivenHelper
    from grader.grading.pytest_session import _not_checked_here

    missed = Oracle(RecordedAnswers([], course.tolerance), ["sliding_window_mask"], {"sliding_window_mask": 8})
    named = CheckFailed("the output is off at 12 of 48 entries; the diagonal is hidden", ("mask-hides-diagonal",))
    named.unexplained = "the output is off at 12 of 48 entries"
    given = RightGivenHelper("right, given your sliding_window_mask", helper="sliding_window_mask", unverified=named)
    given.by_stand_in_only = True  # (the helper's result, composed, is not the output: the first run's verdict stands)
    verdict = _not_checked_here(given, missed, ["sliding_window_mask"])
    assert isinstance(verdict, CheckFailed) and verdict.misconceptions == ()
    assert verdict.message == ("the output is off at 12 of 48 entries (this case could not be checked with a right "
                               "sliding_window_mask on your side; your instructor's grading checks it)")


def test_a_recorded_call_answers_the_same_call_written_otherwise(course, tmp_path):
    """Issue 44's blind parity re-run (session 26): simple_self_attention calling its wrong softmax as
    ``softmax(scores, -1)`` or with ``dim=scores.dim() - 1`` scored 0 of 20 on the student's side, where the
    recording holds ``softmax(scores, dim=-1)``, and 20 on the instructor's. A call binds its values to the student's
    own signature (read from the file, never run) before it is compared: the same values to the same parameters, a
    dim counted from either end, get the recorded answer; other values still get none."""
    import torch

    module = tmp_path / "attention_basics.py"
    module.write_text("def softmax(x, dim=-1):\n    return x\n\n\ndef spread(*args):\n    return args\n")
    signatures = signatures_in([module])
    assert list(signatures) == ["softmax"] and str(signatures["softmax"]) == "(x, dim=-1)"  # (*args: as written)
    record: list = []
    x = torch.randn(3, 4)
    Oracle(LiveAnswers({"softmax": _softmax}, "cpu", record), ["softmax"], {"softmax": 4})(
        {"op": "forward", "name": "softmax", "args": (x,), "kwargs": {"dim": -1}, "params": [], "grad": []})
    answers = RecordedAnswers(record, course.tolerance, signatures)
    call = {"op": "forward", "name": "softmax", "params": []}
    for args, kwargs in (((x, -1), {}), ((x,), {"dim": 1}), ((x,), {}), ((), {"x": x, "dim": -1})):
        out, _ = answers.forward({**call, "args": args, "kwargs": kwargs})
        assert torch.allclose(out["out"], _softmax(x, dim=-1)), (args, kwargs)
    for args, kwargs in (((x, 0), {}), ((x * 3,), {"dim": -1}), ((x, -1), {"dim": -1})):
        with pytest.raises(NotOnRecord):
            answers.forward({**call, "args": args, "kwargs": kwargs})
    with pytest.raises(NotOnRecord):  # without the student's signature, only the call as written
        RecordedAnswers(record, course.tolerance).forward({**call, "args": (x, -1), "kwargs": {}})
