"""Public checks for 05_efficient_attention: the lesson's data, a few fixed random cases, the memory bound.

The statistics are gathered block by block and flash_attention stays within its memory bound.
`grade check` compares with reference outputs recorded at release, offline.
"""
import pytest
import torch

from grader.authoring import assignment, exercise
from grader.harness import CheckFailed
from lesson import journey

pytestmark = assignment("05_efficient_attention")


@exercise("online_softmax")
def test_online_softmax_on_the_lesson_scores(grade):
    inputs = journey()
    grade.same("online_softmax", inputs @ inputs.T, 4)  # 6 entries in blocks of 4


@exercise("online_softmax", weight=2)
@pytest.mark.parametrize("shape,block_size,dtype", [((9,), 2, torch.float32), ((3, 12), 5, torch.float64)],
                         ids=["N9-block2", "N12-block5-float64"])
def test_online_softmax_on_random_data(grade, shape, block_size, dtype):
    grade.same("online_softmax", grade.randn(*shape, dtype=dtype, scale=3.0), block_size, grad=True,
               normalised_exponential=True)


@exercise("online_softmax", weight=2)
def test_online_softmax_rescales_when_the_maximum_grows(grade):
    x = grade.randn(2, 15, dtype=torch.float64, scale=200.0)
    x[:, -1] = x.amax(dim=-1) + 50.0  # the largest entry comes last
    grade.same("online_softmax", x, 4)


@exercise("online_softmax")
def test_online_softmax_with_hidden_entries(grade):
    x = grade.randn(3, 8, dtype=torch.float64)
    x[0, :4] = float("-inf")  # a whole first block hidden
    x[1] = float("-inf")  # nothing visible: zeros, not NaN
    grade.same("online_softmax", x, 4)


@exercise("flash_attention")
def test_flash_attention_on_the_lesson_data(grade):
    x = journey()[None]  # [1, 6, 3]
    grade.same("flash_attention", x, x, x, block_size=4, causal=True)


@exercise("flash_attention", weight=2)
@pytest.mark.parametrize("tq,tk,block_size,causal,dtype", [
    (1, 1, 1, False, torch.float32),
    (9, 13, 4, False, torch.float64),
    (20, 20, 8, True, torch.float32),
], ids=["T1", "Tq9-Tk13-block4-float64", "T20-block8-causal"])
def test_flash_attention_on_random_data(grade, tq, tk, block_size, causal, dtype):
    q, k, v = grade.randn(2, tq, 8, dtype=dtype), grade.randn(2, tk, 8, dtype=dtype), grade.randn(2, tk, 5, dtype=dtype)
    grade.same("flash_attention", q, k, v, block_size=block_size, causal=causal, grad=True)


@exercise("flash_attention", weight=4)
def test_flash_attention_never_builds_the_score_matrix(grade):
    q, k, v = grade.randn(1024, 64), grade.randn(1024, 64), grade.randn(1024, 64)
    reply = grade.measured("flash_attention", q, k, v, block_size=64)
    if reply.max_numel >= 1024 * 1024 // 4:
        raise CheckFailed(f"flash_attention on 1024 tokens with block_size=64 built a tensor of {reply.max_numel} "
                          "elements; no intermediate may hold a quarter of the 1024 x 1024 score matrix or more: "
                          "work tile by tile")
    with torch.no_grad():  # plain attention here, outside your code, is allowed to build the whole matrix
        expected = (torch.softmax(q.double() @ k.double().T / 8.0, dim=-1) @ v.double()).float()
    grade.expect(reply, expected.to(grade.device), "flash_attention(<[1024, 64]> x 3, block_size=64)")
