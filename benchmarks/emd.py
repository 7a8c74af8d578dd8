"""Image EMD: all pairs of ten photographs at about 11,000 pixels each, time per pair.

    python -m benchmarks emd --size 11000 [--backend gpu] [--out-dir /tmp/emd]

The photographs are scikit-image's sample images (astronaut, coffee, chelsea, rocket, cat,
hubble_deep_field, immunohistochemistry, colorwheel, coins, camera), stored downscaled in
benchmarks/photos/; ``--skimage`` reads the originals from scikit-image instead (a
benchmark-only dependency). Each image is downscaled to about ``--size`` pixels by
``epslap.emd``. Every pair is solved exactly; the JSON holds the time of every pair and the
distance matrix. ``--out-dir`` also keeps distances.csv, the MDS plot mds.png and the colour
transfer coffee -> rocket pair.png.
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

from ._common import HERE, Output, markdown

PHOTOS = ["astronaut", "coffee", "chelsea", "rocket", "cat", "hubble_deep_field",
          "immunohistochemistry", "colorwheel", "coins", "camera"]


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--size", type=int, default=11000)
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--metric", default="sqeuclidean", choices=["sqeuclidean", "euclidean"],
                    help="ground distance (default %(default)s: the paper's image class, the "
                         "one the table on the benchmark page was measured with)")
    ap.add_argument("--skimage", action="store_true",
                    help="the originals from scikit-image instead of benchmarks/photos/")
    ap.add_argument("--out-dir", help="keep distances.csv, mds.png and pair.png here")


def _paths(skimage: bool, out_dir: str) -> list[str]:
    if not skimage:
        return [str(HERE / "photos" / f"{name}.jpg") for name in PHOTOS]
    import skimage.data
    from PIL import Image
    paths = []
    for name in PHOTOS:
        p = os.path.join(out_dir, f"{name}.png")
        if not os.path.exists(p):
            Image.fromarray(getattr(skimage.data, name)()).save(p)
        paths.append(p)
    return paths


def run(args: argparse.Namespace, out: Output) -> None:
    import epslap
    from epslap.emd import plot_assignment, plot_mds
    out_dir = args.out_dir or tempfile.mkdtemp(prefix="epslap-emd-")
    os.makedirs(out_dir, exist_ok=True)
    paths = _paths(args.skimage, out_dir)
    csv = os.path.join(out_dir, "distances.csv")
    t0 = time.perf_counter()
    dist = epslap.emd_matrix(paths, out=csv, size=args.size, backend=args.backend,
                             metric=args.metric)
    total = time.perf_counter() - t0
    with open(csv) as fh:
        next(fh)
        pairs = [line.strip().split(",") for line in fh if line.strip()]
    secs = [float(p[-1]) for p in pairs]
    res = epslap.emd(paths[1], paths[3], size=args.size, backend=args.backend,
                     metric=args.metric)
    if args.out_dir:
        plot_mds(dist, paths, os.path.join(out_dir, "mds.png"))
        plot_assignment(res, paths[1], paths[3], os.path.join(out_dir, "pair.png"),
                        size=args.size)
    out.meta["images"] = [os.path.basename(p) for p in paths]
    out.add(dict(pairs=len(secs), size=args.size, backend=args.backend, total_s=total,
                 pair_s=secs, median_s=statistics.median(secs), min_s=min(secs),
                 max_s=max(secs), matched_pixels_coffee_rocket=int(len(res.pixels_a)),
                 rows_evaluated_coffee_rocket=res.stats["rows_evaluated"],
                 distances=[[float(x) for x in row] for row in dist]))
    print(f"{len(secs)} pairs at ~{args.size} pixels, backend {args.backend}: total {total:.1f} s",
          flush=True)


def render(meta: dict, rows: list[dict]) -> str:
    body = [[r["pairs"], r["size"], r["backend"], f"{r['total_s']:.1f}",
             f"{r['median_s']:.2f}", f"{r['min_s']:.2f}", f"{r['max_s']:.2f}",
             f"{r['rows_evaluated_coffee_rocket']:,}"] for r in rows]
    return markdown(["pairs", "pixels (about)", "backend", "total s", "per pair median s",
                     "min s", "max s", "rows evaluated, coffee vs rocket"], body)
