"""Lowering of `texture.winograd_input` / `winograd_matmul` / `winograd_output` to the
kernels of `lowering/kernels/winograd.py`.

Called by convert-graph-to-opencl's host builder `hb` (`hb.buffer(value)` the buffer
or image of a value, weights uploaded on first use; `hb.alloc(value)` a new one in
the value's memory; `hb.launch(spec, args, loc, scalars)`). Memory kinds come from
the values' types through `packed()`, so V and M may be images or buffers and the
activations f32 or f16.

Schedule knobs (`cfg`, from the op's `kernel_config`; missing keys take the values of
select-kernel-config's `DEFAULT_RULES`, one tile and one channel block per work-item):

- winograd_matmul: `tiles_per_item` (tiles per work-item, >= 1, at most the tile count
  P), `co_blocks` (output channel blocks per work-item, must divide K/4).
- winograd_input and winograd_output take no knobs (one work-item per tile and
  channel block).
- `work_group` (any kernel) is the caller's business (local sizes) and `compute` the host
  builder's (the kernel's arithmetic, applied by `hb.launch`), both ignored here;
  other unknown keys are refused so a typo does not pass silently.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from xdsl.ir import SSAValue

from adreno_mlir.dialects import texture
from adreno_mlir.errors import CompileError, op_where
from adreno_mlir.lowering.kernels.packed import Packed, PackedEpilogue, packed_of
from adreno_mlir.lowering.kernels.winograd import (
    WinogradInputSpec,
    WinogradMatmulSpec,
    WinogradOutputSpec,
    winograd_tiles,
)
from adreno_mlir.passes.select_kernel_config import DEFAULT_RULES

COMMON_KEYS = frozenset({"work_group", "compute"})
MATMUL_KEYS = COMMON_KEYS | {"tiles_per_item", "co_blocks"}


_where = op_where


def _packed(value: SSAValue) -> Packed:
    return packed_of(value)


def _check_keys(op, cfg: Mapping[str, object], allowed: frozenset[str]) -> None:
    unknown = sorted(set(cfg) - allowed)
    if unknown:
        known = ", ".join(sorted(allowed)) or "none"
        raise CompileError(f"{_where(op)}: unknown kernel_config key(s) {', '.join(unknown)} (known: {known})")


def _int_knob(op, cfg: Mapping[str, object], key: str, default: int) -> int:
    value = cfg.get(key, default)
    if hasattr(value, "value") and hasattr(value.value, "data"):  # an IntegerAttr
        value = value.value.data
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise CompileError(f"{_where(op)}: kernel_config {key} must be an integer >= 1, got {value!r}")
    return value


def matmul_schedule(op: texture.WinogradMatmulOp, cfg: Mapping[str, object]) -> tuple[int, int]:
    """(tiles_per_item, co_blocks) for a matmul: the config's values, checked, else the
    default rules' (one of each: the largest grid, fastest on the H200)."""
    _check_keys(op, cfg, MATMUL_KEYS)
    defaults = DEFAULT_RULES.winograd_matmul(op)
    _, k4, _, p, _ = op.result.type.shape
    # more tiles per work-item than there are tiles would only repeat the last one
    tiles = min(_int_knob(op, cfg, "tiles_per_item", defaults["tiles_per_item"]), p)
    cb = _int_knob(op, cfg, "co_blocks", defaults["co_blocks"])
    if k4 % cb:
        raise CompileError(f"{_where(op)}: kernel_config co_blocks = {cb} must divide the {k4} output "
                           "channel blocks")
    return tiles, cb


def lower_winograd_input(hb, op: texture.WinogradInputOp, cfg: Mapping[str, object], loc) -> None:
    """One launch: the input transform of `op.input` into a new V."""
    _check_keys(op, cfg, COMMON_KEYS)
    tile = op.tile_size
    t, l, _, _ = op.pad_values
    spec = WinogradInputSpec(out=_packed(op.result), src=_packed(op.input), tile=tile, pads=(t, l),
                             tiles=winograd_tiles(*op.output_extent(), tile))
    hb.launch(spec, [hb.buffer(op.input), hb.alloc(op.result)], loc)


def lower_winograd_matmul(hb, op: texture.WinogradMatmulOp, cfg: Mapping[str, object], loc) -> None:
    """One launch: M = U V per position of the transformed tile (the filter constant
    U is uploaded like any weight)."""
    tiles, cb = matmul_schedule(op, cfg)
    spec = WinogradMatmulSpec(out=_packed(op.result), src=_packed(op.input), tiles_per_item=tiles, co_blocks=cb)
    hb.launch(spec, [hb.buffer(op.input), hb.weight_buffer(op.filter), hb.alloc(op.result)], loc)


def lower_winograd_output(hb, op: texture.WinogradOutputOp, result_value: SSAValue, out_packed: Packed,
                          pepi: PackedEpilogue, extras: Sequence[SSAValue], cfg: Mapping[str, object],
                          loc) -> None:
    """One launch: the inverse transform, bias and fused epilogue `pepi` (its extra
    inputs' buffers `extras`), written to `result_value` (the op's result, or the last
    value of its fused group) whose accessor is `out_packed`."""
    _check_keys(op, cfg, COMMON_KEYS)
    tile = op.tile_size
    n, _, oh, ow, _ = op.result.type.shape
    has_bias = op.bias is not None
    # plan-memory may have placed the result in a concat's storage: its channel offset
    # is a launch argument (`c4_offset`).
    offset = hb.channel_offset(result_value)
    spec = WinogradOutputSpec(out=out_packed, pepi=pepi, src=_packed(op.input), tile=tile,
                              tiles=winograd_tiles(oh, ow, tile), has_bias=has_bias, offset_arg=offset > 0)
    bias = [hb.weight_buffer(op.bias)] if has_bias else []
    hb.launch(spec, [hb.buffer(op.input), *bias, *extras, hb.alloc(result_value)], loc, [offset] if offset else [])
