"""`graph-canonicalize`: local cleanups of the graph dialect.

- identity reshapes/transposes/clips/pads/expands and single-input concats disappear;
  a transpose that only moves unit axes becomes a reshape;
- reshape(reshape(x)) and transpose(transpose(x)) collapse into one op;
- a transpose read only by a matmul becomes the matmul's `lhs_perm` / `rhs_perm` (the
  kernel reads through strides, no copy); to get there, a reshape that only inserts or
  drops unit axes moves above a transpose, and a transpose moves below an element-wise
  op with a scalar (attention's scaled keys);
- a gather with evenly spaced indices becomes a slice (+ a reshape);
- a Gemm with transB and a constant B (more than one output row) gets B transposed at
  compile time;
- a scalar multiply of a matmul operand moves after the matmul (its epilogue);
- an element-wise op on a reshaped product moves above the reshape (graph-fuse then makes
  it the product's epilogue);
- PyTorch's exported exact GELU (Div, Erf, Add, Mul, Mul) becomes one graph.gelu;
- element-wise ops and reshapes whose operands are all constants are evaluated with
  numpy, each element-wise op with its own `evaluate` (small results inline, larger
  ones into the weight store);
- unused pure ops are erased by the greedy driver.

The patterns belong to the ops: each graph op lists its own in a
`HasCanonicalizationPatternsTrait` (dialects/graph.py), so xDSL's `canonicalize`
applies them too. This pass applies the graph ops' patterns only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType, f32
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint
from xdsl.traits import HasCanonicalizationPatternsTrait

from adreno_mlir.weights import store_of
from adreno_mlir.dialects import graph
from adreno_mlir.graph_constants import constant_value, module_of, new_constant

FOLD_LIMIT = 1 << 16
"""Largest constant result (elements) the canonicalizer materialises."""


def make_constant(rewriter: PatternRewriter, op: Operation, arr: np.ndarray, hint: str) -> None:
    """Replace `op` by a constant holding `arr`."""
    rewriter.replace(op, new_constant(store_of(module_of(op)), arr, hint))


class FoldConstantElementwise(RewritePattern):
    """Evaluate element-wise ops (with the op class's `evaluate`) and reshapes whose
    operands are all constants."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        elementwise = isinstance(op, graph.UnaryOp | graph.BinaryOp | graph.TernaryOp)
        if not elementwise and not isinstance(op, graph.ReshapeOp):
            return
        if not op.operands or not all(isinstance(v.owner, graph.ConstantOp) for v in op.operands):
            return
        out_shape = graph.shape_of(op.results[0])
        if int(np.prod(out_shape)) > FOLD_LIMIT:
            return
        args = [constant_value(v) for v in op.operands]
        with np.errstate(all="ignore"):
            if isinstance(op, graph.ReshapeOp):
                result = args[0].reshape(out_shape)
            else:
                result = type(op).evaluate(*args, params=op.expr_params())
        make_constant(rewriter, op, np.asarray(result, np.float32).reshape(out_shape), "folded")


class RemoveIdentityReshape(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.ReshapeOp, rewriter: PatternRewriter, /):
        if op.input.type == op.result.type:
            rewriter.replace(op, [], [op.input])
        elif isinstance(op.input.owner, graph.ReshapeOp):
            inner = op.input.owner
            rewriter.replace(op, graph.ReshapeOp(operands=[inner.input], result_types=[op.result.type]))


class RemoveIdentityTranspose(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.TransposeOp, rewriter: PatternRewriter, /):
        perm = graph.ints(op.perm)
        shape = graph.shape_of(op.input)
        if list(perm) == list(range(len(perm))):
            rewriter.replace(op, [], [op.input])
        elif [p for p in perm if shape[p] != 1] == [d for d in range(len(shape)) if shape[d] != 1]:
            # Only unit axes move (PyTorch's batch-first attention transposes [1, L, E] to
            # [L, 1, E]): the data keeps its order, a reshape and no copy.
            reshape = graph.ReshapeOp(operands=[op.input], result_types=[op.result.type])
            reshape.location = op.location
            rewriter.replace(op, reshape)
        elif isinstance(op.input.owner, graph.TransposeOp):
            inner = op.input.owner
            first = graph.ints(inner.perm)
            composed = [first[p] for p in perm]
            rewriter.replace(op, graph.TransposeOp(
                operands=[inner.input], result_types=[op.result.type],
                properties={"perm": graph.i64_array(composed)}))


def _only_user(value, op: Operation) -> bool:
    """Whether `op` is the one user of `value` (once: `x @ x` uses it twice)."""
    uses = list(value.uses)
    return len(uses) == 1 and uses[0].operation is op


def unit_reshape_of_transpose(x: tuple[int, ...], perm: tuple[int, ...],
                              out: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """(shape, perm) with `reshape(transpose(x, perm), out) == transpose(reshape(x, shape), perm')`,
    when the reshape only inserts or drops unit axes; else None.

    Such a reshape keeps the non-unit axes of the transposed tensor in order, the i-th
    one landing at output position pos[i]. Those axes are x's non-unit axes in the
    transpose's order: the i-th is x's non-unit axis q[i]. So reshape x (a free view:
    its non-unit axes keep their order) to `out`'s rank with its r-th non-unit axis at
    pos[r] and unit axes elsewhere, then send pos[q[i]] to pos[i]: every output
    coordinate reads the element it read before."""
    y = tuple(x[p] for p in perm)
    if [d for d in y if d != 1] != [d for d in out if d != 1]:
        return None
    x_live = [a for a in range(len(x)) if x[a] != 1]
    q = [x_live.index(perm[j]) for j in range(len(y)) if y[j] != 1]
    pos = [a for a in range(len(out)) if out[a] != 1]
    shape = [1] * len(out)
    for r, a in enumerate(pos):
        shape[a] = x[x_live[r]]
    new_perm = list(range(len(out)))
    for i, a in enumerate(pos):
        new_perm[a] = pos[q[i]]
    return tuple(shape), tuple(new_perm)


class FoldChannelLayerNorm(RewritePattern):
    """transpose NCHW -> NHWC, graph.layer_norm over the last axis (scale and bias of shape
    [C]), transpose back: `graph.channel_norm` of the NCHW tensor (ConvNeXt's LayerNorm2d;
    see the op). Matched on the second transpose; the normalization must be read by it
    alone (else its NHWC result is needed anyway)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.TransposeOp, rewriter: PatternRewriter, /):
        norm = op.input.owner
        if tuple(graph.ints(op.perm)) != (0, 3, 1, 2) or not isinstance(norm, graph.LayerNormOp):
            return
        first = norm.input.owner
        if (not _only_user(norm.result, op) or not isinstance(first, graph.TransposeOp)
                or tuple(graph.ints(first.perm)) != (0, 2, 3, 1) or norm.norm_axis() != 3):
            return
        c = graph.shape_of(first.input)[1]
        if any(v is not None and graph.shape_of(v) != (c,) for v in (norm.scale, norm.bias)):
            return
        new = graph.ChannelNormOp(operands=[first.input, norm.scale, [] if norm.bias is None else [norm.bias]],
                                  result_types=[op.result.type],
                                  properties={"epsilon": norm.epsilon, "center": norm.center})
        new.location = norm.location
        rewriter.replace(op, new)
        rewriter.erase(norm)
        if not first.result.uses:
            rewriter.erase(first)


class HoistUnitReshapeAboveTranspose(RewritePattern):
    """reshape(transpose(x)) -> transpose(reshape(x)) when the reshape only inserts or
    drops unit axes and the transpose has no other user: still one copy (the reshape is
    a view either way), but the transpose now meets what reads the reshape, which can
    absorb it (FoldTransposeIntoMatMul) or compose with it (attention's head split
    [L, H, D] -> [H, L, D] -> [1, H, L, D], then the key transpose)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.ReshapeOp, rewriter: PatternRewriter, /):
        t = op.input.owner
        if not isinstance(t, graph.TransposeOp) or not _only_user(t.result, op):
            return
        if not isinstance(t.input.type, TensorType) or not isinstance(op.result.type, TensorType):
            return
        found = unit_reshape_of_transpose(graph.shape_of(t.input), graph.ints(t.perm), graph.shape_of(op.result))
        if found is None:
            return
        shape, perm = found
        new: list[Operation] = []
        src = t.input
        if shape != graph.shape_of(src):
            new.append(graph.ReshapeOp(operands=[src], result_types=[TensorType(src.type.element_type, shape)]))
            src = new[-1].results[0]
        if list(perm) != list(range(len(perm))):
            new.append(graph.TransposeOp(operands=[src], result_types=[op.result.type],
                                         properties={"perm": graph.i64_array(perm)}))
            new[-1].location = t.location
        if not new:
            rewriter.replace(op, [], [src])
        else:
            rewriter.replace(op, new, [new[-1].results[0]])


def _scalar_factor(mul: graph.MulOp):
    """(x, c) when `mul` is x * c with c a one-element constant that keeps x's shape (either
    operand order), else None."""
    for x, c in ((mul.lhs, mul.rhs), (mul.rhs, mul.lhs)):
        if (isinstance(c.owner, graph.ConstantOp) and _is_scalar_operand(c, x)
                and graph.shape_of(x) == graph.shape_of(mul.result)):
            return x, c
    return None


def _is_scalar_operand(other, value) -> bool:
    """Whether `other` holds one element and broadcasting it against `value` keeps
    `value`'s shape (its rank is at most `value`'s)."""
    if not isinstance(other.type, TensorType):
        return False
    s = graph.shape_of(other)
    return int(np.prod(s)) == 1 and len(s) <= len(graph.shape_of(value))


def _reaches_matmul(value, depth: int = 8) -> bool:
    """Whether `value` flows into a matmul operand through single-user scalar
    element-wise ops, unit-axis reshapes and transposes: the chain a transpose moved
    onto `value` can travel down to be folded (HoistUnitReshapeAboveTranspose,
    RemoveIdentityTranspose's composition, FoldTransposeIntoMatMul)."""
    for _ in range(depth):
        uses = list(value.uses)
        if len(uses) != 1:
            return False
        user = uses[0].operation
        if isinstance(user, graph.MatMulOp):
            return True
        if isinstance(user, graph.ReshapeOp):
            a, b = graph.shape_of(user.input), graph.shape_of(user.result)
            if [d for d in a if d != 1] != [d for d in b if d != 1]:
                return False
        elif isinstance(user, graph.BinaryOp):
            other = user.rhs if user.lhs is value else user.lhs
            if not _is_scalar_operand(other, value):
                return False
        elif not isinstance(user, graph.TransposeOp):
            return False
        value = user.results[0]
    return False


class SinkTransposeBelowScalarOp(RewritePattern):
    """op(transpose(x), s) -> transpose(op(x, s)) for a binary element-wise op whose other
    operand `s` holds one element (of rank at most the transpose's): the op applies the
    same scalar everywhere, so it commutes with any permutation. The transpose, its only
    user gone, then meets what reads the op's result: PyTorch's attention scales its
    transposed keys by 1/sqrt(sqrt(d)) right before the score matmul, which absorbs it.

    Only where the result flows into a matmul (`_reaches_matmul`): elsewhere the move
    saves nothing and could split an element-wise chain that graph-fuse would have
    made one kernel."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(op, graph.BinaryOp) or not isinstance(op.result.type, TensorType):
            return
        for index, other in ((0, op.rhs), (1, op.lhs)):
            t = op.operands[index].owner
            if not isinstance(t, graph.TransposeOp) or not _only_user(t.result, op):
                continue
            if not isinstance(t.input.type, TensorType) or not _is_scalar_operand(other, t.result):
                continue
            if not _reaches_matmul(op.result):
                return
            operands = [t.input, other] if index == 0 else [other, t.input]
            inner = type(op).create(
                operands=operands, properties=dict(op.properties), attributes=dict(op.attributes),
                result_types=[TensorType(op.result.type.element_type, graph.shape_of(t.input))])
            inner.location = op.location
            outer = graph.TransposeOp(operands=[inner.results[0]], result_types=[op.result.type],
                                      properties={"perm": t.perm})
            outer.location = t.location
            rewriter.replace(op, [inner, outer], [outer.result])
            return


def _product_root(value, depth: int = 8) -> bool:
    """Whether `value` is a matmul's or Gemm's result, directly or through single-user
    element-wise ops (its first operand each time): a chain graph-fuse makes one kernel,
    the product with an element-wise epilogue."""
    for _ in range(depth):
        owner = value.owner
        if isinstance(owner, (graph.MatMulOp, graph.GemmOp)):
            return True
        if not isinstance(owner, (graph.UnaryOp, graph.BinaryOp)) or len(list(value.uses)) != 1:
            return False
        value = owner.operands[0]
    return False


def _reshaped_operand(other, inner: tuple[int, ...], outer: tuple[int, ...]):
    """How the other operand `other` of an element-wise op on `outer` (a reshape of
    `inner`) reads the same elements on `inner`: "full" (it has `outer`'s shape: reshape it
    too, a free view), "same" (it broadcasts over trailing axes that the reshape keeps, or
    is a scalar: use it as it is), or None (the move would change what it meets)."""
    if not isinstance(other.type, TensorType):
        return None
    s = tuple(graph.shape_of(other))
    if s == outer:
        return "full"
    if len(s) > len(inner):  # it would give the op's result more axes than `inner` has
        return None
    k = len(s) - next((i for i, e in enumerate(s) if e != 1), len(s))  # its axes from the first non-unit one
    return "same" if k == 0 or inner[len(inner) - k:] == outer[len(outer) - k:] else None


class SinkReshapeBelowElementwise(RewritePattern):
    """op(reshape(x), ...) -> reshape(op(x, ...)) for an element-wise op whose reshaped
    operand `x` is a matmul's or Gemm's result (or an element-wise chain on one): the op
    then reads the product directly and graph-fuse makes it the product's epilogue, where
    the reshape between them kept it a kernel of its own. The reshape is a free view, so
    it costs nothing below the op.

    PyTorch exports Linear + BatchNorm1d (LeViT) as MatMul -> Flatten -> Mul, Add ->
    Reshape, and nn.MultiheadAttention's output projection as Gemm -> Reshape -> the
    residual Add: each a kernel of its own before this. The other operand must read the
    same elements after the move: a tensor of the op's full shape is reshaped too; one
    that broadcasts must do so over trailing axes the reshape keeps (a per-channel scale
    over the last axis); a scalar always does. Not when both operands are such reshapes
    (which one moves would be arbitrary, and the two moves would undo each other)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(op, (graph.UnaryOp, graph.BinaryOp)) or not isinstance(op.results[0].type, TensorType):
            return
        candidates = [i for i, v in enumerate(op.operands)
                      if isinstance(v.owner, graph.ReshapeOp) and _only_user(v, op)
                      and isinstance(v.owner.input.type, TensorType) and _product_root(v.owner.input)]
        if len(candidates) != 1:
            return
        index = candidates[0]
        reshape = op.operands[index].owner
        inner, outer = tuple(graph.shape_of(reshape.input)), tuple(graph.shape_of(op.results[0]))
        if tuple(graph.shape_of(reshape.result)) != outer:
            return  # the reshaped operand is the one broadcast
        new_ops: list[Operation] = []
        operands = []
        for i, v in enumerate(op.operands):
            if i == index:
                operands.append(reshape.input)
                continue
            how = _reshaped_operand(v, inner, outer)
            if how is None:
                return
            if how == "full":
                view = graph.ReshapeOp(operands=[v], result_types=[TensorType(v.type.element_type, inner)])
                new_ops.append(view)
                v = view.result
            operands.append(v)
        moved = type(op).create(operands=operands, properties=dict(op.properties), attributes=dict(op.attributes),
                                result_types=[TensorType(op.results[0].type.element_type, inner)])
        moved.location = op.location
        back = graph.ReshapeOp(operands=[moved.results[0]], result_types=[op.results[0].type])
        back.location = reshape.location
        rewriter.replace(op, [*new_ops, moved, back], [back.result])


class FoldTransposeIntoMatMul(RewritePattern):
    """matmul(transpose(x, p), y) -> matmul(x, y) {lhs_perm = p} (composed with a perm the
    matmul already has), and likewise for the right operand: the kernel reads x through
    permuted strides (nchw_lowering.MatMul), so the transpose kernel and its copy go.
    Only when the matmul is the transpose's one user: otherwise the transpose is
    materialised for the others anyway and the matmul reads that contiguous copy. An
    identity perm is dropped (absent means identity: one spelling of each matmul)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.MatMulOp, rewriter: PatternRewriter, /):
        changed = False
        for index, name in ((0, "lhs_perm"), (1, "rhs_perm")):
            perm = op.properties.get(name)
            if perm is not None and list(graph.ints(perm)) == list(range(len(graph.ints(perm)))):
                op.properties.pop(name)
                changed = True
            t = op.operands[index].owner
            if not isinstance(t, graph.TransposeOp) or not _only_user(t.result, op):
                continue
            if not isinstance(t.input.type, TensorType):  # the kernel reads plain buffers only
                continue
            old = op.lhs_permutation() if index == 0 else op.rhs_permutation()
            inner = graph.ints(t.perm)
            composed = [inner[p] for p in old]
            operands = list(op.operands)
            operands[index] = t.input
            op.operands = operands
            if composed == list(range(len(composed))):
                op.properties.pop(name, None)
            else:
                op.properties[name] = graph.i64_array(composed)
            rewriter.erase(t)
            changed = True
        if changed:
            rewriter.notify_op_modified(op)


class RemoveNoOpClip(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.ClipOp, rewriter: PatternRewriter, /):
        if op.min.value.data == -np.inf and op.max.value.data == np.inf:
            rewriter.replace(op, [], [op.input])


class RemoveSingleConcat(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.ConcatOp, rewriter: PatternRewriter, /):
        if len(op.inputs) == 1:
            rewriter.replace(op, [], [op.inputs[0]])


class RemoveIdentityPad(RewritePattern):
    """A pad whose pads are all 0 is its input, whatever the mode (swin_t pads each
    attention window to a multiple of the window size, by 0 where it divides evenly)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.PadOp, rewriter: PatternRewriter, /):
        if not any(graph.ints(op.pads)) and op.input.type == op.result.type:
            rewriter.replace(op, [], [op.input])


class RemoveIdentityExpand(RewritePattern):
    """An expand to the input's own shape copies nothing."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.ExpandOp, rewriter: PatternRewriter, /):
        if op.input.type == op.result.type:
            rewriter.replace(op, [], [op.input])


class GatherToSlice(RewritePattern):
    """`graph.gather` with evenly spaced indices (one index, `a, a+s, a+2s, ...`) is a
    strided slice along its axis, reshaped to the gather's shape: a copy without an
    index table (attention's q/k/v split gathers index 0, 1 and 2)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.GatherOp, rewriter: PatternRewriter, /):
        idx = graph.ints(op.indices)
        step = idx[1] - idx[0] if len(idx) > 1 else 1
        if step <= 0 or any(b - a != step for a, b in zip(idx, idx[1:])):
            return
        x = graph.shape_of(op.input)
        axis = op.axis.value.data
        starts, steps = [0] * len(x), [1] * len(x)
        starts[axis], steps[axis] = idx[0], step
        sliced = (*x[:axis], len(idx), *x[axis + 1:])
        sl = graph.SliceOp(operands=[op.input], result_types=[TensorType(f32, sliced)], properties={
            "starts": graph.i64_array(starts), "steps": graph.i64_array(steps)})
        new = [sl]
        if sliced != graph.shape_of(op.result):
            new.append(graph.ReshapeOp(operands=[sl.result], result_types=[op.result.type]))
        for o in new:
            o.location = op.location
        rewriter.replace(op, new, [new[-1].results[0]])


def _scalar(v, want: float, rel: float = 1e-6) -> bool:
    """Whether `v` is a constant whose every element is `want` (within `rel`)."""
    arr = constant_value(v) if isinstance(v.owner, graph.ConstantOp) else None
    return arr is not None and arr.size >= 1 and bool(np.all(np.abs(arr - want) <= rel * abs(want)))


def _other(op, v):
    """The operand of binary `op` that is not `v` (None if neither is)."""
    if op.lhs is v:
        return op.rhs
    return op.lhs if op.rhs is v else None


class RecognizeGelu(RewritePattern):
    """PyTorch's exact GELU as exported to ONNX before opset 20, `x * (erf(x / sqrt 2) + 1)
    * 0.5` (Div or Mul by 1/sqrt 2; operands in either order; the 0.5 applied first or
    last), becomes one `graph.gelu`. Its input then has one user, so graph-fuse puts the
    whole GELU into the epilogue of the matmul or convolution before it (ViT's MLP: one
    kernel instead of two, the activation never written out)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.MulOp, rewriter: PatternRewriter, /):
        for half_side, rest in ((op.rhs, op.lhs), (op.lhs, op.rhs)):
            if not _scalar(half_side, 0.5) or not isinstance(rest.owner, graph.MulOp):
                continue
            x = self._gelu_input(rest.owner)
            if x is not None and graph.shape_of(x) == graph.shape_of(op.result):
                gelu = graph.GeluOp(x, op.result.type)
                gelu.location = op.location
                rewriter.replace(op, gelu)
                return

    @staticmethod
    def _gelu_input(mul: graph.MulOp):
        """x when `mul` is x * (erf(x / sqrt 2) + 1), else None."""
        for gate, x in ((mul.rhs, mul.lhs), (mul.lhs, mul.rhs)):
            add = gate.owner
            if not isinstance(add, graph.AddOp):
                continue
            erf_value = add.lhs if _scalar(add.rhs, 1.0) else add.rhs if _scalar(add.lhs, 1.0) else None
            if erf_value is None or not isinstance(erf_value.owner, graph.ErfOp):
                continue
            scaled = erf_value.owner.input.owner
            if isinstance(scaled, graph.DivOp) and scaled.lhs is x and _scalar(scaled.rhs, 2.0 ** 0.5):
                return x
            if isinstance(scaled, graph.MulOp) and (k := _other(scaled, x)) is not None and _scalar(k, 0.5 ** 0.5):
                return x
        return None


class RecognizeRmsNorm(RewritePattern):
    """The RMS normalization exporters write for T5's and Llama's norms,
    `x * 1/sqrt(mean(x^2 over the trailing axes) + eps)` (Reciprocal or Div(1, .) of the
    Sqrt; Pow by 2 or x * x; operands in either order; every intermediate used once),
    becomes one `graph.layer_norm {center = 0}` with a scale of ones; a following
    multiply by a constant weight of the normalized axes then folds into its scale
    (`FoldScaleIntoRmsNorm`). Seven kernels and four round trips of a row become one."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.MulOp, rewriter: PatternRewriter, /):
        for x, r in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            found = _rms_chain(x, r, op)
            if found is None:
                continue
            axis, eps = found
            shape = graph.shape_of(x)
            ones = new_constant(store_of(module_of(op)), np.ones(shape[axis:], np.float32), "rms_scale")
            rewriter.insert_op(ones, InsertPoint.before(op))
            norm = graph.LayerNormOp(operands=[x, ones.result, []], result_types=[op.result.type], properties={
                "axis": graph.IntegerAttr(axis, 64), "epsilon": graph.f32_attr(eps),
                "center": graph.IntegerAttr(0, 64)})
            norm.location = op.location
            rewriter.replace(op, norm)
            return


def _rms_chain(x, r, user) -> tuple[int, float] | None:
    """(first normalized axis, epsilon) when `r` is 1/sqrt(mean(x^2) + eps) over x's
    trailing axes with every link used once, else None."""
    if not _only_user(r, user):
        return None
    inv = r.owner
    if isinstance(inv, graph.ReciprocalOp):
        root = inv.input
    elif isinstance(inv, graph.DivOp) and _scalar(inv.lhs, 1.0):
        root = inv.rhs
    else:
        return None
    sqrt = root.owner
    if not isinstance(sqrt, graph.SqrtOp) or not _only_user(root, inv):
        return None
    add = sqrt.input.owner
    if not isinstance(add, graph.AddOp) or not _only_user(sqrt.input, sqrt):
        return None
    for mean_v, eps_v in ((add.lhs, add.rhs), (add.rhs, add.lhs)):
        arr = constant_value(eps_v) if isinstance(eps_v.owner, graph.ConstantOp) else None
        mean = mean_v.owner
        if arr is None or arr.size != 1 or not isinstance(mean, graph.ReduceMeanOp) or not _only_user(mean_v, add):
            continue
        rank = len(graph.shape_of(x))
        axes = sorted(graph.ints(mean.axes))
        if not axes or axes != list(range(axes[0], rank)) or not mean.keepdims.value.data:
            return None
        sq = mean.input.owner
        if not _only_user(mean.input, mean):
            return None
        squares = (isinstance(sq, graph.PowOp) and sq.input is x and sq.exponent.value.data == 2.0) or \
            (isinstance(sq, graph.MulOp) and sq.lhs is x and sq.rhs is x)
        eps = float(arr.reshape(-1)[0])
        if squares and eps >= 0 and graph.shape_of(user.results[0]) == graph.shape_of(x):
            return axes[0], eps
        return None
    return None


class FoldScaleIntoRmsNorm(RewritePattern):
    """`graph.layer_norm {center = 0}` with a scale of ones and no bias, whose only user
    multiplies it by a constant that broadcasts to the normalized axes (T5's and Llama's
    weight): the constant becomes the scale."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.MulOp, rewriter: PatternRewriter, /):
        for n, w in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            norm = n.owner
            if not isinstance(norm, graph.LayerNormOp) or norm.center.value.data or norm.bias is not None:
                continue
            if not _only_user(n, op) or not _scalar(norm.scale, 1.0) or not isinstance(w.owner, graph.ConstantOp):
                continue
            trailing = graph.shape_of(norm.input)[norm.norm_axis():]
            ws = graph.shape_of(w)
            if len(ws) > len(trailing) or graph.broadcast_shapes(ws, trailing) != tuple(trailing) \
                    or graph.shape_of(op.result) != graph.shape_of(n):
                continue
            new = graph.LayerNormOp(operands=[norm.input, w, []], result_types=[op.result.type],
                                    properties=dict(norm.properties))
            new.location = op.location
            rewriter.replace(op, new)
            return


PRETRANSPOSE_MIN_ROWS = 16
"""Output rows from which a Gemm's constant transB weight is transposed at compile time."""


class PretransposeGemmWeight(RewritePattern):
    """A Gemm with transB = 1, a constant B and at least PRETRANSPOSE_MIN_ROWS output rows
    (PyTorch's Linear layers on token matrices) gets B transposed once, at compile time,
    and transB = 0: its output columns then read neighbouring floats of B, which coalesce
    on a GPU (vit_b_32's attention output projection, 50x768 by 768x768^T, took 2.6 of
    the model's 5.9 ms on an H200 reading B's rows in place). GEMVs and a few stacked
    vectors keep transB: their split-K kernels want K contiguous (float4 loads)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.GemmOp, rewriter: PatternRewriter, /):
        if not op.trans_b.value.data or not isinstance(op.b.owner, graph.ConstantOp):
            return
        if graph.shape_of(op.result)[0] < PRETRANSPOSE_MIN_ROWS:
            return
        arr = constant_value(op.b)
        const = new_constant(store_of(module_of(op)), np.ascontiguousarray(arr.T),
                             (op.b.owner.weight_name or "gemm_b") + "_t")
        rewriter.insert_op(const, InsertPoint.before(op))
        new = graph.GemmOp(
            operands=[op.a, const.result, [] if op.c is None else [op.c]], result_types=[op.result.type],
            properties={**op.properties, "trans_b": graph.IntegerAttr(0, 64)}, attributes=dict(op.attributes))
        new.location = op.location  # the node name: error messages and `loc:` overrides
        rewriter.replace(op, new)


class FoldScalarMulChain(RewritePattern):
    """(x * c1) * c2 -> x * (c1 * c2) for one-element constants (the inner multiply's only
    user the outer one): attention's two sqrt(scale) factors, one on q and one on k, meet
    after HoistScalarMulThroughMatMul and become one scale."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.MulOp, rewriter: PatternRewriter, /):
        for inner_v, c2 in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            inner = inner_v.owner
            if not isinstance(inner, graph.MulOp) or not isinstance(c2.owner, graph.ConstantOp):
                continue
            if not _is_scalar_operand(c2, op.result) or not _only_user(inner.result, op):
                continue
            factor = _scalar_factor(inner)
            if factor is None or graph.shape_of(factor[0]) != graph.shape_of(op.result):
                continue
            x, c1 = factor
            value = np.float32(constant_value(c1).reshape(-1)[0]) * np.float32(constant_value(c2).reshape(-1)[0])
            const = new_constant(store_of(module_of(op)), np.full([1], value, np.float32), "scale")
            rewriter.insert_op(const, InsertPoint.before(op))
            fused = graph.MulOp(x, const.result, op.result.type)
            fused.location = op.location
            rewriter.replace(op, fused)
            rewriter.erase(inner)
            return


class HoistScalarMulThroughMatMul(RewritePattern):
    """matmul(x * c, y) -> matmul(x, y) * c (either operand; c a one-element constant, the
    multiply's only user the matmul): the same product up to rounding, and the multiply
    becomes the matmul's epilogue instead of a kernel of its own that reads and writes
    all of x (PyTorch's attention scales q before q @ k^T: tiny_bert's `mul` kernel
    was 7% of its H200 device time)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.MatMulOp, rewriter: PatternRewriter, /):
        for operand in (op.lhs, op.rhs):
            mul = operand.owner
            if not isinstance(mul, graph.MulOp) or not _only_user(mul.result, op):
                continue
            factor = _scalar_factor(mul)
            if factor is None or len(graph.shape_of(factor[1])) > len(graph.shape_of(op.result)):
                continue
            x, c = factor
            operands = [x, op.rhs] if operand is op.lhs else [op.lhs, x]
            product = graph.MatMulOp(operands=operands, result_types=[op.result.type],
                                     properties=dict(op.properties), attributes=dict(op.attributes))
            product.location = op.location
            scaled = graph.MulOp(product.result, c, op.result.type)
            scaled.location = mul.location
            rewriter.replace(op, [product, scaled], [scaled.result])
            rewriter.erase(mul)
            return


def graph_patterns() -> list[RewritePattern]:
    """The canonicalization patterns of the graph ops (from their traits), one of each."""
    patterns: dict[type, RewritePattern] = {}
    for op_type in graph.Graph.operations:
        for trait in op_type.get_traits_of_type(HasCanonicalizationPatternsTrait):
            for p in trait.get_patterns(op_type):
                patterns.setdefault(type(p), p)
    # Removals before folding (the order the pass always used; the result is the same).
    return sorted(patterns.values(), key=lambda p: isinstance(p, FoldConstantElementwise))


@dataclass(frozen=True)
class GraphCanonicalize(ModulePass):
    name = "graph-canonicalize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier(graph_patterns()),
            apply_recursively=True,
        ).rewrite_module(op)
