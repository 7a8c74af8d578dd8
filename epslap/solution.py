"""The one result type every backend returns, and its assembly from a backend's canonical result
(every backend solves the canonical problem: n1 <= n2, minimised)."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Solution:
    """An optimal assignment with its dual certificate.

    Attributes
    ----------
    row_ind, col_ind : ndarray of int64
        The assignment, scipy's convention: ``row_ind`` sorted, pairs ``(row_ind[k], col_ind[k])``.
    cost : float or int
        ``cost[row_ind, col_ind].sum()`` (int for integer input).
    u, v : ndarray
        Row and column duals: ``cost[i, j] - u[i] - v[j] >= 0`` everywhere (``<= 0`` when
        maximising), ``== 0`` on assigned pairs; the duals of the longer side are ``<= 0``
        (``>= 0`` when maximising) and ``0`` on its unassigned lines. See :func:`epslap.verify`.
    stats : dict
        Measured by the solve: ``rows_evaluated``, ``passes``, ``epsilons``, ``time_estimate_s``,
        ``time_solve_s``, ``compile_s``, ``backend`` and more.
    """

    row_ind: np.ndarray
    col_ind: np.ndarray
    cost: float | int
    u: np.ndarray
    v: np.ndarray
    stats: dict = field(default_factory=dict)

    def __iter__(self):
        """Unpack like scipy's result: ``row_ind, col_ind = epslap.solve(c)``."""
        return iter((self.row_ind, self.col_ind))


_new = object.__new__
_set = object.__setattr__


def assemble(row_ind: np.ndarray, col_ind: np.ndarray, cost: float | int, u: np.ndarray,
             v: np.ndarray, stats: dict) -> Solution:
    """``Solution(row_ind, col_ind, cost, u, v, stats)`` for the per-call paths: the frozen
    dataclass's own ``__init__`` sets its six fields one ``object.__setattr__`` at a time, which
    is a measurable part of a tiny problem's call; one ``__dict__`` holds the same state."""
    sol = _new(Solution)
    _set(sol, "__dict__", {"row_ind": row_ind, "col_ind": col_ind, "cost": cost, "u": u, "v": v,
                           "stats": stats})
    return sol


def empty_solve(n2: int, integral: bool, backend: str):
    """``(row_to_col, v, assigned, stats)`` of a problem with no rows, for every backend."""
    work = np.int64 if integral else np.float64
    stats = {"backend": backend, "rows_evaluated": 0, "passes": 0, "epsilons": [],
             "time_estimate_s": 0.0, "time_solve_s": 0.0, "compile_s": 0.0}
    return np.zeros(0, np.int64), np.zeros(n2, work), np.zeros(0, work), stats


def not_taken(n: int, taken: np.ndarray) -> np.ndarray:
    """The mask of the lines 0 ... n-1 (columns or rows) that are not in ``taken``: the
    columns no row holds, the rows left unassigned."""
    free = np.ones(n, bool)
    free[taken] = False
    return free


def raise_free_columns(v: np.ndarray, row_to_col: np.ndarray) -> bool:
    """Set every unassigned column's price to the largest, where a float rounding left it below
    (the virtual rows of a padded solve tie their columns at the top only within a rounding):
    a rectangular certificate needs them there, their dual 0 after the shift, or a pair with
    one may be cheaper than its row's own at that row's scale. Whether a price changed (the
    per-entry rule is then checked again)."""
    free = not_taken(len(v), row_to_col)
    if not free.any():
        return False
    top = v.max()
    low = free & (v < top)
    v[low] = top
    return bool(low.any())


def orient(row_to_col: np.ndarray, v: np.ndarray, assigned: np.ndarray, maximize: bool,
           transposed: bool, shift: bool = True) -> tuple:
    """A canonical result (n1 <= n2, minimised) in the caller's terms, for one problem (1-D
    arrays) or a stack of them (a leading axis): ``(row_ind, col_ind, u, v, total)``.

    ``assigned[..., i]`` is the canonical cost of row i's pair (work dtype). The prices are
    shifted to a maximum of 0 (unassigned columns tie at the top: their dual is exactly 0), and
    u is taken from the shifted v: one rounding relative to u itself, so that every reduced cost
    is exact to a few units in the last place of its own terms (see ``epslap.verify``).
    (``jv.solve_share`` gives batches the small path's duals instead: v shifted the same way,
    u from each row's least reduced cost, checked by ``jv._row_duals``.)
    ``shift=False``: prices mended by ``cpu.dual_repair``, reported as they are (their maximum
    may be a little below 0; a shift would round away what the repair set).
    """
    if v.shape[-1] and shift:
        v = v - v.max(axis=-1, keepdims=True)
    u = assigned - np.take_along_axis(v, row_to_col, axis=-1)
    return orient_duals(row_to_col, u, v, assigned.sum(axis=-1, dtype=v.dtype), maximize,
                        transposed)


def orient_duals(row_to_col, u, v, total, maximize: bool, transposed: bool, xp=np,
                 rows=None, pairs=None) -> tuple:
    """The canonical result with its duals (v shifted, u from the shifted v) in the caller's
    sign and orientation: ``(row_ind, col_ind, u, v, total)``, row_ind sorted. ``xp`` is the
    arrays' module: NumPy, or CuPy for the GPU batch's device arrays. ``rows``: the row numbers
    0 … n1-1 in ``row_to_col``'s shape where the caller has them (made here otherwise).
    ``pairs``: where given, makes ``(row_ind, col_ind)`` of ``row_to_col`` in the caller's
    orientation instead (the GPU batch's kernel)."""
    if maximize:
        u, v, total = -u, -v, -total
    if pairs is not None:
        row_ind, col_ind = pairs(row_to_col)
    else:
        if rows is None:
            rows = xp.broadcast_to(xp.arange(row_to_col.shape[-1], dtype=np.int64),
                                   row_to_col.shape).copy()
        row_ind, col_ind = rows, row_to_col
        if transposed:
            order = xp.argsort(row_to_col, axis=-1, kind="stable")
            row_ind = xp.take_along_axis(row_to_col, order, axis=-1)
            col_ind = xp.take_along_axis(rows, order, axis=-1)
    if transposed:
        u, v = v, u
    return row_ind, col_ind, u, v, total


def finish(shape, transposed, integral, row_to_col, v, assigned, stats, maximize,
           t_start, shift: bool | None = None) -> Solution:
    """Map the canonical solution back (:func:`orient`) and add the shape to ``stats``.
    ``shift``: move the prices to max v = 0 (default: unless ``cpu.dual_repair`` set them)."""
    n1, n2 = shape
    if shift is None:
        shift = "dual_repair_rows" not in stats
    row_ind, col_ind, u, v, total = orient(row_to_col, v, assigned, maximize, transposed,
                                           shift=shift)
    stats = dict(stats)
    stats.update(n_rows=int(n2 if transposed else n1), n_cols=int(n1 if transposed else n2),
                 transposed=transposed, maximize=maximize,
                 time_total_s=time.perf_counter() - t_start)
    cost_value = int(total) if integral else float(total)
    return Solution(row_ind=row_ind, col_ind=col_ind, cost=cost_value, u=u, v=v, stats=stats)
