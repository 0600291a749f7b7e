"""`fuse-attention`: turn attention's MatMul -> (scale) -> (+ bias) -> Softmax -> MatMul
chain into one `graph.attention` op.

Unfused, the chain is three kernels (four with a bias add) and its [..., M, L] scores
and probabilities make two round trips through global memory; `graph.attention` is
one kernel that keeps each query row's scores in local memory. Matched, from the
last product backwards:

    s = graph.matmul(q, k)              (any lhs_perm / rhs_perm: they become q_perm / k_perm)
    s = graph.mul(s, c) | mul(c, s) | div(s, c)     optional, c a one-element constant
    s = graph.add(s, b) | add(b, s)     optional, b broadcasting to s's shape (a relative
                                        position bias, a mask)
    p = graph.softmax(s) {axis = last}
    o = graph.matmul(p, v)              (rhs_perm becomes v_perm; p itself read unpermuted)

Every intermediate value must have exactly one use (anything else reading the scores
or the probabilities still needs them materialised). PyTorch exports scale q (and, in
`nn.MultiheadAttention`'s exports, k by the square root of the scale) before the first
product: a `graph.mul` of q or k by a one-element constant whose result has that single
use is folded into `scale` too. The op takes the final MatMul's location.

Runs right after graph-canonicalize (which folds the key transposes into the MatMul's
perms), before the layout and fusion passes: `graph.attention` has no NCHW4c kernel,
so it stays on plain tensors on every plan.

Then each operand that is a chain of `graph.reshape`, `graph.transpose` and `graph.slice`
(positive steps) of one tensor, with a transpose or a slice in it, becomes a strided view
of that tensor (`q_view` / `k_view` / `v_view`: offset, shape, strides; a reshape of a
strided tensor only where it needs no copy, as numpy's): PyTorch's
`nn.MultiheadAttention` exports its packed projection as reshape -> transpose -> select
q, k and v, a transpose and three slice kernels per layer that the attention kernel
reads through instead (tiny_bert, vit_b_32: 4 launches a layer fewer). An attention
whose one reader transposes its output (the heads back in token order) writes it
transposed (`out_perm`): one launch a layer fewer again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern
from xdsl.rewriter import InsertPoint

from adreno_mlir.dialects import graph
from adreno_mlir.graph_constants import constant_value
from adreno_mlir.kernel_math.matmul import contiguous_strides
from adreno_mlir.pass_options import CheckedPass, option, target_option, target_profile


def _only_use(value: SSAValue, user: Operation) -> bool:
    """Whether `value` is read exactly once, by `user`."""
    uses = list(value.uses)
    return len(uses) == 1 and uses[0].operation is user


def _scalar_constant(value: SSAValue) -> float | None:
    """The value of a one-element, finite `graph.constant`, else None."""
    if not isinstance(value.owner, graph.ConstantOp) or math.prod(graph.shape_of(value)) != 1:
        return None
    arr = constant_value(value)
    if arr is None or not math.isfinite(float(arr.reshape(-1)[0])):
        return None
    return float(arr.reshape(-1)[0])


def _scaling(op: Operation | None, value: SSAValue) -> tuple[SSAValue, float] | None:
    """(x, c) when `op` computes `value` = x * c, c * x or x / c with c a one-element
    constant and the result of x's shape; None otherwise."""
    if not isinstance(op, (graph.MulOp, graph.DivOp)):
        return None
    candidates = [(op.lhs, op.rhs)] + ([(op.rhs, op.lhs)] if isinstance(op, graph.MulOp) else [])
    for x, c in candidates:
        if graph.shape_of(x) != graph.shape_of(value):
            continue
        factor = _scalar_constant(c)
        if factor is None:
            continue
        if isinstance(op, graph.DivOp):
            if factor == 0.0:
                return None
            factor = 1.0 / factor
        return x, factor
    return None


@dataclass
class _Chain:
    """What a matched chain contributes to `graph.attention`."""

    first: graph.MatMulOp
    scale: float
    bias: SSAValue | None
    dead: list[Operation]
    """The chain's ops between the two products, last first (erased once replaced)."""


def _scores(value: SSAValue, user: Operation) -> _Chain | None:
    """The chain that computes the scores `value` (read only by `user`): a MatMul, then
    an optional scale, then an optional bias add."""
    if not _only_use(value, user):
        return None
    op = value.owner
    bias, scale, dead = None, 1.0, []
    if isinstance(op, graph.AddOp):
        for s, b in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            if graph.shape_of(s) == graph.shape_of(value) and _only_use(s, op) and s is not b:
                inner = _scaled_product(s, op)
                if inner is not None:
                    first, scale, more = inner
                    return _Chain(first, scale, b, [op, *more])
        return None
    inner = _scaled_product(value, user)
    if inner is None:
        return None
    first, scale, dead = inner
    return _Chain(first, scale, bias, dead)


def _scaled_product(value: SSAValue, user: Operation) -> tuple[graph.MatMulOp, float, list[Operation]] | None:
    """(matmul, scale, ops) when `value` (read only by `user`) is matmul(q, k), maybe
    scaled by a one-element constant."""
    if not _only_use(value, user):
        return None
    op = value.owner
    scaled = _scaling(op, value) if isinstance(op, Operation) else None
    if scaled is not None:
        x, factor = scaled
        if isinstance(x.owner, graph.MatMulOp) and _only_use(x, op):
            return x.owner, factor, [op]
        return None
    if isinstance(op, graph.MatMulOp):
        return op, 1.0, []
    return None


def _prescaled(value: SSAValue, user: Operation) -> tuple[SSAValue, float, Operation | None]:
    """q or k without a one-element scale folded into it (x * c read only by the first
    product): (x, c, the mul), or (value, 1, None)."""
    op = value.owner
    if isinstance(op, (graph.MulOp, graph.DivOp)) and _only_use(value, user):
        scaled = _scaling(op, value)
        if scaled is not None:
            return scaled[0], scaled[1], op
    return value, 1.0, None


def _perm_prop(perm: tuple[int, ...]):
    return None if perm == tuple(range(len(perm))) else graph.i64_array(perm)


class FuseAttention(RewritePattern):
    """Match the chain from its final MatMul and replace it by `graph.attention`."""

    def __init__(self, max_keys: int = 0):
        self.max_keys = max_keys
        """Fuse only chains with at most this many keys (0: any)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(op, graph.MatMulOp) or not isinstance(op.lhs.owner, graph.SoftmaxOp):
            return
        if op.lhs_perm is not None and op.lhs_permutation() != tuple(range(len(graph.shape_of(op.lhs)))):
            return
        softmax: graph.SoftmaxOp = op.lhs.owner
        rank = len(graph.shape_of(softmax.input))
        if not _only_use(softmax.result, op) or rank < 2 or softmax.axis.value.data % rank != rank - 1:
            return
        if len(graph.shape_of(op.rhs)) < 2:
            return
        if self.max_keys and graph.shape_of(softmax.input)[-1] > self.max_keys:
            return  # long rows: the unfused local-tiled products are faster (FuseAttentionPass)
        chain = _scores(softmax.input, softmax)
        if chain is None:
            return
        first = chain.first
        if len(graph.shape_of(first.lhs)) < 2 or len(graph.shape_of(first.rhs)) < 2:
            return
        q, q_scale, q_mul = _prescaled(first.lhs, first)
        k, k_scale, k_mul = _prescaled(first.rhs, first)
        scale = chain.scale * q_scale * k_scale
        props = {"scale": graph.f32_attr(scale)}
        for name, perm in (("q_perm", first.lhs_permutation()), ("k_perm", first.rhs_permutation()),
                           ("v_perm", op.rhs_permutation())):
            attr = _perm_prop(perm)
            if attr is not None:
                props[name] = attr
        operands = [q, k, op.rhs] + ([chain.bias] if chain.bias is not None else [])
        fused = graph.AttentionOp.create(operands=operands, result_types=[op.result.type], properties=props)
        fused.location = op.location
        fused.result.name_hint = op.result.name_hint
        rewriter.replace_matched_op(fused)
        for dead in [softmax, *chain.dead, first, q_mul, k_mul]:
            if dead is None:
                continue
            consts = [v for v in dead.operands if isinstance(v.owner, graph.ConstantOp)]
            rewriter.erase(dead)
            for c in consts:  # the scale constants, now unread
                if not c.uses:
                    rewriter.erase(c.owner)


# --------------------------------------------------------------------------- operand views


def reshape_strides(old: tuple[int, ...], old_strides: tuple[int, ...],
                    new: tuple[int, ...]) -> tuple[int, ...] | None:
    """The strides of `new`-shaped view of a strided tensor (shape `old`, `old_strides`)
    with the same elements in the same order, or None where the reshape needs a copy
    (numpy's attempt_nocopy_reshape: each run of new axes spans a run of old axes that
    is contiguous in memory)."""
    dims = [(d, st) for d, st in zip(old, old_strides) if d != 1]
    od, os_ = [d for d, _ in dims], [st for _, st in dims]
    out = [0] * len(new)
    oi, oj, ni, nj = 0, 1, 0, 1
    while ni < len(new) and oi < len(od):
        np_, op_ = new[ni], od[oi]
        while np_ != op_:
            if np_ < op_:
                if nj >= len(new):
                    return None
                np_ *= new[nj]
                nj += 1
            else:
                if oj >= len(od):
                    return None
                op_ *= od[oj]
                oj += 1
        if any(os_[k] != od[k + 1] * os_[k + 1] for k in range(oi, oj - 1)):
            return None
        out[nj - 1] = os_[oj - 1]
        for k in range(nj - 1, ni, -1):
            out[k - 1] = out[k] * new[k]
        ni, nj, oi, oj = nj, nj + 1, oj, oj + 1
    return tuple(out)  # axes of extent 1 past the last run keep stride 0: their index is 0


def operand_view(value: SSAValue) -> tuple[SSAValue, int, tuple[int, ...], tuple[int, ...], bool]:
    """(base, offset, shape, strides, through a copy) of `value` as a strided view of the
    tensor at the start of its chain of reshapes, transposes and slices; "through a copy"
    says whether the chain holds a transpose or a slice (ops with kernels). A step the
    view cannot take (a reshape of non-contiguous runs, a negative step) starts the chain
    at its own result instead."""
    op = value.owner
    shape = graph.shape_of(value)
    if isinstance(op, (graph.ReshapeOp, graph.TransposeOp, graph.SliceOp)):
        base, offset, in_shape, in_strides, copy = operand_view(op.input)
        if isinstance(op, graph.ReshapeOp):
            strides = reshape_strides(in_shape, in_strides, shape)
            if strides is not None:
                return base, offset, shape, strides, copy
        elif isinstance(op, graph.TransposeOp):
            return base, offset, shape, tuple(in_strides[p] for p in graph.ints(op.perm)), True
        else:
            starts, steps = graph.ints(op.starts), graph.ints(op.steps)
            if all(st > 0 for st in steps):
                offset += sum(a * st for a, st in zip(starts, in_strides))
                return base, offset, shape, tuple(st * k for st, k in zip(in_strides, steps)), True
    return value, 0, shape, contiguous_strides(shape), False


class FoldAttentionViews(RewritePattern):
    """Q, K and V read through their chains of reshapes, transposes and slices (see the
    module docstring)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(op, graph.AttentionOp):
            return
        operands, props, old = list(op.operands), dict(op.properties), []
        for index, which in enumerate(("q", "k", "v")):
            value = operands[index]
            if f"{which}_view" in props:
                continue
            base, offset, shape, strides, copy = operand_view(value)
            if not copy or base is value:
                continue
            props[f"{which}_view"] = graph.i64_array([offset, *shape, *strides])
            operands[index] = base
            old.append(value)
        result, replaced = op.result, op
        users = [u.operation for u in op.result.uses]
        if "out_perm" not in props and len(users) == 1 and isinstance(users[0], graph.TransposeOp):
            # the output transposed by its one reader: written transposed
            props["out_perm"] = users[0].perm
            result, replaced = users[0].result, users[0]
        if not old and replaced is op:
            return
        new = graph.AttentionOp.create(operands=operands, result_types=[result.type], properties=props,
                                       attributes=dict(op.attributes))
        new.location = op.location
        new.result.name_hint = result.name_hint
        rewriter.insert_op(new, InsertPoint.before(op))
        rewriter.replace_all_uses_with(result, new.result)
        if replaced is not op:
            rewriter.erase(replaced)
        rewriter.erase(op)
        for value in old:
            _erase_dead_chain(value, rewriter)


def _erase_dead_chain(value: SSAValue, rewriter: PatternRewriter) -> None:
    """The reshapes, transposes and slices that computed `value`, now read by nothing."""
    op = value.owner
    while isinstance(op, (graph.ReshapeOp, graph.TransposeOp, graph.SliceOp)) and not op.result.uses:
        inner = op.input
        rewriter.erase(op)
        op = inner.owner


@dataclass(frozen=True)
class FuseAttentionPass(CheckedPass):
    """Fuses on GPU target profiles; on CPU profiles (and with `enabled=false`) it leaves
    the chain to the register-tiled matmuls. Measured (docs/bench/issue12): on PoCL the
    fused kernel cost 5% (tiny_bert 120.6 -> 126.2 ms: a CPU's 4x4-tiled matmuls beat one
    work-group per query row). On the H200 it is about even: model device time -4%
    (tiny_bert, plain buffers), -2% (vit_b_32), 0 to +4% (swin_t), because its 50 MB L2
    holds the score matrices the fusion keeps out of global memory; it is on for GPU
    profiles for the Adreno GPUs, whose memory is far narrower, and as the place where a
    tuned attention kernel goes."""

    name = "fuse-attention"

    target: str = target_option()
    """Target profile the rule decides for (adreno_mlir.target)."""
    enabled: bool = True
    """False: never fuse (to compare, or to keep the three kernels)."""
    max_keys: int = option(128, minimum=0)
    """Fuse only attention over at most this many keys (0: any length). The fused kernel
    computes a query row per work-group; over whisper's 1500 keys it took 15.8 of the
    encoder's 18.5 ms on the H200, where the unfused chain's scores product alone, in
    64 x 64 local tiles, is 0.16 ms a layer; segformer-b0's device time (256 keys in its
    first stages) is 7.75 ms fused, 5.43 ms with 128; distilbert, t5 and gpt2 (64 and 128
    keys) were the same with 64, 128 and any (docs/bench/issue28/hf_mk*.log)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        profile = target_profile(self, op)
        if not self.enabled or not profile.is_gpu:
            return
        PatternRewriteWalker(FuseAttention(self.max_keys), apply_recursively=False).rewrite_module(op)
        PatternRewriteWalker(FoldAttentionViews(), apply_recursively=False).rewrite_module(op)
