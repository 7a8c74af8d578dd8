"""``solve(..., backend="gpu")``: input handling on the device, then the device solver."""
from __future__ import annotations

import numpy as np

from .._validate import _INT_LIMIT, canonical_dense
from .solver import blocks_for, device_bytes, import_cupy, solve_device


def _negated(cuda_cost):
    """The same source with every cost negated (for ``maximize``)."""
    from costfns._base import CudaCost
    code = cuda_cost.code.replace("cost_fn(", "cost_fn_inner(") + """
__device__ __forceinline__ cost_t cost_fn(const CostArgs& a, long long i, long long j) {
    return -cost_fn_inner(a, i, j);
}"""
    return CudaCost(code, cuda_cost.arrays, cuda_cost.ints, cuda_cost.floats)


def _canonical_cupy(cupy, cost, maximize):
    """Validate and orient a CuPy matrix on the device (never copied to the host)."""
    if cost.ndim != 2:
        raise ValueError(f"expected a matrix (2-D array), got a {cost.ndim} array")
    kind = cost.dtype.kind
    if kind not in "biuf":
        raise TypeError(f"Cannot cast array data from {cost.dtype!r} to dtype('float64') "
                        "according to the rule 'safe'")
    integral = kind in "biu"
    m = cost
    if integral:
        m = m.astype(np.int64)
        if m.size:
            lo, hi = int(m.min()), int(m.max())
            if max(abs(lo), abs(hi)) * (4 * max(m.shape) + 8) >= _INT_LIMIT:
                raise ValueError(f"integer costs in [{lo}, {hi}] could overflow int64 during "
                                 "the solve; shift or rescale the costs, or pass float64")
    elif m.dtype not in (np.float64, np.float32):
        m = m.astype(np.float32 if m.dtype == np.float16 else np.float64)
    if maximize:
        m = -m
    if not integral and m.size and bool((cupy.isnan(m) | cupy.isneginf(m)).any()):
        raise ValueError("matrix contains invalid numeric entries")
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
        return _canonical_cupy(cupy, cost, maximize)
    canon = canonical_dense(cost, maximize)
    m = canon.matrix
    try:
        m = cupy.asarray(m)
    except cupy.cuda.memory.OutOfMemoryError as exc:
        hint = ("pass a cost source (costfns) to compute costs on the device instead"
                if backend == "gpu" else "use backend='gpu' with a cost source (costfns)")
        raise MemoryError(
            f"backend={backend!r}: the {m.shape[0]}x{m.shape[1]} {m.dtype} matrix "
            f"({m.nbytes / 2**30:.1f} GiB) does not fit in device memory; {hint}") from exc
    return m, canon.transposed, canon.integral


def _check_budget(budget: int, need: int, n1: int, n2: int, upload: int) -> None:
    """A clear error when the device-memory budget cannot hold the solve (before any allocation)."""
    if need <= budget:
        return
    what = "the search state" + (f" and the uploaded matrix ({upload / 2**20:.1f} MiB)" if upload else "")
    raise ValueError(f"memory budget {budget / 2**20:.1f} MiB is too small for backend='gpu' at "
                     f"{n1}x{n2}: {what} need at least {need / 2**20:.1f} MiB of device memory")


def solve_gpu(cost, *, maximize, epsilon, device, t_start, memory=None, cache="auto"):
    """See :func:`epslap.solve`; returns a :class:`~epslap.Solution` with NumPy arrays.

    ``memory`` (optional) is a budget of device memory for the solve; it is checked before
    anything is allocated. ``cache`` must stay "auto": the GPU backend computes costs inside its
    kernels and keeps no row cache.
    """
    from costfns import CostSource
    from costfns.sources import dense_cuda_source
    from .._api import empty_solve, finish
    from ..cache import parse_memory
    if cache != "auto":
        raise ValueError(f"cache={cache!r} applies to backend='cpu': backend='gpu' computes costs "
                         "inside its kernels and keeps no row cache")
    budget = None if memory is None else parse_memory(memory)
    cupy = import_cupy()
    with cupy.cuda.Device(device):
        if budget is not None:
            shape = cost.shape if isinstance(cost, CostSource) else np.shape(cost)
            if len(shape) == 2:
                lo, hi = sorted(int(x) for x in shape)
                upload = 0
                if not isinstance(cost, (CostSource, cupy.ndarray)):
                    upload = lo * hi * max(np.asarray(cost).dtype.itemsize, 4)
                sms = cupy.cuda.Device(device).attributes["MultiProcessorCount"]
                _check_budget(budget, device_bytes(lo, hi, blocks_for(hi, sms)) + upload,
                              shape[0], shape[1], upload)
        if isinstance(cost, CostSource):
            n1, n2 = cost.shape
            transposed = n1 > n2
            src = cost.transpose() if transposed else cost
            n1, n2 = src.shape
            integral = np.dtype(src.dtype).kind == "i"
            cuda_cost = src.cuda_source()
            if maximize:
                cuda_cost = _negated(cuda_cost)
        else:
            m, transposed, integral = device_matrix(cupy, cost, maximize)
            n1, n2 = m.shape
            cuda_cost = dense_cuda_source(m)
        if n1 == 0:
            row_to_col, v, assigned, stats = empty_solve(n2, integral, "gpu")
        else:
            row_to_col, v, stats, assigned = solve_device(cuda_cost, n1, n2, integral=integral,
                                                          epsilon=epsilon, device=device)
    return finish((n1, n2), transposed, integral, row_to_col, v, assigned, stats, maximize,
                  t_start)
