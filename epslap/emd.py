"""Image Earth Mover's Distance at full pixel resolution, distance matrices and MDS plots.

Every pixel of the smaller image is matched to a distinct pixel of the other; the optimal matching
under squared 5-D feature distance (colour, position) is solved exactly by :func:`epslap.solve`
from costs computed on demand (Guthe & Thuerck 2021, §5.3; Rubner et al., IJCV 2000).
"""
from __future__ import annotations

import csv
import os
import sys
import time
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class EMDResult:
    """``distance``: mean matched squared feature distance (total cost / matched pixels; the EMD
    with unit mass per pixel). ``cost``: the total. ``pixels_a``/``pixels_b``: flat (row-major)
    pixel indices of the matched pairs, one entry per pixel of the smaller image."""

    distance: float
    cost: float
    pixels_a: np.ndarray
    pixels_b: np.ndarray
    shape_a: tuple
    shape_b: tuple
    stats: dict = field(default_factory=dict)


def emd(img_a, img_b, *, size: int | None = None, position_weight: float = 1.0,
        colour: str = "rgb", backend: str = "cpu", memory=None) -> EMDResult:
    """Exact EMD between two images (paths or arrays); see :class:`costfns.ImageEMD`.

    ``size`` downscales each image to about that many pixels first (the paper used ~11,000,
    ~44,000 and ~176,000).
    """
    from costfns.images import ImageEMD

    from ._api import solve
    src = ImageEMD(img_a, img_b, size=size, position_weight=position_weight, colour=colour)
    kw = {"memory": memory} if backend == "cpu" else {}
    sol = solve(src, backend=backend, **kw)
    rows, cols = sol.row_ind, sol.col_ind
    pa, pb = (cols, rows) if src.swapped else (rows, cols)
    n = max(len(rows), 1)
    return EMDResult(distance=float(sol.cost) / n, cost=float(sol.cost), pixels_a=pa,
                     pixels_b=pb, shape_a=src.image_a.shape, shape_b=src.image_b.shape,
                     stats=sol.stats)


def _read_done(path) -> dict:
    done = {}
    if path and os.path.exists(path):
        with open(path, newline="") as fh:
            for rec in csv.DictReader(fh):
                done[(rec["a"], rec["b"])] = float(rec["distance"])
    return done


def emd_matrix(images, *, out: str | None = None, progress: bool = True, **kw) -> np.ndarray:
    """Symmetric (k, k) matrix of pairwise EMDs of ``images`` (paths), k(k−1)/2 solves.

    With ``out`` (a CSV path) every finished pair is appended as ``a,b,distance,seconds`` at once,
    and pairs already in the file are not solved again: an interrupted run continues where it
    stopped. ``kw`` goes to :func:`emd`.
    """
    names = [os.fspath(p) for p in images]
    k = len(names)
    done = _read_done(out)
    dist = np.zeros((k, k))
    pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
    new_file = out is not None and not os.path.exists(out)
    fh = open(out, "a", newline="") if out else None
    try:
        writer = csv.writer(fh) if fh else None
        if new_file:
            writer.writerow(["a", "b", "distance", "seconds"])
            fh.flush()
        t_start = time.perf_counter()
        solved = 0
        for count, (i, j) in enumerate(pairs, 1):
            key = (names[i], names[j])
            d = done.get(key, done.get(key[::-1]))  # a pair is the same pair either way round
            if d is None:
                t0 = time.perf_counter()
                d = emd(names[i], names[j], **kw).distance
                secs = time.perf_counter() - t0
                solved += 1
                if writer:
                    writer.writerow([names[i], names[j], repr(d), f"{secs:.3f}"])
                    fh.flush()
            dist[i, j] = dist[j, i] = d
            if progress:
                el = time.perf_counter() - t_start
                eta = el / solved * (len(pairs) - count) if solved else 0.0
                sys.stderr.write(f"\rpair {count}/{len(pairs)}  solved {solved}  "
                                 f"elapsed {el:.0f}s  ETA {eta:.0f}s   ")
                sys.stderr.flush()
        if progress:
            sys.stderr.write("\n")
    finally:
        if fh:
            fh.close()
    return dist


def classical_mds(dist: np.ndarray, dims: int = 2) -> np.ndarray:
    """Classical (Torgerson) multidimensional scaling of a distance matrix → (k, dims) points."""
    d = np.asarray(dist, dtype=np.float64)
    k = d.shape[0]
    j = np.eye(k) - np.ones((k, k)) / k
    b = -0.5 * j @ (d ** 2) @ j
    w, v = np.linalg.eigh(b)
    order = np.argsort(w)[::-1][:dims]
    return v[:, order] * np.sqrt(np.maximum(w[order], 0.0))


def plot_mds(dist: np.ndarray, images, path: str, *, thumb: int = 64) -> None:
    """Save the 2-D MDS of ``dist`` with each image's thumbnail at its point (paper Fig. 11)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.offsetbox import AnnotationBbox, OffsetImage

    from costfns.images import load_image
    xy = classical_mds(dist)
    fig, ax = plt.subplots(figsize=(8, 8))
    ax.scatter(xy[:, 0], xy[:, 1], s=4, c="k")
    for (x, y), img in zip(xy, images):
        im = load_image(img, size=thumb * thumb)
        ax.add_artist(AnnotationBbox(OffsetImage(im, zoom=1.0), (x, y), frameon=True, pad=0.1))
    span = np.ptp(xy, axis=0).max() if len(xy) > 1 else 1.0
    ax.set_xlim(xy[:, 0].min() - 0.15 * span, xy[:, 0].max() + 0.15 * span)
    ax.set_ylim(xy[:, 1].min() - 0.15 * span, xy[:, 1].max() + 0.15 * span)
    ax.set_title("Image EMD: 2-D multidimensional scaling")
    ax.set_aspect("equal")
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)


def plot_assignment(result: EMDResult, img_a, img_b, path: str, *, size: int | None = None) -> None:
    """Save A | B | B re-coloured from A through the optimal matching (a colour transfer).

    Pixels of B left unmatched (when B has more pixels than A) keep their own colour.
    """
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from costfns.images import load_image
    a = load_image(img_a, size=size)
    b = load_image(img_b, size=size)
    transfer = b.reshape(-1, 3).copy()
    transfer[result.pixels_b] = a.reshape(-1, 3)[result.pixels_a]
    fig, axes = plt.subplots(1, 3, figsize=(12, 4))
    for ax, im, title in zip(axes, (a, b, transfer.reshape(b.shape)),
                             ("A", "B", "B re-coloured from A (EMD matching)")):
        ax.imshow(im)
        ax.set_title(title)
        ax.axis("off")
    fig.suptitle(f"EMD = {result.distance:.5g} (mean squared feature distance)")
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)
