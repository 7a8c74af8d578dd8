"""Whole solves (and their estimate) on 1, 2, 1, 2 threads, for an A/B of two commits: run it
alternately from a checkout of each (PYTHONPATH=checkout python benchmarks/ab_solve.py CLASS N).
"""
import sys, time, json, numpy as np, costfns, epslap
name, n = sys.argv[1], int(sys.argv[2])
c = costfns.generate(name, n, 0)
for t in (1, 2):
    epslap.solve(costfns.generate(name, 64, 0), threads=t)
res = {}
for t in (1, 2, 1, 2):
    t0 = time.perf_counter(); s = epslap.solve(c, threads=t); dt = time.perf_counter() - t0
    res.setdefault(t, []).append((round(dt, 3), round(s.stats["time_estimate_s"], 3)))
print(json.dumps(dict(name=name, n=n, t1=res[1], t2=res[2], ratio=round(min(x[0] for x in res[1]) / min(x[0] for x in res[2]), 2))))
