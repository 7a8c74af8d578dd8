"""The two streaming passes of the candidates method (``epslap.candidates``), compiled.

Both read every row of the canonical problem once (a matrix or any cost source, through
``get_row``) and keep O(k) per row: the candidate pass keeps each row's k smallest reduced costs
``c_ij - v_j``; the certificate pass keeps, for each row whose minimum of ``c_ij - v_j`` falls
below its dual ``u_i = c_iσ(i) - v_σ(i)``, the most negative of those columns (the pairs that
violate the certificate). Rows are split among threads by stride, each with its own row
buffer; nothing else is shared.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from costfns.rows import get_row

from .._sync import aborted
from .arrays import bits_float, copy_into, float_bits
from .estimate.keys import KEY_POS_INF
from .passes import KEY_MAX

#: value flags of a pass (a bit per thread in ``flags[tid]``)
FLAG_NAN = 1
FLAG_NEG_INF = 2


@njit(cache=True, nogil=True, inline="always")
def _insert(vals, cols, count, k, r, j):
    """Insert (r, j) into the ascending list vals[:count] (at most k kept); the new count."""
    if count == k:
        if not r < vals[k - 1]:
            return count
        t = k - 1
    else:
        t = count
        count += 1
    while t > 0 and vals[t - 1] > r:
        vals[t] = vals[t - 1]
        cols[t] = cols[t - 1]
        t -= 1
    vals[t] = r
    cols[t] = j
    return count


@njit(cache=True, nogil=True, inline="always")
def _above_all(v):
    """A value of ``v``'s work type above every reduced cost of a pass: +inf for floats,
    KEY_MAX for integers (an integer reduced cost stays within the range rule, and compared
    as an integer it stays exact beyond 2**53, where a float could not tell it apart)."""
    work = v.dtype.type
    if work(0.5) == 0:
        return work(KEY_MAX)
    return work(np.inf)


@njit(cache=True, nogil=True, inline="always")
def _float_magnitudes(row, n2, big):
    """``(max(big, largest finite |c| of the row's bits), NaN met)`` for a float row: on the
    magnitude bits (the sign cleared: the order-preserving key of |c|, ``estimate.keys``; every
    finite one lies below +inf's, KEY_POS_INF, and NaN's above), branch-free integer compares
    that the compiler vectorises, where the same on floats (NaN-aware max) runs one entry at a
    time."""
    nan = False
    for j in range(n2):
        m = float_bits(np.float64(row[j])) & KEY_MAX
        nan |= m > KEY_POS_INF
        big = max(big, m if m < KEY_POS_INF else 0)
    return big, nan


@njit(cache=True, nogil=True)
def candidate_rows(src, buf, sync, v, k, rows, first, stride, n1, cand_cols, cand_vals, counts,
                   diag, stats, flags):
    """Rows ``rows[first], rows[first + stride], …`` (of ``rows[:n1]``), row ``i = rows[t]``
    written at ``t``: ``cand_cols[t, :counts[t]]`` the columns of the ``counts[t] <= k``
    smallest finite ``c_ij - v_j`` (ascending; ties by lower index), their costs in
    ``cand_vals``, ``diag[t] = c_ii`` (the pair of the identity matching, +inf or the forbidden
    marker if not finite), and per thread (``first`` is its index) ``stats[first, 0]`` the
    largest finite |c| of float rows, for integer rows ``stats[first, :2]`` the least and the
    largest cost as int64 bits (exact beyond 2**53), ``flags[first]`` the value flags met. A
    stop request on ``sync``
    (``_sync.request_abort``: Ctrl-C) ends the scan at its next row, its outputs incomplete.

    A row is read twice from its buffer: once for the value checks (branch-free, so that the
    compiler vectorises them; for integer costs NaN and inf do not exist and drop out), once
    for the selection, where a column is compared with the list's last value in a register
    and only the rare one below it takes the slow path. Until a row's list holds k, a column
    is taken only below a *hint* from the thread's previous row (its k-th value plus its spread
    ``k-th - least``): every column taken costs a shift of the sorted list, and without a bound
    about k·(1 + ln(n/k)) are taken, with it about 2k. The bound is safe where at least k
    columns lie below it (those beyond are worse than every one kept); where fewer do, the row
    is read again without it (1 row in 20-40 of a point set, about 1 in 100 of random costs).
    The selection takes half the time it took without the hint (k = 24-48, 2000-4000
    columns)."""
    n2 = v.size
    work = v.dtype.type
    integral = work(0.5) == 0  # (a constant of the compiled version)
    rv = np.empty(k, v.dtype)
    big_bits = np.int64(0)  # the largest finite |c| of float rows, as bits
    least = np.int64(2**63 - 1)  # integer rows' least and largest cost
    most = np.int64(-2**63)
    has_hint, hint = False, work(0)
    top = _above_all(v)  # no bound
    for t in range(first, n1, stride):
        if aborted(sync):
            break
        i = rows[t]
        row = get_row(src, i, buf)
        if integral:  # min and max in the row's type: vectorised (no int-to-float per entry)
            lo = hi = row[0] if n2 else 0
            for j in range(n2):
                lo = min(lo, row[j])
                hi = max(hi, row[j])
            least = min(least, np.int64(lo))
            most = max(most, np.int64(hi))
        else:
            big_bits, nan = _float_magnitudes(row, n2, big_bits)
            if nan:
                flags[first] |= FLAG_NAN
        cols = cand_cols[t]
        hinted = has_hint
        while True:
            count = 0
            limit = hint if hinted else top  # then the list's last value once it holds k
            for j in range(n2):
                r = work(row[j]) - v[j]
                if not r < limit:
                    continue
                c = row[j]
                if c != c or c == np.inf:
                    continue
                if c == -np.inf:
                    flags[first] |= FLAG_NEG_INF
                    continue
                count = _insert(rv, cols, count, k, r, j)
                if count == k:
                    limit = rv[k - 1]
            if count == k or not hinted:
                break
            hinted = False  # fewer than k below the hint: the row again, without it
        if count == k:
            hint = rv[k - 1] + (rv[k - 1] - rv[0])
            has_hint = True
        for q in range(count):
            cand_vals[t, q] = row[cols[q]]
        counts[t] = count
        diag[t] = row[i]
    if integral:
        stats[first, 0] = bits_float(least)
        stats[first, 1] = bits_float(most)
    else:
        stats[first, 0] = bits_float(big_bits)


@njit(cache=True, nogil=True, inline="always")
def _least_reduced(row, v, lo, hi, best):
    """``min(best, min over lo <= j < hi of c_ij - v_j)`` in four independent running minima:
    one minimum carried through every column waits on each compare in turn (about twice the
    time of the row's read); four overlap. A NaN (none reaches a certificate pass: the
    candidate pass refuses it) or +inf never lowers them."""
    work = v.dtype.type
    b0 = b1 = b2 = b3 = best
    j = lo
    while j + 4 <= hi:
        r0 = work(row[j]) - v[j]
        r1 = work(row[j + 1]) - v[j + 1]
        r2 = work(row[j + 2]) - v[j + 2]
        r3 = work(row[j + 3]) - v[j + 3]
        b0 = r0 if r0 < b0 else b0
        b1 = r1 if r1 < b1 else b1
        b2 = r2 if r2 < b2 else b2
        b3 = r3 if r3 < b3 else b3
        j += 4
    while j < hi:
        r0 = work(row[j]) - v[j]
        b0 = r0 if r0 < b0 else b0
        j += 1
    return min(min(b0, b1), min(b2, b3))


@njit(cache=True, nogil=True)
def certify_rows(src, buf, sync, v, u, cap, rel, rows, row_to_col, first, stride, n1, add_cols,
                 add_vals, add_counts, row_min):
    """Rows ``rows[first], rows[first + stride], …`` (of ``rows[:n1]``), row ``i = rows[t]``
    written at ``t``: ``row_min[t] = min_j (c_ij - v_j)`` over the columns other than the row's
    own ``row_to_col[i]`` (its margin to the certificate is ``row_min - u_i``), and
    ``add_cols[t, :add_counts[t]]``
    the (at most ``cap``) columns where ``c_ij - v_j`` is most below ``u[i]`` (the pairs that
    violate the certificate) with their costs; a stop request on ``sync`` ends the scan at its
    next row (as :func:`candidate_rows`). ``rel``: a float pair violates only beyond
    ``rel * (|c| + |u_i| + |v_j|)`` (a fraction of ``epslap.verify``'s tolerance: ties that
    rounding moves by an ulp are not violations); 0 for integers (exact).

    A pair violates only where ``c_ij - v_j < u_i`` (its own pair gives ``u_i`` itself where
    the duals are those of the assignment), so a row is read a second time, for its violators,
    only where its minimum or its own pair's lies below ``u_i``: the rare row, once the
    candidates hold nearly every optimal pair."""
    n2 = v.size
    work = v.dtype.type
    top = _above_all(v)  # in the work type: the test below stays exact for integers
    rv = np.empty(cap, v.dtype)
    for t in range(first, n1, stride):
        if aborted(sync):
            break
        i = rows[t]
        row = get_row(src, i, buf)
        ui = u[i]
        own = row_to_col[i]
        best = _least_reduced(row, v, 0, own, top)
        best = _least_reduced(row, v, own + 1, n2, best)
        row_min[t] = best if best < top else np.inf
        count = 0
        if best < ui or work(row[own]) - v[own] < ui:
            aui = abs(np.float64(ui))
            for j in range(n2):
                c = row[j]
                if c == np.inf:
                    continue
                r = work(c) - v[j]
                if r < ui and (rel == 0.0 or (ui - r) > rel * (abs(np.float64(c)) + aui
                                                               + abs(np.float64(v[j])))):
                    count = _insert(rv, add_cols[t], count, cap, r, j)
        for q in range(count):
            add_vals[t, q] = row[add_cols[t, q]]
        add_counts[t] = count


@njit(cache=True, nogil=True)
def lists_to_csr(cols, vals, counts, diag, finite_only):
    """The candidate pairs as CSR rows (``epslap.sparse_input.SparseProblem``'s arrays): row
    ``i``'s ``cols[i, :counts[i]]`` at ``vals``, then the identity pair ``(i, i)`` at
    ``diag[i]`` where ``i`` is not among them (and, ``finite_only``, ``diag[i]`` is finite), so
    that the pairs hold a complete assignment wherever the identity's costs are finite."""
    n1 = counts.size
    add = np.zeros(n1, np.bool_)
    indptr = np.empty(n1 + 1, np.int64)
    indptr[0] = 0
    for i in range(n1):
        held = False
        for t in range(counts[i]):
            if cols[i, t] == i:
                held = True
                break
        add[i] = not held and (not finite_only or diag[i] - diag[i] == 0)
        indptr[i + 1] = indptr[i] + counts[i] + add[i]
    indices = np.empty(indptr[n1], np.int64)
    data = np.empty(indptr[n1], vals.dtype)
    for i in range(n1):
        p, c = indptr[i], counts[i]
        copy_into(indices[p:], cols[i], c)
        copy_into(data[p:], vals[i], c)
        if add[i]:
            indices[p + c] = i
            data[p + c] = diag[i]
    return indptr, indices, data


@njit(cache=True, nogil=True)
def appended_pairs(indptr, indices, data, rows, add_cols, add_vals, add_counts):
    """CSR rows with row ``rows[t]``'s pairs ``add_cols[t, :add_counts[t]]`` (at ``add_vals``)
    appended after its own (``rows`` distinct): the new ``(indptr, indices, data)``, each row's
    old pairs in their order."""
    n1 = indptr.size - 1
    at = np.full(n1, -1, np.int64)
    for t in range(rows.size):
        at[rows[t]] = t
    out_ptr = np.empty(n1 + 1, np.int64)
    out_ptr[0] = 0
    for i in range(n1):
        extra = add_counts[at[i]] if at[i] >= 0 else 0
        out_ptr[i + 1] = out_ptr[i] + (indptr[i + 1] - indptr[i]) + extra
    out_idx = np.empty(out_ptr[n1], np.int64)
    out_data = np.empty(out_ptr[n1], data.dtype)
    for i in range(n1):
        lo, hi, p = indptr[i], indptr[i + 1], out_ptr[i]
        copy_into(out_idx[p:], indices[lo:], hi - lo)
        copy_into(out_data[p:], data[lo:], hi - lo)
        t = at[i]
        if t >= 0:
            q = p + hi - lo
            copy_into(out_idx[q:], add_cols[t], add_counts[t])
            copy_into(out_data[q:], add_vals[t], add_counts[t])
    return out_ptr, out_idx, out_data
