"""Host driver of the CPU backend: compile (or load from the disk cache), estimate, run the passes.

Python only orchestrates: the estimation and every pass run inside the two compiled kernels, on a
worker thread (the kernels release the GIL) so that the main thread can draw progress and turn
Ctrl-C into a clean stop request.
"""
from __future__ import annotations

import os
import threading
import time
import warnings
from contextlib import nullcontext
from typing import Any

import numba
import numpy as np

from .._progress import SolveProgress, compile_clock
from .._sync import LoadWatch, available_cores, new_sync, request_abort, run_workers
from .._schedule import rectangular_from_zero
from .._status import (STATUS_CERTIFIED, STATUS_INTERRUPTED, STATUS_INVALID, STATUS_OK,
                       STOP_AFTER_AUGMENTATION, STOP_NONE, STOP_NOW, raise_for_status)
from .. import checkpoint as ckpt
from .._validate import check_float_range
from ..certificate import RTOL, prices_need_polish
from . import passes as ker
from .dual_repair import repair_duals
from .estimate import CpuStages, certificate_holds
from .estimate import certify as cert
from .estimate.validate import validate_rows

INT_INF = np.int64(2**62)
# threads=None uses one thread below this many columns (the measured crossovers: benchmarks/
# README.md "Two threads against one"); every core Numba may use from here on. Float matrices
# in memory gain from 2 threads at n = 2000 (1.2-1.4x), and so do cost sources computed as a
# table (solved as a matrix); integer matrices lose there (0.84x) and tie at 3000; costs
# through row caches keep the general rule.
AUTO_MIN_COLS = 4000
AUTO_MIN_COLS_FLOAT = 2000



def _user_level() -> int:
    """The ``stacklevel`` of a warning that names the caller's line, not epslap's."""
    import sys
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        frame, level = frame.f_back, level + 1
    return level


def _compile(dispatcher, args) -> float:
    """Compile (or load from the disk cache) ``dispatcher`` for ``args``; return seconds spent."""
    sig = tuple(numba.typeof(a) for a in args)
    t0 = time.perf_counter()
    dispatcher.compile(sig)
    return time.perf_counter() - t0


#: seconds between two looks of the host at a running kernel (progress, load, checkpoints)
POLL_S = 0.1


def _run_interruptibly(fn, ctl: np.ndarray, on_tick=None, sync=None) -> Any:
    """Run ``fn()`` on a worker thread; poll ``on_tick``. Ctrl-C sets the stop flag ``ctl[0]``
    (the passes read it) and aborts the barrier state ``sync`` when given (the estimate's); the
    worker then ends within a row, and KeyboardInterrupt is raised once it has.

    The end of the worker is an Event it sets itself, not ``Thread.join``/``is_alive``: a
    KeyboardInterrupt that lands inside ``join(timeout)`` can leave CPython reporting the
    still-running thread as stopped, and the caller would then save a checkpoint before the
    kernel has filled its resume state (and leave the thread running)."""
    box: dict[str, Any] = {}
    done = threading.Event()

    def work():
        try:
            box["result"] = fn()
        except BaseException as exc:  # pragma: no cover - compiled code does not raise
            box["error"] = exc
        finally:
            done.set()

    worker = threading.Thread(target=work, name="epslap-cpu", daemon=True)
    worker.start()
    interrupted = False
    while not done.is_set():
        try:
            if not done.wait(POLL_S) and on_tick is not None:
                on_tick()
        except KeyboardInterrupt:
            ctl[0] = STOP_NOW
            if sync is not None:
                request_abort(sync)
            interrupted = True
    while worker.is_alive():  # fn has returned: the thread ends at once; none is left behind
        try:  # (on a loaded machine its end could come after the caller had moved on)
            worker.join()
        except KeyboardInterrupt:
            interrupted = True
    if "error" in box:
        raise box["error"]
    if interrupted:
        raise KeyboardInterrupt("epslap solve interrupted")
    return box["result"]


def _own_running() -> int:
    """Runnable threads of this process, the caller included (1 where unknown): the threads
    of an earlier parallel region that still spin count in /proc/loadavg, but they are ours."""
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return 1
    running = 0
    for tid in tasks:
        try:
            with open(f"/proc/self/task/{tid}/stat") as fh:
                running += fh.read().rsplit(")", 1)[1].split()[0] == "R"
        except (OSError, IndexError):
            continue
    return max(1, running)


def other_running() -> int:
    """Runnable tasks on the machine besides this process's own (0 where unknown)."""
    try:
        with open("/proc/loadavg") as fh:
            running = int(fh.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return 0
    return max(0, running - _own_running())


#: hand automatically chosen lock-step threads over to one thread when other processes hold
#: the cores during the passes (``_sync.LoadWatch``). The tests that pin thread counts on a
#: shared machine turn it off.
LOAD_WATCH = True


def resolve_threads(threads, n2: int, min_cols: int = AUTO_MIN_COLS) -> int:
    """The number of solver threads for ``threads`` (``solve``'s keyword) and n2 columns; the
    one count every phase of the solve uses (estimate, passes, certificate).

    ``None``: every core that is free now — the cores this process may run on
    (:func:`available_cores`, at most ``numba.get_num_threads()``) less the runnable tasks of
    other processes (Linux ``/proc/loadavg``, without this process's own threads) — when n2 >=
    ``min_cols`` (AUTO_MIN_COLS; AUTO_MIN_COLS_FLOAT for a float matrix in memory), else 1
    (below the measured crossover the barrier per Dijkstra step costs more than the split scan
    saves). The threads meet once per Dijkstra step, so one that waits for a core stalls all:
    such automatic threads also hand over to one thread when they stall during the passes.
    An explicit count is honoured up to the cores that exist (and the threads Numba may use),
    whatever else runs; above that it is capped, with one warning. Every count keeps at least
    8 columns per thread.
    """
    cap = min(available_cores(), numba.get_num_threads())  # this module's name: tests pin it
    if threads is None:
        threads = cap if n2 >= min_cols else 1
        if threads > 1:  # lock-step threads lose badly to a peer that has no core of its own
            threads = max(1, min(threads, available_cores() - other_running()))
    elif threads > cap:
        warnings.warn(f"threads={threads} is more than the {cap} cores this process may use "
                      f"(its CPU affinity {available_cores()}, numba.get_num_threads() "
                      f"{numba.get_num_threads()}); using {cap}: lock-step threads without a "
                      "core of their own stall each other", RuntimeWarning,
                      stacklevel=_user_level())
        threads = cap
    return int(max(1, min(int(threads), n2 // 8)))


#: (dispatcher, ``_arg_key`` of its arguments) compiled or loaded in this process
_READY: set = set()


#: the array flags Numba's type of an array reads (C and F contiguous, aligned, writeable)
_LAYOUT_FLAGS = 0x1 | 0x2 | 0x100 | 0x400


def _arg_key(a):
    """What Numba's type of ``a`` depends on, read cheaply (about half the time of reading the
    flags one by one: this runs for every argument of every solve): an array's dtype,
    dimensions and layout flags, a tuple's (or named tuple's) members, a scalar's type; any
    other object by identity (conservative: a new object is looked at by Numba again)."""
    kind = type(a)
    if kind is np.ndarray:
        return (a.dtype, a.ndim, a.flags.num & _LAYOUT_FLAGS)
    if isinstance(a, tuple):
        return (kind, *[_arg_key(x) for x in a])
    if a is None or isinstance(a, (bool, int, float, np.generic)):
        return kind
    return (kind, id(a))


def compile_kernels(kernels, progress=None, what: str = "the CPU kernels") -> float:
    """Compile every (dispatcher, arguments) of a step's kernel table; return seconds spent.
    With ``progress`` (a :class:`SolveProgress`, or True for a line of its own), a compile this
    process has not done yet is shown as a phase whose clock runs. A table whose kernels this
    process has readied for arguments of the same kinds returns at once: Numba's types of every
    argument cost about 2 ms per solve, a tenth of a 4000-row solve of an easy class."""
    keys = [(dispatcher, _arg_key(args)) for dispatcher, args in kernels]
    if all(key in _READY for key in keys):
        return 0.0

    def compile_all():
        return sum(_compile(dispatcher, args) for dispatcher, args in kernels)
    if progress and any(tuple(numba.typeof(a) for a in args) not in dispatcher.overloads
                        for dispatcher, args in kernels):
        with (compile_clock(what) if progress is True else progress.compiling(what)):
            spent = compile_all()
    else:
        spent = compile_all()
    _READY.update(keys)
    return spent


def estimate_rows(src, n1: int, n2: int, row_dtype, *, integral: bool, epsilon: bool = True,
                  ctl=None, estimate_context=None, threads: int = 1, check_rows=None,
                  progress=None):
    """Stages A–E on the host over the rows of ``src`` (docs/algorithm.md §2; also validates every
    row: NaN/-inf and infeasible rows raise), after the speculative certificate sweep for float
    costs (``estimate.certify``; on ``threads`` threads when ``src`` is an in-memory matrix). Used
    by the CPU solve and by the GPU backend for rows that come from the host.

    Returns ``(v, perm, pick, eps_upper, eps_lower, certified, compile_s, seconds)``: v in the
    work dtype; ``certified`` when stage B's assignment ``pick`` is the exact pass's optimal
    result (``epsilon`` only). ``epsilon=False``: only the validation of the rows
    (``estimate.validate``); v = 0, natural row order, ε bounds 0.
    """
    work = np.int64 if integral else np.float64
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
        status, eps_upper, eps_lower = _run_interruptibly(run, ctl, tick, sync=stop)
    if check_rows is not None:  # the source's own errors explain a status better than it does
        check_rows()
    raise_for_status(status, "cpu")
    certified = status == STATUS_CERTIFIED and epsilon
    return (v, perm, pick, eps_upper, eps_lower, certified, compile_s,
            time.perf_counter() - t0)


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
            self.fingerprint = ckpt.fingerprint(
                _read_rows(src, n2, row_dtype, ckpt.fingerprint_rows(n1), estimate_context),
                n1, n2, mode)
            self.state = checkpoint.loaded
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
        self.can_degrade = LOAD_WATCH and hand_over and nthreads > 1
        self.t0 = time.perf_counter()

    def worker_args(self, eps_hi, eps_lo, log, sync):
        io = ker.PassIO(self.v, self.perm, self.row_to_col, log, self.result, self.resume,
                        self.resume_row_col, self.rows)
        meet = ker.Meeting(sync, self.slots, self.slots_w, self.ctl)
        t, ts, bufs = self.threads, self.srcs, self.bufs
        return lambda tid: (np.int64(tid), np.int64(t), ts[tid], bufs[tid], self.n1, self.n2,
                            float(eps_hi), float(eps_lo), self.integral, self.inf_val, io, meet)

    def compile(self, eps_hi, eps_lo, prog) -> float:
        args = self.worker_args(eps_hi, eps_lo, self.eps_log, new_sync())(0)
        return compile_kernels([(ker.pass_worker, args)], prog, "the passes")

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
                _run_interruptibly(lambda: run_workers(ker.pass_worker, args_of, t,
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
           estimate_context, check_rows, prog, resume, resume_row_col, eps_log):
    """Where the passes start: the estimate's result (or, for a warm start, ``init_v`` after a
    sweep that only validates the rows), or a checkpoint's ``state``. Returns ``(v, perm,
    pick, eps_upper, eps_lower, certified, compile_s, time_estimate, plain)``."""
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
                      check_rows=check_rows, progress=prog)
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
        ok = _duals_hold(src, n2, row_dtype, v, row_to_col, estimate_context, assigned)
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
            repaired = _repair_duals(src, n2, row_dtype, v, row_to_col, estimate_context)
            if repaired >= 0:  # its last sweep checked every row as verify will
                return polish_rows, repaired, False
            v[:] = kept
            warnings.warn("epslap: the float duals of this solve miss epslap.verify's per-entry "
                          "rule after two polishing passes and a repair (the assignment is "
                          "optimal up to float rounding); please report the problem",
                          RuntimeWarning, stacklevel=_user_level())
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

    ``threads`` (already resolved, see :func:`resolve_threads`) workers run the pass loop over
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
    v, perm, pick, eps_upper, eps_lower, certified, compile_s, time_estimate, plain = _start(
        src, n1, n2, row_dtype, integral=integral, plain=not epsilon or rectangular,
        init_v=init_v, state=state, ctl=ctl, threads=nthreads,
        estimate_context=estimate_context, check_rows=check_rows, prog=prog, resume=resume,
        resume_row_col=resume_row_col, eps_log=eps_log)
    start_absmax = float(np.abs(v).max()) if n2 else 0.0
    if state is not None:
        start_absmax = float(state["header"]["start_absmax"])
    checkpoints.header = {"eps_upper": eps_upper, "eps_lower": eps_lower,
                          "start_absmax": start_absmax}
    rows_before = int(resume[ker.R_ROWS]) if resume[ker.R_ACTIVE] == 1.0 else 0
    passes = _Passes(src, srcs, n1, n2, row_dtype, integral, rectangular,
                     hand_over and thread_srcs is None, ctl, v, perm, row_to_col, resume,
                     resume_row_col, eps_log, checkpoints)
    compile_s += passes.compile(eps_upper, eps_lower, prog)
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
    solve_again, dual_repair_rows = False, 0
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
                      f"{passes.degraded_at:.2f} s", RuntimeWarning, stacklevel=_user_level())
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


def rows_served(estimate_context):
    """``estimate_context()`` (the context in which helper threads compute a source's rows),
    or a context that does nothing where there is none."""
    return nullcontext() if estimate_context is None else estimate_context()


def _read_rows(src, n2: int, row_dtype, rows: np.ndarray, estimate_context) -> np.ndarray:
    """Rows ``rows`` of ``src`` (inside ``estimate_context``: rows that helper threads
    compute)."""
    from costfns.rows import fill_rows
    out = np.empty((len(rows), n2), dtype=row_dtype)

    with rows_served(estimate_context):
        for k, i in enumerate(rows):
            fill_rows(src, np.int64(i), out[k:k + 1])
    return out


def _duals_hold(src, n2: int, row_dtype, v, row_to_col, estimate_context, assigned) -> bool:
    """``passes.duals_hold_rows`` over the rows of ``src`` (inside ``estimate_context``: a
    source whose rows helper threads compute); the assigned costs into ``assigned``."""
    stop = new_sync()

    def run():
        return ker.duals_hold_rows(src, np.empty(n2, row_dtype), v, row_to_col, RTOL, stop,
                                   assigned)
    with rows_served(estimate_context):
        return _run_interruptibly(run, np.zeros(8, np.int64), sync=stop)


def _repair_duals(src, n2: int, row_dtype, v, row_to_col, estimate_context) -> int:
    """``dual_repair.repair_duals`` over the rows of ``src`` (a budget of 8 reads per row and
    1000 more); its rows read, -1 where it did not finish."""
    stop = new_sync()
    budget = np.int64(8 * len(row_to_col) + 1000)

    def run():
        return repair_duals(src, np.empty(n2, row_dtype), v, row_to_col, RTOL, budget, stop)
    with rows_served(estimate_context):
        return int(_run_interruptibly(run, np.zeros(8, np.int64), sync=stop))


def free_columns_on_top(v: np.ndarray, row_to_col: np.ndarray) -> bool:
    """Whether every column left unassigned has the largest price: the condition under which
    the prices certify a rectangular assignment (their duals are 0 after the shift)."""
    free = np.ones(len(v), bool)
    free[row_to_col] = False
    return not free.any() or bool((v[free] == v.max()).all())


def assigned_costs(src, n2: int, row_dtype, row_to_col: np.ndarray, work) -> np.ndarray:
    """Canonical cost of every assigned pair, read through ``src``."""
    out = np.empty(len(row_to_col), dtype=work)
    if len(row_to_col):  # on a worker thread: computing the rows again may take a while
        stop = new_sync()
        _run_interruptibly(lambda: ker.gather_assigned(src, np.empty(n2, row_dtype), row_to_col,
                                                       out, stop),
                           np.zeros(8, np.int64), sync=stop)
    return out
