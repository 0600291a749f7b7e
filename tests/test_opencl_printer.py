"""The opencl dialect's C printer: kernels built with the Python API, printed,
compiled with pyopencl on the default device (PoCL CPU here) and checked against
numpy."""

from __future__ import annotations

import io

import numpy as np
import pytest
from xdsl.builder import ImplicitBuilder
from xdsl.dialects import arith, math, scf
from xdsl.dialects.builtin import FloatAttr, ModuleOp, f32, i1, i32
from xdsl.ir import Block, Region
from xdsl.utils.exceptions import DiagnosticException

from adreno_mlir.dialects import opencl
from adreno_mlir.lowering.opencl_printer import OpenCLTarget, opencl_source, print_opencl

cl = pytest.importorskip("pyopencl")

GPTR = opencl.PointerType("global", f32)


def c_i32(v: int):
    return arith.ConstantOp.from_int_and_width(v, i32).result


def c_f32(v: float):
    return arith.ConstantOp(FloatAttr(v, f32)).result


@pytest.fixture(scope="module")
def ctx():
    # PoCL comes with the project's dependencies: no device is a failure, not a skip.
    return cl.create_some_context(interactive=False)


def build(ctx, module: ModuleOp):
    module.verify()
    src = opencl_source(module)
    return cl.Program(ctx, src).build(), src


def vector_add_module() -> ModuleOp:
    """out[j] = a[j] * alpha + b[j] for a grid-stride loop over j, plus a per-item
    reduction loop with an iter_arg: sums[i] = sum_k a[i*4 + k]."""
    k = opencl.KernelOp(
        "vadd",
        [("a", GPTR), ("b", GPTR), ("out", GPTR), ("sums", GPTR), ("n", i32), ("alpha", f32)],
    )
    a, b, out, sums, n, alpha = k.args
    with ImplicitBuilder(k.body.block):
        gid = opencl.GlobalIdOp(0).result
        gsz = opencl.GlobalSizeOp(0).result
        gid.name_hint = "gid"
        body = Block(arg_types=[i32])
        j = body.args[0]
        j.name_hint = "j"
        with ImplicitBuilder(body):
            x = opencl.LoadOp(a, j).result
            y = opencl.LoadOp(b, j).result
            s = arith.AddfOp(arith.MulfOp(x, alpha), y).result
            opencl.StoreOp(s, out, j)
            scf.YieldOp()
        scf.ForOp(gid, n, gsz, [], Region(body))
        # reduction: sums[gid] = sum_{k<4} a[gid*4+k]  (only for gid < n/4)
        four = c_i32(4)
        nq = arith.DivSIOp(n, four).result
        inb = arith.CmpiOp(gid, nq, "slt").result
        then = Block()
        with ImplicitBuilder(then):
            rb = Block(arg_types=[i32, f32])
            kk, acc = rb.args
            kk.name_hint, acc.name_hint = "k", "acc"
            with ImplicitBuilder(rb):
                idx = arith.AddiOp(arith.MuliOp(gid, four), kk).result
                v = opencl.LoadOp(a, idx).result
                scf.YieldOp(arith.AddfOp(acc, v))
            loop = scf.ForOp(c_i32(0), c_i32(4), c_i32(1), [c_f32(0.0)], Region(rb))
            opencl.StoreOp(loop.res[0], sums, gid)
            scf.YieldOp()
        scf.IfOp(inb, [], Region(then))
        opencl.ReturnOp()
    return ModuleOp([k])


def test_vector_add_with_loops(ctx):
    module = vector_add_module()
    prg, src = build(ctx, module)
    assert "__kernel void vadd(" in src
    assert "float acc = 0.0f;" in src
    assert "for (int k = 0; k < 4; ++k) {" in src
    queue = cl.CommandQueue(ctx)
    rng = np.random.default_rng(0)
    n = 1000
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    alpha = np.float32(0.75)
    mf = cl.mem_flags
    a_d = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a)
    b_d = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=b)
    out_d = cl.Buffer(ctx, mf.WRITE_ONLY, a.nbytes)
    sums_d = cl.Buffer(ctx, mf.WRITE_ONLY, a.nbytes // 4)
    # fewer work-items than elements, so the grid-stride loop runs several times
    prg.vadd(queue, (256,), None, a_d, b_d, out_d, sums_d, np.int32(n), alpha)
    out = np.empty_like(a)
    sums = np.empty(n // 4, np.float32)
    cl.enqueue_copy(queue, out, out_d)
    cl.enqueue_copy(queue, sums, sums_d)
    queue.finish()
    np.testing.assert_allclose(out, a * alpha + b, rtol=1e-6)
    ref = a.reshape(-1, 4)
    ref_sums = ((ref[:, 0] + ref[:, 1]) + ref[:, 2]) + ref[:, 3]
    np.testing.assert_allclose(sums, ref_sums, rtol=1e-6, atol=1e-6)


def image_module() -> ModuleOp:
    """out(x, y) = max(in(x, y) * scale, 0) via float4 helpers; lane 3 kept as is."""
    k = opencl.KernelOp(
        "img_relu_scale",
        [
            ("src", opencl.Image2DType("read")),
            ("dst", opencl.Image2DType("write")),
            ("scale", f32),
        ],
    )
    src, dst, scale = k.args
    with ImplicitBuilder(k.body.block):
        x = opencl.GlobalIdOp(0).result
        y = opencl.GlobalIdOp(1).result
        x.name_hint, y.name_hint = "x", "y"
        px = opencl.ReadImageOp(src, x, y).result
        px.name_hint = "px"
        sv = opencl.VecSplatOp(scale).result
        scaled = arith.MulfOp(px, sv).result
        zero = opencl.VecSplatOp(c_f32(0.0)).result
        relu = arith.MaximumfOp(scaled, zero).result
        relu.name_hint = "r"
        lanes = [opencl.VecExtractOp(relu, i).result for i in range(3)]
        alpha = opencl.VecExtractOp(px, 3).result
        res = opencl.VecMakeOp([*lanes, alpha]).result
        opencl.WriteImageOp(dst, x, y, res)
        opencl.ReturnOp()
    return ModuleOp([k])


def test_image_kernel(ctx):
    module = image_module()
    prg, src = build(ctx, module)
    assert "__constant sampler_t smp" in src
    assert "read_imagef(src, smp, (int2)(x, y))" in src
    queue = cl.CommandQueue(ctx)
    w, h = 13, 7
    rng = np.random.default_rng(1)
    data = rng.standard_normal((h, w, 4)).astype(np.float32)
    fmt = cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.FLOAT)
    mf = cl.mem_flags
    img_in = cl.create_image(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, fmt, shape=(w, h), hostbuf=data)
    img_out = cl.create_image(ctx, mf.WRITE_ONLY, fmt, shape=(w, h))
    scale = np.float32(1.5)
    prg.img_relu_scale(queue, (w, h), None, img_in, img_out, scale)
    out = np.empty_like(data)
    cl.enqueue_copy(queue, out, img_out, origin=(0, 0), region=(w, h))
    queue.finish()
    ref = np.maximum(data * scale, 0)
    ref[..., 3] = data[..., 3]
    np.testing.assert_allclose(out, ref, rtol=1e-6)


def test_local_memory_vload_and_math(ctx):
    """vload4/vstore4, a __local tile with a barrier, math ops and a select."""
    k = opencl.KernelOp(
        "tile", [("a", GPTR), ("out", GPTR)], reqd_work_group_size=[16, 1, 1]
    )
    a, out = k.args
    with ImplicitBuilder(k.body.block):
        lid = opencl.LocalIdOp(0).result
        grp = opencl.GroupIdOp(0).result
        lsz = opencl.LocalSizeOp(0).result
        gid = opencl.GlobalIdOp(0).result
        tile = opencl.LocalAllocOp(16).result
        tile.name_hint = "tile"
        v = opencl.VLoad4Op(a, gid).result
        e = math.ExpOp(opencl.VecExtractOp(v, 1)).result
        t = math.TanhOp(opencl.VecExtractOp(v, 2)).result
        s = math.FmaOp(e, t, opencl.VecExtractOp(v, 0)).result
        neg = arith.CmpfOp(s, c_f32(0.0), "olt").result
        sel = arith.SelectOp(neg, arith.NegfOp(s), s).result
        opencl.StoreOp(sel, tile, lid)
        opencl.BarrierOp("local")
        # reversed neighbour within the work-group
        rev = arith.SubiOp(arith.SubiOp(lsz, c_i32(1)), lid).result
        other = opencl.LoadOp(tile, rev).result
        base = arith.MuliOp(grp, lsz).result
        w = opencl.VecMakeOp([other, sel, arith.SIToFPOp(lid, f32).result, c_f32(-2.5)])
        opencl.VStore4Op(w, out, arith.AddiOp(base, lid))
        opencl.ReturnOp()
    prg, src = build(ctx, ModuleOp([k]))
    assert "__local float tile[16];" in src
    assert "reqd_work_group_size(16, 1, 1)" in src
    queue = cl.CommandQueue(ctx)
    n = 64
    a_h = np.random.default_rng(2).standard_normal(4 * n).astype(np.float32)
    mf = cl.mem_flags
    a_d = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a_h)
    out_d = cl.Buffer(ctx, mf.WRITE_ONLY, a_h.nbytes)
    prg.tile(queue, (n,), (16,), a_d, out_d)
    out = np.empty_like(a_h)
    cl.enqueue_copy(queue, out, out_d)
    queue.finish()
    v = a_h.reshape(n, 4)
    s = np.abs(np.exp(v[:, 1]) * np.tanh(v[:, 2]) + v[:, 0])
    other = s.reshape(-1, 16)[:, ::-1].reshape(-1)
    lid = np.tile(np.arange(16, dtype=np.float32), n // 16)
    ref = np.stack([other, s, lid, np.full(n, -2.5, np.float32)], axis=1)
    # exp/tanh/fma on the device may differ from numpy in the last bits
    np.testing.assert_allclose(out.reshape(n, 4), ref, rtol=1e-5, atol=1e-6)


def test_unsupported_op_is_a_clear_error():
    k = opencl.KernelOp("bad", [("a", GPTR), ("n", i32)])
    a, n = k.args
    with ImplicitBuilder(k.body.block):
        r = arith.CeilDivSIOp(n, c_i32(3)).result
        opencl.StoreOp(arith.SIToFPOp(r, f32), a, n)
        opencl.ReturnOp()
    module = ModuleOp([k])
    module.verify()
    with pytest.raises(DiagnosticException, match=r"cannot print operation 'arith.ceildivsi' as OpenCL C"):
        print_opencl(module, io.StringIO())


def test_target_and_literals():
    k = opencl.KernelOp("lits", [("out", GPTR)])
    (out,) = k.args
    with ImplicitBuilder(k.body.block):
        i = opencl.GlobalIdOp(0)
        vals = [c_f32(float("-inf")), c_f32(1.0), c_f32(0.1), c_f32(3e38)]
        acc = vals[0]
        for v in vals[1:]:
            acc = arith.MaximumfOp(acc, v).result
        opencl.StoreOp(acc, out, i)
        opencl.ReturnOp()
    buf = io.StringIO()
    OpenCLTarget().emit(None, ModuleOp([k]), buf)  # pyright: ignore
    text = buf.getvalue()
    assert ("adreno_fmax_float(adreno_fmax_float(adreno_fmax_float(-INFINITY, 1.0f), 0.100000001f), "
            "3.00000001e+38f)") in text
    assert "out[(int)get_global_id(0)] = " in text


def test_maximumf_propagates_nan_and_maxnumf_does_not():
    """arith.maximumf/minimumf are NaN if an operand is NaN; OpenCL's fmax/fmin return the
    other operand, which is arith.maxnumf. The printer keeps the two apart (issue 11: Relu
    of NaN gave 0)."""
    import numpy as np
    import pyopencl as cl

    from adreno_mlir.runtime.device import default_context

    k = opencl.KernelOp("mm", [("out", GPTR)])
    (out,) = k.args
    with ImplicitBuilder(k.body.block):
        nan, one = c_f32(float("nan")), c_f32(1.0)
        results = [arith.MaximumfOp(nan, one).result, arith.MinimumfOp(one, nan).result,
                   arith.MaxnumfOp(nan, one).result, arith.MinnumfOp(one, nan).result]
        for lane, r in enumerate(results):
            opencl.StoreOp(r, out, arith.ConstantOp.from_int_and_width(lane, 32).result)
        opencl.ReturnOp()
    buf = io.StringIO()
    OpenCLTarget().emit(None, ModuleOp([k]), buf)  # pyright: ignore
    ctx = default_context()
    queue = cl.CommandQueue(ctx)
    prg = cl.Program(ctx, buf.getvalue()).build()
    res = np.zeros(4, np.float32)
    dev = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 16)
    prg.mm(queue, (1,), None, dev)
    cl.enqueue_copy(queue, res, dev)
    assert np.isnan(res[0]) and np.isnan(res[1]) and res[2] == 1.0 and res[3] == 1.0


def test_host_ops_are_skipped_and_nested_kernels_printed():
    from xdsl.dialects import func

    k = opencl.KernelOp("inner", [("n", i32)])
    with ImplicitBuilder(k.body.block):
        opencl.ReturnOp()
    host = func.FuncOp("host", ((), ()))
    with ImplicitBuilder(host.body.block):
        nv = c_i32(8)
        opencl.AllocBufferOp(opencl.BufferType(1024, f32))
        opencl.LaunchOp("inner", [nv], [8], [4])
        func.ReturnOp()
    module = ModuleOp([ModuleOp([k]), host])
    module.verify()
    text = opencl_source(module)
    assert text == "#pragma OPENCL FP_CONTRACT OFF\n\n__kernel void inner(int n) {\n}\n"


def test_launch_needs_existing_kernel():
    from xdsl.dialects import func
    from xdsl.utils.exceptions import VerifyException

    host = func.FuncOp("host", ((), ()))
    with ImplicitBuilder(host.body.block):
        opencl.LaunchOp("nope", [], [8])
        func.ReturnOp()
    with pytest.raises(VerifyException, match="unknown kernel @nope"):
        ModuleOp([host]).verify()


def test_types_api():
    assert opencl.PointerType("global", f32).space.data == "global"
    assert opencl.Image2DType("read").access.data == "read"
    assert opencl.BufferType(1024, f32).size.data == 1024
    img = opencl.ImageType(224, 896, "rgba_f32")
    assert (img.width.data, img.height.data, img.format.data) == (224, 896, "rgba_f32")
    assert i1  # imported for completeness


def strided_vector_module(unaligned_shift: int) -> ModuleOp:
    """out[4g ..] = a float4 of `a` at 4g (vload4), plus the float4 of `a` at 4g +
    `unaligned_shift` (vload at an element offset), plus a float4 staged through a __local
    array at 8 * lid (vload / vstore on the array): each work-item g writes one float4."""
    k = opencl.KernelOp("strided", [("a", GPTR), ("out", GPTR)], reqd_work_group_size=[8, 1, 1])
    a, out = k.args
    with ImplicitBuilder(k.body.block):
        gid = opencl.GlobalIdOp(0).result
        lid = opencl.LocalIdOp(0).result
        tile = opencl.LocalAllocOp(64).result
        tile.name_hint = "tile"
        x = opencl.VLoad4Op(a, gid).result
        four_g = arith.MuliOp(gid, c_i32(4)).result
        y = opencl.VLoadOp(a, arith.AddiOp(four_g, c_i32(unaligned_shift)), 4).result
        slot = arith.ShLIOp(lid, c_i32(3)).result  # 8 * lid: a multiple of 8
        opencl.VStoreOp(arith.AddfOp(x, y).result, tile, slot)
        opencl.BarrierOp("local")
        z = opencl.VLoadOp(tile, slot, 4).result
        opencl.VStoreOp(z, out, four_g)
        opencl.ReturnOp()
    return ModuleOp([k])


@pytest.mark.parametrize("shift", [4, 1])
def test_typed_vector_access_where_aligned(ctx, shift):
    """VECTOR_ACCESS_MODES: accesses at provably aligned addresses print through typed
    pointers, the __local array is declared aligned to them, an offset the IR cannot prove
    a multiple of the lanes stays a vloadN; both modes compute the same numbers."""
    module = strided_vector_module(shift)
    src = opencl_source(module)
    assert "= ((__global const float4*)a)[v0];" in src
    assert "__local float tile[64] __attribute__((aligned(16)));" in src
    assert "*((__local float4*)(tile + " in src and "*((__local const float4*)(tile + " in src
    assert "*((__global float4*)(out + " in src
    if shift == 4:
        assert "vload4(" not in src
    else:  # 4g + 1 is no multiple of 4
        assert "vload4(0, a + " in src
    plain = opencl_source(module, vector_access="vload")
    assert "4*)" not in plain and "aligned" not in plain
    n = 64
    a_h = np.random.default_rng(3).standard_normal(4 * n + 4).astype(np.float32)
    expect = a_h[: 4 * n].reshape(n, 4) + a_h[shift: shift + 4 * n].reshape(n, 4)
    queue = cl.CommandQueue(ctx)
    mf = cl.mem_flags
    for text in (src, plain):
        prg = cl.Program(ctx, text).build()
        a_d = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a_h)
        out_d = cl.Buffer(ctx, mf.WRITE_ONLY, 16 * n)
        prg.strided(queue, (n,), (8,), a_d, out_d)
        out = np.empty((n, 4), np.float32)
        cl.enqueue_copy(queue, out, out_d)
        queue.finish()
        np.testing.assert_array_equal(out, expect)


def test_vector_access_module_attribute_and_target_option():
    """convert-graph-to-opencl{vector_access=...} records the mode on the module (the
    printer follows it); -t 'opencl{vector_access=vload}' gives the vloadN program."""
    from xdsl.dialects.builtin import StringAttr

    from adreno_mlir.lowering.opencl_printer import VECTOR_ACCESS_ATTR

    module = strided_vector_module(4)
    assert "vload4(" not in opencl_source(module)
    module.attributes[VECTOR_ACCESS_ATTR] = StringAttr("vload")
    assert "vload4(" in opencl_source(module)
    module.attributes[VECTOR_ACCESS_ATTR] = StringAttr("wide")
    with pytest.raises(DiagnosticException, match="opencl.vector_access = \"wide\" is not one of typed, vload"):
        opencl_source(module)
    buf = io.StringIO()
    OpenCLTarget(vector_access="vload").emit(None, strided_vector_module(4), buf)  # pyright: ignore
    assert "vload4(" in buf.getvalue()


def test_known_multiple():
    """opencl.known_multiple reads divisibility off the index arithmetic."""
    k = opencl.KernelOp("m", [("a", GPTR), ("n", i32)])
    a, n = k.args
    with ImplicitBuilder(k.body.block):
        gid = opencl.GlobalIdOp(0).result
        g12 = arith.MuliOp(gid, c_i32(12)).result
        g8 = arith.ShLIOp(gid, c_i32(3)).result
        s = arith.AddiOp(g12, g8).result                       # gcd(12, 8) = 4
        s1 = arith.AddiOp(s, c_i32(2)).result                  # gcd(4, 2) = 2
        m = arith.MinSIOp(g12, c_i32(36)).result               # gcd(12, 36) = 12
        d = arith.DivSIOp(g12, c_i32(3)).result                # 12 / 3 = 4
        r = arith.RemSIOp(g12, c_i32(8)).result                # gcd(12, 8) = 4
        na = arith.AddiOp(g12, n).result                       # a kernel argument: 1
        zero = arith.MuliOp(gid, c_i32(0)).result              # 0: every integer divides it
        body = Block(arg_types=[i32])
        with ImplicitBuilder(body):
            scf.YieldOp()
        loop = scf.ForOp(c_i32(8), n, c_i32(4), [], Region(body))  # i = 8, 12, ...: multiples of 4
        opencl.ReturnOp()
    expect = {s: 4, s1: 2, m: 12, d: 4, r: 4, na: 1, zero: 0, loop.body.block.args[0]: 4, gid: 1}
    for value, multiple in expect.items():
        assert opencl.known_multiple(value) == multiple
