"""The float duals after the passes, read through a source's rows: whether they hold
``verify``'s per-entry rule, their repair, the assigned costs."""
from __future__ import annotations

import numpy as np

from .._sync import new_sync
from ..certificate import CHECK_RTOL
from ..solution import not_taken
from . import passes as ker
from .dual_repair import repair_duals
from .host import rows_served, run_interruptibly


def duals_hold(src, n2: int, row_dtype, v, row_to_col, estimate_context, assigned) -> bool:
    """``passes.duals_hold_rows`` over the rows of ``src`` (inside ``estimate_context``: a
    source whose rows helper threads compute); the assigned costs into ``assigned``."""
    stop = new_sync()

    def run():
        return ker.duals_hold_rows(src, np.empty(n2, row_dtype), v, row_to_col, CHECK_RTOL, stop,
                                   assigned)
    with rows_served(estimate_context):
        return run_interruptibly(run, np.zeros(8, np.int64), sync=stop)


def repair_duals_on_rows(src, n2: int, row_dtype, v, row_to_col, estimate_context) -> int:
    """``dual_repair.repair_duals`` over the rows of ``src`` (a budget of 8 reads per row and
    1000 more); its rows read, -1 where it did not finish."""
    stop = new_sync()
    budget = np.int64(8 * len(row_to_col) + 1000)

    def run():
        return repair_duals(src, np.empty(n2, row_dtype), v, row_to_col, CHECK_RTOL, budget, stop)
    with rows_served(estimate_context):
        return int(run_interruptibly(run, np.zeros(8, np.int64), sync=stop))


def free_columns_on_top(v: np.ndarray, row_to_col: np.ndarray) -> bool:
    """Whether every column left unassigned has the largest price: the condition under which
    the prices certify a rectangular assignment (their duals are 0 after the shift)."""
    free = not_taken(len(v), row_to_col)
    return not free.any() or bool((v[free] == v.max()).all())


def assigned_costs(src, n2: int, row_dtype, row_to_col: np.ndarray, work) -> np.ndarray:
    """Canonical cost of every assigned pair, read through ``src``."""
    out = np.empty(len(row_to_col), dtype=work)
    if len(row_to_col):  # on a worker thread: computing the rows again may take a while
        stop = new_sync()
        run_interruptibly(lambda: ker.gather_assigned(src, np.empty(n2, row_dtype), row_to_col,
                                                       out, stop),
                           np.zeros(8, np.int64), sync=stop)
    return out
