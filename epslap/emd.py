"""Image Earth Mover's Distance at full pixel resolution, distance matrices and MDS plots.

An image is a distribution of unit masses, one per pixel, over 5-D features (colour, position in
the unit square). Both images are brought to exactly the same pixel count (resampled onto one
grid where they differ), so the optimal assignment of one image's pixels to the other's, solved
exactly by :func:`epslap.solve` from costs computed on demand, is the balanced EMD with uniform
weights (Rubner et al., IJCV 2000; Guthe & Thuerck 2021, §5.3). The ground distance is the
Euclidean feature distance (default: W1, what POT's ``ot.emd2`` and pyemd compute with the same
features and uniform weights) or its square (W2², the paper's cost).
"""
from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ._api import solve
from ._outputs import ResumableCsv
from ._runner import run_tasks

_CSV_HEADER = ["a", "b", "settings", "distance", "seconds", "error"]


@dataclass(frozen=True)
class EMDResult:
    """``distance``: the optimal mean matched ground distance, which is ``quantity``: ``"W1"``
    (``metric="euclidean"``) or ``"W2^2"`` (``metric="sqeuclidean"``, a squared distance: its
    square root is W2). ``cost``: the total over the matched pairs. ``pixels_a``/``pixels_b``:
    flat (row-major) pixel indices of the matched pairs in the images as compared, of shapes
    ``shape_a``/``shape_b`` (after any resampling). Every pixel is matched unless
    ``unmatched="drop"`` left the larger image's surplus pixels out."""

    distance: float
    cost: float
    pixels_a: np.ndarray
    pixels_b: np.ndarray
    shape_a: tuple
    shape_b: tuple
    metric: str = "euclidean"
    quantity: str = "W1"
    unmatched: str = "resample"
    stats: dict = field(default_factory=dict)

    @property
    def true_distance(self) -> float:
        """A distance between the images (a metric): W1, or W2 = √(W2²)."""
        return true_distances(self.distance, self.metric)


def true_distances(values, metric: str):
    """W1 values as they are; W2² values → W2 (their square roots), a metric for MDS."""
    return np.sqrt(values) if metric == "sqeuclidean" else values


def emd(img_a, img_b, *, size: int | None = None, metric: str = "euclidean",
        unmatched: str = "resample", position_weight: float = 1.0, colour: str = "rgb",
        backend: str = "cpu", memory=None, threads: int | None = None) -> EMDResult:
    """Exact EMD between two images (paths or arrays); see :class:`costfns.ImageEMD`.

    ``size``: pixels per image (the paper used ~11,000, ~44,000 and ~176,000). Two images of
    equal pixel count within ``size`` are compared as they are; otherwise both are resampled
    onto one grid of at most ``size`` pixels (:func:`costfns.load_image_pair`), so that the
    result is a balanced EMD. ``metric``: ``"euclidean"`` (default, W1) or
    ``"sqeuclidean"`` (W2²). ``unmatched="drop"`` instead keeps each image's own resolution
    (about ``size`` pixels each) and leaves the larger image's surplus pixels unmatched: a
    partial matching, not an EMD of equal masses. ``position_weight`` (λ >= 0) weighs the
    pixels' positions against their colours and ``colour`` (``"rgb"`` or ``"lab"``) is the
    colour space (:func:`costfns.pixel_features`). ``backend``, ``memory`` (the row-cache
    budget) and ``threads`` (CPU threads, default automatic) are those of :func:`epslap.solve`.
    """
    from costfns.images import ImageEMD

    src = ImageEMD(img_a, img_b, size=size, position_weight=position_weight, colour=colour,
                   metric=metric, unmatched=unmatched)
    sol = solve(src, backend=backend, memory=memory, threads=threads)
    rows, cols = sol.row_ind, sol.col_ind
    pa, pb = (cols, rows) if src.swapped else (rows, cols)
    n = max(len(rows), 1)
    return EMDResult(distance=float(sol.cost) / n, cost=float(sol.cost), pixels_a=pa,
                     pixels_b=pb, shape_a=src.image_a.shape, shape_b=src.image_b.shape,
                     metric=metric, quantity=src.quantity, unmatched=unmatched,
                     stats=sol.stats)


def _settings(size, metric, unmatched, position_weight, colour) -> str:
    """What a distance depends on, as one CSV field: a resumed run reuses only rows computed
    with the same settings (another metric or size gives other numbers)."""
    return (f"metric={metric};size={size};unmatched={unmatched};"
            f"position_weight={float(position_weight)!r};colour={colour}")


def _open_csv(out: str | None, settings: str):
    """(finished pairs, the file) for ``out``: the pairs a CSV written with ``settings`` holds
    (a pair that failed is not finished); a file of another layout is refused."""
    if out is None:
        return {}, None

    def check_header(header) -> None:
        if header not in (_CSV_HEADER, _CSV_HEADER[:-1]):  # (files without the error column)
            raise ValueError(f"{out} has columns {','.join(header or [])!r}, not "
                             f"{','.join(_CSV_HEADER)!r} (written by an older epslap?); "
                             "use another output file")
    file = ResumableCsv(out, _CSV_HEADER, check_header, durable=False)
    done = {}
    for rec in file.rows:
        failed = len(rec) > 5 and rec[5] != ""
        if len(rec) == len(file.header) and rec[2] == settings and not failed:
            done[(rec[0], rec[1])] = float(rec[3])
    return done, file


def _emd_pair(a: str, b: str, kw: dict) -> EMDResult:
    """One pair, where it is solved (a Dask worker loads its own images)."""
    return emd(a, b, **kw)


def emd_matrix(images: Sequence, *, out: str | None = None, progress: bool = True,
               size: int | None = None, metric: str = "euclidean", unmatched: str = "resample",
               position_weight: float = 1.0, colour: str = "rgb", backend: str = "cpu",
               memory=None, threads: int | None = None, client=None,
               on_pair: Callable[[int, int, EMDResult], None] | None = None) -> np.ndarray:
    """Symmetric (k, k) matrix of pairwise EMDs of ``images`` (paths), k(k−1)/2 solves.

    The entries are :func:`emd` distances for ``metric`` (W1, or W2² for ``"sqeuclidean"``:
    ``epslap.emd.true_distances`` turns them into W2, ``from epslap.emd import
    true_distances``); ``size``, ``unmatched``, ``position_weight``, ``colour``, ``backend``,
    ``memory`` and ``threads`` are :func:`emd`'s, the same for every pair, and ``progress``
    shows a bar of the pairs. With ``out`` (a CSV path) every finished pair
    is appended as ``a,b,settings,distance,seconds,error`` at once, and pairs already in the
    file with the same settings are not solved again: an interrupted run continues where it
    stopped. ``client`` (a ``dask.distributed.Client``) solves the pairs as Dask tasks on its
    workers; each worker reads the images itself, so the paths must be valid there. A pair that
    fails (an unreadable image) gets NaN, its error in ``out``, and a warning at the end; the
    other pairs complete. ``on_pair(i, j, result)`` receives each pair this call solves (for
    its matching: no pair need be solved twice).
    """
    names = [os.fspath(p) for p in images]
    settings = _settings(size, metric, unmatched, position_weight, colour)
    kw = {"size": size, "metric": metric, "unmatched": unmatched,
          "position_weight": position_weight, "colour": colour, "backend": backend,
          "memory": memory, "threads": threads}
    k = len(names)
    dist = np.zeros((k, k))
    done, file = _open_csv(out, settings)
    tasks = []
    for i in range(k):
        for j in range(i + 1, k):
            d = done.get((names[i], names[j]), done.get((names[j], names[i])))  # either way
            if d is None:
                tasks.append(((i, j), _emd_pair, (names[i], names[j], kw)))
            else:
                dist[i, j] = dist[j, i] = d
    failed = []

    def finished(key, outcome) -> None:
        i, j = key
        res = outcome.value
        d = np.nan if res is None else res.distance
        dist[i, j] = dist[j, i] = d
        if outcome.error is not None:
            failed.append(f"{names[i]} vs {names[j]}: {outcome.error}")
        if file:
            file.append([names[i], names[j], settings, repr(d), f"{outcome.seconds:.3f}",
                         outcome.error or ""])
        if on_pair is not None and res is not None:
            on_pair(i, j, res)
    try:
        run_tasks(tasks, finished, client=client, progress=progress, desc="pairs")
    finally:
        if file:
            file.close()
    if failed:
        warnings.warn(f"{len(failed)} of {len(tasks)} pairs failed (NaN in the matrix): "
                      + "; ".join(failed), RuntimeWarning, stacklevel=2)
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


def plot_mds(dist: np.ndarray, images, path: str, *, metric: str = "euclidean",
             thumb: int = 64) -> None:
    """Save the 2-D MDS of ``dist`` with each image's thumbnail at its point (paper Fig. 11).

    ``dist`` holds :func:`emd_matrix` values for ``metric``; MDS embeds distances, so W2²
    values are drawn by their square roots (W2), W1 values as they are."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.offsetbox import AnnotationBbox, OffsetImage

    from costfns.images import load_image
    xy = classical_mds(true_distances(np.asarray(dist, dtype=np.float64), metric))
    fig, ax = plt.subplots(figsize=(8, 8))
    ax.scatter(xy[:, 0], xy[:, 1], s=4, c="k")
    for (x, y), img in zip(xy, images):
        im = load_image(img, size=thumb * thumb)
        ax.add_artist(AnnotationBbox(OffsetImage(im, zoom=1.0), (x, y), frameon=True, pad=0.1))
    span = np.ptp(xy, axis=0).max() if len(xy) > 1 else 1.0
    ax.set_xlim(xy[:, 0].min() - 0.15 * span, xy[:, 0].max() + 0.15 * span)
    ax.set_ylim(xy[:, 1].min() - 0.15 * span, xy[:, 1].max() + 0.15 * span)
    name = "W2 = √(W2²)" if metric == "sqeuclidean" else "W1"
    ax.set_title(f"Image EMD ({name}): 2-D multidimensional scaling")
    ax.set_aspect("equal")
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)


def plot_assignment(result: EMDResult, img_a, img_b, path: str, *,
                    size: int | None = None) -> None:
    """Save A | B | B re-coloured from A through the optimal matching (a colour transfer).

    ``img_a``, ``img_b`` and ``size`` are those the result was computed from: the images are
    loaded as :func:`emd` compared them. Pixels of B left unmatched (``unmatched="drop"``, B
    larger than A) keep their own colour.
    """
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from costfns.images import load_image_pair
    a, b = load_image_pair(img_a, img_b, size=size, unmatched=result.unmatched)
    if (a.shape, b.shape) != (tuple(result.shape_a), tuple(result.shape_b)):
        raise ValueError(f"the images at size={size} have shapes {a.shape} and {b.shape}, the "
                         f"result was computed at {result.shape_a} and {result.shape_b}: pass "
                         "the size the result was computed with")
    transfer = b.reshape(-1, 3).copy()
    transfer[result.pixels_b] = a.reshape(-1, 3)[result.pixels_a]
    fig, axes = plt.subplots(1, 3, figsize=(12, 4))
    for ax, im, title in zip(axes, (a, b, transfer.reshape(b.shape)),
                             ("A", "B", "B re-coloured from A (EMD matching)")):
        ax.imshow(im)
        ax.set_title(title)
        ax.axis("off")
    what = ("W2², mean squared feature distance" if result.metric == "sqeuclidean"
            else "W1, mean feature distance")
    fig.suptitle(f"EMD = {result.distance:.5g} ({what})")
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)
