"""`select-kernel-config`: every schedule decision of a kernel, as an attribute in the IR.

Each op that becomes a kernel (a `graph.fused` region, or a lone compute op) gets a
`kernel_config` dictionary (IREE's `lowering_config`), chosen here from the target
profile. The lowering only reads it, so a schedule can be inspected in printed IR and
changed by editing it:

    %y = graph.fused {kernel_config = {x_block = 2 : i64, co_blocks = 1 : i64, split_k = 4 : i64}} -> ...

Keys by kernel (a key a config lacks takes its value from `DEFAULT_RULES`):

| kernel | keys |
|---|---|
| conv on NCHW4c tensors | `x_block` (output pixels per work-item, 1-4), `co_blocks` (output channel blocks per work-item, 1 or 2), `split_k` (input-channel parts, >= 1; > 1 is carried out by the `split-k` pass), `dw_rows` (depthwise: 1 reads each input row segment once per work-item, 0 once per tap), `reduce_items` (groups 1: work-items of a work-group that share one output block's input channels and add their sums in local memory, split-K in one launch; GPU default for 1x1 outputs), `dw_tile` (a conv reading a `graph.fused {on_load}` depthwise region: work-items along a row per work-group, which computes the row segment's depthwise values once into local memory for all its output channel blocks; 0 = each work-item computes those it loads) |
| conv on NCHW tensors | `kernel` (`"vec4"`: float4 OIHW4o weights; `"scalar"`; `"pointwise"`: 1x1 stride-1 convs as a product over flattened pixels, `"plane"`: stride-1 convs (groups 1 or depthwise) whose output rows are as wide as the input's, as vectors over the flattened plane, and `"rows"`: groups-1 or depthwise convs with row stride 1 or 2 as vectors along output rows; the CPU defaults), `co_block` (output channels per work-item: 4 or 8 for vec4, 1/2/4/8/16 otherwise; depthwise plane and rows ignore it: one channel each), `x_block` (vec4: pixels per work-item, 1, 2 or 4; pointwise: pixel vectors per work-item), `vec` (pointwise, plane and rows: pixels per vector, 4 or 8) |
| Winograd matmul | `tiles_per_item`, `co_blocks` |
| global pools, reductions (ReduceMean/Sum/Max/...), LayerNorm, (Log)Softmax | `reduce_items` (work-items per output or row: 1 = a serial loop, else a work-group reduction) |
| fused attention (graph.attention) | `reduce_items` (work-items per query row: 1 = a serial row, else 2-128) |
| Gemm, MatMul | `k_split` (work-items sharing one output's reduction: 1 = one per output) |
| MatMul | `tile_m` (rows per work-item: 1, 2, 4, 8), `tile_n` (columns per work-item: 1, or 4 as a float4 when N % 4 == 0) |
| every NCHW4c kernel | `compute` (`"f32"`, or `"f16"`: half arithmetic, weights uploaded in half; absent: f32) |
| every kernel | `work_group` (preferred local size; absent or empty: the OpenCL driver picks) |

`compute = "f16"` is what precision="fp16" means (the pass option `compute=f16` gives it
to every NCHW4c kernel); set it to "f32" on one op to keep that layer in fp32 arithmetic
(its stored activations stay as convert-layout-nchw4c typed them).

A JSON file of overrides (`overrides="PATH"`, quoted in a pipeline string; what an
autotuner writes) replaces any default: `{"<signature>": {"x_block": 2}, "loc:/layer4/layer4.0/conv1/Conv": {...}}`,
keyed by the op's signature (`kernel_signature`: op kind, operand and result types,
attributes, fused epilogue) or by `loc:` plus the ONNX node name of any op in the
kernel. Node names win over signatures. Entries that match no op are reported (a
warning: a shared tuning file may hold other models' entries).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xdsl.context import Context
from xdsl.dialects.builtin import (
    ArrayAttr,
    BoolAttr,
    DenseArrayBase,
    DictionaryAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    i1,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern

from adreno_mlir.dialects import graph, texture
from adreno_mlir.errors import CompileError, op_where, read_json
from adreno_mlir.lowering.kernels.matmul import MatMulGeometry, float4_columns, matmul_geometry, read_strides
from adreno_mlir.pass_options import CheckedPass, option, target_option, target_profile

CONFIG_ATTR = "kernel_config"

DEFAULT_RULES: "Rules"
"""Where a config lacks a key (select-kernel-config did not run, or a hand-written
config sets only some keys), the lowering takes that key from these rules: the pass's
defaults for a GPU target."""


# --------------------------------------------------------------------------- reading and writing


def kernel_op(op: Operation) -> Operation:
    """The op that carries the kernel's config: the enclosing `graph.fused`, else `op`."""
    parent = op.parent_op()
    return parent if isinstance(parent, graph.FusedOp) else op


def head_of(op: Operation) -> Operation:
    return op.head if isinstance(op, graph.FusedOp) else op


def _to_python(a: Attribute) -> Any:
    if isinstance(a, IntegerAttr):
        v = a.value.data
        return bool(v) if a.type == i1 else int(v)
    if isinstance(a, StringAttr):
        return a.data
    if isinstance(a, DenseArrayBase):
        return tuple(int(v) for v in a.get_values())
    if isinstance(a, ArrayAttr):
        return tuple(_to_python(x) for x in a.data)
    raise CompileError(f"kernel_config values must be integers, booleans, strings or arrays, got {a}")


def _to_attr(v: Any) -> Attribute:
    if isinstance(v, bool):
        return BoolAttr.from_bool(v)
    if isinstance(v, int):
        return IntegerAttr(v, i64)
    if isinstance(v, str):
        return StringAttr(v)
    if isinstance(v, (tuple, list)):
        return DenseArrayBase.from_list(i64, [int(x) for x in v])
    raise CompileError(f"kernel_config value {v!r} is not an int, bool, string or list of ints")


def config_of(op: Operation) -> dict[str, Any]:
    """The `kernel_config` of the kernel `op` belongs to, as Python values."""
    attr = kernel_op(op).attributes.get(CONFIG_ATTR)
    if attr is None:
        return {}
    if not isinstance(attr, DictionaryAttr):
        raise CompileError(f"{where(op)}: kernel_config must be a dictionary, got {attr}")
    return {k: _to_python(v) for k, v in attr.data.items()}


def set_config(op: Operation, cfg: dict[str, Any]) -> None:
    kernel_op(op).attributes[CONFIG_ATTR] = DictionaryAttr({k: _to_attr(v) for k, v in cfg.items()})


where = op_where


def kernel_kind(head: Operation) -> str | None:
    """Which family of keys applies to a kernel whose head is `head`."""
    if isinstance(head, (graph.Conv2dOp, graph.Conv2dSplitKOp)):
        return "conv4c" if isinstance(head.input.type, texture.TextureTensorType) else "conv"
    if head.name == "texture.winograd_matmul":
        return "winograd_matmul"
    if isinstance(head, (graph.GlobalAvgPoolOp, graph.ReduceOp)):  # every reduction kind
        return "reduce"
    if isinstance(head, (graph.GemmOp, graph.MatMulOp)):
        return "gemm"
    if isinstance(head, (graph.LayerNormOp, graph.SoftmaxOp, graph.LogSoftmaxOp)):
        return "norm"
    if isinstance(head, graph.AttentionOp):
        return "attention"
    return None


def kernel_signature(op: Operation) -> str:
    """The key a tuned configuration is stored under: op kind, operand and result types,
    attributes and the fused element-wise tail. The same layer in two models has the
    same signature."""
    kop = kernel_op(op)
    head = head_of(kop)
    types = ",".join(str(v.type) for v in head.operands)
    props = ";".join(f"{k}={v}" for k, v in sorted(head.properties.items()))
    tail = ""
    if isinstance(kop, graph.FusedOp):
        tail = "+" + "+".join(o.name.removeprefix("graph.") for o in kop.ops[1:])
        if kop.pool_partials is not None:
            tail += f"+pool_partials{kop.pool_partials.tiles.value.data}"
    dw = depthwise_load_of(head)
    if dw is not None:  # the depthwise conv it computes on load is part of the kernel
        dhead = dw.head
        dprops = ";".join(f"{k}={v}" for k, v in sorted(dhead.properties.items()))
        tail += (f"+on_load({dhead.input.type},{dhead.weight.type}{{{dprops}}}"
                 + "".join("+" + o.name.removeprefix("graph.") for o in dw.ops[1:]) + ")")
    return f"{head.name}({types})->{kop.results[0].type}{{{props}}}{tail}"


_INT_KEYS = {
    "conv4c": {"x_block": (1, 2, 3, 4), "co_blocks": (1, 2), "split_k": range(1, 65), "dw_rows": (0, 1),
               "reduce_items": (1, 2, 4, 8, 16, 32, 64, 128, 256), "dw_tile": range(0, 257)},
    "conv": {"co_block": (1, 2, 4, 8, 16), "x_block": (1, 2, 4), "vec": (4, 8)},
    "winograd_matmul": {"tiles_per_item": range(1, 9), "co_blocks": (1, 2, 4)},
    "reduce": {"reduce_items": (1, 16, 32, 64, 128, 256)},
    "norm": {"reduce_items": (1, 16, 32, 64, 128, 256)},
    "attention": {"reduce_items": (1, 2, 4, 8, 16, 32, 64, 128)},
    "gemm": {"k_split": (1, 2, 4, 8, 16, 32, 64, 128, 256), "tile_m": (1, 2, 4, 8), "tile_n": (1, 4)},
}


def is_packed_kernel(head: Operation) -> bool:
    """Whether the kernel headed by `head` works on NCHW4c tensors (those kernels can
    compute in half)."""
    return isinstance(head, (texture.PackOp, texture.UnpackOp)) or any(
        isinstance(r.type, texture.TextureTensorType) for r in head.results)


COMPUTE_TYPES = ("f32", "f16")
CONV_KERNELS = ("vec4", "scalar", "pointwise", "plane", "rows")
"""The NCHW convolution kernels (`kernel` of a conv's config)."""


def known_keys(head: Operation) -> set[str]:
    """The config keys the kernel headed by `head` reads."""
    kind = kernel_kind(head)
    return (set(_INT_KEYS.get(kind, {})) | {"work_group"} | ({"kernel"} if kind == "conv" else set())
            | ({"compute"} if is_packed_kernel(head) else set()))


def validate_config(op: Operation, cfg: dict[str, Any]) -> dict[str, Any]:
    """Check a config against its kernel's keys; returns it merged over the defaults.
    Errors name the op, the key and the allowed values."""
    head = head_of(kernel_op(op))
    kind = kernel_kind(head)
    allowed = _INT_KEYS.get(kind, {})
    known = known_keys(head)
    for k, v in cfg.items():
        if k not in known:
            raise CompileError(
                f"{where(head)}: kernel_config key '{k}' is not used by this kernel; known keys: "
                f"{', '.join(sorted(known))}")
        if k == "work_group":  # () = the driver's choice (an override of a default local size)
            if not (isinstance(v, tuple) and len(v) <= 3 and all(d >= 1 for d in v)):
                raise CompileError(f"{where(head)}: kernel_config work_group must be 0-3 positive ints, got {v}")
        elif k == "kernel":
            if v not in CONV_KERNELS:
                raise CompileError(f"{where(head)}: kernel_config kernel must be one of "
                                   f"{', '.join(map(repr, CONV_KERNELS))}, got {v!r}")
        elif k == "compute":
            if v not in COMPUTE_TYPES:
                raise CompileError(f"{where(head)}: kernel_config compute must be \"f32\" or \"f16\", got {v!r}")
        elif isinstance(v, bool) or not isinstance(v, int) or v not in allowed[k]:
            choices = allowed[k]
            shown = f"{choices.start}..{choices.stop - 1}" if isinstance(choices, range) else list(choices)
            raise CompileError(f"{where(head)}: kernel_config {k} = {v!r} is not one of {shown}")
    full = merge_config(DEFAULT_RULES.choose(head, kernel=cfg.get("kernel")), cfg)
    error = conv_config_error(head, full) if kind == "conv" else conv4c_config_error(head, full) if (
        kind == "conv4c") else None
    if error is not None:
        raise CompileError(f"{where(head)}: {error}")
    return full


def merge_config(defaults: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """`given` (an override, or a config written by hand) over `defaults`. The two ways to
    split a conv's input channels exclude each other, so a `split_k` > 1 that comes without
    `reduce_items` drops the default's work-group split, and a `reduce_items` > 1 without
    `split_k` the default's split-K: `{"split_k": 2}` on a squeeze-excite FC means split-K.
    `dw_tile` and `reduce_items` (both set the work-group) drop each other the same way."""
    full = {**defaults, **given}
    for a, b in _EXCLUSIVE_KEYS + tuple((b, a) for a, b in _EXCLUSIVE_KEYS):
        if given.get(a, _OFF[a]) != _OFF[a] and b not in given and full.get(b, _OFF[b]) != _OFF[b]:
            full[b] = _OFF[b]
    return full


_OFF = {"split_k": 1, "reduce_items": 1, "dw_tile": 0}
"""The value of each work-splitting key that means "not used"."""
_EXCLUSIVE_KEYS = (("split_k", "reduce_items"), ("dw_tile", "reduce_items"))
"""Pairs of conv4c keys that exclude each other: two ways to split the input channels, and
two ways to set the work-group (`dw_tile`, `reduce_items`)."""


def depthwise_load_of(op: Operation) -> graph.FusedOp | None:
    """The `graph.fused {on_load}` region that conv `op` reads as its input (and computes
    as it loads it: fuse-depthwise-load), or None."""
    src = getattr(op, "input", None)
    region = graph.on_load_region(src) if isinstance(src, SSAValue) else None
    # (a conv that cannot read it gets the lowering's error, not a dw_tile)
    return region if region is not None and graph.reads_on_load(op) else None


def read_by_depthwise(op: Operation) -> bool:
    """Whether the value that `op`'s kernel writes (its region's, when `op` heads one) has
    one reader, a depthwise convolution: an inverted-residual block's expansion."""
    readers = {use.operation for use in kernel_op(op).results[0].uses}  # a use inside a region is its op's own
    return len(readers) == 1 and graph.is_depthwise_load(readers.pop())


def dw_tile_groups(op: Operation, cfg: dict[str, Any]) -> int:
    """G of a `dw_tile` work-group: the conv's output channel blocks per co_blocks."""
    return -(-graph.shape_of(op.results[0])[1] // 4) // cfg.get("co_blocks", 1)


MAX_DW_TILE_ITEMS = 256
"""The largest `dw_tile` work-group (Lx x G work-items) that select-kernel-config picks or
accepts: every OpenCL GPU we target runs 256 (Adreno's limit is 1024 at low register use)."""


def pooled(op: Operation) -> bool:
    """Whether `op` heads a `graph.fused` region that also writes `graph.pool_partials`."""
    parent = op.parent_op()
    return isinstance(parent, graph.FusedOp) and parent.partials is not None and parent.head is op


def conv4c_config_error(op: Operation, cfg: dict[str, Any]) -> str | None:
    """Why an NCHW4c convolution cannot take `cfg` (its co_blocks), or None: checked by
    `validate_config` (so the autotuner prunes such candidates before compiling) and by
    the packed lowering."""
    co_blocks = cfg.get("co_blocks", 1)
    groups = getattr(op, "groups", None)
    depthwise = groups is not None and groups.value.data > 1
    blocks = -(-graph.shape_of(op.results[0])[1] // 4)
    if co_blocks > 1 and (depthwise or blocks % co_blocks):
        return (f"kernel_config co_blocks = {co_blocks} must divide the output channel blocks ({blocks}) "
                "and be 1 for depthwise convolutions")
    tile = cfg.get("dw_tile", 0)
    if tile:
        if depthwise_load_of(op) is None:
            return (f"kernel_config dw_tile = {tile} needs a conv that reads a graph.fused {{on_load}} region "
                    "(fuse-depthwise-load); use 0 or drop the key")
        if cfg.get("reduce_items", 1) > 1:
            return (f"kernel_config dw_tile = {tile} and reduce_items = {cfg['reduce_items']} both set the "
                    "work-group; use one of them")
        if tile * dw_tile_groups(op, cfg) > MAX_DW_TILE_ITEMS:
            return (f"kernel_config dw_tile = {tile} makes work-groups of {tile} x {dw_tile_groups(op, cfg)} "
                    f"work-items (output channel blocks / co_blocks); at most {MAX_DW_TILE_ITEMS}: lower dw_tile "
                    "or raise co_blocks")
    if pooled(op):
        if cfg.get("reduce_items", 1) < 2 or cfg.get("x_block", 1) != 1:
            return (f"kernel_config of a depthwise conv that writes graph.pool_partials needs reduce_items >= 2 "
                    f"(work-items per tile) and x_block = 1, got {cfg.get('reduce_items', 1)} and "
                    f"{cfg.get('x_block', 1)}")
        return None
    if cfg.get("reduce_items", 1) > 1 and (depthwise or cfg.get("split_k", 1) > 1
                                           or isinstance(op, graph.Conv2dSplitKOp)):
        return (f"kernel_config reduce_items = {cfg['reduce_items']} (a work-group per output summing the input "
                "channels) needs groups = 1 and split_k = 1")
    return None


def is_depthwise(op: graph.Conv2dOp) -> bool:
    """One group per input channel and per output channel."""
    groups = op.groups.value.data
    return groups > 1 and groups == graph.shape_of(op.input)[1] == graph.shape_of(op.result)[1]


def vec4_ok(op: graph.Conv2dOp) -> bool:
    """Whether an NCHW convolution can run as the float4 kernel (`Conv4Spec`): output
    channels in float4s, groups 1 or depthwise, constant weights (packed OIHW4o)."""
    return (graph.shape_of(op.result)[1] % 4 == 0 and (op.groups.value.data == 1 or is_depthwise(op))
            and isinstance(op.weight.owner, graph.ConstantOp))


def pointwise_ok(op: graph.Conv2dOp) -> bool:
    """Whether an NCHW convolution can run as the pointwise kernel (`PointwiseSpec`):
    1x1 window, stride 1, no padding, groups 1, constant weights."""
    return (tuple(graph.shape_of(op.weight)[2:]) == (1, 1) and graph.ints(op.strides) == (1, 1)
            and not any(graph.ints(op.pads)) and op.groups.value.data == 1
            and isinstance(op.weight.owner, graph.ConstantOp))


def plane_ok(op: graph.Conv2dOp) -> bool:
    """Whether an NCHW convolution can run as the plane kernel (`PlaneSpec`): groups 1
    or depthwise, stride 1, output width == input width, constant weights (packed)."""
    return ((op.groups.value.data == 1 or is_depthwise(op)) and graph.ints(op.strides) == (1, 1)
            and graph.shape_of(op.result)[3] == graph.shape_of(op.input)[3]
            and isinstance(op.weight.owner, graph.ConstantOp))


def rows_ok(op: graph.Conv2dOp) -> bool:
    """Whether an NCHW convolution can run as the row-vector kernel (`RowsSpec`): groups
    1 or depthwise, row stride 1 or 2, constant weights (packed at compile time)."""
    return ((op.groups.value.data == 1 or is_depthwise(op)) and graph.ints(op.strides)[1] in (1, 2)
            and isinstance(op.weight.owner, graph.ConstantOp))


_CONV_KERNEL_RULES = {
    "vec4": (vec4_ok, "constant weights, output channels divisible by 4 and groups 1 or depthwise"),
    "pointwise": (pointwise_ok, "a 1x1 convolution with stride 1, no padding, groups 1 and constant weights"),
    "plane": (plane_ok, "groups 1 or a depthwise convolution, stride 1, output rows as wide as the input's and "
                        "constant weights"),
    "rows": (rows_ok, "groups 1 or a depthwise convolution, a row stride of 1 or 2 and constant weights"),
}
"""Per NCHW convolution kernel but `scalar` (which runs any conv): whether it applies,
and what it needs (for the error when a config asks for it where it does not)."""


def conv_kernels(op: graph.Conv2dOp) -> tuple[str, ...]:
    """The NCHW convolution kernels that can run `op` (`scalar` always can)."""
    return ("scalar", *(k for k, (ok, _) in _CONV_KERNEL_RULES.items() if ok(op)))


def conv_config_error(op: graph.Conv2dOp, cfg: dict[str, Any]) -> str | None:
    """Why an NCHW convolution cannot take `cfg` (its kernel and co_block), or None: the
    one statement of these limits, for `validate_config` (the autotuner prunes with it) and
    the lowering alike."""
    co, groups = graph.shape_of(op.result)[1], op.groups.value.data
    depthwise = is_depthwise(op)
    kernel, cb = cfg.get("kernel"), cfg.get("co_block")
    if kernel in _CONV_KERNEL_RULES:
        ok, needs = _CONV_KERNEL_RULES[kernel]
        if not ok(op):
            other = '"scalar"' if kernel == "vec4" else '"vec4" or "scalar"'
            return f'kernel_config kernel = "{kernel}" needs {needs}; use {other}'
    if cb is None or (depthwise and kernel in ("plane", "rows")):  # those take one channel each
        return None
    if kernel == "vec4":
        if cb not in (4, 8) or co % cb or (depthwise and cb != 4):
            return f"kernel_config co_block = {cb} must be 4 or 8, divide the output channels ({co}) and be 4 for depthwise"
        return None
    if (co // groups) % cb:
        return f"kernel_config co_block = {cb} must divide the output channels per group ({co // groups})"
    return None


def group_items(extent: int, most: int = 256) -> int:
    """Work-items per work-group reduction on a GPU: the most of 16, 32, ... `most` that
    still give each at least two elements of `extent`; 1 (a serial loop) under 32."""
    return max((n for n in (16, 32, 64, 128, 256) if n <= most and 2 * n <= extent), default=1)


def tileable(op: Operation) -> bool:
    """Whether a Gemm/MatMul runs as a (tiled) MatMulSpec: a MatMul always; a Gemm
    without transA whose B is either not transposed or a constant (transposed at
    compile time)."""
    if isinstance(op, graph.MatMulOp):
        return True
    return not op.trans_a.value.data and (not op.trans_b.value.data or isinstance(op.b.owner, graph.ConstantOp))


def matmul_dims(op: Operation) -> tuple[int, int, int]:
    """(M, N, batch entries) of a Gemm or MatMul. A MatMul whose B has no batch of its
    own runs its batch as extra rows when A's strides allow (see nchw_lowering.MatMul):
    M counts them."""
    if isinstance(op, graph.GemmOp):
        m, n = graph.shape_of(op.results[0])
        return m, n, 1
    geo = matmul_geometry_of(op)
    rows = geo.collapse_rows()
    if rows is not None:  # B shared by every batch entry: one tall product
        return rows.m, rows.n, 1
    batch = 1
    for d in geo.batch:
        batch *= d
    return geo.m, geo.n, batch


def matmul_geometry_of(op: graph.MatMulOp) -> MatMulGeometry:
    """How a MatMul's kernel reads its operands: the shapes after `lhs_perm` / `rhs_perm`,
    read through the permuted strides of the stored tensors (one source for the rules
    here and the lowering, so a rule never picks what the lowering must refuse)."""
    return matmul_geometry(op.lhs_shape(), read_strides(graph.shape_of(op.lhs), op.lhs_permutation()),
                           op.rhs_shape(), read_strides(graph.shape_of(op.rhs), op.rhs_permutation()))


# --------------------------------------------------------------------------- the rules


@dataclass(frozen=True)
class Rules:
    """The default schedule: what the pass options and the target profile imply."""

    gpu: bool
    conv_co_block: int
    conv_x_block: int
    vectorize: bool
    packed_co_blocks: int
    min_work_items: int
    split_k_items: int
    work_group: tuple[int, ...]
    compute: str = "f32"

    def choose(self, head: Operation, kernel: str | None = None) -> dict[str, Any]:
        """The default config of the kernel headed by `head` (`kernel` forces the NCHW
        convolution's kernel kind, so the other keys fit it)."""
        kind = kernel_kind(head)
        cfg: dict[str, Any] = {}
        if kind == "conv4c":
            cfg = self.conv4c(head)
        elif kind == "conv":
            cfg = self.conv(head, kernel)
        elif kind == "winograd_matmul":
            cfg = self.winograd_matmul(head)
        elif kind == "reduce":
            cfg = self.reduce(head)
        elif kind == "gemm":
            cfg = self.tiles(head, self.gemm(head))
        elif kind == "norm":
            cfg = self.norm(head)
        elif kind == "attention":
            cfg = self.attention(head)
        if self.work_group:
            cfg["work_group"] = self.work_group
        if self.compute != "f32" and is_packed_kernel(head):
            cfg["compute"] = self.compute
        return cfg

    def conv4c(self, op: graph.Conv2dOp | graph.Conv2dSplitKOp) -> dict[str, Any]:
        n, c4, h, w, _ = op.result.type.shape
        if isinstance(op, graph.Conv2dSplitKOp):
            n //= op.parts.value.data
        depthwise = isinstance(op, graph.Conv2dOp) and op.groups.value.data > 1
        x_block = max(1, min(self.conv_x_block, w))
        co_blocks = self.packed_co_blocks if not depthwise and c4 % self.packed_co_blocks == 0 else 1
        # Split-K: enough parts for about split_k_items work-items when the grid alone
        # is smaller (late 7x7 layers), every part keeping >= 8 input channel blocks.
        # CPUs have few cores that a small grid already fills: no split there.
        ci4 = op.input.type.shape[1]
        items = -(-w // x_block) * h * n * c4
        split = 1
        if self.gpu and self.split_k_items and not depthwise and items < self.split_k_items:
            split = max(1, min(8, -(-self.split_k_items // items), ci4 // 8))
        if split > 1 and isinstance(op, graph.Conv2dOp) and read_by_depthwise(op):
            # An expansion that a depthwise conv reads stays one launch. On the H200 a
            # depthwise kernel reading what a split-K sum kernel had just written took ~5 us
            # more than after a direct conv (14x14 and 7x7 layers, images especially), and the
            # direct expansion was about as fast as split-K's two launches. Depthwise kernels
            # (A/B, docs/bench/issue13 session 5): EfficientNet-B0 172 -> 139 us (images) and
            # 141 -> 123 (buffers), MobileNetV3-Large 92 -> 72 (images); the models' device
            # time: MobileNetV2 -7%, the others within +-4% (the H200's drift).
            split = 1
        if depthwise and self.gpu:
            # One output pixel per work-item: on the H200 the depthwise kernels of MobileNetV2/V3 and
            # EfficientNet-B0 took 0.52 ms (images) / 0.40 ms (buffers) with x_block 1 against 0.61 / 0.58
            # with 4 (bench/schedule_sweep.py --family depthwise, docs/bench/issue13): they are memory
            # bound, and more work-items hide more latency than register reuse saves.
            x_block = 1
        cfg = {"x_block": x_block, "co_blocks": co_blocks, "split_k": split}
        if not depthwise and h * w == 1 and isinstance(op, graph.Conv2dOp):
            # A 1x1 output (a squeeze-excite block's 1x1 convs, a classifier as a conv): a GEMV of
            # a few dozen output blocks. On GPUs a work-group per output block sums the input
            # channels in one launch; split-K needed two, and on the H200 each launch costs ~5 us,
            # more than the product itself. CPUs keep one work-item per output (written out: an
            # absent key would take the GPU rule in the lowering).
            # Reading pool tiles (graph.sum_partials), the work-items share (block, tile) pairs.
            pairs = ci4 * (op.input.owner.input.type.shape[2] if isinstance(op.input.owner, graph.SumPartialsOp) else 1)
            items = min(256, 1 << (pairs.bit_length() - 1)) if self.gpu and pairs >= 8 else 1
            if items > 1:
                cfg.update(split_k=1, x_block=1, co_blocks=1)
            cfg["reduce_items"] = items
        if depthwise:  # row reuse (PackedConvSpec.dw_rows): each input pixel read once per work-item
            cfg["dw_rows"] = 1
        if depthwise_load_of(op) is not None:
            # The depthwise conv it computes on load: a work-group holds every output channel
            # block of a row segment, computes the segment's depthwise values once into local
            # memory and shares them (0 would have each work-item compute what it loads, G times).
            # One pixel per work-item: more work-items share the depthwise values (x_block 4 left
            # 28x28 MobileNetV3-Small blocks with 42-item work-groups, slower than two kernels).
            # A 1x1 output keeps its GEMV work-group (reduce_items, above), whose work-items
            # compute the depthwise values they load.
            groups = dw_tile_groups(op, cfg)
            if cfg.get("reduce_items", 1) > 1 or groups > MAX_DW_TILE_ITEMS:
                cfg["dw_tile"] = 0
            else:
                cfg["x_block"] = 1
                cfg["dw_tile"] = min(w, MAX_DW_TILE_ITEMS // groups)
        if pooled(op):  # a work-group per (tile, channel block): one output pixel per work-item per step
            from adreno_mlir.passes.fuse_pool_partials import pool_items

            cfg.update(x_block=1, reduce_items=pool_items(h * w))
        return cfg

    def winograd_matmul(self, op: Operation) -> dict[str, Any]:
        """One tile and one channel block per work-item on GPUs (fastest on the H200);
        CPUs gain from reusing each filter float4 for two tiles and two channel blocks
        (measured on PoCL)."""
        if self.gpu:
            return {"tiles_per_item": 1, "co_blocks": 1}
        k4 = op.result.type.shape[1]
        return {"tiles_per_item": 2, "co_blocks": 2 if k4 % 2 == 0 else 1}

    def reduce(self, op: Operation) -> dict[str, Any]:
        """Global pools and every reduction kind (graph.ReduceOp: mean, sum, max, min,
        prod, L1, L2, ...): `reduce_items` work-items per output (1: one work-item loops
        over the whole reduced extent). Every kind has the work-group kernel (ReduceSpec
        combines the partial results with the kind's own add / max / min / multiply), so
        the rule looks only at the extent.

        GPUs: a work-group per output, of the most work-items (16 to 256) that still give
        each at least two elements; the serial loop only when the extent is too small
        even for 16 (under 32 elements). A serial squeeze-excite pool is a handful of
        work-items (one per channel block) each looping over all the pixels, 12-23% of
        MobileNetV3 / EfficientNet time on an H200; the work-group version runs
        extent/items loads per work-item and log2(items) barrier steps. The value is
        always written: an absent key would take `DEFAULT_RULES` (a GPU's) in the
        lowering. CPUs keep 1: on PoCL (2 cores, kernel time from profiling events) the
        serial loop was as fast or faster for NCHW4c images (112x112x32: 0.57 ms against
        0.58-0.63 ms with 16-256 work-items; 7x7x576: 0.04 against 0.05-0.20 ms) and for
        small NCHW means (7x7x576: 0.014 against 0.05-0.5 ms); only large NCHW means gained
        a little (56x56x96: 0.24 against 0.16-0.20 ms)."""
        shape = graph.shape_of(op.input)
        axes = range(2, len(shape)) if isinstance(op, graph.GlobalAvgPoolOp) else graph.ints(op.axes)
        extent = 1
        for a in axes:
            extent *= shape[a]
        items = 1
        if self.gpu:
            items = group_items(extent)
        return {"reduce_items": items}

    def norm(self, op: Operation) -> dict[str, Any]:
        """LayerNorm and Softmax: `reduce_items` work-items per row. GPUs: a work-group per row, of
        the most work-items (16 to 256) that give each at least two elements (a
        transformer has only 50-3136 rows, far too few work-items with one per row). CPUs:
        1 (a row per work-item; PoCL's cores are already busy with the rows)."""
        shape = graph.shape_of(op.input)
        if isinstance(op, (graph.SoftmaxOp, graph.LogSoftmaxOp)):
            length = shape[op.axis.value.data % len(shape)]
        else:
            length = math.prod(shape[op.norm_axis():])
        items = 1
        if self.gpu:
            items = group_items(length)
        return {"reduce_items": items}

    def attention(self, op: graph.AttentionOp) -> dict[str, Any]:
        """Fused attention: `reduce_items` work-items per query row (AttentionSpec). GPUs: the
        most (16 to 128) that give each at least two keys, since a row's work-group also
        shares its Dv output columns; CPUs: 1 (a serial row per work-item: PoCL's cores are
        already busy with the rows, and a barrier costs more there)."""
        keys = op.scores_shape()[-1]
        items = 1
        if self.gpu:
            items = group_items(keys, most=128)
        return {"reduce_items": items}

    def gemm(self, op: Operation) -> dict[str, Any]:
        """Gemm and MatMul: `k_split` work-items share each output's reduction (1: one
        work-item per output element; lowering/kernels/matmul.py).

        Split when there are fewer outputs than `min_work_items` and K >= 256 (a batch-1
        classifier: 1000 outputs, K = 1280): one serial loop per output leaves a GPU
        nearly idle. GPUs: with K contiguous in B (Gemm transB = 1) a work-group of 64
        work-items (128 from K = 4096) per output; with B column-contiguous (transB = 0,
        MatMul) 32 per output, 8 neighbouring columns per work-group. CPUs: 8 where the
        float4 loads apply (K contiguous in A's row and B's, K % 4 == 0), else 1. On
        PoCL (2 shared cores, kernel time of cm.profile, median of 5) the classifier
        took 2.14 ms with 1, 1.19 ms with 8, 1.32 with 16, 1.70 with 32; M = 2: 8.2 ->
        2.8 ms; K = 1283 (scalar loads) gained nothing (2.14 -> 2.20 ms with 16). The
        gain there is the float4 loads, not the parallelism, hence a small split.
        Always written, 1 included: the lowering's defaults are the GPU rules."""
        out = graph.shape_of(op.results[0])
        outputs = 1
        for d in out:
            outputs *= d
        if isinstance(op, graph.GemmOp):
            a = graph.shape_of(op.a)
            trans_a = bool(op.trans_a.value.data)
            k = a[0] if trans_a else a[1]
            k_contiguous = bool(op.trans_b.value.data)
            float4 = k_contiguous and (not trans_a or out[0] == 1)
        else:
            # Through lhs_perm / rhs_perm: attention's transposed keys are K-contiguous.
            geo = matmul_geometry_of(op)
            k, k_contiguous = geo.k, geo.n == 1 or geo.b_strides[0] == 1
            float4 = k_contiguous and geo.a_strides[1] == 1
        split = 1
        if outputs < self.min_work_items and k >= 256:
            if self.gpu:
                split = (128 if k >= 4096 else 64) if k_contiguous else 32
            elif float4 and k % 4 == 0:
                split = 8
        elif self.gpu and k >= 1024 and isinstance(op, graph.MatMulOp):
            # Long reductions with enough outputs: 8 work-items per output still help a GPU
            # (ViT-B/32's and Swin-T's K = 3072 / 1536 MLP products: their matmul time on
            # the H200 fell from 8.8 to 6.9 ms with 8, 7.0 with 4, 8.1 with 32;
            # bench/schedule_sweep.py --family matmul, docs/bench/issue12).
            split = 8
        return {"k_split": split}

    def tiles(self, op: Operation, cfg: dict[str, Any]) -> dict[str, Any]:
        """Gemm and MatMul without a split: `tile_m` rows by `tile_n` columns per
        work-item (MatMulSpec). CPUs: 4 x 4 (one float4 of B per K step, each A value
        used four times from a register; tiny_bert's products on PoCL: 0.40-0.64 s with
        4x4 / 8x4 tiles against 1.9 s untiled). GPUs: 1 x 1: the transformer products
        have few rows (ViT-B/32: 50), and tiles cut the work-items below what fills an
        H200 (vit_b_32 + tiny_bert products: 6.6 ms untiled, 11.2 ms 1x4, 25.1 ms 4x4;
        bench/schedule_sweep.py --family matmul, docs/bench/issue12). A Gemm takes tiles
        only when it can run as a matmul (not transA; transB only with a constant B,
        transposed at compile time); otherwise both stay 1. A MatMul whose B is read
        through a `rhs_perm` takes tile_n = 4 only where B's rows are still aligned float4s
        (`float4_columns`: attention's transposed keys are not; its head-split values are)."""
        if cfg["k_split"] > 1 or not tileable(op):
            return cfg  # no tiles to choose: the keys are left out (they would read 1)
        m, n, batch = matmul_dims(op)
        if self.gpu:
            return {**cfg, "tile_m": 1, "tile_n": 1}
        if isinstance(op, graph.MatMulOp):  # B read through rhs_perm: float4 rows only where aligned
            geo = matmul_geometry_of(op)
            columns4 = float4_columns(geo.n, geo.b_strides, geo.b_batch_strides)
        else:
            columns4 = n % 4 == 0
        return {**cfg, "tile_m": 4 if m >= 4 else 1, "tile_n": 4 if columns4 else 1}

    def conv(self, op: graph.Conv2dOp, kernel: str | None = None) -> dict[str, Any]:
        out = graph.shape_of(op.result)
        co, groups = out[1], op.groups.value.data
        depthwise = is_depthwise(op)
        cpu = kernel is None and not self.gpu and self.vectorize  # the float8 kernels are CPU defaults
        local = (lambda wg: {}) if self.gpu else (lambda wg: {"work_group": wg})

        def block(most: int) -> int:  # the most channels per work-item, up to `most`, that divide co
            return next(b for b in (16, 8, 4, 2, 1) if b <= most and co % b == 0)

        if kernel == "pointwise" or (cpu and pointwise_ok(op)):
            # float8 x 2 pixel vectors x 4 channels was the fastest of 20 shapes'
            # microbenchmarks on PoCL (docs/tuning.md). A work-group of 4 pixel blocks x 16
            # channel blocks: PoCL runs a work-group's items one after the other on one
            # core, so the channel blocks reuse the input rows from cache (mobilenet_v2's
            # 1x1 convs: 16.2 -> 12.6 ms).
            return {"kernel": "pointwise", "co_block": block(4), "x_block": 2, "vec": 8, **local((4, 16, 1))}
        if kernel == "plane" or (cpu and plane_ok(op)):
            if depthwise:
                return {"kernel": "plane", "co_block": 1, "vec": 8}
            # 16 channels per work-item and 8 x 8 work-groups (channel blocks sharing input
            # rows from cache): resnet18's 3x3 convs on PoCL 77.7 -> 49.3 ms
            return {"kernel": "plane", "co_block": block(16), "vec": 8, **local((8, 8, 1))}
        if kernel == "rows" or (cpu and not depthwise and rows_ok(op)):
            # CPU default for the other groups-1 convs (mobilenet_v2's stem: 1.87 -> 1.03
            # ms on PoCL; strided depthwise convs keep vec4: 2.05 ms against 2.76 as rows).
            # 16 channels per work-item, work-groups of 8 rows x 8 channel blocks:
            # resnet18's stride-2 convs on PoCL 11.6 -> 5.5 ms
            if depthwise:
                return {"kernel": "rows", "co_block": 1, "vec": 8}
            return {"kernel": "rows", "co_block": block(16), "vec": 8, **local((1, 8, 8))}
        if kernel == "vec4" or (kernel is None and self.vectorize and vec4_ok(op)):
            cb = 8 if co % 8 == 0 and not depthwise and self.conv_co_block >= 8 else 4
            # Smaller pixel blocks rather than fewer than min_work_items work-items.
            items_per_row = out[2] * out[0] * co // cb
            xb = 1
            for cand in (4, 2, 1):
                if cand > self.conv_x_block or cand > out[3]:
                    continue
                if -(-out[3] // cand) * items_per_row >= (self.min_work_items if self.gpu else 0):
                    xb = cand
                    break
            return {"kernel": "vec4", "co_block": cb, "x_block": xb}
        cog = co // groups
        cb = next(b for b in (self.conv_co_block, 4, 2, 1) if b <= cog and cog % b == 0)
        return {"kernel": "scalar", "co_block": cb}


def load_overrides(path: str) -> dict[str, dict[str, Any]]:
    data = read_json(path, CompileError, "select-kernel-config: ", "overrides file ")
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise CompileError(
            f"select-kernel-config: {path} must be a JSON object mapping signatures (or 'loc:NODE') "
            "to objects of config keys")
    every_key = set().union(*_INT_KEYS.values()) | {"work_group", "kernel", "compute"}
    for entry, cfg in data.items():
        typos = sorted(set(cfg) - every_key)
        if typos:
            raise CompileError(f"select-kernel-config: {path}: entry '{entry}' has key(s) {', '.join(typos)} that no "
                               f"kernel reads; known keys: {', '.join(sorted(every_key))}")
    return {k: {kk: tuple(vv) if isinstance(vv, list) else vv for kk, vv in v.items()} for k, v in data.items()}


def is_kernel(op: Operation) -> bool:
    """Ops that become kernels of their own (top level of a function body)."""
    if isinstance(op, (graph.ConstantOp, graph.ReshapeOp, graph.YieldOp)) or graph.loaded_by_reader(op):
        return False  # no kernel: views, and ops (or on_load regions) that their reader computes as it loads
    if isinstance(op, graph.FusedOp):
        return True
    if isinstance(op.parent_op(), graph.FusedOp):
        return False
    if isinstance(op, texture.PackOp) and isinstance(op.input.owner, graph.ConstantOp):
        return False
    return op.name.startswith(("graph.", "texture."))


class SelectConfig(RewritePattern):
    def __init__(self, rules: Rules, overrides: dict[str, dict[str, Any]], source: str = ""):
        self.rules = rules
        self.overrides = overrides
        self.source = source
        self.used: dict[str, set[str]] = {}
        """Override entries that matched a kernel, with the config keys applied from each."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not is_kernel(op) or CONFIG_ATTR in op.attributes:
            return  # a config written by hand (or an earlier run) is kept
        head = head_of(op)
        cfg = self.rules.choose(head)
        keys: list[str] = []
        if self.overrides:  # signatures print types: only worth it when there is a file to match
            members = op.ops if isinstance(op, graph.FusedOp) else [op]
            keys = [kernel_signature(op)] + [
                f"loc:{d.data}" for d in (getattr(m.location, "desc", None) for m in [op, *members]) if d is not None]
        known = known_keys(head)
        overridden: dict[str, Any] = {}
        for key in dict.fromkeys(keys):  # the signature first, then node names (more specific)
            if key not in self.overrides:
                continue
            entry = self.overrides[key]
            if key.startswith("loc:"):
                # One ONNX node may become several kernels (a Winograd conv becomes three):
                # each takes the keys it reads; keys no kernel of the node read are reported.
                entry = {k: v for k, v in entry.items() if k in known}
            self.used.setdefault(key, set()).update(entry)
            overridden.update(entry)
        if "kernel" in overridden:  # the defaults of the chosen kernel, not of the default one
            cfg = self.rules.choose(head, kernel=overridden["kernel"])
        cfg = merge_config(cfg, overridden)
        if not cfg:
            return
        try:
            validate_config(op, cfg)
        except CompileError as e:
            if self.source and any(k in self.overrides for k in keys):
                raise CompileError(f"{e} (config from overrides file {self.source})") from None
            raise
        set_config(op, cfg)
        rewriter.notify_op_modified(op)


@dataclass(frozen=True)
class SelectKernelConfig(CheckedPass):
    name = "select-kernel-config"

    target: str = target_option()
    """Target profile (adreno_mlir.target): CPU profiles get no split-K and no occupancy
    pixel blocking."""
    conv_co_block: int = option(8, choices=(1, 2, 4, 8))
    """Output channels per work-item in vec4 and scalar NCHW convolutions (1, 2, 4 or 8; the
    CPU vector kernels choose their own)."""
    conv_x_block: int = option(4, choices=(1, 2, 4))
    """Adjacent output pixels per work-item in vectorised convolutions."""
    vectorize: bool = True
    """Use the vector NCHW convolutions where they apply: float4 (OIHW4o) on GPUs, the float8
    pixel-vector kernels (pointwise, plane, rows) on CPUs; off: the scalar kernel."""
    packed_co_blocks: int = option(1, choices=(1, 2))
    """Output channel blocks per work-item in NCHW4c convolutions (2 was slower on the H200)."""
    min_work_items: int = option(16384, minimum=0)
    """NCHW convolutions use smaller pixel blocks rather than launch fewer work-items."""
    split_k_items: int = option(8192, minimum=0)
    """NCHW4c convolutions with fewer work-items split their input channels (0: never)."""
    work_group: tuple[int, ...] = option((), minimum=1, max_len=3)
    """Preferred local size for every kernel, e.g. `work-group=16,4,4`; empty: the driver picks."""
    overrides: str = option("", values="a string: the path of a JSON file of kernel configs (quote it)")
    """JSON file of per-signature (or `loc:NODE`) config overrides."""
    compute: str = option("f32", choices=COMPUTE_TYPES)
    """Arithmetic of every NCHW4c kernel: f32, or f16 (half; precision="fp16", needs cl_khr_fp16)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        profile = target_profile(self)  # the other options are checked when the pass is made
        rules = Rules(profile.is_gpu, self.conv_co_block, self.conv_x_block, self.vectorize,
                      self.packed_co_blocks, self.min_work_items, self.split_k_items, tuple(self.work_group),
                      self.compute)
        overrides = load_overrides(self.overrides) if self.overrides else {}
        pattern = SelectConfig(rules, overrides, self.overrides)
        PatternRewriteWalker(pattern, apply_recursively=False).rewrite_module(op)
        import warnings

        unused = [k for k in overrides if k not in pattern.used]
        loaded = {d.data for r in op.walk() if isinstance(r, graph.FusedOp) and r.on_load is not None
                  for o in r.ops if (d := getattr(o.location, "desc", None)) is not None}
        for key in [k for k in unused if k.startswith("loc:") and k[4:] in loaded]:
            unused.remove(key)
            warnings.warn(f"select-kernel-config: {self.overrides}: entry '{key}' names a depthwise conv that its "
                          "reader computes as it loads it (a graph.fused {on_load} region, fuse-depthwise-load), "
                          "so it has no kernel to configure: configure the 1x1 conv that reads it, or delete "
                          "on_load (compile without fuse-depthwise-load) to keep its kernel", stacklevel=2)
        if unused:
            # A shared tuning file may hold entries for other models: a note, not an error.
            warnings.warn(f"select-kernel-config: {len(unused)} entr{'y' if len(unused) == 1 else 'ies'} of "
                          f"{self.overrides} matched no op: {', '.join(unused[:5])}"
                          + (" ..." if len(unused) > 5 else ""), stacklevel=2)
        for key, applied in pattern.used.items():
            ignored = sorted(set(overrides[key]) - applied)
            if ignored:  # e.g. direct-conv keys for a layer that became Winograd on this target
                warnings.warn(f"select-kernel-config: {self.overrides}: keys {', '.join(ignored)} of entry '{key}' "
                              "are read by none of the kernels it matched", stacklevel=2)


DEFAULT_RULES = Rules(gpu=True, conv_co_block=8, conv_x_block=4, vectorize=True, packed_co_blocks=1,
                      min_work_items=16384, split_k_items=0, work_group=())
