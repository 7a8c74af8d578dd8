"""The estimate's validation of the rows alone, for solves that do not use its prices: a
rectangular source (one exact pass from v = 0), plain successive shortest paths
(``epsilon=False``) and a warm start (the given prices). One compiled sweep, a fraction of the
estimate's code (whose stage A validates the same way while it gathers its statistics)."""
from __future__ import annotations

import numpy as np
from numba import njit

from costfns.rows import get_row

from ..._status import STATUS_INFEASIBLE, STATUS_INTERRUPTED, STATUS_INVALID, STATUS_OK
from ..._sync import aborted


@njit(cache=True, nogil=True)
def largest_finite_in_row(row):
    """The largest finite |cost| of a row (0 where none is finite)."""
    big = 0.0
    for j in range(row.shape[0]):
        a = abs(np.float64(row[j]))
        if a < np.inf and a > big:
            big = a
    return big


@njit(cache=True, nogil=True)
def validate_rows(src, buf, n1, sync):
    """Read every row of ``src`` once: STATUS_INVALID at the first NaN or -inf, else
    STATUS_INFEASIBLE where a row has no finite cost, else STATUS_OK (the order of stage A, and
    scipy's). A stop request on ``sync`` ends the sweep between rows (STATUS_INTERRUPTED).
    Returns (status, the largest finite |cost|) for the caller's range rule."""
    infeasible = False
    big = 0.0
    for i in range(n1):
        if aborted(sync):
            return STATUS_INTERRUPTED, big
        row = get_row(src, i, buf)
        finite = False
        lo = np.float64(np.inf)
        hi = np.float64(-np.inf)
        for j in range(row.shape[0]):
            x = row[j]
            if x != x or x == -np.inf:
                return STATUS_INVALID, big
            finite |= x < np.inf
            lo = min(lo, np.float64(x))
            hi = max(hi, np.float64(x))
        infeasible |= not finite
        if hi == np.inf:  # +inf among the costs: the largest finite one, in one more read
            big = max(big, largest_finite_in_row(row))
        elif finite:
            big = max(big, abs(lo), abs(hi))
    return (STATUS_INFEASIBLE if infeasible else STATUS_OK), big
