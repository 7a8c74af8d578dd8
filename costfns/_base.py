"""The cost-source protocol: a small declarative object that knows its shape and dtype and can
produce any row from compiled code.

A source holds its problem definition (points, seed, …) and exposes ``state()``: a
``typing.NamedTuple`` of arrays and scalars whose class is registered with
``costfns.rows.cost_forms`` (an entry, row or row-slice form, compiled by Numba). The solver's single compiled loop calls it through
``costfns.rows.get_row``; ``dense()`` materialises the matrix with the very same function, so
the streamed and the materialised paths cannot disagree.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, prange

from .rows import fill_rows, get_row


_BLOCK_BYTES = 1 << 26  # rows materialised per compiled call (64 MiB)


@njit(cache=True, nogil=True, parallel=True)
def _materialise(state, start, out):
    """out[k] = row start + k of ``state``, rows in parallel."""
    for k in prange(out.shape[0]):
        dst = out[k]
        row = get_row(state, start + k, dst)
        for j in range(dst.shape[0]):  # a no-op when the source filled dst itself; a source
            dst[j] = row[j]             # that returns a view of its own rows needs the copy


class CudaCost(NamedTuple):
    """A cost source's device form: CUDA source of ``cost_fn(const CostArgs& a, i, j)`` reading
    ``a.p[k]`` (the arrays, uploaded in order), ``a.k[k]`` (int64 scalars), ``a.s[k]`` (doubles)
    and ``a.n1``, ``a.n2``. Arithmetic must follow the CPU row function's order exactly (the
    GPU module is compiled without FMA contraction) so both backends see identical costs."""

    code: str
    arrays: list
    ints: list
    floats: list


class CostSource:
    """Base class of cost sources. Subclasses set ``shape``, ``dtype`` and implement ``state()``."""

    shape: tuple[int, int]
    dtype: np.dtype

    def state(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def cuda_source(self) -> CudaCost:
        """The device form for the GPU backend (sources without one cannot run there)."""
        raise NotImplementedError(f"{type(self).__name__} has no GPU form; use backend='cpu' "
                                  "or pass its dense matrix")

    def transpose(self) -> "CostSource":
        """The same costs with rows and columns swapped (used when n1 > n2)."""
        raise NotImplementedError(f"{type(self).__name__} cannot be transposed")

    @property
    def T(self) -> "CostSource":
        return self.transpose()

    def row(self, i: int) -> np.ndarray:
        """Row ``i`` as a new array (computed by the compiled row function)."""
        if not 0 <= i < self.shape[0]:
            raise IndexError(f"row {i} out of range for shape {self.shape}")
        return self.rows(i, i + 1)[0]

    def rows(self, start: int, stop: int) -> np.ndarray:
        """Rows ``start … stop-1`` as a new (stop - start, n2) array."""
        out = np.empty((max(stop - start, 0), self.shape[1]), dtype=self.dtype)
        fill_rows(self.state(), np.int64(start), out)
        return out

    def dense(self) -> np.ndarray:
        """Materialise the whole matrix (n1 × n2 × itemsize bytes)."""
        return self._fill_blocks(_materialise)

    def _fill_blocks(self, fill) -> np.ndarray:
        """The whole matrix, ``fill(state, start, block)`` for blocks of rows: between two
        blocks Python runs, so Ctrl-C stops a long fill."""
        out = np.empty(self.shape, dtype=self.dtype)
        state = self.state()
        step = max(1, _BLOCK_BYTES // max(out.shape[1] * out.itemsize, 1))
        for start in range(0, out.shape[0], step):
            fill(state, np.int64(start), out[start:start + step])
        return out

    def __repr__(self) -> str:
        return f"{type(self).__name__}(shape={self.shape}, dtype={np.dtype(self.dtype).name})"


def check_shape(shape) -> tuple[int, int]:
    """``shape`` as two non-negative Python ints; refuses floats and other non-integers."""
    if not isinstance(shape, (tuple, list)) or len(shape) != 2 or not all(
            isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))
            for x in shape) or min(shape) < 0:
        raise ValueError(f"shape must be (n1, n2) with non-negative integer sizes, got {shape!r}")
    return int(shape[0]), int(shape[1])
