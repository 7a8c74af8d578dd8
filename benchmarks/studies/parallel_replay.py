"""Could several augmentations of a pass run at once on the GPU, with the same result?

A design study of the GPU step latency, not part of the solver. Every Dijkstra step of the
GPU pass kernel needs one grid-wide agreement (about 1.5 µs of a 3.2 µs step at n = 32000), and
at n = 32000 the kernel uses 32 of the 132 multiprocessors. Suppose the grid were split into m
groups, each searching its own augmentation (rows k, k + m, ... of the pass) on a snapshot of the
prices and owners: the state after every augmentation validated when its search began. Its search
is the sequential one unless an augmentation earlier in the pass, validated after the snapshot,
closed one of its columns: every other column kept its price and owner, and those closed columns
only got dearer, so they cannot win a step they did not win. So augmentations are validated in
order, and one whose closed set meets such an augmentation's is run again after its predecessor
(then it cannot conflict). Rows evaluated stay the CPU's.

This replays the CPU solver's passes (its estimate, ε schedule and tie rule; the replay's steps are
compared with epslap's rows evaluated), records every augmentation's closed columns and simulates
the schedule in units of one Dijkstra step: a group takes the next augmentation as soon as its
search ends (validation never blocks it), pays ``--overhead`` steps per augmentation (refreshing
its snapshot, the validation's agreement), and a rerun costs the augmentation's steps again.

    PYTHONPATH=. python benchmarks/studies/parallel_replay.py --n 8000 --classes random geometric
"""
from __future__ import annotations

import argparse
import time

import numba as nb
import numpy as np

import costfns
import epslap
from epslap._schedule import next_eps
from epslap.cpu.estimate.driver import estimate_rows


@nb.njit(cache=False)
def _pass(c, v, perm, reverse, eps, cols, offsets, pos, aug):
    """One pass; appends each augmentation's closed columns to ``cols`` (ends in ``offsets``)."""
    n = c.shape[0]
    owner = np.full(n, -1, np.int64)
    d = np.empty(n)
    pred = np.empty(n, np.int64)
    is_open = np.empty(n, np.bool_)
    closed = np.empty(n, np.int64)
    total_d = total_eps = 0.0
    for t in range(n):
        f = perm[n - 1 - t] if reverse else perm[t]
        for j in range(n):
            d[j] = c[f, j] - v[j]
            pred[j] = f
            is_open[j] = True
        n_closed = 0
        mn = -np.inf
        while True:
            best, best_d, best_free = -1, np.inf, False
            for j in range(n):      # the tie rule: value, then an unassigned column, then index
                if is_open[j]:
                    free = owner[j] < 0
                    if best < 0 or d[j] < best_d or (d[j] == best_d and free and not best_free):
                        best, best_d, best_free = j, d[j], free
            mn = max(mn, best_d)
            is_open[best] = False
            closed[n_closed] = best
            n_closed += 1
            if owner[best] < 0:
                break
            i = owner[best]
            for j in range(n):
                if is_open[j]:
                    cand = ((c[i, j] - c[i, best]) - (v[j] - v[best])) + mn
                    if cand < d[j]:
                        d[j] = cand
                        pred[j] = i
        for q in range(n_closed):
            j = closed[q]
            delta = mn - d[j]
            v[j] -= delta + eps
            total_d += delta
            cols[pos] = j
            pos += 1
        total_eps += eps * n_closed
        aug += 1
        offsets[aug] = pos
        col, row = closed[n_closed - 1], pred[closed[n_closed - 1]]
        while True:                 # flip the path back to f
            prev = -1
            if row != f:
                for q in range(n):
                    if owner[q] == row:
                        prev = q
                        break
            owner[col] = row
            if row == f:
                break
            col, row = prev, pred[prev]
    return pos, aug, total_d, total_eps


def replay(c):
    """Closed columns of every augmentation, their offsets, and each pass's augmentations."""
    n = c.shape[0]
    v, perm, _, eps_upper, eps_lower, certified, _, _ = estimate_rows(
        c, n, n, c.dtype, integral=False)
    assert not certified
    v = v.astype(np.float64).copy()
    eps, first, second = float(eps_upper), True, False
    reverse = eps == 0.0
    total_d = total_eps = 0.0
    cols = np.empty(1 << 27, np.int64)
    offsets = np.zeros(16 * n + 1, np.int64)
    pos = aug = 0
    passes = []
    while eps >= 0.0:
        eps = float(next_eps(eps, float(eps_lower), total_d, total_eps, first, second, n, False))
        if eps == 0.0:
            eps = -1.0
        start = aug
        pos, aug, total_d, total_eps = _pass(c, v, perm, reverse, max(eps, 0.0), cols, offsets,
                                             pos, aug)
        passes.append((start, aug))
        if eps > 0.0:
            v -= v.max()
        second, first, reverse = first, False, not reverse
    return cols[:pos], offsets[:aug + 1], passes


@nb.njit(cache=False)
def simulate(cols, offsets, first, last, n, groups, overhead):
    """(steps of the parallel schedule, reruns) for augmentations first..last-1 of one pass."""
    free_at = np.zeros(groups)
    validated_at = np.empty(last - first)
    stamp = np.full(n, -1, np.int64)          # the last validated augmentation closing a column
    t_valid = -1.0
    reruns = 0
    for k in range(first, last):
        g = np.argmin(free_at)
        start = free_at[g]
        steps = (offsets[k + 1] - offsets[k]) + overhead
        end = start + steps
        seen = first - 1                      # the snapshot: validated when the search began
        for j in range(k - 1, first - 1, -1):
            if validated_at[j - first] <= start:
                seen = j
                break
        conflict = False
        for p in range(offsets[k], offsets[k + 1]):
            if stamp[cols[p]] > seen:
                conflict = True
                break
        if conflict:                          # run again after its predecessor's validation
            reruns += 1
            t = max(end, t_valid) + steps
            free_at[g] = t
        else:
            t = max(end, t_valid)
            free_at[g] = end
        for p in range(offsets[k], offsets[k + 1]):
            stamp[cols[p]] = k
        validated_at[k - first] = t
        t_valid = t
    return max(t_valid, free_at.max()), reruns


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--classes", nargs="+", default=["random", "geometric"])
    ap.add_argument("--groups", type=int, nargs="+", default=[2, 4, 8])
    ap.add_argument("--overhead", type=float, default=1.0,
                    help="extra steps per augmentation in the parallel schedule")
    ap.add_argument("--no-check", action="store_true",
                    help="skip epslap's own solve (the rows-evaluated check) at large n")
    args = ap.parse_args()
    print("| class | n | steps (replay / epslap) | steps in augmentations of >= 1000 steps | "
          + " | ".join(f"m = {m}: speed-up (reruns)" for m in args.groups) + " |")
    print("|---|---|---|---|" + "---|" * len(args.groups))
    for name in args.classes:
        c = np.ascontiguousarray(costfns.generate(name, args.n, 0), dtype=np.float64)
        t0 = time.perf_counter()
        cols, offsets, passes = replay(c)
        ref = "–" if args.no_check else f"{epslap.solve(c).stats['rows_evaluated']:,}"
        lengths = np.diff(offsets)
        cells = []
        for m in args.groups:
            total, reruns = 0.0, 0
            for first, last in passes:
                t, r = simulate(cols, offsets, first, last, args.n, m, args.overhead)
                total += t
                reruns += r
            cells.append(f"{len(cols) / total:.2f}× ({reruns:,})")
        print(f"| {name} | {args.n} | {len(cols):,} / {ref} | "
              f"{lengths[lengths >= 1000].sum() / len(cols):.2f} | " + " | ".join(cells)
              + f" |   [{time.perf_counter() - t0:.0f} s]", flush=True)


if __name__ == "__main__":
    main()
