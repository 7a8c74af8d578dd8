"""Whether per-tile bounds would certify squared Euclidean point sets faster on the CPU than the
lifted nearest-neighbour query of ``epslap/point_passes.py``.

A pass at the solve's final prices, for every row: its least ``c - v`` beside its own pair and
its violating pairs (``c - v`` below ``u_i``). Lifted: the query of 16 nearest lifted columns per
row alone (``cKDTree``, what ``PointPasses.certify`` asks for; its pair costs not counted).
Tiles: the Morton-ordered columns in tiles of 128, each with its bounding box and largest price;
a tile is read only where the distance to its box minus that price lies below the row's limit,
the tiles around the row's own pair first (they set the least ``c - v``). Both on 2 threads.

    python benchmarks/studies/tile_certificate.py 200000 uniform
    python benchmarks/studies/tile_certificate.py 200000 clusters

tile_certificate.json holds the runs of 2026-11-30 (2-core machine, epslap 52a9969).
"""
import json
import sys
import time

import numpy as np
from numba import njit, prange
from scipy.spatial import cKDTree

import costfns
import epslap
from epslap.locality import relabeled

TILE = 128


@njit(parallel=True, cache=False)
def tile_pass(x, y, v, u, own, tile):
    """Per row: violating pairs (beyond 1e-12 relative), least c - v beside its own pair, tiles
    read."""
    n2 = y.shape[0]
    nt = (n2 + tile - 1) // tile
    lo = np.empty((nt, 2))
    hi = np.empty((nt, 2))
    vmax = np.empty(nt)
    for t in range(nt):
        a, b = t * tile, min(t * tile + tile, n2)
        lo[t, 0], lo[t, 1] = y[a:b, 0].min(), y[a:b, 1].min()
        hi[t, 0], hi[t, 1] = y[a:b, 0].max(), y[a:b, 1].max()
        vmax[t] = v[a:b].max()
    n1 = x.shape[0]
    bad = np.zeros(n1, np.int64)
    least = np.empty(n1)
    read = np.zeros(n1, np.int64)
    for i in prange(n1):
        x0, x1, limit = x[i, 0], x[i, 1], u[i]
        best = np.inf
        count = 0
        tiles = 0
        t0 = own[i] // tile
        for step in range(nt + 5):
            if step < 5:  # the tiles around the own pair's first
                t = t0 - 2 + step
                if t < 0 or t >= nt:
                    continue
            else:
                t = step - 5
                if t0 - 2 <= t <= t0 + 2:
                    continue
            d0 = max(lo[t, 0] - x0, 0.0, x0 - hi[t, 0])
            d1 = max(lo[t, 1] - x1, 0.0, x1 - hi[t, 1])
            if d0 * d0 + d1 * d1 - vmax[t] >= max(limit, best):
                continue
            tiles += 1
            for j in range(t * tile, min(t * tile + tile, n2)):
                e0, e1 = x0 - y[j, 0], x1 - y[j, 1]
                r = e0 * e0 + e1 * e1 - v[j]
                if j != own[i]:
                    best = min(best, r)
                    if r < limit - 1e-12 * (abs(limit) + abs(v[j])):
                        count += 1
        bad[i], least[i], read[i] = count, best, tiles
    return bad, least, read


def main():
    n, layout = int(sys.argv[1]), sys.argv[2]
    rng = np.random.default_rng(5)
    if layout == "clusters":  # 20 Gaussian clusters, as many points of each side in each
        centres = rng.random((20, 2))
        lab = rng.integers(0, 20, n)
        X = centres[lab] + rng.normal(scale=0.01, size=(n, 2))
        Y = centres[rng.permutation(lab)] + rng.normal(scale=0.01, size=(n, 2))
    else:
        X, Y = rng.random((n, 2)), rng.random((n, 2))
    src, _ = relabeled(costfns.SqEuclidean(X, Y))
    sol = epslap.solve(src, candidates=True, threads=2)
    x, y = src.X, src.Y
    v, u = np.asarray(sol.v, np.float64), np.asarray(sol.u, np.float64)
    own = np.asarray(sol.col_ind, np.int64)
    h = np.sqrt(np.maximum(v.max() - v, 0.0))
    t = time.perf_counter()
    tree = cKDTree(np.column_stack([y, h]))
    tree.query(np.column_stack([x, np.zeros(n)]), k=16, workers=2)
    lifted = time.perf_counter() - t
    tile_pass(x[:64], y, v, u[:64], own[:64], TILE)  # compiled before the clock
    t = time.perf_counter()
    bad, least, read = tile_pass(x, y, v, u, own, TILE)
    tiles = time.perf_counter() - t
    print(json.dumps(dict(layout=layout, n=n, lifted_query_s=round(lifted, 2),
                          tile_pass_s=round(tiles, 2), tiles_read_per_row=round(float(read.mean()), 1),
                          tiles=int((n + TILE - 1) // TILE), rows_violating=int((bad > 0).sum()),
                          price_range=float(v.max() - v.min()))))


if __name__ == "__main__":
    main()
