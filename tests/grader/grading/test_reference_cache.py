"""The memo of the reference's results (grader/grading/reference_cache.py): a hit is the very same computation,
and nothing a check or a submission does to a result reaches the next submission."""
import torch

from grader.grading.reference_cache import ReferenceMemo, fingerprint


def test_a_hit_is_a_copy_that_no_check_can_change_for_the_next():
    memo, calls = ReferenceMemo(), []
    x = torch.arange(6.0).reshape(2, 3)

    def compute():
        calls.append(1)
        return torch.softmax(x, -1), {"grads": [x * 2, None]}

    key = fingerprint("check#0", x)
    first = memo.get(key, compute)
    first[0].zero_()  # a check that writes into what it was given
    first[1]["grads"][0].fill_(7.0)
    second = memo.get(key, compute)
    assert len(calls) == 1 and memo.hits == 1
    assert torch.equal(second[0], torch.softmax(x, -1)) and torch.equal(second[1]["grads"][0], x * 2)
    second[0].fill_(3.0)
    assert torch.equal(memo.get(key, compute)[0], torch.softmax(x, -1))


def test_inputs_that_differ_in_any_way_the_reference_could_see_are_different_keys():
    x = torch.randn(4, 5, generator=torch.Generator().manual_seed(0))
    keys = {
        fingerprint("c#0", x),
        fingerprint("c#1", x),  # another use of the reference in the same check
        fingerprint("c#0", x.clone().index_put_((torch.tensor(0), torch.tensor(0)), torch.tensor(9.0))),
        fingerprint("c#0", x.double()),
        fingerprint("c#0", x.t().contiguous().t()),  # same values, other strides
        fingerprint("c#0", x.reshape(5, 4)),
        fingerprint("c#0", x, 1),
        fingerprint("c#0", x, 1.0),
        fingerprint("c#0", (x,)),
        fingerprint("c#0", [x]),
    }
    assert None not in keys and len(keys) == 10
    assert fingerprint("c#0", x) == fingerprint("c#0", x.clone())


def test_a_reference_module_is_known_by_its_weights_buffers_and_mode():
    torch.manual_seed(0)
    layer = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Dropout(0.5))
    before = fingerprint(layer)
    layer.eval()
    in_eval = fingerprint(layer)
    with torch.no_grad():
        layer[0].weight[0, 0] += 1.0
    changed = fingerprint(layer)
    assert len({before, in_eval, changed}) == 3 and None not in (before, in_eval, changed)


def test_what_cannot_be_fingerprinted_is_computed_every_time():
    memo, calls = ReferenceMemo(), []
    key = fingerprint("c#0", object())
    assert key is None
    for _ in range(3):
        memo.get(key, lambda: calls.append(1) or torch.ones(2))
    assert len(calls) == 3 and memo.entries == {}


def test_a_full_memo_empties_itself_and_keeps_answering_right():
    memo = ReferenceMemo(max_entries=3)
    for value in range(10):
        assert memo.get(fingerprint("c", value), lambda v=value: torch.tensor(v)).item() == value
    assert len(memo.entries) <= 3
    assert memo.get(fingerprint("c", 9), lambda: torch.tensor(-1)).item() == 9


def test_a_module_that_keeps_state_between_calls_is_known_by_that_state_too():
    """A KV cache or a position kept as plain attributes changes what forward gives: another key."""
    class Cached(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(2, 2)
            self.cache, self.position = None, 0

    module = Cached()
    empty = fingerprint(module)
    module.position = 3
    moved = fingerprint(module)
    module.cache = torch.ones(1, 2)
    cached = fingerprint(module)
    module.cache = torch.zeros(1, 2)
    other = fingerprint(module)
    assert len({empty, moved, cached, other}) == 4 and None not in (empty, moved, cached, other)
    module.cache = object()  # state the memo cannot read: never kept
    assert fingerprint(module) is None


def test_a_computation_that_changes_its_module_is_never_skipped():
    """A reference whose forward appends to a cache must run every time: the next call depends on it."""
    class Counter(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.calls = 0

        def forward(self, x):
            self.calls += 1
            return x * self.calls

    memo, x = ReferenceMemo(), torch.ones(2)
    for _ in range(2):  # two submissions, each with a fresh reference module, the same calls
        module = Counter()
        outputs = [memo.get(fingerprint(f"check#{use}", x, module), lambda: module(x), unchanged=module)
                   for use in range(2)]
        assert [o.tolist() for o in outputs] == [[1.0, 1.0], [2.0, 2.0]] and module.calls == 2
    assert memo.hits == 0
    stateless = torch.nn.Linear(2, 2)
    for _ in range(2):
        memo.get(fingerprint("check#2", x, stateless), lambda: stateless(x), unchanged=stateless)
    assert memo.hits == 1


def test_a_tensors_fingerprint_is_its_content_however_its_bytes_are_read():
    """Contiguous tensors are hashed from their memory as it is, others (and dtypes numpy cannot show)
    from a contiguous copy: either way equal content gives one key and a changed entry another."""
    import torch

    for t in [torch.randn(3, 4), torch.randn(3, 4).T, torch.randn(3, dtype=torch.bfloat16), torch.tensor(1.0),
              torch.zeros(0), torch.ones(3, dtype=torch.bool), torch.randn(2, 3, dtype=torch.float16)]:
        key = fingerprint(t)
        assert key is not None and key == fingerprint(t.clone()), t
        if t.numel():
            changed = t.clone()
            changed[(0,) * t.dim()] = False if t.dtype == torch.bool else 5
            assert fingerprint(changed) != key, t


def test_a_use_cheaper_to_compute_than_to_fingerprint_is_computed_each_time():
    """Looking a result up costs a fingerprint of everything it reads: a use that computes faster than
    that is marked cheap (and computed from then on, which is always right); a slow one is kept."""
    import time

    import torch

    memo = ReferenceMemo()
    big = torch.randn(2_000_000)
    calls = []
    assert memo.lookup("check#0", ("check#0", big), lambda: calls.append(1) or 7) == 7
    assert "check#0" in memo.cheap

    def slow():
        calls.append(2)
        time.sleep(0.05)
        return torch.ones(3)

    first = memo.lookup("check#1", ("check#1", torch.ones(2)), slow)
    again = memo.lookup("check#1", ("check#1", torch.ones(2)), slow)
    assert "check#1" not in memo.cheap and calls.count(2) == 1 and torch.equal(first, again)


def test_a_use_that_changes_what_it_reads_is_not_fingerprinted_again():
    """A computation that changed the module it ran (a cache it fills) is never kept; its use is then
    computed each time without the fingerprint that could only find it not kept."""
    import time

    memo = ReferenceMemo()
    layer = torch.nn.Linear(2, 2)
    calls = []

    def fills_a_cache():
        calls.append(1)
        time.sleep(0.02)  # slow enough to be worth keeping, were it kept
        layer.seen = len(calls)  # state the fingerprint reads: the module changed
        return torch.ones(1) * len(calls)

    first = memo.lookup("check#0", ("check#0", layer), fills_a_cache, unchanged=layer)
    assert "check#0" in memo.cheap and torch.equal(first, torch.ones(1))


def test_a_draw_is_known_by_how_it_was_made_until_it_changes():
    """A tensor marked known_as (Grade._drawn: a large draw, by its generator's state) fingerprints as its
    key without reading its bytes; once changed in place (itself or through a view), or asked for
    gradients, it is read as any other tensor, so no two different contents share a key."""
    from grader.grading.reference_cache import known_as

    plain = torch.randn(64, 64, generator=torch.Generator().manual_seed(1))
    drawn = known_as(plain.clone(), b"k" * 20)
    other = known_as(torch.zeros(64, 64), b"k" * 20)  # the same key: only a draw's own tensor is ever marked
    assert fingerprint(drawn) == fingerprint(other) != fingerprint(plain)
    drawn[0].mul_(2)  # through a view: the version counter is the storage's
    assert fingerprint(drawn) not in (fingerprint(other), fingerprint(plain))
    assert fingerprint(drawn) == fingerprint(drawn.clone())  # read by its bytes now
    marked = known_as(torch.ones(3), b"j" * 20)
    before = fingerprint(marked)
    marked.requires_grad_(True)
    assert fingerprint(marked) != before
