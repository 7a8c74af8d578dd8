"""The GPU ε solve's last resort: a device result whose float duals missed the certificate
after every re-solve on the device (``solver.UncertifiedResult``) is finished by the CPU solver
from its duals, a warm start (its exact pass, then the float duals' polish and repair,
``epslap.cpu.solver``). Kept apart from ``epslap.backends``, which imports ``gpu.api``: every
caller of ``gpu.api.solve_gpu`` (the backend, a batch's wide members) gets it."""
from __future__ import annotations

import time
import warnings

from ..cpu.api import solve_cpu, solve_source
from ..errors import user_stacklevel
from ..solution import Solution


def finish_on_cpu(cost, first: Solution, maximize: bool, uncertified, t_start: float) -> Solution:
    """``cost`` (a NumPy or CuPy matrix or a cost source, in the caller's terms) solved on the
    CPU from the duals of ``first``, the device's result; ``stats["cpu_fallbacks"]`` is 1. A
    cost the CPU cannot read (``costfns.RowKernel``: costs only a CUDA kernel computes) raises
    ``uncertified``, the device's error."""
    from costfns import CostSource
    if hasattr(cost, "__cuda_array_interface__"):
        cost = cost.get()  # a CuPy matrix
    elif isinstance(cost, CostSource) and type(cost).state is CostSource.state:
        raise uncertified
    warnings.warn("epslap: backend='gpu': the float duals of the device's result missed "
                  "epslap.verify's per-entry rule after its re-solves; the CPU solver finished "
                  "from its duals (stats['cpu_fallbacks'])", RuntimeWarning,
                  stacklevel=user_stacklevel())
    t0 = time.perf_counter()
    init = (first.u, first.v)
    if isinstance(cost, CostSource):
        out = solve_source(cost, maximize=maximize, epsilon=True, memory=None, cache="auto",
                           progress=False, t_start=t0, init=init)
    else:
        out = solve_cpu(cost, maximize=maximize, epsilon=True, threads=None, progress=False,
                        t_start=t0, init=init)
    stats = dict(first.stats, cpu_fallbacks=1, time_cpu_fallback_s=time.perf_counter() - t0,
                 cpu_stats=out.stats, time_total_s=time.perf_counter() - t_start)
    return Solution(out.row_ind, out.col_ind, out.cost, out.u, out.v, stats)
