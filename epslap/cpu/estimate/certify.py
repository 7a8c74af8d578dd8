"""The speculative certificate sweep of the estimate, on one or more threads.

One sweep that proves the exact pass trivial (the sanity class: the solve is then done after one
read of the matrix), or gives up after a few dozen rows (float costs only; the package docstring
gives the certificate). v is stage A's formula (second-smallest row-reduced cost per column) over
only the first CERT_SAMPLE rows. Then the rows go back to front, as the exact pass
would take them with ε = 0 and perm = identity: each row must find its minimum of c - v at a free
column (the lowest-index one, the pass's tie rule); the first row that does not aborts. On success
the picks are an assignment on row minima of c - v: optimal, and exactly what the exact pass
returns. Every entry is read, so NaN/-inf are reported here too.

Why it splits: only the picks depend on earlier rows (which columns are taken); reading a row,
its minimum and its first few minimisers do not. So the rows are taken in chunks, back to front:
the threads scan a chunk's rows (each a row at a time), then one thread assigns the chunk's picks
in order from what was scanned. Chunks start small (an abort costs about what it cost
sequentially) and double.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from costfns.rows import get_row

from ..._status import STATUS_CERTIFIED, STATUS_INTERRUPTED, STATUS_INVALID, STATUS_OK
from ..._sync import aborted, new_sync, reset_sync, run_workers
from ..._validate import float_cost_limit
from ..arrays import float_bits
from ..passes import BLOCK, KEY_MAX, KEY_MIN
from .keys import (KEY_NEG_INF, KEY_POS_INF, from_key, greedy_pick, key, load_keys,
                   load_reduced_keys, update_two_smallest, v_from_two_smallest)
from .validate import largest_finite_in_row

#: rows of the sample that gives the speculative v
CERT_SAMPLE = 32
#: the sweep gave up (the caller runs stages A–E)
ABORT = -1
#: minimisers kept per scanned row (a row with more is read again if all of these are taken)
_KEEP = 4
_ROW_INVALID = -1  # row codes of the scan: NaN or -inf in the row
_ROW_NO_FINITE = -2  # no finite cost in the row
_ROW_TOO_BIG = -3  # a finite cost beyond the float range rule: stage A reports it
_FIRST_CHUNK = 64
_MAX_CHUNK = 4096


@njit(cache=True, nogil=True)
def _sample_v(src, buf, n1, n2, vf):
    """vf from the first CERT_SAMPLE rows. Returns STATUS_OK, STATUS_INVALID or ABORT."""
    best1 = np.full(n2, np.inf)
    best2 = np.full(n2, np.inf)
    free = np.full(n2, KEY_MIN)
    n_blocks = (n2 + BLOCK - 1) // BLOCK
    bkey = np.empty(n_blocks, np.int64)
    bmask = np.empty(n_blocks, np.int64)
    scratch = np.empty(1, np.int64)
    for i in range(min(n1, CERT_SAMPLE)):
        row = get_row(src, i, buf)
        mk, xk, _ = load_keys(row, free, bkey, bmask)
        if mk <= KEY_NEG_INF or xk > KEY_POS_INF:
            return STATUS_INVALID
        if mk >= KEY_POS_INF:
            return ABORT  # a row without a finite cost: stage A reports it
        update_two_smallest(row, from_key(mk, scratch), best1, best2)
    v_from_two_smallest(best1, best2, vf)
    return STATUS_OK


@njit(cache=True, nogil=True, inline="always")
def _reduced_key(row, vf, j):
    """The sort key of (float64(c[i][j]) - v[j]) + 0.0 (as ``_load_reduced_min_max`` takes it)."""
    return key(float_bits((np.float64(row[j]) - vf[j]) + 0.0))


@njit(cache=True, nogil=True)
def _scan_rows(src, buf, vf, lo, hi, first, stride, code, mins, sync, limit):
    """Rows i = hi - 1 - first, then every stride-th one below, down to lo: code[i] = the number
    of minimisers of c[i] - v (or _ROW_INVALID / _ROW_NO_FINITE), mins[i] = the first _KEEP of
    them in index order. The row is read once for its block minima (nothing is stored: this
    sweep is bound by memory bandwidth); the minimisers are then found in the blocks that hold
    the minimum, from the row still in cache. Stops early on a stop request (``sync``). A row
    with a finite |cost| above ``limit`` (``_validate.float_cost_limit``) is _ROW_TOO_BIG."""
    n2 = vf.shape[0]
    n_blocks = (n2 + BLOCK - 1) // BLOCK
    bkey = np.empty(n_blocks, np.int64)
    clear = limit - np.abs(vf).max() if n2 else limit
    key_hi = key(float_bits(clear))  # the keys of ±clear (keys keep the order of the values);
    key_lo = key(float_bits(-clear))  # +inf's key is above key_hi
    for i in range(hi - 1 - first, lo - 1, -stride):
        if aborted(sync):
            return
        row = get_row(src, i, buf)
        mk = KEY_MAX
        xk = KEY_MIN
        for b in range(n_blocks):
            rb = row[b * BLOCK:min(b * BLOCK + BLOCK, n2)]
            vb = vf[b * BLOCK:min(b * BLOCK + BLOCK, n2)]
            m = KEY_MAX
            for j in range(rb.shape[0]):
                k = _reduced_key(rb, vb, j)
                m = k if k < m else m
                xk = k if k > xk else xk
            bkey[b] = m
            mk = m if m < mk else mk
        if mk <= KEY_NEG_INF or xk > KEY_POS_INF:
            code[i] = _ROW_INVALID
            continue
        # |c| <= |c - v| + |v|: the row's reduced extremes bound its costs; only a row they
        # do not clear (one holding +inf among them) is read once more for its largest cost
        if (xk > key_hi or mk < key_lo) and largest_finite_in_row(row) > limit:
            code[i] = _ROW_TOO_BIG
            continue
        if mk >= KEY_POS_INF:
            code[i] = _ROW_NO_FINITE
            continue
        count = 0
        for b in range(n_blocks):
            if bkey[b] != mk:
                continue
            for j in range(b * BLOCK, min(b * BLOCK + BLOCK, n2)):
                if _reduced_key(row, vf, j) == mk:
                    if count < _KEEP:
                        mins[i, count] = j
                    count += 1
        code[i] = count


@njit(cache=True, nogil=True)
def _pick_rows(src, buf, vf, lo, hi, code, mins, taken, pick):
    """The picks of rows hi - 1 … lo, in that order, from the scan. Returns STATUS_OK,
    STATUS_INVALID or ABORT (the first row, in sweep order, that fails)."""
    n2 = vf.shape[0]
    tmp = np.empty(0)
    bkey = np.empty(0, np.int64)
    bmask = np.empty(0, np.int64)
    for i in range(hi - 1, lo - 1, -1):
        c = code[i]
        if c == _ROW_INVALID:
            return STATUS_INVALID
        if c == _ROW_NO_FINITE or c == _ROW_TOO_BIG:
            return ABORT
        q = -1
        for t in range(min(c, _KEEP)):
            if taken[mins[i, t]] == KEY_MIN:
                q = mins[i, t]
                break
        if q < 0:
            if c <= _KEEP:
                return ABORT  # the row's minimum lies only at taken columns: the pass would search
            if tmp.shape[0] == 0:  # more minimisers than kept: read the row again
                tmp = np.empty(n2)
                bkey = np.empty((n2 + BLOCK - 1) // BLOCK, np.int64)
                bmask = np.empty_like(bkey)
            mk = load_reduced_keys(get_row(src, i, buf), vf, tmp, bkey)
            q, _ = greedy_pick(tmp.view(np.int64), bkey, mk, taken, bmask)
            if key(tmp.view(np.int64)[q]) != mk:
                return ABORT
        taken[q] = KEY_MAX
        pick[i] = q
    return STATUS_OK


def kernels(src, buf, n1: int, n2: int) -> list:
    """(compiled function, arguments) for every kernel of the sweep over ``src``."""
    vf = np.empty(n2)
    code = np.empty(n1, np.int64)
    mins = np.empty((n1, _KEEP), np.int64)
    i0 = np.int64(0)
    return [(_sample_v, (src, buf, n1, n2, vf)),
            (_scan_rows, (src, buf, vf, i0, i0, i0, i0, code, mins, new_sync(), 1.0)),
            (_pick_rows, (src, buf, vf, i0, i0, code, mins, np.empty(n2, np.int64), code))]


def certify_sweep(src, bufs, n1: int, n2: int, vf: np.ndarray, pick: np.ndarray,
                  threads: int = 1, sync=None) -> int:
    """The sweep (module docstring) with ``threads`` threads scanning (``bufs``: one row buffer
    per thread; several threads only for sources whose rows may be read concurrently). Fills vf
    and pick. Returns STATUS_CERTIFIED, STATUS_INVALID, ABORT or, after a stop request on
    ``sync`` (``_sync.request_abort``), STATUS_INTERRUPTED."""
    sync = new_sync() if sync is None else sync
    status = _sample_v(src, bufs[0], n1, n2, vf)
    if status != STATUS_OK:
        return status
    code = np.empty(n1, np.int64)
    mins = np.empty((n1, _KEEP), np.int64)
    taken = np.full(n2, KEY_MIN)
    hi, size = n1, _FIRST_CHUNK
    limit = float_cost_limit((n1, n2))
    while hi > 0:
        lo = max(0, hi - size)
        nt = threads if hi - lo >= 8 * threads else 1
        reset_sync(sync)
        run_workers(_scan_rows, lambda t, nt=nt, lo=lo, hi=hi: (src, bufs[t], vf, lo, hi, t, nt,
                                                                code, mins, sync, limit),
                    nt, sync)
        if aborted(sync):
            return STATUS_INTERRUPTED
        status = _pick_rows(src, bufs[0], vf, lo, hi, code, mins, taken, pick)
        if status != STATUS_OK:
            return status
        hi, size = lo, min(2 * size, _MAX_CHUNK)
    return STATUS_CERTIFIED
