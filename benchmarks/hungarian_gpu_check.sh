#!/usr/bin/env bash
# GPU check of the hungarian-gpu backend in one device call (about 8 minutes at most):
# the environment, the GPU Hungarian tests, then the comparison benchmark. Output under $OUT.
#   OUT=/some/dir bash benchmarks/hungarian_gpu_check.sh
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/epslap-hungarian-out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
python3 -c "import numba, numpy, cupy, scipy; print('numba', numba.__version__, 'numpy',
numpy.__version__, 'cupy', cupy.__version__, 'scipy', scipy.__version__)" | tee -a "$OUT/gpu.txt"
# 1) tests (CPU reference + kernel); -x stops at the first failure, whose log is kept
timeout 200 python3 -m pytest tests/test_hungarian.py -q -x -p no:cacheprovider -rs \
  2>&1 | tee "$OUT/tests.log" | tail -30
# 2) the comparison: sizes grow until the budget is spent (runs then listed as skipped)
timeout 260 python3 benchmarks/run_compare.py "$OUT/compare" \
  --classes int0.1n int1n int10n random geometric \
  --sizes 1000 2000 4000 8000 16000 32000 \
  --cpu-max 4000 --scipy-max 4000 --hungarian-float-max 4000 --budget-s 200 \
  2>&1 | tee "$OUT/compare.log"
# 3) if the kernel ever hangs, the timeouts above end it; show what is left on the device
nvidia-smi --query-compute-apps=pid,used_memory --format=csv 2>&1 | tail -3
