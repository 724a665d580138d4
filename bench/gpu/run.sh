#!/usr/bin/env bash
# lockstep on one GPU against PyTorch on the same GPU and against the GPU's matrix limit, in one run: the tutorial
# CNN (batch 64, Adam, Fashion-MNIST, TF32 off in both) and cuBLAS SGEMM/TF32 peaks. BENCHMARKS.md's GPU section.
#   bench/gpu/run.sh [BIN_DIR]     (default build/bin; Fashion-MNIST as lockstep train finds it)
set -eu
bin=${1:-build/bin}
here=$(dirname "$0")
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
python3 "$here/peak.py"
for round in 1 2 3; do
  # The custom loop (--loop ctl): its time is the training steps' alone (fit's includes the epoch's validation).
  timeout 300 "$bin/lockstep" train --device gpu --loop ctl --epochs 1 --verbose 0 --batch-size 64 --optimizer adam \
    --metrics-out /tmp/lockstep-gpu.json >/dev/null
  python3 -c "import json; m = json.load(open('/tmp/lockstep-gpu.json')); print(f\"lockstep round $round: {1e3 * 64 / m['samples_per_second']:.3f} ms/step, {m['samples_per_second']:.0f} samples/s, test accuracy {m['test_accuracy']:.4f}\")"
  timeout 300 python3 "$here/../peers/torch_cnn.py" --device cuda --dataset fashion_mnist --optimizer adam \
    --steps 900 --warmup 20 | grep torch
done
