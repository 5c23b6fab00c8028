"""The library calls a course may forbid, and the operators each stands for. What each exercise may not
call is the course's to say (course.toml's ``[assignments.forbidden]``, in the words below); an exercise
that names none forbids nothing, whatever the reference happens to call.

A contract word stands for the torch functions and aten operators it reaches, by bare name (see
grader.inside.operators.op_name): ``F.softmax`` is seen as ``softmax`` before it decomposes and as ``_softmax``
or ``_safe_softmax`` at the dispatcher, so no spelling of it (``Tensor.softmax``, ``F.softmin``,
``torch.ops.aten._softmax``) gets through. Any other torch function is forbidden by its dotted name
(``F.rms_norm``, ``torch.cumsum``, ``torch.special.erf``, ``Tensor.logsumexp``): its bare name is refused
as a torch function (whichever spelling reaches it: ``torch.nn.functional.rms_norm``, ``nn.RMSNorm``'s
forward) and as an aten operator, with the operator's underscored twin (``_rms_norm``). A module class
(``nn.RMSNorm``) is forbidden through the function its forward calls, or by a word of the table below.
"""
from __future__ import annotations

import re

# (with every aten operator that computes one below the dispatcher: a masked, sparse or nested softmax)
_SOFTMAX = ("softmax", "_softmax", "_safe_softmax", "_masked_softmax", "_sparse_softmax", "special_softmax",
            "_nested_tensor_softmax_with_shape")
_LOG_SOFTMAX = ("log_softmax", "_log_softmax", "_sparse_log_softmax", "special_log_softmax")
_SDPA = ("scaled_dot_product_attention", "_scaled_dot_product_attention_math", "_scaled_dot_product_flash_attention",
         "_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_efficient_attention",
         "_scaled_dot_product_cudnn_attention", "_scaled_dot_product_fused_attention_overrideable",
         "_flash_attention_forward", "_efficient_attention_forward", "_scaled_dot_product_attention_math_for_mps",
         "_flash_attention_forward_no_dropout_inplace", "_cudnn_attention_forward", "_triton_scaled_dot_attention",
         # the fused layers that attend inside one operator (nn.TransformerEncoderLayer's and nn.MultiheadAttention's
         # fast paths; red team round 27b ran 01's softmax through the first)
         "_transformer_encoder_layer_fwd", "_native_multi_head_attention", "_triton_multi_head_attention",
         # its math path (inputs not 4-d, or a CPU kernel declined) reaches the dispatcher as _safe_softmax, which no
         # other public function computes: seen there whatever switched the function-level watching off (round 13)
         "_safe_softmax")
_MULTI_HEAD = ("multi_head_attention_forward",) + _SDPA

# the contract's words -> the operations they stand for
OPERATIONS_OF = {
    "torch.softmax": _SOFTMAX, "F.softmax": _SOFTMAX, "nn.Softmax": _SOFTMAX, "torch.special.softmax": _SOFTMAX,
    "log_softmax": _LOG_SOFTMAX,
    "F.scaled_dot_product_attention": _SDPA,
    "nn.MultiheadAttention": _MULTI_HEAD, "F.multi_head_attention_forward": _MULTI_HEAD,
    "F.layer_norm": ("layer_norm", "native_layer_norm"), "nn.LayerNorm": ("layer_norm", "native_layer_norm"),
    "F.gelu": ("gelu",), "nn.GELU": ("gelu",),
}

# a torch function by its dotted name: the namespaces an observed file may call from (grader/grading/observable.py)
_FUNCTION = re.compile(r"(?:F|torch|torch\.nn\.functional|torch\.special|torch\.linalg|torch\.fft|Tensor|torch\.Tensor)"
                       r"\.([a-z][a-z0-9_]*)")


def operations_of(call: str) -> tuple[str, ...] | None:
    """The bare operation names ``call`` (a word of course.toml's ``[assignments.forbidden]``) stands for;
    None for a word that is neither in the table nor a torch function's dotted name."""
    if call in OPERATIONS_OF:
        return OPERATIONS_OF[call]
    found = _FUNCTION.fullmatch(call)
    return (found[1], "_" + found[1]) if found else None


def forbidden_operations(calls: tuple[str, ...]) -> tuple[str, ...]:
    """The bare operation names the worker refuses for ``calls`` (an exercise's ``[assignments.forbidden]``
    words in course.toml; empty: nothing is forbidden)."""
    names: list[str] = []
    for call in calls:
        names += [op for op in operations_of(call) or () if op not in names]
    return tuple(names)
