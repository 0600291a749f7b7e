"""`convert-layout-nchw4c`: activations move to NCHW4c, weights to OIHW4o.

NCHW4c splits channels into blocks of four, the block being the RGBA of one image
pixel (TVM's Adreno layout). Ops that have an NCHW4c kernel (convolutions with
groups 1 or depthwise, pools, global average pool, spatial mean, resize, element-wise
ops, channel concat of multiple-of-4 inputs, channel slices of whole blocks) are rebuilt
on `!texture.tensor` values:

- channels are zero-padded to a multiple of 4; conv weights are padded (O and I) and
  packed OIHW4o at compile time, biases padded, per-channel constants packed;
- `texture.pack` is inserted where a plain tensor enters the NCHW4c region (model
  inputs, results of ops that stay NCHW) and `texture.unpack` where a packed value
  leaves it (model outputs, NCHW-only consumers);
- a pack of an unpack's result is the packed value itself, so back-to-back
  unpack/pack pairs cancel as the pass goes; unused unpacks are erased.

Padding channels need not stay 0, only finite: element-wise ops compute on them too
(sigmoid makes them 0.5), and the one consumer that reads them, a convolution with
groups 1, multiplies them by zero weights. So the pass tracks what they hold (an op's
`evaluate` on its operands' padding) and keeps a convolution whose input padding would
be inf or NaN (log or reciprocal of a zero padding) on NCHW, where 0 * inf cannot
reach its sums.

Every tensor starts in the `global` scope; `annotate-texture-scope` picks images.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, ModuleOp, TensorType, f16, f32, i64
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from adreno_mlir.weights import store_of
from adreno_mlir.dialects import graph, texture
from adreno_mlir.graph_constants import constant_value, new_constant
from adreno_mlir.pass_options import CheckedPass, option


def packed_type(logical: tuple[int, ...], element=f32) -> texture.TextureTensorType:
    return texture.TextureTensorType.make(texture.packed_shape("nchw4c", logical), element, "nchw4c", "global")


def _pad_to(arr: np.ndarray, axis: int, size: int) -> np.ndarray:
    pad = [(0, 0)] * arr.ndim
    pad[axis] = (0, size - arr.shape[axis])
    return np.pad(arr, pad)


def _c4(c: int) -> int:
    return -(-c // 4) * 4


class LayoutConverter:
    def __init__(self, module: ModuleOp, fn: func.FuncOp, element, block_slices: bool = True,
                 split_groups: int = 0):
        self.block_slices = block_slices
        self.split_groups = split_groups
        self.store = store_of(module)
        self.fn = fn
        self.element = element
        self.rewriter = Rewriter()
        self.packs: dict[SSAValue, SSAValue] = {}
        self.pads: dict[SSAValue, float] = {}
        """The value in the padding channels of each converted op's NCHW4c result."""

    # ------------------------------------------------------------------ values

    def insert_after_def(self, value: SSAValue, op: Operation) -> None:
        if isinstance(value, BlockArgument):
            block = value.block
            self.rewriter.insert_op(op, InsertPoint.at_start(block))
        else:
            self.rewriter.insert_op(op, InsertPoint.after(value.owner))

    def constant(self, arr: np.ndarray, hint: str, before: Operation) -> SSAValue:
        op = new_constant(self.store, arr, hint)
        self.rewriter.insert_op(op, InsertPoint.before(before))
        return op.result

    def packed(self, value: SSAValue) -> SSAValue:
        """The NCHW4c version of a 4-D value (cancelling an unpack, else a new pack)."""
        if isinstance(value.type, texture.TextureTensorType):
            return value
        if isinstance(value.owner, texture.UnpackOp):
            return value.owner.input
        if value not in self.packs:
            shape = graph.shape_of(value)
            op = texture.PackOp(value, packed_type(shape, self.element))
            self.insert_after_def(value, op)
            self.packs[value] = op.result
        return self.packs[value]

    def padding(self, value: SSAValue) -> float:
        """What the padding channels of `value`'s NCHW4c version hold: 0 for a pack (of a
        model input, a constant, an NCHW op's result), else what `result_padding` found."""
        if isinstance(value.owner, texture.UnpackOp):
            value = value.owner.input
        return self.pads.get(value, 0.0)

    def result_padding(self, op: Operation) -> float:
        """The padding of `op`'s NCHW4c result, rounded to the storage type: a convolution
        writes 0 (its padded weights and bias are 0; a depthwise one NaN from an input
        padding of inf); an element-wise op applies its `evaluate` to its operands'
        padding (a divisor constant becomes a reciprocal padded with 0); pools, means and
        resizes average or copy their input's padding."""
        if isinstance(op, graph.Conv2dOp):
            return 0.0 if math.isfinite(self.padding(op.input)) else math.nan
        pads = [np.float32(self.padding(v)) for v in op.operands]
        if not graph.is_elementwise(op):
            return float(pads[0]) if pads else 0.0
        with np.errstate(all="ignore"):
            if isinstance(op, graph.DivOp):
                value = pads[0] * np.float32(0.0)
            else:
                try:
                    value = type(op).evaluate(*pads, params=op.expr_params())
                except NotImplementedError:  # unknown: assume the worst
                    return math.nan
            return float(np.asarray(value).astype(np.float16 if self.element == f16 else np.float32))

    # ------------------------------------------------------------------ legality

    def can_convert(self, op: Operation) -> bool:
        """Ops declare by the `NCHW4cConvertible` trait that they have NCHW4c kernels; this
        adds the shape and attribute conditions those kernels need."""
        if not op.has_trait(graph.NCHW4cConvertible):
            return False
        if self.element == f16 and isinstance(op, (graph.CompareOp, graph.TruncOp, graph.IsInfOp, graph.IntBinaryOp)):
            # Exact-value ops: half storage would round their integer constants (2049 -> 2048)
            # and flip a mask; they stay on f32 tensors (docs/op_support.md, "integers").
            return False
        if isinstance(op, graph.Conv2dOp):
            x, w = graph.shape_of(op.input), graph.shape_of(op.weight)
            g = op.groups.value.data
            depthwise = g > 1 and g == x[1] == w[0]
            consts = isinstance(op.weight.owner, graph.ConstantOp) and (
                op.bias is None or isinstance(op.bias.owner, graph.ConstantOp))
            # Groups 1 sums over the input's padding channels too (times zero weights).
            padding_ok = depthwise or math.isfinite(self.padding(op.input))
            return len(w) == 4 and (g == 1 or depthwise) and consts and padding_ok
        if isinstance(op, (graph.MaxPoolOp, graph.AvgPoolOp, graph.GlobalAvgPoolOp, graph.ResizeOp)):
            return len(graph.shape_of(op.results[0])) == 4
        if isinstance(op, graph.ChannelNormOp):
            # whole channel blocks: a padding lane would enter the pixel's sums
            return graph.shape_of(op.input)[1] % 4 == 0 and all(
                v is None or isinstance(v.owner, graph.ConstantOp) for v in (op.scale, op.bias))
        if isinstance(op, graph.ReduceMeanOp):
            return (len(graph.shape_of(op.input)) == 4 and graph.ints(op.axes) == (2, 3)
                    and bool(op.keepdims.value.data))
        if isinstance(op, graph.SliceOp):
            # Whole channel blocks of a value already in NCHW4c (a channel split): a copy of
            # blocks instead of an unpack, the slice and a pack.
            return self.block_slices and op.channel_block_slice() and self.in_nchw4c(op.input)
        if isinstance(op, graph.ConcatOp):
            return (op.axis.value.data == 1 and len(graph.shape_of(op.result)) == 4
                    and all(graph.shape_of(v)[1] % 4 == 0 for v in op.inputs))
        if isinstance(op, graph.DivOp) and not isinstance(op.rhs.owner, graph.ConstantOp):
            # Padding channels are zeros: 0 / 0 would put NaN there, and a following
            # convolution multiplies them by its zero weights (NaN everywhere).
            return False
        if graph.is_elementwise(op):
            out = graph.shape_of(op.results[0])
            return (len(out) == 4 and all(self.operand_ok(v, out) for v in op.operands)
                    and any(self.in_nchw4c(v) for v in op.operands))
        return False

    @staticmethod
    def in_nchw4c(v: SSAValue) -> bool:
        """Whether `v` already exists in NCHW4c form (a converted op's result) or is a
        model input (packed once either way): an element-wise op converts only then. One
        whose tensor operands all come from ops that stay NCHW (a transformer's bias add
        after a matmul, a residual add of two LayerNorm/matmul results) would cost a pack
        per operand and an unpack, and could no longer fuse into the matmul before it
        (Swin-T on the texture plan: 5.5 ms against 3.8 ms on plain buffers,
        docs/bench/issue12)."""
        return (isinstance(v.type, texture.TextureTensorType) or isinstance(v.owner, texture.UnpackOp)
                or isinstance(v, BlockArgument))

    def operand_ok(self, v: SSAValue, out: tuple[int, ...]) -> bool:
        """Element-wise operands: packed values, 4-D values with all the output's
        channels (other axes may broadcast), or constants that broadcast to the output
        (expanded over channels and packed at compile time)."""
        if isinstance(v.type, texture.TextureTensorType):
            return True
        s = graph.shape_of(v)
        if len(s) == 4 and s[1] == out[1]:
            return True
        return isinstance(v.owner, graph.ConstantOp) and graph.broadcast_shapes(s, out) == tuple(out)

    def operand(self, v: SSAValue, out: tuple[int, ...], op: Operation) -> SSAValue:
        s = graph.shape_of(v)
        if isinstance(v.type, texture.TextureTensorType) or (len(s) == 4 and s[1] == out[1]):
            return self.packed(v)
        arr = constant_value(v, self.store)
        arr4 = arr.reshape((1,) * (4 - arr.ndim) + arr.shape)
        full = np.broadcast_to(arr4, (arr4.shape[0], out[1], arr4.shape[2], arr4.shape[3]))
        return self.packed(self.constant(np.array(full), (v.name_hint or "const") + "_c", op))

    def convert(self, op: Operation) -> None:
        out_shape = graph.shape_of(op.results[0])
        out_padded = (out_shape[0], _c4(out_shape[1]), *out_shape[2:])
        if isinstance(op, graph.Conv2dOp):
            new = self.convert_conv(op)
        elif isinstance(op, graph.ConcatOp):
            new = graph.ConcatOp(operands=[[self.packed(v) for v in op.inputs]],
                                 result_types=[packed_type(out_shape, self.element)],
                                 properties=dict(op.properties))
        elif isinstance(op, graph.ChannelNormOp):
            new = graph.ChannelNormOp(operands=[self.packed(op.input), op.scale, [] if op.bias is None else [op.bias]],
                                      result_types=[packed_type(out_padded, self.element)],
                                      properties=dict(op.properties))
        elif isinstance(op, graph.DivOp):
            # x / c becomes x * (1 / c): the reciprocal's zero padding keeps padding lanes 0.
            recip = self.constant(1.0 / constant_value(op.rhs, self.store), (op.rhs.name_hint or "c") + "_recip", op)
            new = graph.MulOp(self.operand(op.lhs, out_shape, op), self.operand(recip, out_shape, op),
                              packed_type(out_padded, self.element))
        elif graph.is_elementwise(op):
            operands = [self.operand(v, out_shape, op) for v in op.operands]
            new = type(op).create(operands=operands, result_types=[packed_type(out_padded, self.element)],
                                  properties=dict(op.properties))
        else:
            new = type(op).create(operands=[self.packed(op.operands[0])],
                                  result_types=[packed_type(out_padded, self.element)],
                                  properties=dict(op.properties), attributes=dict(op.attributes))
        new.location = op.location
        self.pads[new.results[0]] = self.result_padding(op)
        self.rewriter.insert_op(new, InsertPoint.before(op))
        unpack = texture.UnpackOp(new.results[0], op.results[0].type)
        self.rewriter.insert_op(unpack, InsertPoint.after(new))
        unpack.result.name_hint = op.results[0].name_hint
        op.results[0].replace_all_uses_with(unpack.result)
        self.rewriter.erase_op(op)

    def convert_conv(self, op: graph.Conv2dOp) -> Operation:
        w = constant_value(op.weight, self.store)
        co, ci = w.shape[0], graph.shape_of(op.input)[1]
        g = op.groups.value.data
        co_p = _c4(co)
        w = _pad_to(w, 0, co_p)
        if g == 1:
            w = _pad_to(w, 1, _c4(ci))
        packed = w.reshape(co_p // 4, 4, *w.shape[1:]).transpose(0, 2, 3, 4, 1)
        name = (op.weight.owner.weight_name or "conv_weight") + "_oihw4o"
        w_val = self.constant(packed, name, op)
        b_val = None
        if op.bias is not None:
            b = _pad_to(constant_value(op.bias, self.store), 0, co_p)
            b_val = self.constant(b, (op.bias.owner.weight_name or "conv_bias") + "_c4", op)
        out = graph.shape_of(op.result)
        groups = co_p if g > 1 else 1
        new = graph.Conv2dOp(
            self.packed(op.input), w_val, b_val, packed_type((out[0], co_p, out[2], out[3]), self.element),
            graph.ints(op.strides), graph.ints(op.pads), graph.ints(op.dilations), groups,
        )
        new.attributes.update(op.attributes)  # e.g. a hand-set `winograd` choice
        return new

    def splittable(self, op: Operation) -> bool:
        """A grouped conv (not depthwise) of at most `split_groups` groups whose groups are
        whole channel blocks on both sides, with constant weights and bias: `split_conv`."""
        if not isinstance(op, graph.Conv2dOp) or not self.block_slices:
            return False
        g = op.groups.value.data
        x, w = graph.shape_of(op.input), graph.shape_of(op.weight)
        if not 1 < g <= self.split_groups or len(x) != 4 or len(w) != 4 or x[1] == g:
            return False
        consts = isinstance(op.weight.owner, graph.ConstantOp) and (
            op.bias is None or isinstance(op.bias.owner, graph.ConstantOp))
        return consts and x[1] % g == 0 and (x[1] // g) % 4 == 0 and w[0] % g == 0 and (w[0] // g) % 4 == 0

    def split_conv(self, op: graph.Conv2dOp) -> None:
        """`op` as one groups-1 conv per group on its channel-block slice of the input,
        concatenated (still NCHW ops, converted next): the NCHW4c kernels have no grouped
        conv but dense ones, block slices and in-place concat. The new ops carry the
        conv's location, so its node's overrides name all of them."""
        g = op.groups.value.data
        x, out = graph.shape_of(op.input), graph.shape_of(op.result)
        w = constant_value(op.weight, self.store)
        b = constant_value(op.bias, self.store) if op.bias is not None else None
        cin, cout = x[1] // g, w.shape[0] // g
        parts = []
        hint = op.result.name_hint or "conv"
        for i in range(g):
            part = graph.SliceOp.create(
                operands=[op.input], result_types=[TensorType(f32, [x[0], cin, x[2], x[3]])],
                properties={"starts": DenseArrayBase.from_list(i64, [0, i * cin, 0, 0]),
                            "steps": DenseArrayBase.from_list(i64, [1, 1, 1, 1])})
            wi = new_constant(self.store, w[i * cout:(i + 1) * cout], f"{op.weight.owner.weight_name or hint}_g{i}")
            bi = new_constant(self.store, b[i * cout:(i + 1) * cout], f"{hint}_bias_g{i}") if b is not None else None
            conv = graph.Conv2dOp(part.result, wi.result, bi.result if bi is not None else None,
                                  TensorType(f32, [out[0], cout, out[2], out[3]]), graph.ints(op.strides),
                                  graph.ints(op.pads), graph.ints(op.dilations), 1)
            conv.attributes.update(op.attributes)
            new = [part, wi, *([bi] if bi is not None else []), conv]
            for o in new:
                o.location = op.location
                self.rewriter.insert_op(o, InsertPoint.before(op))
            part.result.name_hint, conv.result.name_hint = f"{hint}_in{i}", f"{hint}_g{i}"
            parts.append(conv.result)
        cat = graph.ConcatOp(operands=[parts], result_types=[op.result.type],
                             properties={"axis": IntegerAttr(1, 64)})
        cat.location = op.location
        self.rewriter.insert_op(cat, InsertPoint.before(op))
        op.result.replace_all_uses_with(cat.result)
        cat.result.name_hint = hint
        self.rewriter.erase_op(op)

    def run(self) -> None:
        for op in list(self.fn.body.block.ops):
            if self.splittable(op):
                self.split_conv(op)
        for op in list(self.fn.body.block.ops):
            if self.can_convert(op):
                self.convert(op)
        # Unpacks nobody reads (the pack/unpack pairs that cancelled) and the replaced
        # unpacked weights go away.
        for op in reversed(list(self.fn.body.block.ops)):
            if isinstance(op, (texture.UnpackOp, texture.PackOp, graph.ConstantOp)) and not op.results[0].uses:
                self.rewriter.erase_op(op)


@dataclass(frozen=True)
class ConvertLayoutNCHW4c(CheckedPass):
    name = "convert-layout-nchw4c"

    storage: str = option("f32", choices=("f32", "f16"))
    """Element type of packed activations: f32, or f16 (half storage, fp32 arithmetic)."""
    block_slices: bool = True
    """Keep channel slices of whole blocks on NCHW4c (a block copy); false: every slice
    is an NCHW op (an unpack before it, a pack after), as before they had an NCHW4c kernel."""
    split_groups: int = option(4, minimum=0)
    """A grouped convolution (not depthwise) of at most this many groups, each of whole
    channel blocks in and out, becomes one dense NCHW4c conv per group on a block slice of
    its input, concatenated (ResNeSt's radix-2 convs); others (and all with 0, or with
    block_slices=false) stay NCHW."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        element = f32 if self.storage == "f32" else f16
        for fn in [f for f in op.body.block.ops if isinstance(f, func.FuncOp)]:
            LayoutConverter(op, fn, element, self.block_slices, self.split_groups).run()
