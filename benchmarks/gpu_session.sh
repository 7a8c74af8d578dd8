#!/usr/bin/env bash
# One device call (GPU checks are batched: the device time is short): the environment, the GPU
# tests, an optional grid sweep (SWEEP_ARGS), then the GPU benchmark. Logs and JSON go to $OUT.
#   [SWEEP_ARGS="--n 32000"] bash benchmarks/gpu_session.sh TEST_TIMEOUT_S BENCH_TIMEOUT_S [run_gpu.py args...]
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/epslap-out}
mkdir -p "$OUT"
test_s=${1:-300}; bench_s=${2:-240}; shift 2 || true
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm --format=csv
python3 -c "import numba, numpy, cupy, scipy, pytest; print('numba', numba.__version__, 'numpy',
numpy.__version__, 'cupy', cupy.__version__, 'scipy', scipy.__version__)"
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,utilization.gpu,power.draw --format=csv \
  -lms 1000 > "$OUT/clocks.log" 2>&1 &
clock_pid=$!
if [ "$test_s" -gt 0 ]; then
  env ${TEST_ENV:-} timeout "$test_s" python3 -m pytest tests/test_gpu.py -q -x -p no:cacheprovider -m gpu \
    2>&1 | tee "$OUT/tests.log" | tail -25
fi
if [ -n "${SWEEP_ARGS:-}" ]; then
  timeout 240 python3 benchmarks/gpu_sweep.py $SWEEP_ARGS 2>&1 | tee "$OUT/sweep.log"
fi
if [ "$bench_s" -gt 0 ]; then
  timeout "$bench_s" python3 benchmarks/run_gpu.py --json "$OUT/gpu.json" "$@" 2>&1 | tee "$OUT/bench.log"
fi
kill $clock_pid 2>/dev/null; sort -t, -k2 -n "$OUT/clocks.log" | tail -3
if [ -n "${EMD_ARGS:-}" ]; then
  timeout 200 python3 benchmarks/gpu_emd_check.py $EMD_ARGS 2>&1 | tee "$OUT/emd.log" | tail -12
  timeout 120 python3 -m epslap.cli emd benchmarks/photos/*.jpg --size 11000 --backend gpu \
    --out "$OUT/emd_gpu.csv" --plot "$OUT/emd_gpu_mds.png" 2>&1 | tail -8
fi
