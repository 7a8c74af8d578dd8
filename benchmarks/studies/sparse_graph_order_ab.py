"""Sparse input with scattered labels: the graph's order (``epslap.locality.sparse_order``)
against the labels as given, in one process, in turns, on k-nearest-neighbour graphs of
uniform points in random order (``benchmarks.sparse.knn_graph``, k = 10).

    python benchmarks/studies/sparse_graph_order_ab.py benchmarks/studies/sparse_graph_order_ab.json
"""
from __future__ import annotations

import json
import platform
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import epslap  # noqa: E402
import epslap.locality as loc  # noqa: E402
from benchmarks.sparse import knn_graph  # noqa: E402


def main(out_path: str, sizes=(300_000, 1_000_000)) -> None:
    rows = []
    for n in sizes:
        graph = knn_graph(n, 10)
        for mode in ("as given", "graph order"):
            loc.SPARSE_RELABEL_FROM = 1 << 62 if mode == "as given" else 1 << 18
            t = time.perf_counter()
            sol = epslap.solve(graph)
            rows.append({"n": n, "labels": mode, "seconds": round(time.perf_counter() - t, 2),
                         "auction_s": round(sol.stats["time_auction_s"], 2),
                         "cost": sol.cost, "relabeled": sol.stats["relabeled"]})
            print(rows[-1], flush=True)
    meta = {"date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": platform.processor() or platform.machine(),
            "command": "python benchmarks/studies/sparse_graph_order_ab.py " + out_path}
    Path(out_path).write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))


if __name__ == "__main__":
    main(sys.argv[1])
