"""A crash whose PyTorch error says what went wrong is named (grading/outcomes.py ``explained``)."""
import pytest

from grader.grading.outcomes import CheckFailed, StudentFault, explained

DEVICE_ERRORS = [
    "RuntimeError: expected self and mask to be on the same device, but got mask on cpu and self on cuda:0",
    "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!",
    "RuntimeError: Expected all tensors to be on the same device, but got mat2 is on cpu, different from other "
    "tensors on cuda:0 (when checking argument in method wrapper_CUDA_bmm)",
    "RuntimeError: indices should be either on cpu or on the same device as the indexed tensor (cpu)",
]


@pytest.mark.parametrize("error", DEVICE_ERRORS)
def test_a_crash_on_two_devices_is_named_wrong_device(error):
    fault = StudentFault("error", f"apply_causal_mask(<[6, 6] float32>) raised:\n  File \"x.py\", line 3\n{error}",
                         "RuntimeError")
    named = explained(fault, function=True)
    assert isinstance(named, CheckFailed) and named.misconceptions == ("wrong-device",)
    assert named.fault is fault and error in named.message  # the student's own error is still shown


def test_a_device_word_elsewhere_in_the_traceback_names_nothing():
    fault = StudentFault("error", "f() raised:\n  # to be on the same device\nRuntimeError: shapes cannot be "
                         "multiplied (6x3 and 2x6)", "RuntimeError")
    assert explained(fault, function=True) is fault


def test_a_max_used_as_a_tensor_says_it_is_a_pair():
    """A learner's softmax subtracted x.max(dim, keepdim=True), a (values, indices) pair: PyTorch's TypeError alone."""
    fault = StudentFault("error", "softmax(<[6] float32>) raised:\n  File \"x.py\", line 4\nTypeError: unsupported "
                         "operand type(s) for -: 'Tensor' and 'torch.return_types.max'", "TypeError")
    named = explained(fault, function=True)
    assert isinstance(named, CheckFailed) and named.misconceptions == ()
    assert "returns a pair (values, indices)" in named.message and "x.amax(dim, keepdim=True)" in named.message


LEAF = ("copy_v2_weights_into_v1(<module>, <module>) raised:\nRuntimeError: a leaf Variable that requires grad is "
        "being used in an in-place operation.")


def test_an_in_place_copy_into_a_parameter_asks_for_no_grad_not_a_new_tensor():
    """A learner's copy_v2_weights_into_v1 called param.copy_ outside torch.no_grad(): it was named
    input-mutated ("compute a new tensor instead"), though the exercise asks for that very copy."""
    named = explained(StudentFault("error", LEAF, "RuntimeError"), function=True, modules=True)
    assert named.misconceptions == () and "torch.no_grad()" in named.message
    on_inputs = explained(StudentFault("error", LEAF, "RuntimeError"), function=True)
    assert on_inputs.misconceptions == ("input-mutated",)


def test_an_in_place_change_to_a_view_of_an_input_is_named_too():
    fault = StudentFault("error", "renormalize_causal_weights(<[2, 6, 6] float32>) raised:\nRuntimeError: a view of a "
                         "leaf Variable that requires grad is being used in an in-place operation.", "RuntimeError")
    assert explained(fault, function=True).misconceptions == ("input-mutated",)
