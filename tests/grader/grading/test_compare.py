import torch

from grader.grading.compare import agrees, difference
from grader.config import Tolerance

TOL = Tolerance(rtol=1e-5, atol=1e-6)


def test_equal_tensors_have_no_difference():
    x = torch.randn(3, 4)
    assert difference(x.clone(), x, TOL) is None


def test_matching_minus_infinity_is_not_an_error():
    x = torch.tensor([0.0, float("-inf")])
    assert difference(x.clone(), x, TOL) is None


def test_shape_dtype_and_type_are_named():
    x = torch.randn(2, 3)
    assert "has shape [3, 2], expected [2, 3]" in difference(x.T, x, TOL)
    assert "dtype torch.float64" in difference(x.double(), x, TOL)
    assert "should be a tensor of shape [2, 3], but is a list" in difference([1], x, TOL)
    assert "should be a tuple of 2" in difference(x, (x, x), TOL)


def test_value_errors_say_where_and_how_much_but_not_the_expected_value():
    expected = torch.zeros(2, 3)
    actual = expected.clone()
    actual[1, 2] = 0.25
    message = difference(actual, expected, TOL)
    assert "1 of 6 entries" in message and "(1, 2)" in message and "0.25" in message


def test_nan_is_named():
    actual = torch.zeros(3)
    actual[1] = float("nan")
    assert "NaN" in difference(actual, torch.zeros(3), TOL)


def test_bool_masks_compare_exactly():
    expected = torch.ones(3, 3, dtype=torch.bool).triu(1)
    assert difference(expected.clone(), expected, TOL) is None
    assert "differs at 6 of 9 entries, first at index (0, 1)" in difference(expected.T, expected, TOL)


def test_nan_expected_matches_only_nan():
    """A NaN in what is expected (a known mistake's output, in diagnosis) is no wildcard."""
    expected = torch.tensor([1.0, float("nan")])
    assert difference(torch.tensor([1.0, float("nan")]), expected, TOL) is None
    assert "off at 1 of 2 entries" in difference(torch.tensor([1.0, 2.0]), expected, TOL)
    assert difference(torch.randn(4), torch.full((4,), float("nan")), TOL) is not None


def test_the_one_call_for_a_chunk_all_right_agrees_with_the_full_rule_entry_for_entry():
    """difference() takes a chunk that isclose() finds all right in one call; the same pairs with the
    tolerance given per entry (a tensor: the full rule, entry by entry) must get the same verdict and
    message, over values near the tolerance, infinities and NaN on either side."""
    generator = torch.Generator().manual_seed(0)
    specials = torch.tensor([float("inf"), float("-inf"), float("nan"), 0.0, 1e-9, -1e-9])
    verdicts = set()
    for case in range(400):
        expected = torch.randn(7, generator=generator, dtype=torch.float64)
        noise = torch.randn(7, generator=generator, dtype=torch.float64) * 10 ** (case % 7 - 6)
        actual = (expected + noise).float().double() if case % 3 else expected + noise
        for side in (actual, expected)[: case % 4]:  # some cases get a special value on a side or both
            at = int(torch.randint(7, (1,), generator=generator))
            side[at] = specials[int(torch.randint(len(specials), (1,), generator=generator))]
        if case % 5 == 0:
            actual[2] = expected[2]  # an equal entry, infinite or NaN included
        scalar = Tolerance(rtol=1e-5, atol=1e-6)
        per_entry = Tolerance(rtol=torch.full((7,), 1e-5, dtype=torch.float64),
                              atol=torch.full((7,), 1e-6, dtype=torch.float64))
        fast, full = difference(actual, expected, scalar), difference(actual, expected, per_entry)
        assert fast == full, (actual, expected)
        verdicts.add(fast is None)
    assert verdicts == {True, False}  # both verdicts were reached


def test_the_same_bits_pass_by_the_full_rule_too_so_the_shortcut_for_them_changes_no_verdict():
    """difference() passes a bit-for-bit equal output without comparing entries; the rule itself passes
    it too, with no tolerance at all, infinities included. NaN is never bit-equal: it takes the rule."""
    from grader.grading.compare import _numbers_differ

    exact = Tolerance(rtol=0.0, atol=0.0)
    values = torch.tensor([0.0, -0.0, 1e-300, -3.5, float("inf"), float("-inf"), 7e30], dtype=torch.float64)
    for x in (values, values.float(), values.reshape(7, 1)):
        assert _numbers_differ(x.reshape(-1), x.clone().reshape(-1), x.shape, exact, "out") is None
        assert difference(x.clone(), x, exact) is None
    with_nan = torch.tensor([1.0, float("nan")])
    assert difference(with_nan.clone(), with_nan, exact) is None  # NaN where NaN is expected: the rule's verdict
    assert difference(torch.tensor([1.0, float("nan")]), torch.tensor([1.0, 2.0]), exact) is not None


def test_agrees_gives_difference_s_verdict_on_every_kind_of_pair():
    """agrees() (a diagnosis's question, asked of many candidates) stops at the first chunk that is off and
    writes no sentence; its verdict must be difference()'s on every pair: shapes, dtypes, masks, tuples,
    infinities and NaN on either side, tolerances per entry, more entries than one chunk."""
    from grader.grading import compare

    generator = torch.Generator().manual_seed(1)
    specials = [float("inf"), float("-inf"), float("nan"), 1e300]
    pairs = [(torch.zeros(2, 3), torch.zeros(3, 2)), (torch.zeros(2), torch.zeros(2, dtype=torch.float64)),
             (torch.ones(3, 3, dtype=torch.bool), torch.ones(3, 3, dtype=torch.bool).tril()), ([1], torch.zeros(1)),
             ((torch.zeros(2), torch.ones(2)), (torch.zeros(2), torch.ones(2) + 1e-3)),
             (torch.zeros(compare.CHUNK + 5), torch.zeros(compare.CHUNK + 5).index_fill(0, torch.tensor([-1]), 1.0))]
    for case in range(300):
        expected = torch.randn(4, 5, generator=generator, dtype=torch.float64)
        actual = expected + torch.randn(4, 5, generator=generator, dtype=torch.float64) * 10.0 ** (case % 9 - 8)
        for side in (actual, expected)[: case % 3]:
            side.view(-1)[int(torch.randint(20, (1,), generator=generator))] = specials[case % 4]
        pairs.append((actual, expected))
    verdicts = set()
    for actual, expected in pairs:
        for tol in (TOL, Tolerance(rtol=1e-5, atol=torch.full((1,), 1e-6, dtype=torch.float64))):
            verdict = difference(actual, expected, tol) is None
            assert agrees(actual, expected, tol) == verdict, (actual, expected)
            verdicts.add(verdict)
    assert verdicts == {True, False}


# --- a float64 result right only to float32's precision (issue 34) -------------------------------------
def test_a_float64_result_computed_in_float32_is_recognised_as_float32_precision():
    from grader.grading.compare import float32_precision

    torch.manual_seed(0)
    x = torch.randn(4, 6, dtype=torch.float64)
    right = torch.softmax(x, -1)
    ported = torch.softmax(x.float(), -1).type_as(x)  # llama2.c: F.softmax(scores.float()).type_as(q)
    assert difference(ported, right, Tolerance(rtol=1e-9, atol=1e-9)) is not None  # float64's tolerance: wrong
    assert float32_precision(ported, right)
    assert float32_precision(right / (right.sum(-1, keepdim=True) + 1e-8), right)  # an eps in the denominator
    assert float32_precision((ported, right), (right, right))  # a tuple: its output that differs


def test_float32_precision_is_never_said_of_float32_exact_or_plainly_wrong_results():
    from grader.grading.compare import float32_precision

    torch.manual_seed(0)
    x = torch.randn(4, 6, dtype=torch.float64)
    right = torch.softmax(x, -1)
    assert not float32_precision(right.float(), right.float() + 1e-7)  # a float32 case: its own tolerance
    assert not float32_precision(right.clone(), right)  # nothing off
    assert not float32_precision(torch.softmax(x * 1.01, -1), right)  # a real mistake, however small its scale
    assert not float32_precision(right + 1e-5, right)
    nan = right.clone()
    nan[0, 0] = float("nan")
    assert not float32_precision(nan, right)
    assert not float32_precision(torch.softmax(x.float(), -1), right)  # another dtype is said as such
    masked = right.masked_fill(torch.eye(4, 6, dtype=torch.bool), float("-inf"))
    assert not float32_precision(masked.masked_fill(torch.eye(4, 6, dtype=torch.bool), 0.0), masked)
    assert float32_precision(masked.float().double(), masked)  # an infinity the same on both sides is no error


def test_the_float32_clause_names_the_likely_cause():
    from grader.grading.compare import rounded_in_float32

    said = rounded_in_float32("gradient")
    assert said.startswith("your gradient is right only to float32's precision")
    assert ".float()" in said and "torch.tensor(...) without dtype" in said and "inputs are float64" in said
