"""The NCHW convolution family: `graph.conv2d` on plain tensors, lowered to the kernels of
lowering/kernels/conv.py.

| key | values | what |
|---|---|---|
| `kernel` | "vec4", "scalar", "pointwise", "plane", "rows" | `"vec4"`: float4 OIHW4o weights; `"scalar"`: any conv; `"pointwise"`: 1x1 stride-1 convs as a product over flattened pixels; `"plane"`: stride-1 convs (groups 1 or depthwise) whose output rows are as wide as the input's, as vectors over the flattened plane; `"rows"`: groups-1 or depthwise convs with row stride 1 or 2 as vectors along output rows (the CPU defaults) |
| `co_block` | 1, 2, 4, 8, 16 | output channels per work-item (vec4: 4 or 8; depthwise plane and rows: one channel each) |
| `x_block` | 1, 2, 4 | vec4: pixels per work-item; pointwise: pixel vectors per work-item |
| `vec` | 4, 8 | pointwise, plane and rows: pixels per vector |

Each kernel reads only some keys (`KERNEL_KEYS`); a configuration holds those.
"""

from __future__ import annotations

from typing import Any

from xdsl.ir import Operation

from adreno_mlir.dialects import graph
from adreno_mlir.lowering.families.base import Family, Key, Rules, cdiv
from adreno_mlir.lowering.groups import KernelPattern, LoweringError, where
from adreno_mlir.lowering.kernels.conv import Conv4Spec, ConvSpec, PlaneSpec, PointwiseSpec, RowsSpec, pack_taps
from adreno_mlir.lowering.nchw_lowering import _epi_args

CONV_KERNELS = ("vec4", "scalar", "pointwise", "plane", "rows")
"""The NCHW convolution kernels (`kernel` of a conv's config)."""

KERNEL_KEYS = {"vec4": ("co_block", "x_block"), "scalar": ("co_block",),
               "pointwise": ("co_block", "x_block", "vec"), "plane": ("co_block", "vec"),
               "rows": ("co_block", "vec")}
"""The keys each kernel reads (besides `kernel` and `work_group`)."""


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


class Conv(Family):
    name = "conv"
    keys = (
        Key("kernel", CONV_KERNELS, "which NCHW convolution kernel"),
        Key("co_block", (1, 2, 4, 8, 16), "output channels per work-item", off=1),
        Key("x_block", (1, 2, 4), "vec4: pixels per work-item; pointwise: pixel vectors per work-item", off=1),
        Key("vec", (4, 8), "pixels per vector (pointwise, plane, rows)", off=8),
    )

    def matches(self, head: Operation) -> bool:
        return isinstance(head, graph.Conv2dOp) and not graph.is_packed_value(head.input)

    def applicable(self, head: Operation, cfg: dict[str, Any]) -> tuple[str, ...]:
        return ("kernel", *KERNEL_KEYS.get(cfg.get("kernel"), ()))

    def defaults(self, op: Operation, rules: Rules, given: dict[str, Any]) -> dict[str, Any]:
        kernel = given.get("kernel")
        out = graph.shape_of(op.result)
        co, groups = out[1], op.groups.value.data
        depthwise = is_depthwise(op)
        cpu = kernel is None and not rules.gpu and rules.vectorize  # the float8 kernels are CPU defaults
        local = (lambda wg: {}) if rules.gpu else (lambda wg: {"work_group": wg})

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
        if kernel == "vec4" or (kernel is None and rules.vectorize and vec4_ok(op)):
            cb = 8 if co % 8 == 0 and not depthwise and rules.conv_co_block >= 8 else 4
            # Smaller pixel blocks rather than fewer than min_work_items work-items.
            items_per_row = out[2] * out[0] * co // cb
            xb = 1
            for cand in (4, 2, 1):
                if cand > rules.conv_x_block or cand > out[3]:
                    continue
                if -(-out[3] // cand) * items_per_row >= (rules.min_work_items if rules.gpu else 0):
                    xb = cand
                    break
            return {"kernel": "vec4", "co_block": cb, "x_block": xb}
        cog = co // groups
        cb = next(b for b in (rules.conv_co_block, 4, 2, 1) if b <= cog and cog % b == 0)
        return {"kernel": "scalar", "co_block": cb}

    def check(self, op: Operation, cfg: dict[str, Any]) -> str | None:
        """Why an NCHW convolution cannot take `cfg` (its kernel and co_block), or None: the
        one statement of these limits, for select-kernel-config (the autotuner prunes with
        it) and the lowering alike."""
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
                return (f"kernel_config co_block = {cb} must be 4 or 8, divide the output channels ({co}) and be 4 "
                        "for depthwise")
            return None
        if (co // groups) % cb:
            return f"kernel_config co_block = {cb} must divide the output channels per group ({co // groups})"
        return None

    def space(self, head: Operation, default: dict[str, Any]) -> list:
        """Every kernel that can run the conv (vec4: float4 over channels; scalar: one pixel
        per work-item, what a CPU's work-group vectorizer likes; pointwise, plane and rows:
        explicit float8 pixel vectors, the CPU defaults), co_block, x_block and vec:
        normalize() drops the keys a kernel does not read, so each distinct kernel is
        measured once; what a kernel refuses is pruned before measuring."""
        cog = graph.shape_of(head.result)[1] // head.groups.value.data
        return [("kernel", conv_kernels(head)),
                ("co_block", (1, 4) if is_depthwise(head) else tuple(b for b in (1, 2, 4, 8, 16) if cog % b == 0)),
                ("x_block", (1, 2, 4)), ("vec", (4, 8))]

    def normalize(self, cfg: dict[str, Any], default: dict[str, Any], head: Operation) -> dict[str, Any]:
        kernel = cfg.get("kernel")
        for key in ("co_block", "x_block", "vec"):  # keys the chosen kernel does not read
            if key not in KERNEL_KEYS.get(kernel, (key,)):
                cfg.pop(key, None)
        cog = graph.shape_of(head.result)[1] // head.groups.value.data
        if kernel == "vec4":  # float4s of channels: 4 or 8 (16: the other kernels only)
            cfg["co_block"] = min(max(cfg.get("co_block", 4), 4), 8)
        if kernel == "vec4" and cog == 1:
            cfg["co_block"] = 4  # depthwise: one float4 of channels
        if kernel in ("rows", "plane") and cog == 1:
            cfg["co_block"] = 1  # depthwise: one channel per work-item
        if kernel in ("scalar", "pointwise", "rows", "plane") and "co_block" in cfg:
            # the largest block of at most the chosen size that divides the channels per group
            cfg["co_block"] = max(b for b in (1, 2, 4, 8, 16) if b <= cfg["co_block"] and cog % b == 0)
        return cfg

    def work_items(self, head: Operation, cfg: dict[str, Any], kop: Operation) -> int:
        """Output pixels (/ x_block for vec4; / vec for the vector kernels) x channels / co_block."""
        n, co, h, w = graph.shape_of(head.results[0])
        kernel, vec = cfg.get("kernel"), cfg.get("vec", 8)
        depthwise = is_depthwise(head)
        blocks = n * cdiv(co, 1 if depthwise and kernel in ("plane", "rows") else cfg.get("co_block", 1))
        if kernel == "pointwise":  # vectors over the flattened plane
            return cdiv(h * w, vec * cfg.get("x_block", 1)) * blocks
        if kernel == "plane":
            return cdiv(h * w, vec) * blocks
        if kernel == "rows":
            return cdiv(w, vec) * h * blocks
        xb = cfg.get("x_block", 1) if kernel == "vec4" else 1
        return cdiv(w, xb) * h * blocks


CONV = Conv()


# --------------------------------------------------------------------------- lowering


class ConvolutionPattern(KernelPattern):
    """`kernel = "vec4"`: float4 OIHW4o weights packed now, `co_block` (4/8) output
    channels and `x_block` pixels per work-item; `"pointwise"` (1x1 convs): `x_block`
    vectors of `vec` pixels for `co_block` channels, weights packed per channel block;
    `"plane"` (stride 1, rows as wide as the input's): vectors of `vec` pixels of the
    flattened plane, `co_block` channels (depthwise: 1);
    `"rows"`: vectors of `vec` pixels along an output row, `co_block` channels; `"scalar"`: the generic kernel."""

    heads = (graph.Conv2dOp,)

    def lower(self, hb, group, cfg, loc):
        op: graph.Conv2dOp = group.head
        out_shape = graph.shape_of(op.result)
        x_shape, w_shape = graph.shape_of(op.input), graph.shape_of(op.weight)
        epi, extras = _epi_args(hb, group, out_shape)
        groups, depthwise = op.groups.value.data, is_depthwise(op)
        geometry = dict(
            x_shape=x_shape, w_shape=w_shape, out_shape=out_shape,
            strides=graph.ints(op.strides), pads=graph.ints(op.pads), dilations=graph.ints(op.dilations),
            groups=groups, has_bias=op.bias is not None, epilogue=epi,
        )
        scalars: list[int] = []
        error = CONV.check(op, cfg)
        if error is not None:
            raise LoweringError(f"{where(op)}: {error}")
        cb = cfg["co_block"]
        if cfg["kernel"] == "pointwise":
            spec = PointwiseSpec(channel_block=cb, pixel_block=cfg["x_block"], vector=cfg["vec"], **geometry)
            hint = (op.weight.owner.weight_name or "conv_weight") + f"_pw{cb}"
            w_buf = hb.weight(hint, PointwiseSpec.pack_weights(hb.constant_array(op.weight), cb))
        elif cfg["kernel"] == "rows":
            cb = 1 if depthwise else cb
            spec = RowsSpec(channel_block=cb, vector=cfg["vec"], **geometry)
            hint = (op.weight.owner.weight_name or "conv_weight") + f"_rw{cb}"
            w_buf = hb.weight(hint, pack_taps(hb.constant_array(op.weight), cb))
        elif cfg["kernel"] == "plane":
            cb = 1 if depthwise else cb
            spec = PlaneSpec(channel_block=cb, vector=cfg["vec"], **geometry)
            hint = (op.weight.owner.weight_name or "conv_weight") + f"_pl{cb}"
            w_buf = hb.weight(hint, pack_taps(hb.constant_array(op.weight), cb))
        elif cfg["kernel"] == "vec4":
            if not depthwise:  # input channels become a launch argument: one kernel for all of them
                scalars = [x_shape[1]]
                geometry["x_shape"] = (x_shape[0], 0, *x_shape[2:])
                geometry["w_shape"] = (w_shape[0], 0, *w_shape[2:])
            spec = Conv4Spec(channel_block=cb, pixel_block=cfg["x_block"], dynamic_ci=not depthwise, **geometry)
            hint = (op.weight.owner.weight_name or "conv_weight") + "_oihw4o"
            w_buf = hb.weight(hint, Conv4Spec.pack_weights(hb.constant_array(op.weight)))
        else:
            spec = ConvSpec(channel_block=cb, **geometry)
            w_buf = hb.buffer(op.weight)
        ins = [hb.buffer(op.input), w_buf] + ([hb.buffer(op.bias)] if op.bias is not None else [])
        hb.launch(spec, [*ins, *extras, hb.alloc(group.result)], loc, scalars)


Conv.patterns = (ConvolutionPattern(),)
