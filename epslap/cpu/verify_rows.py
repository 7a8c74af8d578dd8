"""``epslap.verify``'s scan of every cost of a float cost source, compiled, on the CPU threads.

The check itself is ``epslap.certificate``'s (its module docstring): for every finite pair the
exact excess ``u_i + v_j - c_ij`` (compensated sums) against ``RTOL * (|c_ij| + |u_i| + |v_j|)``,
the duals' magnitudes taken in canonical position. Written here as one loop over each row's
costs, computed by the source's compiled row form, instead of NumPy over chunks of rows: the
same arithmetic, the same report, without an n1 x n2 block per chunk.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from costfns.rows import get_row

from .._exact import RTOL, exact_excess_scalar
from .._sync import new_sync, run_workers, usable_cores

#: ``flags`` of :func:`scan_rows`: a NaN cost, a -inf cost (after the sign), a cost too large
#: for the unscaled arithmetic (the NumPy check scales it)
SAW_NAN, SAW_NEG_INF, SAW_HUGE = 1, 2, 4
#: costs at or above this magnitude go to the NumPy check (``certificate._scale_exponent``)
HUGE = 2.0**900
#: sources with fewer rows are scanned on the calling thread
SCAN_MIN_ROWS = 256


@njit(cache=True, nogil=True)
def scan_rows(src, buf, us, vs, au, av, sign, own, picked, first, stride, n1, out, flags):
    """Rows ``first, first + stride, …`` of ``src``: ``out[0]`` the largest excess over finite
    pairs, ``out[1]`` the largest excess less its tolerance (each at most what it was);
    ``flags[0]`` as SAW_*; ``picked[i]`` the cost of the pair ``(i, own[i])`` where ``own[i] >=
    0``, read from the same row (a source without an entry form has no other way to it)."""
    worst = out[0]
    over = out[1]
    seen = 0
    n2 = vs.size
    for i in range(first, n1, stride):
        row = get_row(src, i, buf)
        if own[i] >= 0:
            picked[i] = np.float64(row[own[i]])
        ui = us[i]
        ai = au[i]
        for j in range(n2):
            c = sign * np.float64(row[j])
            if c != c:
                seen |= SAW_NAN
                continue
            if c == np.inf:
                continue
            if c == -np.inf:
                seen |= SAW_NEG_INF
                continue
            ac = abs(c)
            if ac >= HUGE:
                seen |= SAW_HUGE
                continue
            red = exact_excess_scalar(ui, vs[j], c)
            worst = red if red > worst else worst
            gap = red - RTOL * ((ac + ai) + av[j])
            over = gap if gap > over else over
    out[0] = worst
    out[1] = over
    flags[0] |= seen


def scan_source(cost, us, vs, au, av, sign: float, own):
    """:func:`scan_rows` over every row of the cost source ``cost`` on the free cores (a
    user's function on the calling thread): ``(worst, excess, flags, picked)``, ``picked[i]``
    the cost of ``(i, own[i])`` where ``own[i] >= 0`` (``own``: each row's assigned column, or
    -1)."""
    from costfns.functions import FunctionSource

    n1, n2 = cost.shape
    threads = 1 if isinstance(cost, FunctionSource) or n1 < SCAN_MIN_ROWS else usable_cores()
    src = cost.state()
    out = np.zeros((threads, 2))
    out[:, 1] = -1.0
    flags = np.zeros((threads, 1), np.int64)
    picked = np.zeros(n1)
    own = np.ascontiguousarray(own, np.int64)

    def args_of(t):
        return (src, np.empty(n2, np.dtype(cost.dtype)), us, vs, au, av, float(sign), own,
                picked, t, threads, n1, out[t], flags[t])
    run_workers(scan_rows, args_of, threads, new_sync())
    return (float(out[:, 0].max()), float(out[:, 1].max()),
            int(np.bitwise_or.reduce(flags[:, 0])), picked)
