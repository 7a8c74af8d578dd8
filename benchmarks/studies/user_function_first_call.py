"""A user's ``@numba.njit`` cost through ``costfns.from_function``, solved by ``epslap.solve`` in
one process: the import and setup, then the solve (compile or disk-cache load included).

    for kind in row element; do
        export NUMBA_CACHE_DIR=$(mktemp -d)   # an empty cache: the first process compiles
        python benchmarks/studies/user_function_first_call.py 8000 $kind   # cold
        python benchmarks/studies/user_function_first_call.py 8000 $kind   # the next process
    done
"""
import sys
import time

t0 = time.perf_counter()
import numba  # noqa: E402
import costfns  # noqa: E402
import epslap  # noqa: E402

n, kind = int(sys.argv[1]), sys.argv[2]
if kind == "row":
    @numba.njit
    def cost(i, out):
        for j in range(out.shape[0]):
            out[j] = ((i * 7919 + j * 104729) % 1000) / 7.0
else:
    @numba.njit
    def cost(i, j):
        return ((i * 7919 + j * 104729) % 1000) / 7.0
src = costfns.from_function(cost, (n, n), kind=kind)
t1 = time.perf_counter()
sol = epslap.solve(src)
t2 = time.perf_counter()
print(f"n={n} kind={kind}: import and setup {t1 - t0:.2f} s, solve {t2 - t1:.2f} s "
      f"({sol.stats['method']})")
