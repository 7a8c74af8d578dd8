"""Row primitives of the estimate: order-preserving keys of float64 bits and the fused,
vectorised per-row loops that every stage builds on (one read of a row gives its keys, block
minima and the mask of taken columns)."""
import math

import numpy as np
from numba import njit, types
from numba.extending import overload

from ..arrays import float_bits
from ..passes import BLOCK, KEY_MAX, KEY_MIN

#: keys of -inf and +inf (see ``key``): a row holds NaN or -inf iff its smallest key is at most
KEY_NEG_INF = np.int64(-0x7FF0000000000001)
KEY_POS_INF = np.int64(0x7FF0000000000000)
#: integral costs whose magnitude stays below this are exact in float64 sums of three terms
EXACT_INT = 2.0**50


@njit(cache=True, nogil=True, inline="always")
def key(b):
    """Order-preserving int64 key of a float64's bits; the map is its own inverse."""
    return b ^ ((b >> 63) & KEY_MAX)


@njit(cache=True, nogil=True, inline="always")
def from_key(k, scratch):
    """The float64 whose key is ``k`` (``scratch``: int64[1] viewed as float64)."""
    scratch[0] = key(k)
    return scratch.view(np.float64)[0]


@njit(cache=True, nogil=True)
def _shift_to_max_zero(vf):
    """v -= max(v) over finite entries (keeps c - v well conditioned)."""
    m = -np.inf
    for j in range(vf.shape[0]):
        if vf[j] > m:
            m = vf[j]
    if math.isfinite(m):
        for j in range(vf.shape[0]):
            vf[j] -= m


@njit(cache=True, nogil=True)
def v_before_shift(best1, best2, vf):
    """Stage A's v before its shift: per column the second-smallest row-reduced cost (the
    smallest when there is no second, 0 when neither is finite)."""
    for j in range(vf.shape[0]):
        x = best2[j]
        if not math.isfinite(x):
            x = best1[j]
        if not math.isfinite(x):
            x = 0.0
        vf[j] = x


@njit(cache=True, nogil=True)
def v_from_two_smallest(best1, best2, vf):
    """Stage A's v (``v_before_shift``), shifted so that max v = 0."""
    v_before_shift(best1, best2, vf)
    _shift_to_max_zero(vf)


# ---- fused per-row loops ------------------------------------------------------------------------
# ``taken`` masks columns out of the greedy pick: KEY_MIN = free, KEY_MAX = taken. A masked key
# is max(key, taken[j]); the pick is the lowest index holding the smallest masked key.

@njit(cache=True, nogil=True)
def load_keys(row, taken, bkey, bmask):
    """Stage A's read of a row: per block b, bkey[b] = min key of float64(row[j]) + 0.0 and
    bmask[b] = min masked key. Returns (min key, max key, min masked key). One vectorised pass."""
    n = row.shape[0]
    mk = KEY_MAX
    xk = KEY_MIN
    mm = KEY_MAX
    for b in range(bkey.shape[0]):
        lo = b * BLOCK
        hi = min(lo + BLOCK, n)
        m = KEY_MAX
        mb = KEY_MAX
        for j in range(lo, hi):
            k = key(float_bits(np.float64(row[j]) + 0.0))
            m = k if k < m else m
            xk = k if k > xk else xk
            t = taken[j]
            km = k if k > t else t
            mb = km if km < mb else mb
        bkey[b] = m
        bmask[b] = mb
        mk = m if m < mk else mk
        mm = mb if mb < mm else mm
    return mk, xk, mm


@njit(cache=True, nogil=True)
def slice_workspace(lo, hi):
    """A stage's arrays for its slice [lo, hi) of the columns: ``(tmp, tk, bkey, mask, bmask,
    scratch)`` — the reduced costs (``tk`` their int64 view), the block minima of their keys,
    a mask of taken columns (all free: KEY_MIN), the block minima of the masked keys, one
    scratch key."""
    m = hi - lo
    n_blocks = (m + BLOCK - 1) // BLOCK
    tmp = np.empty(m)
    return (tmp, tmp.view(np.int64), np.empty(n_blocks, np.int64), np.full(m, KEY_MIN),
            np.empty(n_blocks, np.int64), np.empty(1, np.int64))


@njit(cache=True, nogil=True)
def first_in_row(row, taken, bmask, k0):
    """Lowest j with max(key(float64(row[j]) + 0.0), taken[j]) == k0; -1 if none."""
    n = row.shape[0]
    for b in range(bmask.shape[0]):
        if bmask[b] != k0:
            continue
        lo = b * BLOCK
        hi = min(lo + BLOCK, n)
        for j in range(lo, hi):
            k = key(float_bits(np.float64(row[j]) + 0.0))
            t = taken[j]
            if (k if k > t else t) == k0:
                return j
    return -1


@njit(cache=True, nogil=True, inline="always")
def _load_reduced_min_max(row, vf, tmp, bkey):
    """tmp[j] = (float64(row[j]) - vf[j]) + 0.0; bkey[b] = min key of block b; returns the min and
    the max key (NaN or -inf in the row show in the max). One read of the row, vectorised."""
    n = tmp.shape[0]
    mk = KEY_MAX
    xk = KEY_MIN
    for b in range(bkey.shape[0]):
        lo = b * BLOCK
        hi = min(lo + BLOCK, n)
        m = KEY_MAX
        for j in range(lo, hi):
            x = (np.float64(row[j]) - vf[j]) + 0.0
            tmp[j] = x
            k = key(float_bits(x))
            m = k if k < m else m
            xk = k if k > xk else xk
        bkey[b] = m
        mk = m if m < mk else mk
    return mk, xk


@njit(cache=True, nogil=True)
def load_reduced_keys(row, vf, tmp, bkey):
    """``_load_reduced_min_max`` without the max (inlined here: the compiler drops its
    computation).

    No mask here: the greedy pick usually is the row's first minimiser (``greedy_pick`` falls
    back to a masked pass over tmp when it is not).
    """
    mk, _ = _load_reduced_min_max(row, vf, tmp, bkey)
    return mk


@njit(cache=True, nogil=True)
def _masked_block_minima(tk, taken, bmask):
    """bmask[b] = min over block b of max(key(tk[j]), taken[j]); returns the overall minimum."""
    n = tk.shape[0]
    mm = KEY_MAX
    for b in range(bmask.shape[0]):
        lo = b * BLOCK
        hi = min(lo + BLOCK, n)
        m = KEY_MAX
        for j in range(lo, hi):
            k = key(tk[j])
            t = taken[j]
            km = k if k > t else t
            m = km if km < m else m
        bmask[b] = m
        mm = m if m < mm else mm
    return mm


@njit(cache=True, nogil=True)
def _first_with_key(tk, taken, bkey, k0):
    """Lowest index j with max(key(tk[j]), taken[j]) == k0 (``bkey``: the block minima of those
    masked keys; pass taken = all KEY_MIN for plain keys). -1 if there is none."""
    n = tk.shape[0]
    for b in range(bkey.shape[0]):
        if bkey[b] != k0:
            continue
        lo = b * BLOCK
        hi = min(lo + BLOCK, n)
        for j in range(lo, hi):
            k = key(tk[j])
            t = taken[j]
            if (k if k > t else t) == k0:
                return j
    return -1


@njit(cache=True, nogil=True)
def _first_plain(tk, bkey, k0):
    """Lowest index j with key(tk[j]) == k0 (``bkey``: block minima of the keys); -1 if none."""
    n = tk.shape[0]
    for b in range(bkey.shape[0]):
        if bkey[b] != k0:
            continue
        lo = b * BLOCK
        hi = min(lo + BLOCK, n)
        for j in range(lo, hi):
            if key(tk[j]) == k0:
                return j
    return -1


@njit(cache=True, nogil=True)
def greedy_pick(tk, bkey, mk, taken, bmask):
    """(pick, j0): the lowest-index minimiser of tk among columns not taken, and the lowest-index
    minimiser overall. Fast path: j0 itself when it is free; else one masked pass over tk."""
    j0 = _first_plain(tk, bkey, mk)
    if taken[j0] == KEY_MIN:
        return j0, j0
    mm = _masked_block_minima(tk, taken, bmask)
    return _first_with_key(tk, taken, bmask, mm), j0


@njit(cache=True, nogil=True)
def min_key_except(tk, bkey, j0):
    """Smallest key over all j != j0 (KEY_MAX when there is none): the second order statistic,
    duplicates counted. Reads the block minima and one block only."""
    n = tk.shape[0]
    b0 = j0 // BLOCK
    m = KEY_MAX
    for b in range(bkey.shape[0]):
        x = bkey[b]
        m = x if (b != b0 and x < m) else m
    lo = b0 * BLOCK
    hi = min(lo + BLOCK, n)
    for j in range(lo, hi):
        k = key(tk[j])
        m = k if (j != j0 and k < m) else m
    return m


@njit(cache=True, nogil=True)
def update_two_smallest(row, rmin, best1, best2):
    """Per column: keep the two smallest row-reduced costs c - rmin (branch-free, vectorises)."""
    for j in range(row.shape[0]):
        r = (np.float64(row[j]) + 0.0) - rmin
        b1 = best1[j]
        b2 = best2[j]
        lt = r < b1
        best2[j] = b1 if lt else (r if r < b2 else b2)
        best1[j] = r if lt else b1



@njit(cache=True, nogil=True, inline="always")
def _two_smallest_step(r, b1, b2):
    lt = r < b1
    return (r if lt else b1), (b1 if lt else (r if r < b2 else b2))


@njit(cache=True, nogil=True)
def update_two_smallest4(r0, r1, r2, r3, m0, m1, m2, m3, best1, best2):
    """``update_two_smallest`` for four rows in one pass over best1/best2 (same result: the two
    smallest of a multiset do not depend on the order of insertion). At large n the two column
    arrays live in L3, not L2: one read and write of them per four rows instead of per row."""
    for j in range(best1.shape[0]):
        b1 = best1[j]
        b2 = best2[j]
        b1, b2 = _two_smallest_step((np.float64(r0[j]) + 0.0) - m0, b1, b2)
        b1, b2 = _two_smallest_step((np.float64(r1[j]) + 0.0) - m1, b1, b2)
        b1, b2 = _two_smallest_step((np.float64(r2[j]) + 0.0) - m2, b1, b2)
        b1, b2 = _two_smallest_step((np.float64(r3[j]) + 0.0) - m3, b1, b2)
        best1[j] = b1
        best2[j] = b2


def rows_are_views(src):  # pragma: no cover - only called from compiled code
    """True (at compile time) when ``get_row`` returns views that stay valid: a 2-D array."""
    raise NotImplementedError


@overload(rows_are_views, jit_options={"cache": True, "nogil": True})
def _rows_are_views_overload(src):
    if isinstance(src, types.Array) and src.ndim == 2:
        return lambda src: True
    return lambda src: False  # computed rows share ``buf``; a cache may evict a returned slot
