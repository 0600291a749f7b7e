import sys, time, json, warnings
warnings.simplefilter("ignore")
import numpy as np, adreno_mlir
rounds = 5
res = {}
for name in sys.argv[1:]:
    arts = {v: adreno_mlir.load(f"/tmp/ab/{v}/{name}.adreno", runtime="pyopencl") for v in ("old", "new")}
    rng = np.random.default_rng(0)
    m0 = arts["old"]
    feeds = {n: rng.standard_normal(s).astype(np.float32) for n, s in m0.input_shapes.items()}
    outs = {v: a.run(feeds) for v, a in arts.items()}
    err = max(float(np.abs(outs["new"][k] - outs["old"][k]).max() / max(np.abs(outs["old"][k]).max(), 1e-30)) for k in outs["old"])
    dev = {v: [] for v in arts}; wall = {v: [] for v in arts}
    for r in range(rounds):
        for v, a in arts.items():
            ex = a.executable
            s, e = ex.profile_events([feeds[n] for n in a.input_names], repeat=3)
            dev[v].append(float(np.median((e - s).sum(axis=1))) * 1e-6)
            t = time.perf_counter(); [a.run(feeds) for _ in range(3)]; wall[v].append((time.perf_counter() - t) / 3 * 1e3)
    row = {v: {"launches": len(arts[v].executable.plan.launches), "device_ms": float(np.median(dev[v])),
               "wall_ms": float(np.median(wall[v]))} for v in arts}
    row["max_rel_diff"] = err
    res[name] = row
    print(f"{name:12s} launches {row['old']['launches']} -> {row['new']['launches']}  device {row['old']['device_ms']:.2f} -> {row['new']['device_ms']:.2f} ms  wall {row['old']['wall_ms']:.2f} -> {row['new']['wall_ms']:.2f} ms  diff {err:.1e}", flush=True)
json.dump(res, open("/tmp/ab/result.json", "w"), indent=1)
