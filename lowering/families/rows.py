"""The row-reduction families: kernels that reduce rows of their input, with `reduce_items`
work-items per row (1: a serial loop; else a work-group reduction in local memory).

- `reduce`: global average pools and every `graph.ReduceOp` kind (mean, sum, max, min, prod,
  L1, L2, ...), NCHW (`ReduceSpec`) and NCHW4c (`PackedMeanSpec`);
- `norm`: LayerNorm and (Log)Softmax (`LayerNormSpec`, `SoftmaxSpec`);
- `attention`: fused attention, `graph.attention`: the row kernel (`AttentionSpec`, work-items per
  query row) or the tiled kernel (`AttentionTiledSpec`, query rows per work-group sharing K/V
  tiles in local memory).

| key | values | what |
|---|---|---|
| `reduce_items` | reduce, norm: 1, 16, 32 ... 256; attention: 1, 2, 4 ... 128 | work-items per output (row) |
| `tile` | attention: 0, 1, 2 ... 64 | query rows per work-group of the tiled kernel; 0: the row kernel |
| `key_split` | attention: 1, 2 ... 16 | work-items per query row of the tiled kernel, each taking a share of the keys |
| `kv_tile` | attention: 4, 8 ... 64 | keys per K/V tile in local memory (tiled kernel) |

Their kernels fix their own work-group (a row, or a tile of rows, each): `work_group` is not tuned.
"""

from __future__ import annotations

import math
from typing import Any

from xdsl.ir import Operation

from adreno_mlir.dialects import graph, texture
from adreno_mlir.kernel_math.matmul import read_strides
from adreno_mlir.lowering.families.base import Family, Key, Rules, cdiv, group_items, numel, value_numel
from adreno_mlir.lowering.groups import KernelPattern, LoweringError, where
from adreno_mlir.lowering.kernels.attention import (LOCAL_FLOATS, MAX_KEYS, AttentionSpec, AttentionTiledSpec,
                                                    tiled_config_error, tiled_local_floats)
from adreno_mlir.lowering.kernels.common import broadcast_strides
from adreno_mlir.lowering.kernels.norm import LayerNormSpec
from adreno_mlir.lowering.kernels.packed import packed_of
from adreno_mlir.lowering.kernels.packed_pool import PackedChannelNormSpec, PackedMeanSpec
from adreno_mlir.lowering.kernels.pool import ReduceSpec
from adreno_mlir.lowering.kernels.softmax import SoftmaxSpec
from adreno_mlir.lowering.nchw_lowering import _epi_args
from adreno_mlir.lowering.packed_lowering import EpiloguePattern

ROW_ITEMS = (1, 16, 32, 64, 128, 256)


class RowFamily(Family):
    """A family whose one key is `reduce_items` work-items per row."""

    fixed_work_group = True

    def reduced_extent(self, head: Operation) -> int:
        raise NotImplementedError

    def rows(self, head: Operation) -> int:
        raise NotImplementedError

    def space(self, head: Operation, default: dict[str, Any]) -> list:
        """reduce_items 1 and those up to the reduced extent."""
        extent = self.reduced_extent(head)
        return [("reduce_items", tuple(n for n in self.keys[0].choices if n == 1 or n <= extent))]

    def work_items(self, head: Operation, cfg: dict[str, Any], kop: Operation) -> int:
        """Outputs (rows) x reduce_items."""
        return self.rows(head) * cfg.get("reduce_items", 1)


class Reduce(RowFamily):
    name = "reduce"
    keys = (Key("reduce_items", ROW_ITEMS, "work-items per output", off=1),)

    def matches(self, head: Operation) -> bool:
        return isinstance(head, (graph.GlobalAvgPoolOp, graph.ReduceOp))  # every reduction kind

    def defaults(self, op: Operation, rules: Rules, given: dict[str, Any]) -> dict[str, Any]:
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
        if rules.gpu:
            items = group_items(extent)
        return {"reduce_items": items}

    def reduced_extent(self, head: Operation) -> int:
        shape = graph.shape_of(head.input)
        if isinstance(head, graph.GlobalAvgPoolOp):
            return int(math.prod(shape[2:]))
        return int(math.prod(shape[a] for a in graph.ints(head.axes)))

    def rows(self, head: Operation) -> int:
        out = head.results[0]
        rows = value_numel(out)
        return cdiv(rows, 4) if isinstance(out.type, texture.TextureTensorType) else rows


class Norm(RowFamily):
    name = "norm"
    keys = (Key("reduce_items", ROW_ITEMS, "work-items per row", off=1),)

    def matches(self, head: Operation) -> bool:
        return isinstance(head, (graph.LayerNormOp, graph.ChannelNormOp, graph.SoftmaxOp, graph.LogSoftmaxOp))

    def defaults(self, op: Operation, rules: Rules, given: dict[str, Any]) -> dict[str, Any]:
        """LayerNorm and Softmax: `reduce_items` work-items per row. GPUs: a work-group per row, of
        the most work-items (16 to 256) that give each at least two elements (a
        transformer has only 50-3136 rows, far too few work-items with one per row). CPUs:
        1 (a row per work-item; PoCL's cores are already busy with the rows). A channel
        normalization: 1 everywhere (its rows are pixels, thousands of them, and a row's
        channels are H*W apart: neighbouring work-items must take neighbouring pixels;
        its NCHW4c kernel has no work-group form)."""
        if isinstance(op, graph.ChannelNormOp):
            return {"reduce_items": 1}
        shape = graph.shape_of(op.input)
        if isinstance(op, (graph.SoftmaxOp, graph.LogSoftmaxOp)):
            length = shape[op.axis.value.data % len(shape)]
        else:
            length = math.prod(shape[op.norm_axis():])
        items = 1
        if rules.gpu:
            items = group_items(length)
        return {"reduce_items": items}

    def reduced_extent(self, head: Operation) -> int:
        shape = graph.shape_of(head.input)
        if isinstance(head, (graph.SoftmaxOp, graph.LogSoftmaxOp)):
            return int(shape[head.axis.value.data % len(shape)])
        if isinstance(head, graph.ChannelNormOp):
            return int(shape[1])
        return int(math.prod(shape[head.norm_axis():]))

    def rows(self, head: Operation) -> int:
        shape = graph.shape_of(head.input)
        if isinstance(head, graph.ChannelNormOp):
            return shape[0] * shape[2] * shape[3]
        if isinstance(head, graph.LayerNormOp):
            return numel(shape[:head.norm_axis()])
        return numel(shape) // max(1, shape[head.axis.value.data % len(shape)])


class Attention(RowFamily):
    name = "attention"
    keys = (
        Key("reduce_items", (1, 2, 4, 8, 16, 32, 64, 128), "work-items per query row (row kernel)", off=1),
        Key("tile", (0, 1, 2, 4, 8, 16, 32, 64), "query rows per work-group of the tiled kernel (0: the row kernel)",
            off=0),
        Key("key_split", (1, 2, 4, 8, 16), "work-items per query row of the tiled kernel (its keys shared out)", off=1),
        Key("kv_tile", (4, 8, 16, 32, 64), "keys per K/V tile in local memory (tiled kernel)", off=32),
    )

    def matches(self, head: Operation) -> bool:
        return isinstance(head, graph.AttentionOp)

    def applicable(self, head: Operation, cfg: dict[str, Any]) -> tuple[str, ...]:
        """The tiled kernel reads tile, key_split and kv_tile; the row kernel reduce_items (and tile 0)."""
        return ("tile", "key_split", "kv_tile") if cfg.get("tile", 0) else ("reduce_items", "tile")

    def defaults(self, op: Operation, rules: Rules, given: dict[str, Any]) -> dict[str, Any]:
        """The row kernel (`tile` 0, AttentionSpec) unless a tiled key is given (`tile` > 0,
        `key_split` or `kv_tile`) or the row's scores do not fit its local memory (more than
        MAX_KEYS keys): then the tiled kernel (AttentionTiledSpec, `tiled_defaults`).

        The row kernel: `reduce_items` work-items per query row; GPUs: the most (16 to 128)
        that give each at least two keys, since a row's work-group also shares its Dv output
        columns; CPUs: 1 (a serial row per work-item: PoCL's cores are already busy with the
        rows, and a barrier costs more there). It stays the default until the tiled kernel
        is timed on a GPU (bench/attention.py compares the two and a sweep of the tiled
        kernel's keys against PyTorch's SDPA; the tuner's space has both kernels)."""
        tiled_given = given.get("tile", 0) or any(k in given for k in ("key_split", "kv_tile"))
        if given.get("tile") != 0 and (tiled_given or op.scores_shape()[-1] > MAX_KEYS):
            return self.tiled_defaults(op, rules, given)
        items = given.get("reduce_items") or (group_items(op.scores_shape()[-1], most=128) if rules.gpu else 1)
        return {"reduce_items": items, "tile": 0}

    def tiled_defaults(self, op: graph.AttentionOp, rules: Rules, given: dict[str, Any]) -> dict[str, Any]:
        """The tiled kernel's keys not given. key_split: the most work-items a row (at most
        8) that leave each at least 8 keys of the row; kv_tile: 32 keys (at most 16 a
        work-item, at most L rounded up to a power of two; fewer where K and V rows exceed
        local memory); tile: 32 query rows (at most M rounded up, at most 256 work-items),
        halved while the work-groups are fewer than the target's compute units, down to 4:
        many rows a work-group share each K/V read, many work-groups fill the GPU
        (tiny_bert's 4 heads of 128 rows: 128 work-groups of 4 rows for 132 compute units)."""
        shape = op.scores_shape()
        m, keys = shape[-2], shape[-1]
        d, dv = op.read_shape("k")[-2], op.product_shape()[-1]
        split = given.get("key_split") or max(n for n in (1, 2, 4, 8) if n == 1 or 8 * n <= keys)
        if given.get("tile"):
            tile = given["tile"]
        else:
            tile = 1
            while tile < min(32, m) and tile * 2 * split <= 256:
                tile *= 2
            batch = numel(shape[:-2])
            while tile > 4 and rules.compute_units and batch * cdiv(m, tile) < rules.compute_units:
                tile //= 2
        kv_tile = given.get("kv_tile")
        if not kv_tile:  # a given one is checked as it is (check() names what it exceeds)
            kv_tile = max(split, min(32, 16 * split, 1 << max(0, keys - 1).bit_length()))
            while kv_tile > split and tiled_local_floats(kv_tile, d, dv, tile, split) > LOCAL_FLOATS:
                kv_tile //= 2
        return {"tile": tile, "key_split": split, "kv_tile": kv_tile}

    def check(self, head: Operation, cfg: dict[str, Any]) -> str | None:
        if not cfg.get("tile", 0):
            keys = head.scores_shape()[-1]
            if keys > MAX_KEYS:
                return (f"the row kernel keeps a row's {keys} scores in local memory, at most {MAX_KEYS}: "
                        "take the tiled kernel (tile > 0)")
            return None
        return tiled_config_error(cfg["tile"], cfg.get("key_split", 1), cfg.get("kv_tile", 32),
                                  head.read_shape("k")[-2], head.product_shape()[-1])

    def space(self, head: Operation, default: dict[str, Any]) -> list:
        """The row kernel's reduce_items, and the tiled kernel's tile, key_split and kv_tile
        (normalize drops what the chosen kernel does not read)."""
        keys = self.reduced_extent(head)
        m = head.scores_shape()[-2]
        return [("reduce_items", tuple(n for n in self.keys[0].choices if n == 1 or n <= keys)),
                ("tile", tuple(t for t in (0, 4, 8, 16, 32, 64) if t < 2 * m)),
                ("key_split", tuple(s for s in (1, 2, 4, 8, 16) if s == 1 or s <= keys)),
                ("kv_tile", (8, 16, 32, 64))]

    def normalize(self, cfg: dict[str, Any], default: dict[str, Any], head: Operation) -> dict[str, Any]:
        """The tiled kernel reads no reduce_items; the row kernel no key_split or kv_tile."""
        if cfg.get("tile", 0):
            cfg.pop("reduce_items", None)
        else:
            cfg.pop("key_split", None)
            cfg.pop("kv_tile", None)
        return cfg

    def reduced_extent(self, head: Operation) -> int:
        return int(head.scores_shape()[-1])

    def rows(self, head: Operation) -> int:
        return numel(head.scores_shape()[:-1])

    def work_items(self, head: Operation, cfg: dict[str, Any], kop: Operation) -> int:
        if cfg.get("tile", 0):
            shape = head.scores_shape()
            return numel(shape[:-2]) * cdiv(shape[-2], cfg["tile"]) * cfg["tile"] * cfg.get("key_split", 1)
        return self.rows(head) * cfg.get("reduce_items", 1)


REDUCE, NORM, ATTENTION = Reduce(), Norm(), Attention()


# --------------------------------------------------------------------------- lowering


class ReducePattern(KernelPattern):
    """Global average pools and every `graph.ReduceOp` kind (ReduceSpec)."""

    heads = (graph.GlobalAvgPoolOp, graph.ReduceOp)

    def lower(self, hb, group, cfg, loc):
        op = group.head
        x_shape = graph.shape_of(op.input)
        gap = isinstance(op, graph.GlobalAvgPoolOp)
        axes = tuple(range(2, len(x_shape))) if gap else graph.ints(op.axes)
        # Epilogue coordinates are those of the input rank with reduced axes at 0, i.e.
        # the keepdims output shape.
        keep_shape = tuple(1 if d in axes else s for d, s in enumerate(x_shape))
        epi, extras = _epi_args(hb, group, keep_shape)
        # reduce_items > 1: a work-group per output element
        spec = ReduceSpec(x_shape=x_shape, axes=axes, items=cfg["reduce_items"],
                          kind="mean" if gap else op.kind, epilogue=epi)
        hb.launch(spec, [hb.buffer(op.input), *extras, hb.alloc(group.result)], loc)


class SoftmaxPattern(KernelPattern):
    heads = (graph.SoftmaxOp, graph.LogSoftmaxOp)

    def lower(self, hb, group, cfg, loc):
        op: graph.SoftmaxOp | graph.LogSoftmaxOp = group.head
        shape = graph.shape_of(op.input)
        spec = SoftmaxSpec(shape=shape, axis=op.axis.value.data % len(shape), items=cfg["reduce_items"],
                           log=isinstance(op, graph.LogSoftmaxOp))
        hb.launch(spec, [hb.buffer(op.input), hb.alloc(op.result)], loc)


class AttentionPattern(KernelPattern):
    """graph.attention (fuse-attention's op): one AttentionSpec kernel, its operands read
    through their perms' strides with broadcast batch axes at stride 0. The op has no
    NCHW4c kernel, so this is its lowering on every plan."""

    heads = (graph.AttentionOp,)

    def lower(self, hb, group, cfg, loc):
        op: graph.AttentionOp = group.head
        if group.has_epilogue:
            raise LoweringError(f"{where(op)}: graph.attention takes no fused element-wise epilogue")
        out = op.product_shape()
        batch, (m, dv) = tuple(out[:-2]), out[-2:]
        d, keys = op.read_shape("k")[-2:]
        out_strides = None
        if op.out_perm is not None:  # stored transposed: logical axis i is stored axis perm.index(i)
            perm = graph.ints(op.out_perm)
            out_strides = read_strides(graph.shape_of(op.result), tuple(perm.index(i) for i in range(len(out))))

        def strides(which: str) -> tuple[int, ...]:
            view = op.view(which)
            if view is not None:  # a strided view of the operand (fuse-attention's q/k/v views)
                read = tuple(view[2][p] for p in op.permutation(which))
            else:
                read = read_strides(graph.shape_of(getattr(op, which)), op.permutation(which))
            shape = op.read_shape(which)
            lead = len(batch) - (len(shape) - 2)
            batch_st = tuple(0 if dim == 1 else st for dim, st in zip(shape[:-2], read[:-2]))
            return (0,) * lead + batch_st + tuple(read[-2:])

        bias_st = None
        if op.bias is not None:
            bias_st = broadcast_strides(graph.shape_of(op.bias), (*batch, m, keys))
        common = dict(batch=batch, m=m, d=d, keys=keys, dv=dv, q_strides=strides("q"), k_strides=strides("k"),
                      v_strides=strides("v"), bias_strides=bias_st, scale=op.scale.value.data,
                      offsets=tuple(view[0] if (view := op.view(w)) is not None else 0 for w in ("q", "k", "v")),
                      out_strides=out_strides)
        try:
            if cfg.get("tile", 0):
                spec = AttentionTiledSpec(**common, tile=cfg["tile"], split=cfg["key_split"], kv_tile=cfg["kv_tile"])
            else:
                spec = AttentionSpec(**common, items=cfg["reduce_items"])
        except ValueError as e:
            raise LoweringError(f"{where(op)}: kernel_config: {e}") from None
        ins = [hb.buffer(op.q), hb.buffer(op.k), hb.buffer(op.v)]
        ins += [hb.buffer(op.bias)] if op.bias is not None else []
        hb.launch(spec, [*ins, hb.alloc(op.result)], loc)


class LayerNormPattern(KernelPattern):
    heads = (graph.LayerNormOp,)

    def lower(self, hb, group, cfg, loc):
        op: graph.LayerNormOp = group.head
        shape = graph.shape_of(op.input)
        axis = op.norm_axis()
        row_shape = tuple(shape[axis:])
        bias = op.bias
        spec = LayerNormSpec(
            rows=numel(shape[:axis]), row_shape=row_shape, scale_strides=broadcast_strides(graph.shape_of(op.scale), row_shape),
            bias_strides=None if bias is None else broadcast_strides(graph.shape_of(bias), row_shape),
            epsilon=op.epsilon.value.data, items=cfg["reduce_items"], center=bool(op.center.value.data))
        ins = [hb.buffer(op.input), hb.buffer(op.scale)] + ([] if bias is None else [hb.buffer(bias)])
        hb.launch(spec, [*ins, hb.alloc(op.result)], loc)

class ChannelNormPattern(KernelPattern):
    """graph.channel_norm on NCHW: rows of C channels H*W floats apart (LayerNormSpec.inner)."""

    heads = (graph.ChannelNormOp,)

    def lower(self, hb, group, cfg, loc):
        op: graph.ChannelNormOp = group.head
        n, c, h, w = graph.shape_of(op.input)
        spec = LayerNormSpec(rows=n * h * w, row_shape=(c,), scale_strides=(1,),
                             bias_strides=None if op.bias is None else (1,), epsilon=op.epsilon.value.data,
                             items=cfg["reduce_items"], center=bool(op.center.value.data), inner=h * w)
        ins = [hb.buffer(op.input), hb.buffer(op.scale)] + ([] if op.bias is None else [hb.buffer(op.bias)])
        hb.launch(spec, [*ins, hb.alloc(op.result)], loc)


class PackedChannelNormPattern(EpiloguePattern):
    heads = (graph.ChannelNormOp,)

    def spec(self, hb, op, out, pepi, cfg):
        spec = PackedChannelNormSpec(out=out, pepi=pepi, src=packed_of(op.input), epsilon=op.epsilon.value.data,
                                     center=bool(op.center.value.data), has_bias=op.bias is not None)
        ins = [hb.buffer(op.input), hb.weight_buffer(op.scale)] + (
            [] if op.bias is None else [hb.weight_buffer(op.bias)])
        return spec, ins, []


class PackedMeanPattern(EpiloguePattern):
    heads = (graph.GlobalAvgPoolOp, graph.ReduceMeanOp)

    def spec(self, hb, op, out, pepi, cfg):
        # reduce_items > 1: a work-group per (n, channel block)
        spec = PackedMeanSpec(out=out, pepi=pepi, src=packed_of(op.input), items=cfg["reduce_items"])
        return spec, [hb.buffer(op.input)], []


Reduce.patterns = (ReducePattern(), PackedMeanPattern())
Norm.patterns = (SoftmaxPattern(), LayerNormPattern(), ChannelNormPattern(), PackedChannelNormPattern())
Attention.patterns = (AttentionPattern(),)
