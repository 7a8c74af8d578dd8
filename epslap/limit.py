"""Assignments that may leave rows and columns unmatched at a price: ``cost_limit``.

With a finite limit ``L`` a row or a column may stay unmatched, each at the price ``L / 2``
(lap's and lapcpp's convention): the solve minimises

    Σ over matched pairs c_ij  +  (unmatched rows + unmatched columns) · L / 2,

so a pair is worth matching when its cost is below ``L`` (above it when maximising). The
reported ``cost`` is the matched pairs' sum alone, as those libraries report it.

How it is solved: with the shorter side as rows (n1 <= n2), each row gets a second choice,
any of n1 *slack* columns at cost ``L``:

    E = [ c | L L … L ]     (n1 × (n2 + n1))

Every row of E is matched once, so E's objective is the matched pairs' cost plus ``L`` per row
sent to a slack column; with K real matches that is the objective above minus the constant
(n2 − n1) · L / 2. E is a rectangular problem, solved exactly by every backend (docs/algorithm.md
§10; no entry is rounded: E holds the costs as given and ``L``).

Limits beyond the costs: once ``L`` lies above every cost (below it, when maximising) every
pair pays, and every limit beyond that point has the same optimal assignments (those of the
matrix as is, or of the most pairs at finite cost where infinite entries leave lines unmatched);
on the other side no pair pays and none is matched. E is then built with the nearest such limit
``L'`` instead (integers: one past the extreme cost; floats: the extreme cost plus the costs'
magnitude, plus ``min(n1, n2)`` times their spread where infinite entries can lengthen a
matching only through a chain of dearer pairs), so that ``1e20``, ``2**70`` or ``-1e300`` are
solved as exactly as a limit among the costs, within the range rules of E's own shape. What is
exact: the pairs and ``cost``, always. The duals are those of the given ``L`` (below): int64
and exact for integer costs and an even ``L`` whose duals fit int64, else float64 with ``L / 2``
rounded as :func:`epslap.verify` rounds it (the duals of ``L = 1e20`` hold the costs to that
rounding only, within verify's float tolerance). A limit E cannot hold even so, and a
non-integral limit with integer costs beyond 2**53 (E would be float64 and round them), raise a
ValueError that names ``cost_limit``.

Duals: E's certificate (``u'``, ``v'``; v' <= 0, 0 on free columns) gives the duals of the limit
problem's linear program, ``u_i + v_j <= c_ij`` with every ``u_i, v_j <= L/2`` and ``= L/2`` on
unmatched lines: ``v_j = v'_j + L/2`` on real columns, ``u_i = u'_i − L/2`` on matched rows and
``L/2`` on unmatched ones (their u'_i is at least L, which keeps them feasible). While one row is
matched a slack column is free, so every u'_i <= L. For float duals a matched row's u_i is
computed again from the shifted v (its pair's ``c - v``, or its least reduced cost where that
would break the rule on another of its entries; at most L/2, its column's price raised to keep
the pair tight where a rounding put it above; where the least reduced cost leaves the pair
slack beyond its rule, prices are lowered along the violations instead;
:mod:`epslap.limit_duals`): E's prices are rounded at E's scale, which can be far above some
entries' own. :func:`epslap.verify` checks them with ``cost_limit=L``.
"""
from __future__ import annotations

import warnings

import numpy as np

from ._validate import (Problem, array_module, as_matrix, check_device_matrix,
                        check_float_range, check_int_range, float_cost_limit, int_cost_limit,
                        is_device_array)
from .certificate import verify
from .errors import user_stacklevel
from .limit_duals import MISSED_RULE, row_duals
from .solution import Solution


def _integral(limit) -> bool:
    return isinstance(limit, int) or float(limit).is_integer()


def _float_costs(c, xp):
    """``(lo, hi, +inf present, -inf present)`` of a float matrix: its finite extremes (None
    when it has none)."""
    finite = c[xp.isfinite(c)]
    lo = hi = None
    if finite.size:
        lo, hi = float(finite.min()), float(finite.max())
    return lo, hi, bool(xp.isposinf(c).any()), bool(xp.isneginf(c).any())


def _slack_value(c, limit, xp):
    """``(L', dtype of E)``: the slack columns' cost, ``limit`` itself or an equivalent limit
    nearer the costs (module docstring), and E's dtype: int64 for integer costs and an integral
    L', else float64 (which holds every float32 and float64 cost and L' exactly). Refuses, with
    a message naming ``cost_limit``, what E could not hold."""
    n1, n2 = c.shape
    shape = (n1, n2 + n1)
    m = min(n1, n2)
    context = (f"cost_limit={limit!r}: the {n1}x{n2} problem is solved with {n1} slack "
               f"columns, as {shape[0]}x{shape[1]}")
    if c.dtype.kind in "biu":
        lo, hi = (int(c.min()), int(c.max())) if c.size else (0, 0)
        top, bottom = hi + 1, lo - 1  # every pair pays from ``top`` up, none from ``bottom`` down
        slack = 0 if not c.size else top if limit > top else bottom if limit < bottom else limit
        try:
            check_int_range(lo, hi, shape)
        except ValueError as exc:
            raise ValueError(f"{context}: {exc}") from None
        if _integral(slack):
            slack = int(slack)
            if abs(slack) > int_cost_limit(shape):  # the costs at the rule's very edge
                raise ValueError(
                    f"{context}, which cannot hold the limit: |cost_limit| * (4n + 8) must "
                    f"stay below 2**62, here |cost_limit| <= "
                    f"{int_cost_limit(shape)}, and the costs (in [{lo}, {hi}]) leave no "
                    "equivalent limit in that range; shift or rescale the costs")
            return slack, np.dtype(np.int64)
        if max(abs(lo), abs(hi)) > 2**53:
            raise ValueError(f"cost_limit={limit!r} is not an integer, so the costs would be "
                             f"solved in float64 with it, which does not hold integer costs in "
                             f"[{lo}, {hi}] exactly (beyond 2**53); give an integral cost_limit")
        return float(slack), np.dtype(np.float64)
    lo, hi, pos_inf, neg_inf = _float_costs(c, xp)
    if lo is None:  # no finite cost: no pair can be matched, whatever the limit
        return 0.0, np.dtype(np.float64)
    unit = max(abs(lo), abs(hi)) or 1.0
    spread = m * (hi - lo)
    # +inf entries (a minimisation) can make a matching longer only through a chain of up to
    # m dearer pairs: from ``top`` up each such chain pays too (-inf: a maximisation, mirrored)
    top = hi + unit + (spread if pos_inf else 0.0)
    bottom = lo - unit - (spread if neg_inf else 0.0)
    slack = float(top if limit > top else bottom if limit < bottom else limit)
    big = max(abs(lo), abs(hi))
    if big > float_cost_limit(shape):  # the costs themselves
        try:
            check_float_range(big, shape)
        except ValueError as exc:
            raise ValueError(f"{context}: {exc}") from None
    if abs(slack) > float_cost_limit(shape):
        raise ValueError(
            f"{context}, which cannot hold the limit: |cost_limit| * (4n + 8) must stay "
            f"below 2**1020, here |cost_limit| <= "
            f"{float_cost_limit(shape):.4g}, and the costs (finite ones in [{lo:.4g}, {hi:.4g}]) "
            "leave no equivalent limit in that range; scale the costs and the limit down")
    return slack, np.dtype(np.float64)


def extended(cost, limit):
    """``(E, transposed, L')`` for the matrix ``cost`` (NumPy or CuPy, its shape and dtype
    checked: ``_validate.problem_of``): L' the limit E is built with, ``limit`` or an
    equivalent one nearer the costs (:func:`_slack_value`)."""
    xp = np
    if is_device_array(cost):
        import cupy as xp  # the input stays on the device
    c = cost
    transposed = c.shape[0] > c.shape[1]
    if transposed:
        c = c.T
    n1, n2 = c.shape
    slack, dtype = _slack_value(c, limit, xp)
    e = xp.empty((n1, n2 + n1), dtype=dtype)
    e[:, :n2] = c  # in range: checked above (an integer cost beyond int64 cannot wrap)
    e[:, n2:] = slack
    return e, transposed, slack


def _largest(a) -> int:
    """The largest |entry| of an integer array, as a Python int (0 when empty)."""
    return max(abs(int(a.min())), abs(int(a.max()))) if a.size else 0


def _alternating_reach(finite, r, k, n1: int, n2: int):
    """``(rows, cols)`` (boolean masks) reached from the unmatched rows by alternating paths:
    a row to every column of a finite entry, a column to the row matched to it. With a matching
    of the largest size every such column is matched."""
    row_of = np.full(n2, -1, np.int64)
    row_of[k] = r
    rows = np.ones(n1, bool)
    rows[r] = False
    cols = np.zeros(n2, bool)
    frontier = np.flatnonzero(rows)
    while frontier.size:
        new = finite[frontier].any(axis=0) & ~cols
        cols |= new
        nxt = row_of[new]
        nxt = nxt[nxt >= 0]
        nxt = nxt[~rows[nxt]]
        rows[nxt] = True
        frontier = nxt
    return rows, cols


def limit_result(rows, cols, u_e, v_e, shape, transposed: bool, limit, cost, slack=None,
                 maximize: bool = False):
    """``(row_ind, col_ind, cost, u, v)`` of the limit problem (module docstring) from the
    solution of E: its pairs ``rows``/``cols``, duals ``u_e``/``v_e``; ``shape`` and ``cost``
    are the caller's matrix (NumPy or CuPy); ``slack``: the limit E was built with (an
    equivalent one, see :func:`extended`; default ``limit``)."""
    xp = array_module(cols)
    slack = limit if slack is None else slack
    n1, n2 = (shape[1], shape[0]) if transposed else shape  # oriented: n1 <= n2
    real = cols < n2
    r, k = rows[real], cols[real]
    oriented = cost.T if transposed else cost
    # The duals of the given limit, whatever limit E was built with. Where that was an
    # equivalent L' (module docstring) and every row or none is matched, E's duals shifted by
    # L/2 (u_e - L/2, v_e + L/2) hold as they do for L' (u_e <= L' <= L when all are matched).
    # Where some rows stay unmatched (infinite entries: no longer matching exists), the rows
    # and columns reached from them by alternating paths take the shift the other way (their
    # columns v_e + L' - L/2): their finite entries reach no unmatched column, whose dual L/2
    # would otherwise put the pair above its cost.
    reach = None
    if slack != limit and 0 < int(r.size) < n1:
        finite = oriented.get() if is_device_array(oriented) else np.asarray(oriented)
        host = (lambda a: a.get()) if xp is not np else np.asarray
        reach = _alternating_reach(np.isfinite(finite), host(r), host(k), n1, n2)
    integral_duals = (u_e.dtype.kind == "i" and _integral(limit) and int(limit) % 2 == 0
                      and abs(int(limit) // 2) + abs(int(slack)) + max(_largest(u_e),
                                                                          _largest(v_e)) < 2**63)
    work = np.int64 if integral_duals else np.float64
    half = work(int(limit) // 2 if integral_duals else float(limit) / 2)  # verify's rounding
    u = xp.full(n1, half, dtype=work)
    v = v_e[:n2].astype(work) + half
    if reach is not None:
        other = work(int(slack) if integral_duals else float(slack)) - half
        cols_reached = xp.asarray(reach[1])
        v[cols_reached] = v_e[:n2].astype(work)[cols_reached] + other
    if integral_duals and reach is None:
        u[r] = u_e.astype(work)[r] - half
    else:  # from the shifted v, not u' - L/2: prices solved at the scale of L would leave the
        # assigned pairs of small costs a slack of an ulp of L, beyond their own terms' rule
        u[r], v = row_duals(oriented, r, k, v, half, n1, n2, xp, maximize, work)
    if transposed:
        order = xp.argsort(k)
        r, k = k[order], r[order]
        u, v = v, u
    picked = cost[r, k]
    integral = picked.dtype.kind in "biu"
    total = picked.sum(dtype=np.int64 if integral else np.float64)
    value = int(total) if integral else float(total)
    return r.astype(np.int64), k.astype(np.int64), value, u, v


def from_extended(sol: Solution, shape, transposed: bool, limit, cost, slack=None,
                  maximize: bool = False) -> Solution:
    """The limit problem's solution (see the module docstring) from E's ``sol``; ``slack``: the
    limit E was built with (default ``limit``)."""
    r, k, value, u, v = limit_result(np.asarray(sol.row_ind), np.asarray(sol.col_ind),
                                     np.asarray(sol.u), np.asarray(sol.v), shape, transposed,
                                     limit, cost if is_device_array(cost) else np.asarray(cost),
                                     slack, maximize)
    stats = dict(sol.stats)
    rows_total, cols_total = shape
    stats.update(cost_limit=limit, matched=int(r.size), unmatched_rows=int(rows_total - r.size),
                 unmatched_cols=int(cols_total - r.size), n_rows=int(rows_total),
                 n_cols=int(cols_total), transposed=transposed)
    return Solution(row_ind=r, col_ind=k, cost=value, u=u, v=v, stats=stats)


def solve_batch_with_limit(costs, limit, solve_batch_extended, maximize: bool = False):
    """:func:`epslap.solve_batch` with the finite ``limit``: every member extended as in
    :func:`extended`, solved by ``solve_batch_extended`` (the caller's backend and options) in
    one batch, and mapped back. ``row_ind``/``col_ind`` are lists (the members match different
    numbers of pairs); ``u``, ``v`` arrays for a 3-D input, lists for a sequence. Returns
    the fields of a ``BatchSolution``."""
    stacked = not isinstance(costs, (list, tuple))
    if stacked and not hasattr(costs, "ndim"):
        costs = np.asarray(costs)
    if stacked and costs.ndim != 3:
        raise ValueError(f"costs must be a 3-D array (B, n1, n2) or a sequence of matrices, got "
                         f"{getattr(costs, 'ndim', 0)} dimensions")
    mats, pairs = [], []
    for k, c in enumerate(costs):
        try:
            if is_device_array(c):
                check_device_matrix(c)
            else:
                c = as_matrix(c)
            mats.append(c)
            pairs.append(extended(c, limit))
        except (ValueError, TypeError) as exc:
            raise type(exc)(f"problem {k}: {exc}") from None
    es = [e for e, _, _ in pairs]
    if stacked and es:
        es = array_module(es[0]).stack(es)

    def run():
        sol = solve_batch_extended(es)
        return sol, [limit_result(sol.row_ind[k], sol.col_ind[k], sol.u[k], sol.v[k],
                                  tuple(mats[k].shape), pairs[k][1], limit, mats[k],
                                  pairs[k][2],
                                  maximize) for k in range(len(mats))]

    sol, out = _rounding_warnings_judged(run, lambda solved: all(
        _certified(mats[k], o[0], o[1], o[3], o[4], limit, maximize)
        for k, o in enumerate(solved[1])))
    row_ind = [o[0] for o in out]
    col_ind = [o[1] for o in out]
    u = [o[3] for o in out]
    v = [o[4] for o in out]
    if stacked and out:
        xp = array_module(u[0])
        u, v = xp.stack(u), xp.stack(v)
    values = [o[2] for o in out]
    cost = np.array(values, dtype=np.int64 if values and all(isinstance(x, int) for x in values)
                    else np.float64)
    matched = np.array([len(r) for r in row_ind], np.int64)
    shapes = np.array([tuple(m.shape) for m in mats], np.int64).reshape(-1, 2)
    stats = dict(sol.stats, cost_limit=limit, matched=matched,
                 unmatched_rows=shapes[:, 0] - matched, unmatched_cols=shapes[:, 1] - matched)
    return row_ind, col_ind, cost, u, v, stats


def solve_with_limit(problem: Problem, limit, solve_extended) -> Solution:
    """Solve the matrix of ``problem`` with the finite ``limit``; ``solve_extended(E)`` solves
    E, a :class:`Problem` of the same form (the caller's backend and options)."""
    if problem.form not in ("matrix", "device"):
        raise ValueError("cost_limit applies to a matrix (NumPy or CuPy), not to a cost source")
    cost = problem.cost
    e, transposed, slack = extended(cost, limit)
    return _rounding_warnings_judged(
        lambda: from_extended(solve_extended(problem._replace(cost=e)), tuple(cost.shape),
                              transposed, limit, cost, slack, problem.maximize),
        lambda out: _certified(cost, out.row_ind, out.col_ind, out.u, out.v, limit,
                               problem.maximize))


def _certified(cost, row_ind, col_ind, u, v, limit, maximize: bool) -> bool:
    """Whether :func:`epslap.verify` certifies the limit problem's solution."""
    backend = "gpu" if is_device_array(cost) else "cpu"
    return verify(cost, row_ind, col_ind, u, v, maximize=maximize, cost_limit=limit,
                  backend=backend)["optimal"]


def _rounding_warnings_judged(run, certified):
    """``run()``, holding back the warning of E's solve that its float duals miss ``verify``'s
    per-entry rule until the limit problem's own duals are judged: it is dropped where
    ``certified(out)`` holds for run's result. E's duals are rounded at E's scale (its slack
    columns must end at the top price, which a tight pair of costs far below the others' scale
    can miss by a rounding) while the limit problem's duals are computed again at each row's
    own scale (:func:`limit_result`), which often passes where E's did not; where it does
    not, one such warning is given. Other warnings pass on, naming the caller's line."""
    drop = False
    caught = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = run()
        drop = any(MISSED_RULE in str(w.message) for w in caught) and certified(out)
        return out
    finally:
        said = drop  # (E's warning and the mapping's say one thing: once)
        for w in caught:
            missed = MISSED_RULE in str(w.message)
            if not (missed and said):
                warnings.warn(w.message, w.category, stacklevel=user_stacklevel())
            said |= missed

