"""The kernel families: one object per kind of kernel, in one file each (base.py says what
a family holds). Everything that reads or writes a `kernel_config` goes through here:
select-kernel-config (`Family.choose`, `validate_config`), the tuner (`Family.space`,
`normalize`), analyze (`Family.work_items`), the override-file checker (`load_overrides`)
and the lowering (`lowering_config` and each family's `patterns`). None of them names a key.

| family | file | kernels |
|---|---|---|
| `conv4c` | conv4c.py | convolutions on NCHW4c tensors (direct, split-K partials, pool partials, on-load depthwise) |
| `conv` | conv.py | convolutions on NCHW tensors |
| `winograd_matmul` | winograd.py | the Winograd product |
| `reduce`, `norm`, `attention` | rows.py | global pools and reductions; LayerNorm and (Log)Softmax; fused attention |
| `gemm` | gemm.py | Gemm and MatMul |
| `qgemm` | qgemm.py | matrix products with quantized weights (MatMulNBits) |
| `gqa` | gqa.py | grouped-query attention over a decoder's KV cache (rotary + cache write, flash-decoding) |
| `plain` | base.py | every other kernel: `work_group` (and `compute`) only |
"""

from __future__ import annotations

from typing import Any

from xdsl.dialects.builtin import ArrayAttr, BoolAttr, DenseArrayBase, DictionaryAttr, IntegerAttr, StringAttr, i1, i64
from xdsl.ir import Attribute, Operation

from adreno_mlir.dialects import graph
from adreno_mlir.errors import CompileError, op_where, read_json
from adreno_mlir.lowering.families.base import (  # noqa: F401 - the families' vocabulary, re-exported
    COMMON_KEYS,
    COMPUTE,
    COMPUTE_TYPES,
    DEFAULT_RULES,
    PLAIN,
    WORK_GROUP,
    Family,
    Key,
    Rules,
    is_packed,
)
from adreno_mlir.lowering.families.conv import CONV
from adreno_mlir.lowering.families.conv4c import CONV4C
from adreno_mlir.lowering.families.gemm import GEMM
from adreno_mlir.lowering.families.gqa import GQA_FAMILY
from adreno_mlir.lowering.families.qgemm import QGEMM
from adreno_mlir.lowering.families.rows import ATTENTION, NORM, REDUCE
from adreno_mlir.lowering.families.winograd import WINOGRAD_MATMUL

FAMILIES: tuple[Family, ...] = (CONV4C, CONV, WINOGRAD_MATMUL, REDUCE, NORM, ATTENTION, GEMM, QGEMM, GQA_FAMILY)
"""Every family with schedule keys; a kernel none of them matches is `PLAIN`."""

CONFIG_ATTR = "kernel_config"

kernel_op = graph.kernel_op
head_of = graph.head_of
is_kernel = graph.is_kernel


def family_of(head: Operation) -> Family:
    """The family of the kernel headed by `head` (`PLAIN` when no family claims it)."""
    return next((f for f in FAMILIES if f.matches(head)), PLAIN)


def every_key() -> set[str]:
    """Every key some kernel reads: what an override file may name."""
    return {k.name for f in FAMILIES for k in f.keys} | set(COMMON_KEYS)


def patterns() -> tuple:
    """The conversion patterns of every family."""
    return tuple(p for f in FAMILIES for p in f.patterns)


# --------------------------------------------------------------------------- the attribute


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
    """The `kernel_config` of the kernel `op` belongs to, as Python values ({} if none)."""
    attr = kernel_op(op).attributes.get(CONFIG_ATTR)
    if attr is None:
        return {}
    if not isinstance(attr, DictionaryAttr):
        raise CompileError(f"{op_where(op)}: kernel_config must be a dictionary, got {attr}")
    return {k: _to_python(v) for k, v in attr.data.items()}


def set_config(op: Operation, cfg: dict[str, Any]) -> None:
    kernel_op(op).attributes[CONFIG_ATTR] = DictionaryAttr({k: _to_attr(v) for k, v in cfg.items()})


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
        tail = "".join("+" + o.name.removeprefix("graph.") for o in kop.ops[1:])
        if kop.pool_partials is not None:
            tail += f"+pool_partials{kop.pool_partials.tiles.value.data}"
    from adreno_mlir.lowering.families.conv4c import depthwise_load_of

    dw = depthwise_load_of(head)
    if dw is not None:  # the depthwise conv it computes on load is part of the kernel
        dhead = dw.head
        dprops = ";".join(f"{k}={v}" for k, v in sorted(dhead.properties.items()))
        tail += (f"+on_load({dhead.input.type},{dhead.weight.type}{{{dprops}}}"
                 + "".join("+" + o.name.removeprefix("graph.") for o in dw.ops[1:]) + ")")
    return f"{head.name}({types})->{kop.results[0].type}{{{props}}}{tail}"


# --------------------------------------------------------------------------- checking


def check_values(head: Operation, cfg: dict[str, Any]) -> None:
    """Every key of `cfg` is one the kernel headed by `head` reads, with an allowed value.
    Errors name the op, the key and the allowed values."""
    family = family_of(head)
    known = family.known(head)
    for k, v in cfg.items():
        if k not in known:
            raise CompileError(
                f"{op_where(head)}: kernel_config key '{k}' is not used by this kernel; known keys: "
                f"{', '.join(sorted(known))}")
        if k == WORK_GROUP:  # () = the driver's choice (an override of a default local size)
            if not (isinstance(v, tuple) and len(v) <= 3 and all(isinstance(d, int) and d >= 1 for d in v)):
                raise CompileError(f"{op_where(head)}: kernel_config work_group must be 0-3 positive ints, got {v}")
        elif k == COMPUTE:
            if v not in COMPUTE_TYPES:
                raise CompileError(f"{op_where(head)}: kernel_config compute must be \"f32\" or \"f16\", got {v!r}")
        else:
            key = family.key(k)
            if not key.allows(v):
                if all(isinstance(c, str) for c in key.choices):
                    raise CompileError(f"{op_where(head)}: kernel_config {k} must be one of {key.shown()}, got {v!r}")
                raise CompileError(f"{op_where(head)}: kernel_config {k} = {v!r} is not one of "
                                   f"{key.shown() if isinstance(key.choices, range) else list(key.choices)}")


def verify_config(kop: Operation) -> str | None:
    """What the IR verifier says of the `kernel_config` on `kop` (a region, or an op not in
    one yet): why it is wrong, or None. Every key must be one the kernel reads, with an
    allowed value, and the keys given must obey the family's rules (a partial config is
    legal IR: select-kernel-config completes it)."""
    attr = kop.attributes.get(CONFIG_ATTR)
    if attr is None:
        return None
    if isinstance(kop, graph.FusedOp) and not kop.ops:
        return None  # the region's own verifier reports an empty body
    try:
        cfg = config_of(kop)
        head = head_of(kop)
        check_values(head, cfg)
        error = family_of(head).check(head, cfg)
        if error is not None:
            return f"{op_where(head)}: {error}"
    except CompileError as e:
        return str(e)
    return None


def validate_config(op: Operation, cfg: dict[str, Any]) -> dict[str, Any]:
    """Check a configuration (complete or not) of the kernel `op` belongs to; returns it
    complete (what a hand-written config lacks from `DEFAULT_RULES`). Errors name the op,
    the key and the allowed values, or the rule it breaks."""
    head = head_of(kernel_op(op))
    check_values(head, cfg)
    family = family_of(head)
    full = family.complete(head, cfg)
    error = family.check(head, full)
    if error is not None:
        raise CompileError(f"{op_where(head)}: {error}")
    return full


def lowering_config(kop: Operation) -> dict[str, Any]:
    """The configuration the lowering reads for kernel `kop`: its `kernel_config`, which
    must be there and complete (select-kernel-config writes it; the lowering invents no
    defaults). A kernel of the `plain` family needs none."""
    head = head_of(kop)
    family = family_of(head)
    cfg = config_of(kop)
    if family.keys and CONFIG_ATTR not in kop.attributes:
        raise CompileError(f"{op_where(head)}: this {family.name} kernel has no kernel_config; run "
                           "select-kernel-config before convert-graph-to-opencl (it writes every kernel's)")
    check_values(head, cfg)
    missing = [k for k in family.applicable(head, cfg) if k not in cfg]
    if missing:
        raise CompileError(f"{op_where(head)}: kernel_config lacks {', '.join(missing)}; run select-kernel-config "
                           "(it completes a configuration written by hand) before convert-graph-to-opencl")
    error = family.check(head, cfg)
    if error is not None:
        raise CompileError(f"{op_where(head)}: {error}")
    return cfg


OTHER_PASS_KEYS = frozenset({"winograd", "scope"})
"""Keys a `loc:NODE` override entry may hold for passes other than select-kernel-config
(conv-winograd, annotate-texture-scope); select-kernel-config ignores them."""

MODEL_SCOPE = "@model:"
"""`loc:NODE@model:KEY`: an overrides entry for node NODE of the model whose `model_key`
(adreno_mlir.passes.conv_winograd) is KEY only. The tuner writes its per-node choices so (a
tuning database serves many models, and exported graphs share node names such as
`/conv1/Conv`); entries of other models are skipped without a word. A plain `loc:NODE`
entry applies to any model with that node. A `#WHAT` suffix after KEY (the tuner's
`loc:NODE@model:KEY#scope`) tells two entries of one node apart."""


def load_overrides(path: str) -> dict[str, dict[str, Any]]:
    """A JSON file of per-signature (or `loc:NODE`) configs, checked for keys no kernel reads
    (a `loc:` entry may also hold OTHER_PASS_KEYS)."""
    data = read_json(path, CompileError, "select-kernel-config: ", "overrides file ")
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise CompileError(
            f"select-kernel-config: {path} must be a JSON object mapping signatures (or 'loc:NODE') "
            "to objects of config keys")
    known = every_key()
    for entry, cfg in data.items():
        typos = sorted(set(cfg) - known - (OTHER_PASS_KEYS if entry.startswith("loc:") else set()))
        if typos:
            raise CompileError(f"select-kernel-config: {path}: entry '{entry}' has key(s) {', '.join(typos)} that no "
                               f"kernel reads; known keys: {', '.join(sorted(known))}")
    return {k: {kk: tuple(vv) if isinstance(vv, list) else vv for kk, vv in v.items()} for k, v in data.items()}
