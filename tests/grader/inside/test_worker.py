"""The worker's tracer (grader/inside/tracer.py), which sees forbidden functions while the code runs."""
import pytest
import torch

from grader.inside.tracer import ForbiddenOperation, make_tracer


def test_a_forbidden_function_is_seen_each_time_it_is_called():
    for _ in range(3):  # the tracer remembers names between calls: the answer stays the same
        tracer = make_tracer(frozenset({"softmax"}))
        with pytest.raises(ForbiddenOperation), tracer:
            torch.softmax(torch.randn(3), -1)
        assert tracer.forbidden == ["softmax"]
    allowed = make_tracer(frozenset({"softmax"}))
    with allowed:
        torch.exp(torch.randn(3))
    assert allowed.forbidden == []


def test_an_object_posing_as_a_torch_function_cannot_rename_it():
    """Student code may hand the tracer any callable (torch.overrides.handle_torch_function): one
    that hashes and compares equal to torch.softmax, named harmlessly, must not make torch.softmax
    pass for it."""
    from torch.overrides import handle_torch_function

    class Decoy:
        __name__ = "exp"

        def __hash__(self):
            return hash(torch.softmax)

        def __eq__(self, other):
            return True

        def __call__(self, *args, **kwargs):
            return args[0]

    x = torch.randn(4)
    tracer = make_tracer(frozenset({"softmax"}))
    with pytest.raises(ForbiddenOperation), tracer:
        handle_torch_function(Decoy(), (x,), x)  # seen first, as "exp"
        torch.softmax(x, -1)
    assert tracer.forbidden == ["softmax"]


def test_a_measure_counts_at_the_dispatcher_and_still_sees_what_is_forbidden():
    """Measuring alone needs the dispatcher's view only (each view costs a Python call per operation);
    with something forbidden both views watch, and a forbidden operation reached either way is refused."""
    measuring = make_tracer(frozenset(), measure=True)
    assert len(measuring.modes) == 1
    x, y = torch.randn(3, 4), torch.randn(4, 3)
    with measuring:
        (x @ y).exp().sum(-1)
    assert measuring.count >= 3 and measuring.max_numel == 9
    assert measuring.names.get("mm") == 1
    assert make_tracer(frozenset(), measure=False).modes == ()
    both = make_tracer(frozenset({"softmax", "_softmax"}), measure=True)
    assert len(both.modes) == 2
    with pytest.raises(ForbiddenOperation), both:
        torch.ops.aten._softmax(torch.randn(3), 0, False)  # past the functions' view: the dispatcher's
    assert both.forbidden == ["_softmax"]


def test_a_stack_written_before_a_call_ended_is_gone_when_the_next_call_is_armed(tmp_path):
    """The worker writes its stack shortly before a deadline; a call that finishes just after that leaves
    the dump behind. The next request's arming must empty the file, or a later timeout would show where
    an earlier call was."""
    import os
    import subprocess
    import sys
    import textwrap
    from pathlib import Path

    import grader

    script = textwrap.dedent("""
        import time
        from grader.inside import protocol
        from grader.inside.worker import StackWatch

        def where_the_first_call_was():
            time.sleep(0.2)

        watch = StackWatch()
        watch.arm(protocol.STACK_MARGIN_S + 0.05)  # fires after 50 ms, inside the sleep
        where_the_first_call_was()
        print(len(open(protocol.STACK_FILE).read()) > 0)
        watch.arm(60)  # the next request
        print(repr(open(protocol.STACK_FILE).read()))
        watch.disarm()
    """)
    out = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": str(Path(grader.__file__).resolve().parent.parent)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["True", "''"]


def test_a_fused_kernel_reduces_over_its_keys_in_its_own_layout():
    """The SDPA kernels take [B, H, S, E]; the flash and memory-efficient entry points [B, S, H, E]: in each,
    the width is the number of keys (round 8 of issue 44 read the latter as the number of heads)."""
    import torch

    from grader.inside.operators import rule_of

    q, k = torch.zeros(2, 8, 4, 16), torch.zeros(2, 64, 4, 16)  # [B, S, H, E]: 64 keys, 4 heads
    for name in ("_flash_attention_forward", "_efficient_attention_forward"):
        rule = rule_of(getattr(torch.ops.aten, name).default)
        assert rule((q, k, k), {}, None) == 64, name
    rule = rule_of(torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default)
    assert rule((q.transpose(1, 2), k.transpose(1, 2), k.transpose(1, 2)), {}, None) == 64


@pytest.mark.parametrize("measure", [True, False])
def test_an_inference_tensor_in_a_watched_call_is_work_the_tracer_did_not_see_whole(measure):
    """Red team round 11 (issue 44): under torch.inference_mode, and on any tensor made there after the mode
    is off, cross_entropy reaches the dispatcher as one operator (its _log_softmax never seen) and .item()
    as item (no _local_scalar_dense counted). A watched call that touches such a tensor is refused
    (worker.Elsewhere); the same work on ordinary tensors is seen in its parts."""
    from grader.inside.tracer import INFERENCE_TENSORS

    x = torch.randn(4, 6)
    with torch.inference_mode():
        made = x.clone()  # an inference tensor, used below with the mode off
    tracer = make_tracer(frozenset(), measure=True)
    with tracer:
        torch.nn.functional.cross_entropy(made, made.argmax(-1), reduction="none")
    assert tracer.elsewhere == INFERENCE_TENSORS and tracer.forbidden == []
    # where something is forbidden, the one operator (which no table describes: round 27b) is not refused by its name:
    # the call is refused as work not seen whole, which says why
    tracer = make_tracer(frozenset({"_log_softmax"}), measure=measure)
    with tracer:
        torch.nn.functional.cross_entropy(made, made.argmax(-1), reduction="none")
    assert tracer.elsewhere == INFERENCE_TENSORS and tracer.forbidden == []
    plain = make_tracer(frozenset({"_log_softmax"}), measure=measure)
    with pytest.raises(ForbiddenOperation), plain:
        torch.nn.functional.cross_entropy(x, x.argmax(-1), reduction="none")
    assert plain.elsewhere is None and plain.forbidden == ["_log_softmax"]


def test_a_backward_pass_in_a_watched_call_is_work_the_tracer_did_not_see():
    """Red team round 12 (issue 44): a tensor hook runs within Tensor.backward's handling, where torch has
    switched the function-level watching off: F.scaled_dot_product_attention called there went unseen (a
    function whose operators are all allowed, as F.rms_norm's, is seen by its name only). A
    watched call that runs a backward pass is refused (worker.Elsewhere); the grader's own backward, after the
    call, is outside the watching."""
    from grader.inside.forbidden import forbidden_operations
    from grader.inside.tracer import BACKWARD_PASS

    x = torch.randn(3, 8)  # F.rms_norm reaches the dispatcher as pow, mean, rsqrt and mul: seen by name only
    seen = []
    trigger = torch.zeros(1, requires_grad=True)
    trigger.register_hook(lambda g: seen.append(torch.nn.functional.rms_norm(x, (8,))) or g)
    tracer = make_tracer(frozenset(forbidden_operations(("F.rms_norm",))))
    with tracer:
        (trigger * 1.0).sum().backward()
    assert seen and tracer.forbidden == [] and tracer.elsewhere == BACKWARD_PASS


def test_code_of_the_students_that_torch_calls_back_in_a_watched_call_is_work_the_tracer_did_not_see():
    """Red team round 15 (issue 44): copy.deepcopy of a tensor with a defaultdict as its memo calls the
    dict's factory, the student's function, inside Tensor.__deepcopy__'s handling, where torch has switched
    the watching of torch functions off; F.multi_head_attention_forward called there went unseen. The
    student's code run while torch handles a torch function is refused (worker.Elsewhere); torch's and the
    grader's own code there, and the student's code around the call, are not."""
    import collections
    import copy

    from grader.inside.forbidden import forbidden_operations
    from grader.inside.tracer import CALLED_BACK

    x = torch.randn(3, 8)
    ran = []

    def factory():  # this file stands for the student's
        ran.append(torch.nn.functional.rms_norm(x, (8,)))
        return []  # what copy's memo keeps alive

    tracer = make_tracer(frozenset(forbidden_operations(("F.rms_norm",))))
    tracer.students = lambda filename: filename == __file__
    with tracer:
        copy.deepcopy(torch.zeros(1), collections.defaultdict(factory))
    assert ran and tracer.forbidden == [] and tracer.elsewhere == CALLED_BACK.format("__deepcopy__")
    plain = make_tracer(frozenset(forbidden_operations(("F.rms_norm",))))
    plain.students = lambda filename: filename == __file__
    with plain:
        rows = [row.exp().sum() for row in x]  # the student's own loop over a tensor, outside torch's handling
        copy.deepcopy(torch.zeros(1))
    assert len(rows) == 3 and plain.elsewhere is None and plain.forbidden == []


def _rows(x):  # a helper's helper: its operators are the helper's that called it
    return torch.cat([x[i:i + 1] @ x.T for i in range(x.shape[0])])


def scores_looping(x):
    return _rows(x)


def scores_vectorised(x):
    return x @ x.T


def _shares(caller, helper, x):
    tracer = make_tracer(frozenset(), measure=True)
    tracer.within = {helper.__code__: "attention_scores"}
    with tracer:
        caller(x)
    return tracer.count, tracer.helpers_inside()["attention_scores"]


@pytest.mark.parametrize("tokens", [4, 12])
def test_a_helpers_operators_are_counted_apart_by_the_frames_they_ran_in(tokens):
    """Red team round 24d: a helper's share of a call is what ran inside its frames on that call (its own callees
    included), counted with the number of its calls that ran any; a caller that calls it once owns nothing of a
    loop inside it, a caller that calls it once a token owns the calls, and a caller's own loop stays its own."""
    x = torch.randn(tokens, 3)

    def once(x):  # the loop is the helper's
        return torch.softmax(scores_looping(x), -1) @ x

    count, (inside, calls) = _shares(once, scores_looping, x)
    assert calls == 1 and inside >= 2 * tokens and count - inside == 2  # softmax and the product: the caller's

    def a_call_a_token(x):  # the caller loops, calling a vectorised helper once a query
        return torch.cat([torch.softmax(scores_vectorised(x)[i:i + 1], -1) @ x for i in range(x.shape[0])])

    count, (inside, calls) = _shares(a_call_a_token, scores_vectorised, x)
    assert calls == tokens and inside == 2 * tokens and count - inside >= 3 * tokens  # x.T and the product

    def own_loop(x):  # the caller's own loop beside a vectorised helper
        scores = scores_vectorised(x)
        return torch.cat([torch.softmax(scores[i:i + 1], -1) @ x for i in range(x.shape[0])])

    count, (inside, calls) = _shares(own_loop, scores_vectorised, x)
    assert (inside, calls) == (2, 1) and count - inside >= 3 * tokens
