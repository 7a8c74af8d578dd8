"""Rows evaluated by epslap against the paper's Table 1 (docs/algorithm.md §5), mean over seeds.

    python -m benchmarks fidelity --sizes 1000 2000 4000 --seeds 3

Rows evaluated do not depend on the machine or the thread count, so this table measures the
algorithm, not the hardware: a ratio near 1 says the ε schedule and the estimate do the work the
authors' implementation does. "passes" = ε-passes + the exact pass, mean over the seeds.
"""
from __future__ import annotations

import argparse

from ._common import Output, markdown

PAPER = {  # Guthe & Thuerck 2021, Table 1 (rows evaluated with ε, CPU)
    1000: dict(sanity=1000, random=12824, geometric=19998, disjoint=28229, rank1=3503,
               rank2=28969, rank4=25239, rank8=22989),
    2000: dict(sanity=2000, random=29606, geometric=54741, disjoint=76140, rank1=7435,
               rank2=72742, rank4=61461, rank8=57539),
    4000: dict(sanity=4000, random=65389, geometric=125907, disjoint=190391, rank1=16519,
               rank2=185804, rank4=142926, rank8=120681),
    8000: dict(sanity=8000, random=153469, geometric=301640, disjoint=496800, rank1=35822,
               rank2=456406, rank4=328156, rank8=276196),
}
CLASSES = ["sanity", "random", "geometric", "disjoint", "rank1", "rank2", "rank4", "rank8"]


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 2000, 4000])
    ap.add_argument("--seeds", type=int, default=3, help="seeds 0 .. SEEDS-1")
    ap.add_argument("--classes", nargs="+", default=CLASSES)


def run(args: argparse.Namespace, out: Output) -> None:
    import numpy as np

    import costfns
    import epslap
    for n in args.sizes:
        for name in args.classes:
            counts, passes = [], []
            for seed in range(args.seeds):
                sol = epslap.solve(costfns.generate(name, n, seed))
                counts.append(sol.stats["rows_evaluated"])
                passes.append(sol.stats["passes"])
            ours = float(np.mean(counts))
            paper = PAPER.get(n, {}).get(name)
            out.add(dict(n=n, cls=name, ours=ours, paper=paper, passes=float(np.mean(passes)),
                         ratio=ours / paper if paper else None))
            print(f"n={n} {name}: {ours:,.0f} rows evaluated (paper {paper})", flush=True)


def render(meta: dict, rows: list[dict]) -> str:
    body = [[r["n"], r["cls"], f"{r['ours']:,.0f}",
             f"{r['paper']:,}" if r["paper"] else "–",
             f"{r['ratio']:.2f}" if r["ratio"] is not None else "–", f"{r['passes']:.1f}"]
            for r in rows]
    return markdown(["n", "class", "epslap rows evaluated", "paper", "ratio", "passes"], body)
