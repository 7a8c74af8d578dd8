"""The estimate of the column prices on the device (``estimate.cu``): stages A–E of
docs/algorithm.md §2, in the same order and arithmetic as the CPU's estimate."""
from __future__ import annotations

import numpy as np

from .._estimate_driver import BoundsCDE, GapsAB, drive
from .._status import raise_for_status
from .runtime import smem_optin, wide_grid

# estimate.cu's greedy sweeps: list entries per row (LIST_K), rows per sub-chunk (SUB_ROWS) and
# the shared memory those take (estimate_greedy's layout); rows listed at once (the list buffers)
LIST_K, SUB_ROWS, GREEDY_CHUNK_ROWS = 32, 32, 8192
_GREEDY_SMEM = SUB_ROWS * LIST_K * (8 + 4) + SUB_ROWS * (3 * 8 + 8 + 4 + 8)
_GREEDY_STATIC = 2048  # estimate_greedy's static shared memory: 688 B at 512 threads, 1328 at 1024


def greedy_smem(n2: int, smem_optin: int) -> tuple:
    """(dynamic shared memory of estimate_greedy, whether each block's bitmap of taken columns is
    in it): it is where it fits the device's opt-in limit (``smem_optin`` bytes) beside the
    kernel's static shared memory (``_GREEDY_STATIC``), else in global memory (up to about 1.7M
    columns on an H100)."""
    with_bits = _GREEDY_SMEM + 4 * (-(-n2 // 32))
    return (with_bits, True) if with_bits <= smem_optin - _GREEDY_STATIC else (_GREEDY_SMEM, False)


def greedy_layout(cupy, n2: int) -> tuple:
    """:func:`greedy_smem` on the current device."""
    return greedy_smem(n2, smem_optin(cupy))


def greedy_chunk(n1: int) -> int:
    """Rows whose lists the greedy sweeps build at once (the list buffers' rows)."""
    return min(n1, GREEDY_CHUNK_ROWS)


def _sweep(cupy, mod, block, args, st, mode):
    """One estimation sweep (estimate.cu) on one block per multiprocessor: modes 0-2 greedy, 3
    the release of stage D."""
    st.sums.fill(0)
    st.out_i64.fill(0)
    grid = (st.sms,)
    if mode == 3:
        mod.get_function("estimate_release")(grid, block, (*args, st.perm, st.vf, st.flag,
                                                           st.pick))
        return None
    kernel = mod.get_function("estimate_greedy")
    # always: static + dynamic above 48 KiB needs the opt-in even where the dynamic part is below
    kernel.max_dynamic_shared_size_bytes = st.greedy_shared
    kernel(grid, block, (*args, np.int32(mode), st.perm, st.vf, st.flag, st.pick, st.regret,
                         st.rmin, st.list_val, st.list_col, st.list_len,
                         np.int64(len(st.list_len)), st.taken_bits, np.int32(st.bits_in_smem),
                         st.slots, st.sums, st.out_i64), shared_mem=st.greedy_shared)
    raise_for_status(int(st.out_i64.get()[0]), "gpu")
    if mode == 0:  # stage A's per-column statistics of c - rmin
        mod.get_function("estimate_colstats")(wide_grid(cupy), (256,),
                                              (*args, st.rmin, st.best1, st.best2))
    return st.sums.get()


def _shift(cupy, x):
    m = x.max()
    if bool(cupy.isfinite(m)):
        x -= m


class DeviceStages:
    """The sweeps of the estimate on the device (``estimate.cu``), for the driver that both
    backends share (``epslap._estimate_driver``): the same stages, sums and decisions as the
    CPU's ``CpuStages``. A sweep that finds an invalid or infeasible matrix raises."""

    def __init__(self, cupy, mod, block, args, st, n1: int, integral: bool):
        self.cupy, self.mod, self.block, self.args, self.st = cupy, mod, block, args, st
        self.n1, self.integral = n1, integral
        self.v_old = None

    def _sweep(self, mode):
        return _sweep(self.cupy, self.mod, self.block, self.args, self.st, mode)

    def stages_ab(self) -> GapsAB:
        cupy, st = self.cupy, self.st
        st.flag.fill(0)
        lb_a, ub_id, g_a = self._sweep(0)
        st.vf[:] = cupy.where(cupy.isfinite(st.best2), st.best2,
                              cupy.where(cupy.isfinite(st.best1), st.best1, 0.0))
        _shift(cupy, st.vf)
        g_a = min(g_a, ub_id)
        st.flag.fill(0)
        lb_b, ub_b, _ = self._sweep(1)
        return GapsAB(ub_id - lb_a, min(ub_b, g_a) - lb_b, g_a - lb_a)

    def stages_cde(self) -> BoundsCDE:
        cupy, st = self.cupy, self.st
        self.v_old = st.vf.copy()
        idx = cupy.arange(self.n1)
        order = cupy.lexsort(cupy.stack([idx, st.regret]))  # ascending regret, then index
        st.perm[:] = order[::-1]
        st.flag.fill(0)
        ub_c, lb_c, _ = self._sweep(2)
        self._sweep(3)       # flag = held columns from stage C
        _shift(cupy, st.vf)
        st.flag.fill(0)
        ub_e, lb_e, _ = self._sweep(2)
        return BoundsCDE(ub_c, lb_c, ub_e, lb_e)

    def blend(self, rho: float) -> None:
        self.st.vf[:] = rho * self.v_old + (1.0 - rho) * self.st.vf

    def finish(self, natural_order: bool) -> None:
        st = self.st
        st.v[:] = self.cupy.rint(st.vf).astype(st.v.dtype) if self.integral else st.vf
        if natural_order:
            st.perm[:] = self.cupy.arange(self.n1)


def estimate_device(cupy, mod, block, args, st, n1, n2, integral, epsilon):
    """Stages A–E of docs/algorithm.md §2 through the driver shared with the CPU. Returns
    (ε_upper, ε_lower); ``epsilon=False``: v = 0, natural row order, bounds 0."""
    result = drive(DeviceStages(cupy, mod, block, args, st, n1, integral), n1, n2, integral)
    if not epsilon:
        st.v.fill(0)
        st.perm[:] = cupy.arange(n1)
        return 0.0, 0.0
    return result.eps_upper, result.eps_lower
