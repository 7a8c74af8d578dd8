"""Host driver of the GPU backend (CuPy): the same algorithm as the CPU backend, device-resident.

One cooperative kernel launch per estimation sweep and per pass (``eps_pass.cu``); between
passes the host applies the ε schedule (``epslap._schedule.next_eps``, as the CPU's kernel
does). Host synchronisations per augmentation = passes / augmentations (reported in ``stats``).
"""
from __future__ import annotations

import os
import time
from typing import NamedTuple

import numpy as np

from costfns.rows import fill_rows

from .._schedule import eps_bounds, next_eps
from .._status import STATUS_SUSPENDED, cuda_defines, raise_for_status
from .._validate import check_int_range
from ..certificate import prices_need_polish
from ..errors import GPUUnavailableError

THREADS = 512
_SRC = os.path.join(os.path.dirname(__file__), "eps_ssp.cu")
_SRC_ESTIMATE = os.path.join(os.path.dirname(__file__), "estimate.cu")
_MODULES: dict = {}  # (device, cost code, integral) -> RawModule, compiled once per process


def import_cupy():
    """CuPy and a usable device, or a clear error naming the extra to install."""
    try:
        import cupy
    except ImportError as exc:
        raise GPUUnavailableError(
            "backend='gpu' needs CuPy: pip install 'epslap[gpu-cuda12]' (CUDA 12) or "
            "'epslap[gpu-cuda13]' (CUDA 13)") from exc
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            raise GPUUnavailableError("backend='gpu': CuPy sees no CUDA device")
    except cupy.cuda.runtime.CUDARuntimeError as exc:
        raise GPUUnavailableError(f"backend='gpu': no usable CUDA device ({exc})") from exc
    return cupy


# Up to this many columns the pass kernel runs on at most 32 blocks of 512 threads, where the
# blocks agree on each step through one warp per block (eps_ssp.cu, grid_best's short path);
# beyond it every multiprocessor gets a block. Measured on an H100, geometric on demand, µs per
# step, 32 x 512 against 132 x 256: 3.08 / 3.15 (random, n = 32000), 4.18 / 3.76 (n = 48000),
# 4.74 / 4.03 (n = 64000); at n = 128000 32 x 512 took 7.84 µs against 5.73 before the
# large-grid exchange polled only the slots' heads (benchmarks/RESULTS.md, session 15).
SHORT_PATH_MAX_N2 = 32768

# 32-bit words of one exchange slot (eps_ssp.cu, Slot)
SLOT_WORDS = 32

# the pass kernel's resume record (eps_ssp.cu, "rows from a device row cache"): its length and
# the fields the host reads or writes
_RESUME, _R_NEED, _R_LOGN, _R_FILL_SLOT, _R_EVICT = 32, 1, 13, 16, 17


def threads_for() -> int:
    """Threads per block (EPSLAP_GPU_THREADS overrides): 512 at every size. On the large grid
    (one block per multiprocessor) 512 threads beat 256 once a thread owns about two columns or
    more: NVIDIA H100, geometric on demand, µs per step 3.52 against 3.78 (n = 64000), 4.13
    against 4.56 (n = 128000); NVIDIA H200, n = 256000, 155.8 s against 205.1 s. 1024 threads
    cap the registers at 64 and spill (4.40 µs at n = 128000). On the short path (32 blocks)
    132 x 512 loses: 3.87 against 3.24 µs (random dense, n = 32000)."""
    forced = os.environ.get("EPSLAP_GPU_THREADS")
    if forced:
        return int(forced)
    return THREADS


def blocks_for(n2: int, sms: int) -> int:
    """Blocks of the cooperative kernels (EPSLAP_GPU_BLOCKS overrides): at most one per
    multiprocessor, all co-resident as a cooperative launch requires; 32 on the short path."""
    forced = os.environ.get("EPSLAP_GPU_BLOCKS")
    if forced:
        return int(forced)
    return min(sms, 32) if n2 <= SHORT_PATH_MAX_N2 else sms


def _wide_grid(cupy) -> tuple:
    """Grid of the grid-stride helper kernels: 4 blocks of 256 threads per multiprocessor, which
    stays within what a cooperative launch allows (the module is built with cooperative groups, so
    CuPy launches every kernel of it cooperatively)."""
    return (4 * cupy.cuda.Device().attributes["MultiProcessorCount"],)


def unroll_for(n2: int, n_blocks: int, threads: int) -> int:
    """Columns per thread whose loads one scan issues together (eps_pass's UNROLL): all of a
    thread's columns up to 4, so that a step waits for one memory latency, not one per column."""
    return max(1, min(4, -(-n2 // (n_blocks * threads))))


# bytes per column of the pass kernel's column state in shared memory (eps_ssp.cu, SMEM_STATE):
# v, d and the matched cost (8 each), owner and pred (int32), the open flag
SMEM_BYTES_PER_COLUMN = 33


def smem_state_bytes(cupy, n2: int, n_blocks: int, threads: int) -> int:
    """Dynamic shared memory of the pass kernel when its column state goes to shared memory
    (one slot per column of every thread of a block), else 0: the state stays in global memory.

    Shared memory is used from 4 columns per thread on, where it fits: geometric on demand on an
    NVIDIA H100, µs per step shared / global, 4.41 / 4.59 at n = 256000 (4 columns per thread)
    but 3.87 / 3.65 at n = 128000 (2 columns per thread). EPSLAP_GPU_SMEM_STATE=1 uses it
    wherever it fits, =0 never."""
    forced = os.environ.get("EPSLAP_GPU_SMEM_STATE")
    per_thread = -(-n2 // (n_blocks * threads))
    if forced == "0" or (forced != "1" and per_thread < 4):
        return 0
    slots = per_thread * threads
    need = slots * SMEM_BYTES_PER_COLUMN
    # the opt-in limit, less what the kernel's static shared memory takes (below 4 KiB)
    limit = _smem_optin(cupy) - 4096
    return need if need <= limit else 0


def exchange_slots(cupy, n_blocks: int, threads: int):
    """Zeroed slots of the pass kernel's exchange (eps_ssp.cu, Slot): two buffers, room for one
    slot per warp of every block."""
    return cupy.zeros(2 * n_blocks * max(threads // 32, 1) * SLOT_WORDS, dtype=np.uint32)


def _module(cupy, code: str, integral: bool, threads: int = THREADS, unroll: int = 1,
            smem_state: bool = False):
    phase_clocks = bool(os.environ.get("EPSLAP_GPU_PHASE_CLOCKS"))  # diagnostics (gpu_sweep.py)
    key = (cupy.cuda.Device().id, code, integral, threads, unroll, smem_state, phase_clocks)
    mod = _MODULES.get(key)
    if mod is None:
        header = (cuda_defines() + f"#define THREADS {threads}\n#define UNROLL {unroll}\n"
                  f"#define SLOT_WORDS {SLOT_WORDS}\n#define SMEM_STATE {int(smem_state)}\n"
                  f"#define LIST_K {LIST_K}\n#define SUB_ROWS {SUB_ROWS}\n"
                  + ("#define PHASE_CLOCKS\n" if phase_clocks else "")
                  + ("typedef long long cost_t;\n#define COST_INF (1LL << 62)\n" if integral else
                     "typedef double cost_t;\n#define COST_INF (1.0 / 0.0)\n"))
        with open(_SRC) as fh:
            body = fh.read()
        with open(_SRC_ESTIMATE) as fh:
            estimate = fh.read()
        marker = "// ---- virtual rows"
        cut = body.index(marker)
        src = header + body[:cut] + code + "\n" + body[cut:] + estimate
        mod = cupy.RawModule(code=src, options=("--std=c++17", "--fmad=false"),
                             enable_cooperative_groups=True)
        _MODULES[key] = mod
    return mod


def _cost_args(cupy, cuda_cost, n1, n2):
    """Pack a CudaCost into the kernel's CostArgs struct (4 pointers, 4 doubles, 4 int64, n1, n2)."""
    arrays = [a if isinstance(a, cupy.ndarray) else cupy.asarray(np.ascontiguousarray(a))
              for a in cuda_cost.arrays]
    ptrs = [np.uint64(a.data.ptr) for a in arrays] + [np.uint64(0)] * (4 - len(arrays))
    floats = [np.float64(x) for x in cuda_cost.floats] + [np.float64(0)] * (4 - len(cuda_cost.floats))
    ints = [np.int64(x) for x in cuda_cost.ints] + [np.int64(0)] * (4 - len(cuda_cost.ints))
    return tuple(ptrs + floats + ints + [np.int64(n1), np.int64(n2)]), arrays


def solve_device(cuda_cost, n1: int, n2: int, *, integral: bool, epsilon: bool = True,
                 device: int = 0, cache=None, host=None, check_range: bool = False,
                 start_v=None):
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

    Every result is checked against its dual certificate on the device. Should a check ever fail
    (a defect: the multi-block race of 2026-11-22 is fixed and the GPU tests assert that no rerun
    happens), the solve is repeated with one block, which serialises the search, and
    ``stats["gpu_single_block_rerun"]`` says so; nothing uncertified is ever returned.
    """
    if check_range and integral and cuda_cost is not None:
        _check_device_range(cuda_cost, n1, n2, device)
    out = _solve_device_once(cuda_cost, n1, n2, integral=integral, epsilon=epsilon,
                             device=device, blocks=None, cache=cache, host=host, start_v=start_v)
    if _certified(cuda_cost, n1, n2, integral, out, device, host):
        out[2]["gpu_single_block_rerun"] = False
        return out
    first = out[2]
    out = _solve_device_once(cuda_cost, n1, n2, integral=integral, epsilon=epsilon,
                             device=device, blocks=1, cache=cache, host=host, start_v=start_v)
    out[2]["gpu_single_block_rerun"] = True
    out[2]["time_failed_attempt_s"] = first["time_estimate_s"] + first["time_solve_s"]
    out[2]["failed_attempt_violation"] = first["certificate_max_violation"]
    out[2]["failed_attempt_rows_evaluated"] = first["rows_evaluated"]
    if not _certified(cuda_cost, n1, n2, integral, out, device, host):
        raise RuntimeError("backend='gpu': the result failed its optimality certificate; "
                           "please report this problem (use backend='cpu' meanwhile)")
    return out


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


class _StateRows:
    """``rows(start, stop)`` of a host state, for :func:`epslap.verify`."""

    def __init__(self, state, shape, dtype):
        self.state, self.shape, self.dtype = state, shape, dtype

    def rows(self, start, stop):
        out = np.empty((stop - start, self.shape[1]), dtype=self.dtype)
        fill_rows(self.state, np.int64(start), out)
        return out


def _check_device_range(cuda_cost, n1: int, n2: int, device: int) -> None:
    """Integer costs of a device form within ``check_int_range``'s rule (else ValueError)."""
    cupy = import_cupy()
    with cupy.cuda.Device(device):
        threads = threads_for()  # the solve's configuration: its module, compiled once
        n_blocks = blocks_for(n2, cupy.cuda.Device(device).attributes["MultiProcessorCount"])
        mod = _module(cupy, cuda_cost.code, True, threads, unroll_for(n2, n_blocks, threads),
                      bool(smem_state_bytes(cupy, n2, n_blocks, threads)))
        args, keep = _cost_args(cupy, cuda_cost, n1, n2)
        lohi = cupy.asarray(np.array([2**63 - 1, -2**63], np.int64))
        mod.get_function("cost_range")(_wide_grid(cupy), (256,), (*args, lohi))
        lo, hi = (int(x) for x in lohi.get())
        del keep
    check_int_range(lo, hi, (n1, n2))


def _certified(cuda_cost, n1, n2, integral, out, device, host=None) -> bool:
    """The dual certificate of the result, by the rule of :func:`epslap.verify` (exact for
    integers; a tolerance per entry from its own terms for floats): u is derived from the
    assignment, so the assigned pairs have no slack and dual feasibility plus the longer side's
    duals decide. On the device, or on the host for rows that come from there (one more read of
    every row)."""
    from ..certificate import RTOL, verify
    row_to_col, v, stats, assigned = out
    if host is not None:
        u = assigned - v[row_to_col]
        shift = v.max()
        rep = verify(_StateRows(host.state, (n1, n2), host.row_dtype), np.arange(n1), row_to_col,
                     u + shift, v - shift)
        stats["certificate_max_violation"] = rep["max_violation"]
        return bool(rep["optimal"])
    cupy = import_cupy()
    rtol = 0.0 if integral else RTOL
    with cupy.cuda.Device(device):
        threads, n_blocks = stats["threads_per_block"], stats["grid"]  # the solve's module
        mod = _module(cupy, cuda_cost.code, integral, threads, unroll_for(n2, n_blocks, threads),
                      bool(smem_state_bytes(cupy, n2, n_blocks, threads)))
        args, keep = _cost_args(cupy, cuda_cost, n1, n2)
        worst = cupy.zeros(2, dtype=np.float64)
        mod.get_function("check_duals")(_wide_grid(cupy), (256,), (*args, cupy.asarray(row_to_col),
                                                          cupy.asarray(v), np.float64(rtol),
                                                          worst))
        violation, excess = (float(x) for x in worst.get())
        del keep
    ok = excess <= 0.0
    if n1 < n2:  # columns left to virtual rows carry the largest price (their dual is 0): what
        # they miss of it is duality gap, held to the gap's tolerance in ``verify``
        free = np.ones(n2, bool)
        free[row_to_col] = False
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


def _solve_device_once(cuda_cost, n1: int, n2: int, *, integral: bool, epsilon: bool,
                       device: int, blocks, cache=None, host=None, start_v=None):
    """Solve the canonical problem (n1 <= n2) on the device (see :func:`solve_device`).

    Returns ``(row_to_col, v, stats, assigned)`` as NumPy arrays (v, assigned in the work dtype;
    ``assigned[i]`` is the cost of row i's pair).
    """
    cupy = import_cupy()
    with cupy.cuda.Device(device):
        t0 = time.perf_counter()
        threads = threads_for()
        dev = cupy.cuda.Device(device)
        sms = dev.attributes["MultiProcessorCount"]
        n_blocks = int(blocks or blocks_for(n2, sms))
        if not 1 <= n_blocks <= sms:
            raise ValueError(f"backend='gpu': {n_blocks} blocks requested; 1 to {sms} are "
                             "possible on this device")
        unroll = unroll_for(n2, n_blocks, threads)
        smem = smem_state_bytes(cupy, n2, n_blocks, threads)
        src_mod = (None if cuda_cost is None
                   else _module(cupy, cuda_cost.code, integral, threads, unroll, bool(smem)))
        grid = (n_blocks,)
        block = (threads,)
        work = np.int64 if integral else np.float64
        src_args, keep = (None, []) if cuda_cost is None else _cost_args(cupy, cuda_cost, n1, n2)
        try:
            log_cap = 0
            if cache is not None:
                from .rowcache import log_capacity
                log_cap = log_capacity(n2)
            state = _DeviceState(cupy, n1, n2, grid[0], threads, work, log_cap)
            row_cache = None
            if cache is not None:
                from .rowcache import DeviceCostRows, DeviceRowCache
                rows = cache.rows
                if rows is None:
                    rows = DeviceCostRows(src_mod.get_function("fill_row"), src_args,
                                          _wide_grid(cupy))
                row_cache = DeviceRowCache(cupy, n1, n2, work, cache.capacity, cache.policy,
                                           rows)
        except cupy.cuda.memory.OutOfMemoryError as exc:
            raise MemoryError(f"backend='gpu': not enough device memory for n={n2} "
                              f"({exc})") from exc
        if row_cache is None:
            pass_mod, pass_args = src_mod, src_args
        else:
            cache_cost = row_cache.cuda_cost()
            pass_mod = _module(cupy, cache_cost.code, integral, threads, unroll, bool(smem))
            pass_args, keep_cache = _cost_args(cupy, cache_cost, n1, n2)
            keep = keep + keep_cache
        pass_kernel = pass_mod.get_function("eps_pass")
        # the rest of L1 serves the cost source's own data (points, rows): as much as possible
        pass_kernel.preferred_shared_memory_carveout = 0
        if smem:
            pass_kernel.max_dynamic_shared_size_bytes = smem
        compile_s = time.perf_counter() - t0

        t0 = time.perf_counter()
        certified_pick = None
        if start_v is not None:  # a warm start: one exact pass from the given prices
            state.v[:] = cupy.asarray(np.asarray(start_v, dtype=work))
            eps_upper = eps_lower = 0.0
        elif host is not None:  # rows from the host: the CPU's estimate reads them there
            from ..cpu.solver import estimate_rows
            v0, perm0, pick, eps_upper, eps_lower, certified, c_s, _ = estimate_rows(
                host.state, n1, n2, host.row_dtype, integral=integral, epsilon=epsilon)
            compile_s += c_s
            state.v[:] = cupy.asarray(v0)
            state.perm[:] = cupy.asarray(perm0)
            if certified:
                certified_pick = pick
        else:
            eps_upper, eps_lower = _estimate_device(cupy, src_mod, block, src_args, state, n1,
                                                    n2, integral, epsilon)
        cupy.cuda.Device().synchronize()
        time_estimate = time.perf_counter() - t0

        t0 = time.perf_counter()
        v = state.v  # work dtype, on the device
        eps, first, second = float(eps_upper), True, False
        reverse = eps == 0.0
        passes, epsilons, rows_evaluated, syncs, suspensions = 0, [], 0, 0, 0
        total_d = total_eps = 0.0
        # EPSLAP_GPU_PHASE_CLOCKS builds only (see eps_pass): summed over the passes' last
        # launches (a launch that suspends for a cache miss does not report its cycles)
        phase_cycles = np.zeros(4)
        def run_pass(eps_w, reverse):
            """One pass: one launch, plus one per suspension for a missing row. Returns the
            kernel's (int64, float64) outputs; raises if the problem is infeasible."""
            nonlocal syncs, suspensions
            state.reset_pass()
            while True:
                pass_kernel(grid, block, (*pass_args, state.perm, np.int32(reverse), eps_w, v,
                                          state.d, state.pred, state.col_open, state.owner,
                                          state.cpred, state.cmatch, state.rec, state.xslots,
                                          state.out_f64, state.out_i64,
                                          state.progress, state.resume, state.susp_d,
                                          state.alog, np.int64(log_cap)), shared_mem=smem)
                out_i = state.out_i64.get()  # one host sync per pass (or per miss)
                syncs += 1
                if out_i[0] != STATUS_SUSPENDED:
                    break
                suspensions += 1
                head = state.resume_log[:state.head_len].get()  # the record and the log's start
                n_log = int(head[_R_LOGN])
                log = head[_RESUME:_RESUME + n_log]
                if n_log > len(log):
                    log = state.alog[:n_log].get()
                need = int(head[_R_NEED])
                slot, evicted = row_cache.serve(need, log)
                state.resume[_R_FILL_SLOT:_R_EVICT + 1].set(np.array([slot, evicted], np.int64))
            raise_for_status(out_i[0], "gpu")
            return out_i, state.out_f64.get()

        start_absmax = float(cupy.abs(v).max()) if n2 else 0.0
        while eps >= 0.0 and certified_pick is None:
            eps = float(next_eps(eps, float(eps_lower), total_d, total_eps, first, second, n2,
                                  integral))
            if eps == 0.0:
                eps = -1.0
            epsilons.append(max(eps, 0.0))
            out_i, out_f = run_pass(work(max(eps, 0.0)), reverse)
            passes += 1
            rows_evaluated += int(out_f[0])
            total_d = float(sum(out_f[3:3 + grid[0]]))  # per-block partial sums, in block order
            total_eps = float(out_f[2])
            phase_cycles += out_f[3 + grid[0]:]
            if eps > 0.0:
                v -= v.max()
            second, first, reverse = first, False, not reverse
        polish_rows = 0
        if certified_pick is None and not integral and (
                not epsilon or prices_need_polish(start_absmax, v.get())):
            v -= v.max()  # as on the CPU (``epslap.cpu.solver.solve_rows``)
            out_i, out_f = run_pass(work(0.0), True)
            polish_rows = int(out_f[0])
            passes += 1
            epsilons.append(0.0)
            rows_evaluated += polish_rows
        if certified_pick is not None:  # stage B's assignment is optimal (see _estimate)
            row_to_col = certified_pick
            passes, epsilons, rows_evaluated = 1, [0.0], n1
        else:
            row_to_col = state.row_to_col().get()
        v_host = v.get()
        if host is not None:
            from ..cpu.solver import assigned_costs
            assigned = assigned_costs(host.state, n2, host.row_dtype, row_to_col, work)
        else:
            assigned_dev = cupy.empty(n1, dtype=work)
            gather = src_mod.get_function("gather_costs")
            gather(_wide_grid(cupy), (256,), (*src_args, cupy.asarray(row_to_col),
                                              assigned_dev, np.int64(n1)))
            assigned = assigned_dev.get()
        time_solve = time.perf_counter() - t0
    stats = {
        "backend": "gpu",
        "device": cupy.cuda.runtime.getDeviceProperties(device)["name"].decode(),
        "rows_evaluated": rows_evaluated,
        "passes": passes,
        "epsilons": epsilons,
        "eps_upper": float(eps_upper),
        "eps_lower": float(eps_lower),
        "time_estimate_s": time_estimate,
        "time_solve_s": time_solve,
        "compile_s": compile_s,
        "host_syncs_per_augmentation": syncs / max(passes * n2, 1),
        "grid": grid[0],
        "threads_per_block": threads,
        "column_state_bytes_shared": smem,   # 0: the pass kernel's column state is in global memory
        "phase_cycles": phase_cycles.tolist(),
        "estimate_on": "host" if host is not None else "device",
        "certified_by_estimate": certified_pick is not None,
        "polish_rows": polish_rows,
    }
    if row_cache is not None:
        stats.update(row_cache.stats(), gpu_suspensions=suspensions,
                     cache_replay_mismatches=row_cache.mismatches)
    del keep
    return row_to_col, v_host, stats, assigned


def device_bytes(n1: int, n2: int, n_blocks: int, smem_optin: int = 0, sms: int = 0) -> int:
    """Device memory the search allocates for an n1 x n2 problem (n1 <= n2) on ``n_blocks``
    blocks: the O(n2) state of the passes and of the estimate (one column: v, d, pred, owner,
    cpred, cmatch, vf, best1, best2, a copy of v in stage E: 8 bytes each, two flags), the O(n1)
    row arrays (perm, pick, regret, rmin, the result), each block's int32 record of an
    augmentation's steps and the greedy sweeps' row lists (and each block's bitmap of taken
    columns where it does not fit in ``smem_optin`` bytes of shared memory: one per
    multiprocessor, ``sms``, which defaults to ``n_blocks``). Mirrors :class:`_DeviceState`;
    CuPy's temporaries (a few O(n) arrays) come on top."""
    bits_global = not greedy_smem(n2, smem_optin)[1]
    per_col = 10 * 8 + 2
    per_row = 8 * 5
    record = n_blocks * 3 * (n2 + 1) * 4
    fixed = (2 * max(n_blocks, 1024) * 6 * 8 + 2 * n_blocks * 32 * 4 * SLOT_WORDS
             + 8 * (n_blocks + 16)
             + 8 * n_blocks * 1024 + 128  # ... and a suspended pass's state
             + min(n1, GREEDY_CHUNK_ROWS) * (LIST_K * 12 + 4))
    bitmaps = 4 * (sms or n_blocks) * -(-n2 // 32) if bits_global else 0
    return per_col * n2 + per_row * n1 + record + fixed + bitmaps


def search_bytes(cupy, n1: int, n2: int, device=None) -> int:
    """:func:`device_bytes` of an n1 x n2 problem (either orientation) on ``device`` (default:
    the current one), with that device's grid, opt-in shared memory and multiprocessors: what
    a memory budget must leave to the search (epslap.gpu.api checks it)."""
    lo, hi = sorted((int(n1), int(n2)))
    sms = cupy.cuda.Device(device).attributes["MultiProcessorCount"]
    return device_bytes(lo, hi, blocks_for(hi, sms), _smem_optin(cupy, device), sms)


class _DeviceState:
    """Device arrays of one solve (all O(n2))."""

    def __init__(self, cupy, n1, n2, n_blocks, threads, work, log_cap=0):
        self.cupy, self.n1, self.n2 = cupy, n1, n2
        self.v = cupy.zeros(n2, dtype=work)
        self.d = cupy.empty(n2, dtype=work)
        self.pred = cupy.empty(n2, dtype=np.int64)
        self.col_open = cupy.ones(n2, dtype=np.uint8)
        self.owner = cupy.empty(n2, dtype=np.int64)
        self.cpred = cupy.empty(n2, dtype=work)   # c[pred[j]][j] and c[owner[j]][j]
        self.cmatch = cupy.empty(n2, dtype=work)
        self.perm = cupy.arange(n1, dtype=np.int64)
        # pass kernel: per block, the record of an augmentation's steps; the exchange slots
        self.rec = cupy.empty(n_blocks * 3 * (n2 + 1), dtype=np.int32)
        self.xslots = exchange_slots(cupy, n_blocks, threads)
        # Cand / Pair slots: 2 * n_blocks entries of at most 48 bytes each
        self.slots = cupy.empty(2 * max(n_blocks, 1024) * 6, dtype=np.float64)
        self.out_f64 = cupy.zeros(3 + n_blocks + 4, dtype=np.float64)  # ... + phase clocks
        self.out_i64 = cupy.zeros(2, dtype=np.int64)
        self.progress = cupy.zeros(4, dtype=np.int64)
        # a suspended pass (device row cache): its loop state, then the access log (one
        # allocation: a single copy reads the record and the log's start); each thread's sum
        self.resume_log = cupy.zeros(_RESUME + log_cap, dtype=np.int64)
        self.resume = self.resume_log[:_RESUME]
        self.alog = self.resume_log[_RESUME:]
        self.head_len = _RESUME + min(log_cap, 224)
        self.susp_d = cupy.zeros(n_blocks * threads, dtype=np.float64)
        # estimation
        self.vf = cupy.zeros(n2, dtype=np.float64)
        self.best1 = cupy.empty(n2, dtype=np.float64)
        self.best2 = cupy.empty(n2, dtype=np.float64)
        self.flag = cupy.zeros(n2, dtype=np.uint8)
        self.pick = cupy.full(n1, -1, dtype=np.int64)
        self.regret = cupy.empty(n1, dtype=np.float64)
        self.rmin = cupy.empty(n1, dtype=np.float64)
        self.sums = cupy.zeros(3, dtype=np.float64)
        self.sms = cupy.cuda.Device().attributes["MultiProcessorCount"]  # the estimate's grid
        chunk = min(n1, GREEDY_CHUNK_ROWS)  # the greedy sweeps' row lists, a chunk at a time
        self.list_val = cupy.empty(chunk * LIST_K, dtype=np.float64)
        self.list_col = cupy.empty(chunk * LIST_K, dtype=np.uint32)
        self.list_len = cupy.empty(chunk, dtype=np.int32)
        # estimate_greedy's dynamic shared memory; whether its bitmaps of taken columns are there
        self.greedy_shared, self.bits_in_smem = greedy_smem(n2, _smem_optin(cupy))
        words = 0 if self.bits_in_smem else self.sms * -(-n2 // 32)
        self.taken_bits = cupy.empty(max(words, 1), dtype=np.uint32)  # else in shared memory

    def reset_pass(self):
        self.resume.fill(0)
        self.owner.fill(-1)
        self.col_open.fill(1)
        self.xslots.fill(0)
        self.out_f64.fill(0)
        self.out_i64.fill(0)

    def row_to_col(self):
        """Column of every real row, from the columns' owners (on the device)."""
        cupy = self.cupy
        cols = cupy.arange(self.n2, dtype=np.int64)
        real = (self.owner >= 0) & (self.owner < self.n1)
        out = cupy.full(self.n1, -1, dtype=np.int64)
        out[self.owner[real]] = cols[real]
        return out


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


def _smem_optin(cupy, device=None) -> int:
    return cupy.cuda.Device(device).attributes["MaxSharedMemoryPerBlockOptin"]


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
        mod.get_function("estimate_colstats")(_wide_grid(cupy), (256,),
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


def materialise(source, device: int = 0):
    """The dense matrix of a cost source, computed on the device (a CuPy array)."""
    cupy = import_cupy()
    n1, n2 = source.shape
    integral = np.dtype(source.dtype).kind == "i"
    with cupy.cuda.Device(device):
        cc = source.cuda_source()
        mod = _module(cupy, cc.code, integral)
        args, keep = _cost_args(cupy, cc, n1, n2)
        out = cupy.empty((n1, n2), dtype=np.int64 if integral else np.float64)
        mod.get_function("fill_dense")(_wide_grid(cupy), (256,), (*args, out))
        cupy.cuda.Device().synchronize()
        del keep
    return out
