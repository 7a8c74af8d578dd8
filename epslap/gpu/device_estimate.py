"""The estimate of the column prices on the device (``estimate.cu``): stages A–E of
docs/algorithm.md §2, in the same order and arithmetic as the CPU's estimate."""
from __future__ import annotations

import numpy as np

from .._schedule import eps_bounds
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


def _estimate_device(cupy, mod, block, args, st, n1, n2, integral, epsilon):
    """Stages A–E of docs/algorithm.md §2 (same order and arithmetic as the CPU's ``_estimate``)."""
    st.flag.fill(0)
    lb_a, ub_id, g_a = _sweep(cupy, mod, block, args, st, 0)
    vf = cupy.where(cupy.isfinite(st.best2), st.best2,
                    cupy.where(cupy.isfinite(st.best1), st.best1, 0.0))
    st.vf[:] = vf
    _shift(cupy, st.vf)
    g_a = min(g_a, ub_id)
    gap_i = ub_id - lb_a
    g0 = g_a - lb_a
    st.flag.fill(0)
    lb_b, ub_b, _ = _sweep(cupy, mod, block, args, st, 1)
    gap = min(ub_b, g_a) - lb_b
    if gap_i < 4.0 * gap:
        v_old = st.vf.copy()
        idx = cupy.arange(n1)
        order = cupy.lexsort(cupy.stack([idx, st.regret]))  # ascending regret, then index
        st.perm[:] = order[::-1]
        st.flag.fill(0)
        ub_c, lb_c, _ = _sweep(cupy, mod, block, args, st, 2)
        _sweep(cupy, mod, block, args, st, 3)       # flag = held columns from stage C
        _shift(cupy, st.vf)
        st.flag.fill(0)
        ub_e, lb_e, _ = _sweep(cupy, mod, block, args, st, 2)
        gap = min(ub_e, ub_c) - max(lb_e, lb_c)
        if g0 > 0.0 and np.isfinite(gap):
            rho = gap / g0
            if rho > 1e-9:
                st.vf[:] = rho * v_old + (1.0 - rho) * st.vf
    if not epsilon:
        st.v.fill(0)
        st.perm[:] = cupy.arange(n1)
        return 0.0, 0.0
    st.v[:] = cupy.rint(st.vf).astype(st.v.dtype) if integral else st.vf
    eps_upper, eps_lower = eps_bounds(gap_i, gap, n1, n2, integral)
    if eps_upper > 0.0:  # ε-passes take the rows in natural order (the CPU estimate's rule)
        st.perm[:] = cupy.arange(n1)
    return eps_upper, eps_lower
