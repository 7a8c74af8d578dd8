"""Host driver of the CPU backend: compile (or load from the disk cache), estimate, run the passes.

Python only orchestrates: the estimation and every pass run inside the two compiled kernels, on a
worker thread (the kernels release the GIL) so that the main thread can draw progress and turn
Ctrl-C into a clean stop request.
"""
from __future__ import annotations

import time
import warnings

import numpy as np

from .._progress import SolveProgress
from .._sync import LoadWatch, new_sync, run_workers
from .._validate import read_only_view
from .._schedule import rectangular_from_zero
from .._status import (STATUS_INTERRUPTED, STATUS_OK, STOP_AFTER_AUGMENTATION, STOP_NONE,
                       STOP_NOW, raise_for_status)
from .. import checkpoint as ckpt
from ..certificate import prices_need_polish
from ..errors import user_stacklevel
from ..solution import raise_free_columns
from . import cores
from . import passes as ker
from .duals import duals_hold, free_columns_on_top, repair_duals_on_rows
from .estimate.driver import estimate_rows
from .host import compile_kernels, read_rows, run_interruptibly

INT_INF = np.int64(2**62)


class _Checkpoints:
    """The checkpoints of one CPU solve (``epslap.checkpoint``): the problem's fingerprint, the
    state a resume starts from, and the writes of the pass loop's state."""

    def __init__(self, checkpoint: ckpt.Checkpointing | None, src, n1: int, n2: int, row_dtype,
                 mode: str, estimate_context):
        self.checkpoint = checkpoint
        self.shape, self.dtype, self.mode = (n1, n2), np.dtype(row_dtype), mode
        self.fingerprint = self.state = None
        self.header: dict = {}  # the ε bounds and the start's largest price, once known
        if checkpoint is not None and (checkpoint.path is not None
                                       or checkpoint.loaded is not None):
            self.state = checkpoint.loaded
            # a matrix is hashed whole (a checkpoint of one that differs anywhere is refused;
            # a .npy file mapped into memory is read once for it); a cost source by its
            # sampled rows
            whole = type(src) is np.ndarray
            if self.state is not None:  # as the checkpoint was made (older ones: rows)
                whole = whole and self.state["header"].get("fingerprint_of") == "matrix"
            self.header["fingerprint_of"] = "matrix" if whole else "rows"
            rows = src if whole else read_rows(src, n2, row_dtype, ckpt.fingerprint_rows(n1),
                                               estimate_context)
            self.fingerprint = ckpt.fingerprint(rows, n1, n2, mode)
            if self.state is not None:
                ckpt.check_matches(self.state, checkpoint.resume_path, n1, n2, row_dtype, mode,
                                   self.fingerprint)

    @property
    def writes(self) -> bool:
        return self.checkpoint is not None and self.checkpoint.path is not None

    def due(self) -> bool:
        return self.checkpoint is not None and self.checkpoint.due()

    def save(self, passes: "_Passes", reason: str) -> None:
        """Write the pass loop's state now (``resume`` as the kernel left it at a stop, or the
        start of the passes)."""
        ckpt.write(self.checkpoint.path, {
            "fingerprint": self.fingerprint, "shape": list(self.shape),
            "dtype": self.dtype.str, "mode": self.mode, **self.header, "reason": reason,
            "rows_evaluated": int(passes.resume[ker.R_ROWS]),
        }, {"v": passes.v, "perm": passes.perm, "resume": passes.resume,
            "resume_row_col": passes.resume_row_col, "eps_log": passes.eps_log})
        self.checkpoint.written += 1
        self.checkpoint.last_write = time.monotonic()

    def stats(self, rows_before: int) -> dict:
        if self.fingerprint is None:
            return {}
        out = {"checkpoints_written": self.checkpoint.written}
        if self.state is not None:
            out["resumed_from"] = self.checkpoint.resume_path
            out["rows_evaluated_before_resume"] = rows_before
        return out


class _Passes:
    """The pass loop on the CPU threads (``passes.pass_worker``): its arrays, and the team of
    threads that runs it — all of them, or one once they stall each other under load
    (``hand_over``). ``result`` holds (status, passes, rows evaluated) of the last run."""

    def __init__(self, src, srcs: list, n1: int, n2: int, row_dtype, integral: bool,
                 rectangular: bool, hand_over: bool, ctl, v, perm, row_to_col, resume,
                 resume_row_col, eps_log, checkpoints: _Checkpoints):
        self.src, self.n1, self.n2, self.integral = src, n1, n2, integral
        self.inf_val = INT_INF if integral else np.float64(np.inf)
        self.ctl, self.v, self.perm, self.row_to_col = ctl, v, perm, row_to_col
        self.resume, self.resume_row_col, self.eps_log = resume, resume_row_col, eps_log
        self.checkpoints = checkpoints
        nthreads = len(srcs)
        self.slots = np.zeros(2 * nthreads * ker.SLOT, dtype=np.int64)
        self.slots_w = self.slots.view(np.int64 if integral else np.float64)
        self.bufs = np.empty((nthreads, n2), dtype=row_dtype)
        self.result = np.zeros(3)
        self.threads, self.srcs = nthreads, srcs
        self.rows = n1 if rectangular else -1  # PassIO.rows_per_pass
        self.degraded_at = None  # seconds into the passes when one thread took over
        # one thread reads a matrix itself; per-thread row caches have no whole-row reader
        self.can_degrade = cores.LOAD_WATCH and hand_over and nthreads > 1
        self.t0 = time.perf_counter()

    def worker_args(self, eps_hi, eps_lo, log, sync):
        io = ker.PassIO(self.v, self.perm, self.row_to_col, log, self.result, self.resume,
                        self.resume_row_col, self.rows)
        meet = ker.Meeting(sync, self.slots, self.slots_w, self.ctl)
        t, ts, bufs = self.threads, self.srcs, self.bufs
        return lambda tid: (np.int64(tid), np.int64(t), ts[tid], bufs[tid], self.n1, self.n2,
                            float(eps_hi), float(eps_lo), self.integral, self.inf_val, io, meet)

    def kernels(self) -> list:
        """The pass loop's kernel with arguments of the types :meth:`run` gives it."""
        return [(ker.pass_worker, self.worker_args(0.0, 0.0, self.eps_log, new_sync())(0))]

    def compile(self, prog) -> float:
        return compile_kernels(self.kernels(), prog, "the passes")

    def run(self, eps_hi, eps_lo, log, on_tick=None, keep: bool = False) -> None:
        """Run the pass loop on every thread; fills ``result``. ``keep``: the main passes,
        which go on from ``resume`` when it is set (a checkpoint's state) and write checkpoints.

        A stop request ends the loop between two augmentations, and the kernel leaves where it
        was in ``resume``; the loop then goes on from there, on the same threads after a
        checkpoint, on one thread when the threads stall each other (another process holds a
        core: ``LoadWatch``). Either way it takes the steps it would have taken without the
        stop. Ctrl-C writes a last checkpoint and raises KeyboardInterrupt."""
        ctl, checkpoints = self.ctl, self.checkpoints
        if not keep:
            self.resume[ker.R_ACTIVE] = 0.0
        while True:
            sync = new_sync()
            t = self.threads
            args_of = self.worker_args(eps_hi, eps_lo, log, sync)
            watch = LoadWatch(sync, t) if t > 1 and self.can_degrade else None
            stop_for = []

            def tick():
                if not stop_for and watch is not None and self.degraded_at is None \
                        and watch.stalled():
                    self.degraded_at = time.perf_counter() - self.t0
                    stop_for.append("degrade")
                    ctl[0] = STOP_NOW  # every thread ends at the same augmentation
                elif not stop_for and keep and checkpoints.due():
                    stop_for.append("checkpoint")
                    ctl[0] = STOP_AFTER_AUGMENTATION  # no work is lost
                if on_tick is not None:
                    on_tick()
            try:
                run_interruptibly(lambda: run_workers(ker.pass_worker, args_of, t,
                                                                sync), ctl, tick)
            except KeyboardInterrupt:
                if keep and checkpoints.writes and self.resume[ker.R_ACTIVE] == 1.0:
                    checkpoints.save(self, "interrupted")
                raise
            ctl[0] = STOP_NONE
            if self.result[0] != STATUS_INTERRUPTED or not stop_for:
                if stop_for and stop_for[0] == "degrade":  # they finished before the stop
                    self.degraded_at = None
                return
            if stop_for[0] == "checkpoint":
                checkpoints.save(self, "interval")
            else:
                self.threads, self.srcs = 1, [self.src]

    def polish(self, prog, square: bool = False) -> int:
        """One exact pass from the final prices (docs/algorithm.md §8); its rows evaluated.
        ``square``: with the virtual rows of a rectangular problem (its free columns then tie
        at the top price)."""
        first = self.result.copy()
        if square:
            self.rows = -1
        else:
            self.v[:] -= self.v.max()
            if prog:
                prog.polish()
        self.run(0.0, 0.0, np.zeros(1), prog.tick if prog else None)
        rows = int(self.result[2])
        self.result[1:] += first[1:]
        return rows


def _start(src, n1, n2, row_dtype, *, integral, plain, init_v, state, ctl, threads,
           estimate_context, check_rows, prog, resume, resume_row_col, eps_log, later=()):
    """Where the passes start: the estimate's result (or, for a warm start, ``init_v`` after a
    sweep that only validates the rows), or a checkpoint's ``state``. Returns ``(v, perm,
    pick, eps_upper, eps_lower, certified, compile_s, time_estimate, plain)``. ``later``: the
    passes' kernels (``estimate_rows`` may have a child compile them meanwhile)."""
    if state is not None:  # the estimate's result and the passes' progress from the checkpoint
        head = state["header"]
        resume[:] = state["resume"]
        resume_row_col[:] = state["resume_row_col"]
        eps_log[:] = state["eps_log"]
        return (state["v"].astype(np.int64 if integral else np.float64),
                state["perm"].astype(np.int64), np.empty(n1, dtype=np.int64),
                float(head["eps_upper"]), float(head["eps_lower"]), False, 0.0, 0.0, plain)
    v, perm, pick, eps_upper, eps_lower, certified, compile_s, time_estimate = \
        estimate_rows(src, n1, n2, row_dtype, integral=integral,
                      epsilon=not plain and init_v is None, ctl=ctl,
                      estimate_context=estimate_context, threads=threads,
                      check_rows=check_rows, progress=prog, later=later)
    if init_v is not None:
        # a warm start: the exact pass from the given prices, after a sweep that only
        # validates the rows (the estimate's ε bounds and its prices would add work: the
        # exact pass from a similar problem's prices evaluated fewer rows, docs §11)
        v[:] = init_v
        plain, eps_upper, eps_lower, certified = True, 0.0, 0.0, False
    return v, perm, pick, eps_upper, eps_lower, certified, compile_s, time_estimate, plain


def _settle_float_duals(passes: _Passes, src, n2, row_dtype, estimate_context, gathered,
                        prog, *, retry_elsewhere: bool) -> tuple[int, int, bool]:
    """Check the float duals against verify's per-entry rule on every row (one more read of
    the rows) and mend them where they miss it: ``(polish rows, dual-repair rows, solve
    again)``.

    They miss it, rarely, where prices rounded at the scale of their spread meet an entry whose
    own terms are far smaller (a tight pair of tiny costs next to the top price: 1 of 36
    random, geometric and disjoint instances at n = 1500 and 3000); one exact pass from the
    final prices (the polish: every path one edge, each row's dual its smallest reduced cost)
    recomputes them at their own scale, twice at most, then a repair lowers prices along the
    violations. ``retry_elsewhere`` (a rectangular source, a warm start: they have had their
    polish): where they still miss it (prices rounded at a cost scale far above some rows' own,
    or a warm start's prices far off the costs' scale), solve again is asked instead — a warm
    start without its hint, a rectangular source padded, whose ε-passes shape the prices.
    ``gathered["assigned"]`` receives the rows' assigned costs the last check read, where it
    held."""
    v, row_to_col = passes.v, passes.row_to_col
    assigned = np.empty(len(row_to_col), dtype=np.float64)
    polish_rows = retries = 0
    while passes.result[0] == STATUS_OK:
        if len(row_to_col) < n2:  # a polish may have left a free column below the top again
            raise_free_columns(v, row_to_col)
        ok = duals_hold(src, n2, row_dtype, v, row_to_col, estimate_context, assigned)
        if gathered is not None:
            gathered.pop("assigned", None)
            if ok:
                gathered["assigned"] = assigned.copy()
        if ok:
            break
        if retry_elsewhere:
            return polish_rows, 0, True
        if retries == 2:
            kept = v.copy()
            repaired = repair_duals_on_rows(src, n2, row_dtype, v, row_to_col, estimate_context)
            if repaired >= 0:  # its last sweep checked every row as verify will
                return polish_rows, repaired, False
            v[:] = kept
            warnings.warn("epslap: the float duals of this solve miss epslap.verify's per-entry "
                          "rule after two polishing passes and a repair (the assignment is "
                          "optimal up to float rounding); please report the problem",
                          RuntimeWarning, stacklevel=user_stacklevel())
            break
        polish_rows += passes.polish(prog)
        retries += 1
    return polish_rows, 0, False


def solve_rows(src, n1: int, n2: int, row_dtype, *, integral: bool, epsilon: bool = True,
               progress: bool = False, progress_extra=None, threads: int = 1,
               thread_srcs=None, estimate_context=None, check_rows=None,
               pad: bool = False, checkpoint: ckpt.Checkpointing | None = None,
               init_v: np.ndarray | None = None,
               gathered: dict | None = None,
               hand_over: bool = False) -> tuple[np.ndarray, np.ndarray, dict]:
    """Solve the canonical problem (n1 <= n2, rows from ``src``) on the CPU.

    ``threads`` (already resolved, see :func:`cores.resolve_threads`) workers run the pass loop over
    column slices (``hand_over``: they were chosen automatically, and hand over to one thread
    when they stall each other; an explicit count is kept); worker t reads rows through
    ``thread_srcs[t]`` (per-thread row caches of its columns) or, by default, ``src``. The
    estimate reads whole rows from ``src``, inside ``estimate_context()`` when given (helper
    threads that generate the rows in parallel).
    Returns ``(row_to_col, v, stats)`` with ``v`` in the work dtype (int64 or float64).
    ``progress_extra`` (a callable returning text) is appended to the progress bar.
    ``pad``: solve a rectangular source padded with virtual rows (docs/algorithm.md §10 says
    when that is the fallback). ``checkpoint``: write checkpoints and/or resume from one
    (``epslap.checkpoint``); ``init_v``: canonical prices of a warm start (docs/algorithm.md §11).
    ``gathered`` (a dict, optional): receives ``"assigned"``, the canonical cost of every row's
    pair in the work dtype, where the last check of the float duals read them.
    """
    nthreads = int(threads)
    if isinstance(src, np.ndarray):  # (the kernels' type of a matrix: canonical_dense's)
        src = read_only_view(src)
    srcs = list(thread_srcs) if thread_srcs is not None else [src] * nthreads
    if len(srcs) != nthreads:
        raise ValueError(f"thread_srcs must hold {nthreads} sources, got {len(srcs)}")
    row_to_col = np.full(n1, -1, dtype=np.int64)
    ctl = np.zeros(8, dtype=np.int64)
    eps_log = np.zeros(ker.MAX_PASSES)
    # a rectangular cost source: the estimate only validates the rows; v = 0, real rows only.
    # A matrix in memory of that shape takes the small path (jv.py); one that path could not
    # certify comes here and is padded, the route whose float duals are checked most.
    rectangular = (rectangular_from_zero(n1, n2) and not isinstance(src, np.ndarray)
                   and not pad)
    mode = "rectangular" if rectangular else ("eps" if epsilon else "ssp")
    resume = np.zeros(ker.RESUME_SIZE)
    resume_row_col = np.full(n2, -1, dtype=np.int64)
    checkpoints = _Checkpoints(checkpoint, src, n1, n2, row_dtype, mode, estimate_context)
    state = checkpoints.state
    prog = SolveProgress(n1 if rectangular else n2, ctl, eps_log, extra=progress_extra) \
        if progress else None
    work = np.int64 if integral else np.float64
    # the pass loop's kernel, for a child that compiles it while the estimate compiles here
    # (stand-ins for the estimate's prices and row order: only their types matter); a resumed
    # solve skips the estimate
    later = () if state is not None else _Passes(
        src, srcs, n1, n2, row_dtype, integral, rectangular, False, ctl, np.zeros(1, work),
        np.zeros(1, np.int64), row_to_col, resume, resume_row_col, eps_log,
        checkpoints).kernels()
    v, perm, pick, eps_upper, eps_lower, certified, compile_s, time_estimate, plain = _start(
        src, n1, n2, row_dtype, integral=integral, plain=not epsilon or rectangular,
        init_v=init_v, state=state, ctl=ctl, threads=nthreads,
        estimate_context=estimate_context, check_rows=check_rows, prog=prog, resume=resume,
        resume_row_col=resume_row_col, eps_log=eps_log, later=later)
    start_absmax = float(np.abs(v).max()) if n2 else 0.0
    if state is not None:
        start_absmax = float(state["header"]["start_absmax"])
    checkpoints.header.update(eps_upper=eps_upper, eps_lower=eps_lower,
                              start_absmax=start_absmax)
    rows_before = int(resume[ker.R_ROWS]) if resume[ker.R_ACTIVE] == 1.0 else 0
    passes = _Passes(src, srcs, n1, n2, row_dtype, integral, rectangular,
                     hand_over and thread_srcs is None, ctl, v, perm, row_to_col, resume,
                     resume_row_col, eps_log, checkpoints)
    compile_s += passes.compile(prog)
    result = passes.result
    t0 = passes.t0 = time.perf_counter()
    polish_rows = 0
    if certified:  # the exact pass would return stage B's assignment unchanged: skip it
        row_to_col[:] = pick
        result[:] = (STATUS_OK, 1, n1)
    else:
        if prog:
            prog.passes()
        if checkpoints.writes and state is None:
            checkpoints.save(passes, "estimate")  # a resume skips the estimate
        passes.run(eps_upper, eps_lower, eps_log, prog.tick if prog else None, keep=True)
        if not integral and result[0] == STATUS_OK and (
                plain or prices_need_polish(start_absmax, v)):
            kept = (row_to_col.copy(), v.copy() - v.max())  # for a second polish (below)
            polish_rows = passes.polish(prog)
            if rectangular and result[0] == STATUS_OK and not free_columns_on_top(v, row_to_col):
                # the polish, an exact pass from prices that had fallen on assigned columns,
                # left such a column free: not a rectangular certificate (docs/algorithm.md
                # §10). Polish again with the virtual rows, which make it a square problem whose
                # free columns tie at the top price.
                v[:] = kept[1]
                polish_rows += passes.polish(prog, square=True)
        elif rectangular and result[0] == STATUS_OK and not free_columns_on_top(v, row_to_col):
            # a warm start's prices, or the estimate's float prices (a cold integer start's are
            # all 0 and stay on top), left a column unassigned below the top price: no
            # certificate (a pair with it may be cheaper than its row's own at that row's
            # scale), and the assignment may cost more than the optimum. The exact pass with
            # the virtual rows settles it, as above.
            v -= v.max()
            polish_rows += passes.polish(prog, square=True)
    solve_again, dual_repair_rows = False, 0
    if certified and not integral and n1 < n2 and raise_free_columns(v, row_to_col):
        certified = False  # checked with the free columns on top (_settle_float_duals)
    if not integral and not certified:
        more, dual_repair_rows, solve_again = _settle_float_duals(
            passes, src, n2, row_dtype, estimate_context, gathered, prog,
            retry_elsewhere=rectangular or init_v is not None)
        polish_rows += more
    time_solve = time.perf_counter() - t0
    if solve_again:
        if prog:
            prog.close()
        again = dict(progress=progress, progress_extra=progress_extra, threads=threads,
                     thread_srcs=thread_srcs, estimate_context=estimate_context,
                     check_rows=check_rows, gathered=gathered, hand_over=hand_over)
        if init_v is not None:
            out = solve_rows(src, n1, n2, row_dtype, integral=integral, epsilon=epsilon,
                             pad=pad, checkpoint=checkpoint, **again)
            out[2]["warm_start"] = "rejected"
            return out
        return solve_rows(src, n1, n2, row_dtype, integral=integral, epsilon=epsilon, pad=True,
                          **again)
    status, n_pass, rows_evaluated = int(result[0]), int(result[1]), result[2]
    if prog:
        prog.close({"passes": int(n_pass), "rows_evaluated": int(rows_evaluated)})
    raise_for_status(status, "cpu")
    if passes.degraded_at is not None:
        warnings.warn(f"epslap: the {nthreads} solver threads stalled each other (another "
                      f"process is using the cores); one thread finished the solve after "
                      f"{passes.degraded_at:.2f} s", RuntimeWarning, stacklevel=user_stacklevel())
    stats = {
        "backend": "cpu",
        "method": mode,
        "rows_evaluated": int(rows_evaluated),
        "passes": int(n_pass),
        "epsilons": [float(e) for e in eps_log[:min(n_pass, ker.MAX_PASSES)]],
        "eps_upper": float(eps_upper),
        "eps_lower": float(eps_lower),
        "time_estimate_s": time_estimate,
        "time_solve_s": time_solve,
        "compile_s": compile_s,
        "threads": nthreads,
        "threads_stalled_after_s": passes.degraded_at,
        "certified_by_estimate": bool(certified),
        "polish_rows": polish_rows,
    }
    if dual_repair_rows:
        stats["dual_repair_rows"] = dual_repair_rows
    if init_v is not None:
        stats["warm_start"] = "used"
    stats.update(checkpoints.stats(rows_before))
    return row_to_col, v, stats
