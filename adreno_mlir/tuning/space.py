"""The configuration space of one kernel: which `kernel_config` values the tuner tries.

A space is a few named dimensions (each a tuple of choices) read off the kernel's head op
and its default configuration, plus `normalize`, which turns any point of the product
into a configuration the lowering accepts (keys a choice makes meaningless are dropped,
e.g. register tiles under a split-K matmul), so two points that mean the same kernel are
one candidate. The default configuration is always a candidate, and the first one.

Each kernel's family (lowering/families/) says its dimensions (`Family.space`) and how a
point becomes a configuration (`Family.normalize`); every kernel but those that fix their own
work-group (a row each: reductions, normalisations, attention) also tries `work_group`: the
driver's choice or one of a few preferred local sizes.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from xdsl.ir import Operation

from adreno_mlir.lowering.families import config_of, family_of, head_of, kernel_op, kernel_signature

DRIVER = "driver"
"""The work_group choice that leaves the local size to the OpenCL driver (no key, or `()`
where a default local size must be overridden)."""

WORK_GROUPS: tuple[Any, ...] = (DRIVER, (64, 1, 1), (16, 4, 1), (8, 8, 1), (4, 4, 4))
"""Preferred local sizes tried (the lowering shrinks each axis to a divisor of the grid)."""

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
    head: Operation | None = field(default=None, compare=False, hash=False)
    """The kernel's head op (what the family's `normalize` reads)."""
    estimates: dict = field(default_factory=dict, compare=False, hash=False)
    """canonical config -> the roofline model's estimate (us), where the target has peaks."""
    footprint: frozenset = field(default=frozenset(), compare=False, hash=False)
    """A per-node choice's launch locations (ONNX nodes): the kernels its time sums, which
    are all the kernels it can change; choices whose footprints meet share no round."""

    def __getstate__(self) -> dict:
        """What goes to the tuner's process: the head op detached from its module (a copy
        whose operands are arguments of a block of their own). The op itself would take its
        whole module along, one nested pickle level per op (a RecursionError on Python 3.11
        for a model of MobileNetV2's size); `normalize` needs only its attributes and types."""
        state = dict(self.__dict__)
        if self.head is not None:
            state["head"] = _detached(self.head)
        return state

    def size(self) -> int:
        return len(self.candidates())

    def normalize(self, point: dict[str, Any]) -> dict[str, Any]:
        """The full configuration for a point of the dimensions' product."""
        cfg = {**self.default, **point}
        if self.kind == NODE_KIND:
            return cfg
        if cfg.get("work_group") == DRIVER:
            # An override cannot delete a key, and one that picks another kernel starts
            # from that kernel's defaults (which may have a local size): the driver's
            # choice is written `()`, except for the default kernel without a local size
            # (so that the default itself is one candidate, not two).
            if cfg.get("kernel") == self.default.get("kernel") and "work_group" not in self.default:
                cfg.pop("work_group")
            else:
                cfg["work_group"] = ()
        return family_named(self.kind).normalize(cfg, self.default, self.head)

    def candidates(self, include_pruned: bool = False) -> list[dict[str, Any]]:
        """Every distinct configuration, the default first (without the pruned ones)."""
        from adreno_mlir.tuning.db import canonical

        every = self._every()
        if include_pruned or not self.pruned:
            return list(every)
        return [every[0], *(c for c in every[1:] if canonical(c) not in self.pruned)]

    def _every(self) -> list[dict[str, Any]]:
        """The distinct points of the dimensions' product, the default first, computed once
        per space (a matmul's product has tens of thousands of points for a few hundred
        configurations; `with_pruning`'s copy keeps the list)."""
        every = self.__dict__.get("_every_cache")
        if every is None:
            seen = {_key(self.default): self.default}
            keys = [k for k, _ in self.dims]
            for values in itertools.product(*(c for _, c in self.dims)):
                cfg = self.normalize(dict(zip(keys, values)))
                seen.setdefault(_key(cfg), cfg)
            every = list(seen.values())
            object.__setattr__(self, "_every_cache", every)
        return every

    def with_pruning(self, op: Operation, profile) -> Space:
        """This space without the candidates the lowering would refuse (checked now, not by
        a compile) and those the roofline model puts `PRUNE_FACTOR` times above the default."""
        from dataclasses import replace

        from adreno_mlir.errors import CompileError
        from adreno_mlir.lowering.families import validate_config
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
        pruned_space = replace(self, pruned=frozenset(pruned), estimates=estimates)
        object.__setattr__(pruned_space, "_every_cache", self._every())
        return pruned_space


PRUNE_FACTOR = 3.0
"""Candidates the roofline model predicts this many times slower than the default are not
measured."""


NODE_KIND = "node"
"""The kind of a per-node choice's space (`node_space`): not a kernel family."""


def node_space(node: str, model_key: str, key: str, default: Any, choices: tuple,
               footprint: frozenset = frozenset()) -> Space:
    """The space of one per-node choice of an earlier pass (`key`: "winograd" or "scope")
    for ONNX node `node`: its signature is the model-scoped overrides key
    `loc:NODE@model:KEY` (lowering.families.MODEL_SCOPE), so the tuning database's entry
    applies to this model only, and its candidates are `{key: choice}`. Both keys of a node
    are one entry of the overrides file, but two searches here: the signature of a `scope`
    search says so (`loc:NODE@model:KEY#scope`, merged into the node's entry when written)."""
    from adreno_mlir.lowering.families import MODEL_SCOPE

    sig = f"loc:{node}{MODEL_SCOPE}{model_key}" + ("" if key == "winograd" else f"#{key}")
    return Space(sig, NODE_KIND, {key: default}, ((key, tuple(choices)),), name=node, footprint=frozenset(footprint))


def _detached(op: Operation) -> Operation:
    """A copy of `op` that references nothing of its module: its operands are arguments of
    a new block, of the same types (its regions, if any, are copied along)."""
    from xdsl.ir import Block

    block = Block(arg_types=[v.type for v in op.operands])
    mapper = {}
    for v, a in zip(op.operands, block.args):
        mapper.setdefault(v, a)
    return op.clone(value_mapper=mapper)


def _key(cfg: dict[str, Any]) -> tuple:
    return tuple(sorted(cfg.items()))


def family_named(name: str):
    from adreno_mlir.lowering.families import FAMILIES

    return next(f for f in FAMILIES if f.name == name)


def space_of(op: Operation, gpu: bool) -> Space | None:
    """The space of the kernel `op` heads (after select-kernel-config), or None for
    kernels with nothing to tune."""
    kop = kernel_op(op)
    head = head_of(kop)
    family = family_of(head)
    if not family.keys:
        return None
    default = config_of(kop)
    dims = list(family.space(head, default))
    if not family.fixed_work_group:
        dims.append(("work_group", WORK_GROUPS))
    dims = [(k, c) for k, c in dims if c]
    desc = getattr(kop.location, "desc", None)
    return Space(kernel_signature(kop), family.name, default, tuple(dims), desc.data if desc is not None else "",
                 head=head)
