"""The library calls a course may forbid, and the operators each stands for. What each exercise may not
call is the course's to say (course.toml's ``[assignments.forbidden]``, in the words below); an exercise
that names none forbids nothing, whatever the reference happens to call.

A contract word stands for the torch functions and aten operators it reaches, by bare name (see
grader.inside.operators.op_name): ``F.softmax`` is seen as ``softmax`` before it decomposes and as ``_softmax``
or ``_safe_softmax`` at the dispatcher, so no spelling of it (``Tensor.softmax``, ``F.softmin``,
``torch.ops.aten._softmax``) gets through.
"""
from __future__ import annotations

_SOFTMAX = ("softmax", "_softmax", "_safe_softmax")
_LOG_SOFTMAX = ("log_softmax", "_log_softmax")
_SDPA = ("scaled_dot_product_attention", "_scaled_dot_product_attention_math", "_scaled_dot_product_flash_attention",
         "_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_efficient_attention",
         "_scaled_dot_product_cudnn_attention", "_scaled_dot_product_fused_attention_overrideable",
         "_flash_attention_forward", "_efficient_attention_forward")
_MULTI_HEAD = ("multi_head_attention_forward", "_native_multi_head_attention") + _SDPA

# the contract's words -> the operations they stand for
OPERATIONS_OF = {
    "torch.softmax": _SOFTMAX, "F.softmax": _SOFTMAX, "nn.Softmax": _SOFTMAX, "torch.special.softmax": _SOFTMAX,
    "log_softmax": _LOG_SOFTMAX,
    "F.scaled_dot_product_attention": _SDPA,
    "nn.MultiheadAttention": _MULTI_HEAD, "F.multi_head_attention_forward": _MULTI_HEAD,
    "F.layer_norm": ("layer_norm", "native_layer_norm"), "nn.LayerNorm": ("layer_norm", "native_layer_norm"),
    "F.gelu": ("gelu",), "nn.GELU": ("gelu",),
}

def forbidden_operations(calls: tuple[str, ...]) -> tuple[str, ...]:
    """The bare operation names the worker refuses for ``calls`` (an exercise's ``[assignments.forbidden]``
    words in course.toml; empty: nothing is forbidden)."""
    names: list[str] = []
    for call in calls:
        names += [op for op in OPERATIONS_OF[call] if op not in names]
    return tuple(names)
