"""A user's ``@numba.njit`` cost through ``costfns.from_function``, solved by ``epslap.solve`` in
one process: the import and setup, then the solve (compile or disk-cache load included).
``matrix`` and ``points`` solve a random matrix and a ``costfns.SqEuclidean`` point set instead,
``dense`` the random matrix by the dense ε method (``candidates=False``).

    for kind in row element; do
        export NUMBA_CACHE_DIR=$(mktemp -d)   # an empty cache: the first process compiles
        python benchmarks/studies/user_function_first_call.py 8000 $kind   # cold
        python benchmarks/studies/user_function_first_call.py 8000 $kind   # the next process
    done

With and without a second process compiling the sparse solve ahead (``epslap.cpu.compile_ahead``),
in turns, each in an empty cache:

    for round in 1 2 3; do for case in "8000 element" "8000 row" "2000 matrix" "2000 points"; do
        for ahead in 0 1; do
            NUMBA_CACHE_DIR=$(mktemp -d) EPSLAP_COMPILE_AHEAD=$ahead \
                python benchmarks/studies/user_function_first_call.py $case
    done; done; done
"""
import os
import sys
import time

t0 = time.perf_counter()
import numba  # noqa: E402
import costfns  # noqa: E402
import epslap  # noqa: E402

n, kind = int(sys.argv[1]), sys.argv[2]
if kind in ("matrix", "points", "dense"):
    import numpy as np
    rng = np.random.default_rng(0)
    src = (rng.random((n, n)) if kind in ("matrix", "dense")
           else costfns.SqEuclidean(rng.random((n, 2)), rng.random((n, 2))))
elif kind == "row":
    @numba.njit
    def cost(i, out):
        for j in range(out.shape[0]):
            out[j] = ((i * 7919 + j * 104729) % 1000) / 7.0
else:
    @numba.njit
    def cost(i, j):
        return ((i * 7919 + j * 104729) % 1000) / 7.0
if kind in ("row", "element"):
    src = costfns.from_function(cost, (n, n), kind=kind)
t1 = time.perf_counter()
sol = epslap.solve(src, candidates=kind != "dense" and "auto")
t2 = time.perf_counter()
ahead = os.environ.get("EPSLAP_COMPILE_AHEAD", "")
print(f"n={n} kind={kind} ahead={ahead or 'default'}: import and setup {t1 - t0:.2f} s, "
      f"solve {t2 - t1:.2f} s ({sol.stats['method']})")
