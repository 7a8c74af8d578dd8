"""Images as point sets: every pixel a 5-D feature (colour, position), for image EMD.

Guthe & Thuerck 2021, §5.3 (image retrieval after Rubner et al., "The Earth Mover's Distance as a
metric for image retrieval", IJCV 40(2), 2000): pixel → (R/max, G/max, B/max, x/(w−1), y/(h−1)).
Each image is a distribution of unit masses, one per pixel, over colour × the unit square. When
both images have the same number of pixels, the optimal assignment of one image's pixels to the
other's is the balanced EMD with uniform weights (the transport polytope's vertices are
permutations); the ground distance is the Euclidean feature distance (the EMD of Rubner et al.,
W1) or its square (W2²). Images of different pixel counts are resampled onto one common grid
first (:func:`load_image_pair`), unless partial matching is asked for.
"""
from __future__ import annotations

import os

import numpy as np

from ._base import CostSource
from .sources import Euclidean, SqEuclidean

#: The ground distances of :class:`ImageEMD` and what the optimal mean cost is, by metric.
METRICS = {"euclidean": (Euclidean, "W1"), "sqeuclidean": (SqEuclidean, "W2^2")}
#: What happens to pixels of the image with more of them: see :func:`load_image_pair`.
UNMATCHED = ("resample", "drop")


class ImageReadError(ValueError):
    """An image file that is missing or unreadable: a failure of the input, not of the
    arguments (the command line exits 1 for it, 2 for a bad value)."""


def load_image(source, *, size: int | None = None) -> np.ndarray:
    """An image as an (h, w, 3) float64 array in [0, 1].

    ``source``: a path (PNG, JPEG, PPM/PGM, TIFF, … anything Pillow reads) or an array (h, w),
    (h, w, 3) or (h, w, 4). Integer samples scale by their type's full range (8-bit by 255,
    16-bit by 65535), float samples are taken as they are; values outside [0, 1] are clipped.
    Grayscale is replicated to three channels; an alpha channel is
    composited over white (a transparent pixel has no colour of its own). ``size`` downscales so
    that the image has about that many pixels (aspect ratio kept; never upscaled).
    """
    from PIL import Image, UnidentifiedImageError
    if isinstance(source, (str, os.PathLike)):
        try:
            with Image.open(source) as im:
                im.load()
                img = _pil_to_rgb(im)
        except FileNotFoundError:
            raise ImageReadError(f"image file not found: {os.fspath(source)!r}") from None
        except (UnidentifiedImageError, OSError) as exc:
            raise ImageReadError(f"cannot read {os.fspath(source)!r} as an image: {exc}") from None
    else:
        img = _array_to_rgb(np.asarray(source))
    if img.shape[0] == 0 or img.shape[1] == 0:
        raise ValueError(f"image is empty (shape {img.shape})")
    if size is not None:
        img = _downscale(img, int(size))
    return img


def _pil_to_rgb(im) -> np.ndarray:
    if im.mode in ("RGBA", "LA", "PA") or (im.mode == "P" and "transparency" in im.info):
        im = im.convert("RGBA")
        return _array_to_rgb(np.asarray(im))
    if im.mode.startswith("I"):  # 16-bit (I;16…, or I holding 16-bit values) or 32-bit ints
        arr = np.asarray(im, dtype=np.float64)
        full = 65535.0 if im.mode.startswith("I;16") or not (arr.size and arr.max() > 65535) \
            else float(2**31 - 1)
        return _array_to_rgb(arr / full)  # as an array of that dtype is read (not by its max)
    if im.mode == "F":  # float samples: as a float array is read (not truncated to 8 bits)
        return _array_to_rgb(np.asarray(im, dtype=np.float64))
    return _array_to_rgb(np.asarray(im.convert("RGB")))


def _array_to_rgb(arr: np.ndarray) -> np.ndarray:
    if arr.dtype == np.bool_:
        arr = arr.astype(np.float64)
    elif arr.dtype.kind in "ui":
        arr = arr.astype(np.float64) / float(np.iinfo(arr.dtype).max)
    elif arr.dtype.kind == "f":
        arr = arr.astype(np.float64)
    else:
        raise ValueError(f"image array must be numeric, got dtype {arr.dtype}")
    if arr.ndim == 2:
        arr = np.repeat(arr[:, :, None], 3, axis=2)
    elif arr.ndim == 3 and arr.shape[2] == 4:
        alpha = arr[:, :, 3:4]
        arr = arr[:, :, :3] * alpha + (1.0 - alpha)  # over white
    elif arr.ndim == 3 and arr.shape[2] == 1:
        arr = np.repeat(arr, 3, axis=2)
    elif not (arr.ndim == 3 and arr.shape[2] == 3):
        raise ValueError(f"image must be (h, w), (h, w, 3) or (h, w, 4); got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError("image contains NaN or inf")
    return np.clip(arr, 0.0, 1.0)


def _downscale(img: np.ndarray, size: int) -> np.ndarray:
    from PIL import Image
    h, w = img.shape[:2]
    if size < 1:
        raise ValueError(f"size must be a positive pixel count, got {size}")
    if h * w <= size:
        return img
    scale = (size / (h * w)) ** 0.5
    nw, nh = max(1, round(w * scale)), max(1, round(h * scale))
    im = Image.fromarray((img * 255.0 + 0.5).astype(np.uint8))
    return np.asarray(im.resize((nw, nh), Image.Resampling.BOX), dtype=np.float64) / 255.0


def _srgb_to_lab(rgb: np.ndarray) -> np.ndarray:
    """CIE L*a*b* (D65) of sRGB in [0, 1], scaled to about [0, 1] per channel."""
    c = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    m = np.array([[0.4124564, 0.3575761, 0.1804375],
                  [0.2126729, 0.7151522, 0.0721750],
                  [0.0193339, 0.1191920, 0.9503041]])
    xyz = c @ m.T / np.array([0.95047, 1.0, 1.08883])
    e = 216 / 24389
    f = np.where(xyz > e, np.cbrt(xyz), (24389 / 27 * xyz + 16) / 116)
    lab = np.stack([116 * f[..., 1] - 16, 500 * (f[..., 0] - f[..., 1]),
                    200 * (f[..., 1] - f[..., 2])], axis=-1)
    return np.stack([lab[..., 0] / 100.0, (lab[..., 1] + 128) / 255.0,
                     (lab[..., 2] + 128) / 255.0], axis=-1)


def pixel_features(img: np.ndarray, *, position_weight: float = 1.0,
                   colour: str = "rgb") -> np.ndarray:
    """(h·w, 5) features in row-major pixel order: colour (3) then √λ·(x/(w−1), y/(h−1)).

    ``position_weight`` λ weighs position against colour in the squared distance
    (λ = 1 is the paper's feature); ``colour`` is ``"rgb"`` or ``"lab"``.
    """
    if colour not in ("rgb", "lab"):
        raise ValueError(f"colour must be 'rgb' or 'lab', got {colour!r}")
    if not position_weight >= 0 or not np.isfinite(position_weight):  # NaN fails >= too
        raise ValueError(f"position_weight must be a finite number >= 0, got {position_weight}")
    h, w = img.shape[:2]
    col = _srgb_to_lab(img) if colour == "lab" else img
    ys, xs = np.mgrid[0:h, 0:w]
    x = xs / max(w - 1, 1)
    y = ys / max(h - 1, 1)
    s = np.sqrt(position_weight)
    return np.column_stack([col.reshape(-1, 3), s * x.reshape(-1), s * y.reshape(-1)])


def _resample(img: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """``img`` box-filtered onto an ``(h, w)`` grid, each channel in float32 (no 8-bit rounding).

    Positions are normalised to [0, 1] per axis, so a grid of another aspect ratio samples the
    same distribution over the unit square: only its resolution changes."""
    from PIL import Image
    h, w = shape
    if img.shape[:2] == (h, w):
        return img
    chans = [np.asarray(Image.fromarray(np.ascontiguousarray(img[:, :, c], dtype=np.float32))
                        .resize((w, h), Image.Resampling.BOX), dtype=np.float64)
             for c in range(3)]  # a 2-D float32 array is a mode "F" image
    return np.clip(np.stack(chans, axis=-1), 0.0, 1.0)


def common_grid(shape_a: tuple, shape_b: tuple, pixels: int) -> tuple[int, int]:
    """One (h, w) grid of at most ``pixels`` pixels (as many as fit) for both images, its aspect
    ratio the geometric mean of theirs, so that neither image is squeezed more than the other."""
    aspect = np.sqrt(shape_a[1] / shape_a[0] * shape_b[1] / shape_b[0])  # width / height
    h = int(min(max(1, round(np.sqrt(pixels / aspect))), pixels))
    return h, max(1, pixels // h)


def load_image_pair(a, b, *, size: int | None = None,
                    unmatched: str = "resample") -> tuple[np.ndarray, np.ndarray]:
    """The two images as compared by :class:`ImageEMD`: (h, w, 3) float64 arrays in [0, 1].

    ``unmatched="resample"`` (default) gives both exactly the same number of pixels, so that
    every pixel is matched and the assignment is the balanced EMD: images of equal pixel count
    within ``size`` are left as they are; otherwise both are box-filtered from their originals
    onto :func:`common_grid` with at most ``min(size, pixels of a, pixels of b)`` pixels (never
    upscaled beyond the smaller image). ``unmatched="drop"`` downscales each image on its own to
    about ``size`` pixels (aspect kept): the larger image's surplus pixels stay unmatched.
    """
    if unmatched not in UNMATCHED:
        raise ValueError(f"unmatched must be 'resample' or 'drop', got {unmatched!r}")
    if size is not None and not (isinstance(size, (int, np.integer))
                                 and not isinstance(size, bool) and size >= 1):
        raise ValueError(f"size must be a positive pixel count, got {size!r}")
    if unmatched == "drop":
        return load_image(a, size=size), load_image(b, size=size)
    img_a, img_b = load_image(a), load_image(b)
    pa, pb = img_a.shape[0] * img_a.shape[1], img_b.shape[0] * img_b.shape[1]
    target = min(pa, pb) if size is None else min(int(size), pa, pb)
    if pa == pb == target:
        return img_a, img_b
    grid = common_grid(img_a.shape, img_b.shape, target)
    return _resample(img_a, grid), _resample(img_b, grid)


class ImageEMD(CostSource):
    """Ground distances between the pixels of two images (rows = the image with fewer pixels).

    ``metric``: ``"euclidean"`` (default; the EMD of Rubner et al., W1) or ``"sqeuclidean"``
    (W2², the paper's §5.3 cost). ``size`` and ``unmatched``: see :func:`load_image_pair`;
    ``image_a`` and ``image_b`` are the images as compared. ``swapped`` is True when the rows
    are the pixels of ``b`` (b has fewer pixels than a). The CPU forms and the CUDA device form
    are those of :class:`Euclidean` or :class:`SqEuclidean`.
    """

    def __init__(self, a, b, *, size: int | None = None, position_weight: float = 1.0,
                 colour: str = "rgb", metric: str = "euclidean", unmatched: str = "resample"):
        if metric not in METRICS:
            raise ValueError(f"metric must be 'euclidean' or 'sqeuclidean', got {metric!r}")
        self.metric = metric
        self.image_a, self.image_b = load_image_pair(a, b, size=size, unmatched=unmatched)
        fa = pixel_features(self.image_a, position_weight=position_weight, colour=colour)
        fb = pixel_features(self.image_b, position_weight=position_weight, colour=colour)
        self.swapped = len(fb) < len(fa)
        source = METRICS[metric][0]
        self.points = source(fb, fa) if self.swapped else source(fa, fb)
        self.shape, self.dtype = self.points.shape, self.points.dtype

    @property
    def quantity(self) -> str:
        """What the optimal mean cost is: ``"W1"`` (euclidean) or ``"W2^2"`` (sqeuclidean)."""
        return METRICS[self.metric][1]

    def state(self):
        return self.points.state()

    def transpose(self):
        return self.points.transpose()

    def cuda_source(self):
        return self.points.cuda_source()
