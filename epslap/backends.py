"""Each backend's choice of method for a problem and its options as ``epslap.solve``'s entry
checked them (``_validate.problem_of``, ``Options``): the sparse solver for stored pairs, the
candidates method where its option takes the problem, else the backend's dense method. The GPU
modules are imported only when a GPU backend is asked for."""
from __future__ import annotations

import time

import numpy as np

from ._schedule import rectangular_from_zero
from ._validate import Options, Problem, device_ids
from .big_m import solve_apart
from .checkpoint import canonical_hint
from .candidates import HostPasses, candidates_per_row, solve_by_candidates
from .cpu.api import fits_table, solve_cpu, solve_source, table_of, table_stats
from .point_pairs import applies
from .point_passes import PointPasses
from .solution import Solution
from .sparse import solve_sparse


def solve_on(problem: Problem, options: Options) -> Solution:
    """The solve of ``options.backend``."""
    if options.backend == "cpu":
        return solve_on_cpu(problem, options)
    if options.backend == "gpu":
        return solve_on_gpu(problem, options)
    return solve_on_hungarian_gpu(problem, options)


def solve_on_cpu(problem: Problem, options: Options) -> Solution:
    """The CPU backend's choice of method (see :func:`epslap.solve`) for a problem and its
    options as the entry checked them: stored pairs by the sparse solver; the candidates
    method where its option takes the problem; else the dense method — a matrix by the small
    path or the ε-passes (:func:`solve_cpu`), a cost source through a table or row caches."""
    if problem.form == "sparse":
        return solve_sparse(problem.cost, problem.maximize)
    if (problem.form == "source" and options.carry is None
            and candidates_per_row(problem, options) is None
            and fits_table(problem.cost, options.memory)):
        # a source whose matrix fits the budget and that the candidates method does not take
        # as a source is that matrix: computed once, it takes the matrix's method (the small
        # path, candidates from AUTO_MATRIX_MIN_SIDE, else the ε-passes)
        t0 = time.perf_counter()
        matrix = table_of(problem.cost)
        time_table = time.perf_counter() - t0
        sol = solve_apart(problem._replace(cost=matrix, form="matrix"),
                          lambda p: solve_on_cpu(p, options))  # (big costs: as a matrix's)
        sol.stats.update(table_stats(problem.cost), time_table_s=time_table,
                         time_total_s=sol.stats["time_total_s"] + time_table)
        return sol
    if problem.form in ("matrix", "source") and _hint_not_needed(problem, options):
        # a warm start of a matrix (or cost source) with many spare columns: the default route
        # (the small path's rectangular solve, candidates, the rectangular dense method from
        # v = 0) from scratch costs less than the hint's exact pass, which pads the problem
        # (2000 x 2400: 16 against 76-200 ms)
        sol = solve_on_cpu(problem, options._replace(init=None, carry=None))
        sol.stats["warm_start"] = "not needed"
        return sol
    sol, declined = solve_by_candidates(problem, options, _host_passes)
    if sol is not None:
        return sol
    t_start = time.perf_counter()
    if problem.form == "source":
        sol = solve_source(problem.cost, maximize=problem.maximize, epsilon=options.epsilon,
                           memory=options.memory, cache=options.cache, threads=options.threads,
                           progress=options.progress, t_start=t_start, init=options.init,
                           checkpoint=options.carry)
    else:
        sol = solve_cpu(problem.cost, maximize=problem.maximize, epsilon=options.epsilon,
                        threads=options.threads, progress=options.progress, t_start=t_start,
                        init=options.init, checkpoint=options.carry)
    if declined is not None:
        sol.stats["candidates"] = declined
    return sol


def _hint_not_needed(problem: Problem, options: Options) -> bool:
    """A warm start alone (no checkpoint file, no resume) of a matrix or cost source with at
    least a sixteenth more columns than rows, whose hint is checked here (its errors as
    ever)."""
    carry = options.carry
    if (options.init is None or carry is None or carry.path is not None
            or carry.loaded is not None or not options.epsilon):
        return False
    n1, n2 = problem.cost.shape
    if not (min(n1, n2) and rectangular_from_zero(min(n1, n2), max(n1, n2))):
        return False
    canonical_hint(options.init, n_rows=n1, n_cols=n2, transposed=n1 > n2,
                   maximize=problem.maximize,
                   integral=np.dtype(problem.cost.dtype).kind in "biu")
    return True


def _host_passes(cost, maximize: bool, options: Options):
    """The candidates method's passes on the CPU threads: nearest-neighbour queries for a
    squared Euclidean point set, scans of every cost otherwise."""
    passes = PointPasses if applies(cost, maximize) else HostPasses
    return passes(cost, maximize, options.threads)


def solve_on_gpu(problem: Problem, options: Options):
    """The GPU backend's choice of method (see :func:`epslap.solve`) for a problem and its
    options as the entry checked them: stored pairs by the sparse solver (its auction on the
    device); the candidates method where its option takes the problem; else the dense ε
    method (:func:`solve_gpu`), or for a matrix with sides up to 1024 and the ε solver's
    options at their defaults the batch kernel as a batch of one."""
    from .gpu import batch
    from .gpu.api import solve_gpu
    from .gpu.candidates import device_auction
    device = options.device
    if isinstance(device, str):  # "all": the dense method on the first (its split over GPUs
        device = device_ids(device)[0]  # pays at n >= 512,000 only: a list asks for it)
    if problem.form == "sparse":
        if not isinstance(device, int):
            raise ValueError("a sparse cost on backend='gpu' runs on one device: pass "
                             "device=<int>")
        return solve_sparse(problem.cost, problem.maximize,
                            auction_of=lambda integral: device_auction(integral, device))
    sol, declined = solve_by_candidates(problem, options, _device_passes)
    if sol is not None:
        return sol
    t_start = time.perf_counter()
    if batch.takes_single(problem.cost, memory=options.memory, cache=options.cache,
                          epsilon=options.epsilon, init=options.init, checkpoint=options.carry,
                          device=device, launch=options.launch):
        sol = batch.solve_one(problem.cost, maximize=problem.maximize, device=device,
                              t_start=t_start)
    else:
        sol = solve_gpu(problem.cost, maximize=problem.maximize, epsilon=options.epsilon,
                        device=device, t_start=t_start, memory=options.memory,
                        cache=options.cache, launch=options.launch, init=options.init,
                        checkpoint=options.carry)
    if declined is not None:
        sol.stats["candidates"] = declined
    return sol


def _device_passes(cost, maximize: bool, options: Options):
    """The candidates method's passes on the devices (split by rows over several)."""
    from .gpu.candidates import DevicePasses
    return DevicePasses(cost, maximize, device_ids(options.device))


def solve_on_hungarian_gpu(problem: Problem, options: Options) -> Solution:
    """``backend="hungarian-gpu"``: the comparison backend, a matrix (NumPy or CuPy) or a cost
    source on one device."""
    from .gpu.hungarian.solver import solve_hungarian
    return solve_hungarian(problem.cost, maximize=problem.maximize, device=options.device,
                           t_start=time.perf_counter(), launch=options.launch)
