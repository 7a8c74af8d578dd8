"""The arithmetic of the certificate's rule (``epslap.certificate``): its tolerance and the
exact excess of a pair, for NumPy and, compiled, for the CPU kernels that judge duals."""
from __future__ import annotations

from numba import njit

#: relative tolerance of a float reduced cost and of the gap: 16 units of roundoff (2**-53 each)
RTOL = 2.0**-49

#: the tolerance compiled code holds its float duals to before it returns them: RTOL less the
#: rounding of its own excess, computed in plain float arithmetic (at most 2**-52 of the pair's
#: |c_ij| + |u_i| + |v_j|; 2**-51 kept), so that whatever passes it passes ``verify``, which
#: judges exact excesses (a 2 x 2 whose assigned pair read 0.99 RTOL in the kernel read 1.004 in
#: ``verify``)
CHECK_RTOL = RTOL - 2.0**-51


def exact_excess(u, v, c):
    """``(u + v) - c`` accurate to a unit in the last place of the result, whatever the
    magnitudes of ``u`` and ``v`` (compensated: Knuth's TwoSum carries the rounding of each
    sum). The rule judges the duals as given, not the rounding of this arithmetic. Plain
    arithmetic: NumPy arrays (``epslap.certificate``), compiled for scalars below."""
    s = u + v
    bb = s - u
    e1 = (u - (s - bb)) + (v - bb)
    d = s - c
    dd = d - s
    e2 = (s - (d - dd)) + (-c - dd)
    return d + (e1 + e2)


#: :func:`exact_excess` for scalars in compiled code
exact_excess_scalar = njit(cache=True, nogil=True, inline="always")(exact_excess)
