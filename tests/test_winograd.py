"""Winograd convolution F(2x2,3x3) / F(4x4,3x3): numpy transforms, the texture ops, the
conv-winograd pass and the three kernels on the default OpenCL device (PoCL).

The kernels run through the lowering functions of `lowering/winograd_lowering.py`
with a small host (`ClHost`: the `buffer` / `alloc` / `launch` part of
convert-graph-to-opencl's host builder, executing each launch at once), on global
buffers and images, f32 and f16 storage.

Tolerances (max |ours - direct conv| / max |direct conv|, direct conv in float64):
- fp32: 1e-4 for F(2,3), 1e-3 for F(4,3) (its matrices hold 8 and 1/24: measured
  3e-7 to 6e-7 for F(2,3), 6e-6 to 1e-5 for F(4,3), 64 and 256 channels on PoCL);
- f16 storage (input and output half, V and M f32): 5e-2 (measured 3e-4 to 5e-4, the
  rounding of the stored output; with V and M in half too F(4,3) reached 9e-3, which
  is why the pass keeps them f32).
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, f16, f32, i64
from xdsl.ir import Block, SSAValue
from xdsl.utils.exceptions import VerifyException

from adreno_mlir.context import make_context
from adreno_mlir.dialects import graph, texture
from adreno_mlir.errors import CompileError
from adreno_mlir.lowering.expr import Bin, In, Src, Un
from adreno_mlir.lowering.kernels.packed import Packed, PackedEpilogue
from adreno_mlir.kernel_math.winograd import (
    pack_filter_transform,
    unpack_oihw4o,
    winograd_conv_reference,
    winograd_filter_transform,
    winograd_matrices,
    winograd_weight,
)
from adreno_mlir.lowering.opencl_printer import opencl_source
from adreno_mlir.lowering.packed_lowering import packed
from adreno_mlir.lowering.families import validate_config
from adreno_mlir.lowering.families.winograd import WinogradMatmulPattern
from adreno_mlir.lowering.groups import Group
from adreno_mlir.lowering.winograd_lowering import (
    lower_winograd_input,
    lower_winograd_output,
)
from adreno_mlir.graph_constants import constant_value, new_constant
from adreno_mlir.passes.conv_winograd import select_winograd_tile
from adreno_mlir.target import get_profile
from adreno_mlir.weights import WeightStore, store_of


def lower_winograd_matmul(hb, m, cfg, loc):
    """The Winograd product's lowering, with `cfg` completed as select-kernel-config does."""
    WinogradMatmulPattern().lower(hb, Group([m], None), validate_config(m, cfg), loc)  # the op alone, no region

cl = pytest.importorskip("pyopencl")

TOL_FP32 = {2: 1e-4, 4: 1e-3}
TOL_F16 = 5e-2


# --------------------------------------------------------------------------- numpy


def conv3x3_direct(x, w, b, pads):
    """NCHW x OIHW 3x3 stride-1 convolution in float64 (pads top, left, bottom, right)."""
    pt, pl, pb, pr = pads
    xp = np.pad(np.asarray(x, np.float64), ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    oh, ow = xp.shape[2] - 2, xp.shape[3] - 2
    y = np.zeros((x.shape[0], w.shape[0], oh, ow))
    for a in range(3):
        for c in range(3):
            y += np.einsum("nchw,kc->nkhw", xp[:, :, a:a + oh, c:c + ow], np.asarray(w, np.float64)[:, :, a, c])
    return y if b is None else y + np.asarray(b, np.float64).reshape(1, -1, 1, 1)


def scaled_error(got, ref) -> float:
    return float(np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-30))


def pack_nchw4c(x: np.ndarray) -> np.ndarray:
    n, c, h, w = x.shape
    c4 = -(-c // 4)
    out = np.zeros((n, c4 * 4, h, w), x.dtype)
    out[:, :c] = x
    return np.ascontiguousarray(out.reshape(n, c4, 4, h, w).transpose(0, 1, 3, 4, 2))


def unpack_nchw4c(p: np.ndarray, c: int) -> np.ndarray:
    n, c4, h, w, _ = p.shape
    return p.transpose(0, 1, 4, 2, 3).reshape(n, c4 * 4, h, w)[:, :c]


def pack_oihw4o(w: np.ndarray) -> np.ndarray:
    k, c = w.shape[:2]
    k4, c4 = -(-k // 4), -(-c // 4)
    full = np.zeros((k4 * 4, c4 * 4, 3, 3), np.float32)
    full[:k, :c] = w
    return np.ascontiguousarray(full.reshape(k4, 4, c4 * 4, 3, 3).transpose(0, 2, 3, 4, 1))


@pytest.mark.parametrize("tile", [2, 4])
@pytest.mark.parametrize("size, pads", [((7, 7), (0, 0, 0, 0)), ((9, 9), (0, 0, 0, 0)), ((7, 7), (1, 1, 1, 1)),
                                        ((13, 13), (1, 1, 1, 1)), ((13, 11), (0, 1, 1, 0)), ((8, 8), (1, 1, 1, 1))])
def test_reference_matches_direct_convolution(tile, size, pads):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 5, *size))
    w = rng.standard_normal((6, 5, 3, 3))
    b = rng.standard_normal(6)
    ref = conv3x3_direct(x, w, b, pads)
    assert scaled_error(winograd_conv_reference(x, w, b, pads, tile), ref) < 1e-12
    # in float32 the algorithm's own rounding stays well inside the kernels' tolerance
    y32 = winograd_conv_reference(x.astype(np.float32), w.astype(np.float32), b, pads, tile, np.float32)
    assert scaled_error(y32, ref) < TOL_FP32[tile] / 10


@pytest.mark.parametrize("tile", [2, 4])
def test_matrices_and_filter_layout(tile):
    bt, g, at = winograd_matrices(tile)
    alpha = tile + 2
    assert bt.shape == (alpha, alpha) and g.shape == (alpha, 3) and at.shape == (tile, alpha)
    # 1-D correctness: A^T [(G g) * (B^T d)] is the correlation of d with g
    rng = np.random.default_rng(1)
    d, gg = rng.standard_normal(alpha), rng.standard_normal(3)
    np.testing.assert_allclose(at @ ((g @ gg) * (bt @ d)), np.correlate(d, gg, "valid"), atol=1e-12)
    # layout [alpha^2, K/4, C, 4]: (xi, k4, c, j) = U[xi][4 k4 + j][c]; K padded with zeros
    w = rng.standard_normal((6, 8, 3, 3)).astype(np.float32)
    u = winograd_filter_transform(w, tile)
    up = pack_filter_transform(u)
    assert up.shape == (alpha * alpha, 2, 8, 4) and up.dtype == np.float32
    assert up[5, 1, 3, 1] == np.float32(u[5, 5, 3]) and (up[:, 1, :, 2:] == 0).all()
    np.testing.assert_array_equal(winograd_weight(pack_oihw4o(w), tile)[:, :, :8], up)
    np.testing.assert_array_equal(unpack_oihw4o(pack_oihw4o(w))[:6, :8], w)


# --------------------------------------------------------------------------- the ops


def _types(n=1, c4=2, k4=3, h=7, w=9, tile=2, pads=(1, 1, 1, 1), elem=f32):
    oh, ow = h + pads[0] + pads[2] - 2, w + pads[1] + pads[3] - 2
    p = texture.winograd_tile_count(n, oh, ow, tile)
    a2 = (tile + 2) ** 2
    make = texture.TextureTensorType.make
    return (make((n, c4, h, w, 4), elem), make((a2, c4, 1, p, 4)), make((a2, k4, 1, p, 4)),
            make((n, k4, oh, ow, 4), elem))


def _ops(tile=2, pads=(1, 1, 1, 1), bias=True, **kw):
    x_t, v_t, m_t, y_t = _types(tile=tile, pads=pads, **kw)
    block = Block(arg_types=[x_t])
    store = WeightStore()
    a2, c4, k4 = v_t.shape[0], x_t.shape[1], y_t.shape[1]
    u = new_constant(store, np.zeros((a2, k4, 4 * c4, 4), np.float32), "u")
    b = new_constant(store, np.zeros(4 * k4, np.float32), "b") if bias else None
    v = texture.WinogradInputOp(block.args[0], v_t, tile, pads)
    m = texture.WinogradMatmulOp(v.result, u.result, m_t)
    y = texture.WinogradOutputOp(m.result, None if b is None else b.result, y_t, tile)
    block.add_ops([u, *([b] if b else []), v, m, y])
    return v, m, y


def test_ops_verify_and_round_trip():
    from xdsl.parser import Parser

    text = """
    func.func @f(%x: !texture.tensor<1x2x7x9x4xf32, nchw4c, global>) -> !texture.tensor<1x3x7x9x4xf16, nchw4c, #texture.image<texture, h = 21, w = 9>> {
      %u = graph.constant @u : tensor<16x3x8x4xf32>
      %b = graph.constant @b : tensor<12xf32>
      %v = texture.winograd_input %x {tile = 2 : i64, pads = array<i64: 1, 1, 1, 1>} : !texture.tensor<1x2x7x9x4xf32, nchw4c, global> -> !texture.tensor<16x2x1x20x4xf32, nchw4c, #texture.image<texture, h = 32, w = 20>>
      %m = texture.winograd_matmul %v, %u : !texture.tensor<16x2x1x20x4xf32, nchw4c, #texture.image<texture, h = 32, w = 20>>, tensor<16x3x8x4xf32> -> !texture.tensor<16x3x1x20x4xf32, nchw4c, global>
      %y = texture.winograd_output %m, %b {tile = 2 : i64} : !texture.tensor<16x3x1x20x4xf32, nchw4c, global>, tensor<12xf32> -> !texture.tensor<1x3x7x9x4xf16, nchw4c, #texture.image<texture, h = 21, w = 9>>
      func.return %y : !texture.tensor<1x3x7x9x4xf16, nchw4c, #texture.image<texture, h = 21, w = 9>>
    }
    """
    module = Parser(make_context(), text).parse_module()
    module.verify()
    printed = str(module)
    assert "texture.winograd_input %x {tile = 2 : i64, pads = array<i64: 1, 1, 1, 1>}" in printed
    assert "texture.winograd_output %m, %b {tile = 2 : i64}" in printed
    again = Parser(make_context(), printed).parse_module()
    again.verify()
    assert str(again) == printed
    v, m, y = list(module.walk())[4:7]
    assert (v.tile_size, m.tile_size, y.tile_size) == (2, 2, 2)
    assert v.output_extent() == (7, 9)
    from adreno_mlir.dialects.traits import is_epilogue_head

    assert v.reads_images(v.input) and m.reads_images(m.input) and not m.reads_images(m.filter)
    assert y.reads_images(y.input) and not y.reads_images(y.bias)
    assert is_epilogue_head(y) and not is_epilogue_head(m)


def test_ops_without_bias_and_tile4():
    v, m, y = _ops(tile=4, pads=(0, 0, 0, 0), bias=False, h=10, w=10)
    for op in (v, m, y):
        op.verify()
    assert m.tile_size == 4 and v.result.type.shape == (36, 2, 1, 4, 4)


def test_op_verifiers_name_the_op_and_the_expected_shape():
    x_t, v_t, m_t, y_t = _types()
    v, m, y = _ops()
    # V with the wrong tile count
    bad = texture.WinogradInputOp(v.input, texture.TextureTensorType.make((16, 2, 1, 19, 4)), 2, (1, 1, 1, 1))
    with pytest.raises(VerifyException, match=r"'texture.winograd_input' result shape \[16, 2, 1, 19, 4\] does "
                                              r"not match the expected \[16, 2, 1, 20, 4\]"):
        bad.verify_()
    bad = texture.WinogradInputOp(v.input, v_t, 3, (1, 1, 1, 1))
    with pytest.raises(VerifyException, match="'texture.winograd_input' tile must be 2 or 4"):
        bad.verify_()
    bad = texture.WinogradInputOp(v.input, v_t, 2, (1, 1, 1))
    with pytest.raises(VerifyException, match="pads must be 4 values"):
        bad.verify_()
    # filter not matching V's channel blocks
    store = WeightStore()
    u = new_constant(store, np.zeros((16, 3, 4, 4), np.float32), "u")
    bad = texture.WinogradMatmulOp(v.result, u.result, m_t)
    with pytest.raises(VerifyException, match=r"'texture.winograd_matmul' filter shape \[16, 3, 4, 4\] does not "
                                              r"match the expected \[16, 3, 8, 4\]"):
        bad.verify_()
    bad = texture.WinogradMatmulOp(v.result, m.filter, texture.TextureTensorType.make((16, 2, 1, 20, 4)))
    with pytest.raises(VerifyException, match="'texture.winograd_matmul' result shape"):
        bad.verify_()
    # output extent inconsistent with M's tiles, bias of the wrong length
    bad = texture.WinogradOutputOp(m.result, None, texture.TextureTensorType.make((1, 3, 9, 9, 4)), 2)
    with pytest.raises(VerifyException, match=r"'texture.winograd_output' input shape .* \(alpha\^2 = 16, K4 = 3"):
        bad.verify_()
    b = new_constant(store, np.zeros(8, np.float32), "b")
    bad = texture.WinogradOutputOp(m.result, b.result, y_t, 2)
    with pytest.raises(VerifyException, match=r"'texture.winograd_output' bias shape \[8\] .* \[12\]"):
        bad.verify_()
    bad = texture.WinogradOutputOp(m.result, None, y_t, 4)
    with pytest.raises(VerifyException, match="alpha\\^2 = 36"):
        bad.verify_()


# --------------------------------------------------------------------------- running kernels


class ClHost:
    """The part of convert-graph-to-opencl's host builder that the Winograd lowering
    uses (`buffer`, `alloc`, `launch`), executing each launch right away with pyopencl."""

    _programs: dict[str, object] = {}

    def __init__(self, ctx, store: WeightStore, inputs: dict[SSAValue, np.ndarray]):
        self.ctx, self.queue, self.store = ctx, cl.CommandQueue(ctx), store
        self.mem: dict[SSAValue, object] = {}
        self.specs: list = []
        for v, arr in inputs.items():
            self.mem[v] = self._create(v.type, arr)

    def _create(self, t, arr: np.ndarray | None = None):
        mf = cl.mem_flags
        if isinstance(t, texture.TextureTensorType):
            dtype = np.float16 if t.element == f16 else np.float32
            if t.is_image:
                w, h = t.image_extent
                fmt = cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.HALF_FLOAT if dtype == np.float16
                                     else cl.channel_type.FLOAT)
                img = cl.create_image(self.ctx, mf.READ_WRITE, fmt, shape=(w, h))
                if arr is not None:
                    cl.enqueue_copy(self.queue, img, np.ascontiguousarray(arr.reshape(h, w, 4).astype(dtype)),
                                    origin=(0, 0), region=(w, h))
                return img
            size = t.num_elements
        else:
            dtype, size = np.float32, int(np.prod(graph.shape_of(t)))
        if arr is None:
            return cl.Buffer(self.ctx, mf.READ_WRITE, size * np.dtype(dtype).itemsize)
        return cl.Buffer(self.ctx, mf.READ_WRITE | mf.COPY_HOST_PTR,
                         hostbuf=np.ascontiguousarray(arr.astype(dtype).reshape(-1)))

    def buffer(self, value: SSAValue):
        if value not in self.mem:
            self.mem[value] = self._create(value.type, constant_value(value, self.store))
        return self.mem[value]

    weight_buffer = buffer  # weights in f32: these kernels compute in f32 (no `compute` key)

    def channel_offset(self, value: SSAValue) -> int:
        return 0  # no plan-memory here: every value has its own storage

    def alloc(self, value: SSAValue):
        self.mem[value] = self._create(value.type)
        return self.mem[value]

    def launch(self, spec, args, loc, scalars=()):
        grid = spec.global_size()
        spec = spec.shared()
        module = ModuleOp([spec.build("k")])
        module.verify()
        source = opencl_source(module)
        if source not in self._programs:
            self._programs[source] = cl.Program(self.ctx, source).build()
        kernel = cl.Kernel(self._programs[source], "k")
        for i, a in enumerate([*args, *[np.int32(s) for s in scalars]]):
            kernel.set_arg(i, a)
        cl.enqueue_nd_range_kernel(self.queue, kernel, grid, None)
        self.specs.append(spec)

    def read(self, value: SSAValue) -> np.ndarray:
        t = value.type
        dtype = np.float16 if t.element == f16 else np.float32
        if t.is_image:
            w, h = t.image_extent
            out = np.empty((h, w, 4), dtype)
            cl.enqueue_copy(self.queue, out, self.mem[value], origin=(0, 0), region=(w, h))
        else:
            out = np.empty(t.num_elements, dtype)
            cl.enqueue_copy(self.queue, out, self.mem[value])
        self.queue.finish()
        return out.astype(np.float32).reshape(t.shape)


@pytest.fixture(scope="module")
def cl_ctx():
    from adreno_mlir.runtime import default_context

    return default_context()


def _memory(kind: str, mapping: str = "texture"):
    return "global" if kind == "buf" else mapping


def run_winograd(cl_ctx, x, w, b, pads, tile, *, kind="buf", vm="buf", element=f32, vm_element=f32,
                 mapping="texture", residual=None, cfg=None):
    """Build the three ops for x (NCHW), w (OIHW 3x3), b, lower them through
    lowering/winograd_lowering.py and run them; returns the NCHW result and the host.
    With `residual`, the output kernel's epilogue is relu(conv) + residual."""
    n, c, h, wd = x.shape
    k = w.shape[0]
    c4, k4 = -(-c // 4), -(-k // 4)
    oh, ow = h + pads[0] + pads[2] - 2, wd + pads[1] + pads[3] - 2
    p = texture.winograd_tile_count(n, oh, ow, tile)
    a2 = (tile + 2) ** 2
    make = texture.TextureTensorType.make
    x_t = make((n, c4, h, wd, 4), element, "nchw4c", _memory(kind, mapping))
    y_t = make((n, k4, oh, ow, 4), element, "nchw4c", _memory(kind, mapping))
    v_t = make((a2, c4, 1, p, 4), vm_element, "nchw4c", _memory(vm))
    m_t = make((a2, k4, 1, p, 4), vm_element, "nchw4c", _memory(vm))
    block = Block(arg_types=[x_t, y_t])
    store = WeightStore()
    u = new_constant(store, winograd_weight(pack_oihw4o(w), tile), "u")
    b_pad = np.zeros(4 * k4, np.float32)
    b_pad[:k] = b
    bias = new_constant(store, b_pad, "b")
    v = texture.WinogradInputOp(block.args[0], v_t, tile, pads)
    m = texture.WinogradMatmulOp(v.result, u.result, m_t)
    y = texture.WinogradOutputOp(m.result, bias.result, y_t, tile)
    block.add_ops([u, bias, v, m, y])
    for op in (v, m, y):
        op.verify()
    inputs = {block.args[0]: pack_nchw4c(x.astype(np.float32))}
    if residual is not None:
        inputs[block.args[1]] = pack_nchw4c(residual.astype(np.float32))
    hb = ClHost(cl_ctx, store, inputs)
    lower_winograd_input(hb, v, {}, None)
    lower_winograd_matmul(hb, m, cfg or {}, None)
    out = packed(y.result)
    if residual is None:
        pepi, extras = PackedEpilogue(), []
    else:
        pepi = PackedEpilogue(Bin("add", Un("relu", Src()), In(0)), ((packed(block.args[1]), (False, False, False)),))
        extras = [hb.buffer(block.args[1])]
    lower_winograd_output(hb, y, y.result, out, pepi, extras, {}, None)
    return unpack_nchw4c(hb.read(y.result), k), hb


CASES = [  # (N, C, K, H, W, pads)
    (1, 8, 8, 7, 7, (1, 1, 1, 1)),      # 7x7 output
    (1, 12, 16, 13, 13, (1, 1, 1, 1)),  # 13x13 output
    (2, 8, 4, 9, 11, (0, 0, 0, 0)),     # batch 2, 7x9 output, no padding
    (1, 5, 6, 8, 8, (1, 1, 1, 1)),      # channels padded to 8
    (1, 4, 4, 4, 4, (1, 1, 1, 1)),      # 4x4 output: a single tile of 4
    (1, 4, 8, 3, 5, (0, 0, 0, 0)),      # 1x3 output: one tile row
]


@pytest.mark.parametrize("tile", [2, 4])
@pytest.mark.parametrize("case", CASES, ids=lambda c: "n{}c{}k{}_{}x{}_p{}".format(*c[:5], c[5][0]))
def test_kernels_fp32_buffers(cl_ctx, tile, case):
    n, c, k, h, w, pads = case
    rng = np.random.default_rng(3)
    x, wt, b = rng.standard_normal((n, c, h, w)), rng.standard_normal((k, c, 3, 3)), rng.standard_normal(k)
    got, _ = run_winograd(cl_ctx, x, wt, b, pads, tile)
    assert scaled_error(got, conv3x3_direct(x.astype(np.float32), wt.astype(np.float32), b, pads)) <= TOL_FP32[tile]


@pytest.mark.parametrize("tile", [2, 4])
@pytest.mark.parametrize("kind, vm, mapping", [("img", "img", "texture"), ("img", "buf", "texture-nhwc"),
                                               ("buf", "img", "texture")])
@pytest.mark.parametrize("element", [f32, f16], ids=["f32", "f16"])
def test_kernels_images_storage_and_epilogue(cl_ctx, tile, kind, vm, mapping, element):
    """Images and buffers in every position, f16 storage, and the fused epilogue
    relu(conv) + residual (the output kernel's PackedEpilogue)."""
    rng = np.random.default_rng(5)
    x, wt, b = rng.standard_normal((1, 8, 13, 11)), rng.standard_normal((8, 8, 3, 3)), rng.standard_normal(8)
    res = rng.standard_normal((1, 8, 13, 11))
    if element == f16:  # the stored input is half: compare against the conv of what the kernel reads
        x, res = x.astype(np.float16).astype(np.float64), res.astype(np.float16).astype(np.float64)
    got, _ = run_winograd(cl_ctx, x, wt, b, (1, 1, 1, 1), tile, kind=kind, vm=vm, element=element,
                          mapping=mapping, residual=res)
    ref = np.maximum(conv3x3_direct(x, wt.astype(np.float32), b.astype(np.float32), (1, 1, 1, 1)), 0) + res
    assert scaled_error(got, ref) <= (TOL_FP32[tile] if element == f32 else TOL_F16)


@pytest.mark.parametrize("cfg", [{"tiles_per_item": 1}, {"tiles_per_item": 4, "co_blocks": 2},
                                 {"tiles_per_item": 3, "co_blocks": 4}, {"co_blocks": 1, "work_group": (4, 4, 1)}])
def test_matmul_blocking(cl_ctx, cfg):
    """Tiles per work-item (also not dividing the 49 tiles: clamped reads, guarded
    writes) and output channel blocks per work-item."""
    rng = np.random.default_rng(6)
    x, wt, b = rng.standard_normal((1, 8, 14, 14)), rng.standard_normal((16, 8, 3, 3)), rng.standard_normal(16)
    got, hb = run_winograd(cl_ctx, x, wt, b, (1, 1, 1, 1), 2, cfg=cfg)
    spec = hb.specs[1]
    assert spec.tile_block == cfg.get("tiles_per_item", 1) and spec.channel_blocks == cfg.get("co_blocks", 1)
    assert scaled_error(got, conv3x3_direct(x, wt, b, (1, 1, 1, 1))) <= TOL_FP32[2]


def test_matmul_config_errors():
    _, m, _ = _ops()  # K4 = 3
    assert validate_config(m, {}) == {"tiles_per_item": 1, "co_blocks": 1}
    with pytest.raises(CompileError, match=r"'texture.winograd_matmul'.*co_blocks = 2 must divide the 3"):
        validate_config(m, {"co_blocks": 2})
    with pytest.raises(CompileError, match=r"tiles_per_item = 0 is not one of 1\.\.8"):
        validate_config(m, {"tiles_per_item": 0})
    with pytest.raises(CompileError, match="kernel_config key 'x_block' is not used by this kernel"):
        validate_config(m, {"x_block": 2})


def test_kernel_ir_stays_small():
    """The matmul loops over input channel blocks (scf.for), it is not unrolled: its
    IR does not grow with the channel count."""
    from adreno_mlir.lowering.kernels.winograd import WinogradMatmulSpec

    def size(c4):
        spec = WinogradMatmulSpec(out=Packed((16, 8, 1, 49)), src=Packed((16, c4, 1, 49)))
        return sum(1 for _ in spec.build("k").walk())

    assert abs(size(64) - size(2)) <= 4 and size(64) < 200  # a few constants differ


# --------------------------------------------------------------------------- the pass


def select_cases():
    gpu, cpu = get_profile("adreno-740"), get_profile("pocl-cpu")
    return [
        (32, 64, 56, 56, gpu, 0),    # thin input: transforms dominate on GPUs
        (64, 32, 56, 56, gpu, 0),
        (64, 64, 56, 56, gpu, 0),    # 64 channels at 56x56: direct was faster on the H200
        (64, 64, 112, 112, gpu, 4),  # ... but not at 112x112 (F4 1.39x)
        (128, 128, 56, 56, gpu, 4),  # large, sides multiples of 4
        (256, 256, 28, 28, gpu, 4),
        (128, 128, 14, 14, gpu, 2),  # 14 is not a multiple of 4
        (256, 256, 12, 12, gpu, 2),  # too few tiles of 4
        (512, 512, 7, 7, gpu, 2),    # small late layer: the direct kernel has too few work-items
        (512, 512, 3, 3, gpu, 0),    # fewer than 4 tiles
        (64, 64, 56, 56, cpu, 4),    # CPUs: F(4,3) wherever it applies
        (8, 8, 13, 13, cpu, 4),
        (4, 32, 112, 112, cpu, 0),
    ]


@pytest.mark.parametrize("cin, cout, oh, ow, profile, tile", select_cases())
def test_select_winograd_tile(cin, cout, oh, ow, profile, tile):
    assert select_winograd_tile(cin, cout, oh, ow, profile) == tile


def conv_block_model(channels: int, size: int, attrs: dict | None = None, stride: int = 1) -> onnx.ModelProto:
    """x -> Conv 3x3 (pad 1) + bias -> Relu -> Add x (residual)."""
    rng = np.random.default_rng(channels + size)
    w = (rng.standard_normal((channels, channels, 3, 3)) / np.sqrt(9 * channels)).astype(np.float32)
    b = rng.standard_normal(channels).astype(np.float32)
    out = -(-size // stride)
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                         strides=[stride, stride]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
    ]
    if stride == 1:
        nodes.append(helper.make_node("Add", ["r", "x"], ["y"], name="add"))
    else:
        nodes.append(helper.make_node("Identity", ["r"], ["y"], name="id"))
    g = helper.make_graph(
        nodes, "block",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, channels, size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, channels, out, out])],
        [helper.make_tensor("w", TensorProto.FLOAT, w.shape, w.reshape(-1)),
         helper.make_tensor("b", TensorProto.FLOAT, b.shape, b)],
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def run_passes(model, winograd: str, storage="f32", images=True, before_winograd=None):
    from adreno_mlir.frontend import import_onnx
    from adreno_mlir.pipeline import run_pipeline

    module = import_onnx(model)
    run_pipeline(make_context(), module, f"graph-canonicalize,fold-batchnorm,convert-layout-nchw4c{{storage={storage}}}")
    if before_winograd is not None:
        before_winograd(module)
    run_pipeline(make_context(), module, f"conv-winograd{{{winograd}}},"
                                         f"annotate-texture-scope{{target=pocl-cpu images={'true' if images else 'false'}}}")
    module.verify()
    return module


def ops_of(module, cls):
    return [o for o in module.walk() if isinstance(o, cls)]


@pytest.mark.parametrize("channels, size, target, expected", [
    (32, 14, "adreno-740", 0), (64, 16, "adreno-740", 0), (128, 9, "adreno-740", 2), (128, 14, "adreno-740", 2),
    (128, 16, "adreno-740", 4),
    (16, 9, "pocl-cpu", 4)])
def test_pass_auto_rule(channels, size, target, expected):
    module = run_passes(conv_block_model(channels, size), f"target={target}")
    outs = ops_of(module, texture.WinogradOutputOp)
    assert [o.tile_size for o in outs] == ([expected] if expected else [])
    assert len(ops_of(module, graph.Conv2dOp)) == (0 if expected else 1)


@pytest.mark.parametrize("tile", [2, 4])
@pytest.mark.parametrize("channels, size", [(16, 14), (64, 9), (48, 14)])
@pytest.mark.parametrize("storage, images", [("f32", False), ("f32", True), ("f16", True)])
def test_pass_numerics(cl_ctx, tile, channels, size, storage, images):
    """The pass on Conv 3x3 + Relu + residual Add: the filter constant is U of the
    packed weights, the three ops keep the conv's location, and running them (with the
    relu + add as the output kernel's epilogue) matches numpy."""
    model = conv_block_model(channels, size)
    module = run_passes(model, f"tile={tile}", storage, images)
    (v,), (m,), (y,) = (ops_of(module, c) for c in (texture.WinogradInputOp, texture.WinogradMatmulOp,
                                                     texture.WinogradOutputOp))
    assert not ops_of(module, graph.Conv2dOp)
    assert {o.location.desc.data for o in (v, m, y, m.filter.owner)} == {"conv"}
    assert y.result.type.is_image == images and v.result.type.element == f32
    store = store_of(module)
    init = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
    w, b = init["w"], init["b"]
    np.testing.assert_allclose(constant_value(m.filter, store)[:, :, :channels],
                               winograd_weight(pack_oihw4o(w), tile)[:, :, :channels], rtol=1e-6, atol=1e-7)
    rng = np.random.default_rng(7)
    x = rng.standard_normal((1, channels, size, size)).astype(np.float32)
    if storage == "f16":
        x = x.astype(np.float16).astype(np.float32)
    # the add reads the relu and the packed model input
    (add,) = [o for o in module.walk() if isinstance(o, graph.AddOp)]
    relu = add.lhs.owner
    assert isinstance(relu, graph.ReluOp) and relu.input is y.result
    hb = ClHost(cl_ctx, store, {v.input: pack_nchw4c(x)})
    lower_winograd_input(hb, v, {}, None)
    lower_winograd_matmul(hb, m, {}, None)
    pepi = PackedEpilogue(Bin("add", Un("relu", Src()), In(0)), ((packed(add.rhs), (False, False, False)),))
    lower_winograd_output(hb, y, add.result, packed(add.result), pepi, [hb.buffer(add.rhs)], {}, None)
    got = unpack_nchw4c(hb.read(add.result), channels)
    ref = np.maximum(conv3x3_direct(x, w, b, (1, 1, 1, 1)), 0) + x
    assert scaled_error(got, ref) <= (TOL_FP32[tile] if storage == "f32" else TOL_F16)


def _set_attr(value):
    def edit(module):
        (conv,) = ops_of(module, graph.Conv2dOp)
        conv.attributes["winograd"] = IntegerAttr(value, i64)
    return edit


def test_attribute_overrides_rule_and_option():
    model = conv_block_model(64, 16)  # the rule picks 4
    assert [o.tile_size for o in ops_of(run_passes(model, "", before_winograd=_set_attr(2)),
                                         texture.WinogradOutputOp)] == [2]
    kept = run_passes(model, "", before_winograd=_set_attr(0))
    assert not ops_of(kept, texture.WinogradOutputOp) and len(ops_of(kept, graph.Conv2dOp)) == 1
    assert not ops_of(run_passes(model, "tile=off"), texture.WinogradOutputOp)
    thin = conv_block_model(16, 14)  # the rule says direct (GPU target); the attribute wins
    assert [o.tile_size for o in ops_of(run_passes(thin, "tile=off", before_winograd=_set_attr(4)),
                                         texture.WinogradOutputOp)] == [4]


def test_attribute_errors():
    with pytest.raises(CompileError, match=r"'graph.conv2d' at loc\(\"conv\"\): attribute winograd must be 0"):
        run_passes(conv_block_model(32, 9), "", before_winograd=_set_attr(3))
    strided = conv_block_model(32, 9, stride=2)
    assert not ops_of(run_passes(strided, "tile=2"), texture.WinogradOutputOp)  # ineligible: untouched
    with pytest.raises(CompileError, match=r"\{winograd = 2\} asks for Winograd but stride \[2, 2\] is not 1"):
        run_passes(strided, "", before_winograd=_set_attr(2))
    with pytest.raises(CompileError, match="option tile must be a string or an integer, one of auto, 2, 4, off; got 3"):
        run_passes(conv_block_model(32, 9), "tile=3")


# --------------------------------------------------------------------------- the whole compiler


@pytest.mark.parametrize("target, precision, textures", [("pocl-cpu", "fp32", True), ("adreno-740", "fp32", False),
                                                         ("adreno-740", "fp16-acc32", True)])
def test_compile_matches_onnxruntime(target, precision, textures):
    """Conv 3x3 + Relu + residual Add (128 channels, 16x16) through `adreno_mlir.compile`:
    conv-winograd in the default pipeline (tile 4 by the rule on both targets), the
    relu and the add fused into the output transform's kernel."""
    import onnxruntime as ort

    import adreno_mlir

    model = conv_block_model(128, 16)
    cm = adreno_mlir.compile(model, target=target, textures=textures, precision=precision, layout="nchw4c")
    assert "winograd_input_f4" in cm.source and "winograd_output_f4_4c_relu_add" in cm.source
    x = np.random.default_rng(8).standard_normal((1, 128, 16, 16)).astype(np.float32)
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert scaled_error(cm.run({"x": x})["y"], ref) <= (TOL_FP32[4] if precision == "fp32" else TOL_F16)
