"""Float matrices whose largest costs stand far above all the others (a "big-M" for a
forbidden pair): solved with those costs forbidden first.

A cost of 1e20 beside costs near 1 is exact in float64 but its magnitude is not: a solve whose
prices reach it (a search that has to cross such a pair, a column whose only finite cost is
elsewhere) computes every reduced cost at that magnitude, where costs near 1 round away, and
ends at a wrong assignment whose duals meet ``verify``'s per-entry rule at that magnitude.

A solution whose prices spread far beyond the small costs' magnitude (:func:`misled`: an O(n)
look, after the solve) is looked at again. A split may also lie below the least positive cost, where every small cost is at most 0 (a
maximisation of positive profits with -1e20 for forbidden pairs). Where the costs split into a
small group in ``[a, b]`` and a big one from ``B`` with
``B > BIG_M_FACTOR * (n + 1) * max(|a|, |b|)``, any assignment that avoids the big costs is
cheaper than every one that uses one, so the problem with them forbidden (``+inf``) has the
same optimum wherever it is feasible. Its duals are of the small costs' magnitude, and they
certify the problem as given too when ``max u + max v`` stays below ``B`` (checked). Where it
is infeasible (the optimum needs a big cost), the next split up is tried; where none serves, a
line whose every finite cost is one and the same big value is subtracted (:func:`_lines_reduced`)
and the rest solved as above, else the first solution stands. ``stats["big_m_apart"]`` gives the threshold used.

Stored pairs (sparse input) whose float costs split are solved without their big pairs first
(:func:`_sparse_apart`), lines that store one big value alone having it subtracted where no
split serves (:func:`_sparse_lines_reduced`). For float matrices in memory, NumPy or CuPy (both backends; on the CPU also a batch's members
that leave the small path) and cost sources whose matrix fits ``memory`` (solved as that
table); a GPU batch's members and a problem with ``cost_limit`` are solved as given. A cost
source through row caches is solved as given too (its costs are not held to forbid some):
where its prices spread that far, a RuntimeWarning says the assignment may not be optimal.
"""
from __future__ import annotations

import math
import time
import warnings

import numpy as np

from ._validate import array_module, is_device_array, spread_rows
from .errors import InfeasibleError, user_stacklevel

#: the big costs must exceed the small ones' magnitude times this and (n + 1)
BIG_M_FACTOR = 4.0
#: the cheap look: rows sampled for the small costs' magnitude
SAMPLE_ROWS = 16
#: the cheap look passes a matrix whose largest cost is within this many times (n + 1) times
#: the sampled rows' smallest nonzero magnitudes (the largest of them): no split can exist
LOOK_FROM = 2.0**16
#: rows read at a time by the histogram of magnitudes
_CHUNK_ENTRIES = 1 << 22


def small_magnitude(cost, rows: int = SAMPLE_ROWS) -> float:
    """A scale every matrix without big costs keeps its prices near, read from SAMPLE_ROWS
    rows (of a matrix or a cost source): the largest of their ``n2 / 64``-th smallest nonzero
    |cost| (0.0 where none). Not the smallest: near-duplicate points make it tiny in every row;
    the 64th part of a row still lies among the small costs where the big ones fill up to
    63/64 of it."""
    rows = spread_rows(cost.shape[0], rows)
    if isinstance(cost, np.ndarray):
        sample = np.abs(cost[rows].astype(np.float64))
    elif is_device_array(cost):  # a CuPy matrix: the sampled rows copied to the host
        sample = np.abs(cost[array_module(cost).asarray(rows)].get().astype(np.float64))
    else:
        sample = np.abs(np.array([cost.row(int(i)) for i in rows], np.float64))
    sample[~((sample > 0) & (sample < np.inf))] = np.inf  # zeros, +inf, NaN: not counted
    rank = max(1, sample.shape[1] // 64)
    kth = np.partition(sample, rank - 1, axis=1)[:, rank - 1]
    kth = kth[kth < np.inf]  # (a row of fewer such costs: not counted)
    return float(kth.max()) if kth.size else 0.0


def one_row_magnitude(cost) -> float:
    """:func:`small_magnitude` of one row of a NumPy matrix or a cost source with host rows;
    0.0 for anything else (a CuPy matrix, a source with a device form alone)."""
    if (not (isinstance(cost, np.ndarray) or hasattr(cost, "row")) or is_device_array(cost)
            or not min(cost.shape)):
        return 0.0
    try:
        return small_magnitude(cost, 1)
    except NotImplementedError:
        return 0.0


def misled(sol, cost) -> bool:
    """Whether a solution's prices spread far beyond the small costs' magnitude
    (LOOK_FROM * (n + 1) times :func:`small_magnitude`): what prices that reached a big cost
    look like (and those of costs of a very wide range, which :func:`thresholds` tells apart)."""
    bound = _spread(sol) / (LOOK_FROM * (max(cost.shape) + 1))
    try:  # one row's magnitude is at most the sample's: within it, no need to read the others
        return bound > small_magnitude(cost, 1) and bound > small_magnitude(cost)
    except NotImplementedError:  # a cost source with a device form alone: no rows to read
        return False


def _spread(sol) -> float:
    """The larger spread (max - min) of a solution's two duals."""
    return max((float(x.max()) - float(x.min()) for x in (_host(sol.u), _host(sol.v))
                if x.size), default=0.0)


def thresholds(cost: np.ndarray, maximize: bool, lines: int | None = None) -> list[float]:
    """The splits of ``cost``'s finite values (minimised: negated where ``maximize``), lowest
    first: each a threshold T such that every value above T exceeds BIG_M_FACTOR * ``lines``
    (default n + 1) * max(|least value|, every value below T). One pass over the matrix."""
    if cost.dtype.kind != "f" or cost.size < 2:
        return []
    sign = -1.0 if maximize else 1.0
    lines = max(cost.shape) + 1 if lines is None else lines
    counts, lo = _exponent_counts(cost, sign)
    filled = np.flatnonzero(counts) - _EXP_OFFSET  # values in [2**(e-1), 2**e)
    out = []
    if filled.size and lo <= 0 and math.ldexp(1.0, int(filled[0]) - 1) > \
            BIG_M_FACTOR * lines * abs(lo):
        out.append(0.0)  # every small cost at most 0 (a maximisation's profits, say)
    for below, above in zip(filled[:-1], filled[1:]):
        small = max(abs(lo), math.ldexp(1.0, int(below)))  # every value under the gap below it
        if math.ldexp(1.0, int(above) - 1) > BIG_M_FACTOR * lines * small:
            out.append(math.ldexp(1.0, int(below)))
    return out


#: frexp's exponents of float64 (-1073 … 1024) as indices from 0
_EXP_OFFSET = 1075


def _exponent_counts(cost, sign: float) -> tuple:
    """How many finite positive values (``sign * cost``) fall in each binary exponent, and the
    least finite value, read a few rows at a time (no n x n temporary; on the device for a CuPy
    matrix)."""
    xp = array_module(cost)
    counts = xp.zeros(_EXP_OFFSET + 1100, xp.int64)
    least = math.inf
    step = max(1, _CHUNK_ENTRIES // max(cost.shape[1], 1))
    for start in range(0, cost.shape[0], step):
        block = sign * cost[start:start + step].astype(xp.float64)
        block = block[xp.isfinite(block)]
        if block.size:
            least = min(least, float(block.min()))
        block = block[block > 0]
        if block.size:
            counts += xp.bincount(xp.frexp(block)[1].astype(xp.int64) + _EXP_OFFSET,
                                  minlength=counts.size)
    counts = counts.get() if xp is not np else counts
    return counts, (least if math.isfinite(least) else 0.0)


def solve_apart(problem, solve, solve_cut=None):
    """``solve(problem)`` (a validated ``_validate.Problem``); for a NumPy float matrix whose
    solution's prices spread far beyond its small costs (:func:`misled`) and whose costs split
    (:func:`thresholds`), solved again with the big costs forbidden (module docstring) by
    ``solve_cut`` (default ``solve``: the caller's options less a warm start's and
    checkpoints', which belong to the problem as given)."""
    solve_cut = solve if solve_cut is None else solve_cut
    t_start = time.perf_counter()
    if problem.form == "sparse":
        return _sparse_apart(problem, solve, solve_cut, t_start)
    sol = solve(problem)
    cost = problem.cost
    if (problem.form not in ("matrix", "device", "source") or sol.stats.get("method") == "jv"
            or not min(cost.shape)):
        return sol  # (the small path's prices stay off a big cost's magnitude: its fuzz, all)
    if problem.form == "source" and np.dtype(cost.dtype).kind == "f" and misled(sol, cost):
        warnings.warn(
            f"epslap: this solve's prices spread over {_spread(sol):.3g}, far beyond the costs "
            f"of a sample of rows (about {small_magnitude(cost):.3g}): costs far above the "
            "rest (a big-M standing for forbidden pairs?) round every reduced cost at their "
            "magnitude, and the assignment may not be optimal. Give forbidden pairs as +inf, "
            "or the costs as a NumPy matrix (solved with the big costs apart).",
            RuntimeWarning, stacklevel=user_stacklevel())
        return sol
    if (not (problem.form == "matrix" and type(cost) is np.ndarray or problem.form == "device")
            or cost.dtype.kind != "f" or not misled(sol, cost)):
        return sol
    given = sol
    sign = -1.0 if problem.maximize else 1.0
    for t in thresholds(cost, problem.maximize):
        big = cost > t if sign > 0 else cost < -t  # (no n x n temporary beside the mask)
        cut = cost.copy()
        cut[big] = sign * np.inf
        try:
            sol = solve_cut(problem._replace(cost=cut))
        except InfeasibleError:
            continue  # the optimum needs a big cost: the next split up
        del cut
        if not _certifies_big(sol, _least(cost, big, sign), sign):
            break  # (not seen): as given
        return _solved_apart(sol, sign * t, t_start)
    return _lines_reduced(problem, given, solve_cut) or given


def _certifies_big(sol, least_big: float, sign: float) -> bool:
    """Whether the duals of the problem without its big pairs certify those too: ``max u +
    max v`` below the least big cost (signed)."""
    u, v = sign * _host(sol.u), sign * _host(sol.v)
    return not (u.size and v.size) or float(u.max()) + float(v.max()) < least_big


def _solved_apart(sol, threshold: float, t_start: float):
    """``sol`` reported as solved apart at ``threshold``, timed from ``t_start`` (both solves
    and the look between them)."""
    sol.stats["big_m_apart"] = threshold + 0.0  # (no -0.0)
    if "time_total_s" in sol.stats:
        sol.stats["time_total_s"] = time.perf_counter() - t_start
    return sol


def _sparse_apart(problem, solve, solve_cut, t_start, lines: bool = True,
                  as_given: bool = True):
    """:func:`solve_apart` for stored pairs (SciPy sparse, a CSR tuple): where the stored float
    costs split (:func:`thresholds`), the problem without its big pairs is solved first (the
    same optimum wherever it is feasible), else the problem as given. Not after a look at the
    duals as for a matrix: the sparse solver's ε-scaled auction starts from the largest cost
    and can end at a wrong assignment whose duals stay small. The test costs an O(nnz) pass
    over the values, the histogram runs only where they span more than a split needs. Where
    no split serves, lines whose stored costs are all one big value are subtracted first
    (:func:`_sparse_lines_reduced`, ``lines``); then the problem as given is solved (None
    instead where not ``as_given``)."""
    values = problem.cost[2] if type(problem.cost) is tuple else problem.cost.data
    values = np.asarray(values).ravel()  # (DIA and BSR hold theirs in blocks)
    if values.dtype.kind != "f" or values.size < 2 or not _may_split(values, problem):
        return solve(problem) if as_given else None
    from ._validate import check_float_range
    from .sparse_input import stored_pairs
    pairs = stored_pairs(problem.cost)
    check_float_range(values, (pairs.n1, pairs.n2))  # refused as given is
    data = pairs.data
    lines = max(pairs.n1, pairs.n2) + 1
    sign = -1.0 if problem.maximize else 1.0
    rows = None
    for t in thresholds(data[None, :], problem.maximize, lines):
        big = data > t if sign > 0 else data < -t
        keep = ~big
        if rows is None:
            rows = np.repeat(np.arange(pairs.n1, dtype=np.int64), np.diff(pairs.indptr))
        per_row = np.bincount(rows[keep], minlength=pairs.n1)
        if pairs.n1 <= pairs.n2 and not per_row.all() or pairs.n1 >= pairs.n2 and not \
                np.bincount(pairs.indices[keep], minlength=pairs.n2).all():
            continue  # a line left without pairs: infeasible (the next split keeps more)
        indptr = np.zeros(pairs.n1 + 1, np.int64)
        np.cumsum(per_row, out=indptr[1:])
        cut = (indptr, pairs.indices[keep], data[keep], pairs.n2)
        try:
            sol = solve_cut(problem._replace(cost=cut))
        except InfeasibleError:
            continue  # the optimum needs a big cost: the next split up
        if not _certifies_big(sol, _least(data, big, sign), sign):
            break  # (not seen): as given
        return _solved_apart(sol, sign * t, t_start)
    if lines:
        sol = _sparse_lines_reduced(problem, pairs, sign, solve_cut, t_start)
        if sol is not None:
            return sol
    return solve(problem) if as_given else None


def _sparse_lines_reduced(problem, pairs, sign: float, solve_cut, t_start):
    """:func:`_lines_reduced` for stored pairs: rows (columns, where every column is assigned)
    whose stored costs are all one and the same big value have it subtracted (those costs
    become 0, exactly), and the rest is solved apart at the small costs' magnitude; the
    solution of the problem as given (duals moved back by the values, its cost summed from the
    stored costs), or None where no such line exists or the reduced problem is not solved.
    "Big": beyond LOOK_FROM * (n + 1) times the 64th part of the nonzero magnitudes."""
    n1, n2 = pairs.n1, pairs.n2
    vals = sign * pairs.data.astype(np.float64)
    finite = np.isfinite(vals)
    nonzero = np.abs(vals[finite & (vals != 0.0)])
    if not nonzero.size:
        return None
    big = LOOK_FROM * (max(n1, n2) + 1) * float(np.quantile(nonzero, 1 / 64))
    rows = np.repeat(np.arange(n1, dtype=np.int64), np.diff(pairs.indptr))
    shifts = []
    for ids, size, applies in ((rows, n1, n1 <= n2), (pairs.indices, n2, n2 <= n1)):
        hi, lo = np.full(size, -np.inf), np.full(size, np.inf)
        np.maximum.at(hi, ids[finite], vals[finite])
        np.minimum.at(lo, ids[finite], vals[finite])
        equal_big = (hi == lo) & np.isfinite(lo) & (lo > big)
        shifts.append(np.where(equal_big, lo, 0.0) if applies else np.zeros(size))
        vals = vals - shifts[-1][ids]  # (the columns judged after the rows' shifts: a pair
        # in both a shifted row and column would go to minus the value)
    row_shift, col_shift = shifts
    if not (row_shift.any() or col_shift.any()):
        return None
    reduced = pairs.data.astype(np.float64) - sign * (row_shift[rows] + col_shift[pairs.indices])
    cut = problem._replace(cost=(pairs.indptr, pairs.indices, reduced, n2))
    try:  # no big cost left: solved at the small magnitude; else only where a split serves
        sol = solve_cut(cut) if not bool((np.abs(reduced) > big).any()) else \
            _sparse_apart(cut, solve_cut, solve_cut, t_start, lines=False, as_given=False)
    except InfeasibleError:
        return None
    if sol is None:
        return None
    import dataclasses
    row_ind, col_ind = np.asarray(sol.row_ind), np.asarray(sol.col_ind)
    key = rows * max(n2, 1) + pairs.indices  # (sorted: stored_pairs orders each row)
    picked = pairs.data[np.searchsorted(key, row_ind * max(n2, 1) + col_ind)]
    stats = dict(sol.stats, big_m_lines=int(np.count_nonzero(row_shift)
                                            + np.count_nonzero(col_shift)))
    return dataclasses.replace(
        sol, cost=float(picked.sum(dtype=np.float64)), u=_host(sol.u) + sign * row_shift,
        v=_host(sol.v) + sign * col_shift, stats=stats)


#: stored costs sampled by :func:`_may_split`
SPLIT_SAMPLE = 4096


def _may_split(values: np.ndarray, problem) -> bool:
    """Whether stored costs ``values`` may split (:func:`thresholds`), from SPLIT_SAMPLE of
    them and the least and largest finite ones: a split of all of them is one of these too
    (the least lies in its small group, the largest in its big one, and none in its gap), so
    that an ordinary graph pays two reductions and a small histogram, not the whole one."""
    finite = values
    lo, hi = float(values.min()), float(values.max())
    if not (math.isfinite(lo) and math.isfinite(hi)):
        finite = values[np.isfinite(values)]
        if finite.size < 2:
            return False
        lo, hi = float(finite.min()), float(finite.max())
    step = max(1, finite.size // SPLIT_SAMPLE)
    sample = np.concatenate([finite[::step].astype(np.float64), [lo, hi]])
    shape = problem.cost.shape if type(problem.cost) is not tuple else \
        (len(problem.cost[0]) - 1, int(problem.cost[3]) if len(problem.cost) == 4 else 0)
    return bool(thresholds(sample[None, :], problem.maximize, max(shape) + 1))


def _least(cost, where, sign: float) -> float:
    """The least of ``sign * cost`` over the mask ``where`` (inf where it is empty)."""
    if isinstance(cost, np.ndarray):  # (NumPy reduces under a mask without a copy)
        pick = np.min if sign > 0 else np.max
        return sign * float(pick(cost, where=where, initial=sign * np.inf))
    return float((sign * cost)[where].min()) if bool(where.any()) else np.inf


def _host(x) -> np.ndarray:
    """A solution's duals as a NumPy float64 array (on the host for a CuPy array)."""
    return np.asarray(x.get() if is_device_array(x) else x, np.float64)


def _lines_reduced(problem, given, solve):
    """Where the optimum needs a big cost because a line holds nothing else: every finite cost
    of a row (of a column, where every column is assigned: n2 <= n1) one and the same big
    value. Every assignment takes that line once, so subtracting the value from it (exactly:
    the line becomes zeros) changes every assignment's total alike, and the rest is solved at
    the small costs' magnitude. The solution of the problem as given (its duals moved back by
    the values), or None where no such line exists or the reduced problem is not solved."""
    cost = problem.cost
    xp = array_module(cost)
    sign = -1.0 if problem.maximize else 1.0
    lines = max(cost.shape) + 1
    small = small_magnitude(cost)
    n1, n2 = cost.shape
    shifts = []
    vals = sign * cost
    finite = xp.isfinite(vals)
    for axis, applies in ((1, n1 <= n2), (0, n2 <= n1)):  # rows, then columns
        hi = xp.where(finite, vals, -np.inf).max(axis=axis)
        lo = xp.where(finite, vals, np.inf).min(axis=axis)
        equal_big = (hi == lo) & xp.isfinite(hi) & (lo > LOOK_FROM * lines * small)
        shifts.append(xp.where(equal_big & applies, lo, 0.0))
    rows, cols = shifts
    if not (bool(rows.any()) or bool(cols.any())):
        return None
    reduced = xp.where(finite, cost - sign * (rows[:, None] + cols[None, :]), cost)
    try:
        sol = solve_apart(problem._replace(cost=reduced), solve)
    except InfeasibleError:
        return None
    import dataclasses
    rows, cols = (x.get() if xp is not np else x for x in (rows, cols))
    stats = dict(sol.stats, big_m_lines=int(np.count_nonzero(rows) + np.count_nonzero(cols)))
    picked = cost[xp.asarray(sol.row_ind), xp.asarray(sol.col_ind)]
    integral = picked.dtype.kind in "biu"  # (summed wide: float32 pairs lose the small ones)
    assigned = picked.sum(dtype=np.int64 if integral else np.float64)
    return dataclasses.replace(
        sol, cost=type(given.cost)(assigned), u=_host(sol.u) + sign * rows,
        v=_host(sol.v) + sign * cols, stats=stats)
