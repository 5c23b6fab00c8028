"""What the worker's tracer knows of torch's operators: their bare names, and how many entries of its
inputs each one combines into one entry of its result (a measured call keeps the widest: 05's block rules,
06's window). Every aten operator is judged by what it is, never by what the student's code says; the
tracer (grader.inside.worker) asks :func:`rule_of` once per operator."""
from __future__ import annotations


def op_name(name: str) -> str:
    """The bare name of a torch function or aten operator, overload left out: ``torch.softmax``,
    ``torch.Tensor.softmax`` and ``torch.nn.functional.softmax`` are ``softmax``;
    ``aten._safe_softmax.default`` (``torch.ops.aten._safe_softmax.default``) is ``_safe_softmax``."""
    parts = name.split(".")
    if "aten" in parts[:-1]:
        return parts[parts.index("aten") + 1]
    return parts[-1]


# --- how many entries one operator combines --------------------------------------------------------
# A measured call keeps the widest reduction it made: the most entries of its inputs that one operator
# combined into one entry of its result (a sum or a maximum over a dimension, a softmax, a cumulative
# sum, a sort, a matrix product over its contracted dimension, a convolution over its kernel). Every
# aten operator the call runs is judged once, by what it is, never by what the student's code says:
# elementwise operators (their ``pointwise`` tag) and those that make, copy, select or rearrange
# entries combine nothing; reductions combine the entries along the dimensions they name; an operator
# known to neither list, or one of the student's own (``torch.library``), is taken at its widest:
# as many entries as its inputs' longest dimension, or its inputs' size over its result's, whichever
# is more.

# aten operators that combine no entries though neither tagged elementwise nor views: they make
# tensors, copy, convert, select, gather, pad, repeat, flip, join or split them, or answer a question
# about their shape
NOTHING_COMBINED = frozenset("""
    __and__ __iand__ __ior__ __ixor__ __ilshift__ __irshift__ __lshift__ __or__ __rshift__ __xor__
    _assert_async _assert_scalar _assert_tensor_metadata _functional_assert_async _local_scalar_dense
    _make_dep_token _pin_memory _print _reshape_copy _resize_output _to_copy _to_dense _unsafe_index
    _unsafe_masked_index _unsafe_view _reshape_alias _has_compatible_shallow_copy_type _conj _neg_view
    conj resolve_conj resolve_neg _upsample_nearest_exact1d _upsample_nearest_exact2d
    _upsample_nearest_exact3d _fused_dropout _masked_scale alias alpha_dropout arange as_strided
    as_strided_scatter bernoulli block_diag broadcast_tensors cat cauchy channel_shuffle clone
    constant_pad_nd contiguous copy detach diag diag_embed diagonal_scatter dim dropout embedding empty
    empty_like empty_permuted empty_strided exponential eye feature_alpha_dropout feature_dropout fill
    flip full full_like gather geometric hann_window im2col index index_copy index_fill index_select
    is_coalesced is_complex is_contiguous is_non_overlapping_and_dense is_pinned is_same_size
    is_strides_like_format item lift lift_fresh lift_fresh_copy linspace log_normal logspace
    masked_scatter masked_select meshgrid narrow_copy native_dropout new_empty new_empty_strided new_full
    new_ones new_zeros nonzero nonzero_numpy nonzero_static normal numel one_hot ones ones_like
    pixel_shuffle pixel_unshuffle poisson rand rand_like randint randint_like randn randn_like random
    randperm reflection_pad1d reflection_pad2d reflection_pad3d repeat repeat_interleave
    replication_pad1d replication_pad2d replication_pad3d resize resize_as roll rot90 scalar_tensor
    select_scatter set size slice slice_scatter split split_with_sizes_copy stack storage_offset stride
    sym_numel sym_size sym_storage_offset sym_stride t take transpose tril tril_indices triu triu_indices
    unbind_copy uniform unsafe_chunk unsafe_split unsafe_split_with_sizes unsqueeze squeeze
    upsample_nearest1d upsample_nearest2d upsample_nearest3d zero zeros zeros_like
""".split())

# reductions along the dimensions their ``dim`` (``dims``, ``axis``) argument names, all of the input
# where it names none; those tagged ``reduction`` are found by their tag, these have overloads without it
ALONG_DIMENSIONS = frozenset("""
    _cummax_helper _cummin_helper _fft_c2c _fft_c2r _fft_r2c _log_softmax _masked_softmax _safe_softmax
    _softmax _unique _unique2 all amax amin aminmax any argmax argmin argsort count_nonzero cummax cummin
    cumprod cumsum kthvalue linalg_vector_norm log_softmax logcumsumexp logsumexp max mean median min
    mode msort nanmedian nansum norm prod segment_reduce softmax sort std std_mean sum topk unique_consecutive
    unique_dim var var_mean
""".split())


def _operator_facts(func) -> tuple:
    """An operator's name (its packet's: ``_softmax`` for ``aten._softmax.default``) and its rule_of."""
    packet = getattr(func, "overloadpacket", None)
    name = packet.__name__ if packet is not None else op_name(str(func))
    try:
        rule = rule_of(func)
    except Exception:  # noqa: BLE001 - an operator no rule foresaw: taken at its widest, unknown
        rule = _unknown
    return name, rule


def rule_of(func):
    """How to measure ``func``'s reduction, decided once per operator: None where it combines nothing,
    else a function of its arguments and result. Tags, names and schemas are trusted for aten's own
    operators only: the student's ``torch.library`` operators may claim anything."""
    import torch

    if getattr(func, "namespace", None) != "aten":
        return _unknown
    tags = func.tags
    if torch.Tag.pointwise in tags:
        return None
    name = _base_name(func.overloadpacket.__name__)
    if torch.Tag.reduction in tags or name in ALONG_DIMENSIONS:
        return _along_dimensions(func)
    special = SPECIAL.get(name)
    if special is not None:
        return special(func)
    if name in NOTHING_COMBINED or func.is_view or torch.Tag.view_copy in tags or _elementwise_family(name):
        return None
    return _at_widest if name in SEEN_THROUGH else _unknown


def _base_name(name: str) -> str:
    """An operator's name without the in-place underscore: ``cumsum_`` is ``cumsum``, ``__or__`` stays."""
    return name[:-1] if name.endswith("_") and not name.endswith("__") else name


def _elementwise_family(name: str) -> bool:
    """Whether some overload of aten's ``name`` is tagged elementwise (``abs_``, ``masked_fill.Tensor``
    and ``exp.out``-like overloads often go untagged where their family's main overload is tagged)."""
    import torch

    packet = getattr(torch.ops.aten, name, None)
    overloads = packet.overloads() if packet is not None else ()
    return any(torch.Tag.pointwise in getattr(packet, overload).tags for overload in overloads)


def _argument(func, names: tuple[str, ...]):
    """Where ``func``'s argument called one of ``names`` is: its position, its name (passed by keyword)
    and its schema default; None where the schema has no such argument."""
    for index, argument in enumerate(func._schema.arguments):
        if argument.name in names:
            return index, argument.name, argument.default_value if argument.has_default_value() else None
    return None


def _read(where, args, kwargs):
    """An argument's value in a call, found by :func:`_argument`."""
    index, name, default = where
    return args[index] if len(args) > index else kwargs.get(name, default)


def _tensors(values):
    """The tensors among ``values``, and those in lists and tuples among them (one level down)."""
    import torch

    for value in values:
        if isinstance(value, torch.Tensor):
            yield value
        elif isinstance(value, (list, tuple)):
            yield from (item for item in value if isinstance(item, torch.Tensor))


def _extent(tensor, dims) -> int:
    """How many entries of ``tensor`` lie along ``dims`` (an int, a list, or None/empty for all)."""
    if isinstance(dims, int) and tensor.ndim:
        return tensor.shape[dims]
    if not dims or not tensor.ndim:
        return tensor.numel()
    count = 1
    for dim in dims:
        count *= tensor.shape[dim]
    return count


def _along_dimensions(func):
    """A reduction: the entries of its first argument along the dimensions it names."""
    import torch

    where = _argument(func, ("dim", "dims", "axis"))

    def rule(args, kwargs, result):
        tensor = args[0] if args else None
        if not isinstance(tensor, torch.Tensor):
            return 0
        return _extent(tensor, _read(where, args, kwargs) if where is not None else None)
    return rule


def _unknown(args, kwargs, result) -> int:
    """An operator no table or tag describes, or one not of aten (the student's own ``torch.library``
    operator): measured at its widest, and refused in a call that forbids something (grader.inside.tracer),
    since what runs inside it is not seen and may be what is forbidden (red team round 27b: the library
    softmax run inside nn.TransformerEncoderLayer's fused ``_transformer_encoder_layer_fwd``)."""
    return _at_widest(args, kwargs, result)


# operators no table describes, measured at their widest, whose inside holds nothing an exercise may forbid
# (a comparison, a norm, a distance): not refused where something is forbidden (an honest softmax may assert
# with torch.allclose)
SEEN_THROUGH = frozenset({"allclose", "native_layer_norm", "trace", "isin", "searchsorted", "linalg_cross",
                          "_cdist_forward"})


def _at_widest(args, kwargs, result) -> int:
    """An operator of unknown kind: its inputs' longest dimension, or the size of its largest input over
    that of its smallest result, whichever is more (a reduction over several dimensions at once)."""
    inputs = list(_tensors(args)) + list(_tensors(kwargs.values()))
    widest = max((max(t.shape, default=1) for t in inputs), default=0)
    outputs = [t.numel() for t in _tensors(result if isinstance(result, (list, tuple)) else (result,))]
    if inputs and outputs and min(outputs) > 0:
        widest = max(widest, -(-max(t.numel() for t in inputs) // min(outputs)))
    return widest


def _contracted(left: int):
    """A matrix product: the contracted dimension, the last of the left operand (argument ``left``)."""
    def make(func):
        def rule(args, kwargs, result):
            operand = args[left] if len(args) > left else None
            return operand.shape[-1] if getattr(operand, "ndim", 0) else 0
        return rule
    return make


def _batch_contracted(func):
    """``addbmm``: the batch is summed as well as the contracted dimension."""
    def rule(args, kwargs, result):
        return args[1].shape[0] * args[1].shape[-1] if len(args) > 1 and args[1].ndim == 3 else 0
    return rule


def _convolved(func):
    """A convolution: each output entry combines its weight's entries for one output channel (for a
    transposed one, for one input channel: the larger of the two is taken)."""
    def rule(args, kwargs, result):
        weight = args[1] if len(args) > 1 else kwargs.get("weight")
        if getattr(weight, "ndim", 0) < 2:
            return _at_widest(args, kwargs, result)
        return weight.numel() // max(1, min(weight.shape[0], weight.shape[1]))
    return rule


def _attended(func):
    """A fused attention kernel: a softmax over the keys, a product over the queries' features. The keys
    are the second to last dimension ([B, H, S, E]), but for the flash and memory-efficient kernels' own
    entry points, which take [B, S, H, E] (and [S, H, E] packed): the third to last (round 8 of issue 44,
    read from their schemas; CUDA only)."""
    tokens_at = -3 if func.overloadpacket.__name__ in ("_flash_attention_forward", "_efficient_attention_forward") \
        else -2

    def rule(args, kwargs, result):
        query, key = (args + (None, None))[:2]
        if getattr(query, "ndim", 0) < -tokens_at or getattr(key, "ndim", 0) < -tokens_at:
            return _at_widest(args, kwargs, result)
        return max(key.shape[tokens_at], query.shape[-1])
    return rule


def _repeated(index) -> int:
    """The most times one slot is named by ``index`` (an integer tensor, or index_put's list of them): a plain
    write to a slot named n times keeps one of n values, which makes the write an "any" over them (round 8
    of issue 44: index_fill of every position beaten by another one marked each row's maximum)."""
    import torch

    tensors = [t for t in (index if isinstance(index, (list, tuple)) else (index,)) if isinstance(t, torch.Tensor)]
    if not tensors or any(t.dtype == torch.bool for t in tensors):
        return 1 if tensors else 0
    try:
        grid = torch.stack([t.long() for t in torch.broadcast_tensors(*tensors)]).flatten(1)  # [indices, entries]
        if grid.shape[1] < 2:
            return grid.shape[1]
        return int(torch.unique(grid, dim=1, return_counts=True)[1].max())
    except Exception:  # noqa: BLE001 - indices no rule foresaw: every entry may land in one slot
        return max(t.numel() for t in tensors)


def _overlapping(written) -> bool:
    """Whether an in-place write's tensor holds some memory more than once (an ``as_strided`` view of
    stride 0, an expanded one): every entry written there may land in one slot, an "any" over them all
    (red team round 9: a masked_fill_ into such a view took a whole row's maximum in one operator)."""
    import torch

    if not isinstance(written, torch.Tensor) or written.numel() < 2:
        return False
    said = torch._debug_has_internal_overlap(written)  # 0: it does not; 1: it does; 2: too hard for torch to tell
    if said != 2:
        return said == 1
    extent = 1  # a slice and the like: no two entries share memory where, in order of stride, each
    for stride, size in sorted((st, sz) for sz, st in zip(written.shape, written.stride()) if sz > 1):
        if stride < extent:  # dimension's stride steps past every offset the ones before it reach
            break
        extent += (size - 1) * stride
    else:
        return False
    if written.numel() > 1 << 20:
        return True
    offsets = torch.zeros((), dtype=torch.long)
    for dim, (size, stride) in enumerate(zip(written.shape, written.stride())):
        offsets = offsets.unsqueeze(-1) + torch.arange(size) * stride
    return torch.unique(offsets).numel() < written.numel()


def _complex(tensors) -> bool:
    """Whether a complex tensor takes part (``tensors``: an operator's, its lists' included): each of its
    entries holds two real ones (round 9: a block of 2b reals viewed as b complex entries summed as b)."""
    return any(t.is_complex() for t in tensors)


def _one_entry(result) -> bool:
    """Whether an operator's result is one entry (every tensor of it): a whole tensor reduced at once, as a
    test of a whole tile is (05's key tiles read such a reduction by its growth, not by its width)."""
    tensors = list(_tensors(result if isinstance(result, (list, tuple)) else (result,)))
    return bool(tensors) and all(t.numel() <= 1 for t in tensors)


def _repeated_along(index, dim) -> int:
    """The most times one slot is named by a scatter's ``index`` along ``dim`` (each slice across the other
    dimensions writes its own slots): a plain scatter keeps one of that many values, an "any" over them."""
    import torch

    if not isinstance(index, torch.Tensor) or not index.ndim or index.numel() < 2:
        return 1 if isinstance(index, torch.Tensor) and index.numel() else 0
    try:
        values = index.long().movedim(dim, -1)
        slices = torch.arange(values[..., 0].numel()).reshape(values.shape[:-1]).unsqueeze(-1).expand_as(values)
        grid = torch.stack([slices.flatten(), values.flatten()])  # [2, entries]: (slice, slot)
        return int(torch.unique(grid, dim=1, return_counts=True)[1].max())
    except Exception:  # noqa: BLE001 - indices no rule foresaw: every entry along dim may land in one slot
        return index.shape[dim] if -index.ndim <= dim < index.ndim else index.numel()


def _written(index_at: int):
    """A plain write into slots picked by an index (``index_fill``, ``index_copy``): combines as many
    entries into one slot as the index names it times (:func:`_repeated`)."""
    def make(func):
        def rule(args, kwargs, result):
            return _repeated(args[index_at]) if len(args) > index_at else 0
        return rule
    return make


def _scattered(index_at: int, along_dim: bool, switch: tuple[str, ...] = ()):
    """Sums (or other reductions) into slots picked by an index, ``index_add`` or ``scatter_add``: up to
    every index entry (along the dimension named, with ``along_dim``) may land in one slot. ``switch``:
    the argument that turns the combining on (``accumulate``, ``reduce``), where there is one; without it,
    a plain write, which combines as many entries as a slot is named times (:func:`_repeated`)."""
    def make(func):
        dim = _argument(func, ("dim",))
        on = _argument(func, switch) if switch else None
        if switch and on is None:  # an overload without it: plain writes (scatter.src, index_put's)
            if not along_dim:
                return _written(index_at)(func)
            if dim is None:
                return None
            return lambda args, kwargs, result: (_repeated_along(args[index_at], _read(dim, args, kwargs))
                                                 if len(args) > index_at else 0)

        def rule(args, kwargs, result):
            index = args[index_at] if len(args) > index_at else None
            if index is None:
                return 0
            if on is not None and not _read(on, args, kwargs):  # a plain write
                return _repeated_along(index, _read(dim, args, kwargs)) if along_dim else _repeated(index)
            if isinstance(index, (list, tuple)):  # index_put's indices: as many as they and the values hold
                return max((t.numel() for t in _tensors(args[index_at:])), default=0)
            if along_dim and dim is not None and index.ndim:
                return index.shape[_read(dim, args, kwargs)]
            return index.numel()
        return rule
    return make


def _sized_by_data(func):
    """An operator whose result's size is a count over its input (``nonzero``, ``masked_select``, a tensor
    indexed by a boolean mask, ``repeat_interleave`` by a tensor of repeats): that count combines every
    entry it is taken over, and reaches Python as the result's shape (red team round 9: a row's maximum
    found by ``row[row > t]`` until nothing was left, each step measured as combining nothing)."""
    import torch

    def rule(args, kwargs, result):
        if func.__name__.startswith("index"):  # only a boolean index sizes the result by its values
            indices = args[1] if len(args) > 1 else kwargs.get("indices") or ()
            return sum(t.numel() for t in indices if isinstance(t, torch.Tensor) and t.dtype in (torch.bool,
                                                                                              torch.uint8))
        if func.__name__.startswith("repeat_interleave"):
            repeats = next((a for a in (*args, kwargs.get("repeats")) if isinstance(a, torch.Tensor)
                            and not a.is_floating_point()), None)
            return repeats.numel() if repeats is not None and repeats.numel() > 1 else 0
        if func.__name__.startswith("masked_select"):
            return max((t.numel() for t in args[:2] if isinstance(t, torch.Tensor)), default=0)
        return args[0].numel() if args and isinstance(args[0], torch.Tensor) else 0
    return rule


def _counted(func):
    """A histogram (``histc``, ``bincount``): every entry may land in one bin."""
    def rule(args, kwargs, result):
        return args[0].numel() if args and hasattr(args[0], "numel") else 0
    return rule


def _pooled(func):
    """A pooling: each output entry combines a window of ``kernel_size`` entries in each pooled dimension
    (round 7 of issue 44: a row folded into a cube and max-pooled with a kernel of the cube's side, padded so
    that the output is no smaller than the input, reduced the whole row in one operator that the widest
    rule took for the cube's side)."""
    import math

    kernel = _argument(func, ("kernel_size",))
    pooled = _pooled_dimensions(func)

    def rule(args, kwargs, result):
        if kernel is None:
            return _at_widest(args, kwargs, result)
        size = _read(kernel, args, kwargs)
        sizes = [int(size)] * pooled if isinstance(size, int) else [int(s) for s in size]
        if len(sizes) == 1:
            sizes = sizes * pooled
        return max(math.prod(sizes), _at_widest(args, kwargs, result))  # never less than an unknown one
    return rule


def _pooled_dimensions(func) -> int:
    """How many trailing dimensions a pooling operator pools: the digit of its name (``max_pool3d``: 3)."""
    return next((int(c) for c in func.overloadpacket.__name__ if c.isdigit()), 1)


def _adaptively_pooled(func):
    """An adaptive pooling: each output entry combines about input size over output size entries of each
    pooled dimension (rounded up, and one more where the windows overlap)."""
    pooled = _pooled_dimensions(func)

    def rule(args, kwargs, result):
        tensor = args[0] if args else None
        out = result[0] if isinstance(result, (list, tuple)) else result
        if getattr(tensor, "ndim", 0) == 0 or getattr(out, "ndim", 0) != tensor.ndim:
            return _at_widest(args, kwargs, result)
        width = 1
        for inside, outside in zip(tensor.shape[-pooled:], out.shape[-pooled:]):
            width *= -(-inside // max(1, outside)) + (1 if outside and inside % outside else 0)
        return max(width, _at_widest(args, kwargs, result))
    return rule


def _renormed(func):
    """``renorm``: each slice along ``dim`` is scaled by a norm over all its other entries."""
    def rule(args, kwargs, result):
        tensor, dim = args[0], args[2] if len(args) > 2 else kwargs.get("dim", 0)
        return tensor.numel() // max(1, tensor.shape[dim]) if tensor.ndim else 1
    return rule


# operators measured by a rule of their own: name -> what makes the rule, given the operator
SPECIAL = {
    **dict.fromkeys(("mm", "bmm", "mv", "dot", "vdot", "matmul", "linear", "_int_mm", "_scaled_mm"), _contracted(0)),
    **dict.fromkeys(("addmm", "addmv", "baddbmm", "_addmm_activation"), _contracted(1)),
    "addbmm": _batch_contracted,
    **dict.fromkeys(("convolution", "_convolution", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
                     "conv_transpose2d", "conv_transpose3d", "cudnn_convolution", "mkldnn_convolution",
                     "_slow_conv2d_forward", "slow_conv3d_forward", "thnn_conv2d"), _convolved),
    **dict.fromkeys(("_scaled_dot_product_flash_attention", "_scaled_dot_product_flash_attention_for_cpu",
                     "_scaled_dot_product_efficient_attention", "_scaled_dot_product_cudnn_attention",
                     "_scaled_dot_product_fused_attention_overrideable", "_flash_attention_forward",
                     "_efficient_attention_forward", "_scaled_dot_product_attention_math",
                     "_scaled_dot_product_attention_math_for_mps", "_native_multi_head_attention",
                     "_transformer_encoder_layer_fwd", "_triton_multi_head_attention", "_triton_scaled_dot_attention",
                     "_cudnn_attention_forward", "_flash_attention_forward_no_dropout_inplace"), _attended),
    "index_add": _scattered(2, False), "index_reduce": _scattered(2, False),
    "scatter_add": _scattered(2, True), "scatter_reduce": _scattered(2, True),
    "scatter": _scattered(2, True, ("reduce",)),
    "index_put": _scattered(1, False, ("accumulate",)), "_index_put_impl": _scattered(1, False, ("accumulate",)),
    "_unsafe_index_put": _scattered(1, False, ("accumulate",)),
    "_unsafe_masked_index_put_accumulate": _scattered(2, False),
    "put": _scattered(1, False, ("accumulate",)),
    "_embedding_bag": _scattered(1, False), "_embedding_bag_forward_only": _scattered(1, False),
    "embedding_bag": _scattered(1, False),
    # (and masked_scatter, which places each value by a running count of the mask over the whole tensor; red
    # team round 13 ranked every entry of a row so, measured as combining nothing)
    **dict.fromkeys(("nonzero", "nonzero_numpy", "nonzero_static", "argwhere", "masked_select", "masked_scatter",
                     "index", "repeat_interleave"), _sized_by_data),
    **dict.fromkeys(("histc", "bincount", "histogram", "_histogramdd_from_bin_cts", "_histogramdd_from_bin_tensors"),
                    _counted),
    "renorm": _renormed,
    "index_fill": _written(2), "index_copy": _written(2),
    **dict.fromkeys(("max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices", "max_pool2d_with_indices",
                     "max_pool3d_with_indices", "avg_pool1d", "avg_pool2d", "avg_pool3d", "lp_pool1d", "lp_pool2d",
                     "lp_pool3d", "fractional_max_pool2d", "fractional_max_pool3d", "mkldnn_max_pool2d",
                     "mkldnn_max_pool3d", "quantized_max_pool1d", "quantized_max_pool2d", "quantized_max_pool3d"),
                    _pooled),
    **dict.fromkeys(("adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "_adaptive_avg_pool2d",
                     "_adaptive_avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d",
                     "mkldnn_adaptive_avg_pool2d"), _adaptively_pooled),
}
