"""`annotate-texture-scope`: choose where each NCHW4c tensor lives.

A packed activation goes to a 2-D image when its producer can write images (concats,
which only copy, keep buffers), every consumer can read them, and an image mapping fits
the target's image limits; of the
mappings that fit (`texture`: height N*C4*H, width W; `texture-nhwc`: height N*C4,
width H*W) the most balanced is chosen (the `mapping` option forces one where it fits: on
the H200 neither was faster for depthwise convs, docs/bench/issue13/s3-texture-rows.log). Everything else stays a global buffer (TVM's
annotate_texture_storage makes the same decision). Packed constants stay buffers.
The choice is written into the `!texture.tensor` type.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import Rewriter

from adreno_mlir.pass_options import CheckedPass, option, target_option, target_profile
from adreno_mlir.target import TargetProfile
from adreno_mlir.dialects import graph, texture

MAPPINGS = ("texture", "texture-nhwc")


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

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        profile = target_profile(self, op)
        if not self.images:
            return
        for fn in [f for f in op.body.block.ops if isinstance(f, func.FuncOp)]:
            for o in list(fn.body.block.ops):
                for r in list(o.results):
                    t = r.type
                    if not isinstance(t, texture.TextureTensorType) or t.is_image:
                        continue
                    if not (profile.supports_images and writes_images(o)):
                        continue
                    if not r.uses or not all(reads_images(u.operation, r) for u in r.uses):
                        continue
                    scope = choose_mapping(t.shape, profile, self.mapping)
                    if scope is not None:
                        Rewriter.replace_value_with_new_type(r, t.with_memory(scope))
