"""The cost-source protocol: a small declarative object that knows its shape and dtype and can
produce any row from compiled code.

A source holds its problem definition (points, seed, …) and exposes ``state()``: a
``typing.NamedTuple`` of arrays and scalars whose class carries ``_fill_row``, a Numba function
``(state, i, buf) -> buf`` writing row ``i``. The solver's single compiled loop calls it through
``epslap.cpu._rows.get_row``; ``dense()`` materialises the matrix with the very same function, so
the streamed and the materialised paths cannot disagree.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from epslap.cpu._rows import get_row


@njit(cache=True, nogil=True, parallel=True)
def _materialise(state, out):
    """Fill ``out`` (n1, n2) row by row from ``state``; rows in parallel."""
    for i in prange(out.shape[0]):
        get_row(state, i, out[i])


class CostSource:
    """Base class of cost sources. Subclasses set ``shape``, ``dtype`` and implement ``state()``."""

    shape: tuple[int, int]
    dtype: np.dtype

    def state(self):  # pragma: no cover - abstract
        raise NotImplementedError

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
        out = np.empty((1, self.shape[1]), dtype=self.dtype)
        _materialise(_RowOffset.make(self.state(), i), out)
        return out[0]

    def dense(self) -> np.ndarray:
        """Materialise the whole matrix (n1 × n2 × itemsize bytes)."""
        out = np.empty(self.shape, dtype=self.dtype)
        _materialise(self.state(), out)
        return out

    def __repr__(self) -> str:
        return f"{type(self).__name__}(shape={self.shape}, dtype={np.dtype(self.dtype).name})"


from typing import Any, NamedTuple  # noqa: E402


class _RowOffset(NamedTuple):
    """Row ``i + offset`` of an inner state: lets ``row()`` reuse the materialiser."""

    inner: Any
    offset: int

    @staticmethod
    def make(inner, offset):
        return _RowOffset(inner, np.int64(offset))


@njit(cache=True, nogil=True, inline="always")
def _row_offset_fill(s, i, buf):
    row = get_row(s.inner, i + s.offset, buf)
    for j in range(buf.shape[0]):  # a no-op when the inner source filled buf itself
        buf[j] = row[j]
    return buf


_RowOffset._fill_row = _row_offset_fill
