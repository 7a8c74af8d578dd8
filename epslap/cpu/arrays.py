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
