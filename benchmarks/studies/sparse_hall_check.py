"""What the Hall check of sparse input costs (``epslap.sparse.check_matching``: a maximum
bipartite matching over the stored pattern, which names a set of rows sharing too few columns
before any solve), against the solve it precedes: k-nearest-neighbour graphs of
``benchmarks/sparse.py``, best of three check calls, one solve (the check included).

    python benchmarks/studies/sparse_hall_check.py [--solve-max N]   # writes sparse_hall_check.json
"""
import argparse
import json
import os
import platform
import sys
import time

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
import epslap  # noqa: E402
from benchmarks.sparse import knn_graph  # noqa: E402
from epslap.sparse import check_matching  # noqa: E402
from epslap.sparse_input import stored_pairs  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default="10000:10,100000:10,100000:50,1000000:10")
    ap.add_argument("--solve-max", type=int, default=100000)
    args = ap.parse_args()
    epslap.solve(knn_graph(300, 5))  # compile
    res = {"machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cases": []}
    for case in args.cases.split(","):
        n, k = (int(x) for x in case.split(":"))
        m = knn_graph(n, k)
        prob = stored_pairs(m)
        ts = []
        for _ in range(3):
            t = time.perf_counter()
            check_matching(prob)
            ts.append(time.perf_counter() - t)
        row = {"n": n, "k": k, "pairs": int(m.nnz), "check s": round(min(ts), 4)}
        if n <= args.solve_max:
            t = time.perf_counter()
            epslap.solve(m)
            row["solve s"] = round(time.perf_counter() - t, 3)
            row["check / solve"] = round(row["check s"] / row["solve s"], 5)
        res["cases"].append(row)
        print(json.dumps(row), flush=True)
    with open(os.path.join(os.environ.get("OUT", os.path.dirname(__file__)),
                           "sparse_hall_check.json"), "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
