"""The one result type every backend returns."""
from __future__ import annotations

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
