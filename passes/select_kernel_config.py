"""`select-kernel-config`: every schedule decision of a kernel, as an attribute in the IR.

Each op that becomes a kernel (a `graph.fused` region, or a lone compute op: `graph.is_kernel`)
gets a `kernel_config` dictionary (IREE's `lowering_config`), chosen here from the target
profile by the kernel's family (lowering/families/: one file per family says its keys, their
defaults, their rules and what the tuner searches). The lowering only reads it, so a schedule
can be inspected in printed IR and changed by editing it:

    %y = graph.fused {kernel_config = {x_block = 2 : i64, co_blocks = 1 : i64, split_k = 4 : i64, ...}} -> ...

The configuration written is complete: every key the kernel's family reads. A configuration
written by hand (or an override) may set only some keys; the others are completed from the
defaults (a hand-written config from `DEFAULT_RULES`, an override from the target's), and the
result is checked (unknown keys, values out of range and configurations the kernel cannot
run are errors naming the op and the key).

`compute = "f16"` is what precision="fp16" means (the pass option `compute=f16` gives it
to every NCHW4c kernel); set it to "f32" on one op to keep that layer in fp32 arithmetic
(its stored activations stay as convert-layout-nchw4c typed them).

A JSON file of overrides (`overrides="PATH"`, quoted in a pipeline string; what an
autotuner writes) replaces any default: `{"<signature>": {"x_block": 2}, "loc:/layer4/layer4.0/conv1/Conv": {...}}`,
keyed by the op's signature (`kernel_signature`: op kind, operand and result types,
attributes, fused epilogue) or by `loc:` plus the ONNX node name of any op in the
kernel. Node names win over signatures. Entries that match no op are reported (a
warning: a shared tuning file may hold other models' entries). A `loc:` entry may also hold
`winograd` and `scope`: other passes read those (conv-winograd, annotate-texture-scope), this
one ignores them.

A cost model (`cost_model="PATH"`, an artifact of adreno_mlir.tuning.cost_model) chooses the
config of every kernel no override entry matched and no hand-written config fixed: the
candidate of the tuner's space (adreno_mlir.tuning.space, without those the lowering refuses)
with the lowest predicted time, where it beats the default by the artifact's margin.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern

from adreno_mlir.dialects import graph
from adreno_mlir.errors import CompileError
from adreno_mlir.lowering.families import (  # noqa: F401 - the config API, re-exported where users look for it
    CONFIG_ATTR,
    COMPUTE_TYPES,
    DEFAULT_RULES,
    MODEL_SCOPE,
    OTHER_PASS_KEYS,
    Rules,
    config_of,
    family_of,
    head_of,
    is_kernel,
    kernel_op,
    kernel_signature,
    load_overrides,
    set_config,
    validate_config,
)
from adreno_mlir.pass_options import CheckedPass, option, target_option, target_profile


class SelectConfig(RewritePattern):
    def __init__(self, rules: Rules, overrides: dict[str, dict[str, Any]], source: str = "",
                 cost_model=None, profile=None):
        self.rules = rules
        self.overrides = overrides
        self.source = source
        self.cost_model = cost_model
        """An adreno_mlir.tuning.cost_model.CostModel, or None."""
        self.profile = profile
        self.used: dict[str, set[str]] = {}
        """Override entries that matched a kernel, with the config keys applied from each."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not is_kernel(op):
            return
        head = head_of(op)
        family = family_of(head)
        if CONFIG_ATTR in op.attributes:  # a config written by hand (or by an earlier run) is kept, completed
            full = validate_config(op, config_of(op))
            if full != config_of(op):
                set_config(op, full)
                rewriter.notify_op_modified(op)
            return
        cfg = family.choose(head, self.rules)
        keys: list[str] = []
        if self.overrides:  # signatures print types: only worth it when there is a file to match
            members = op.ops if isinstance(op, graph.FusedOp) else [op]
            keys = [kernel_signature(op)] + [
                f"loc:{d.data}" for d in (getattr(m.location, "desc", None) for m in [op, *members]) if d is not None]
        known = family.known(head)
        overridden: dict[str, Any] = {}
        for key in dict.fromkeys(keys):  # the signature first, then node names (more specific)
            if key not in self.overrides:
                continue
            entry = self.overrides[key]
            if key.startswith("loc:"):
                # One ONNX node may become several kernels (a Winograd conv becomes three):
                # each takes the keys it reads; keys no kernel of the node read are reported.
                entry = {k: v for k, v in entry.items() if k in known}
                self.used.setdefault(key, set()).update(OTHER_PASS_KEYS & set(self.overrides[key]))
            self.used.setdefault(key, set()).update(entry)
            overridden.update(entry)
        if overridden:  # the defaults given the override (e.g. those of the NCHW conv kernel it picks)
            cfg = family.merge(family.choose(head, self.rules, overridden), overridden)
        if not cfg and not family.keys:
            return  # nothing to say: the driver's work-group, f32
        try:
            cfg = validate_config(op, cfg)  # complete: what the lowering reads
        except CompileError as e:
            if self.source and any(k in self.overrides for k in keys):
                raise CompileError(f"{e} (config from overrides file {self.source})") from None
            raise
        set_config(op, cfg)
        if self.cost_model is not None and not overridden:
            cfg = self.learned(op, cfg)
            set_config(op, cfg)
        rewriter.notify_op_modified(op)

    def learned(self, op: Operation, default: dict[str, Any]) -> dict[str, Any]:
        """The cost model's choice among the tuner's candidates for `op` (configured with
        `default`), checked as an override is."""
        from adreno_mlir.tuning.db import canonical
        from adreno_mlir.tuning.space import space_of

        space = space_of(op, self.rules.gpu)
        if space is None:
            return default
        # Kernels of one signature and default (a transformer's twelve layers) choose alike:
        # the search over the space (thousands of points for a matmul) runs once per process.
        memo = (self.cost_model.path, self.profile.name, space.signature, canonical(space.default))
        if memo not in _LEARNED:
            candidates = space.with_pruning(op, self.profile).candidates()[1:]  # the default is the first
            chosen, _ = self.cost_model.choose(space.signature, space.default, candidates)
            _LEARNED[memo] = None if chosen is space.default else dict(chosen)
        chosen = _LEARNED[memo]
        if chosen is None:
            return default
        try:
            return validate_config(op, dict(chosen))
        except CompileError as e:
            raise CompileError(f"{e} (config chosen by cost model {self.cost_model.path})") from None


_LEARNED: dict[tuple, dict[str, Any] | None] = {}
"""(cost model file, profile, signature, default) -> the cost model's choice (None: the
default): `SelectConfig.learned`'s memo (an artifact is read-only once loaded)."""


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
    cost_model: str = option("", values="a string: the path of a cost-model artifact (JSON, "
                                         "adreno_mlir.tuning.cost_model; quote it)")
    """Cost model choosing the config of kernels without an override ("": off, the rules)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        profile = target_profile(self, op)  # the other options are checked when the pass is made
        rules = Rules(profile.is_gpu, self.conv_co_block, self.conv_x_block, self.vectorize,
                      self.packed_co_blocks, self.min_work_items, self.split_k_items, tuple(self.work_group),
                      self.compute, profile.compute_units, profile.max_work_group_size, profile.local_memory_bytes)
        overrides = load_overrides(self.overrides) if self.overrides else {}
        model = None
        if self.cost_model:
            from adreno_mlir.tuning.cost_model import load

            model = load(self.cost_model)
            if not model.matches_profile(profile.name):
                raise CompileError(f"select-kernel-config: cost model {self.cost_model} is for target profile "
                                   f"'{model.profile}' (devices matching '{model.device_match}'), not "
                                   f"'{profile.name}': train one for this device (docs/tuning.md)")
        pattern = SelectConfig(rules, overrides, self.overrides, model, profile)
        PatternRewriteWalker(pattern, apply_recursively=False).rewrite_module(op)
        import warnings

        # A model-scoped node entry (`loc:NODE@model:KEY`, the tuner's per-node choices) holding
        # only other passes' keys is theirs to match or skip (conv_winograd.node_choices).
        unused = [k for k in overrides if k not in pattern.used
                  and not (MODEL_SCOPE in k and set(overrides[k]) <= OTHER_PASS_KEYS)]
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
