"""Passes of one solve on 1 thread and one on 2, for an A/B of two commits: run it alternately
from a checkout of each (PYTHONPATH=checkout python benchmarks/ab_passes.py CLASS N); prints JSON.
"""
import sys, time, json, numpy as np, costfns, epslap
name, n = sys.argv[1], int(sys.argv[2])
c = costfns.generate(name, n, 0)
epslap.solve(costfns.generate(name, 64, 0), threads=1); epslap.solve(costfns.generate(name, 64, 0), threads=2)
res = {}
for t in (1, 2):
    s = epslap.solve(c, threads=t)
    res[t] = (s.stats["time_solve_s"], s.stats["rows_evaluated"])
print(json.dumps(dict(name=name, n=n, p1=res[1][0], p2=res[2][0], rows=res[1][1])))
