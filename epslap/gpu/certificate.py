"""The dual certificate of a GPU result, by the rule of :func:`epslap.verify`: on the device
(``check_duals``) for costs computed there, on the host for rows that come from there."""
from __future__ import annotations

import numpy as np

from costfns.rows import fill_rows

from ..certificate import RTOL, verify
from ..solution import not_taken, raise_free_columns
from .launch import LaunchConfig, grid_geometry
from .modules import pass_module
from .runtime import cost_args, import_cupy, wide_grid


class StateRows:
    """``rows(start, stop)`` of a host state, for :func:`epslap.verify`."""

    def __init__(self, state, shape, dtype):
        self.state, self.shape, self.dtype = state, shape, dtype

    def rows(self, start: int, stop: int) -> np.ndarray:
        out = np.empty((stop - start, self.shape[1]), dtype=self.dtype)
        fill_rows(self.state, np.int64(start), out)
        return out


def certified(cuda_cost, n1: int, n2: int, integral: bool, out, device: int, host=None,
              launch: LaunchConfig | None = None) -> bool:
    """The dual certificate of the result ``out`` (``row_to_col, v, stats, assigned`` of the
    solve), by the rule of :func:`epslap.verify` (exact for integers; a tolerance per entry from
    its own terms for floats): u is derived from the assignment, so the assigned pairs have no
    slack and dual feasibility plus the longer side's duals decide. On the device, with the
    solve's own module (``launch`` and ``stats["grid"]`` give it), or on the host for rows that
    come from there (``host``: one more read of every row). Sets
    ``stats["certificate_max_violation"]``."""
    row_to_col, v, stats, assigned = out
    if not integral and n1 < n2:
        # the virtual rows tie their columns at the top only within a rounding; the reported
        # duals put the free ones there (``verify`` judges them at their bound, 0)
        raise_free_columns(v, row_to_col)
    if host is not None:  # the duals the solve reports: v at a maximum of 0, u from it
        vs = v - v.max() if v.size else v
        rep = verify(StateRows(host.state, (n1, n2), host.row_dtype), np.arange(n1), row_to_col,
                     assigned - vs[row_to_col], vs)
        stats["certificate_max_violation"] = rep["max_violation"]
        return bool(rep["optimal"])
    launch = launch or LaunchConfig()
    cupy = import_cupy()
    rtol = 0.0 if integral else RTOL
    # the duals the solve reports: v at a maximum of 0, u from it (``solution.orient``); the
    # tolerances of verify's rule come from those magnitudes, not from the passes' prices (a
    # pair within the rule at the prices' magnitude missed it by an ulp once reported)
    v = v - v.max() if (not integral and v.size) else v
    with cupy.cuda.Device(device):
        # the solve's module: that of its grid (a split solve's logical grid, over devices)
        geo = grid_geometry(cupy, n2, launch, stats["grid"])
        mod = pass_module(cupy, cuda_cost.code, integral, geo.threads, geo.unroll, bool(geo.smem),
                          launch.phase_clocks)
        args, keep = cost_args(cupy, cuda_cost, n1, n2)
        worst = cupy.zeros(2, dtype=np.float64)
        mod.get_function("check_duals")(wide_grid(cupy), (256,), (*args, cupy.asarray(row_to_col),
                                                         cupy.asarray(v), np.float64(rtol),
                                                         worst))
        violation, excess = (float(x) for x in worst.get())
        del keep
    ok = excess <= 0.0
    if n1 < n2:  # columns left to virtual rows carry the largest price (their dual is 0): what
        # they miss of it is duality gap, held to the gap's tolerance in ``verify``
        free = not_taken(n2, row_to_col)
        top = v.max()
        missing = top - v[free]
        violation = max(violation, float(missing.max()))
        if integral:
            ok = ok and not missing.any()
        else:
            u = assigned - v[row_to_col] + top
            terms = np.abs(assigned).sum() + np.abs(v - top).sum() + np.abs(u).sum()
            ok = ok and float(missing.sum()) <= RTOL * float(terms)
    stats["certificate_max_violation"] = violation
    return ok
