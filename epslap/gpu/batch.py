"""``solve_batch(..., backend="gpu")``: many independent problems per kernel launch.

A batch of small problems gives the single-problem GPU solver nothing to do: one problem of
100 x 100 cannot fill one multiprocessor, let alone a device, and a launch per problem costs more
than its solve. ``batch.cu`` therefore solves a whole (B, n1, n2) stack in one launch, one team
of threads per problem (a few lanes of a warp for narrow problems, a block for wide ones), with
the CPU's small-path algorithm: Jonker-Volgenant's initialisation, then shortest augmenting
paths (docs/algorithm.md section 9). Every member's duals are checked on the device by
``epslap.verify``'s per-entry rule. A member that misses it is polished on the device as the CPU
path polishes (one more exact pass from its final prices shifted to a maximum of 0, which
recomputes the reduced costs at the duals' own magnitude; ``stats["device_polishes"]``); one
that misses it even then is solved again on the host by the CPU path
(``stats["cpu_fallbacks"]``), so nothing uncertified is returned. Members wider than
:data:`MAX_COLS` columns are solved one at a time by the single-problem GPU backend.

Input: a 3-D NumPy or CuPy array, or a sequence of matrices: matrices of different shapes that
live in one place, all float or all integer, are padded to one stack (``ragged``), others grouped
by shape, dtype and where they live into stacks, one launch per stack. A CuPy stack never leaves
the device and its results are CuPy arrays; NumPy input gives NumPy results.
"""
from __future__ import annotations

import time
from typing import Any

import numpy as np

from .._status import STATUS_OK, STATUS_OUT_OF_RANGE, raise_for_status
from .._validate import check_float_range, check_int_range, float_kind
from ..certificate import CHECK_RTOL
from ..errors import member_error, solved_groups
from ..solution import Solution, orient_duals
from .modules import EPS_OPTIONS, ORIENT, build_module
from . import ragged
from .batch_plan import UNCERTIFIED, device_info, geometry, launch_plan, timing_events
from .runtime import import_cupy

#: widest canonical problem a team solves (256 threads x 16 columns in registers); wider members
#: go to the single-problem GPU backend one by one
MAX_COLS = 4096

_LAYOUTS: dict = {}  # (n1, n2, work dtype) -> a batch of one's output layout (_Outputs)
#: the orientation kernel's launch (``orient.cu``): blocks (one member each, grid-stride beyond)
#: and threads per block
ORIENT_BLOCKS = 4096
ORIENT_THREADS = 128
#: most canonical rows a member may have for the kernel: 8 bytes each in a block's shared
#: memory, within the 48 KiB a launch gets without opting in
ORIENT_MAX_ROWS = 4096


#: a single dense problem on ``backend="gpu"`` whose sides are at most this long is solved as a
#: batch of one (``solve_one``): one launch instead of the ε solver's many (NVIDIA H200, random
#: float64, NumPy / CuPy input: 10x10 0.29 / 0.20 ms against 2.7 ms, 100x100 0.70 / 0.58 ms
#: against 5.1 / 5.0, 1000x1000 16.8 / 14.9 ms against 32 / 31; 2000x2000 equal, 4000x4000
#: 2.6 times slower)
SINGLE_MAX_SIDE = 1024
#: the certificate's tolerance as the kernel takes it
_RTOL = np.float64(CHECK_RTOL)

#: the batch kernel's warp teams write each member's pairs in the caller's orientation (else
#: ``orient.cu`` makes them from the canonical assignment, one more launch)
PAIRS_IN_KERNEL = True
#: a transposed batch (more rows than columns) whose members hold at most this many entries is
#: read where it lies (each member's loads strided: it stays in L1), a larger one copied first
TRANSPOSED_IN_PLACE_MAX = 8192


def solve_batch_gpu(costs: Any, *, maximize: bool, device: int) -> tuple:
    """``(row_ind, col_ind, cost, u, v, stats)`` of :class:`epslap.BatchSolution` for every
    problem of ``costs`` (see the module docstring and :func:`epslap.solve_batch`)."""
    cupy = import_cupy()
    with cupy.cuda.Device(device):
        stats = {"backend": "gpu", "device": device_info(cupy)[0], "cpu_fallbacks": 0,
                 "device_polishes": 0, "single_gpu_solves": 0, "launches": 0,
                 "compile_s": 0.0, "time_kernel_s": 0.0}
        if isinstance(costs, cupy.ndarray) or (not isinstance(costs, (list, tuple))
                                               and np.ndim(costs) == 3):
            if costs.ndim != 3:
                raise ValueError("costs must be a 3-D array (B, n1, n2) or a sequence of "
                                 f"matrices, got {costs.ndim} dimensions")
            on_device = isinstance(costs, cupy.ndarray)
            stack = costs if on_device else np.asarray(costs)
            _check_dtype(stack.dtype, 0)
            out = _solve_stack(cupy, stack, maximize, np.arange(stack.shape[0]), stats)
            if not on_device:
                out = tuple(cupy.asnumpy(a) for a in out)
            row_ind, col_ind, cost, u, v, rows = out
            stats["rows_evaluated"] = cupy.asnumpy(rows)
            return row_ind, col_ind, cost, u, v, stats
        if not isinstance(costs, (list, tuple)):
            raise ValueError("costs must be a 3-D array (B, n1, n2) or a sequence of matrices, "  # noqa: TRY004 - as the CPU batch
                             f"got {np.ndim(costs)} dimensions")
        return _solve_list(cupy, costs, maximize, stats)


def takes_single(cost, *, memory, cache, epsilon, init, checkpoint, device, launch) -> bool:
    """Whether ``solve(cost, backend="gpu", ...)`` is solved as a batch of one: a matrix with
    sides up to SINGLE_MAX_SIDE, on one device, every option of the ε solver at its default
    (the ε solver's launches cost more than such a problem's solve)."""
    from .launch import LaunchConfig
    if not (isinstance(cost, np.ndarray) or hasattr(cost, "__cuda_array_interface__")):
        return False  # a cost source, or a nested list (solve_gpu reads and checks it)
    if getattr(getattr(cost, "device", None), "id", device) != device:
        return False  # a CuPy matrix on another device: solve_gpu's route reads it there
    shape = cost.shape
    return (len(shape) == 2 and 0 < min(shape) and max(shape) <= min(SINGLE_MAX_SIDE, MAX_COLS)
            and memory is None and cache == "auto" and epsilon is True and init is None
            and checkpoint is None and device.__class__ is int and launch == LaunchConfig())


def solve_one(cost, *, maximize: bool, device: int, t_start: float):
    """One matrix (NumPy or CuPy, as ``_validate.problem_of`` checked it; sides up to
    SINGLE_MAX_SIDE) as a batch of one: a :class:`~epslap.Solution` with NumPy arrays,
    certified on the device as every member is, its errors those of a single problem.

    The kernel's outputs share one device buffer, read back by one copy, and are put in the
    caller's orientation on the host: each separate read or device-side step costs a
    synchronisation or a launch, about 10-20 us apiece against a 0.1-0.4 ms solve. A member
    the kernel did not certify or could not solve goes the batch's way (its host fallback,
    its errors)."""
    cupy = import_cupy()
    with cupy.cuda.Device(device):
        stats = {"backend": "gpu", "method": "batch kernel", "device": device_info(cupy)[0],
                 "cpu_fallbacks": 0, "device_polishes": 0, "single_gpu_solves": 0,
                 "launches": 0, "compile_s": 0.0, "time_kernel_s": 0.0}
        t0 = time.perf_counter()
        m, transposed, integral = _device_stack(cupy, cost[None], maximize)
        n1, n2 = m.shape[1:]
        out = _Outputs(cupy, 1, n1, n2, np.int64 if integral else np.float64)
        x, u, v, total, rows, counter, status = _launch(cupy, m, maximize, integral,
                                                        *out.device, stats, read=out.fetch)
        if status[0] == STATUS_OK:
            stats["device_polishes"] += int(counter[1])
            row_ind, col_ind, u, v, total = orient_duals(x, u, v, total, maximize, transposed)
            row_ind, col_ind, total, u, v, rows = (a[0] for a in (row_ind, col_ind, total, u,
                                                                   v, rows))
        else:
            out = _solve_stack(cupy, cost[None], maximize, None, stats)
            row_ind, col_ind, total, u, v, rows = (cupy.asnumpy(a)[0] for a in out)
    n_rows, n_cols = cost.shape
    stats.update(rows_evaluated=int(rows), passes=1, epsilons=[0.0], time_estimate_s=0.0,
                 time_solve_s=time.perf_counter() - t0, n_rows=n_rows, n_cols=n_cols,
                 transposed=n_rows > n_cols, maximize=maximize,
                 time_total_s=time.perf_counter() - t_start)
    return Solution(row_ind=row_ind, col_ind=col_ind,
                    cost=int(total) if cost.dtype.kind in "biu" else float(total), u=u, v=v,
                    stats=stats)


class _Outputs:
    """A launch's kernel outputs for ``b`` members (x, u, v, total, rows, counter, status) as
    views of one device buffer, the counter zeroed: ``fetch`` copies the whole buffer to the
    host in one read, ``fetch_flags`` the counter and the statuses only (they lie last)."""

    def __init__(self, cupy, b: int, n1: int, n2: int, work):
        key = (b, n1, n2, work)
        self.layout = _LAYOUTS.get(key)
        if self.layout is None:
            self.layout, offset = [], 0
            for dtype, shape in ((np.int64, (b, n1)), (work, (b, n1)), (work, (b, n2)),
                                 (work, (b,)), (np.int64, (b,)), (np.uint64, (2,)),
                                 (np.int32, (b,))):  # 8-byte items first: all aligned
                dtype = np.dtype(dtype)
                self.layout.append((offset, dtype, shape))
                offset += int(np.prod(shape)) * dtype.itemsize
            self.layout.append((offset, None, None))  # the buffer's size
            if len(_LAYOUTS) >= 1024:
                _LAYOUTS.clear()
            _LAYOUTS[key] = self.layout
        self.buffer = cupy.empty(self.layout[-1][0], np.uint8)
        mem = self.buffer.data
        self.device = [cupy.ndarray(shape, dtype, memptr=mem + offset)
                       for offset, dtype, shape in self.layout[:-1]]
        counter = self.device[5]
        cupy.cuda.runtime.memsetAsync(counter.data.ptr, 0, counter.nbytes,
                                      cupy.cuda.get_current_stream().ptr)

    def fetch(self) -> list:
        host = self.buffer.get()
        return [np.ndarray(shape, dtype, buffer=host, offset=offset)
                for offset, dtype, shape in self.layout[:-1]]

    def fetch_flags(self) -> tuple:
        """``(counter, status)`` on the host."""
        first = self.layout[5][0]
        host = self.buffer[first:].get()
        return tuple(np.ndarray(shape, dtype, buffer=host, offset=offset - first)
                     for offset, dtype, shape in self.layout[5:7])


def _check_dtype(dtype, k: int) -> None:
    if dtype.kind not in "biuf" or (dtype.kind == "f" and float_kind(dtype) is None):
        raise TypeError(f"problem {k}: cannot cast array data from {dtype!r} to "
                        "dtype('float64') according to the rule 'safe'")


def _solve_list(cupy, costs, maximize: bool, stats: dict) -> tuple:
    """A sequence of matrices: one stack per (shape, dtype, device or host)."""
    mats = []
    for k, c in enumerate(costs):
        m = c if isinstance(c, cupy.ndarray) else np.asarray(c)
        if m.ndim != 2:
            raise ValueError(f"problem {k}: expected a matrix (2-D array), got a {m.ndim}-D "
                             "array")
        _check_dtype(m.dtype, k)
        mats.append(m)
    groups: dict = {}
    for k, m in enumerate(mats):
        groups.setdefault((m.shape, m.dtype.str, isinstance(m, cupy.ndarray)), []).append(k)
    where = {on_device for (_, _, on_device) in groups}
    if len(groups) > 1 and len(where) == 1:
        p = ragged.plan(mats, MAX_COLS)
        solved = None if p is None else _solve_padded(cupy, mats, p, where.pop(), maximize,
                                                       stats)
        if solved is not None:
            return solved
    n = len(mats)
    row_ind, col_ind, u, v = [None] * n, [None] * n, [None] * n, [None] * n
    integral = bool(mats) and all(m.dtype.kind in "biu" for m in mats)
    cost = np.zeros(n, np.int64 if integral else np.float64)
    rows = np.zeros(n, np.int64)
    def solve_group(key, idx):
        xp = cupy if key[2] else np  # (shape, dtype, on the device)
        return _solve_stack(cupy, xp.stack([mats[k] for k in idx]), maximize, np.asarray(idx),
                            stats)
    for (_, _, on_device), idx, part in solved_groups(groups, solve_group):
        if not on_device:
            part = tuple(cupy.asnumpy(a) for a in part)
        r, kk, total, uu, vv, rr = part
        total, rr = cupy.asnumpy(total), cupy.asnumpy(rr)
        for t, k in enumerate(idx):
            row_ind[k], col_ind[k], u[k], v[k] = r[t], kk[t], uu[t], vv[t]
            cost[k] = total[t]
            rows[k] = rr[t]
    stats["rows_evaluated"] = rows
    return row_ind, col_ind, cost, u, v, stats


def _solve_padded(cupy, mats: list, p, on_device: bool, maximize: bool, stats: dict) -> tuple:
    """Matrices of different shapes in one launch, padded to one slot (``ragged``); None where
    integer members are too large for it. A float member beyond the float range rule of the
    slot's shape is solved again on its own (the rule of its own, smaller shape may hold)."""
    m = ragged.pad(cupy, mats, p, maximize)
    if m is None:
        return None
    b = len(mats)
    out = _Outputs(cupy, b, p.rows, p.cols, np.float64)
    x, u, v, total, rows = out.device[:5]
    _launch(cupy, m, maximize, False, *out.device, stats)
    counter, status = out.fetch_flags()
    stats["device_polishes"] += int(counter[1])
    alone = status == STATUS_OUT_OF_RANGE
    _raise_first(cupy, np.where(alone, STATUS_OK, status), np.arange(b), m, m.shape[1:])
    for k in np.flatnonzero(status == UNCERTIFIED):
        _solve_on_host(cupy, m, int(k), maximize, False, x, u, v, total, rows)
        stats["cpu_fallbacks"] += 1
    host = out.fetch()
    # members whose duals, at their own magnitudes, miss the rule the slot's met: solved alone
    again = ragged.members_missing_rule(cupy, m, p, *host[:3], maximize, CHECK_RTOL)
    if again.size:
        alone[again] = True
        stats["ragged_resolves"] = stats.get("ragged_resolves", 0) + int(again.size)
    packed = ragged.unpad(p, *host[:4], maximize)
    cost, rows = packed[4], host[4].copy()
    if on_device:
        row_ind, col_ind, us, vs = ragged.members(p, *(cupy.asarray(a) for a in packed[:4]),
                                                  cut=_device_row)
    else:
        row_ind, col_ind, us, vs = ragged.members(p, *packed[:4])
    for k in np.flatnonzero(alone).tolist():
        xp = cupy if on_device else np
        r, kk, total, uu, vv, rr = _solve_stack(cupy, xp.stack([mats[k]]), maximize,
                                                np.asarray([k]), stats)
        row_ind[k], col_ind[k], us[k], vs[k] = (a[0] if on_device else cupy.asnumpy(a)[0]
                                                for a in (r, kk, uu, vv))
        cost[k], rows[k] = cupy.asnumpy(total)[0], cupy.asnumpy(rr)[0]  # host arrays both
    stats.update(rows_evaluated=rows, padded_to=(p.rows, p.cols))
    return row_ind, col_ind, cost, us, vs, stats


def _device_row(a, k: int, n: int):
    """The first ``n`` entries of row ``k`` of a C-contiguous CuPy matrix, as a view made from
    its pointer (a few times cheaper than ``a[k, :n]``, once per member and result)."""
    return type(a)((n,), a.dtype, memptr=a.data + k * a.strides[0])


def _device_stack(cupy, stack, maximize: bool):
    """``(matrix, transposed, integral)``: the stack on the device in a dtype the kernel reads,
    C-contiguous, in the canonical orientation (n1 <= n2). Not negated: the kernel negates as it
    reads when maximising. Integers are held to the range rule of every integer source."""
    integral = stack.dtype.kind in "biu"
    if integral and stack.size:
        lo, hi = int(stack.min()), int(stack.max())
        if maximize:
            lo, hi = -hi, -lo
        check_int_range(lo, hi, stack.shape[1:])
        if stack.dtype.name not in ("int32", "int64") or not stack.dtype.isnative:
            small = stack.dtype.itemsize < 4 or stack.dtype.kind == "b"
            stack = stack.astype(np.int32 if small else np.int64)
    elif stack.dtype.name not in ("float32", "float64") or not stack.dtype.isnative:
        stack = stack.astype(float_kind(stack.dtype))  # native (CuPy copies bytes as they are)
    if not isinstance(stack, cupy.ndarray):
        try:
            stack = cupy.asarray(np.ascontiguousarray(stack))
        except cupy.cuda.memory.OutOfMemoryError as exc:
            raise MemoryError(f"backend='gpu': the batch ({stack.nbytes / 2**30:.1f} GiB) does "
                              "not fit in device memory; pass it in parts") from exc
    transposed = stack.shape[1] > stack.shape[2]
    stack = cupy.ascontiguousarray(stack)
    if transposed:  # a small member is read where it lies (batch.cu, Costs), a larger one copied
        stack = stack.transpose(0, 2, 1)
        if stack.shape[1] * stack.shape[2] > TRANSPOSED_IN_PLACE_MAX:
            stack = cupy.ascontiguousarray(stack)
    return stack, transposed, integral


def _solve_stack(cupy, stack, maximize: bool, index: np.ndarray, stats: dict) -> tuple:
    """Solve a (B, n1, n2) stack (NumPy or CuPy); ``index``: each problem's index in the
    caller's batch. Returns ``(row_ind, col_ind, cost, u, v, rows)`` as CuPy arrays in the
    caller's orientation and sign."""
    b = stack.shape[0]
    m, transposed, integral = _device_stack(cupy, stack, maximize)
    n1, n2 = m.shape[1:]
    work = np.int64 if integral else np.float64
    if not (b and n1):
        x = cupy.zeros((b, n1), np.int64)
        u, v, total = cupy.zeros((b, n1), work), cupy.zeros((b, n2), work), cupy.zeros(b, work)
        return _assemble(cupy, x, u, v, total, cupy.zeros(b, np.int64), transposed, maximize)
    # every member's team writes all of these (batch.cu)
    out = _Outputs(cupy, b, n1, n2, work)
    x, u, v, total, rows = out.device[:5]
    pairs = None
    if n2 <= MAX_COLS:
        if PAIRS_IN_KERNEL and geometry(n2).team <= 32:  # warp teams write the pairs in the
            # caller's orientation
            pairs = cupy.empty((2, b, n1), np.int64)
        _launch(cupy, m, maximize, integral, *out.device, stats, pairs=pairs, swap=transposed)
        counter, status = out.fetch_flags()
        stats["device_polishes"] += int(counter[1])
        _raise_first(cupy, status, index, m, stack.shape[1:])
        for k in np.flatnonzero(status == UNCERTIFIED):
            _solve_on_host(cupy, m, int(k), maximize, integral, x, u, v, total, rows)
            stats["cpu_fallbacks"] += 1
            pairs = None  # (this member's are the host's: the host's launch orients them all)
    else:
        for k in range(b):
            _solve_single(cupy, m, k, maximize, index, x, u, v, total, rows)
            stats["single_gpu_solves"] += 1
    stats["pairs_from_batch_kernel"] = pairs is not None
    return _assemble(cupy, x, u, v, total, rows, transposed, maximize, pairs)


def _launch(cupy, m, maximize, integral, x, u, v, total, rows, counter, status,
            stats, read=None, pairs=None, swap=False):
    """One launch of ``batch_solve`` over the canonical stack ``m`` (``counter`` zeroed: the
    next member to take, the members polished; ``status``: each member's), synchronised.
    ``m`` may be a C-contiguous stack's view with its last two axes swapped (a transposed
    batch read where it lies). ``read``: a function of no argument that copies the outputs to
    the host, called once the launch is queued (its copy waits for the kernel: one
    synchronisation instead of two); its result is returned. ``pairs``: a (2, B, n1) int64
    device array for the pairs in the caller's orientation (``swap``: the caller's matrices
    are the canonical ones transposed), written by warp teams."""
    b, n1, n2 = m.shape
    item = m.dtype.itemsize
    rs, cs = m.strides[1] // item, m.strides[2] // item
    if b > 1 and m.strides[0] != n1 * n2 * item or {(rs, cs)} - {(n2, 1), (1, n1)}:
        raise AssertionError(f"batch kernel: unexpected layout {m.strides} of {m.shape}")
    kernel, geo, stage, smem, grid, limit = launch_plan(cupy, b, n1, n2, m.dtype, integral,
                                                        stats)
    no = np.uint64(0)  # a null pointer
    args = (m, np.int64(b), np.int32(n1), np.int32(n2), np.int32(maximize), x, u, v, total,
            status, rows, counter, _RTOL, limit, np.int64(rs), np.int64(cs),
            no if pairs is None else pairs[0], no if pairs is None else pairs[1],
            np.int32(swap))
    start, end = timing_events(cupy)
    start.record()
    while True:  # a cooperative launch (the module's) must fit on the device at once
        try:
            kernel((grid,), (geo.threads,), args, shared_mem=smem)
            break
        except cupy.cuda.driver.CUDADriverError as exc:
            if "COOPERATIVE_LAUNCH_TOO_LARGE" not in str(exc) or grid == 1:
                raise
            grid = max(1, grid // 2)
    end.record()
    got = None if read is None else read()
    end.synchronize()  # (done already after ``read``'s copy)
    stats["time_kernel_s"] += cupy.cuda.get_elapsed_time(start, end) / 1000.0
    stats["launches"] += 1
    stats.update(team=geo.team, columns_per_thread=geo.k, grid=grid,
                 matrix_in_shared_memory=bool(stage))
    return got



def _raise_first(cupy, status: np.ndarray, index, m, shape) -> None:
    """The error of the first member that is invalid, beyond the float range rule (named with
    its largest |cost| and the caller's ``shape``) or infeasible (or, a defect, has no status),
    naming its index in the caller's batch (``index`` None: a single problem)."""
    bad = np.flatnonzero((status != STATUS_OK) & (status != UNCERTIFIED))
    if bad.size:
        k = int(bad[0])
        if status[k] == STATUS_OUT_OF_RANGE:
            from .api import largest_on_device
            big = float(largest_on_device(cupy, m[k], "finite_magnitude"))
            _in_member(check_float_range, index, k)(big, shape)
        _in_member(raise_for_status, index, k)(int(status[k]), "gpu")


def _in_member(check, index, k: int):
    """``check`` whose error names problem ``index[k]`` of the caller's batch (``index`` None:
    a single problem, named by nothing)."""
    def named(*args):
        try:
            check(*args)
        except (ValueError, ArithmeticError, RuntimeError) as exc:
            if index is None:
                raise
            raise member_error(exc, int(index[k])) from None
    return named


def _canonical_member(cupy, m, k: int, maximize: bool, integral: bool) -> np.ndarray:
    """Member ``k`` of the canonical stack as the minimisation the kernel solved, on the host."""
    a = cupy.asnumpy(m[k])
    if integral:
        a = a.astype(np.int64)
    return -a if maximize else a


def _solve_on_host(cupy, m, k, maximize, integral, x, u, v, total, rows) -> None:
    """Member ``k``, whose duals missed the rule on the device, by the CPU path (certified)."""
    from ..cpu.api import solve_cpu
    sol = solve_cpu(_canonical_member(cupy, m, k, maximize, integral), maximize=False,
                    epsilon=True, threads=None, progress=False,
                    t_start=time.perf_counter())
    x[k] = cupy.asarray(sol.col_ind)
    u[k] = cupy.asarray(sol.u)
    v[k] = cupy.asarray(sol.v)
    total[k] = sol.cost
    rows[k] += sol.stats["rows_evaluated"]


def _solve_single(cupy, m, k, maximize, index, x, u, v, total, rows) -> None:
    """Member ``k`` of a stack too wide for a team, by the single-problem GPU backend."""
    from .api import solve_gpu
    try:
        sol = solve_gpu(-m[k] if maximize else m[k], maximize=False, epsilon=True,
                        device=cupy.cuda.Device().id, t_start=time.perf_counter())
    except (ValueError, ArithmeticError) as exc:
        if index is None:
            raise
        raise member_error(exc, int(index[k])) from None
    x[k] = cupy.asarray(sol.col_ind)
    u[k] = cupy.asarray(sol.u)
    v[k] = cupy.asarray(sol.v)
    total[k] = sol.cost
    rows[k] = sol.stats["rows_evaluated"]


def _assemble(cupy, x, u, v, total, rows, transposed, maximize, pairs=None) -> tuple:
    """Every problem's result in the caller's orientation and sign (``orient_duals``, as the
    CPU batch). The assignments: ``pairs`` where the batch kernel wrote them, else by
    ``orient.cu``'s kernel: one launch where a device sort and its gathers took most of a
    detection-shaped call. Members with more than ORIENT_MAX_ROWS canonical rows (possible
    beyond MAX_COLS columns, solved one by one) take the sort: the kernel holds a member's rows
    in shared memory."""
    b, n1 = x.shape

    def oriented_by_kernel(row_to_col):
        row_ind, col_ind = cupy.empty_like(row_to_col), cupy.empty_like(row_to_col)
        if b and n1:
            kernel = build_module(cupy, ORIENT, {}, {}, EPS_OPTIONS,
                                  cooperative=False).get_function("orient_members")
            kernel((int(min(b, ORIENT_BLOCKS)),), (ORIENT_THREADS,),
                   (row_to_col, np.int64(b), np.int32(n1), np.int32(transposed), row_ind,
                    col_ind), shared_mem=n1 * 8)
        return row_ind, col_ind
    if pairs is not None:
        oriented = lambda _: tuple(pairs)  # noqa: E731  (the batch kernel's)
    else:
        oriented = None if n1 > ORIENT_MAX_ROWS else oriented_by_kernel
    row_ind, col_ind, u, v, total = orient_duals(x, u, v, total, maximize, transposed, xp=cupy,
                                                 pairs=oriented)
    return row_ind, col_ind, total, u, v, rows
