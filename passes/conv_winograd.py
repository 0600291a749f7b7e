"""`conv-winograd`: 3x3 stride-1 NCHW4c convolutions become Winograd F(2x2,3x3) or
F(4x4,3x3): `texture.winograd_input`, `texture.winograd_matmul` (with the filter
transform computed now, a constant of its own) and `texture.winograd_output`.

Runs after `convert-layout-nchw4c` (it needs NCHW4c activations and OIHW4o-packed
constant weights). A convolution qualifies with a 3x3 kernel, stride 1, dilation 1,
groups 1, constant weights and bias. Its tile comes from, in order:

1. the discardable attribute `winograd` on the conv, `{winograd = 0 | 2 | 4 : i64}`
   (0 keeps the direct convolution): edit the IR to switch one layer;
2. the key `winograd` (0, 2 or 4) of the conv's `loc:<ONNX node name>` entry in the
   JSON overrides file `overrides="PATH"` (select-kernel-config's file: other keys of
   the entry, and entries without `winograd`, are left to the passes that read them);
3. the pass option `tile` when it is not `auto` (`2`, `4`, or `off` for none);
4. `select_winograd_tile`, a rule on the layer's channels and output extent for the
   target profile.

A `winograd` attribute or override of 2 or 4 on a convolution that cannot take it is an
error (naming the conv and the reason), not silently ignored; so is an override entry
with `winograd` whose node has no graph.conv2d in the module (a node the file names
that is not in the module is not: a shared tuning file may hold other models' entries).
The override does not write the attribute (that would change the kernel signatures
select-kernel-config matches).

The three new ops carry the conv's location; the output op keeps the conv's result
type (memory scope included), and V and M start in global buffers (annotate-texture-
scope may move them to images).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, f32
from xdsl.ir import Operation
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from adreno_mlir.dialects import graph, texture
from adreno_mlir.errors import CompileError, op_where
from adreno_mlir.kernel_math.winograd import winograd_weight
from adreno_mlir.lowering.families import MODEL_SCOPE
from adreno_mlir.graph_constants import constant_value, erase_dead_constants, module_of, new_constant
from adreno_mlir.pass_options import CheckedPass, option, target_option, target_profile
from adreno_mlir.target import TargetProfile
from adreno_mlir.weights import store_of

ATTR = "winograd"
"""Discardable attribute on a graph.conv2d: 0 (direct), 2 or 4 (the Winograd tile); also
the key of a `loc:NODE` overrides entry that conv-winograd reads."""
TILES = (0, 2, 4)


def model_key(module: Operation) -> str:
    """A short digest of the ONNX node names in `module` (its ops' locations; constants
    left out, as passes add and drop them): what a `loc:NODE@model:KEY` entry names. The
    same for a model at every point of the pipeline where its nodes are all still there
    (conv-winograd and annotate-texture-scope see the same key)."""
    import hashlib

    names = {n for o in module.walk() if not isinstance(o, graph.ConstantOp) and (n := node_of(o)) is not None}
    return hashlib.sha256("\n".join(sorted(names)).encode()).hexdigest()[:12]


def node_choices(path: str, key: str, pass_name: str, module: Operation | None = None) -> dict[str, Any]:
    """`{ONNX node name: value}` of the `loc:NODE` entries of overrides file `path` (the
    JSON file select-kernel-config reads, `load_overrides`) that hold `key`, and of the
    `loc:NODE@model:KEY` entries (and `loc:NODE@model:KEY#WHAT`: the tuner keeps one entry
    per search of a node) for `module`'s `model_key` (those of other models are skipped;
    without `module`, all are); the entries' other keys belong to other passes
    and are ignored here. A plain entry wins over a scoped one for the same node."""
    from adreno_mlir.lowering.families import load_overrides

    try:
        entries = load_overrides(path)
    except CompileError as e:
        message = str(e)
        prefix = "select-kernel-config: "
        raise CompileError(f"{pass_name}: {message.removeprefix(prefix)}") from None
    mine = model_key(module) if module is not None and any(MODEL_SCOPE in k for k in entries) else None
    plain, scoped = {}, {}
    for k, v in entries.items():
        if not k.startswith("loc:") or key not in v:
            continue
        node, sep, scope = k[4:].rpartition(MODEL_SCOPE)
        scope = scope.split("#", 1)[0]  # `loc:NODE@model:KEY#scope`: the tuner's second search of a node
        if not sep:
            plain[k[4:]] = v[key]
        elif mine is None or scope == mine:
            scoped[node] = v[key]
    return {**scoped, **plain}


def node_of(op: Operation) -> str | None:
    """The ONNX node name in `op`'s location (what a `loc:` overrides key names), or None."""
    desc = getattr(op.location, "desc", None)
    return None if desc is None else desc.data

MIN_CHANNELS_GPU = 64
"""GPUs: below this many input or output channels the direct convolution is faster.
The transforms cost per channel (not per channel pair) and the batched product gets
too thin: on the H200 (NVIDIA OpenCL) 32 -> 32 channels at 56x56 took 0.030 ms with
Winograd against 0.021 ms direct (16 and 8 channels: 2-4x slower), while 64 -> 64
tied at 56x56 (0.040 / 0.041) and won at 112x112 (0.080 / 0.129)."""
NARROW_CHANNELS_GPU = 128
NARROW_MIN_PIXELS_GPU = 96 * 96
"""GPUs: with fewer than `NARROW_CHANNELS_GPU` channels Winograd pays only on large
outputs. On the H200 (bench/winograd.py, docs/measurements.md) 64 -> 64 channels at
56x56 ran 0.036 ms direct against 0.039 (F2) and 0.045 ms (F4) in images, while at
112x112 F4 won 1.39x and 128 channels won from 28x28 up (1.8x)."""
MIN_CHANNELS_CPU = 8
"""CPUs (PoCL): Winograd won from 8 channels up (8 -> 8 at 56x56: 0.41 vs 0.86 ms on
the 2-core EPYC), 4 channels tied; the direct NCHW4c kernel is arithmetic-bound there."""
MIN_OUTPUT_SIDE = 4
"""Below 4x4 outputs there are fewer than four tiles of 2: nothing to amortise the
transforms' launches over. Small late layers are where Winograd gains most otherwise:
512 channels at 7x7 took 0.060 ms (tile 2) against 0.28 ms direct with split-K on the
H200, as the direct kernel has too few work-items."""
MIN_TILE4_SIDE = 16
"""GPUs: tile 4 only with at least 4x4 tiles of it and no overhanging tiles (sides
multiples of 4): its transforms are alpha^2 = 36 float4s per tile. On the H200 tile 4
beat tile 2 at 28x28 (256 channels: 0.066 vs 0.079 ms), tied at 56 and 112, and lost
at 14x14 and 7x7 (overhang: 0.112 vs 0.097, 0.111 vs 0.060 ms). TVM's Adreno schedule
likewise picks 4 when the height is a multiple of 8."""


def select_winograd_tile(in_channels: int, out_channels: int, out_h: int, out_w: int,
                         profile: TargetProfile) -> int:
    """The Winograd tile for a qualifying 3x3 stride-1 conv, or 0 for the direct one.

    GPUs (`profile.is_gpu`):
    - 0 when either channel count is below `MIN_CHANNELS_GPU` or either output side is
      below `MIN_OUTPUT_SIDE`, or with fewer than `NARROW_CHANNELS_GPU` channels on
      outputs smaller than `NARROW_MIN_PIXELS_GPU` pixels;
    - 4 when both sides are at least `MIN_TILE4_SIDE` and multiples of 4 (F(4,3) does
      2.25 multiplications per output against F(2,3)'s 4);
    - else 2.

    CPUs (PoCL), where the arithmetic saved dominates: 0 below `MIN_CHANNELS_CPU`
    channels or `MIN_OUTPUT_SIDE`, else 4. Measured on PoCL (2-core EPYC), F(4,3)
    beat F(2,3) and the direct kernel at every size from 4x4 to 112x112 and 8 to 512
    channels (64 channels at 56x56: 18.6 / 39.1 / 66.7 ms; 512 at 7x7: 17.8 / 31.9 /
    74.7 ms for F(4,3) / F(2,3) / direct). F(4,3) is the less accurate one (about
    1e-5 relative in fp32 against 5e-7 for F(2,3)); `tile=2` or the `winograd`
    attribute choose F(2,3) where that matters.
    """
    if min(out_h, out_w) < MIN_OUTPUT_SIDE:
        return 0
    if not profile.is_gpu:
        return 4 if min(in_channels, out_channels) >= MIN_CHANNELS_CPU else 0
    if min(in_channels, out_channels) < MIN_CHANNELS_GPU:
        return 0
    if min(in_channels, out_channels) < NARROW_CHANNELS_GPU and out_h * out_w < NARROW_MIN_PIXELS_GPU:
        return 0
    if min(out_h, out_w) >= MIN_TILE4_SIDE and out_h % 4 == 0 and out_w % 4 == 0:
        return 4
    return 2


def ineligible_reason(op: graph.Conv2dOp) -> str | None:
    """Why `op` cannot become a Winograd convolution, or None when it can."""
    x, y = op.input.type, op.result.type
    if not (isinstance(x, texture.TextureTensorType) and isinstance(y, texture.TextureTensorType)
            and x.layout_name == "nchw4c" and y.layout_name == "nchw4c"):
        return "its input and result are not NCHW4c texture tensors (run convert-layout-nchw4c first)"
    w = op.weight
    if not isinstance(w.owner, graph.ConstantOp):
        return "its weights are not a constant"
    ws = graph.shape_of(w)
    if len(ws) != 5 or ws[2:] != (3, 3, 4):
        return f"its weights are not OIHW4o-packed 3x3 ([O/4, I, 3, 3, 4]), got {list(ws)}"
    if ws[1] != 4 * x.shape[1]:
        return f"its weights have {ws[1]} input channels, the input {4 * x.shape[1]}"
    if graph.ints(op.strides) != (1, 1):
        return f"stride {list(graph.ints(op.strides))} is not 1"
    if graph.ints(op.dilations) != (1, 1):
        return f"dilation {list(graph.ints(op.dilations))} is not 1"
    if op.groups.value.data != 1:
        return f"groups = {op.groups.value.data} (Winograd here is for dense convolutions)"
    if op.bias is not None and not isinstance(op.bias.owner, graph.ConstantOp):
        return "its bias is not a constant"
    if not isinstance(op.parent_op(), func.FuncOp):
        return "it is inside a fused region (run conv-winograd before graph-fuse)"
    return None


_where = op_where


class WinogradConv(RewritePattern):
    def __init__(self, tile_option: str, profile: TargetProfile, overrides: dict[str, Any] | None = None,
                 source: str = ""):
        self.tile_option = tile_option
        self.profile = profile
        self.overrides = overrides or {}
        """`{ONNX node name: tile}` from the overrides file `source` (`node_choices`)."""
        self.source = source

    def tile_for(self, op: graph.Conv2dOp) -> int:
        attr = op.attributes.get(ATTR)
        if attr is not None:
            if not isinstance(attr, IntegerAttr) or attr.value.data not in TILES:
                raise CompileError(f"{_where(op)}: attribute {ATTR} must be 0 (direct), 2 or 4 "
                                   f"(the Winograd tile), got {attr}")
            tile = attr.value.data
            reason = ineligible_reason(op) if tile else None
            if reason:
                raise CompileError(f"{_where(op)}: {{{ATTR} = {tile}}} asks for Winograd but {reason}")
            return tile
        node = node_of(op)
        if node is not None and node in self.overrides:
            tile = self.overrides[node]  # checked in ConvWinograd.apply
            reason = ineligible_reason(op) if tile else None
            if reason:
                raise CompileError(f"{_where(op)}: {self.source}: entry 'loc:{node}' has "
                                   f'"{ATTR}": {tile}, which asks for Winograd, but {reason}')
            return tile
        if ineligible_reason(op) is not None:
            return 0
        if self.tile_option != "auto":
            return 0 if self.tile_option == "off" else int(self.tile_option)
        n, c4, _, _, _ = op.input.type.shape
        _, k4, oh, ow, _ = op.result.type.shape
        return select_winograd_tile(4 * c4, 4 * k4, oh, ow, self.profile)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.Conv2dOp, rewriter: PatternRewriter, /):
        tile = self.tile_for(op)
        if not tile:
            return
        store = store_of(module_of(op))
        x_t, y_t = op.input.type, op.result.type
        n, c4, _, _, _ = x_t.shape
        _, k4, oh, ow, _ = y_t.shape
        alpha2 = (tile + 2) ** 2
        tiles = texture.winograd_tile_count(n, oh, ow, tile)
        w_op = op.weight.owner
        u = winograd_weight(constant_value(op.weight, store), tile)
        u_const = new_constant(store, u, f"{w_op.weight_name or 'conv_weight'}_winograd{tile}")
        v_t = texture.TextureTensorType.make((alpha2, c4, 1, tiles, 4), f32, "nchw4c", "global")
        m_t = texture.TextureTensorType.make((alpha2, k4, 1, tiles, 4), f32, "nchw4c", "global")
        v = texture.WinogradInputOp(op.input, v_t, tile, graph.ints(op.pads))
        m = texture.WinogradMatmulOp(v.result, u_const.result, m_t)
        y = texture.WinogradOutputOp(m.result, op.bias, y_t, tile)
        for new in (u_const, v, m, y):
            new.location = op.location
        hint = op.result.name_hint or "conv"
        u_const.result.name_hint, v.result.name_hint, m.result.name_hint = f"{hint}_u", f"{hint}_v", f"{hint}_m"
        y.result.name_hint = op.result.name_hint
        rewriter.replace(op, [u_const, v, m, y], [y.result])


@dataclass(frozen=True)
class ConvWinograd(CheckedPass):
    name = "conv-winograd"

    tile: str | int = option("auto", choices=("auto", 2, 4, "off"))
    """auto (the `winograd` attribute, else `select_winograd_tile`), 2, 4, or off
    (only convs with a `winograd` attribute of 2 or 4 change). `tile=2` parses as an
    int, `tile=off` as a string: both are accepted."""
    target: str = target_option()
    """Target profile the automatic rule decides for (see adreno_mlir.target)."""
    overrides: str = option("", values="a string: the path of a JSON file of overrides (quote it)")
    """select-kernel-config's JSON overrides file: the key `winograd` (0, 2 or 4) of a
    `loc:NODE` entry decides that conv (after a `winograd` attribute, before `tile`)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        tile = str(self.tile)
        profile = target_profile(self, op)
        chosen = node_choices(self.overrides, ATTR, self.name, op) if self.overrides else {}
        for node, value in chosen.items():
            if isinstance(value, bool) or value not in TILES:
                raise CompileError(f"{self.name}: {self.overrides}: entry 'loc:{node}' has "
                                   f'"{ATTR}": {value!r}; it takes 0 (direct), 2 or 4 (the Winograd tile)')
        if chosen:
            nodes: dict[str, bool] = {}  # node name: has a graph.conv2d
            for o in op.walk():
                if (n := node_of(o)) is not None and n in chosen:
                    nodes[n] = nodes.get(n, False) or isinstance(o, graph.Conv2dOp)
            for n, is_conv in nodes.items():
                if not is_conv:
                    raise CompileError(f"{self.name}: {self.overrides}: entry 'loc:{n}' has "
                                       f'"{ATTR}": {chosen[n]}, but node {n} is not a convolution (its ops: '
                                       + ", ".join(sorted({o.name for o in op.walk() if node_of(o) == n})) + ")")
        PatternRewriteWalker(GreedyRewritePatternApplier([WinogradConv(tile, profile, chosen, self.overrides)]),
                             apply_recursively=False).rewrite_module(op)
        # The direct convolutions' packed weights are dead now.
        erase_dead_constants(op)
