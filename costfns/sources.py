"""General cost sources: a dense array, and squared or plain Euclidean distances between point
sets."""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from ._base import CostSource, CudaCost
from .rows import cost_forms, erased, matrix_state

_CUDA_ELEM = {np.dtype(np.float64): "double", np.dtype(np.float32): "float",
              np.dtype(np.int64): "long long", np.dtype(np.int32): "int"}


def dense_cuda_source(matrix) -> "CudaCost":
    """Device form of a dense (n1, n2) C-contiguous matrix (NumPy or CuPy)."""
    elem = _CUDA_ELEM[np.dtype(matrix.dtype)]
    code = f"""
__device__ __forceinline__ cost_t cost_fn(const CostArgs& a, long long i, long long j) {{
    return (cost_t)((const {elem}*)a.p[0])[i * a.k[0] + j];
}}"""
    return CudaCost(code, [matrix], [matrix.shape[1]], [])


class Dense(CostSource):
    """A cost matrix held in memory (any dtype the solver accepts). Its rows are read as
    float64, float32, int64 or int32 in this machine's byte order: a matrix of another such
    dtype is copied once into the narrowest of them that holds it exactly (bool, int8, int16,
    uint8 and uint16 into int32; uint32 and uint64 into int64; float16 into float32)."""

    def __init__(self, matrix):
        m = np.asarray(matrix)
        if m.ndim != 2:
            raise ValueError(f"Dense: expected a 2-D matrix, got {m.ndim} dimensions")
        self.matrix = np.ascontiguousarray(m, dtype=_row_dtype(m))
        self.shape = self.matrix.shape
        self.dtype = self.matrix.dtype

    def state(self):
        # the built-in classes' kernels of its dtype, reading entries and row slices (views)
        # from the matrix itself
        return matrix_state(self.matrix)

    def transpose(self):
        return Dense(self.matrix.T)

    def cuda_source(self):
        return dense_cuda_source(self.matrix)

    def dense(self):
        return self.matrix


#: pairs times dimensions beyond which :func:`_squares_overflow` answers from its bound alone
_OVERFLOW_SCAN_MAX = 50_000_000


def _squares_overflow(x: np.ndarray, y: np.ndarray) -> bool:
    """Whether a pair's summed squared differences overflow float64 (its cost would be inf,
    which the solvers read as a forbidden pair). Each coordinate's largest difference between
    the sets bounds it: its square alone overflowing means some pair does, the sum of the
    squares staying finite means none does; in between the pairs are summed (in chunks, up to
    ``_OVERFLOW_SCAN_MAX`` pair coordinates; beyond that the bound decides)."""
    with np.errstate(over="ignore", invalid="ignore"):
        reach = np.maximum(np.abs(x.max(axis=0) - y.min(axis=0)),
                           np.abs(y.max(axis=0) - x.min(axis=0)))
        squares = reach * reach
        if np.isfinite(squares.sum()):
            return False
        if not np.isfinite(squares).all() or x.size * y.shape[0] > _OVERFLOW_SCAN_MAX:
            return True
        step = max(1, _OVERFLOW_SCAN_MAX // max(1, y.size) // 8)
        for lo in range(0, x.shape[0], step):
            t = x[lo:lo + step, None, :] - y[None, :, :]
            if not np.isfinite((t * t).sum(axis=2)).all():
                return True
    return False


def _row_dtype(m: np.ndarray) -> np.dtype:
    """The solvers' row dtype that holds every entry of ``m`` exactly (see :class:`Dense`)."""
    dt = m.dtype
    if dt.kind == "f" and dt.itemsize in (2, 4, 8):
        return np.dtype(np.float64 if dt.itemsize == 8 else np.float32)
    if dt.kind == "b" or (dt.kind in "iu" and dt.itemsize < 4) or (dt.kind == "i"
                                                                  and dt.itemsize == 4):
        return np.dtype(np.int32)
    if dt.kind in "iu":
        if dt.kind == "u" and dt.itemsize == 8 and m.size and int(m.max()) >= 2**63:
            raise ValueError(f"Dense: uint64 entries beyond int64 (max {int(m.max())}) are "
                             "beyond the solvers' integer range")
        return np.dtype(np.int64)
    raise ValueError(f"Dense: the cost must be a numeric matrix (bool, integer or float), "
                     f"got dtype {dt}")


@njit(cache=True, nogil=True, inline="always")
def _add_sq(acc, u, v):
    """``acc + (u - v)²``: the formula, shared by the entry and the part form (bit-identical)."""
    t = u - v
    return acc + t * t


@njit(cache=True, nogil=True, inline="always")
def _sqeuclidean_at(s, i, j):
    acc = 0.0
    for k in range(s.x.shape[1]):
        acc = _add_sq(acc, s.x[i, k], s.yt[k, j])
    return acc


@njit(cache=True, nogil=True, inline="always")
def _sqeuclidean_part(s, i, lo, hi, buf):
    """Columns [lo, hi) of row i, dimension by dimension: the loop over columns vectorises (the
    entries' loop over dimensions does not: a row derived from them is 3-6x slower)."""
    x = s.x
    out = buf[lo:hi]  # loops over slices from 0: an index that may be negative (j from lo)
    m = hi - lo       # keeps Numba's wraparound check in the loop and defeats vectorisation
    for j in range(m):
        out[j] = 0.0
    for k in range(x.shape[1]):
        xi = x[i, k]
        ytk = s.yt[k, lo:hi]
        for j in range(m):
            out[j] = _add_sq(out[j], xi, ytk[j])
    return out


@cost_forms(entry=_sqeuclidean_at, part=_sqeuclidean_part)
class _SqEuclideanState(NamedTuple):
    x: np.ndarray   # (n1, d) float64, row points
    yt: np.ndarray  # (d, n2) float64, column points, transposed for unit-stride rows


# Trampolines (costfns.rows.erased): the state rebuilt from the fixed layout, its forms called

@njit(cache=True, nogil=True)
def _sqeuclidean_entry(a, b, k, i, j):
    return _sqeuclidean_at(_SqEuclideanState(a, b), i, j)


@njit(cache=True, nogil=True)
def _sqeuclidean_trampoline_part(a, b, k, i, lo, hi, buf):
    _sqeuclidean_part(_SqEuclideanState(a, b), i, lo, hi, buf)


class SqEuclidean(CostSource):
    r"""Squared Euclidean distance :math:`c_{ij} = \lVert x_i - y_j \rVert^2` (float64).

    ``X`` has shape (n1, d), ``Y`` (n2, d); rows are the points of ``X``.
    """

    def __init__(self, X, Y):
        x = np.asarray(X, dtype=np.float64)
        y = np.asarray(Y, dtype=np.float64)
        if x.ndim != 2 or y.ndim != 2 or x.shape[1] != y.shape[1]:
            raise ValueError(f"{type(self).__name__}: X and Y must be (n, d) arrays with the same "
                             f"d, got shapes {x.shape} and {y.shape}")
        if not (np.isfinite(x).all() and np.isfinite(y).all()):
            raise ValueError(f"{type(self).__name__}: points must be finite (found NaN or inf)")
        if x.size and y.size and _squares_overflow(x, y):  # an inf cost: a forbidden pair
            raise ValueError(f"{type(self).__name__}: the squared distances between these "
                             f"points overflow float64: scale the points down")
        self.X = np.ascontiguousarray(x)
        self.Y = np.ascontiguousarray(y)
        self.shape = (x.shape[0], y.shape[0])
        self.dtype = np.dtype(np.float64)

    _state_class = _SqEuclideanState
    _device_result = "s"  # the device form's return value from the summed squares ``s``

    def state(self):
        entry, part = _TRAMPOLINES[self._state_class]  # a new state class needs its own
        return erased(entry, part, self.dtype, a=self.X, b=self.Y.T)

    def specialized_state(self):
        """The state the kernels are compiled for on their own (tests, A/B)."""
        return self._state_class(self.X, np.ascontiguousarray(self.Y.T))

    def transpose(self):
        return type(self)(self.Y, self.X)

    def cuda_source(self):
        # the dimension is a literal, so that the loop unrolls and a scan issues the loads of
        # all its columns' coordinates together (a run-time dimension chained them: one
        # memory latency per coordinate and column). Read-only for the whole solve: __ldg.
        dim = self.X.shape[1]
        code = f"""
__device__ __forceinline__ cost_t cost_fn(const CostArgs& a, long long i, long long j) {{
    const double* x = (const double*)a.p[0];
    const double* yt = (const double*)a.p[1];
    double s = 0.0;
#pragma unroll
    for (int t = 0; t < {dim}; ++t) {{ double u = __ldg(x + i * {dim} + t) - __ldg(yt + t * a.n2 + j); s += u * u; }}
    return {self._device_result};
}}"""
        return CudaCost(code, [self.X, np.ascontiguousarray(self.Y.T)], [dim], [])


@njit(cache=True, nogil=True, inline="always")
def _euclidean_at(s, i, j):
    """√ of :func:`_sqeuclidean_at`'s sum, summed in the same order: the part form's values
    are bit-identical (``math.sqrt`` rounds correctly, as CUDA's double ``sqrt`` does)."""
    return math.sqrt(_sqeuclidean_at(s, i, j))


@njit(cache=True, nogil=True, inline="always")
def _euclidean_part(s, i, lo, hi, buf):
    """The squared part, then a square root per column (a separate loop that vectorises)."""
    out = _sqeuclidean_part(s, i, lo, hi, buf)
    for j in range(hi - lo):
        out[j] = math.sqrt(out[j])
    return out


@cost_forms(entry=_euclidean_at, part=_euclidean_part)
class _EuclideanState(NamedTuple):
    x: np.ndarray   # (n1, d) float64, row points
    yt: np.ndarray  # (d, n2) float64, column points, transposed for unit-stride rows


@njit(cache=True, nogil=True)
def _euclidean_entry(a, b, k, i, j):
    return _euclidean_at(_EuclideanState(a, b), i, j)


@njit(cache=True, nogil=True)
def _euclidean_trampoline_part(a, b, k, i, lo, hi, buf):
    _euclidean_part(_EuclideanState(a, b), i, lo, hi, buf)


class Euclidean(SqEuclidean):
    r"""Euclidean distance :math:`c_{ij} = \lVert x_i - y_j \rVert` (float64), unsquared.

    The ground distance of the Earth Mover's Distance of Rubner et al. (the first Wasserstein
    distance W1). ``X`` has shape (n1, d), ``Y`` (n2, d); rows are the points of ``X``. The
    squares are summed as :class:`SqEuclidean` sums them, on the host and on the device, then
    the correctly rounded square root is taken: the costs of every form agree bit for bit.
    """

    _state_class = _EuclideanState
    _device_result = "sqrt(s)"


#: each point-set state class's trampolines (costfns.rows.erased)
_TRAMPOLINES = {_SqEuclideanState: (_sqeuclidean_entry, _sqeuclidean_trampoline_part),
                _EuclideanState: (_euclidean_entry, _euclidean_trampoline_part)}
