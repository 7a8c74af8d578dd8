r"""``solve(..., backend="hungarian-gpu")``: the classical Hungarian algorithm on the GPU.

The comparison backend of the project: Munkres' classical algorithm (O(n^4) worst case) in one
cooperative persistent kernel (``hungarian.cu``), after

* P. A. C. Lopes, S. S. Yadav, A. Ilic, S. K. Patra, "Fast block distributed CUDA implementation
  of the Hungarian algorithm", J. Parallel Distrib. Comput. 130 (2019) 50–62,
  doi:10.1016/j.jpdc.2019.03.014 — compressed list of zero slacks, block-distributed
  alternating-path search (conditions S1–S5), several augmenting paths per round;
* S. Kawtikwar, Y.-H. Chang, V. Govind, "Improvements to the Hungarian LAP solver" — per-block
  zero counters, the dual update fused with the compression, one cooperative kernel, slack in a
  register.

The LP it solves: :math:`\min \sum_{ij} c_{ij} x_{ij}` over assignments of the shorter side,
with duals :math:`u_i + v_j \le c_{ij}`; the kernel keeps :math:`(u, v)` dual feasible and grows
a matching on the zero slacks :math:`s_{ij} = c_{ij} - u_i - v_j = 0` until it is perfect.
A rectangular problem (``n1 < n2`` after orientation) is padded with ``n2 - n1`` virtual rows of
cost 0, which the kernel never stores. Numerics (exact for integers, a deliberate tolerance plus
a final certificate for floats, then one exact shortest-path pass from the Hungarian duals that
makes a float result exact): see :mod:`epslap.gpu.hungarian.plan`. The logic is specified
and tested on the CPU by :mod:`epslap.gpu.hungarian.reference`.
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from ..launch import LaunchConfig
from ..modules import build_module, status_header
from ..runtime import import_cupy, multiprocessors
from .plan import numeric_plan, raise_for_status

THREADS = 256          # threads per block; hungarian.cu is built with __launch_bounds__(256, 2)
BLOCKS_PER_SM = 2      # co-resident by the launch bounds, as the cooperative launch requires
_CTL_LEN = 16
_SRC = Path(__file__).resolve().parent / "hungarian.cu"
_CTYPES = {np.dtype(np.float32): "float", np.dtype(np.int32): "int",
           np.dtype(np.float64): "double"}


def _module(cupy, storage: np.dtype):
    """``hungarian.cu`` compiled for the cost storage type on the current device (memoised)."""
    return build_module(cupy, _SRC, status_header(),
                        {"COST_ST": _CTYPES[storage], "THREADS": THREADS}, ("--std=c++17",))


def solve_hungarian(cost, *, maximize: bool, device: int, t_start: float,
                    launch: LaunchConfig | None = None):
    """See :func:`epslap.solve`; returns a :class:`~epslap.Solution` with NumPy arrays.

    ``cost`` is a dense NumPy or CuPy matrix (a CuPy matrix never leaves the device) or a
    ``costfns.CostSource``, which is first materialised on the device. ``launch``: the launch
    configuration (its ``hungarian_blocks``; the exact pass of tolerance mode takes the rest).
    """
    from costfns import CostSource

    from ...solution import empty_solve, finish
    from ..api import canonical_cupy, device_matrix
    launch = launch or LaunchConfig()
    cupy = import_cupy()
    with cupy.cuda.Device(device):
        if isinstance(cost, CostSource):
            from ..device_costs import materialise
            m, transposed, integral = canonical_cupy(cupy, materialise(cost, device), maximize)
        else:
            m, transposed, integral = device_matrix(cupy, cost, maximize, "hungarian-gpu")
        n1, n2 = m.shape
        if n1 == 0:
            row_to_col, v, assigned, stats = empty_solve(n2, integral, "hungarian-gpu")
        else:
            row_to_col, v, assigned, stats = _solve_canonical(cupy, m, integral, launch)
    return finish((n1, n2), transposed, integral, row_to_col, v, assigned, stats, maximize,
                  t_start)


def _solve_canonical(cupy, m, integral: bool, launch: LaunchConfig):
    """Solve the canonical problem (CuPy matrix, ``n1 <= n2``, minimised) on the current device.

    Returns ``(row_to_col, v, assigned, stats)`` as NumPy arrays in the work dtype (int64 for
    integer input, float64 otherwise), as :func:`epslap.solution.finish` takes them.
    """
    t0 = time.perf_counter()
    plan = numeric_plan(cupy, m, integral)
    store = cupy.ascontiguousarray(m.astype(plan["storage"], copy=False))
    t1 = time.perf_counter()
    mod = _module(cupy, plan["storage"])
    solve_k = mod.get_function("hungarian_solve")
    check_k = mod.get_function("hungarian_check")
    compile_s = time.perf_counter() - t1
    dev = cupy.cuda.Device()
    sms = multiprocessors(cupy)
    # At least one block per multiprocessor (two fit by the launch bounds); each block owns
    # R = ceil(n / blocks) consecutive rows and their zero list. launch.hungarian_blocks
    # overrides (diagnostics; clamped to what is co-resident).
    blocks = max(1, min(launch.hungarian_blocks or BLOCKS_PER_SM * sms, BLOCKS_PER_SM * sms))

    def launch_solve(args):
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        solve_k((blocks,), (THREADS,), args)
        end.record()
        end.synchronize()
        return cupy.cuda.get_elapsed_time(start, end) / 1000.0

    def launch_check(args):
        # one block per multiprocessor: co-resident (CuPy launches this module cooperatively)
        worst = cupy.full(sms, -np.inf, dtype=np.float64)
        check_k((sms,), (THREADS,), (*args, worst))
        return float(worst.max())

    row_to_col, v, assigned, stats = run_kernels(
        cupy, m, store, plan, integral, blocks, launch_solve, launch_check,
        cupy.cuda.memory.OutOfMemoryError)
    if not plan["exact"]:
        # Tolerance mode is optimal only up to n zero tolerances: one exact shortest-path pass
        # on the device from the Hungarian duals (every path about one edge long) makes the
        # result exact, with the certificate of every other backend.
        from costfns.sources import dense_cuda_source

        from ..solver import solve_device
        t2 = time.perf_counter()
        row_to_col, v, exact_stats, assigned = solve_device(
            dense_cuda_source(m), m.shape[0], m.shape[1], integral=False, device=dev.id,
            start_v=v, launch=launch)
        stats.update(exact_pass_rows=exact_stats["rows_evaluated"],
                     exact_pass_s=time.perf_counter() - t2,
                     certificate_max_violation=exact_stats["certificate_max_violation"])
    stats.update(device=cupy.cuda.runtime.getDeviceProperties(dev.id)["name"].decode(),
                 compile_s=compile_s, threads_per_block=THREADS,
                 time_prepare_s=time.perf_counter() - t0 - compile_s - stats["time_solve_s"]
                 - stats["time_check_s"] - stats.get("exact_pass_s", 0.0))
    return row_to_col, v, assigned, stats


def run_kernels(xp, m, store, plan, integral, blocks, launch_solve, launch_check, oom_error):
    """Allocate the kernel's arrays, run the solve and the certificate, collect the result.

    Device-agnostic (``xp`` is CuPy on the GPU, NumPy for the CPU emulation of the kernel in
    the tests): ``launch_solve(args)`` runs ``hungarian_solve`` and returns its seconds,
    ``launch_check(args)`` runs ``hungarian_check`` and returns the largest violation.
    """
    host = getattr(xp, "asnumpy", np.asarray)
    n1, n = m.shape
    rows_per_block = -(-n // blocks)
    if rows_per_block * n >= 2**32:
        raise ValueError(f"backend='hungarian-gpu': n={n} is too large for {blocks} blocks "
                         "(a zero's index within its block must fit 32 bits)")
    try:
        st = _DeviceState(xp, n, blocks, rows_per_block)
    except oom_error as exc:
        raise MemoryError(f"backend='hungarian-gpu': not enough device memory for the zero "
                          f"lists of n={n} ({4 * blocks * rows_per_block * n / 2**30:.1f} GiB "
                          f"besides the matrix): {exc}") from exc
    max_dual = min(4 * n * n + 16, 2**62)
    solve_s = launch_solve(
        (store, np.int64(n1), np.int64(n), np.int64(rows_per_block), np.float64(plan["tol"]),
         np.int64(max_dual), st.u, st.v, st.star_col, st.star_row, st.prime_col, st.green_row,
         st.row_lock, st.cover_row, st.cover_col, st.zeros, st.bmin, st.bcount, st.paths,
         st.ctl))
    ctl = host(st.ctl)
    raise_for_status(int(ctl[0]))
    del st.zeros  # the lists are the big allocation; free them before the check

    t2 = time.perf_counter()
    row_to_col = st.star_col[:n1].astype(np.int64)
    violation = launch_check((store, np.int64(n1), np.int64(n), st.star_col, st.v))
    if n1 < n:  # the columns left to virtual rows must carry the largest column dual
        violation = max(violation, _free_column_gap(xp, row_to_col, st.v, n))
    check_s = time.perf_counter() - t2
    if not violation <= plan["cert_tol"]:
        raise RuntimeError(
            f"backend='hungarian-gpu': the result failed its optimality certificate (dual "
            f"violation {violation:.3g} > {plan['cert_tol']:.3g}); the costs are too badly "
            "scaled for the float tolerance; use backend='cpu' or backend='gpu'")
    work = np.int64 if integral else np.float64
    assigned = m[xp.arange(n1), row_to_col].astype(work)
    v = xp.rint(st.v).astype(np.int64) if integral else st.v
    paths = host(st.paths)[: int(ctl[1])]
    stats = {
        "backend": "hungarian-gpu",
        "iterations": int(ctl[1]),            # phases: searches ended by augmenting paths
        "dual_updates": int(ctl[2]),
        "dual_updates_gathered": int(ctl[11]),  # of which over the few uncovered columns
        "search_rounds": int(ctl[3]),         # grid-wide rounds of the path search (step 4)
        "initial_matches": int(ctl[4]),       # stars after the greedy step 2
        "paths_per_iteration": [int(x) for x in paths],
        "rows_evaluated": None,               # an ε-SSP metric; not defined here
        "passes": 0,
        "epsilons": [],
        "time_estimate_s": 0.0,
        "time_solve_s": solve_s,              # the kernel alone (device events)
        "time_check_s": check_s,              # the certificate
        "compile_s": 0.0,                     # set by the caller that compiled the kernels
        "exact": plan["exact"],
        "zero_tolerance": plan["tol"],
        "certificate_max_violation": violation,
        "storage_dtype": plan["storage"].name,
        "grid": blocks,
    }
    return host(row_to_col), host(v), host(assigned), stats


def _free_column_gap(xp, row_to_col, v, n):
    """``max v - min v[free]``: the columns left to virtual rows must carry the largest dual."""
    free = xp.ones(n, dtype=bool)
    free[row_to_col] = False
    return float(v.max() - v[free].min())


class _DeviceState:
    """The kernel's arrays (see the table in ``hungarian.cu``)."""

    def __init__(self, xp, n, blocks, rows_per_block):
        self.u = xp.zeros(n, dtype=np.float64)
        self.v = xp.zeros(n, dtype=np.float64)
        self.star_col = xp.full(n, -1, dtype=np.int32)
        self.star_row = xp.full(n, -1, dtype=np.int32)
        self.prime_col = xp.full(n, -1, dtype=np.int32)
        self.green_row = xp.full(n, -1, dtype=np.int32)
        self.row_lock = xp.zeros(n, dtype=np.int32)
        self.cover_row = xp.zeros(n, dtype=np.uint8)
        self.cover_col = xp.zeros(n, dtype=np.uint8)
        self.zeros = xp.empty(blocks * rows_per_block * n, dtype=np.uint32)
        self.bmin = xp.empty(blocks, dtype=np.float64)
        self.bcount = xp.empty(blocks, dtype=np.int64)
        self.paths = xp.zeros(n + 1, dtype=np.int32)
        self.ctl = xp.zeros(_CTL_LEN, dtype=np.int64)
