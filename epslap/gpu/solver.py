"""Host driver of the GPU backend (CuPy): the same algorithm as the CPU backend, device-resident.

One cooperative kernel launch per estimation sweep (``estimate.cu``) and per pass
(``eps_ssp.cu``); between passes the host applies the ε schedule (``epslap._schedule.next_eps``,
as the CPU's kernel does). Host synchronisations per augmentation = passes / augmentations
(reported in ``stats``). A solve: :func:`_setup` (launch, modules, device state, row cache), the
initial prices (:func:`_initial_prices`: the device or host estimate, or given prices), the
ε-passes (:func:`_eps_passes`), the polish (:func:`_polish`), the result (:func:`_result`);
:func:`solve_device` checks its certificate. Its checkpoints: ``checkpoints.py``.
"""
from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np

from .._schedule import next_eps, rectangular_from_zero
from .._status import STATUS_INTERRUPTED, STATUS_SUSPENDED, raise_for_status
from ..certificate import prices_need_polish
from .certificate import certified
from .device_costs import check_device_range, materialise
from .device_estimate import estimate_device
from .launch import (LaunchConfig, PassGeometry, exchange_slots, grid_geometry,
                     launches_serialised, pass_geometry, unroll_for)
from .modules import estimate_module, pass_module
from .checkpoints import DeviceCheckpoints
from .run import Run, source_rows
from .runtime import cost_args, import_cupy, wide_grid
from .state import R_EVICT, R_FILL_SLOT, R_LOGN, R_NEED, RESUME, DeviceState, device_bytes, \
    search_bytes

# names other modules import from here
__all__ = ["CacheSpec", "HostRowsSpec", "solve_device", "import_cupy", "materialise",
           "search_bytes", "device_bytes", "exchange_slots", "unroll_for"]


class CacheSpec(NamedTuple):
    """A device row cache for the passes: ``capacity`` rows, ``policy`` "lfu"/"slru", ``rows``
    the filler (``rowcache.HostRows``/``KernelRows``; None: the device cost's own rows)."""
    capacity: int
    policy: str
    rows: object = None


class HostRowsSpec(NamedTuple):
    """Rows on the host: a compiled cost-source state (or a NumPy matrix) and its dtype."""
    state: object
    row_dtype: object


def solve_device(cuda_cost, n1: int, n2: int, *, integral: bool, epsilon: bool = True,
                 device: int = 0, cache: CacheSpec | None = None,
                 host: HostRowsSpec | None = None, check_range: bool = False, start_v=None,
                 launch: LaunchConfig | None = None, hint_v=None, checkpoint=None,
                 devices: tuple = ()) -> tuple:
    """Solve on the device, then check the dual certificate of the result.

    ``cuda_cost``: the device form of the costs (None when there is none). ``cache`` (a
    :class:`CacheSpec`, optional): the passes read rows from a device row cache
    (``rowcache.py``). ``host`` (a :class:`HostRowsSpec`, optional): the rows also exist on the
    host — the estimate, the assigned costs and the certificate then read them there (a source
    without a device form); otherwise all three run on the device from ``cuda_cost``.

    ``start_v``: column prices to start from instead of the estimate (NumPy, canonical: another
    solver's duals); the solve is then one exact pass from them.

    ``check_range``: integer costs computed on the device (a cost source's device form) are
    held to the range rule of every integer source before the solve (one sweep over them).

    ``launch``: the launch configuration (default: the tuned one; the environment is read only
    by ``epslap.solve``).

    ``hint_v``: a user's warm start (canonical prices, docs/algorithm.md §11): the rows are
    validated (the estimate runs), then the exact pass starts from these prices; a result that
    misses its certificate is solved again without them (``stats["warm_start"]``).
    ``checkpoint`` (``epslap.checkpoint.Checkpointing``): checkpoints inside and between passes,
    or the state to resume from.

    ``devices``: several device ids, the first ``device``: the passes split over them
    (``split.py``; a device cost only: no ``cache`` or ``host``).

    Every result is checked against its dual certificate on the device. Should a check ever fail
    (a defect: the multi-block race of 2026-11-22 is fixed and the GPU tests assert that no rerun
    happens), the solve is repeated with one block, which serialises the search, and
    ``stats["gpu_single_block_rerun"]`` says so; nothing uncertified is ever returned.

    Returns ``(row_to_col, v, stats, assigned)`` (see :func:`_solve_device_once`).
    """
    launch = launch or LaunchConfig()
    if check_range and integral and cuda_cost is not None:
        check_device_range(cuda_cost, n1, n2, device, launch)
    if len(devices) > 1:
        _check_split(devices, device, cuda_cost, cache, host, launch)
    kw = dict(integral=integral, epsilon=epsilon, device=device, cache=cache, host=host,
              start_v=start_v, launch=launch, devices=devices)
    out = _solve_device_once(cuda_cost, n1, n2, blocks=None, hint_v=hint_v,
                             checkpoint=checkpoint, **kw)
    if certified(cuda_cost, n1, n2, integral, out, device, host, launch):
        out[2]["gpu_single_block_rerun"] = False
        return out
    if hint_v is not None:  # float prices far off the costs' scale: solve without them
        out = solve_device(cuda_cost, n1, n2, checkpoint=checkpoint, **kw)
        out[2]["warm_start"] = "rejected"
        return out
    if not integral:
        # float prices rounded at the scale of their spread can miss the per-entry rule where
        # a tight pair of tiny costs meets the top price (as on the CPU, epslap.cpu.duals):
        # one exact pass from the final prices (the polish: every path one edge) recomputes
        # the duals at their own scale
        first = out
        out = _solve_device_once(cuda_cost, n1, n2, blocks=None, **dict(kw, start_v=first[1]))
        if certified(cuda_cost, n1, n2, integral, out, device, host, launch):
            stats = first[2]
            again = out[2]
            stats.update(rows_evaluated=stats["rows_evaluated"] + again["rows_evaluated"],
                         passes=stats["passes"] + again["passes"],
                         epsilons=stats["epsilons"] + again["epsilons"],
                         polish_rows=stats["polish_rows"] + again["rows_evaluated"],
                         time_solve_s=stats["time_solve_s"] + again["time_estimate_s"]
                         + again["time_solve_s"],
                         certificate_max_violation=again["certificate_max_violation"],
                         gpu_single_block_rerun=False)
            return out[0], out[1], stats, out[3]
        out = first
    pad = out[2]["method"] == "rectangular"
    if pad:
        # float duals of the rectangular route that miss the rule (rare: prices rounded at a
        # cost scale far above some rows' own), or a polish that left a column whose price had
        # fallen free: the padded solve, whose ε-passes shape the prices (docs/algorithm.md §10)
        out = _solve_device_once(cuda_cost, n1, n2, blocks=None, pad=True, **kw)
        if certified(cuda_cost, n1, n2, integral, out, device, host, launch):
            out[2].update(gpu_single_block_rerun=False, rectangular_padded_rerun=True)
            return out
    first = out[2]
    out = _solve_device_once(cuda_cost, n1, n2, blocks=1, pad=pad, **kw)
    out[2]["gpu_single_block_rerun"] = True
    out[2]["time_failed_attempt_s"] = first["time_estimate_s"] + first["time_solve_s"]
    out[2]["failed_attempt_violation"] = first["certificate_max_violation"]
    out[2]["failed_attempt_rows_evaluated"] = first["rows_evaluated"]
    if not certified(cuda_cost, n1, n2, integral, out, device, host, launch):
        raise UncertifiedResult(out)
    return out


class UncertifiedResult(RuntimeError):
    """A device result whose duals missed the certificate after every re-solve (float prices
    rounded where costs of many magnitudes meet, or long runs of ties); ``out`` holds it, whose
    duals ``epslap.gpu.api`` hands to the CPU solver as a warm start (``cpu_finish``)."""

    def __init__(self, out):
        super().__init__("backend='gpu': the result failed its optimality certificate; please "
                         "report this problem (use backend='cpu' meanwhile)")
        self.out = out


def _check_split(devices, device, cuda_cost, cache, host, launch) -> None:
    """What a pass split over devices supports, or a clear error."""
    if devices[0] != device:
        raise ValueError(f"devices {devices!r}: the first must be the solve's device {device}")
    if launches_serialised():
        raise ValueError(f"device={list(devices)!r}: a pass split over devices needs its launches "
                         "to run at the same time, which CUDA_LAUNCH_BLOCKING forbids; unset it "
                         "or pass device=<int>")
    what = ("a matrix or a cost source without a device form (rows from the host)"
            if cuda_cost is None or host is not None else
            "a device row cache (cache='lfu'/'slru')" if cache is not None else
            "LaunchConfig(phase_clocks=True)" if launch.phase_clocks else None)
    if what is not None:
        raise ValueError(f"device={list(devices)!r} splits the passes of a cost source with a "
                         f"device form (a costfns class) over several GPUs; {what} is solved "
                         "on one device: pass device=<int>")


def _solve_device_once(cuda_cost, n1: int, n2: int, *, integral: bool, epsilon: bool,
                       device: int, blocks, launch: LaunchConfig, cache=None, host=None,
                       start_v=None, pad: bool = False, hint_v=None, checkpoint=None,
                       devices: tuple = ()):
    """Solve the canonical problem (n1 <= n2) on the device (see :func:`solve_device`).

    Returns ``(row_to_col, v, stats, assigned)`` as NumPy arrays (v, assigned in the work dtype;
    ``assigned[i]`` is the cost of row i's pair).
    """
    cupy = import_cupy()
    with cupy.cuda.Device(device):
        t0 = time.perf_counter()
        loaded = None if checkpoint is None else checkpoint.loaded
        run = _setup(cupy, cuda_cost, n1, n2, integral, blocks, launch, cache,
                     estimate=start_v is None and host is None and loaded is None,
                     devices=devices if blocks is None else ())
        compile_s = time.perf_counter() - t0

        t0 = time.perf_counter()
        # a rectangular problem: v = 0, one exact pass over the real rows (docs/algorithm.md §10)
        rectangular = (start_v is None and hint_v is None and rectangular_from_zero(n1, n2)
                       and not pad)
        plain = not epsilon or rectangular or hint_v is not None
        ck = DeviceCheckpoints(run, checkpoint, "gpu-" + ("rectangular" if rectangular else
                                                     ("eps" if epsilon else "ssp")))
        passes = EpsPasses(run, n1 if rectangular else n2)
        sched = None
        if loaded is not None:  # the prices and the schedule where the checkpoint left them
            eps_upper, eps_lower, start_absmax, sched = ck.restore(passes)
            certified_pick, host_compile_s = None, 0.0
        else:
            eps_upper, eps_lower, certified_pick, host_compile_s = _initial_prices(
                run, start_v, host, not plain and hint_v is None)
            if hint_v is not None:  # a warm start: the exact pass from the user's prices
                run.state.v[:] = cupy.asarray(np.asarray(hint_v, dtype=run.work))
                eps_upper = eps_lower = 0.0
                certified_pick = None
        compile_s += host_compile_s
        cupy.cuda.Device().synchronize()
        time_estimate = time.perf_counter() - t0

        t0 = time.perf_counter()
        if loaded is None:
            start_absmax = float(cupy.abs(run.state.v).max()) if n2 else 0.0
        polish_rows = 0
        if certified_pick is None:
            ck.header.update(eps_upper=float(eps_upper), eps_lower=float(eps_lower),
                             start_absmax=start_absmax)
            _eps_passes(run, passes, eps_upper, eps_lower, sched, ck)
            polish_rows = _polish(run, passes, not plain, start_absmax)
            row_to_col = run.state.row_to_col().get()
        else:  # stage B's assignment is optimal (see the estimate)
            row_to_col = certified_pick
            passes.count, passes.epsilons, passes.rows_evaluated = 1, [0.0], n1
        v_host, assigned = _result(run, row_to_col, host)
        time_solve = time.perf_counter() - t0
    stats = {
        "backend": "gpu",
        "method": "rectangular" if rectangular else ("eps" if epsilon else "ssp"),
        "device": cupy.cuda.runtime.getDeviceProperties(device)["name"].decode(),
        "rows_evaluated": passes.rows_evaluated,
        "passes": passes.count,
        "epsilons": passes.epsilons,
        "eps_upper": float(eps_upper),
        "eps_lower": float(eps_lower),
        "time_estimate_s": time_estimate,
        "time_solve_s": time_solve,
        "compile_s": compile_s,
        "host_syncs_per_augmentation": passes.syncs / max(passes.count * passes.n_aug, 1),
        "grid": run.geo.blocks,
        "threads_per_block": run.geo.threads,
        "devices": [p.device for p in run.parts] or [device],
        "grid_per_device": [p.blocks for p in run.parts] or [run.geo.blocks],
        "column_state_bytes_shared": run.geo.smem,  # 0: the column state is in global memory
    }
    if launch.phase_clocks:  # the diagnostic build's cycles per phase (phase_clocks.cuh)
        stats["phase_cycles"] = passes.phase_cycles.tolist()
    stats.update({
        "estimate_on": "host" if host is not None else "device",
        "certified_by_estimate": certified_pick is not None,
        "polish_rows": polish_rows,
    })
    if run.row_cache is not None:
        stats.update(run.row_cache.stats(), gpu_suspensions=passes.suspensions,
                     cache_replay_mismatches=run.row_cache.mismatches)
    if hint_v is not None:
        stats["warm_start"] = "used"
    stats.update(ck.stats())
    return row_to_col, v_host, stats, assigned


def _setup(cupy, cuda_cost, n1: int, n2: int, integral: bool, blocks, launch: LaunchConfig,
           cache, estimate: bool, devices: tuple = ()) -> Run:
    """The launch, the modules (compiled here, so that ``compile_s`` holds their time: the
    estimate's only where the device estimate runs), the device state and, with ``cache``, the
    device row cache the passes read; with several ``devices`` (the first the current one), the
    partitions of a pass split over them (``split.py``)."""
    split_blocks = None
    if len(devices) > 1:
        from .split import split_blocks as blocks_of
        split_blocks = blocks_of(cupy, devices, n2, launch)
        geo = grid_geometry(cupy, n2, launch, sum(split_blocks))  # the logical grid
    else:
        geo = pass_geometry(cupy, n2, launch, blocks)
    smem_state = bool(geo.smem)
    src_mod = est_mod = None
    if cuda_cost is not None:
        src_mod = pass_module(cupy, cuda_cost.code, integral, geo.threads, geo.unroll, smem_state,
                              launch.phase_clocks)
        if estimate:
            est_mod = estimate_module(cupy, cuda_cost.code, integral, geo.threads)
            est_mod.get_function("estimate_greedy")  # compiles the module
    work = np.int64 if integral else np.float64
    src_args, keep = (None, []) if cuda_cost is None else cost_args(cupy, cuda_cost, n1, n2)
    try:
        log_cap = 0
        if cache is not None:
            from .rowcache import log_capacity
            log_cap = log_capacity(n2)
        state = DeviceState(cupy, n1, n2, geo.blocks, geo.threads, work, log_cap,
                            split_blocks[0] if split_blocks else None)
        row_cache = None
        if cache is not None:
            from .rowcache import DeviceRowCache
            rows = cache.rows if cache.rows is not None else source_rows(cupy, src_mod,
                                                                           src_args)
            row_cache = DeviceRowCache(cupy, n1, n2, work, cache.capacity, cache.policy, rows)
    except cupy.cuda.memory.OutOfMemoryError as exc:
        raise MemoryError(f"backend='gpu': not enough device memory for n={n2} "
                          f"({exc})") from exc
    if row_cache is None:
        pass_mod, pass_args = src_mod, src_args
    else:
        cache_cost = row_cache.cuda_cost()
        pass_mod = pass_module(cupy, cache_cost.code, integral, geo.threads, geo.unroll,
                               smem_state, launch.phase_clocks)
        pass_args, keep_cache = cost_args(cupy, cache_cost, n1, n2)
        keep = keep + keep_cache
    pass_kernel = _pass_kernel(pass_mod, geo)
    run = Run(cupy, n1, n2, integral, work, geo, src_mod, src_args, est_mod, pass_kernel,
               pass_args, state, row_cache, keep)
    if split_blocks is None:
        return run
    from .split import make_partitions, owned_columns

    def make_state(cp, part_blocks):  # a partition's arrays on its device
        return DeviceState(cp, n1, n2, geo.blocks, geo.threads, work, 0, part_blocks)

    def make_kernel(cp):  # the same module, built for a partition's device
        return _pass_kernel(pass_module(cp, cuda_cost.code, integral, geo.threads, geo.unroll,
                                        smem_state, launch.phase_clocks), geo)

    try:
        parts = make_partitions(cupy, state, devices, split_blocks, geo, make_state,
                                make_kernel, cuda_cost, n1, n2, pass_kernel, pass_args)
    except cupy.cuda.memory.OutOfMemoryError as exc:
        raise MemoryError(f"backend='gpu': not enough device memory for n={n2} on the split's "
                          f"devices ({exc})") from exc
    masks = [None] + [owned_columns(cupy, n2, geo.threads, geo.blocks, p) for p in parts[1:]]
    return run._replace(parts=parts, masks=masks)


def _pass_kernel(mod, geo: PassGeometry):
    """``eps_pass`` of a pass module, set up for the launch ``geo``."""
    kernel = mod.get_function("eps_pass")
    # the rest of L1 serves the cost source's own data (points, rows): as much as possible
    kernel.preferred_shared_memory_carveout = 0
    if geo.smem:
        kernel.max_dynamic_shared_size_bytes = geo.smem
    return kernel


def _initial_prices(run: Run, start_v, host, epsilon: bool) -> tuple:
    """The prices the passes start from, into ``run.state.v`` (and the rows' order into
    ``perm``): ``start_v`` (a warm start: one exact pass), the CPU's estimate over rows from the
    host, or the device estimate. Returns ``(eps_upper, eps_lower, certified_pick,
    compile_s)``: ``certified_pick`` is the estimate's assignment where it is already optimal,
    ``compile_s`` the host estimate's compile time."""
    cupy, state = run.cupy, run.state
    if start_v is not None:  # a warm start: one exact pass from the given prices
        state.v[:] = cupy.asarray(np.asarray(start_v, dtype=run.work))
        return 0.0, 0.0, None, 0.0
    if host is not None:  # rows from the host: the CPU's estimate reads them there
        from ..cpu.estimate.driver import estimate_rows
        v0, perm0, pick, eps_upper, eps_lower, optimal, c_s, _ = estimate_rows(
            host.state, run.n1, run.n2, host.row_dtype, integral=run.integral, epsilon=epsilon)
        state.v[:] = cupy.asarray(v0)
        state.perm[:] = cupy.asarray(perm0)
        return eps_upper, eps_lower, pick if optimal else None, c_s
    eps_upper, eps_lower = estimate_device(cupy, run.est_mod, (run.geo.threads,), run.src_args,
                                           state, run.n1, run.n2, run.integral, epsilon)
    return eps_upper, eps_lower, None, 0.0


class EpsPasses:
    """The pass kernel's launches (:meth:`run`) and what they add up to: passes, the ε of each,
    rows evaluated, host synchronisations, suspensions for rows, and in the diagnostic build
    the clock cycles per phase (summed over the passes' last launches: a launch that suspends
    for a cache miss does not report its cycles)."""

    def __init__(self, run: Run, n_aug: int):
        self.r = run
        self.n_aug = n_aug  # rows per pass: n2 (virtual rows too) or n1 (real rows only)
        self.count, self.epsilons, self.rows_evaluated = 0, [], 0
        self.syncs = self.suspensions = 0
        self.phase_cycles = np.zeros(4)
        self.in_pass = False    # the next run goes on inside a pass (a checkpoint's state)
        self.ck = None  # DeviceCheckpoints: stop requests during a launch (checkpoints, Ctrl-C)
        self._flag = None       # pinned host word and stream that write the kernel's stop flag

    #: a Ctrl-C the kernel did not see before its pass ended, for the caller to raise once
    #: the pass is counted (``run(defer_interrupt=True)``)
    interrupt_after = False

    def run(self, eps_w, reverse: bool, defer_interrupt: bool = False) -> tuple:
        """One pass: one launch, plus one per suspension for a missing row, and one per stop
        for a checkpoint. Returns the kernel's (int64, float64) outputs; raises if the
        problem is infeasible. A Ctrl-C that comes too late to stop the pass raises
        KeyboardInterrupt after it, or, with ``defer_interrupt``, sets ``interrupt_after``: the
        schedule first counts the finished pass, so that its checkpoint resumes after it (a
        checkpoint of the state before it, with the prices after it, resumed down another
        path)."""
        r, st = self.r, self.r.state
        def args(s):  # the kernel's arguments from the perm on (those of the state s)
            return (s.perm, np.int32(reverse), np.int64(self.n_aug), eps_w, s.v, s.d, s.pred,
                    s.col_open, s.owner, s.cpred, s.cmatch, s.rec, s.xslots, s.out_f64,
                    s.out_i64, s.progress, s.resume, s.susp_d, s.alog, np.int64(s.log_cap))

        keep = self.in_pass  # the launch goes on inside a pass (a checkpoint's or a stop's)
        self.in_pass = False
        if not r.parts:
            st.reset_pass(keep_assignment=keep)
        while True:
            if r.parts:  # split over devices (split.py): no suspension for rows
                from .split import finish_split, launch_split
                launch_split(r.cupy, r.parts, r.geo, args, keep)
            else:
                # one launch: the logical grid is the launch's own (no peers)
                r.pass_kernel((r.geo.blocks,), (r.geo.threads,), (
                    *r.pass_args, *args(st), np.uint32(0), np.uint32(r.geo.blocks),
                    np.uint64(0), np.int32(0)), shared_mem=r.geo.smem)
            if self.ck is not None and self.ck.active():
                self._watch(st, r.parts[0].stream if r.parts else None)
            stop = self._stop  # asked during this launch or an earlier one of the pass
            if r.parts:
                finish_split(r.cupy, r.parts, r.geo, r.masks)
            out_i = st.out_i64.get()  # one host sync per pass (or per miss)
            self.syncs += 1
            if out_i[0] == STATUS_SUSPENDED:  # (a stop asked for stays asked for)
                self.suspensions += 1
                self._serve(st)
                continue
            if out_i[0] == STATUS_INTERRUPTED and stop is not None:
                self._stop = None
                # stopped between two augmentations at our request: the row cache takes the
                # accesses logged so far, the slot exchange starts afresh, the state is saved
                if r.row_cache is not None:
                    self._serve(st)
                st.progress[2:3].fill(0)
                st.xslots.fill(0)
                self.ck.stopped(self, stop)  # a checkpoint; raises KeyboardInterrupt on Ctrl-C
                keep = True  # a split pass's partitions take the stop's state again
                continue
            break
        stop, self._stop = self._stop, None
        if stop is not None:  # the pass ended before the kernel saw the request
            st.progress[2:3].fill(0)
            if stop == "interrupted":  # Ctrl-C: stop after the pass
                if not defer_interrupt:
                    raise KeyboardInterrupt
                self.interrupt_after = True
        raise_for_status(out_i[0], "gpu")
        return out_i, st.out_f64.get()

    def _watch(self, st: DeviceState, stream=None) -> None:
        """Wait for the launch (on ``stream``, default the current one) while watching the
        clock and Ctrl-C; ask the kernel to stop (``progress[2]``, written through the copy
        engine while it runs) when a checkpoint is due or Ctrl-C comes, and remember why
        (``_stop``)."""
        cupy = self.r.cupy
        done = cupy.cuda.Event()
        done.record(stream)
        t0 = time.monotonic()
        while not done.done:
            try:
                time.sleep(min(0.02, 0.1 * (time.monotonic() - t0) + 1e-4))
            except KeyboardInterrupt:
                self._request_stop(st, "interrupted")
                continue
            if self._stop is None and self.ck.due():
                self._request_stop(st, "interval")

    _stop = None  # why the kernel was asked to stop, until the stop is handled

    def _request_stop(self, st: DeviceState, why: str) -> None:
        if self._stop is not None and why != "interrupted":
            return
        self._stop = why
        cupy = self.r.cupy
        if self._flag is None:
            self._flag_mem = cupy.cuda.alloc_pinned_memory(8)
            self._flag = np.frombuffer(self._flag_mem, np.int64, 1)
            self._stream = cupy.cuda.Stream(non_blocking=True)
        self._flag[0] = 1
        rt = cupy.cuda.runtime
        rt.memcpyAsync(st.progress.data.ptr + 2 * 8, self._flag.ctypes.data, 8,
                       rt.memcpyHostToDevice, self._stream.ptr)

    def _serve(self, st: DeviceState) -> None:
        """The kernel suspended for a row (or a full access log): the row cache replays the
        log and fills the row; the resume record tells the kernel where it went."""
        head = st.resume_log[:st.head_len].get()  # the record and the log's start
        n_log = int(head[R_LOGN])
        log = head[RESUME:RESUME + n_log]
        if n_log > len(log):
            log = st.alog[:n_log].get()
        need = int(head[R_NEED])
        slot, evicted = self.r.row_cache.serve(need, log)
        st.resume[R_FILL_SLOT:R_EVICT + 1].set(np.array([slot, evicted], np.int64))


def _eps_passes(run: Run, passes: EpsPasses, eps_upper: float, eps_lower: float,
                sched: dict | None = None, ck: DeviceCheckpoints | None = None) -> None:
    """The ε schedule from the estimate's bounds down to the exact pass (ε = 0, marked -1 here),
    each pass's ε from the last two passes' totals (``next_eps``, as on the CPU). ``sched``: the
    schedule's state to go on from (a checkpoint's); ``ck`` writes checkpoints between passes
    and on Ctrl-C (which the host sees once the pass under way has ended)."""
    v, blocks = run.state.v, run.geo.blocks  # v: work dtype, on the device
    s = sched or dict(eps=float(eps_upper), first=True, second=False,
                      reverse=float(eps_upper) == 0.0, total_d=0.0, total_eps=0.0)
    if ck is not None and sched is None:
        ck.save(passes, s, "estimate")
    if ck is not None:
        passes.ck = ck
    try:
        while s["eps"] >= 0.0 or s.get("in_pass") is not None:
            if s.get("in_pass") is not None:  # go on inside the pass a checkpoint stopped
                eps = s.pop("in_pass")
                passes.in_pass = True
            else:
                eps = float(next_eps(s["eps"], float(eps_lower), s["total_d"],
                                     s["total_eps"], s["first"], s["second"], run.n2,
                                     run.integral))
                if eps == 0.0:
                    eps = -1.0
            if ck is not None:
                ck.current = (s, eps)
            out_i, out_f = passes.run(run.work(max(eps, 0.0)), s["reverse"],
                                      defer_interrupt=True)
            passes.epsilons.append(max(eps, 0.0))
            passes.count += 1
            passes.rows_evaluated += int(out_f[0])
            passes.phase_cycles += out_f[3 + blocks:]
            if eps > 0.0:
                v -= v.max()
            s = dict(eps=eps, first=False, second=s["first"], reverse=not s["reverse"],
                     total_d=float(sum(out_f[3:3 + blocks])),  # per-block sums, block order
                     total_eps=float(out_f[2]))
            if passes.interrupt_after:  # Ctrl-C during the pass just counted: stop after
                passes.interrupt_after = False  # it, unless it was the last (the exact pass:
                if s["eps"] >= 0.0:             # the solve is done but for its checks)
                    raise KeyboardInterrupt
            if ck is not None and s["eps"] >= 0.0 and ck.due():
                ck.save(passes, s, "interval")
    except KeyboardInterrupt:
        if ck is not None and not ck.saved_stop:
            ck.save(passes, s, "interrupted")
        raise
    finally:
        passes.ck = None


def _polish(run: Run, passes: EpsPasses, epsilon: bool, start_absmax: float) -> int:
    """One more exact pass where float prices need it (as on the CPU,
    ``epslap.cpu.solver.solve_rows``); returns its rows evaluated (0: none)."""
    v = run.state.v
    if run.integral or (epsilon and not prices_need_polish(start_absmax, v.get())):
        return 0
    v -= v.max()
    out_i, out_f = passes.run(run.work(0.0), True)
    polish_rows = int(out_f[0])
    passes.count += 1
    passes.epsilons.append(0.0)
    passes.rows_evaluated += polish_rows
    return polish_rows


def _result(run: Run, row_to_col, host) -> tuple:
    """``(v, assigned)`` on the host: the prices, and the cost of every real row's pair (read on
    the host for rows from there, else gathered on the device)."""
    cupy = run.cupy
    v_host = run.state.v.get()
    if host is not None:
        from ..cpu.duals import assigned_costs
        return v_host, assigned_costs(host.state, run.n2, host.row_dtype, row_to_col, run.work)
    assigned_dev = cupy.empty(run.n1, dtype=run.work)
    gather = run.src_mod.get_function("gather_costs")
    gather(wide_grid(cupy), (256,), (*run.src_args, cupy.asarray(row_to_col), assigned_dev,
                                     np.int64(run.n1)))
    return v_host, assigned_dev.get()
