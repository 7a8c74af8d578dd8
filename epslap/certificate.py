"""An optimality certificate any user can check: LP duality for the assignment problem.

For ``n1 <= n2`` the LP is ``min Σ c_ij x_ij`` s.t. every row assigned once, every column at most
once; its dual is ``max Σ u_i + Σ v_j`` s.t. ``u_i + v_j <= c_ij`` and ``v_j <= 0`` (free when
``n1 == n2``: every column is then assigned exactly once). Any feasible
dual bounds the optimum from below (weak duality), so a dual-feasible ``(u, v)`` with
``Σ c - (Σ u + Σ v) = 0`` proves the assignment optimal (for ``n1 > n2`` the roles of rows and
columns swap: the row duals are the ones that must be ``<= 0``).

Exactness. Integer costs with integer duals are checked in exact integer arithmetic: any
violation or gap of 1 fails. Float costs (or float duals) are checked in float64 with a tolerance
per entry taken from the magnitudes that entry involves, never from the rest of the matrix: a
reduced cost ``c_ij - u_i - v_j`` (computed exactly) may miss 0 by
``RTOL * (|c_ij| + |u_i| + |v_j|)`` (a few units in the last place of its own terms), and the
gap, summed exactly (``math.fsum``), by ``RTOL`` times the sum of the magnitudes of all its
terms. The magnitudes of the duals are taken in canonical position (``max v = 0`` for a square
problem without a limit, whose duals may be shifted freely), so that shifting them cannot
loosen the rule. A large entry elsewhere (a "big-M" for a forbidden pair) loosens nothing.
The rule is judged with unassigned lines' duals at their bound (0, or ``L / 2`` with a cost
limit), as complementary slackness asks: a free column below 0 would otherwise hide, inside a
gap at the scale of the whole matrix, a pair cheaper than its row's own (:func:`_at_bounds`).
The canonical position is one shift for the whole matrix: blocks that ``+inf`` entries (or costs
far above the rest) separate, whose duals may be shifted against each other, are judged at the
magnitudes their duals are given at.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ._exact import CHECK_RTOL, RTOL, exact_excess  # noqa: F401  (the rule's tolerances, for every module)
from ._validate import check_cost_limit, check_flag, largest_finite
from .cpu.verify_rows import scan_source
from .point_pairs import applies, verify_pairs
from .solution import not_taken
from .sparse_input import is_sparse, stored_pairs

_CHUNK = 1 << 22  # matrix entries checked per block: bounded extra memory for big matrices
_INT64_SAFE = 2**62  # |c| + |u| + |v| below this: c - u - v cannot overflow int64


@njit(cache=True, nogil=True, inline="always")
def row_duals_hold(row, v, top, x, rtol):
    """Whether row ``row`` (assigned to column ``x``) meets :func:`verify`'s per-entry rule with
    the duals a solution reports from the prices ``v``: v shifted by its maximum ``top``, and
    u from the assigned pair. Compiled code checks its float duals with it before it returns
    them (the small path, the batches, a rectangular cost source)."""
    ui = np.float64(row[x]) - (v[x] - top)
    for j in range(row.shape[0]):
        cij = np.float64(row[j])
        vj = v[j] - top
        excess = (ui + vj) - cij
        if excess > 0.0 and cij < np.inf:  # the tolerance is never negative
            if excess > rtol * ((abs(cij) + abs(ui)) + abs(vj)):
                return False
    return True


def prices_need_polish(start_absmax: float, v_end) -> bool:
    """Whether a solve's final prices must be redone by one more exact pass to pass
    :func:`verify`. Its reduced costs were rounded at the magnitude of the prices it held, up to
    ``start_absmax`` (their largest |v| when the passes began; the exact pass only lowers
    prices). Where that exceeds the spread of the final prices — a big-M entry in the estimate, the
    virtual rows of a rectangular problem lowering every price — the reported duals (largest at
    0) carry errors far above the roundoff of their own terms; one exact pass from them redoes
    the arithmetic at their magnitude (about n1 rows, every path one edge long)."""
    if not len(v_end):
        return False
    v_end = np.asarray(v_end, dtype=np.float64)
    spread = float(v_end.max() - v_end.min())
    return max(start_absmax, float(np.abs(v_end).max())) > 2.0 * spread


def _indices(name: str, ind, bound: int, axis: str) -> np.ndarray:
    """``ind`` as int64 after checking that it is a 1-D integer array of valid ``axis`` indices."""
    a = np.asarray(ind)
    if a.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of {axis} indices, got shape {a.shape}")
    if a.size and a.dtype.kind not in "iu":
        raise ValueError(f"{name} must hold integer {axis} indices, got dtype {a.dtype}")
    a = a.astype(np.int64, copy=False)
    if a.size and (a.min() < 0 or a.max() >= bound):
        bad = a[(a < 0) | (a >= bound)][0]
        raise ValueError(f"{name} holds {axis} index {bad}, outside [0, {bound})")
    return a


def _duals(name: str, x, size: int) -> np.ndarray:
    a = np.asarray(x)
    if a.shape != (size,):
        raise ValueError(f"{name} must have shape ({size},), got {a.shape}")
    if a.size and a.dtype.kind not in "biuf":
        raise ValueError(f"{name} must be numeric, got dtype {a.dtype}")
    return a.astype(np.int64) if a.dtype.kind == "b" else a  # (bools as 0 and 1)


def _magnitude(a: np.ndarray) -> int:
    """The largest |entry| of an integer array, exactly (``np.abs`` of -2**63 is -2**63)."""
    return max(-int(a.min()), int(a.max())) if a.size else 0


def _as_exact_ints(a: np.ndarray):
    """``a`` as an int64 array when every entry is an integer that int64 holds exactly, else
    None (float duals of integer costs are accepted when they are whole numbers)."""
    if not a.size:
        return a.astype(np.int64)
    if a.dtype.kind in "biu":
        return None if a.max() >= 2**63 else a.astype(np.int64)  # only uint64 can exceed it
    if not np.isfinite(a).all() or (a != np.floor(a)).any() or np.abs(a).max() >= 2.0**63:
        return None
    return a.astype(np.int64)


def verify(cost, row_ind, col_ind, u, v, *, maximize: bool = False,
           cost_limit: float | None = None, backend: str = "cpu", device: int = 0) -> dict:
    """Check an assignment and its duals against the cost matrix.

    Parameters
    ----------
    cost : array_like (n1, n2), a sparse matrix (the stored pairs, as ``epslap.solve`` takes
        it: absent pairs are forbidden) or a ``costfns.CostSource`` (its rows are streamed; of
        a squared Euclidean or Euclidean point set, minimised, only the pairs that could
        violate the duals are read: ``epslap.point_pairs.verify_pairs``, about n log n)
    row_ind, col_ind : 1-D integer arrays
        The assignment (scipy's convention); indices are checked (integer dtype, in range).
    u, v : arrays of shape (n1,) and (n2,)
        Row and column duals, as :class:`epslap.Solution` reports them.
    maximize : bool
        The assignment maximises ``cost`` (the duals then bound it from above).
    cost_limit : float, optional
        The limit the assignment was solved with (``epslap.solve(..., cost_limit=L)``): any
        number of pairs may be assigned, every unassigned row and column costs ``L / 2``, and
        every dual must be at most ``L / 2`` (at least, when maximising) instead of the longer
        side's duals at most 0; ``primal`` then includes those penalties.
    backend : {"cpu", "gpu"}
        Where every cost is scanned. ``"gpu"`` (CuPy) takes a cost source with a device form
        or a CuPy matrix and scans all n1 x n2 costs on device ``device``, computed there as a
        GPU solve computes them; only the blocks' results and the assigned pairs' costs come
        back (a problem whose costs hold NaN, -inf or magnitudes the device's arithmetic does
        not judge is checked on the host, with the same report).
    device : int
        The CUDA device of ``backend="gpu"``.

    Returns
    -------
    dict
        ``primal`` (the assignment's cost), ``dual`` (``Σu + Σv``), ``gap`` (primal − dual),
        ``max_violation`` (largest dual infeasibility: ``u_i + v_j - c_ij`` over finite pairs,
        unassigned lines' duals taken at their bound, and the longer side's positive duals), ``max_assigned_slack`` (largest
        ``|c - u - v|`` on assigned pairs), ``complete`` (every line of the shorter side
        assigned exactly once, at a finite cost), ``exact`` (checked in integer arithmetic),
        ``optimal`` (all of it holds: exactly for integers, within the per-entry tolerance of
        the module docstring for floats) and ``reason`` (why not, or ``""``).

    Raises
    ------
    ValueError
        A malformed argument: not a matrix, indices that are not integers or out of range,
        duals of the wrong shape.
    """
    check_flag("maximize", maximize)
    streamed = False  # a cost source, whose rows are computed
    on_device = None  # the costs on a GPU (backend="gpu")
    if backend not in ("cpu", "gpu"):
        raise ValueError(f"backend must be 'cpu' or 'gpu', got {backend!r}")
    if backend == "gpu":
        from .gpu.verify import DeviceCosts
        on_device = DeviceCosts(cost, device)
        shape, block_of, cdtype = on_device.shape, on_device.rows, on_device.dtype
    elif is_sparse(cost):
        csr = stored_pairs(cost)
        shape, cdtype = (csr.n1, csr.n2), csr.data.dtype
        block_of = csr
    elif hasattr(cost, "rows") and hasattr(cost, "shape") and not isinstance(cost, np.ndarray):
        shape, block_of = tuple(cost.shape), cost.rows  # a cost source: stream its rows
        streamed = True
        cdtype = np.dtype(cost.dtype)
    else:
        c = np.asarray(cost)
        if c.ndim != 2:
            raise ValueError(f"cost must be a 2-D matrix, got {c.ndim} dimensions")
        if c.dtype.kind not in "biuf":
            raise ValueError(f"cost must be numeric, got dtype {c.dtype}")
        shape, block_of, cdtype = c.shape, (lambda a, b: c[a:b]), c.dtype
    n1, n2 = shape
    r = _indices("row_ind", row_ind, n1, "row")
    k = _indices("col_ind", col_ind, n2, "column")
    if r.shape != k.shape:
        raise ValueError(f"row_ind and col_ind must have the same length, got {r.size} and "
                         f"{k.size}")
    u = _duals("u", u, n1)
    v = _duals("v", v, n2)
    if cost_limit is not None:
        cost_limit = check_cost_limit(cost_limit, maximize)
    incomplete = []  # why the pairs are not an assignment of the shorter side
    if r.size != min(n1, n2) and cost_limit is None:
        incomplete.append(f"{r.size} pairs assigned, {min(n1, n2)} needed")
    if len(np.unique(r)) != r.size:
        incomplete.append("a row is assigned twice")
    if len(np.unique(k)) != k.size:
        incomplete.append("a column is assigned twice")
    iu, iv = _as_exact_ints(u), _as_exact_ints(v)
    # an even whole limit has an integer price per unmatched line (checked on the exact value:
    # cost_limit / 2 in float rounds an odd limit beyond 2**53 to a whole number)
    whole = cost_limit is not None and float(cost_limit).is_integer()
    exact = (cdtype.kind in "biu" and iu is not None and iv is not None
             and (cost_limit is None or (whole and int(cost_limit) % 2 == 0)))
    # a cost source's rows are computed: a compiled scan may read them (through its state);
    # another object that only gives rows (the GPU certificate's rows from the host) is read
    # by the NumPy loop
    from costfns import CostSource
    source = cost if streamed and isinstance(cost, CostSource) else None
    if streamed and cost_limit is None and on_device is None:
        pairs = verify_pairs(cost, r, k, u, v) if applies(cost, maximize) else None
        if pairs is not None:  # a point set: only the pairs that could violate are read
            block_of, source = pairs, None
    if exact:
        half = None if cost_limit is None else int(cost_limit) // 2
        rep = _check_int(block_of, n1, n2, r, k, iu, iv, maximize, half, device=on_device)
    else:
        half = None if cost_limit is None else float(cost_limit) / 2
        rep = _check_float(block_of, n1, n2, r, k, u, v, maximize, half, source=source,
                           device=on_device)
    if not rep.pop("finite"):
        incomplete.append("an assigned pair has an infinite cost")
    reasons = incomplete + rep.pop("reasons")
    rep.update(complete=not incomplete, exact=exact, optimal=not reasons,
               reason="; ".join(reasons))
    return rep


def _pieces(block_of, n1: int, n2: int, r, k, dtype):
    """The costs in bounded chunks: ``(rows, cols, block, here, picked)``, where ``u[rows]`` and
    ``v[cols]`` broadcast against ``block`` (its costs as ``dtype``, or as read when None) and
    ``picked`` are the costs of the pairs ``here`` (a mask over the assignment). ``block_of``:
    a function of a row range giving dense rows, or a sparse problem's stored pairs
    (:func:`epslap.sparse_input.stored_pairs`), whose absent assigned pairs cost +inf."""
    if hasattr(block_of, "indptr"):
        yield from _sparse_pieces(block_of, r, k, dtype)
        return
    step = max(1, _CHUNK // max(n2, 1))
    for start in range(0, n1, step):
        block = np.asarray(block_of(start, min(start + step, n1)))
        block = block if dtype is None else block.astype(dtype, copy=False)
        here = (r >= start) & (r < start + block.shape[0])
        yield ((slice(start, start + block.shape[0]), None), (None, slice(None)), block, here,
               block[r[here] - start, k[here]])


def _sparse_pieces(csr, r, k, dtype):
    """:func:`_pieces` of a sparse problem: 1-D chunks of its stored pairs, the assigned pairs'
    costs with the first chunk (found by binary search in the sorted pair keys)."""
    n2 = max(csr.n2, 1)
    rows = np.repeat(np.arange(csr.n1, dtype=np.int64), np.diff(csr.indptr))
    data = csr.data if dtype is None else csr.data.astype(dtype, copy=False)
    keys = rows * n2 + csr.indices
    want = r.astype(np.int64) * n2 + k
    at = np.minimum(np.searchsorted(keys, want), max(keys.size - 1, 0))
    found = keys[at] == want if keys.size else np.zeros(r.size, bool)
    picked = data[at] if keys.size else np.zeros(r.size, data.dtype)
    if not found.all():  # a pair that is not stored is forbidden
        picked = picked.astype(np.float64 if data.dtype.kind == "f" else object)
        picked[~found] = math.inf
    everything = np.ones(r.size, bool)
    if not keys.size:
        yield rows, rows, data, everything, picked
    for lo in range(0, keys.size, _CHUNK):
        hi = min(lo + _CHUNK, keys.size)
        yield (rows[lo:hi], csr.indices[lo:hi], data[lo:hi], everything if lo == 0 else
               ~everything, picked if lo == 0 else picked[:0])


def _long_side(n1: int, n2: int, u, v):
    """The duals of the longer side (those that must be <= 0: its lines are assigned at most
    once) and their name; none for a square problem, whose lines are all assigned exactly once."""
    if n1 == n2:
        return v[:0], "v"
    return (v, "v") if n1 < n2 else (u, "u")


def _check_int(block_of, n1, n2, r, k, u, v, maximize, half, device=None) -> dict:
    """Exact check for integer costs and integer duals (Python integers where int64 could
    overflow); ``half``: half the cost limit (an integer), None without one. ``device``: the
    costs on a GPU (``gpu.verify.DeviceCosts``), scanned there where its int64 arithmetic
    holds them."""
    sign = -1 if maximize else 1
    picked = np.zeros(r.size, dtype=object)
    worst = None
    big = max(_magnitude(u), _magnitude(v)) >= _INT64_SAFE // 2
    pieces = _pieces(block_of, n1, n2, r, k, None)
    if device is not None:
        worst = device.scan_int(u, v, sign)
        if worst is not None:
            picked[:] = device.pair_costs(r, k).tolist()
            pieces = ()
    for rows, cols, block, here, chosen in pieces:
        if block.dtype.kind == "u" and block.size and int(block.max()) >= _INT64_SAFE // 2:
            block = block.astype(object)  # uint64 beyond int64: a cast would wrap
        else:
            block = block.astype(np.int64, copy=False)
        uu, vv = u[rows], v[cols]
        if big or _magnitude(block) >= _INT64_SAFE // 2:
            block, uu, vv = block.astype(object), uu.astype(object), vv.astype(object)
        picked[here] = chosen
        if block.size:
            red = sign * (uu + vv - block)
            w = int(red.max())
            worst = w if worst is None else max(worst, w)
    finite = not any(isinstance(x, float) for x in picked)  # an absent sparse pair: inf
    if not finite:
        picked[[isinstance(x, float) for x in picked]] = 0
    picked_sum = sum(int(x) for x in picked)
    ui, vi = [int(x) for x in u], [int(x) for x in v]
    dual = sum(ui) + sum(vi)
    slack = max((abs(int(picked[t]) - ui[r[t]] - vi[k[t]]) for t in range(r.size)), default=0)
    worst = 0 if worst is None else worst
    if half is None:
        longer, name = _long_side(n1, n2, ui, vi)
        long_worst = max((sign * x for x in longer), default=0)
    else:  # every dual at most L/2: its line may stay unassigned at that price
        picked_sum += (n1 + n2 - 2 * r.size) * half
        name = None  # (the reason names cost_limit)
        long_worst = max((sign * (x - half) for x in ui + vi), default=0)
    gap = sign * (picked_sum - dual)
    reasons = _reasons(worst > 0, worst, long_worst, name, slack != 0, gap, gap != 0)
    return {"primal": picked_sum, "dual": dual, "gap": gap,
            "max_violation": max(worst, long_worst), "max_assigned_slack": slack,
            "finite": finite, "reasons": reasons}


#: magnitudes from which :func:`_check_float` scales (below, every sum of three terms is finite)
_NEAR_TOP = 2.0**900


def _scale_exponent(*arrays) -> int:
    """A power of two that brings every finite magnitude below 2**900 (0: none needed), so that
    sums and tolerances of entries near the top of the float range do not overflow. Scaling by
    a power of two is exact and every test is homogeneous, so the verdict does not change."""
    top = max(largest_finite(np.asarray(a, dtype=np.float64)) for a in arrays)
    if top < _NEAR_TOP:
        return 0
    return -(math.frexp(top)[1] - 900)


def _compiled_scan(source, us, vs, au, av, sign, r, k):
    """The scan of :func:`_check_float` over every cost of a cost source, compiled
    (``cpu.verify_rows``): ``(worst, excess, picked)``, or None where it does not serve (no
    source, one it cannot compile, a NaN, -inf or huge cost: the NumPy loop says what)."""
    if source is None or np.dtype(source.dtype).kind != "f":
        return None
    own = np.full(us.size, -1, np.int64)
    own[r] = k
    if np.count_nonzero(own >= 0) != r.size:  # a row assigned twice: the NumPy loop says so
        return None
    from numba.core.errors import NumbaError
    try:
        # the assigned pairs' costs come from the rows the scan reads (a row function or a
        # Python function has no entry form to read them by)
        worst, excess, flags, picked = scan_source(source, us, vs, au, av, sign, own)
        if flags:
            return None
    except NumbaError:
        return None
    return worst, excess, sign * picked[r]


def _device_scan(device, us, vs, au, av, sign, r, k):
    """:func:`_compiled_scan` on a GPU (``gpu.verify.DeviceCosts``)."""
    scanned = device.scan_float(us, vs, au, av, sign)
    if scanned is None or scanned[2]:
        return None
    return scanned[0], scanned[1], sign * device.pair_costs(r, k)


def _check_float(block_of, n1, n2, r, k, u, v, maximize, half, source=None,
                 device=None) -> dict:
    """Float check with a tolerance per entry (module docstring); ``half``: half the cost
    limit, None without one.

    Invariance. For a square problem without a limit, adding K to every u and subtracting it
    from every v changes no constraint and not the dual objective, only the magnitudes of the
    numbers. The tolerances are therefore taken from the duals shifted to their canonical
    position (max v = 0, the solvers' own convention), and the reduced costs and the gap are
    computed exactly from the duals as given: shifted duals are judged as the unshifted ones
    would be, plus the rounding the shift itself put into them. Rectangular problems and
    problems with a limit have no such free shift (the longer side's duals are bounded).

    Range. Every quantity is scaled by a power of two (exact) that keeps sums below the float
    range, block by block, so entries and duals near 1e308 are judged, not overflowed."""
    sign = -1.0 if maximize else 1.0
    u = sign * u.astype(np.float64)
    v = sign * v.astype(np.float64)
    h = None if half is None else sign * float(half)
    bad_duals = not (np.isfinite(u).all() and np.isfinite(v).all())
    if bad_duals:
        u = np.where(np.isfinite(u), u, 0.0)
        v = np.where(np.isfinite(v), v, 0.0)
    e0 = _scale_exponent(u, v, [0.0 if h is None else h])
    us, vs = np.ldexp(u, e0), np.ldexp(v, e0)
    shift = float(vs.max()) if n1 == n2 and h is None and vs.size else 0.0
    au, av = np.abs(us + shift), np.abs(vs - shift)  # canonical magnitudes (tolerances only)
    picked = np.zeros(r.size)
    worst = 0.0      # largest u_i + v_j - c_ij over finite pairs
    excess = -1.0    # largest (u_i + v_j - c_ij) - tol_ij, scaled: > 0 fails
    # the per-entry rule's duals: unassigned lines at their bound (complementary slackness)
    ur, vr, raised = _at_bounds(n1, n2, r, k, us, vs, None if h is None else math.ldexp(h, e0))
    aur, avr = (np.abs(ur + shift), np.abs(vr - shift)) if raised else (au, av)
    scanned = None
    if e0 == 0:  # the compiled scans' arithmetic is unscaled
        scanned = (_compiled_scan(source, ur, vr, aur, avr, sign, r, k) if device is None
                   else _device_scan(device, ur, vr, aur, avr, sign, r, k))
    if scanned is not None:  # the same check, compiled; NaN, -inf and huge costs come here
        worst, excess, picked = scanned
    pieces = () if scanned is not None else _pieces(block_of, n1, n2, r, k, np.float64)
    for rows, cols, block, here, chosen in pieces:
        block = sign * block
        picked[here] = sign * chosen
        if np.isnan(block).any():
            raise ValueError("cost contains NaN")
        if np.isneginf(block).any():
            raise ValueError(f"cost contains {'+inf (maximize=True)' if maximize else '-inf'}: "
                             "an unbounded pair, which solve refuses too")
        if not block.size:
            continue
        e = min(e0, _scale_exponent(block))
        d = e - e0  # from the duals' scale to this block's
        cc = np.ldexp(block, e)
        with np.errstate(invalid="ignore"):
            red = exact_excess(np.ldexp(ur[rows], d), np.ldexp(vr[cols], d), cc)
            tol = RTOL * ((np.abs(cc) + np.ldexp(aur[rows], d)) + np.ldexp(avr[cols], d))
            red = np.where(np.isfinite(block), red, -np.inf)
        if d < 0 and e0 == 0:
            # a cost near the top of the float range in this block: the scale that keeps its
            # sums finite would push tiny costs elsewhere in the block below the normal range
            # (their precision lost, their violations hidden); each entry whose terms all lie
            # below _NEAR_TOP is judged unscaled (duals that needed a scale of their own keep
            # the block's: their magnitudes are then scaled already)
            near_top = _NEAR_TOP
            small = ((np.abs(block) < near_top) & (aur[rows] < near_top)
                     & (avr[cols] < near_top) & np.isfinite(block))
            with np.errstate(invalid="ignore", over="ignore"):
                red1 = exact_excess(ur[rows], vr[cols], np.where(small, block, 0.0))
                tol1 = RTOL * ((np.abs(block) + aur[rows]) + avr[cols])
            if small.any():
                worst = max(worst, float(red1[small].max()))
                excess = max(excess, float((red1 - tol1)[small].max()))
            red = np.where(small, -np.inf, red)
        worst = max(worst, _unscaled(float(red.max()), e))
        excess = max(excess, float((red - tol).max()))
    finite = bool(np.isfinite(picked).all())
    e = min(e0, _scale_exponent(picked[np.isfinite(picked)]))  # the gap's terms' own scale
    d = e - e0
    if half is not None:  # the unassigned lines' price, a term of the primal like a pair's cost
        picked = np.append(picked, (n1 + n2 - 2 * r.size) * h)
    ps = np.ldexp(picked, e)
    slack, slack_excess = 0.0, -1.0
    if r.size and finite:
        pp = ps[:r.size]
        terms = np.abs(exact_excess(np.ldexp(us[r], d), np.ldexp(vs[k], d), pp))
        slack_tol = RTOL * (np.abs(pp) + np.ldexp(au[r], d) + np.ldexp(av[k], d))
        slack = _unscaled(float(terms.max()), e)
        slack_excess = float((terms - slack_tol).max())
    primal = _unscaled(math.fsum(ps), e) if finite else math.inf
    dual = _unscaled(math.fsum(np.concatenate([us, vs])), e0)
    if finite and not bad_duals:
        gap_s = math.fsum(np.concatenate([ps, -np.ldexp(us, d), -np.ldexp(vs, d)]))
        gap_off = not abs(gap_s) <= RTOL * math.fsum(
            np.concatenate([np.abs(ps), np.ldexp(au, d), np.ldexp(av, d)]))
        gap = _unscaled(gap_s, e)
    else:
        gap, gap_off = (math.nan if bad_duals else math.inf), True
    if half is None:
        longer, name = _long_side(n1, n2, u, v)
        long_worst = float(longer.max()) if longer.size else 0.0
    else:  # every dual at most L/2 (signed), within the tolerance of its own terms
        name = None  # (the reason names cost_limit)
        both = np.concatenate([us, vs])
        hs = math.ldexp(h, e0)
        over = both - hs
        long_worst = _unscaled(float(over.max()), e0) if both.size else 0.0
        if both.size and float((over - RTOL * (np.abs(both) + abs(hs))).max()) <= 0:
            long_worst = min(long_worst, 0.0)  # above L/2 by rounding only
    reasons = ["a dual is NaN or infinite"] if bad_duals else []
    reasons += _reasons(excess > 0, worst, long_worst, name, slack_excess > 0, gap, gap_off,
                        raised)
    return {"primal": sign * primal, "dual": math.nan if bad_duals else sign * dual,
            "gap": gap, "max_violation": max(worst, long_worst), "max_assigned_slack": slack,
            "finite": finite, "reasons": reasons}


def _at_bounds(n1: int, n2: int, r, k, us, vs, hs):
    """The duals the per-entry rule is judged with: unassigned lines' duals raised to their
    bound (signed as minimised), as complementary slackness asks of them: without a limit the
    longer side's, to 0; with one every unassigned line's, to ``L / 2`` (``hs``). A dual below
    its bound on an unassigned line would hide a pair cheaper than the row's own: the gap sees
    it only in sum, at the scale of the whole matrix (a row assigned at 1257 while a free column
    offered 1, next to costs of 1e21). ``(u, v, raised)``; ``us``, ``vs``, ``hs`` scaled alike."""
    ur, vr = us, vs
    if hs is not None or n1 < n2:
        vr = vs.copy()
        free = not_taken(vs.size, k)
        vr[free] = np.maximum(vs[free], 0.0 if hs is None else hs)
    if hs is not None or n1 > n2:
        ur = us.copy()
        free = not_taken(us.size, r)
        ur[free] = np.maximum(us[free], 0.0 if hs is None else hs)
    raised = bool((ur is not us and (ur != us).any()) or (vr is not vs and (vr != vs).any()))
    return ur, vr, raised


def _unscaled(x: float, e: int) -> float:
    """``x * 2**-e``, ±inf beyond the float range."""
    try:
        return math.ldexp(x, -e)
    except OverflowError:
        return math.copysign(math.inf, x)


def _reasons(infeasible: bool, worst, long_worst, name: str | None, slack_off: bool, gap,
             gap_off: bool, raised: bool = False) -> list:
    """Why the certificate fails, one phrase per failed condition (empty: it holds);
    ``raised``: unassigned lines' duals were judged at their bound (:func:`_at_bounds`)."""
    out = []
    if infeasible:
        out.append(f"dual infeasible: u_i + v_j - c_ij reaches {worst}" + (
            " with the unassigned lines' duals at their bound (complementary slackness)"
            if raised else ""))
    if long_worst > 0 and name is None:
        out.append(f"a dual (u or v) is {long_worst} above cost_limit / 2")
    elif long_worst > 0:
        out.append(f"a dual of the longer side ({name}) is {long_worst}, above 0")
    if slack_off:
        out.append("an assigned pair has c - u - v away from 0")
    if gap_off:
        out.append(f"duality gap {gap}")
    return out
