#!/usr/bin/env bash
# GPU check of the hungarian-gpu backend in one device call (under 8 minutes): the environment,
# the Hungarian tests, then two comparison runs. Everything is written under $OUT.
#   OUT=/some/dir bash benchmarks/hungarian_gpu_check.sh
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/epslap-hungarian-out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
python3 -c "import numba, numpy, cupy, scipy; print('numba', numba.__version__, 'numpy',
numpy.__version__, 'cupy', cupy.__version__, 'scipy', scipy.__version__)" | tee -a "$OUT/gpu.txt"
# 1) tests: the kernel on the GPU plus the CPU reference; the CPU emulation of the kernel source
#    (tests marked "emulated", about a minute of CPU) was run where the kernel was written.
timeout 230 python3 -m pytest tests/test_hungarian.py -q -x -p no:cacheprovider -rs \
  -k "not emulated" 2>&1 | tee "$OUT/tests.log" | tail -30
# 2) the published bar (HyLAC / FastHA, H200, uniform integers [0, n)): GPU backends only
timeout 130 python3 benchmarks/run_compare.py "$OUT/bar" \
  --classes int1n int0.1n int10n --sizes 4000 8000 16000 32000 \
  --backends hungarian-gpu gpu --budget-s 100 2>&1 | tee "$OUT/bar.log"
# 3) all four solvers at sizes where the CPU solvers finish
timeout 90 python3 benchmarks/run_compare.py "$OUT/compare" \
  --classes int1n int10n random geometric --sizes 1000 2000 4000 \
  --backends hungarian-gpu gpu cpu scipy --cpu-max 4000 --scipy-max 4000 \
  --hungarian-float-max 4000 --budget-s 60 2>&1 | tee "$OUT/compare.log"
nvidia-smi --query-compute-apps=pid,used_memory --format=csv 2>&1 | tail -3
