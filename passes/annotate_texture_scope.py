"""`annotate-texture-scope`: choose where each NCHW4c tensor lives.

A packed activation goes to a 2-D image when its producer can write images (concats,
which only copy, keep buffers), every consumer can read them, and an image mapping fits
the target's image limits; of the
mappings that fit (`texture`: height N*C4*H, width W; `texture-nhwc`: height N*C4,
width H*W) the most balanced is chosen (the `mapping` option forces one where it fits: on
the H200 neither was faster for depthwise convs, docs/bench/issue13/s3-texture-rows.log). Everything else stays a global buffer (TVM's
annotate_texture_storage makes the same decision). Packed constants stay buffers.
The choice is written into the `!texture.tensor` type.

Per node, the key `scope` of a `loc:<ONNX node name>` entry in the JSON overrides file
`overrides="PATH"` (select-kernel-config's file; the entry's other keys, and entries
without `scope`, are left to the passes that read them) decides where that node's result
tensors live: "buffer" keeps them in global buffers, "image" puts them in images (the
mapping as above), "texture" or "texture-nhwc" in images of that mapping. A node's result
tensors are the NCHW4c results of its ops (those at its location) that something outside
the node reads (a Winograd conv's V and M stay as decided above). An image request a
tensor cannot satisfy (no image support, a producer that cannot write images, a reader
that cannot read them, an extent over the target's image limits) is an error naming the
node and the reason; so is a `scope` entry whose node has no NCHW4c result in the module
(a node the file names that is not in the module is not: a shared tuning file may hold
other models' entries). `images=false` (the buffer plan, also compile()'s fallback when a
device cannot hold the images) keeps every tensor in a buffer, whatever the file says.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import Rewriter

from adreno_mlir.errors import CompileError, op_where
from adreno_mlir.pass_options import CheckedPass, option, target_option, target_profile
from adreno_mlir.target import TargetProfile
from adreno_mlir.dialects import graph, texture

MAPPINGS = ("texture", "texture-nhwc")
SCOPE_KEY = "scope"
"""The key of a `loc:NODE` overrides entry that annotate-texture-scope reads."""
SCOPES = ("image", "buffer", *MAPPINGS)


def reads_images(op: Operation, value: SSAValue) -> bool:
    """Whether `op` can read its operand `value` from an image (the op's `ImageOperands`
    trait says which operands: a convolution's weights and bias stay buffers)."""
    if isinstance(op, texture.UnpackOp):
        return True
    trait = op.get_trait(graph.ImageOperands)
    return trait is not None and trait.reads(op, value)


def writes_images(op: Operation) -> bool:
    """Whether `op` can write its result to an image (`ImageOperands(writes=True)`;
    concats, write-bound copies, keep buffers)."""
    if isinstance(op, texture.PackOp):
        return not isinstance(op.input.owner, graph.ConstantOp)
    trait = op.get_trait(graph.ImageOperands)
    return trait is not None and trait.writes


def choose_mapping(shape: tuple[int, ...], profile: TargetProfile, prefer: str = "auto") -> str | None:
    """The mapping of an image for `shape`: `prefer` if it fits, else (and for "auto") the
    most balanced one that fits the target's image limits; None if none fits."""
    if prefer != "auto" and profile.fits_image(*texture.image_extent(prefer, shape)):
        return prefer
    best, best_ratio = None, None
    for scope in MAPPINGS:
        w, h = texture.image_extent(scope, shape)
        if not profile.fits_image(w, h):
            continue
        ratio = max(w, h) / max(1, min(w, h))
        if best_ratio is None or ratio < best_ratio:
            best, best_ratio = scope, ratio
    return best


@dataclass(frozen=True)
class AnnotateTextureScope(CheckedPass):
    name = "annotate-texture-scope"

    target: str = target_option()
    """Target profile whose image limits apply (see adreno_mlir.target)."""
    images: bool = True
    """False forces the buffer plan: every tensor stays in a global buffer."""
    mapping: str = option("auto", choices=("auto", *MAPPINGS))
    """"auto": per tensor the most balanced mapping that fits; "texture" or "texture-nhwc":
    that mapping wherever it fits (a plan-level experiment: `texture` keeps a window's
    rows in neighbouring image rows, `texture-nhwc` a channel block in one row)."""

    overrides: str = option("", values="a string: the path of a JSON file of overrides (quote it)")
    """select-kernel-config's JSON overrides file: the key `scope` ("image", "buffer",
    "texture" or "texture-nhwc") of a `loc:NODE` entry decides that node's result tensors."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        profile = target_profile(self, op)
        chosen: dict[str, str] = {}
        if self.overrides:
            from adreno_mlir.passes.conv_winograd import node_choices

            chosen = node_choices(self.overrides, SCOPE_KEY, self.name, op)
            for node, value in chosen.items():
                if value not in SCOPES:
                    raise CompileError(f"{self.name}: {self.overrides}: entry 'loc:{node}' has "
                                       f'"{SCOPE_KEY}": {value!r}; it takes ' + ", ".join(f'"{s}"' for s in SCOPES))
        if not self.images:
            return
        found: set[str] = set()
        for fn in [f for f in op.body.block.ops if isinstance(f, func.FuncOp)]:
            for o in list(fn.body.block.ops):
                node = _node_of(o)
                request = chosen.get(node) if node is not None else None
                for r in list(o.results):
                    t = r.type
                    if not isinstance(t, texture.TextureTensorType):
                        continue
                    if request is not None and _leaves_node(r, node):
                        found.add(node)
                        if request == "buffer":
                            continue
                        if not t.is_image:
                            self.force_image(o, r, t, node, request, profile)
                        continue
                    if t.is_image:
                        continue
                    if not (profile.supports_images and writes_images(o)):
                        continue
                    if not r.uses or not all(reads_images(u.operation, r) for u in r.uses):
                        continue
                    scope = choose_mapping(t.shape, profile, self.mapping)
                    if scope is not None:
                        Rewriter.replace_value_with_new_type(r, t.with_memory(scope))
        named = {n for o in op.walk() if (n := _node_of(o)) is not None}
        for node in sorted((set(chosen) & named) - found):
            raise CompileError(f"{self.name}: {self.overrides}: entry 'loc:{node}' has "
                               f'"{SCOPE_KEY}": {chosen[node]!r}, but node {node} has no NCHW4c result tensor '
                               "(run convert-layout-nchw4c first; a node inside a graph.fused region is fused already)")

    def force_image(self, o: Operation, r: SSAValue, t: texture.TextureTensorType, node: str, request: str,
                    profile: TargetProfile) -> None:
        """Put `r` (a result of node `node`'s op `o`) in an image of `request`'s mapping, or
        raise a CompileError saying why it cannot be one."""
        where = f"{op_where(o)}: {self.overrides}: entry 'loc:{node}' asks for " \
                f'"{SCOPE_KEY}": "{request}", but'
        if not profile.supports_images:
            raise CompileError(f"{where} target profile {profile.name} has no image support")
        if not writes_images(o):
            raise CompileError(f"{where} {o.name} cannot write its result to an image")
        if not r.uses:
            raise CompileError(f"{where} its result is unused")
        readers = sorted({u.operation.name for u in r.uses if not reads_images(u.operation, r)})
        if readers:
            raise CompileError(f"{where} {', '.join(readers)} cannot read it from an image")
        mappings = MAPPINGS if request == "image" else (request,)
        fits = [m for m in mappings if profile.fits_image(*texture.image_extent(m, t.shape))]
        if not fits:
            extents = ", ".join(f"{m} {'x'.join(map(str, texture.image_extent(m, t.shape)))}" for m in mappings)
            raise CompileError(f"{where} shape {list(t.shape)} fits no image of {profile.name} "
                               f"(width x height: {extents}; limits {profile.max_image_width} x "
                               f"{profile.max_image_height})")
        prefer = request if request != "image" else self.mapping
        scope = choose_mapping(t.shape, profile, prefer)
        Rewriter.replace_value_with_new_type(r, t.with_memory(scope))


def _node_of(op: Operation) -> str | None:
    desc = getattr(op.location, "desc", None)
    return None if desc is None else desc.data


def _leaves_node(r: SSAValue, node: str) -> bool:
    """Whether something outside node `node` (an op at another location, a return) reads `r`."""
    return any(_node_of(u.operation) != node or isinstance(u.operation, func.ReturnOp) for u in r.uses)
