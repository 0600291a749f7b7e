import sys, warnings, statistics
warnings.simplefilter("ignore")
sys.path.insert(0, "bench"); sys.path.insert(0, ".")
import numpy as np, pyopencl as cl
import cpu_gemm_panels as g
from adreno_mlir.runtime.device import find_device
ctx = cl.Context([find_device("pocl")])
q = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
mf = cl.mem_flags
for shape in ("197x768x768", "50x768x3072", "128x256x1024", "196x128x256"):
    m, k, n = map(int, shape.split("x"))
    a = np.random.rand(m, k).astype(np.float32); b = np.random.rand(k, n).astype(np.float32)
    bufs = [cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x) for x in (a, b)]
    out = cl.Buffer(ctx, mf.WRITE_ONLY, 4 * m * n)
    for mr in (4, 6):
        ks = {c: cl.Kernel(cl.Program(ctx, g.source(m, k, n, mr, 16, "rows", c, False)).build(), "gemm") for c in (False, True)}
        rt = -(-m // mr)
        times = {c: [] for c in ks}
        for r in range(12):
            for c, kern in ks.items():
                kern.set_args(*bufs, out)
                e = cl.enqueue_nd_range_kernel(q, kern, (rt, n // 16), (rt, 1)); e.wait()
                if r >= 2: times[c].append((e.profile.end - e.profile.start) * 1e-6)
        gf = {c: 2 * m * n * k / statistics.median(t) / 1e6 for c, t in times.items()}
        print(f"{shape} {mr}x16 split {gf[False]:.1f} contract {gf[True]:.1f} GFLOP/s  ratio {gf[True]/gf[False]:.2f}", flush=True)
