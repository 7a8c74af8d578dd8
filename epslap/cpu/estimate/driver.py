"""The estimate on the host: stages A–E over a source's rows (or only their validation), on
the CPU threads, for the CPU solve and for the GPU backend's rows that come from the host."""
from __future__ import annotations

import time

import numpy as np

from ..._status import STATUS_CERTIFIED, STATUS_INTERRUPTED, STATUS_INVALID, STATUS_OK, \
    raise_for_status
from ..._sync import new_sync
from ..._validate import check_float_range, read_only_view
from ..host import compile_kernels, compile_later, rows_served, run_interruptibly
from . import CpuStages, certificate_holds
from . import certify as cert
from .validate import validate_rows


def estimate_rows(src, n1: int, n2: int, row_dtype, *, integral: bool, epsilon: bool = True,
                  ctl=None, estimate_context=None, threads: int = 1, check_rows=None,
                  progress=None, later=()):
    """Stages A–E on the host over the rows of ``src`` (docs/algorithm.md §2; also validates every
    row: NaN/-inf and infeasible rows raise), after the speculative certificate sweep for float
    costs (``estimate.certify``; on ``threads`` threads when ``src`` is an in-memory matrix). Used
    by the CPU solve and by the GPU backend for rows that come from the host.

    Returns ``(v, perm, pick, eps_upper, eps_lower, certified, compile_s, seconds)``: v in the
    work dtype; ``certified`` when stage B's assignment ``pick`` is the exact pass's optimal
    result (``epsilon`` only). ``epsilon=False``: only the validation of the rows
    (``estimate.validate``); v = 0, natural row order, ε bounds 0.
    ``later``: the kernels of the step after the estimate (the passes), which a child process
    may compile (``cpu.compile_ahead``) while this one compiles the estimate's longest kernel.
    """
    work = np.int64 if integral else np.float64
    if isinstance(src, np.ndarray):  # (the kernels' type of a matrix: canonical_dense's)
        src = read_only_view(src)
    ctl = np.zeros(8, dtype=np.int64) if ctl is None else ctl
    buf = np.empty(n2, dtype=row_dtype)
    v = np.zeros(n2, dtype=work)
    perm = np.arange(n1, dtype=np.int64)
    pick = np.empty(n1, dtype=np.int64)  # stage B's assignment (the answer when certified)
    stop = new_sync()  # the estimate's barriers: a stop request aborts them
    speculate = epsilon and not integral and n1 > cert.CERT_SAMPLE
    if epsilon:
        # concurrent reads of the rows only from a matrix in memory (sources may share state)
        bufs = [buf] + [np.empty(n2, dtype=row_dtype)
                        for _ in range(1, threads if isinstance(src, np.ndarray) else 1)]
        stages = CpuStages(src, bufs, n1, n2, v, perm, pick, integral, stop)
        kernels = stages.kernels() + (cert.kernels(src, buf, n1, n2) if speculate else [])
    else:  # only the validation of the rows; v = 0 and the rows in their order, as set above
        kernels = [(validate_rows, (src, buf, np.int64(n1), stop))]
    # a child (where a core is free and a first use compiles): the later step's kernels, then
    # the estimate's own but the first (stage A/B's worker, the longest: this process's)
    compile_later(list(later) + kernels[1:])
    compile_s = compile_kernels(kernels, progress, "the estimate")

    def run():
        if not epsilon:
            status, big = validate_rows(src, buf, np.int64(n1), stop)
            if status == STATUS_OK and not integral:
                check_float_range(big, (n1, n2))
            return status, 0.0, 0.0
        if speculate:
            vf = np.empty(n2)
            status = cert.certify_sweep(src, bufs, n1, n2, vf, pick, len(bufs), stop)
            if status in (STATUS_INVALID, STATUS_INTERRUPTED):
                return status, 0.0, 0.0
            if status == STATUS_CERTIFIED and certificate_holds(vf, vf, pick, n1, False, 0.0):
                v[:] = vf
                return status, 0.0, 0.0
        return stages.run()

    t0 = time.perf_counter()
    tick = None
    if progress is not None:
        progress.estimate()
        tick = progress.tick
    with rows_served(estimate_context):
        status, eps_upper, eps_lower = run_interruptibly(run, ctl, tick, sync=stop)
    if check_rows is not None:  # the source's own errors explain a status better than it does
        check_rows()
    raise_for_status(status, "cpu")
    certified = status == STATUS_CERTIFIED and epsilon
    return (v, perm, pick, eps_upper, eps_lower, certified, compile_s,
            time.perf_counter() - t0)
