"""How many Dijkstra steps could run on candidate lists, certified, with the same decisions.

A design study of the GPU step latency, not part of the solver. Every step of the GPU
pass kernel scans one whole row and needs one grid-wide agreement (about 3.2 µs). Suppose that at
the start of each pass every row r kept its candidate list

    L_r = {j : c[r][j] - v0[j] < tau_r},   tau_r = the k-th smallest of c[r][:] - v0

(v0: the prices at the pass's start). Within a pass v only decreases, so an excluded column
keeps c[r][j] - v[j] >= tau_r, and the candidate that row r, reached at distance mn_r through
column j_r, could give it is at least

    bound_r = mn_r + tau_r - (c[r][j_r] - v[j_r])       (the free row f: bound_f = tau_f).

Dijkstra over the lists alone (sparse d) then takes exactly the dense step whenever its minimum
is below B = min over the rows scanned so far of bound_r: every excluded candidate is >= B, so
the dense d of every column below B is its sparse d, and the argmin and its tie rule agree. Such
steps need no dense scan and no grid-wide agreement: one block could run them. At the first step
of an augmentation that is not certified, the search would fall back to dense steps (after one
batched dense scan of the rows it has scanned).

A second fallback is counted too ("refresh"): at every uncertified step, rescan the rows
scanned so far (their d is then exact for every column) and go on over the lists. A third
("restart", what the experimental GPU kernel on branch gpu-lists does): an augmentation with any
uncertified step runs again from its start with dense steps only.

A candidate at or above B can never win a certified step (B only falls), so it is not kept; with
--tcap, a step counts as certified only while at most that many columns are kept (the size of
the search's table).

This replays the passes of the CPU solver in NumPy (its estimate, ε schedule and tie rule; the
replay's rows evaluated are compared with epslap's) and counts, for several k, the steps that
would run sparse.

    PYTHONPATH=. python benchmarks/studies/sparse_replay.py --n 2000 --classes random geometric --k 16 64 256
"""
from __future__ import annotations

import argparse

import numpy as np

import costfns
import epslap
from epslap._schedule import next_eps
from epslap.cpu.estimate.driver import estimate_rows


def _argmin(d, is_open, assigned):
    """The tie rule: smallest value, then an unassigned column, then the lowest index."""
    m = np.where(is_open, d, np.inf).min()
    tied = np.flatnonzero(is_open & (d == m))
    free = tied[~assigned[tied]]
    return int(free[0] if len(free) else tied[0]), m


def replay(c, ks, tcap=1 << 62):
    n = c.shape[0]
    v, perm, _, eps_upper, eps_lower, certified, _, _ = estimate_rows(
        c, n, n, c.dtype, integral=False)
    assert not certified
    v = v.astype(np.float64).copy()
    stats = {k: dict(sparse=0, dense=0, fallbacks=0, rescanned=0, refreshes=0, refreshed=0,
                     restart_dense=0, max_touched=0)
             for k in ks}
    rows = 0
    eps, first, second = float(eps_upper), True, False
    reverse = eps == 0.0
    total_d = total_eps = 0.0
    while eps >= 0.0:
        eps = float(next_eps(eps, float(eps_lower), total_d, total_eps, first, second, n, False))
        if eps == 0.0:
            eps = -1.0
        e = max(eps, 0.0)
        total_d = total_eps = 0.0
        owner = np.full(n, -1)
        red0 = c - v                       # c[r][j] - v0[j] at the pass's start
        tau = {k: np.partition(red0, k - 1, axis=1)[:, k - 1] for k in ks}
        for t in range(n):
            f = int(perm[n - 1 - t] if reverse else perm[t])
            is_open = np.ones(n, dtype=bool)
            assigned = owner >= 0
            d = c[f] - v
            pred = np.full(n, f)
            sparse = {k: np.where(red0[f] < tau[k][f], d, np.inf) for k in ks}
            bound = {k: tau[k][f] for k in ks}
            live = {k: True for k in ks}    # still certified in this augmentation
            # the "refresh" variant: at an uncertified step, rescan the rows scanned so far
            # (one batched dense sweep: their d is then exact everywhere) and go on sparse
            rsparse = {k: sparse[k].copy() for k in ks}
            rbound = dict(bound)
            closed = []
            mn = -np.inf
            steps = 0
            while True:
                rows += 1
                steps += 1
                j, m = _argmin(d, is_open, assigned)
                if not np.isfinite(m):
                    raise RuntimeError("infeasible")
                for k in ks:
                    s = stats[k]
                    ms = np.where(is_open, rsparse[k], np.inf).min()
                    if not ms < rbound[k]:
                        s["refreshes"] += 1
                        s["refreshed"] += len(closed) + 1
                        rsparse[k] = d.copy()
                        rbound[k] = np.inf
                    if live[k]:
                        ms = np.where(is_open, sparse[k], np.inf).min()
                        touched = int(np.isfinite(sparse[k]).sum())
                        if ms < bound[k] and touched <= tcap:   # the claim, checked
                            assert _argmin(sparse[k], is_open, assigned) == (j, m)
                            s["max_touched"] = max(s["max_touched"], touched)
                            s["sparse"] += 1
                            continue
                        live[k] = False
                        s["fallbacks"] += 1
                        s["rescanned"] += len(closed) + 1
                    s["dense"] += 1
                mn = max(mn, m)
                is_open[j] = False
                closed.append(j)
                if owner[j] < 0:
                    break
                i = int(owner[j])
                cand = ((c[i] - c[i, j]) - (v - v[j])) + mn
                better = is_open & (cand < d)
                d = np.where(better, cand, d)
                pred = np.where(better, i, pred)
                for k in ks:    # row i's list candidates and its bound, for both variants
                    listed = np.where((red0[i] < tau[k][i]) & is_open, cand, np.inf)
                    row_bound = mn + tau[k][i] - (c[i, j] - v[j])
                    rsparse[k] = np.minimum(rsparse[k], listed)
                    rbound[k] = min(rbound[k], row_bound)
                    if live[k]:     # candidates at or above B can never win a certified
                        bound[k] = min(bound[k], row_bound)     # step: they are not kept
                        sparse[k] = np.minimum(sparse[k],
                                               np.where(listed < bound[k], listed, np.inf))
            for k in ks:                    # the "restart" variant: a miss reruns it all dense
                if not live[k]:
                    stats[k]["restart_dense"] += steps
            cl = np.array(closed)
            delta = mn - d[cl]
            v[cl] -= delta + e
            total_d += float(delta.sum())
            total_eps += e * len(cl)
            col, row = closed[-1], int(pred[closed[-1]])
            while True:                     # flip the path back to f
                prev = int(np.flatnonzero(owner == row)[0]) if row != f else -1
                owner[col] = row
                if row == f:
                    break
                col, row = prev, int(pred[prev])
        if eps > 0.0:
            v -= v.max()
        second, first, reverse = first, False, not reverse
    return rows, stats


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--classes", nargs="+", default=["random", "geometric"])
    ap.add_argument("--k", type=int, nargs="+", default=[16, 64, 256])
    ap.add_argument("--tcap", type=int, default=1 << 62,
                    help="a step is certified only while at most this many columns are kept "
                         "(touched with a candidate below B)")
    args = ap.parse_args()
    print("| class | n | rows evaluated (replay / epslap) | k | steps sparse | steps dense | "
          "fallbacks | rows rescanned at fallbacks | refresh variant: refreshes | rows rescanned | "
          "restart variant: steps dense | most columns kept, certified |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name in args.classes:
        c = np.ascontiguousarray(costfns.generate(name, args.n, 0), dtype=np.float64)
        ref = epslap.solve(c, threads=1).stats["rows_evaluated"]
        rows, stats = replay(c, args.k, args.tcap)
        for k in args.k:
            s = stats[k]
            tot = s["sparse"] + s["dense"]
            print(f"| {name} | {args.n} | {rows:,} / {ref:,} | {k} | {s['sparse']:,} "
                  f"({100 * s['sparse'] / tot:.1f}%) | {s['dense']:,} | {s['fallbacks']:,} | "
                  f"{s['rescanned']:,} | {s['refreshes']:,} | {s['refreshed']:,} | "
                  f"{s['restart_dense']:,} ({100 * s['restart_dense'] / tot:.1f}%) | "
                  f"{s['max_touched']:,} |", flush=True)


if __name__ == "__main__":
    main()
