"""Image EMD: all pairs of ten photographs at about 11,000 pixels each, time per pair.

    python -m benchmarks emd --size 11000 [--backend gpu] [--out-dir /tmp/emd]
    python -m benchmarks emd --size 11000 --threads 1 --workers 1 2     # on Dask: 1, 2 workers
    python -m benchmarks emd --size 11000 --backend gpu --workers 0 1 2  # plain loop, dask-cuda

The photographs are scikit-image's sample images (astronaut, coffee, chelsea, rocket, cat,
hubble_deep_field, immunohistochemistry, colorwheel, coins, camera), stored downscaled in
benchmarks/photos/; ``--skimage`` reads the originals from scikit-image instead (a
benchmark-only dependency). Each image is downscaled to about ``--size`` pixels by
``epslap.emd``. Every pair is solved exactly; the JSON holds the time of every pair and the
distance matrix. ``--out-dir`` also keeps distances.csv, the MDS plot mds.png and the colour
transfer coffee -> rocket pair.png.

``--workers`` runs the same 45 pairs once per count given: 0 is the plain loop in this process,
N >= 1 a local Dask cluster of N worker processes (``LocalCUDACluster``, one GPU each, with
``--backend gpu``). The cluster's start is timed apart from the pairs; every run's distances
must equal the first run's.
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
    ap.add_argument("--threads", type=int, help="CPU threads per solve (default: automatic)")
    ap.add_argument("--workers", type=int, nargs="+", metavar="N",
                    help="run on Dask with N local workers, once per N (0: the plain loop)")


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
    out_dir = args.out_dir or tempfile.mkdtemp(prefix="epslap-emd-")
    os.makedirs(out_dir, exist_ok=True)
    paths = _paths(args.skimage, out_dir)
    out.meta["images"] = [os.path.basename(p) for p in paths]
    if args.backend == "gpu":
        out.meta["gpu"] = _gpus()
    if args.workers:
        return _run_workers(args, paths, out_dir, out)
    import epslap
    from epslap.emd import plot_assignment, plot_mds
    csv = os.path.join(out_dir, "distances.csv")
    t0 = time.perf_counter()
    dist = epslap.emd_matrix(paths, out=csv, size=args.size, backend=args.backend,
                             metric=args.metric, threads=args.threads)
    total = time.perf_counter() - t0
    secs = _pair_seconds(csv)
    res = epslap.emd(paths[1], paths[3], size=args.size, backend=args.backend,
                     metric=args.metric, threads=args.threads)
    if args.out_dir:
        plot_mds(dist, paths, os.path.join(out_dir, "mds.png"))
        plot_assignment(res, paths[1], paths[3], os.path.join(out_dir, "pair.png"),
                        size=args.size)
    out.add(dict(pairs=len(secs), size=args.size, backend=args.backend, total_s=total,
                 pair_s=secs, median_s=statistics.median(secs), min_s=min(secs),
                 max_s=max(secs), matched_pixels_coffee_rocket=int(len(res.pixels_a)),
                 rows_evaluated_coffee_rocket=res.stats["rows_evaluated"],
                 distances=[[float(x) for x in row] for row in dist]))
    print(f"{len(secs)} pairs at ~{args.size} pixels, backend {args.backend}: total {total:.1f} s",
          flush=True)


def _gpus() -> str:
    """The machine's GPUs, e.g. "2 x NVIDIA H200"."""
    import cupy
    rt = cupy.cuda.runtime
    names = [rt.getDeviceProperties(d)["name"].decode() for d in range(rt.getDeviceCount())]
    return " + ".join(f"{names.count(n)} x {n}" for n in dict.fromkeys(names))


def _pair_seconds(csv: str) -> list[float]:
    with open(csv) as fh:
        next(fh)
        return [float(line.strip().split(",")[4]) for line in fh if line.strip()]


def _run_workers(args, paths: list[str], out_dir: str, out: Output) -> None:
    import numpy as np

    import epslap
    from epslap._runner import close_client, make_client
    epslap.emd(paths[1], paths[3], size=500, backend=args.backend, metric=args.metric)  # compile
    first = None
    for workers in args.workers:
        t0 = time.perf_counter()
        client = None
        if workers:
            client, _ = make_client(workers=workers, gpu=args.backend == "gpu")
            client.run(epslap.emd, paths[1], paths[3], size=500, backend=args.backend,
                       metric=args.metric)  # each worker loads (or compiles) its kernels
        start = time.perf_counter() - t0
        csv = os.path.join(out_dir, f"distances_{workers}.csv")
        if os.path.exists(csv):
            os.remove(csv)
        t0 = time.perf_counter()
        try:
            dist = epslap.emd_matrix(paths, out=csv, size=args.size, backend=args.backend,
                                     metric=args.metric, threads=args.threads, client=client,
                                     progress=False)
        finally:
            if client is not None:
                close_client(client)
        total = time.perf_counter() - t0
        first = dist if first is None else first
        secs = _pair_seconds(csv)
        out.add(dict(pairs=len(secs), size=args.size, backend=args.backend, workers=workers,
                     threads_per_solve=args.threads, cluster_start_s=start, total_s=total,
                     sum_pair_s=sum(secs), median_s=statistics.median(secs),
                     same_distances=bool(np.array_equal(dist, first)),
                     distances=[[float(x) for x in row] for row in dist]))
        print(f"{len(secs)} pairs, {workers or 'no'} Dask workers: {total:.1f} s "
              f"(cluster start {start:.1f} s)", flush=True)


def render(meta: dict, rows: list[dict]) -> str:
    if rows and "workers" in rows[0]:
        base = rows[0]["total_s"]
        body = [[r["pairs"], r["size"], r["backend"], r["workers"] or "plain loop",
                 r.get("threads_per_solve") or "auto", f"{r['cluster_start_s']:.1f}",
                 f"{r['total_s']:.1f}", f"{base / r['total_s']:.2f}×",
                 "yes" if r["same_distances"] else "NO"] for r in rows]
        return markdown(["pairs", "pixels (about)", "backend", "Dask workers",
                         "threads per solve", "cluster start s", "pairs s",
                         "speed-up vs first row", "distances equal"], body)
    body = [[r["pairs"], r["size"], r["backend"], f"{r['total_s']:.1f}",
             f"{r['median_s']:.2f}", f"{r['min_s']:.2f}", f"{r['max_s']:.2f}",
             f"{r['rows_evaluated_coffee_rocket']:,}"] for r in rows]
    return markdown(["pairs", "pixels (about)", "backend", "total s", "per pair median s",
                     "min s", "max s", "rows evaluated, coffee vs rocket"], body)
