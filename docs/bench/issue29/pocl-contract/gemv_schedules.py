import warnings, sys, statistics
warnings.simplefilter("ignore")
import adreno_mlir, numpy as np, onnx
m = onnx.load("/tmp/adreno-bench-llm/llama_tiny_int4.onnx", load_external_data=False)
names = [n.name for n in m.graph.node if n.op_type == "MatMulNBits"]
variants = {"default": None}
for cfg in ({"interleave": 1}, {"interleave": 1, "k_unroll": 4}, {"tile_m": 1}, {"k_split": 4, "cols_per_group": 16}):
    variants[str(cfg)] = {f"loc:{n}": cfg for n in names}
decs = {}
for label, over in variants.items():
    try:
        decs[label] = adreno_mlir.compile_decoder("/tmp/adreno-bench-llm/llama_tiny_int4.onnx", max_context=256,
                                                  prefill_chunk=64, runtime="pyopencl", overrides=over)
    except Exception as e:
        print(label, "ERR", str(e)[:300]); continue
feeds = [np.array([[5]], np.int32), np.array([64], np.int32)]
times = {l: [] for l in decs}
for r in range(4):
    for l, dec in decs.items():
        ex = dec.decode.executable
        s, e = ex.profile_events(feeds, repeat=4)
        per = np.median((e - s) * 1e-6, axis=0)
        times[l].append(per.sum())
prompt = list(range(3, 67))
for l, dec in decs.items():
    runs = [dec.generate(prompt, 32, stop_at_eos=False) for _ in range(3)]
    k = [la.kernel for la in dec.decode.executable.plan.launches if la.kernel.startswith("qmatmul")][:2]
    print(f"{l:45s} step device ms {statistics.median(times[l]):.3f}  decode tok/s {statistics.median(r.decode_tok_s for r in runs[1:]):.1f}  {k} {runs[-1].tokens[:6]}", flush=True)
