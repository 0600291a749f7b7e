"""Lowering of `texture.winograd_input` / `winograd_matmul` / `winograd_output` to the
kernels of `lowering/kernels/winograd.py`.

Called by convert-graph-to-opencl's host builder `hb` (`hb.buffer(value)` the buffer
or image of a value, weights uploaded on first use; `hb.alloc(value)` a new one in
the value's memory; `hb.launch(spec, args, loc, scalars)`). Memory kinds come from
the values' types through `packed()`, so V and M may be images or buffers and the
activations f32 or f16.

The Winograd product's schedule (tiles and channel blocks per work-item) and its lowering
are the `winograd_matmul` family's (lowering/families/winograd.py); the input and output
transforms take no schedule keys (one work-item per tile and channel block).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from xdsl.ir import SSAValue

from adreno_mlir.dialects import texture
from adreno_mlir.errors import op_where
from adreno_mlir.lowering.kernels.packed import Packed, PackedEpilogue, packed_of
from adreno_mlir.lowering.kernels.winograd import (
    WinogradInputSpec,
    WinogradOutputSpec,
)
from adreno_mlir.kernel_math.winograd import winograd_tiles

_where = op_where


def _packed(value: SSAValue) -> Packed:
    return packed_of(value)


def lower_winograd_input(hb, op: texture.WinogradInputOp, cfg: Mapping[str, object], loc) -> None:
    """One launch: the input transform of `op.input` into a new V."""
    tile = op.tile_size
    t, l, _, _ = op.pad_values
    spec = WinogradInputSpec(out=_packed(op.result), src=_packed(op.input), tile=tile, pads=(t, l),
                             tiles=winograd_tiles(*op.output_extent(), tile))
    hb.launch(spec, [hb.buffer(op.input), hb.alloc(op.result)], loc)


def lower_winograd_output(hb, op: texture.WinogradOutputOp, result_value: SSAValue, out_packed: Packed,
                          pepi: PackedEpilogue, extras: Sequence[SSAValue], cfg: Mapping[str, object],
                          loc) -> None:
    """One launch: the inverse transform, bias and fused epilogue `pepi` (its extra
    inputs' buffers `extras`), written to `result_value` (the op's result, or the last
    value of its fused group) whose accessor is `out_packed`."""
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
