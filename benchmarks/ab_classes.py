"""CPU solve times (best of 3, one thread) and rows evaluated on a few classes and sizes, plus the
per-call time at n = 50, as one JSON line: for an A/B of two checkouts, run it alternately from
each (``PYTHONPATH=CHECKOUT python benchmarks/ab_classes.py``) and compare within the run.
"""
import json
import time

import numpy as np

import costfns
import epslap

CASES = [("random", 2000), ("geometric", 2000), ("sanity", 4000), ("rank8", 2000),
         ("random", 4000), ("geometric", 4000)]


def main() -> None:
    out = []
    for name, n in CASES:
        c = costfns.generate(name, n, 0)
        epslap.solve(costfns.generate(name, 64, 0), threads=1)  # compiled or loaded
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            sol = epslap.solve(c, threads=1)
            times.append(time.perf_counter() - t0)
        out.append(dict(name=name, n=n, best_s=round(min(times), 4),
                        rows=sol.stats["rows_evaluated"]))
    c = np.random.default_rng(0).random((50, 50))
    epslap.solve(c)
    t0 = time.perf_counter()
    for _ in range(2000):
        epslap.solve(c)
    out.append(dict(name="random", n=50, best_s=round((time.perf_counter() - t0) / 2000, 6),
                    rows=None))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
