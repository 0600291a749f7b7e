#!/usr/bin/env python3
"""What one tiny kernel costs on an OpenCL device, three ways, beside CUDA's in the same run.

    python bench/launch_floor.py [--device nvidia] [--n 2000] [--json out.json]

Our model figures are sums of OpenCL event times (END - START per launch). For a kernel that
does almost nothing that sum can be larger than what the launch really occupies the device,
so this bench measures a one-element kernel as

- **event**: the median END - START of single launches on a profiling queue;
- **span**: n launches back to back on a profiling queue, (last END - first START) / n: the
  device time per launch when the queue is kept full;
- **wall**: n launches back to back on a queue without profiling, host wall time / n
  (enqueue included: the host's launch cost when it is the bottleneck);

and, with PyTorch and CUDA, a one-element in-place add as a single launch timed by CUDA
events, and n of them captured in one CUDA graph, replay wall time / n (the peer's
per-kernel floor in `bench/sets.py`'s CUDA-graph figures).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

SRC = "__kernel void tiny(__global float *x) { if (get_global_id(0) == 0) x[0] = x[0] * 0.5f + 1.0f; }"


def opencl_floor(device: str | None, n: int) -> dict:
    import pyopencl as cl

    from adreno_mlir.runtime.device import find_device  # the project's device choice

    dev = find_device(device)
    ctx = cl.Context([dev])
    prof_q = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    plain_q = cl.CommandQueue(ctx)
    prg = cl.Program(ctx, SRC).build()
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=np.ones(64, np.float32))
    k = cl.Kernel(prg, "tiny")
    k.set_arg(0, buf)
    for _ in range(50):
        cl.enqueue_nd_range_kernel(prof_q, k, (1,), None)
    prof_q.finish()
    single = []
    for _ in range(200):
        e = cl.enqueue_nd_range_kernel(prof_q, k, (1,), None)
        e.wait()
        single.append((e.profile.end - e.profile.start) * 1e-6)
    spans = []
    for _ in range(3):
        evs = [cl.enqueue_nd_range_kernel(prof_q, k, (1,), None) for _ in range(n)]
        prof_q.finish()
        spans.append((evs[-1].profile.end - evs[0].profile.start) * 1e-6 / n)
        durations = [(e.profile.end - e.profile.start) * 1e-6 for e in evs]
    walls = []
    for _ in range(3):
        plain_q.finish()
        t0 = time.perf_counter()
        for _ in range(n):
            cl.enqueue_nd_range_kernel(plain_q, k, (1,), None)
        plain_q.finish()
        walls.append((time.perf_counter() - t0) * 1e3 / n)
    return {"device": dev.name.strip(), "platform": dev.platform.name.strip(),
            "event_ms": statistics.median(single), "event_in_burst_ms": statistics.median(durations),
            "span_ms": min(spans), "wall_ms": min(walls)}


def cuda_floor(n: int) -> dict | None:
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    x = torch.ones(1, device="cuda")
    for _ in range(50):
        x.add_(1.0)
    torch.cuda.synchronize()
    single = []
    for _ in range(200):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        x.add_(1.0)
        e.record()
        torch.cuda.synchronize()
        single.append(s.elapsed_time(e))
    g = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        with torch.cuda.graph(g):
            for _ in range(n):
                x.add_(1.0)
    torch.cuda.synchronize()
    replays = []
    for _ in range(5):
        t0 = time.perf_counter()
        g.replay()
        torch.cuda.synchronize()
        replays.append((time.perf_counter() - t0) * 1e3 / n)
    return {"device": torch.cuda.get_device_name(0), "event_ms": statistics.median(single),
            "graph_replay_ms": min(replays)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default=None, help="OpenCL device (as adreno-mlir run --device)")
    ap.add_argument("--n", type=int, default=2000, help="launches in a burst")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    res = {"n": args.n, "opencl": opencl_floor(args.device, args.n), "cuda": cuda_floor(args.n)}
    o = res["opencl"]
    print(f"OpenCL {o['device']} ({o['platform']}): one-element kernel, per launch: event {o['event_ms'] * 1e3:.2f} us "
          f"(in a burst {o['event_in_burst_ms'] * 1e3:.2f} us), burst span {o['span_ms'] * 1e3:.2f} us, "
          f"host wall {o['wall_ms'] * 1e3:.2f} us")
    if res["cuda"]:
        c = res["cuda"]
        print(f"CUDA {c['device']}: one-element add, per launch: event {c['event_ms'] * 1e3:.2f} us, "
              f"CUDA-graph replay {c['graph_replay_ms'] * 1e3:.2f} us")
    else:
        print("CUDA: no PyTorch with a CUDA device here (skipped)")
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
