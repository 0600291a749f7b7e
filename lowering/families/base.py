"""What every kernel family has: its keys, its defaults, its rules, its space, its lowering.

A kernel family (IREE would say: a lowering strategy) is the kind of kernel a `graph.fused`
region or a lone op becomes, e.g. "a convolution on NCHW4c tensors". A `Family` object
holds everything about its schedule in one place:

- `keys`: the `kernel_config` keys its kernels read, each a `Key` (name, allowed values,
  the value that means "not used", what it does);
- `matches(head)`: whether a kernel with this head op belongs to it;
- `defaults(head, rules, given)`: its configuration for the target's `Rules` (what
  select-kernel-config writes where no override says otherwise);
- `check(head, cfg)`: why a configuration cannot run this op (None if it can), beyond each
  key's allowed values: what the tuner prunes and the verifier refuses;
- `space(head, default)` and `normalize(cfg, space)`: what the tuner searches;
- `work_items(head, cfg)`: how many work-items a configuration launches (analyze, the
  tuner's roofline pruning);
- `patterns`: the conversion patterns that lower its kernels, reading the (complete)
  configuration.

Every kernel may also say `work_group` (a preferred local size; absent: the OpenCL driver
picks) and, on NCHW4c tensors, `compute` ("f32" or "f16"): `COMMON_KEYS`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from xdsl.ir import Operation

from adreno_mlir.dialects import graph, texture


@dataclass(frozen=True)
class Key:
    """One `kernel_config` key of a family."""

    name: str
    choices: tuple[Any, ...] | range
    """The values it takes (for ints, bools excluded; strings compare as strings)."""
    doc: str
    off: Any = None
    """The value that means the mechanism is not used (split_k 1, dw_tile 0, ...): what a
    complete configuration holds where the key does not apply."""

    def allows(self, value: Any) -> bool:
        if isinstance(self.choices, range) or all(isinstance(c, int) for c in self.choices):
            return isinstance(value, int) and not isinstance(value, bool) and value in self.choices
        return value in self.choices

    def shown(self) -> str:
        c = self.choices
        if isinstance(c, range):
            return f"{c.start}..{c.stop - 1}"
        return ", ".join(repr(v) if isinstance(v, str) else str(v) for v in c)


COMPUTE_TYPES = ("f32", "f16")
"""`compute`: the arithmetic of an NCHW4c kernel (absent: f32)."""

WORK_GROUP = "work_group"
"""The preferred local size of any kernel: 0-3 positive ints; absent or empty: the driver
picks. (A kernel whose schedule fixes its work-group ignores it.)"""
COMPUTE = "compute"
COMMON_KEYS = (WORK_GROUP, COMPUTE)


def is_packed(head: Operation) -> bool:
    """Whether the kernel headed by `head` works on NCHW4c tensors (those kernels can
    compute in half: `compute`)."""
    return isinstance(head, (texture.PackOp, texture.UnpackOp)) or any(
        isinstance(r.type, texture.TextureTensorType) for r in head.results)


def cdiv(a: int, b: int) -> int:
    return -(-a // max(1, b))


def numel(shape: Sequence[int]) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


def value_numel(value) -> int:
    """The logical element count of a value (its stored size where it has no logical shape)."""
    try:
        return numel(graph.shape_of(value))
    except Exception:  # noqa: BLE001 - a type without a logical shape: its stored size
        t = value.type
        return numel(t.shape) if isinstance(t, texture.TextureTensorType) else 1


def group_items(extent: int, most: int = 256) -> int:
    """Work-items per work-group reduction on a GPU: the most of 16, 32, ... `most` that
    still give each at least two elements of `extent`; 1 (a serial loop) under 32."""
    return max((n for n in (16, 32, 64, 128, 256) if n <= most and 2 * n <= extent), default=1)


@dataclass(frozen=True)
class Rules:
    """The target-level knobs the families' defaults read: the target profile's kind and
    select-kernel-config's options (each documented on the pass)."""

    gpu: bool
    conv_co_block: int
    conv_x_block: int
    vectorize: bool
    packed_co_blocks: int
    min_work_items: int
    split_k_items: int
    work_group: tuple[int, ...]
    compute: str = "f32"
    compute_units: int = 0
    """The target's compute units (0: unknown, as for the named Adreno profiles)."""
    max_work_group_size: int = 0
    """The target's largest work-group (0: unknown)."""
    local_memory_bytes: int = 0
    """The target's local memory per work-group (0: unknown)."""


DEFAULT_RULES = Rules(gpu=True, conv_co_block=8, conv_x_block=4, vectorize=True, packed_co_blocks=1,
                      min_work_items=16384, split_k_items=0, work_group=())
"""What a configuration written by hand lacks is filled from these rules (a GPU's, without
split-K) when select-kernel-config completes it: the schedule of a kernel configured
partly, the same on every target."""


class Family:
    """A kind of kernel and everything about its schedule (see the module docstring).
    Subclasses set `name`, `keys` and `patterns` and override what applies to them."""

    name: str = ""
    keys: tuple[Key, ...] = ()
    exclusive: tuple[tuple[str, str], ...] = ()
    """Pairs of keys that exclude each other: a given value of one (an override) that is
    not its `off` drops a default of the other to its `off` (`merge`)."""
    fixed_work_group: bool = False
    """Its kernels fix their own local size (a work-group per row): no `work_group` tuning."""
    patterns: tuple = ()
    """The conversion patterns (lowering/groups.KernelPattern) that lower its kernels."""

    # -- which kernels, which keys -------------------------------------------

    def matches(self, head: Operation) -> bool:
        return False

    def key(self, name: str) -> Key | None:
        return next((k for k in self.keys if k.name == name), None)

    def known(self, head: Operation) -> set[str]:
        """The keys a kernel headed by `head` reads."""
        return {k.name for k in self.keys} | {WORK_GROUP} | ({COMPUTE} if is_packed(head) else set())

    def applicable(self, head: Operation, cfg: dict[str, Any]) -> tuple[str, ...]:
        """The family keys that a complete configuration `cfg` of `head` holds (all, unless
        a family's choice of kernel makes some meaningless)."""
        return tuple(k.name for k in self.keys)

    # -- defaults ---------------------------------------------------------------

    def defaults(self, head: Operation, rules: Rules, given: dict[str, Any]) -> dict[str, Any]:
        """The family's keys for the target's `rules`; `given` (an override or a config
        written by hand) may steer them (a chosen NCHW convolution kernel)."""
        return {}

    def choose(self, head: Operation, rules: Rules, given: dict[str, Any] | None = None) -> dict[str, Any]:
        """The default configuration: the family's keys plus the common ones."""
        cfg = self.defaults(head, rules, given or {})
        if rules.work_group:
            cfg[WORK_GROUP] = rules.work_group
        if rules.compute != "f32" and is_packed(head):
            cfg[COMPUTE] = rules.compute
        return cfg

    def merge(self, defaults: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
        """`given` over `defaults`, dropping a default that excludes a given key (`exclusive`)."""
        full = {**defaults, **given}
        for a, b in self.exclusive + tuple((b, a) for a, b in self.exclusive):
            off_a, off_b = self.key(a).off, self.key(b).off
            if given.get(a, off_a) != off_a and b not in given and full.get(b, off_b) != off_b:
                full[b] = off_b
        return full

    def complete(self, head: Operation, cfg: dict[str, Any]) -> dict[str, Any]:
        """`cfg` with every applicable key: the merged defaults of DEFAULT_RULES beneath it,
        then each remaining key's `off` value."""
        full = self.merge(self.defaults(head, DEFAULT_RULES, cfg), cfg)
        for name in self.applicable(head, full):
            if name not in full:
                full[name] = self.key(name).off
        order = [k.name for k in self.keys] + list(COMMON_KEYS)  # printed in one order, the keys' own
        return {k: full[k] for k in sorted(full, key=lambda k: order.index(k) if k in order else len(order))}

    # -- legality ---------------------------------------------------------------

    def check(self, head: Operation, cfg: dict[str, Any]) -> str | None:
        """Why `cfg` cannot run `head` (beyond each key's allowed values), or None."""
        return None

    # -- tuning -----------------------------------------------------------------

    def space(self, head: Operation, default: dict[str, Any]) -> list[tuple[str, tuple[Any, ...]]]:
        """The tuner's dimensions (key, choices) besides `work_group`; None: nothing to tune."""
        return []

    def normalize(self, cfg: dict[str, Any], default: dict[str, Any], head: Operation) -> dict[str, Any]:
        """A point of the space as a configuration the lowering accepts (keys a choice
        makes meaningless dropped or fixed), so that equal kernels are one candidate."""
        return cfg

    # -- cost -------------------------------------------------------------------

    def work_items(self, head: Operation, cfg: dict[str, Any], kop: Operation) -> int:
        """Work-items launched: one per output element (per float4 on NCHW4c tensors)."""
        result = kop.results[0]
        if isinstance(result.type, texture.TextureTensorType):
            return cdiv(numel(result.type.shape), 4)
        return value_numel(result)

    def extra_bytes(self, head: Operation, cfg: dict[str, Any], out_bytes: int) -> int:
        """Memory traffic a configuration adds beyond reading the inputs and writing the
        output once (split-K's partial sums)."""
        return 0


class PlainFamily(Family):
    """Kernels with no schedule keys of their own (element-wise maps, pools, pack/unpack,
    data movement, ...): only `work_group` and `compute`."""

    name = "plain"

    def matches(self, head: Operation) -> bool:
        return True


PLAIN = PlainFamily()
