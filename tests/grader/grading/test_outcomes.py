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
