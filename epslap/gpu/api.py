"""``solve(..., backend="gpu")``: input handling on the device, then the device solver."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._validate import canonical_dense, check_float_range, check_int_range, parse_memory
from .device_costs import device_form
from .launch import LaunchConfig
from .runtime import import_cupy, upload
from .solver import CacheSpec, HostRowsSpec, UncertifiedResult, solve_device
from .state import search_bytes


def negated(cuda_cost):
    """The same source with every cost negated (for ``maximize``): the user's ``cost_fn`` is
    renamed by the preprocessor, token by token (a helper such as ``my_cost_fn`` keeps its
    name), and a ``cost_fn`` returning its negation takes its place."""
    from costfns import CudaCost
    code = "#define cost_fn cost_fn_inner\n" + cuda_cost.code + """
#undef cost_fn
__device__ __forceinline__ cost_t cost_fn(const CostArgs& a, long long i, long long j) {
    return -cost_fn_inner(a, i, j);
}"""
    return CudaCost(code, cuda_cost.arrays, cuda_cost.ints, cuda_cost.floats)


def canonical_cupy(cupy, cost, maximize):
    """Orient a CuPy matrix (its shape and dtype checked: ``_validate.problem_of``) on the
    device, never copied to the host; its values are checked here."""
    integral = cost.dtype.kind in "biu"
    m = cost
    if integral:
        m = m.astype(np.int64)
        if m.size:  # uint64 beyond int64 is caught before the cast wraps it
            check_int_range(int(cost.min()), int(cost.max()), m.shape)
    elif m.dtype not in (np.float64, np.float32):
        m = m.astype(np.float32 if m.dtype == np.float16 else np.float64)
    if maximize:
        m = -m
    if not integral:
        check_device_floats(cupy, m)
    transposed = m.shape[0] > m.shape[1]
    if transposed:
        m = m.T
    return cupy.ascontiguousarray(m), transposed, integral


def device_matrix(cupy, cost, maximize, backend="gpu"):
    """The canonical dense problem on the current device: ``(matrix, transposed, integral)``.

    A CuPy matrix is validated and oriented where it is (never copied to the host); anything else
    goes through :func:`~epslap._validate.canonical_dense` on the host and is then copied over.
    """
    if isinstance(cost, cupy.ndarray):
        return canonical_cupy(cupy, cost, maximize)
    # a float matrix's values are checked on the device, after the upload: one reduction
    # there against NumPy's sweeps on the host (16,000 x 16,000: about 1.5 s); a C-contiguous
    # int64/int32 matrix's range check and narrowing to int32 is one sweep on every core
    from .._sync import available_cores
    canon = canonical_dense(cost, maximize, check_values=False, threads=available_cores())
    m = canon.matrix
    try:
        m = upload(cupy, m)
    except cupy.cuda.memory.OutOfMemoryError as exc:
        hint = ("pass a cost source (costfns) to compute costs on the device instead"
                if backend == "gpu" else "use backend='gpu' with a cost source (costfns)")
        raise MemoryError(
            f"backend={backend!r}: the {m.shape[0]}x{m.shape[1]} {m.dtype} matrix "
            f"({m.nbytes / 2**30:.1f} GiB) does not fit in device memory; {hint}") from exc
    if not canon.integral:
        check_device_floats(cupy, m, m.shape[::-1] if canon.transposed else m.shape)
    return m, canon.transposed, canon.integral


_MAGNITUDES = r"""
__device__ __forceinline__ double entry_badness(double d) {
    // +inf for an invalid entry (NaN, -inf), 0 for a forbidden pair (+inf), else |d|
    const double inf = __longlong_as_double(0x7ff0000000000000LL);
    if (d != d || d == -inf) return inf;
    return d == inf ? 0.0 : fabs(d);
}
__device__ __forceinline__ double finite_magnitude(double d) {
    // |d| for a finite entry, else 0
    return isfinite(d) ? fabs(d) : 0.0;
}
"""
_KERNELS: dict = {}


def largest_on_device(cupy, m, of: str = "entry_badness", axis=None):
    """A reduction to the largest of ``of`` (``entry_badness`` or ``finite_magnitude``, above)
    over the entries of ``m``, on the device, with no temporary (``axis``: CuPy's)."""
    if of not in _KERNELS:
        _KERNELS[of] = cupy.ReductionKernel(
            "T x", "float64 y", f"{of}((double)x)", "max(a, b)", "y = a", "0.0",
            f"epslap_largest_{of}", preamble=_MAGNITUDES)
    return _KERNELS[of](m, axis=axis)


def check_device_floats(cupy, m, shape=None) -> None:
    """NaN, -inf and the range rule for a minimised float matrix on the device, in one
    reduction: the largest |entry| over the finite ones, or +inf where an entry is NaN or
    -inf. ``shape``: the caller's, for the message (default: ``m``'s)."""
    if not m.size:
        return
    big = float(largest_on_device(cupy, m))
    if big == np.inf:
        raise ValueError("matrix contains invalid numeric entries")
    check_float_range(big, m.shape if shape is None else shape)


def _check_budget(budget: int, need: int, n1: int, n2: int, upload: int) -> None:
    """A clear error when the device-memory budget cannot hold the solve (before any allocation)."""
    if need <= budget:
        return
    what = "the search state" + (f" and the uploaded matrix ({upload / 2**20:.1f} MiB)"
                                 if upload else "")
    raise ValueError(f"memory budget {budget / 2**20:.1f} MiB is too small for backend='gpu' at "
                     f"{n1}x{n2}: {what} need at least {need / 2**20:.1f} MiB of device memory")


def _cache_plan(budget, n1, n2, cache, state_bytes, what):
    """(capacity, policy) of a device row cache of n1 rows of n2 8-byte costs under ``budget``
    bytes of device memory, of which ``state_bytes`` go to the search state."""
    from .rowcache import DeviceRowCache
    if n1 == 0 or n2 == 0:  # nothing to cache (the solve is empty)
        return 1, "lfu" if cache == "auto" else cache
    fixed = DeviceRowCache.device_bytes(0, n1, n2) + state_bytes
    capacity = (budget - fixed) // (8 * n2)
    if capacity < 1:
        raise ValueError(f"memory budget {budget / 2**20:.1f} MiB is too small for backend='gpu' "
                         f"at {n1}x{n2} with {what}: the search state, the row table and one "
                         f"cached row need at least {(fixed + 8 * n2) / 2**20:.1f} MiB of device "
                         "memory")
    capacity = min(capacity, n1)
    policy = cache if cache != "auto" else ("lfu" if 4 * capacity >= n1 else "slru")
    return int(capacity), policy


class _Budget(NamedTuple):
    """Device memory: ``memory`` the budget (None: none given), ``state`` what the search state
    takes, and a row cache's budget ``rows`` of which ``rows_state`` goes to that state."""
    memory: int | None
    state: int
    rows: int
    rows_state: int


class _Route(NamedTuple):
    """A canonical problem (``n1 <= n2``, minimised) and where the passes read its costs: the
    device form ``cuda_cost``, a device row cache (``cache``) and rows on the host (``host``).
    ``range_check``: the one-row cache that holds integer rows from the host to the range rule."""
    n1: int
    n2: int
    transposed: bool
    integral: bool
    cuda_cost: object = None
    cache: CacheSpec | None = None
    host: HostRowsSpec | None = None
    range_check: object = None


def solve_gpu(cost, *, maximize: bool, epsilon: bool, device, t_start: float,
              memory=None, cache: str = "auto", launch: LaunchConfig | None = None,
              init=None, checkpoint=None):
    """See :func:`epslap.solve`; returns a :class:`~epslap.Solution` with NumPy arrays.

    Where the costs come from decides how the passes read them (one route each):

    - a cost source with a device form (:func:`_device_cost_route`): computed inside the kernels
      (``cache`` "lfu"/"slru": rows computed once per miss into a device row cache instead — for
      expensive costs);
    - a cost source without a device form (a Python/Numba function, a file) or a
      ``costfns.RowKernel`` (:func:`_host_rows_route`): rows into a device row cache, from the
      host or the user's kernel;
    - a matrix (:func:`_dense_route`): a CuPy matrix is read where it is; a NumPy matrix is
      uploaded when it fits ``memory`` (or the device), else — or with ``cache`` "lfu"/"slru" —
      streamed row by row into a device row cache through pinned memory.

    ``memory``: the budget of device memory (search state, uploaded matrix, row cache), checked
    before anything is allocated; default for a row cache: 2 GiB of rows. ``launch``: the launch
    configuration (default: the tuned one). ``init``, ``checkpoint``: a warm start and
    checkpoints between passes (``epslap.solve``; docs/algorithm.md §11).
    """
    from costfns import CostSource
    from .._sources import raise_out_of_range, raise_pending
    from ..solution import empty_solve, finish
    from .._validate import device_ids
    device_arg = device
    devices = device_ids(device)
    device = devices[0]
    launch = launch or LaunchConfig()
    memory = None if memory is None else parse_memory(memory)
    cupy = import_cupy()
    if cache != "auto" and isinstance(cost, cupy.ndarray):
        raise ValueError(f"cache={cache!r}: a CuPy matrix is read where it is on the device; a "
                         "row cache applies to rows from the host or to a cost source")
    with cupy.cuda.Device(device):
        shape = cost.shape  # a matrix or a cost source, checked by the entry
        budget = _budget(cupy, shape, memory, device, launch)
        source = cost if isinstance(cost, CostSource) else None
        src = None  # the source in canonical orientation (n1 <= n2)
        if source is None:
            route = _dense_route(cupy, cost, shape, maximize, cache, budget)
        else:
            src, transposed = oriented_source(source)
            cuda_cost = device_form(src)
            route = (_host_rows_route(cupy, src, transposed, maximize, cache, budget)
                     if cuda_cost is None else
                     _device_cost_route(src, transposed, cuda_cost, maximize, cache, budget))
        n1, n2, integral = route.n1, route.n2, route.integral
        hint_v = None
        if init is not None:
            from ..checkpoint import canonical_hint, hint_scale
            hint_v = canonical_hint(init, n_rows=shape[0], n_cols=shape[1],
                                    transposed=route.transposed, maximize=maximize,
                                    integral=integral,
                                    scale=None if integral else hint_scale(cost))
        uncertified = None
        if n1 == 0:
            row_to_col, v, assigned, stats = empty_solve(n2, integral, "gpu")
        else:
            try:
                row_to_col, v, stats, assigned = solve_device(
                    route.cuda_cost, n1, n2, integral=integral, epsilon=epsilon, device=device,
                    cache=route.cache, host=route.host, check_range=source is not None,
                    launch=launch, hint_v=hint_v, checkpoint=checkpoint,
                    devices=devices if len(devices) > 1 else ())
            except UncertifiedResult as exc:
                uncertified = exc
                row_to_col, v, stats, assigned = exc.out
            finally:
                if source is not None:
                    raise_pending(source)
                    if route.range_check is not None:  # the cache saw canonical rows
                        raise_out_of_range(src, [route.range_check], (n1, n2), maximize)
        if hint_v is not None and not integral and uncertified is None:
            from ..checkpoint import hint_misled, writing
            from ..big_m import one_row_magnitude
            if hint_misled(v[row_to_col], assigned, n1 + n2, one_row_magnitude(cost)):
                sol = solve_gpu(cost, maximize=maximize, epsilon=epsilon, device=device_arg,
                                t_start=t_start, memory=memory, cache=cache, launch=launch,
                                checkpoint=writing(checkpoint))
                sol.stats["warm_start"] = "rejected"
                return sol
        sol = finish((n1, n2), route.transposed, integral, row_to_col, v, assigned, stats,
                     maximize, t_start)
        if uncertified is not None:  # finished on the CPU from its duals
            from .cpu_finish import finish_on_cpu
            return finish_on_cpu(cost, sol, maximize, uncertified, t_start)
    return sol


def _budget(cupy, shape, memory: int | None, device: int, launch: LaunchConfig) -> _Budget:
    """The device-memory budget of a solve of ``shape``: a row cache gets the budget less the
    search state; without a budget, 2 GiB of rows."""
    from .._sources import DEFAULT_MEMORY
    lo_n, hi_n = sorted(int(x) for x in shape)
    state = search_bytes(cupy, lo_n, hi_n, device, launch)
    if memory is not None:
        return _Budget(memory, state, memory, state)
    return _Budget(None, state, parse_memory(DEFAULT_MEMORY), 0)


def oriented_source(source) -> tuple:
    """``(source, transposed)``, the source transposed where it has more rows than columns."""
    n1, n2 = source.shape
    transposed = n1 > n2
    return (source.transpose() if transposed else source), transposed


def _device_cost_route(src, transposed: bool, cuda_cost, maximize: bool, cache: str,
                       budget: _Budget) -> _Route:
    """A source with a device form: its costs computed inside the kernels, or with ``cache``
    "lfu"/"slru", rows computed once per miss into a device row cache."""
    n1, n2 = src.shape
    integral = np.dtype(src.dtype).kind == "i"
    if maximize:
        cuda_cost = negated(cuda_cost)
    spec = None
    if cache != "auto":
        cap, policy = _cache_plan(budget.rows, n1, n2, cache, budget.rows_state,
                                  f"cache={cache!r}")
        spec = CacheSpec(cap, policy, None)
    elif budget.memory is not None:
        _check_budget(budget.memory, budget.state, n1, n2, 0)
    return _Route(n1, n2, transposed, integral, cuda_cost=cuda_cost, cache=spec)


def _host_rows_route(cupy, src, transposed: bool, maximize: bool, cache: str,
                     budget: _Budget) -> _Route:
    """A source without a device form (or a user's ``RowKernel``): rows from the host (or the
    user's kernel) into a device row cache; integer rows pass a one-row cache that holds them to
    the range rule."""
    from costfns import RowKernel
    from .._sources import NegatedState, int_row_limit, negated, negates_inside
    from ..cache import make_cache
    from .rowcache import HostRows, KernelRows
    n1, n2 = src.shape
    integral = np.dtype(src.dtype).kind == "i"
    hstate, range_check = src.state(), None
    inside = maximize and negates_inside(hstate)
    if inside:
        hstate = negated(hstate)
    if integral:
        range_check = make_cache(hstate, n1, n2, 1, "lfu", src.dtype,
                                 int_row_limit((n1, n2), src.dtype, maximize))
        hstate = range_check
    if maximize and not inside:
        hstate = NegatedState(hstate)
    cap, policy = _cache_plan(budget.rows, n1, n2, cache, budget.rows_state,
                              f"a {type(src).__name__} source")
    work = np.int64 if integral else np.float64
    rows = (KernelRows(src, maximize) if isinstance(src, RowKernel)
            else HostRows(cupy, hstate, n2, src.dtype, work))
    return _Route(n1, n2, transposed, integral, cache=CacheSpec(cap, policy, rows),
                  host=HostRowsSpec(hstate, np.dtype(src.dtype)), range_check=range_check)


def _dense_route(cupy, cost, shape, maximize: bool, cache: str, budget: _Budget) -> _Route:
    """A matrix: a CuPy matrix read where it is, a NumPy matrix uploaded; a NumPy matrix larger
    than the budget (or the device), or with ``cache`` "lfu"/"slru", streamed through a device
    row cache."""
    from costfns.sources import dense_cuda_source
    from .rowcache import HostRows
    on_device = isinstance(cost, cupy.ndarray)
    if on_device or not _streamed(cost, cache, budget.memory, budget.state, cupy):
        if budget.memory is not None:
            lo_n, hi_n = sorted(int(x) for x in shape)
            upload = 0 if on_device else lo_n * hi_n * max(np.asarray(cost).dtype.itemsize, 4)
            _check_budget(budget.memory, budget.state + upload, shape[0], shape[1], upload)
        m, transposed, integral = device_matrix(cupy, cost, maximize)
        n1, n2 = m.shape
        return _Route(n1, n2, transposed, integral, cuda_cost=dense_cuda_source(m))
    canon = canonical_dense(cost, maximize)
    m, transposed, integral = canon.matrix, canon.transposed, canon.integral
    n1, n2 = m.shape
    avail = (budget.memory if budget.memory is not None
             else int(0.8 * cupy.cuda.runtime.memGetInfo()[0]))
    cap, policy = _cache_plan(avail, n1, n2, cache, budget.state, "a NumPy matrix")
    rows = HostRows(cupy, m, n2, m.dtype, np.int64 if integral else np.float64)
    return _Route(n1, n2, transposed, integral, cache=CacheSpec(cap, policy, rows),
                  host=HostRowsSpec(m, m.dtype))


def _streamed(cost, cache, budget, state_bytes, cupy) -> bool:
    """Whether a host matrix goes through the device row cache instead of being uploaded: asked
    for (``cache``), or it does not fit the budget (or the device's free memory) whole."""
    if cache != "auto":
        return True
    arr = np.asarray(cost)
    if arr.ndim != 2 or arr.dtype.kind not in "biuf" or arr.size == 0:
        return False  # the upload path reports the problem
    need = state_bytes + arr.shape[0] * arr.shape[1] * max(arr.dtype.itemsize, 4)
    if budget is not None:
        return need > budget
    return need > 0.8 * cupy.cuda.runtime.memGetInfo()[0]
