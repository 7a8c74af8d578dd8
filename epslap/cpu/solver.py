"""Host driver of the CPU backend: compile (or load from the disk cache), estimate, run the passes.

Python only orchestrates: the estimation and every pass run inside the two compiled kernels, on a
worker thread (the kernels release the GIL) so that the main thread can draw progress and turn
Ctrl-C into a clean stop request.
"""
from __future__ import annotations

import threading
import time
from typing import Any

import numba
import numpy as np

from .._progress import ProgressBar
from ..errors import InfeasibleError
from . import _estimate as est
from . import _kernel as ker

INT_INF = np.int64(2**62)


def _compile(dispatcher, args) -> float:
    """Compile (or load from the on-disk cache) ``dispatcher`` for ``args``; return seconds spent."""
    sig = tuple(numba.typeof(a) for a in args)
    t0 = time.perf_counter()
    dispatcher.compile(sig)
    return time.perf_counter() - t0


def _run_interruptibly(fn, ctl: np.ndarray, on_tick=None) -> Any:
    """Run ``fn()`` on a worker thread; poll ``on_tick``; Ctrl-C sets the stop flag ``ctl[0]``."""
    box: dict[str, Any] = {}

    def work():
        try:
            box["result"] = fn()
        except BaseException as exc:  # pragma: no cover - compiled code does not raise
            box["error"] = exc

    worker = threading.Thread(target=work, name="epslap-cpu", daemon=True)
    worker.start()
    interrupted = False
    while worker.is_alive():
        try:
            worker.join(0.1)
            if on_tick is not None:
                on_tick()
        except KeyboardInterrupt:
            ctl[0] = 1
            interrupted = True
    if "error" in box:
        raise box["error"]
    if interrupted:
        raise KeyboardInterrupt("epslap solve interrupted")
    return box["result"]


def solve_rows(src, n1: int, n2: int, row_dtype, *, integral: bool, epsilon: bool = True,
               progress: bool = False, progress_extra=None) -> tuple[np.ndarray, np.ndarray, dict]:
    """Solve the canonical problem (n1 <= n2, rows from ``src``) on the CPU.

    Returns ``(row_to_col, v, stats)`` with ``v`` in the work dtype (int64 or float64).
    ``progress_extra`` (a callable returning text) is appended to the progress bar.
    """
    work = np.int64 if integral else np.float64
    inf_val = INT_INF if integral else np.float64(np.inf)
    buf = np.empty(n2, dtype=row_dtype)
    v = np.zeros(n2, dtype=work)
    perm = np.arange(n1, dtype=np.int64)
    row_to_col = np.full(n1, -1, dtype=np.int64)
    ctl = np.zeros(8, dtype=np.int64)
    eps_log = np.zeros(ker.MAX_PASSES)

    pick = np.empty(n1, dtype=np.int64)  # stage B's assignment (the answer when certified)
    est_args = (src, buf, n1, n2, v, perm, integral, pick)
    compile_s = _compile(est._estimate, est_args)
    t0 = time.perf_counter()
    # the estimate also validates every row of an on-demand source (NaN, -inf, empty rows)
    status, eps_upper, eps_lower = _run_interruptibly(lambda: est._estimate(*est_args), ctl)
    if status == est.STATUS_INVALID:
        raise ValueError("matrix contains invalid numeric entries (NaN or -inf)")
    certified = status == est.STATUS_CERTIFIED and epsilon
    if status not in (est.STATUS_OK, est.STATUS_CERTIFIED):
        raise InfeasibleError("cost matrix is infeasible")
    if not epsilon:  # plain SSP: start from v = 0, natural row order
        v[:] = 0
        perm[:] = np.arange(n1)
        eps_upper = eps_lower = 0.0
    time_estimate = time.perf_counter() - t0

    pass_args = (src, buf, n1, n2, v, perm, float(eps_upper), float(eps_lower), integral,
                 inf_val, row_to_col, ctl, eps_log)
    compile_s += _compile(ker._solve_passes, pass_args)
    bar = ProgressBar(n2, ctl, extra=progress_extra) if progress else None
    t0 = time.perf_counter()
    if certified:  # the exact pass would return stage B's assignment unchanged: skip it
        row_to_col[:] = pick
        status, n_pass, rows_evaluated = ker.STATUS_OK, 1, n1
    else:
        status, n_pass, rows_evaluated = _run_interruptibly(
            lambda: ker._solve_passes(*pass_args), ctl, bar.update if bar else None)
    time_solve = time.perf_counter() - t0
    if bar:
        bar.close()
    if status == ker.STATUS_INFEASIBLE:
        raise InfeasibleError("cost matrix is infeasible")
    stats = {
        "backend": "cpu",
        "rows_evaluated": int(rows_evaluated),
        "passes": int(n_pass),
        "epsilons": [float(e) for e in eps_log[:min(n_pass, ker.MAX_PASSES)]],
        "eps_upper": float(eps_upper),
        "eps_lower": float(eps_lower),
        "time_estimate_s": time_estimate,
        "time_solve_s": time_solve,
        "compile_s": compile_s,
        "threads": 1,
        "certified_by_estimate": bool(certified),
    }
    return row_to_col, v, stats


def assigned_costs(src, n2: int, row_dtype, row_to_col: np.ndarray, work) -> np.ndarray:
    """Canonical cost of every assigned pair, read through ``src``."""
    out = np.empty(len(row_to_col), dtype=work)
    if len(row_to_col):
        est._assigned_costs(src, np.empty(n2, row_dtype), row_to_col, out)
    return out
