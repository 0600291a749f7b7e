"""The NCHW4c convolution family: `graph.conv2d` (and its split-K partial sums,
`graph.conv2d_split_k`) on `!texture.tensor`s, lowered to `PackedConvSpec` kernels
(lowering/kernels/packed_conv.py): every work-item computes whole float4 pixels.

Keys (`kernel_config`):

| key | values | what |
|---|---|---|
| `x_block` | 1-4 | output pixels per work-item along a row |
| `co_blocks` | 1, 2 | output channel blocks (float4s) per work-item (1 for depthwise convs) |
| `split_k` | 1-64 | input-channel parts: > 1 is carried out by the `split-k` pass (partial sums + a summing kernel) |
| `dw_rows` | 0, 1 | depthwise: 1 reads each input row segment once per work-item, 0 once per tap |
| `reduce_items` | 1, 2, 4 ... 256 | groups 1: work-items of a work-group sharing one output block's input channels, summed in local memory (split-K in one launch: GEMVs of 1x1 outputs); a depthwise conv writing pool partials: work-items per tile |
| `dw_tile` | 0-256 | a conv reading a `graph.fused {on_load}` depthwise region: work-items along a row per work-group, which computes the row segment's depthwise values once into local memory for all its output channel blocks; 0: each work-item computes those it loads |
| `local_tile` | 0, 32, 64, 128 | a groups-1 1x1 conv, stride 1, no padding, plain input: a GEMM (output channels x pixels) whose work-groups compute T x T blocks from weight and input slices staged in local memory (`PackedConvTileSpec`); 0: off |

`split_k` and `reduce_items` exclude each other (two ways to split the input channels), and
so do `dw_tile` and `reduce_items` (two ways to set the work-group). `local_tile` is a kernel
of its own: with it the other keys hold the values that mean "not used" (`LOCAL_TILE_OFF`:
x_block 1, co_blocks 1, split_k 1, reduce_items 1, dw_tile 0), and a configuration holds the
key only where it is on (or set to 0 by hand), so the configurations of the other kernels
read as before.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from xdsl.ir import Operation, SSAValue

from adreno_mlir.dialects import graph
from adreno_mlir.lowering.families.base import Family, Key, Rules, cdiv
from adreno_mlir.lowering.groups import Group, KernelPattern, LoweringError, group_expression, where
from adreno_mlir.lowering.kernels.packed import Packed, PackedEpilogue
from adreno_mlir.lowering.kernels.packed import packed_of as packed
from adreno_mlir.lowering.kernels.packed_conv import (LOCAL_REGISTER_TILE, LOCAL_TILE_K, LOCAL_TILES, ConvSource,
                                                      Depthwise, DepthwiseLoad, Load, PackedConvSpec,
                                                      PackedConvTileSpec, PackedDwPoolSpec, PoolTiles, ScaledLoad,
                                                      Serial, SplitK, TiledLoad, WorkGroup)
from adreno_mlir.lowering.packed_lowering import EpiloguePattern

MAX_DW_TILE_ITEMS = 256
"""The largest `dw_tile` work-group (Lx x G work-items) that select-kernel-config picks or
accepts: every OpenCL GPU we target runs 256 (Adreno's limit is 1024 at low register use)."""


def pool_items(pixels: int) -> int:
    """Work-items per (tile, channel block) work-group of a depthwise kernel that writes pool
    partials (fuse-pool-partials): 64 for large planes, fewer for small ones (a 7x7 plane
    has 49 pixels)."""
    return 64 if pixels >= 256 else 32 if pixels >= 64 else 16


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
    readers = {use.operation for use in graph.kernel_op(op).results[0].uses}  # a use inside a region is its op's own
    return len(readers) == 1 and graph.is_depthwise_load(readers.pop())


def pooled(op: Operation) -> bool:
    """Whether `op` heads a `graph.fused` region that also writes `graph.pool_partials`."""
    parent = op.parent_op()
    return isinstance(parent, graph.FusedOp) and parent.partials is not None and parent.head is op


LOCAL_TILE_MIN_UNITS = 16
"""Compute units from which the default rule picks `local_tile` (Conv4c._local_tile)."""
LOCAL_TILE_MIN_CHANNELS = 64
"""Input and output channels (each) from which the default rule picks `local_tile`."""
LOCAL_TILE_MIN_PIXELS = 1024
"""Output pixels (H * W) from which the default rule picks `local_tile`."""
LOCAL_TILE_MIN_MACS = 1 << 27
"""Multiply-adds (N x H x W x Cin x Cout) from which the default rule picks `local_tile`. On the
H200 (docs/bench/issue28-gemm/final): segformer-b0's 1024 -> 256 conv on 128 x 128 (4.3 G)
took 2.30 ms direct, and the model 5.28 -> 3.78 ms device time with the tile; with every 1x1
conv from 64 channels and 1024 pixels tiled (25-100 M each: DenseNet-121's first block,
ResNet-50's layer1), DenseNet-121 went 4.12 -> 4.71 ms, EfficientNet-B0 1.76 -> 1.83,
ResNet-50 3.40 -> 3.25, MobileNetV2 unchanged: the small ones stay direct until measured per
signature (the tuner's space holds the key)."""
LOCAL_TILE_MIN_GROUPS_PER_UNIT = 1.0
"""Work-groups (output blocks) per compute unit that a default `local_tile` must make."""
LOCAL_TILE_DEFAULTS = (64, 32)
"""The tiles the default rule tries, in order (128 is the tuner's, unmeasured as a default)."""
LOCAL_TILE_OFF = {"x_block": 1, "co_blocks": 1, "split_k": 1, "dw_rows": 0, "reduce_items": 1, "dw_tile": 0}
"""The other keys' values in a `local_tile` configuration: none of their mechanisms is used."""


def local_tile_refusal(op: Operation) -> str | None:
    """Why conv `op` cannot run as a local-tile GEMM (`PackedConvTileSpec`), or None: it must
    be a groups-1 1x1 convolution with stride 1 and no padding, not split (split-K), reading
    its input as it is (not pool partials, a channel scale or an on_load depthwise region)
    and writing no pool partials."""
    if not isinstance(op, graph.Conv2dOp):
        return "a direct convolution (not a split-K partial sum)"
    kernel = tuple(graph.weight_shape(op.weight)[2:])
    strides, pads = graph.ints(op.strides), graph.ints(op.pads)
    if op.groups.value.data != 1 or kernel != (1, 1) or tuple(strides) != (1, 1) or any(pads):
        return (f"a groups-1 1x1 convolution with stride 1 and no padding, got groups {op.groups.value.data}, "
                f"kernel {kernel[0]}x{kernel[1]}, strides {list(strides)}, pads {list(pads)}")
    owner = op.input.owner
    if graph.on_load_region(op.input) is not None or isinstance(owner, (graph.ScaleChannelsOp,
                                                                         graph.SumPartialsOp)):
        return "a plain input (not a fused channel scale, pool partials or on_load depthwise region)"
    if pooled(op):
        return "a conv that writes no graph.pool_partials"
    return None


def dw_tile_groups(op: Operation, cfg: dict[str, Any]) -> int:
    """G of a `dw_tile` work-group: the conv's output channel blocks per co_blocks."""
    return -(-graph.shape_of(op.results[0])[1] // 4) // cfg.get("co_blocks", 1)


def _depthwise(op: Operation) -> bool:
    groups = getattr(op, "groups", None)
    return groups is not None and groups.value.data > 1


def _logical_channels(head) -> int:
    shape = graph.shape_of(head.input)
    return int(shape[1]) * (4 if len(shape) == 5 else 1)


class Conv4c(Family):
    name = "conv4c"
    keys = (
        Key("x_block", (1, 2, 3, 4), "output pixels per work-item along a row"),
        Key("co_blocks", (1, 2), "output channel blocks per work-item", off=1),
        Key("split_k", range(1, 65), "input-channel parts (split-k pass)", off=1),
        Key("dw_rows", (0, 1), "depthwise: read each input row segment once per work-item", off=0),
        Key("reduce_items", (1, 2, 4, 8, 16, 32, 64, 128, 256),
            "work-items per output block summing its input channels in local memory", off=1),
        Key("dw_tile", range(0, 257), "on_load reader: work-items along a row per work-group", off=0),
        Key("local_tile", LOCAL_TILES, "1x1 conv as a GEMM: T x T outputs per work-group through local memory",
            off=0),
    )
    exclusive = (("split_k", "reduce_items"), ("dw_tile", "reduce_items"), ("local_tile", "split_k"),
                 ("local_tile", "reduce_items"), ("local_tile", "dw_tile"), ("local_tile", "co_blocks"))

    def applicable(self, head: Operation, cfg: dict[str, Any]) -> tuple[str, ...]:
        """local_tile only where it is given (a configuration of the other kernels has no
        such key, and reads as before it existed)."""
        return tuple(k.name for k in self.keys if k.name != "local_tile" or "local_tile" in cfg)

    def matches(self, head: Operation) -> bool:
        return isinstance(head, (graph.Conv2dOp, graph.Conv2dSplitKOp)) and graph.is_packed_value(head.input)

    def defaults(self, op: Operation, rules: Rules, given: dict[str, Any]) -> dict[str, Any]:
        tile = given.get("local_tile")
        if tile is None:
            tile = self._local_tile(op, rules, given)
        if tile:  # (a given local_tile = 0 asks for the other kernels' rules)
            return {**LOCAL_TILE_OFF, "local_tile": tile}
        return self._direct(op, rules)

    def _local_tile(self, op: Operation, rules: Rules, given: dict[str, Any]) -> int:
        """The default `local_tile`: the first of LOCAL_TILE_DEFAULTS (64, then 32) whose T x T
        output blocks make LOCAL_TILE_MIN_GROUPS_PER_UNIT work-groups per compute unit and
        do not hang a third or more past the output channels, for a groups-1 1x1 stride-1
        unpadded conv on a plain input (`local_tile_refusal`) with at least
        LOCAL_TILE_MIN_CHANNELS input and output channels, LOCAL_TILE_MIN_PIXELS output
        pixels and LOCAL_TILE_MIN_MACS multiply-adds; 0 (the direct kernels) otherwise, or where a key given with it asks for a
        direct kernel's mechanism (x_block 2, split_k 4, ...).

        Why: such a conv is a GEMM (output channels x input channels times input channels x
        pixels), and the direct kernel (x_block pixels x 4 output channels per work-item,
        each reading every input channel of its pixels and every weight of its channels
        from global memory / cache) uses each value it loads for 4 output channels (an input
        pixel) or x_block pixels (a weight); a T x T work-group tile uses each weight it
        stages for T pixels and each input value for T output channels, read from local
        memory. On the H200 segformer-b0's 1024 -> 256 channel 1x1 conv on a
        128 x 128 plane took 2.3 ms with x_block 4 (3.7 TFLOP/s, 42% of the model's device
        time); a tiled GEMM of that size runs at ~20 TFLOP/s (the matmul family's
        local_tile); measured, the model's conv device time fell from 3.11 to 1.25 ms (that conv
        about 0.45 ms; the model 5.28 -> 3.78 ms). The thresholds keep small convs (few channels: little reuse to gain;
        small planes: too few work-groups to fill the GPU, where the direct kernels' or
        split-K's grids do better; products under LOCAL_TILE_MIN_MACS: DenseNet-121 lost 14%
        with them tiled) on the direct kernels.

        Only for GPUs of LOCAL_TILE_MIN_UNITS compute units or more (desktop and data-center
        GPUs) whose work-group and local memory limits hold the tile: mobile GPUs (a few
        compute units or none known: the named Adreno profiles) and CPUs keep the direct
        kernels (PoCL's barriers are slow: the matmul family saw 4-10x slower products)."""
        if not rules.gpu or rules.compute_units < LOCAL_TILE_MIN_UNITS or local_tile_refusal(op) is not None:
            return 0
        if any(given.get(k, v) != v for k, v in LOCAL_TILE_OFF.items()):
            return 0  # a direct kernel's mechanism asked for
        n, co4, h, w, _ = op.result.type.shape
        ci, co, pixels = op.input.type.shape[1] * 4, co4 * 4, h * w
        if ci < LOCAL_TILE_MIN_CHANNELS or co < LOCAL_TILE_MIN_CHANNELS or pixels < LOCAL_TILE_MIN_PIXELS:
            return 0
        if n * pixels * ci * co < LOCAL_TILE_MIN_MACS:
            return 0
        for t in LOCAL_TILE_DEFAULTS:
            if cdiv(co, t) * t > 1.5 * co:
                continue  # a third of the block or more past the output channels: a smaller tile
            rm, rn = LOCAL_REGISTER_TILE[t]
            if rules.max_work_group_size and rules.max_work_group_size < (t // rm) * (t // rn):
                continue
            if rules.local_memory_bytes and 2 * LOCAL_TILE_K * (t + 4) * 4 > rules.local_memory_bytes:
                continue
            if cdiv(co, t) * cdiv(pixels, t) * n >= LOCAL_TILE_MIN_GROUPS_PER_UNIT * rules.compute_units:
                return t
        return 0

    def _direct(self, op: Operation, rules: Rules) -> dict[str, Any]:
        """The direct kernels' configuration (PackedConvSpec)."""
        n, c4, h, w, _ = op.result.type.shape
        if isinstance(op, graph.Conv2dSplitKOp):
            n //= op.parts.value.data
        depthwise = isinstance(op, graph.Conv2dOp) and op.groups.value.data > 1
        x_block = max(1, min(rules.conv_x_block, w))
        co_blocks = rules.packed_co_blocks if not depthwise and c4 % rules.packed_co_blocks == 0 else 1
        # Split-K: enough parts for about split_k_items work-items when the grid alone
        # is smaller (late 7x7 layers), every part keeping >= 8 input channel blocks.
        # CPUs have few cores that a small grid already fills: no split there.
        ci4 = op.input.type.shape[1]
        items = -(-w // x_block) * h * n * c4
        split = 1
        if rules.gpu and rules.split_k_items and not depthwise and items < rules.split_k_items:
            split = max(1, min(8, -(-rules.split_k_items // items), ci4 // 8))
        if split > 1 and isinstance(op, graph.Conv2dOp) and read_by_depthwise(op):
            # An expansion that a depthwise conv reads stays one launch. On the H200 a
            # depthwise kernel reading what a split-K sum kernel had just written took ~5 us
            # more than after a direct conv (14x14 and 7x7 layers, images especially), and the
            # direct expansion was about as fast as split-K's two launches. Depthwise kernels
            # (A/B, docs/bench/issue13 session 5): EfficientNet-B0 172 -> 139 us (images) and
            # 141 -> 123 (buffers), MobileNetV3-Large 92 -> 72 (images); the models' device
            # time: MobileNetV2 -7%, the others within +-4% (the H200's drift).
            split = 1
        if depthwise and rules.gpu:
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
            # absent key would take the GPU rule when the config is completed).
            # Reading pool tiles (graph.sum_partials), the work-items share (block, tile) pairs.
            pairs = ci4 * (op.input.owner.input.type.shape[2] if isinstance(op.input.owner, graph.SumPartialsOp) else 1)
            items = min(256, 1 << (pairs.bit_length() - 1)) if rules.gpu and pairs >= 8 else 1
            if items > 1:
                cfg.update(split_k=1, x_block=1, co_blocks=1)
            cfg["reduce_items"] = items
        if depthwise:  # row reuse (Depthwise.row_reuse): each input pixel read once per work-item
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
            cfg.update(x_block=1, reduce_items=pool_items(h * w))
        return cfg

    def check(self, op: Operation, cfg: dict[str, Any]) -> str | None:
        """Why an NCHW4c convolution cannot take `cfg`: checked by select-kernel-config (so
        the autotuner prunes such candidates before compiling), the verifier and the
        lowering alike."""
        local = cfg.get("local_tile", 0)
        if local:
            why = local_tile_refusal(op)
            if why is not None:
                return (f"kernel_config local_tile = {local} (a 1x1 convolution as a GEMM tiled in local memory) "
                        f"needs {why}; use 0 or drop the key")
            clash = [f"{k} = {cfg[k]}" for k, v in LOCAL_TILE_OFF.items() if cfg.get(k, v) != v]
            if clash:
                return (f"kernel_config local_tile = {local} sets its own work-group and register tile: "
                        f"{', '.join(clash)} cannot go with it ("
                        + ", ".join(f"{k} = {v}" for k, v in LOCAL_TILE_OFF.items()) + ", or local_tile = 0)")
            return None
        co_blocks = cfg.get("co_blocks", 1)
        depthwise = _depthwise(op)
        if cfg.get("split_k", 1) > 1 and depthwise:
            return "split_k applies to convolutions with groups = 1 only"
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

    # -- what the split-k pass asks --------------------------------------------

    def split_parts(self, cfg: dict[str, Any]) -> int:
        """The input-channel parts a configuration asks the split-k pass for (1: none)."""
        return cfg.get("split_k", 1)

    def split_head_config(self, cfg: dict[str, Any]) -> dict[str, Any]:
        """The configuration of the partial-sums kernel a split conv becomes: the conv's
        own, without the split it carries out (the parts are the op's `parts`)."""
        return {**cfg, "split_k": 1}

    # -- tuning -----------------------------------------------------------------

    def space(self, head: Operation, default: dict[str, Any]) -> list:
        """x_block 1/2/4, co_blocks 1/2, split_k 1/2/4/8 (up to the input channel blocks);
        depthwise: x_block, dw_rows; reading an on_load depthwise region: dw_tile 0, 4 ...
        64 (up to the width) and the default; small grids: reduce_items; groups-1 1x1 stride-1
        unpadded convs on a plain input: local_tile 0, 32, 64, 128 (the tiles up to the output
        channels rounded up to 32, and the default)."""
        dims: list = []
        ci = graph.shape_of(head.input)
        ci_blocks = max(1, cdiv(_logical_channels(head), 4)) if ci else 1
        depthwise = isinstance(head, graph.Conv2dOp) and head.groups.value.data > 1
        _, _, oh, ow = graph.shape_of(head.result)
        if pooled(head):  # a work-group per (tile, channel block), one pixel per work-item and step
            dims.append(("reduce_items", (16, 32, 64, 128)))
        elif ow > 1:
            dims.append(("x_block", (1, 2, 4)))
        if depthwise and not pooled(head):  # the pooled kernel always reads rows once
            dims.append(("dw_rows", (0, 1)))
        elif isinstance(head, graph.Conv2dOp) and head.groups.value.data == 1:
            out_blocks = graph.shape_of(head.result)[1] // 4  # the logical shape: 4 channels a block
            dims.append(("co_blocks", (1, 2) if out_blocks % 2 == 0 else (1,)))
            dims.append(("split_k", tuple(s for s in (1, 2, 4, 8) if s <= ci_blocks)))
            if depthwise_load_of(head) is not None:  # row segments per work-group (0: each item computes its loads)
                tiles = {0, default.get("dw_tile", 0), *(t for t in (4, 8, 16, 32, 64) if t <= ow)}
                dims.append(("dw_tile", tuple(sorted(tiles))))
            elif oh * ow <= 49:  # small grids: also split the channels within a work-group (one launch)
                dims.append(("reduce_items", tuple(r for r in (1, 4, 8, 16, 32, 64, 128) if r <= ci_blocks)))
            if local_tile_refusal(head) is None:
                co = out_blocks * 4
                tiles = {0, default.get("local_tile", 0), *(t for t in LOCAL_TILES if t and t <= cdiv(co, 32) * 32)}
                dims.append(("local_tile", tuple(sorted(tiles))))
        return dims

    def normalize(self, cfg: dict[str, Any], default: dict[str, Any], head: Operation) -> dict[str, Any]:
        if cfg.get("local_tile", 0):  # a kernel of its own: the other mechanisms off, its own work-group
            cfg.update(LOCAL_TILE_OFF)
            cfg.pop("work_group", None)
            return cfg
        if not default.get("local_tile", 0):
            cfg.pop("local_tile", None)  # off where the default is off: the key left out, as in the default
        if cfg.get("dw_tile", 0):
            cfg.pop("work_group", None)  # a dw_tile work-group is Lx x G work-items, whatever work_group says
        if cfg.get("reduce_items", 1) > 1:
            # A work-group reduction fixes its own local size (and a 1x1 output has one pixel block).
            cfg.pop("work_group", None)
            if default.get("x_block") == 1:
                cfg["x_block"] = 1
        return cfg

    # -- cost -------------------------------------------------------------------

    def work_items(self, head: Operation, cfg: dict[str, Any], kop: Operation) -> int:
        """The kernel's grid (PackedConvSpec.grid): row segments of x_block pixels (times
        reduce_items work-items each; with dw_tile, work-groups of dw_tile x G) x rows x
        batch x channel blocks / co_blocks x split_k parts; with local_tile T, work-groups of
        (T / cols) x (T / rows) work-items per T x T block of output channels x pixels."""
        n, c4, h, w, _ = head.results[0].type.shape
        if isinstance(head, graph.Conv2dSplitKOp):
            n //= head.parts.value.data
        t = cfg.get("local_tile", 0)
        if t:
            rm, rn = LOCAL_REGISTER_TILE[t]
            return cdiv(c4 * 4, t) * cdiv(h * w, t) * n * (t // rm) * (t // rn)
        xb, cb, split = cfg.get("x_block", 1), cfg.get("co_blocks", 1), cfg.get("split_k", 1)
        tile = cfg.get("dw_tile", 0)
        if tile:
            return cdiv(w, xb * tile) * tile * dw_tile_groups(head, cfg) * h * n * split
        return cdiv(w, xb) * cfg.get("reduce_items", 1) * h * n * cdiv(c4, cb) * split

    def extra_bytes(self, head: Operation, cfg: dict[str, Any], out_bytes: int) -> int:
        """Split-K writes `split_k` partial outputs and its sum kernel reads them back."""
        parts = cfg.get("split_k", 1)
        return 2 * parts * out_bytes if parts > 1 else 0


CONV4C = Conv4c()


# --------------------------------------------------------------------------- lowering


def conv_input(hb, op) -> tuple[Packed, list[SSAValue], ConvSource]:
    """A conv's input accessor, its head input buffers before the weights... (the input, and
    after weight and bias a scale) and the source that says how to read it: a
    `graph.sum_partials` input is read as its pool partials (the conv adds the tiles), a
    `graph.scale_channels` one as its input times the scale, a `graph.fused {on_load}`
    region's as the depthwise conv it holds computed at each pixel (its input, and after
    weight and bias the depthwise weights and bias), anything else as itself."""
    owner = op.input.owner
    if graph.on_load_region(op.input) is not None:
        if not graph.reads_on_load(op):
            raise LoweringError(f"{where(op)} reads the graph.fused {{on_load}} region at {where(owner)}, which "
                                "only a groups-1 1x1 convolution with stride 1 and no padding can read (it computes "
                                "the region's depthwise values as it loads them); delete on_load to give the region "
                                "a kernel")
        return depthwise_load(hb, owner)
    if isinstance(owner, graph.ScaleChannelsOp):
        groups = getattr(op, "groups", None)
        if groups is not None and groups.value.data != 1:
            raise LoweringError(f"{where(op)}: only a groups-1 convolution can read graph.scale_channels")
        return packed(owner.input), [hb.buffer(owner.input), hb.buffer(owner.scale)], ScaledLoad(packed(owner.scale))
    if isinstance(owner, graph.SumPartialsOp):
        if not owner.readable_by(op):
            raise LoweringError(f"{where(op)}: only a groups-1 1x1 convolution with stride 1 and no padding can "
                                "read graph.sum_partials")
        return packed(owner.input), [hb.buffer(owner.input)], PoolTiles(owner.input.type.shape[2])
    return packed(op.input), [hb.buffer(op.input)], Load()


def depthwise_load(hb, region: graph.FusedOp) -> tuple[Packed, list[SSAValue], DepthwiseLoad]:
    """conv_input's answer for an on_load region: the depthwise conv's input, its weights
    and bias, and the `DepthwiseLoad` source (the activation as a float4 expression)."""
    dw: graph.Conv2dOp = region.head
    group = Group(region.ops, region)
    expr, extras = group_expression(group) if group.has_epilogue else (PackedEpilogue().expr, [])
    if extras:
        raise LoweringError(f"{where(region)}: an on_load region's activation cannot read other tensors")
    src = packed(dw.input)
    load = DepthwiseLoad(src=src, kernel=tuple(graph.weight_shape(dw.weight)[2:]), strides=graph.ints(dw.strides),
                         pads=graph.ints(dw.pads), dilations=graph.ints(dw.dilations), has_bias=dw.bias is not None,
                         pepi=PackedEpilogue(expr), out_hw=packed(region.result).shape[2:])
    bias = [hb.weight_buffer(dw.bias)] if dw.bias is not None else []
    return src, [hb.buffer(dw.input), hb.weight_buffer(dw.weight), *bias], load


def conv_geometry(op, src: Packed, source: ConvSource, out: Packed, cfg: dict,
                  parts: int = 1) -> tuple[dict, list[int]]:
    """PackedConvSpec fields shared by the direct and the split-K partial kernel (`parts`
    input-channel parts), the source (`source`, or a work-group's tile of it) and reduction
    among them, and the launch scalars (input channel blocks, when they are a launch
    argument)."""
    k = graph.weight_shape(op.weight)[2:]
    depthwise = _depthwise(op)
    dynamic = not depthwise and src.shape[0] == 1
    scalars: list[int] = []
    if dynamic:  # one kernel for every input channel count
        scalars = [src.shape[1]]
        src = dataclasses.replace(src, shape=(1, 0, *src.shape[2:]))
    error = CONV4C.check(op, cfg)
    if error is not None:
        raise LoweringError(f"{where(op)}: {error}")
    if cfg["dw_tile"]:
        source = TiledLoad(source, (cfg["dw_tile"], dw_tile_groups(op, cfg)))
    reduction = (Depthwise(bool(cfg["dw_rows"])) if depthwise else SplitK(parts) if parts > 1
                 else WorkGroup(cfg["reduce_items"]) if cfg["reduce_items"] > 1 else Serial())
    return dict(
        src=src, kernel=tuple(k), strides=graph.ints(op.strides), pads=graph.ints(op.pads),
        dilations=graph.ints(op.dilations), pixels=min(cfg["x_block"], out.shape[3]),
        dynamic_ci=dynamic, channel_blocks=cfg["co_blocks"], source=source, reduction=reduction,
    ), scalars


class PackedConvolution(EpiloguePattern):
    """Direct NCHW4c convolution: `x_block` pixels and `co_blocks` channel blocks per
    work-item. A `split_k > 1` left in the config means the split-k pass did not run."""

    heads = (graph.Conv2dOp,)

    def group_spec(self, hb, group, out, pepi, cfg):
        return self.spec(hb, group.head, out, pepi, cfg, group.pool_partials)

    def spec(self, hb, op, out, pepi, cfg, pool: graph.PoolPartialsOp | None = None):
        if cfg.get("local_tile", 0):
            return local_tile_spec(hb, op, out, pepi, cfg)
        if cfg["split_k"] > 1:
            raise LoweringError(f"{where(op)}: kernel_config split_k = {cfg['split_k']} needs the split-k pass "
                                "before convert-graph-to-opencl")
        src, xs, source = conv_input(hb, op)
        geometry, scalars = conv_geometry(op, src, source, out, cfg)
        bias = [hb.weight_buffer(op.bias)] if op.bias is not None else []
        ins = [xs[0], hb.weight_buffer(op.weight), *bias, *xs[1:]]
        if pool is not None:  # fuse-pool-partials: the kernel also writes the tile means
            spec = PackedDwPoolSpec(out=out, pepi=pepi, has_bias=op.bias is not None,
                                    tiles=pool.tiles.value.data, items=cfg["reduce_items"], **geometry)
            return spec, [*ins, hb.alloc(pool.result)], scalars
        spec = PackedConvSpec(out=out, pepi=pepi, has_bias=op.bias is not None, **geometry)
        return spec, ins, scalars


def local_tile_spec(hb, op: graph.Conv2dOp, out: Packed, pepi: PackedEpilogue, cfg: dict):
    """`local_tile`: the conv as a tiled GEMM (PackedConvTileSpec), its OIHW4o weights
    ([CO/4][CI][1][1][4]) repacked now to [CI][CO] (f32, whatever the kernel computes in)
    so that a work-group's weight slice is rows of consecutive output channels."""
    error = CONV4C.check(op, cfg)
    if error is not None:
        raise LoweringError(f"{where(op)}: {error}")
    src = packed(op.input)
    t = cfg["local_tile"]
    rows, cols = LOCAL_REGISTER_TILE[t]
    w = np.asarray(hb.constant_array(op.weight), np.float32)
    co4, ci = w.shape[0], w.shape[1]
    if ci != src.shape[1] * 4 or co4 != out.shape[1]:
        raise LoweringError(f"{where(op)}: local_tile needs OIHW4o weights of {out.shape[1]} x {src.shape[1] * 4} "
                            f"(the packed channels), got {list(w.shape)}")
    wt = np.ascontiguousarray(w.reshape(co4, ci, 4).transpose(1, 0, 2).reshape(ci, co4 * 4))
    weight = hb.weight((getattr(op.weight.owner, "weight_name", None) or "conv_weight") + "_kc", wt)
    bias = [hb.weight_buffer(op.bias)] if op.bias is not None else []
    try:
        spec = PackedConvTileSpec(out=out, pepi=pepi, src=src, tile=t, rows=rows, cols=cols,
                                  has_bias=op.bias is not None)
    except ValueError as e:
        raise LoweringError(f"{where(op)}: kernel_config local_tile: {e}") from None
    return spec, [hb.buffer(op.input), weight, *bias], []


class SplitKPartial(KernelPattern):
    """Partial sums of a split-K convolution into a [parts][N][C4][OH][OW] f32 buffer."""

    heads = (graph.Conv2dSplitKOp,)
    packed = True

    def lower(self, hb, group, cfg, loc):
        op: graph.Conv2dSplitKOp = group.head
        parts = op.parts.value.data
        n, c4, oh, ow, _ = op.result.type.shape
        out = Packed((n // parts, c4, oh, ow), "buf", "texture", "f32")
        src, xs, source = conv_input(hb, op)
        geometry, scalars = conv_geometry(op, src, source, out, cfg, parts)
        spec = PackedConvSpec(out=out, has_bias=False, **geometry)
        hb.launch(spec, [xs[0], hb.weight_buffer(op.weight), *xs[1:], hb.alloc(op.result)], loc, scalars)


Conv4c.patterns = (PackedConvolution(), SplitKPartial())
