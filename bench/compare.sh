#!/usr/bin/env bash
# `make bench-compare`: lockstep against PyTorch, TensorFlow and OpenMPI and against this machine's limits, in one
# run, with this CPU kind's section and rows of BENCHMARKS.md rewritten from it. Builds Release, installs the
# peers (Debian's python3-torch, iperf3 and OpenMPI; tensorflow-cpu from PyPI in a virtualenv under the build
# directory), compiles the limit programs, then runs bench/compare.py, which alternates lockstep and each peer.
#   bench/compare.sh [--quick] [--no-write] [--build DIR]
# --quick: one round of fewer steps (a few minutes, for development); it writes only DIR/bench-compare.md unless
# --write is given. The default run takes about 20 minutes on a 2-core machine and rewrites BENCHMARKS.md (this
# CPU kind's parts only).
set -euo pipefail
cd "$(dirname "$0")/.."

build=build quick=0 write=1 jobs=$(nproc)
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 write=0 ;;
    --write) write=1 ;;
    --no-write) write=0 ;;
    --build) build="$2"; shift ;;
    -j) jobs="$2"; shift ;;
    *) echo "bench/compare.sh: unknown argument '$1' (use --quick, --write, --no-write, --build DIR, -j N)" >&2; exit 2 ;;
  esac
  shift
done
# The TensorFlow that the peer rows measure: pinned, so that reruns compare like with like.
tf_version=2.21.0

scripts/install-deps --bench  # the build's packages and the peers' (python3-torch, iperf3, OpenMPI)

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
grep -q 'CMAKE_BUILD_TYPE:STRING=Release' "$build/CMakeCache.txt" ||
  { echo "bench/compare.sh: $build is not a Release build; use --build with another directory" >&2; exit 2; }
cmake --build "$build" -j "$jobs" --target lockstep micro_kernels

mkdir -p "$build/bench-bin"
cc -O2 -mavx2 -mfma -fopenmp bench/machine_limits.c -o "$build/bench-bin/machine_limits"
mpicc -O2 bench/peers/mpi_allreduce.c -o "$build/bench-bin/mpi_allreduce"

# TensorFlow from PyPI in a virtualenv of its own; without PyPI its rows say why and are skipped.
venv="$build/tf-venv"
tf_args=()
if [ -x "$venv/bin/python" ] && timeout 120 "$venv/bin/python" -c "import tensorflow as tf; assert tf.__version__ == '$tf_version'" 2>/dev/null; then
  tf_args=(--tf-python "$venv/bin/python")
elif { [ -x "$venv/bin/python" ] || /usr/bin/python3 -m venv "$venv"; } &&
     timeout 900 "$venv/bin/pip" install -q --disable-pip-version-check "tensorflow-cpu==$tf_version"; then
  tf_args=(--tf-python "$venv/bin/python")
else
  tf_args=(--tf-skip "tensorflow-cpu==$tf_version could not be installed from PyPI into $venv")
fi

args=(--build "$build" "${tf_args[@]}")
[ "$quick" = 1 ] && args+=(--quick)
[ "$write" = 1 ] && args+=(--write)
# The whole comparison is bounded too, on top of each child's own timeout.
timeout -k 30 $([ "$quick" = 1 ] && echo 900 || echo 2700) /usr/bin/python3 bench/compare.py "${args[@]}"
