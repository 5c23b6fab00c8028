"""01_attention_basics: the reference solution against torch's own operations and the lesson's numbers."""
from __future__ import annotations

import pytest
import torch

ID = "01_attention_basics"

# Lesson numbers for query row index 1 ("journey") of the seed data.
WEIGHTS_ROW_1 = [0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581]
CONTEXT_Z2 = [0.4419, 0.6515, 0.5683]

SOFTMAX_SHAPES = [(1,), (7,), (3, 5), (2, 3, 4), (2, 1, 3, 4)]
LEADING_DIMS = [(), (3,), (2, 3)]
LIBRARY_SOFTMAX = {"aten._softmax", "aten.softmax", "aten._log_softmax", "aten.log_softmax", "aten._safe_softmax"}


@pytest.fixture
def m(solution):
    return solution(ID)


# ---- oracles, written against any implementation of the module (also run on the stub below) -------------


def check_seed_data(m, journey, dtype):
    inputs = journey.to(dtype)
    scores = m.attention_scores_for_query(inputs, inputs[1])
    weights = m.softmax(scores, dim=0)
    torch.testing.assert_close(weights, torch.tensor(WEIGHTS_ROW_1, dtype=dtype), atol=1e-4, rtol=0)
    context = m.context_vector_loop(inputs, weights)
    torch.testing.assert_close(context, torch.tensor(CONTEXT_Z2, dtype=dtype), atol=1e-4, rtol=0)
    every = m.simple_self_attention(inputs)
    torch.testing.assert_close(every[1], torch.tensor(CONTEXT_Z2, dtype=dtype), atol=1e-4, rtol=0)


def check_softmax_matches_torch(m, randn, close, dtype, shape):
    x = randn(*shape, dtype=dtype, scale=3.0)
    before = x.clone()
    for dim in range(-len(shape), len(shape)):
        close(m.softmax(x, dim=dim), torch.softmax(x, dim=dim))
    close(m.softmax(x), torch.softmax(x, dim=-1))  # default dim
    assert torch.equal(x, before), "softmax modified its input"


def check_simple_self_attention(m, randn, close, dtype, leading):
    x = randn(*leading, 5, 4, dtype=dtype)
    expected = torch.softmax(x @ x.transpose(-2, -1), dim=-1) @ x
    close(m.simple_self_attention(x), expected)


# ---- the seed data ------------------------------------------------------------------------------------------


def test_seed_data_weights_and_context(m, journey, dtype):
    check_seed_data(m, journey, dtype)


def test_seed_data_naive_softmax_and_score_matrix(m, journey, close, dtype):
    inputs = journey.to(dtype)
    scores = m.attention_scores_loop(inputs)
    close(scores, inputs @ inputs.T)
    weights = m.softmax_naive(scores[1], dim=0)
    torch.testing.assert_close(weights, torch.tensor(WEIGHTS_ROW_1, dtype=dtype), atol=1e-4, rtol=0)


# ---- loops ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("T", "d"), [(1, 3), (6, 3), (5, 1), (9, 7)])
def test_attention_scores_for_query(m, randn, close, dtype, T, d):
    inputs, query = randn(T, d, dtype=dtype), randn(d, dtype=dtype)
    before = inputs.clone()
    close(m.attention_scores_for_query(inputs, query), inputs @ query)
    assert torch.equal(inputs, before)


@pytest.mark.parametrize(("T", "d"), [(1, 3), (6, 3), (5, 1), (9, 7)])
def test_attention_scores_loop(m, randn, close, dtype, T, d):
    inputs = randn(T, d, dtype=dtype)
    close(m.attention_scores_loop(inputs), inputs @ inputs.T)


@pytest.mark.parametrize(("T", "d"), [(1, 3), (6, 3), (5, 1), (9, 7)])
def test_context_vector_loop(m, randn, close, dtype, T, d):
    inputs = randn(T, d, dtype=dtype)
    weights = torch.softmax(randn(T, dtype=dtype), dim=0)
    close(m.context_vector_loop(inputs, weights), weights @ inputs)


@pytest.mark.parametrize(("T", "d"), [(1, 3), (6, 3), (8, 5)])
def test_loops_equal_vectorised_forms(m, randn, close, dtype, T, d):
    inputs = randn(T, d, dtype=dtype)
    close(m.attention_scores_loop(inputs), m.attention_scores(inputs))
    for i in range(T):
        close(m.attention_scores_for_query(inputs, inputs[i]), m.attention_scores(inputs)[i])
    weights = m.softmax(m.attention_scores(inputs), dim=-1)
    looped = torch.stack([m.context_vector_loop(inputs, weights[i]) for i in range(T)])
    close(looped, m.simple_self_attention(inputs))


# ---- softmax ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", SOFTMAX_SHAPES, ids=str)
def test_softmax_matches_torch_on_every_dim(m, randn, close, dtype, shape):
    check_softmax_matches_torch(m, randn, close, dtype, shape)


@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 3, 4)], ids=str)
def test_naive_softmax_matches_torch_on_moderate_values(m, randn, close, dtype, shape):
    x = randn(*shape, dtype=dtype)
    for dim in range(-len(shape), len(shape)):
        close(m.softmax_naive(x, dim=dim), torch.softmax(x, dim=dim))
    close(m.softmax_naive(x), torch.softmax(x, dim=-1))


def test_softmax_is_stable_for_large_values(m, randn, close, dtype):
    x = randn(4, 6, dtype=dtype, scale=1e4)
    x[0] = 1e4  # equal large entries
    x[1, 2] = -1e4
    out = m.softmax(x, dim=-1)
    assert torch.isfinite(out).all()
    close(out, torch.softmax(x, dim=-1))
    close(m.softmax(x, dim=0), torch.softmax(x, dim=0))


def test_naive_softmax_overflows_where_softmax_does_not(m, dtype):
    x = torch.tensor([1000.0, 1000.0, 999.0], dtype=dtype)
    assert torch.isnan(m.softmax_naive(x)).any(), "exp(1000) overflows: the naive formula gives inf/inf = nan"
    expected = torch.softmax(x, dim=-1)
    out = m.softmax(x)
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out, expected, atol=1e-6, rtol=1e-6)


def test_softmax_gives_minus_inf_entries_zero_weight(m, randn, close, dtype):
    x = randn(3, 6, dtype=dtype)
    x[0, 1] = x[1, 0] = x[1, 5] = x[2, 3] = float("-inf")
    out = m.softmax(x, dim=-1)
    close(out, torch.softmax(x, dim=-1))
    assert out[0, 1] == 0 and out[1, 0] == 0 and out[1, 5] == 0 and out[2, 3] == 0


@pytest.mark.parametrize("dim", [-1, 0])
def test_softmax_of_an_all_minus_inf_slice_is_zero(m, randn, close, dtype, dim):
    x = randn(4, 5, dtype=dtype)
    hidden = (slice(None), 2) if dim == 0 else (1, slice(None))
    x[hidden] = float("-inf")
    x[3, 0] = float("-inf")
    out = m.softmax(x, dim=dim)
    assert not torch.isnan(out).any()
    assert torch.equal(out[hidden], torch.zeros_like(out[hidden]))
    expected = torch.softmax(x, dim=dim)
    expected[hidden] = 0.0  # torch gives nan there
    close(out, expected)


def test_softmax_gradients_are_finite_and_match_torch(m, randn, close, dtype):
    base = randn(4, 5, dtype=dtype, scale=2.0)
    base[1] = float("-inf")  # a fully hidden row
    base[2, 3] = float("-inf")
    upstream = randn(4, 5, dtype=dtype)

    x = base.clone().requires_grad_(True)
    (m.softmax(x, dim=-1) * upstream).sum().backward()
    assert torch.isfinite(x.grad).all(), "the gradient has NaN or inf"
    assert torch.equal(x.grad[1], torch.zeros_like(x.grad[1]))

    visible = base[[0, 2, 3]].clone().requires_grad_(True)
    (torch.softmax(visible, dim=-1) * upstream[[0, 2, 3]]).sum().backward()
    close(x.grad[[0, 2, 3]], visible.grad)


def test_softmax_gradcheck(m, randn):
    x = randn(3, 4, dtype=torch.float64).requires_grad_(True)
    assert torch.autograd.gradcheck(lambda t: m.softmax(t, dim=-1), (x,))
    assert torch.autograd.gradcheck(lambda t: m.softmax(t, dim=0), (x,))


def test_softmax_calls_no_library_softmax(m, randn, dispatch_recorder):
    x = randn(3, 5)
    with dispatch_recorder() as control:
        torch.softmax(x, dim=-1)
    assert LIBRARY_SOFTMAX & set(control.ops), "the recorder does not see a library softmax"
    with dispatch_recorder() as rec:
        m.softmax(x, dim=-1)
        m.softmax(x, dim=0)
    assert rec.ops, "softmax ran no tensor operation"
    assert not LIBRARY_SOFTMAX & set(rec.ops), f"softmax called {LIBRARY_SOFTMAX & set(rec.ops)}"


# ---- vectorised -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("leading", LEADING_DIMS, ids=str)
@pytest.mark.parametrize(("T", "d"), [(1, 3), (6, 3), (7, 5)])
def test_attention_scores(m, randn, close, dtype, leading, T, d):
    x = randn(*leading, T, d, dtype=dtype)
    before = x.clone()
    close(m.attention_scores(x), torch.einsum("...id,...jd->...ij", x, x))
    assert torch.equal(x, before)


def test_attention_scores_non_contiguous(m, randn, close, dtype):
    x = randn(2, 4, 6, dtype=dtype).transpose(-2, -1)  # [2, 6, 4], non-contiguous
    assert not x.is_contiguous()
    close(m.attention_scores(x), torch.einsum("...id,...jd->...ij", x, x))


@pytest.mark.parametrize("leading", LEADING_DIMS, ids=str)
def test_simple_self_attention(m, randn, close, dtype, leading):
    check_simple_self_attention(m, randn, close, dtype, leading)


def test_simple_self_attention_single_token(m, randn, close, dtype):
    x = randn(2, 1, 4, dtype=dtype)
    close(m.simple_self_attention(x), x)  # one token attends only to itself


# ---- the oracles are not vacuous: on the stub they fail ----------------------------------------------------


def test_oracles_fail_on_the_stub(stub, journey, randn, close):
    module = stub(ID)
    with pytest.raises(NotImplementedError):
        check_seed_data(module, journey, torch.float32)
    with pytest.raises(NotImplementedError):
        check_softmax_matches_torch(module, randn, close, torch.float64, (2, 3, 4))
    with pytest.raises(NotImplementedError):
        check_simple_self_attention(module, randn, close, torch.float32, (2, 3))
