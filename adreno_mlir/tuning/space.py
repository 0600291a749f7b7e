"""The configuration space of one kernel: which `kernel_config` values the tuner tries.

A space is a few named dimensions (each a tuple of choices) read off the kernel's head op
and its default configuration, plus `normalize`, which turns any point of the product
into a configuration the lowering accepts (keys a choice makes meaningless are dropped,
e.g. register tiles under a split-K matmul), so two points that mean the same kernel are
one candidate. The default configuration is always a candidate, and the first one.

Per kernel kind (passes/select_kernel_config.py documents each key):

| kind | dimensions |
|---|---|
| conv on NCHW4c | x_block 1/2/4, co_blocks 1/2, split_k 1/2/4/8 (up to the input channel blocks); depthwise: x_block, dw_rows; reading an on_load depthwise region: dw_tile 0, 4 ... 64 (up to the width) and the default |
| conv on NCHW | kernel: every one that applies (vec4, scalar, pointwise, plane, rows), co_block, x_block (vec4, pointwise), vec (pointwise, plane, rows) |
| Winograd matmul | tiles_per_item 1/2/4, co_blocks 1/2/4 |
| reductions, LayerNorm/Softmax | reduce_items 1, 16 ... 256 (up to the reduced extent) |
| attention | reduce_items 1, 2 ... 128 (up to the keys) |
| Gemm/MatMul | k_split 1 ... 128 (up to K / 2), tile_m 1/2/4/8 and tile_n 1/4 when not split |
| every kernel but reductions | work_group: the driver's choice or one of a few preferred local sizes |
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

from xdsl.ir import Operation

from adreno_mlir.dialects import graph
from adreno_mlir.passes.select_kernel_config import (
    config_of,
    conv_kernels,
    depthwise_load_of,
    head_of,
    is_depthwise,
    kernel_kind,
    kernel_op,
    kernel_signature,
    matmul_dims,
    pooled,
    tileable,
)

DRIVER = "driver"
"""The work_group choice that leaves the local size to the OpenCL driver (no key, or `()`
where a default local size must be overridden)."""

WORK_GROUPS: tuple[Any, ...] = (DRIVER, (64, 1, 1), (16, 4, 1), (8, 8, 1), (4, 4, 4))
"""Preferred local sizes tried (the lowering shrinks each axis to a divisor of the grid)."""

_NO_WORK_GROUP = {"reduce", "norm", "attention"}
"""Kinds whose kernels fix their own local size (a work-group per row)."""


@dataclass(frozen=True)
class Space:
    """The candidates of one kernel signature."""

    signature: str
    kind: str
    default: dict[str, Any]
    dims: tuple[tuple[str, tuple[Any, ...]], ...]
    """(key, choices) in suggestion order."""
    name: str = ""
    """The ONNX node of one kernel with this signature (for messages)."""
    pruned: frozenset = frozenset()
    """Canonical configs not worth measuring: the lowering would refuse them, or the
    roofline model (adreno_mlir.analyze) predicts them `PRUNE_FACTOR` times slower than
    the default (too few work-items for the device)."""
    channels_per_group: int = 0
    """NCHW convolutions: output channels per group (co_block must divide it)."""
    estimates: dict = field(default_factory=dict, compare=False, hash=False)
    """canonical config -> the roofline model's estimate (us), where the target has peaks."""

    def size(self) -> int:
        return len(self.candidates())

    def normalize(self, point: dict[str, Any]) -> dict[str, Any]:
        """The full configuration for a point of the dimensions' product."""
        cfg = {**self.default, **point}
        if cfg.get("work_group") == DRIVER:
            # An override cannot delete a key, and one that picks another kernel starts
            # from that kernel's defaults (which may have a local size): the driver's
            # choice is written `()`, except for the default kernel without a local size
            # (so that the default itself is one candidate, not two).
            if cfg.get("kernel") == self.default.get("kernel") and "work_group" not in self.default:
                cfg.pop("work_group")
            else:
                cfg["work_group"] = ()
        if self.kind == "gemm" and cfg.get("k_split", 1) > 1:
            # Untiled, explicitly: select-kernel-config merges an override onto its own
            # choice, so a key left out keeps the default's tile_n = 4, which split-K refuses.
            for t in ("tile_m", "tile_n"):
                if t in cfg:
                    cfg[t] = 1
        if self.kind == "conv4c" and cfg.get("dw_tile", 0):
            cfg.pop("work_group", None)  # a dw_tile work-group is Lx x G work-items, whatever work_group says
        if self.kind == "conv4c" and cfg.get("reduce_items", 1) > 1:
            # A work-group reduction fixes its own local size (and a 1x1 output has one pixel block).
            cfg.pop("work_group", None)
            if self.default.get("x_block") == 1:
                cfg["x_block"] = 1
        if self.kind == "conv":
            kernel = cfg.get("kernel")
            for key in ("co_block", "x_block", "vec"):  # keys the chosen kernel does not read
                if key not in CONV_KERNEL_KEYS.get(kernel, (key,)):
                    cfg.pop(key, None)
            if kernel == "vec4":  # float4s of channels: 4 or 8 (16: the other kernels only)
                cfg["co_block"] = min(max(cfg.get("co_block", 4), 4), 8)
            if kernel == "vec4" and self.channels_per_group == 1:
                cfg["co_block"] = 4  # depthwise: one float4 of channels
            if kernel in ("rows", "plane") and self.channels_per_group == 1:
                cfg["co_block"] = 1  # depthwise: one channel per work-item
            if self.channels_per_group and kernel in ("scalar", "pointwise", "rows", "plane") and "co_block" in cfg:
                cog = self.channels_per_group  # the largest block of at most the chosen size that divides it
                cfg["co_block"] = max(b for b in (1, 2, 4, 8, 16) if b <= cfg["co_block"] and cog % b == 0)
        return cfg

    def candidates(self, include_pruned: bool = False) -> list[dict[str, Any]]:
        """Every distinct configuration, the default first (without the pruned ones)."""
        from adreno_mlir.tuning.db import canonical

        seen = {_key(self.default): self.default}
        keys = [k for k, _ in self.dims]
        for values in itertools.product(*(c for _, c in self.dims)):
            cfg = self.normalize(dict(zip(keys, values)))
            if include_pruned or canonical(cfg) not in self.pruned:
                seen.setdefault(_key(cfg), cfg)
        return list(seen.values())

    def with_pruning(self, op: Operation, profile) -> Space:
        """This space without the candidates the lowering would refuse (checked now, not by
        a compile) and those the roofline model puts `PRUNE_FACTOR` times above the default."""
        from dataclasses import replace

        from adreno_mlir.errors import CompileError
        from adreno_mlir.passes.select_kernel_config import validate_config
        from adreno_mlir.tuning.db import canonical

        pruned = set()
        estimates = {}
        estimate = None
        if profile.has_peaks:
            from adreno_mlir.analyze import estimate_config_us

            estimate = lambda cfg: estimate_config_us(op, cfg, profile)  # noqa: E731
        base = None
        if estimate is not None:
            base = estimates[canonical(self.default)] = estimate(self.default)
        for cfg in self.candidates(include_pruned=True)[1:]:
            try:
                validate_config(op, dict(cfg))
                if base is not None:
                    us = estimates[canonical(cfg)] = estimate(cfg)
                    if us > PRUNE_FACTOR * base:
                        pruned.add(canonical(cfg))
            except CompileError:
                pruned.add(canonical(cfg))
        return replace(self, pruned=frozenset(pruned), estimates=estimates)


PRUNE_FACTOR = 3.0
"""Candidates the roofline model predicts this many times slower than the default are not
measured."""


CONV_KERNEL_KEYS = {"vec4": ("co_block", "x_block"), "scalar": ("co_block",),
                    "pointwise": ("co_block", "x_block", "vec"), "plane": ("co_block", "vec"),
                    "rows": ("co_block", "vec")}
"""The keys each NCHW convolution kernel reads (besides `kernel` and `work_group`)."""


def _key(cfg: dict[str, Any]) -> tuple:
    return tuple(sorted(cfg.items()))


def space_of(op: Operation, gpu: bool) -> Space | None:
    """The space of the kernel `op` heads (after select-kernel-config), or None for
    kernels with nothing to tune."""
    kop = kernel_op(op)
    head = head_of(kop)
    kind = kernel_kind(head)
    default = config_of(kop)
    dims: list[tuple[str, tuple[Any, ...]]] = []
    if kind == "conv4c":
        ci = graph.shape_of(head.input)
        ci_blocks = max(1, math.ceil(_logical_channels(head) / 4)) if ci else 1
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
    elif kind == "conv":
        # Every kernel that can run the conv (select_kernel_config.conv_kernels): vec4
        # (float4 over channels), scalar (one pixel per work-item: what a CPU's work-group
        # vectorizer likes), pointwise, plane and rows (explicit float8 pixel vectors, the CPU
        # defaults). normalize() drops the keys a kernel does not read, so each distinct
        # kernel is measured once; what a kernel refuses is pruned before measuring.
        cog = graph.shape_of(head.result)[1] // head.groups.value.data
        dims += [("kernel", conv_kernels(head)),
                 ("co_block", (1, 4) if is_depthwise(head) else tuple(b for b in (1, 2, 4, 8, 16) if cog % b == 0)),
                 ("x_block", (1, 2, 4)), ("vec", (4, 8))]
    elif kind == "winograd_matmul":
        dims += [("tiles_per_item", (1, 2, 4)), ("co_blocks", (1, 2, 4))]
    elif kind in ("reduce", "norm"):
        extent = _reduced_extent(head)
        dims.append(("reduce_items", tuple(n for n in (1, 16, 32, 64, 128, 256) if n == 1 or n <= extent)))
    elif kind == "attention":
        keys = head.scores_shape()[-1]
        dims.append(("reduce_items", tuple(n for n in (1, 2, 4, 8, 16, 32, 64, 128) if n == 1 or n <= keys)))
    elif kind == "gemm":
        k = _gemm_k(head)
        dims.append(("k_split", tuple(s for s in (1, 2, 4, 8, 16, 32, 64, 128) if s == 1 or 2 * s <= k)))
        if tileable(head):
            m, n, _ = matmul_dims(head)
            dims.append(("tile_m", tuple(t for t in (1, 2, 4, 8) if t <= max(m, 1))))
            if default.get("tile_n", 1) == 4 or n % 4 == 0:
                dims.append(("tile_n", (1, 4)))
    else:
        return None
    if kind not in _NO_WORK_GROUP:
        dims.append(("work_group", WORK_GROUPS))
    dims = [(k, c) for k, c in dims if c]
    desc = getattr(kop.location, "desc", None)
    cog = graph.shape_of(head.result)[1] // head.groups.value.data if kind == "conv" else 0
    return Space(kernel_signature(kop), kind, default, tuple(dims), desc.data if desc is not None else "",
                 channels_per_group=cog)


def _logical_channels(head) -> int:
    shape = graph.shape_of(head.input)
    return int(shape[1]) * (4 if len(shape) == 5 else 1)


def _reduced_extent(head) -> int:
    shape = graph.shape_of(head.input)
    if isinstance(head, graph.GlobalAvgPoolOp):
        return int(math.prod(shape[2:]))
    if isinstance(head, (graph.SoftmaxOp, graph.LogSoftmaxOp)):
        return int(shape[head.axis.value.data % len(shape)])
    if isinstance(head, graph.LayerNormOp):
        return int(math.prod(shape[head.norm_axis():]))
    return int(math.prod(shape[a] for a in graph.ints(head.axes)))


def _gemm_k(head) -> int:
    if isinstance(head, graph.GemmOp):
        a = graph.shape_of(head.a)
        return int(a[0] if head.trans_a.value.data else a[1])
    return int(head.lhs_shape()[-1])
