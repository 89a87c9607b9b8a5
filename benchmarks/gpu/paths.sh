#!/bin/bash
# benchstack's GPU paths in one device call (about 6 minutes on an H200): the GPU tests, torch
# on CUDA under Offline, SingleStream and Server (a find-peak), a LIBRARY profile with CUDA
# kernels, JPEGs decoded by nvJPEG against the CPU fast path (images/s, levels apart), training in fp32 and bf16 and through DDP (NCCL, one rank), and the refusals of
# ONNX Runtime and TensorRT where their CUDA builds are missing. Prepare with wheels.sh; on
# the device: `bash benchmarks/gpu/paths.sh` carrying .whl. DEV=cpu dry-runs it anywhere.
DEV=${DEV:-cuda}
# A CPU dry-run shortens training: STEPS=3 IMAGE=32 DEV=cpu bash benchmarks/gpu/paths.sh
STEPS=${STEPS:-30}
IMAGE=${IMAGE:-224}
OUT=${OUT:-/tmp/benchstack-gpu}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 BENCHSTACK_DATA_DIR=/tmp/benchstack-gpu-data
if [ -d .whl ] && [ "$DEV" = cuda ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 3
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
BS="timeout 150 python3 -m services.cli.main"
step() { echo; echo "=== $* ($(date +%T))"; }
{
step environment
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 | head -3
python3 -c "import torch, onnxruntime as o; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), torch.cuda.device_count()); print('onnxruntime', o.__version__, o.get_available_providers())"
python3 -c "import tensorrt; print('tensorrt', tensorrt.__version__)" 2>&1 | tail -1

step "GPU tests, Keras aside: the image has no TensorFlow"
timeout 240 python3 -m pytest -q -rs -p no:cacheprovider -p no:warnings --timeout 120 -s -k "not keras" \
  tests/shared/test_devices.py tests/services/inference/profiling \
  tests/services/inference/backends/tensorrt tests/services/inference/backends/onnxruntime \
  tests/services/inference/backends/torch tests/services/inference/loadgen \
  tests/services/workloads/training/test_data_sources.py tests/services/workloads/training/test_scaling.py \
  tests/services/preprocess/test_device_decode.py 2>&1 \
  | tail -20

step bench resnet18 Offline batch 32: $DEV, then the CPU side by side
$BS bench resnet18 --device "$DEV" --scenario offline --batch-size 32 --samples 256 --duration 8 --json > "$OUT/offline_$DEV.json"; echo rc=$?
$BS bench resnet18 --device cpu --scenario offline --batch-size 32 --samples 128 --duration 5 --json > "$OUT/offline_cpu.json"; echo rc=$?
python3 -c "import json; g, c = (json.load(open('$OUT/offline_' + d + '.json'))['performance']['samples_per_second'] for d in ('$DEV', 'cpu')); print(f'Offline samples/s: $DEV {g:.1f}, cpu {c:.1f}, ratio {g / c:.1f}')"

step bench resnet18 SingleStream $DEV
$BS bench resnet18 --device "$DEV" --scenario single-stream --samples 64 --duration 5 2>&1 | grep -E "validity|latency ms|samples/s"

step find-peak resnet18 $DEV, p99 under 10 ms, batch cap 8
$BS find-peak resnet18 --device "$DEV" --latency-bound-ms 10 --batch-size 8 --duration 3 --max-probes 8 --samples 256 2>&1 | grep -v "measuring\|calibrat" | tail -30

step profile resnet18 LIBRARY $DEV
$BS profile resnet18 --device "$DEV" --trace-level LIBRARY --iterations 5 --top 6 --trace "$OUT/trace_library_$DEV.json" 2>&1 | tail -40

step "JPEG decode on $DEV (nvJPEG) against the CPU fast path on one core, every set"
timeout 240 python3 -m benchmarks.preprocess_throughput --quick --images 16 --rounds 3 --device "$DEV" 2>&1 \
  | grep -E "one core|decoded on|crops vs|fast at|host meanwhile"
echo "bench with the fast mode on $DEV: its report names the decoder"
$BS bench resnet18 --device "$DEV" --preprocessing fast --scenario single-stream --samples 64 --duration 3 2>&1 \
  | grep -E "preprocessing|validity|rror"

step train resnet18 $IMAGE px: batch 64 and 256, fp32 and bf16, then DDP with one rank
for args in "--batch-size 64" "--batch-size 64 --precision bf16" "--batch-size 256" "--batch-size 256 --precision bf16"; do
  echo "train $args"
  timeout 150 python3 -m services.cli.main train resnet18 --steps "$STEPS" --image-size "$IMAGE" $args 2>&1 | grep -E "images/s|data share|CUDA|rror"
done
timeout 150 python3 -m services.cli.main train resnet18 --steps "$STEPS" --batch-size 64 --image-size "$IMAGE" --workers 1 2>&1 | tail -4

step ONNX Runtime and TensorRT on $DEV: a clear refusal where the CUDA build is missing
$BS bench resnet18 --framework onnxruntime --device "$DEV" --scenario offline --samples 32 --duration 2 2>&1 | tail -2
$BS bench resnet18 --framework tensorrt --device "$DEV" --scenario offline --samples 32 --duration 2 2>&1 | tail -2
step end
} 2>&1 | tee "$OUT/log.txt"
