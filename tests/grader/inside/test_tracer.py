"""What the tracer's watching of torch functions costs a call (grader/inside/tracer.py): each function named once."""
import torch

from grader.inside import tracer as tracer_module


def test_a_tensors_properties_are_named_once_however_often_a_call_reads_them(monkeypatch):
    """Issue 47: torch hands a function mode a new method-wrapper for every read of a tensor's property (x.shape,
    x.T), and each was named afresh (torch's resolve_name: a warnings filter, about 35 us a read, most of a small
    call's watching). Named once per property and slot, they still say what they are; a forbidden name is refused
    as before."""
    named = []
    resolve = torch.overrides.resolve_name

    def counted(func):
        named.append(func)
        return resolve(func)

    monkeypatch.setattr(torch.overrides, "resolve_name", counted)
    monkeypatch.setattr(tracer_module, "_MODES", None)  # the modes made again, with the counting resolve_name
    x = torch.randn(3, 4)
    for _ in range(2):  # two calls: what the first named is the second's too
        tracer = tracer_module.make_tracer(frozenset({"softmax"}), measure=True)
        with tracer:
            for _ in range(50):
                _ = x.shape, x.T, x.dtype
            x.requires_grad = False  # a property set: its own slot, named apart
            x.mT.sum()
        assert tracer.forbidden == []
    accessors = [f for f in named if type(f).__name__ == "method-wrapper"]
    assert sorted(f"{f.__self__.__name__}.{f.__name__}" for f in accessors) == [
        "T.__get__", "dtype.__get__", "mT.__get__", "requires_grad.__set__", "shape.__get__"]
    tracer = tracer_module.make_tracer(frozenset({"softmax"}), measure=True)
    try:
        with tracer:
            _ = x.shape
            x.softmax(-1)
    except tracer_module.ForbiddenOperation:
        pass
    assert tracer.forbidden == ["softmax"]
