#!/usr/bin/env bash
# One device call (GPU checks are batched: the device time is short): the environment, the GPU
# tests, then the GPU benchmark. Logs and JSON go to $OUT.
#   bash benchmarks/gpu_session.sh TEST_TIMEOUT_S BENCH_TIMEOUT_S [run_gpu.py arguments...]
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/epslap-out}
mkdir -p "$OUT"
test_s=${1:-300}; bench_s=${2:-240}; shift 2 || true
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm --format=csv
python3 -c "import numba, numpy, cupy, scipy, pytest; print('numba', numba.__version__, 'numpy',
numpy.__version__, 'cupy', cupy.__version__, 'scipy', scipy.__version__)"
if [ "$test_s" -gt 0 ]; then
  timeout "$test_s" python3 -m pytest tests/test_gpu.py -q -x -p no:cacheprovider -m gpu \
    2>&1 | tee "$OUT/tests.log" | tail -25
fi
if [ "$bench_s" -gt 0 ]; then
  timeout "$bench_s" python3 benchmarks/run_gpu.py --json "$OUT/gpu.json" "$@" 2>&1 | tee "$OUT/bench.log"
fi
