"""Array helpers for compiled code."""
from __future__ import annotations

from numba import njit


@njit(cache=True, nogil=True, inline="always")
def copy_into(dst, src, n: int) -> None:
    """``dst[:n] = src[:n]``, element by element. An array assigned to a slice compiles Numba's
    shape-mismatch error, and with it the formatting of its message (string and repr code:
    several seconds of a fresh environment's first compile)."""
    for t in range(n):
        dst[t] = src[t]


@njit(cache=True, nogil=True, inline="always")
def flip_path(pred, row_col, f, j) -> None:
    """Augment along the alternating path from free row ``f`` to column ``j``: walking back
    through ``pred`` (column -> the row it was reached from), each row on the path takes the
    column it reached (``row_col[i]``), the next column back being the one the row held."""
    while True:
        i = pred[j]
        held = row_col[i]
        row_col[i] = j
        if i == f:
            return
        j = held
