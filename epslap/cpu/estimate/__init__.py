"""Estimation of the column potentials v and of the ε bounds on the CPU (docs/algorithm.md §2).

Guthe & Thuerck, "Algorithm 1015", ACM TOMS 47(2), 2021, doi:10.1145/3442348, §3.2–3.4.
All statistics are computed in float64; for integral costs v is rounded back to int64 at the end
(the estimate is a heuristic: any finite v leaves the final exact pass correct).

Arrays: ``src`` gives rows of length ``n2``; ``v_out`` is (n2,) of the work dtype; ``perm_out`` is
(n1,) int64; ``pick_out`` is (n1,) int64 (stage B's greedy assignment, see below). Rows
``n1 … n2-1`` are virtual (cost 0) and never read.

Each stage is one sweep over the cost rows (A and B always; C, D, E only when the gap test asks
for them). Inside a stage every row is read once from memory: the conversion to float64, the
reduced costs, the NaN/-inf check and the row minimum are one fused, vectorised loop (int64 sort
keys of the float64 bits, ``keys``); the remaining per-row work runs on that row while it is in
cache. The sweeps: ``stage_ab``, ``stage_cde``; their merge across threads: ``slots``; the
decisions between them: ``epslap._estimate_driver`` (shared with the GPU backend).

**Certificate (the paper's "u⁰, v⁰ represent the correct dual variables, immediately solving the
LAP").** When stage B's greedy picks every row's column at a minimum of that row's reduced costs
``c[i][j] - v[j]`` (ties allowed), the picks form a complete assignment on zero reduced costs with
the feasible dual ``u_i = min_j (c[i][j] - v[j])``: it is optimal. If moreover ε_upper = 0, stages
C–E did not run (perm is the identity) and every unpicked column holds the largest v, then the
exact pass (rows back to front = stage B's order) would do exactly stage B's work: each row's
argmin is its lowest-index free minimiser, every path is one edge long, n1 rows are evaluated and
v does not change. ``estimate`` then returns ``STATUS_CERTIFIED`` with the assignment in
``pick_out``, and the caller may skip the pass and report its result (n1 rows evaluated).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..._estimate_driver import BoundsCDE, GapsAB, drive
from ..._status import STATUS_CERTIFIED, STATUS_INTERRUPTED, STATUS_OK
from ..._sync import aborted, new_sync, reset_sync, run_workers
from ..._validate import check_float_range
from .keys import EXACT_INT
from .slots import STAGE_SLOT
from .stage_ab import ab_result, ab_worker
from .stage_cde import blend, cde_worker, regret_order

__all__ = ["estimate", "certificate_holds", "CpuStages", "STAGE_SLOT"]


class CpuStages:
    """The sweeps of the estimate on ``len(bufs)`` threads, for ``epslap._estimate_driver``.

    Stages A–B and C–E each give every thread a slice of the columns, with one barrier per row;
    the result does not depend on the number of threads. ``status`` says why a sweep returned
    None. :meth:`kernels` lists every compiled function with the arguments it is called with:
    the one table from which the solver compiles (and times the compilation of) this step.
    """

    def __init__(self, src, bufs, n1: int, n2: int, v_out, perm_out, pick_out, integral: bool,
                 sync=None):
        self.src, self.bufs, self.n1, self.n2 = src, bufs, n1, n2
        self.v_out, self.perm_out, self.pick_out = v_out, perm_out, pick_out
        self.integral = integral
        self.nthreads = len(bufs)
        self.sync = new_sync() if sync is None else sync
        self.vf = np.empty(n2)
        self.v_old = self.vf
        self.regret = np.empty(n1)
        self.ab_out = np.zeros(6)
        self.bounds = np.zeros(4)
        self.cde_pick = np.empty(n1, np.int64)
        self.status = STATUS_OK
        self.cmax, self.certified = 0.0, False

    def _slots(self):
        return np.zeros(2 * self.nthreads * STAGE_SLOT, np.int64)

    def _ab_args(self, slots):
        return lambda t: (np.int64(t), np.int64(self.nthreads), self.src, self.bufs[t], self.n1,
                          self.n2, self.vf, self.regret, self.pick_out, self.sync, slots,
                          self.ab_out)

    def _cde_args(self, slots):
        return lambda t: (np.int64(t), np.int64(self.nthreads), self.src, self.bufs[t], self.n1,
                          self.n2, self.perm_out, self.vf, self.cde_pick, self.sync, slots,
                          self.bounds)

    def kernels(self) -> list:
        """(compiled function, arguments) for every kernel this step calls, stage A/B's worker
        (the longest compile) first."""
        slots = self._slots()
        return [(ab_worker, self._ab_args(slots)(0)),
                (ab_result, (self.ab_out, self.perm_out)),
                (regret_order, (self.regret, self.perm_out)),
                (cde_worker, self._cde_args(slots)(0)),
                (blend, (self.vf, self.vf, 0.0)),
                (_round_v, (self.vf, self.v_out, self.integral)),
                (certificate_holds, (self.v_out, self.vf, self.pick_out, self.n1, self.integral,
                                     0.0))]

    def stages_ab(self) -> GapsAB | None:
        reset_sync(self.sync)
        run_workers(ab_worker, self._ab_args(self._slots()), self.nthreads, self.sync)
        if aborted(self.sync):
            self.status = STATUS_INTERRUPTED
            return None
        status, gap_i, gap, g0, self.cmax, self.certified = ab_result(self.ab_out,
                                                                      self.perm_out)
        if status != STATUS_OK:
            self.status = int(status)
            return None
        if not self.integral:  # stage A read every entry: refuse what would overflow
            check_float_range(self.cmax, (self.n1, self.n2))
        return GapsAB(gap_i, gap, g0)

    def stages_cde(self) -> BoundsCDE | None:
        self.v_old = self.vf.copy()
        regret_order(self.regret, self.perm_out)
        reset_sync(self.sync)
        run_workers(cde_worker, self._cde_args(self._slots()), self.nthreads, self.sync)
        if aborted(self.sync):
            self.status = STATUS_INTERRUPTED
            return None
        return BoundsCDE(*(float(b) for b in self.bounds))

    def blend(self, rho: float) -> None:
        blend(self.vf, self.v_old, rho)

    def run(self) -> tuple:
        """Stages A–E through the shared driver: (status, eps_upper, eps_lower) as
        :func:`estimate` returns them."""
        result = drive(self, self.n1, self.n2, self.integral)
        if result is None:
            return self.status, 0.0, 0.0
        if (self.certified and not result.ran_cde and result.eps_upper == 0.0
                and certificate_holds(self.v_out, self.vf, self.pick_out, self.n1, self.integral,
                                      self.cmax)):
            return STATUS_CERTIFIED, result.eps_upper, result.eps_lower
        return STATUS_OK, result.eps_upper, result.eps_lower

    def finish(self, natural_order: bool) -> None:
        _round_v(self.vf, self.v_out, self.integral)
        if natural_order:
            self.perm_out[:] = np.arange(self.n1)


def estimate(src, bufs, n1, n2, v_out, perm_out, integral, pick_out, sync=None):
    """Stages A–E on ``len(bufs)`` threads (``bufs``: one scratch row per thread; one buffer runs
    everything on the calling thread). Returns (status, eps_upper, eps_lower); fills v_out,
    perm_out and pick_out.

    For float costs the caller runs the speculative sweep of ``certify`` first: when it proves
    the exact pass trivial, the solve is done after one sweep over the matrix (sanity class);
    otherwise stages A–E run as always (their results do not depend on it).

    ``perm_out`` is the row order of the passes: stage C's regret order when ε_upper = 0 (the
    exact pass runs it back to front), else the identity.

    Status STATUS_CERTIFIED: as STATUS_OK, and ``pick_out`` is the optimal assignment that the
    exact pass would return with this v and perm (module docstring). ``sync``: the barrier
    state (``_sync.new_sync``) through which the caller may stop the run
    (``_sync.request_abort``: every stage ends at its next row; STATUS_INTERRUPTED).
    """
    return CpuStages(src, bufs, n1, n2, v_out, perm_out, pick_out, integral, sync).run()


@njit(cache=True, nogil=True)
def _round_v(vf, v_out, integral):
    """v in the work dtype: rounded to the nearest integer for integral costs."""
    for j in range(vf.shape[0]):
        if integral:
            v_out[j] = np.round(vf[j])
        else:
            v_out[j] = vf[j]


@njit(cache=True, nogil=True)
def certificate_holds(v_out, vf, pick, n1, integral, cmax):
    """The remaining conditions of the certificate: v_out is the v that stage B used (exactly, also
    for integral costs), and every column left unpicked holds the largest v (so virtual rows take
    them in one-edge paths without changing v)."""
    n2 = v_out.shape[0]
    if integral:
        if not cmax < EXACT_INT:
            return False
        for j in range(n2):
            if np.float64(v_out[j]) != vf[j]:
                return False
    if n1 == n2:
        return True
    vmax = v_out[0]
    for j in range(n2):
        vmax = max(vmax, v_out[j])
    picked = np.zeros(n2, np.bool_)
    for i in range(n1):
        picked[pick[i]] = True
    for j in range(n2):
        if not picked[j] and v_out[j] != vmax:
            return False
    return True
