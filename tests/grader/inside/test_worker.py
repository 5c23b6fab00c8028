"""The worker's tracer (grader/inside/worker.py), which sees forbidden functions while the code runs."""
import pytest
import torch

from grader.inside.worker import ForbiddenOperation, make_tracer


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
