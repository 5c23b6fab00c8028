"""PyTorch's shape errors read once for every suite (grader/grading/shape_errors.py), on the messages torch raises."""
import pytest
import torch

from grader.authoring import ShapeMismatch, shape_mismatch


def raised(fn) -> str:
    with pytest.raises(RuntimeError) as info:
        fn()
    return str(info.value)


def test_a_broadcast_names_both_sizes_and_the_dimension():
    said = raised(lambda: torch.ones(2, 4) + torch.ones(2, 10))
    assert shape_mismatch(said, "broadcast") == ShapeMismatch("broadcast", (4, 10), 1)
    assert shape_mismatch(said, "cat") is None and shape_mismatch(said, "matmul") is None
    assert shape_mismatch("The size of tensor a (3) must match the size of tensor b (5)", "broadcast").dim is None


def test_a_cat_names_the_expected_size_then_the_one_it_got():
    said = raised(lambda: torch.cat([torch.ones(2, 16), torch.ones(3, 4)], dim=0))
    assert shape_mismatch(said, "cat") == ShapeMismatch("cat", (16, 4), 0)


def test_a_matrix_product_names_its_four_sizes():
    said = raised(lambda: torch.nn.functional.linear(torch.ones(6, 4), torch.ones(2, 3)))
    assert shape_mismatch(said, "matmul") == ShapeMismatch("matmul", (6, 4, 3, 2))
