import sys, warnings
warnings.simplefilter("ignore")
import adreno_mlir
out, models = sys.argv[1], sys.argv[2:]
for m in models:
    name = m.split("/")[-1].removesuffix(".onnx")
    cm = adreno_mlir.compile(m, runtime="pyopencl")
    cm.save(f"{out}/{name}.adreno")
    print(name, len(cm.executable.plan.launches), flush=True)
