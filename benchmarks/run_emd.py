"""All pairs of 10 real photographs at ~11,000 pixels (issue 7): time per pair, MDS plot.

    python benchmarks/run_emd.py --size 11000 --out-dir /tmp/emd [--backend cpu]

The photographs come from scikit-image's bundled data (loaded offline; a benchmark-only
dependency). Writes distances.csv, mds.png and pair.png into --out-dir.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

PHOTOS = ["astronaut", "coffee", "chelsea", "rocket", "cat", "hubble_deep_field",
          "immunohistochemistry", "colorwheel", "coins", "camera"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--size", type=int, default=11000)
    ap.add_argument("--out-dir", default="emd_out")
    ap.add_argument("--backend", default="cpu")
    args = ap.parse_args()
    import skimage.data
    from PIL import Image

    import epslap
    from epslap.emd import plot_assignment, plot_mds
    os.makedirs(args.out_dir, exist_ok=True)
    paths = []
    for name in PHOTOS:
        p = os.path.join(args.out_dir, f"{name}.png")
        if not os.path.exists(p):
            Image.fromarray(getattr(skimage.data, name)()).save(p)
        paths.append(p)
    out = os.path.join(args.out_dir, "distances.csv")
    t0 = time.perf_counter()
    dist = epslap.emd_matrix(paths, out=out, size=args.size, backend=args.backend)
    total = time.perf_counter() - t0
    secs = []
    with open(out) as fh:
        next(fh)
        secs = [float(line.rsplit(",", 1)[1]) for line in fh]
    plot_mds(dist, paths, os.path.join(args.out_dir, "mds.png"))
    res = epslap.emd(paths[1], paths[3], size=args.size, backend=args.backend)
    plot_assignment(res, paths[1], paths[3], os.path.join(args.out_dir, "pair.png"),
                    size=args.size)
    print(f"{len(secs)} pairs at ~{args.size} pixels, backend {args.backend}: total {total:.1f}s, "
          f"per pair median {statistics.median(secs):.2f}s, min {min(secs):.2f}s, "
          f"max {max(secs):.2f}s; rows evaluated (coffee-rocket) {res.stats['rows_evaluated']:,}")
    np.set_printoptions(precision=4, suppress=True, linewidth=160)
    print(dist)


if __name__ == "__main__":
    main()
