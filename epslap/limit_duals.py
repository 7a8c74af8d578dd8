"""The float duals of a cost-limit problem, mapped from E's (``epslap.limit``): each matched
row's dual and the column prices, within ``epslap.verify``'s per-entry rule at each entry's own
scale, mended where the rounding of E's prices (at the scale of ``L``) misses it.

A matched row takes its pair's ``c - v`` (tight); where that breaks the rule on another of its
entries (``v_j + L/2`` rounded at L's scale), its least reduced cost; a row above ``L / 2`` takes
``L / 2``, its column the price that keeps the pair tight. Where a pair is then left slack
beyond its rule (costs of 7e-4 beside a rounding of 1e-11), or an unmatched row (dual ``L / 2``)
misses the rule on an entry, prices are lowered along the violations as ``cpu.dual_repair`` does
(:func:`_prices_lowered`); where even that cannot certify, a RuntimeWarning says so.
"""
from __future__ import annotations

import warnings

import numpy as np

from ._exact import CHECK_RTOL
from ._validate import is_device_array
from .errors import user_stacklevel
from .solution import not_taken

#: what the solvers' warning of float duals that miss verify's rule says
MISSED_RULE = "per-entry rule"


def row_duals(cost, r, k, v, half, n1: int, n2: int, xp, maximize: bool, work=np.float64):
    """``(u_r, v)``: the duals of the matched rows ``r`` (paired with columns ``k``) and the
    column prices, from ``v`` (E's shifted by ``L / 2``, updated in place or replaced);
    ``cost`` the oriented matrix (n1 <= n2), ``half`` = ``L / 2``."""
    sign = -1.0 if maximize else 1.0  # (maximised: every inequality the other way)
    paired = _host_or_device(cost[r, k], xp).astype(work)
    u_pair = paired - v[k]
    # where v_j + L/2 rounded L/2 away (v_j near -1e16), c - v of the pair puts the row's
    # small entries above their cost by up to L/2: such a row takes its least reduced cost.
    # A row above L/2 (by a rounding at a larger scale) takes L/2, and its column the
    # price that keeps their pair tight; that price is higher, so the rows are checked again.
    for _ in range(3):
        least, breaks = _rows_checked(cost, xp.asarray(r), v, u_pair, xp, sign)
        u_r = xp.where(breaks, least, u_pair)
        over = sign * u_r > sign * half
        if not bool(over.any()):
            break
        u_pair[over] = half
        v[k[over]] = paired[over] - half
    tight = _pairs_tight(paired, u_r, v[k], xp)
    free_target = _unmatched_rows_target(cost, r, n1, v, half, xp, sign)
    if not tight or free_target is not None:
        # the least reduced cost left a pair slack by the rounding of E's prices, beyond
        # its own terms' rule where its costs are tiny next to L, or an unmatched row (its
        # dual L/2) misses the rule by that rounding: lower prices instead
        u_low, v_low = (u_r.copy(), v.copy()) if tight else (u_pair.copy(), v.copy())
        first = xp.zeros(breaks.shape, bool) if tight else breaks
        if _prices_lowered(cost, r, k, u_low, v_low, paired, first, half, n2, xp,
                           sign, free_target):
            u_r, v = u_low, v_low
        else:
            warnings.warn("epslap: the float duals of this cost_limit solve miss "
                          f"epslap.verify's {MISSED_RULE} (the assignment is optimal up to "
                          "float rounding); please report the problem", RuntimeWarning,
                          stacklevel=user_stacklevel())
    return u_r, v


#: entries read at a time by :func:`_rows_checked`
_CHUNK_ENTRIES = 1 << 22


def _host_or_device(a, xp):
    """``a`` where ``xp`` keeps its arrays: a CuPy array copied to the host for NumPy."""
    return a.get() if xp is np and is_device_array(a) else xp.asarray(a)


def _rows_checked(cost, rows, v, u, xp, sign: float):
    """For each row ``rows[t]`` with dual ``u[t]``: its least reduced cost ``min_j (c_ij -
    v_j)`` (the largest where ``sign`` is -1, maximised) and whether ``u[t]`` breaks
    ``verify``'s per-entry rule on one of its entries. A few rows at a time (no copy of the
    matrix)."""
    least = xp.empty(len(rows), np.float64)
    breaks = xp.zeros(len(rows), bool)
    vs, va = sign * v, xp.abs(v)
    step = max(1, _CHUNK_ENTRIES // max(cost.shape[1], 1))
    for start in range(0, len(rows), step):
        block = _host_or_device(cost[rows[start:start + step]], xp).astype(np.float64)
        us = sign * u[start:start + step, None]
        least[start:start + step] = (sign * block - vs).min(axis=1)
        with np.errstate(invalid="ignore"):  # (inf - inf where an entry is forbidden)
            excess = (us + vs) - sign * block
            tol = CHECK_RTOL * ((xp.abs(block) + xp.abs(us)) + va)
            breaks[start:start + step] = (excess > tol).any(axis=1)
    return sign * least, breaks


def _pairs_tight(paired, u, v, xp) -> bool:
    """Whether every assigned pair's ``c - u - v`` is 0 within ``verify``'s rule."""
    slack = xp.abs(paired - u - v)
    return not bool((slack > CHECK_RTOL * ((xp.abs(paired) + xp.abs(u)) + xp.abs(v))).any())


#: rounds of :func:`_prices_lowered` (each the rows whose dual changed in the one before)
_LOWERING_ROUNDS = 64


def _unmatched_rows_target(cost, r, n1: int, v, half, xp, sign: float):
    """For the rows left unmatched (their dual ``L / 2``): each column's price that meets the
    rule on every one of their entries, where one misses it (``min_i c_ij - L/2`` over those
    rows; signed as minimised), +inf elsewhere; None where none misses it."""
    free = not_taken(n1, _host_or_device(r, np))
    rows = xp.asarray(np.flatnonzero(free))
    if not int(rows.size):
        return None
    target = _column_targets(cost, rows, xp.full(int(rows.size), sign * float(half)), v, xp,
                             sign)
    return target if bool((target < np.inf).any()) else None


def _column_targets(cost, rows, us, v, xp, sign: float):
    """Each column's price (signed as minimised) that meets the rule on every entry of
    ``rows`` (duals ``us``, signed) that misses it: ``min c_ij - u_i`` over those entries,
    +inf where none misses it. A few rows at a time; a block whose entries all lie below their
    duals' sum is skipped before the tolerances are computed."""
    target = xp.full(v.shape[0], np.inf)
    vs, va = sign * v, xp.abs(v)
    step = max(1, _CHUNK_ENTRIES // max(v.shape[0], 1))
    for start in range(0, int(rows.size), step):
        block = sign * _host_or_device(cost[rows[start:start + step]], xp).astype(np.float64)
        ub = us[start:start + step, None]
        with np.errstate(invalid="ignore"):  # (inf - inf where an entry is forbidden)
            excess = (ub + vs) - block
            over = excess > 0.0
            if not bool(over.any()):
                continue
            tol = CHECK_RTOL * ((xp.abs(block) + xp.abs(ub)) + va)
            low = xp.where(over & (excess > tol), block - ub, np.inf)
        target = xp.minimum(target, low.min(axis=0))
    return target


def _prices_lowered(cost, r, k, u_pair, v, paired, first, half, n2: int, xp,
                    sign: float, target=None) -> bool:
    """Mend rows ``r[first]``, whose pair-tight dual breaks the per-entry rule on another
    entry, by lowering column prices (raising them where ``sign`` is -1), as
    ``cpu.dual_repair`` does: a violated entry (i, j) sets ``v_j = c_ij - u_i``, and the row that
    owns j takes its own pair's ``c - v`` again and is checked next round; ``u_pair`` and ``v``
    are updated in place; ``target`` (optional): prices the unmatched rows need, set first.
    Taking the least reduced cost instead leaves such a row's pair slack
    by the rounding of E's prices, which is far beyond the rule where the pair's costs are tiny
    next to ``L``. Every pair stays tight, so the dual objective keeps the matched costs plus
    ``L / 2`` per unmatched line. False where an unmatched column (its dual is ``L / 2``) is
    violated, a row's dual would pass ``L / 2``, or the rounds run out."""
    owner = xp.full(n2, -1, dtype=np.int64)
    owner[k] = xp.arange(int(k.size), dtype=np.int64)
    todo = xp.nonzero(first)[0]
    limit_side = sign * float(half)
    if target is not None:  # the unmatched rows' violations (:func:`_unmatched_rows_target`)
        cols = xp.nonzero(target < np.inf)[0]
        if bool((owner[cols] < 0).any()):
            return False
        v[cols] = sign * target[cols]
        todo = xp.unique(xp.concatenate([todo, owner[cols]]))
    for _ in range(_LOWERING_ROUNDS):
        if int(todo.size) == 0:
            return True
        u_pair[todo] = paired[todo] - v[k[todo]]
        if bool((sign * u_pair[todo] > limit_side + CHECK_RTOL * abs(limit_side)).any()):
            return False
        target = _column_targets(cost, r[todo], sign * u_pair[todo], v, xp, sign)
        cols = xp.nonzero(target < np.inf)[0]
        if bool((owner[cols] < 0).any()):
            return False
        v[cols] = sign * target[cols]
        todo = xp.unique(owner[cols])
    return False
