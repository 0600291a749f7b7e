#!/usr/bin/env bash
# Benchmark on the lent NVIDIA H200 (OpenCL 3.0 with images) against PyTorch eager, as run
# for the closing notes. Needs the project's .gpu-kit (shared/device + shared/models) carried
# to the machine; see DEVELOPERS.md. Usage: bash bench/h200.sh MODELS [extra bench args]
set -euo pipefail
. .gpu-kit/gpu-env.sh
export ADRENO_SHARED=$PWD/.gpu-kit PYTHONUNBUFFERED=1
models=${1:-resnet18,resnet50,mobilenet_v2,mobilenet_v3_small,mobilenet_v3_large,efficientnet_b0,squeezenet1_1,googlenet,densenet121,lraspp_mobilenet_v3_large}
shift || true
mkdir -p "${OUT:-/tmp/out}"
python3 bench/bench.py --models "$models" --device nvidia --compare torch \
    --plans nchw,buffer4c,texture,texture-fp16 --repeat 20 --warmup 3 --profile 3 \
    --json "${OUT:-/tmp/out}/bench-$(echo "$models" | tr ',' '_' | cut -c1-40).json" "$@" 2>&1 \
    | tee "${OUT:-/tmp/out}/bench-$(echo "$models" | tr ',' '_' | cut -c1-40).log"
