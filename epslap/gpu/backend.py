"""The GPU backend's choice of method for a problem as ``epslap.solve``'s entry checked it."""
from __future__ import annotations

import time

from .._validate import Options, Problem, device_ids
from ..candidates import solve_by_candidates
from ..sparse import solve_sparse
from . import batch
from .api import solve_gpu
from .candidates import DevicePasses, device_auction


def solve_on_gpu(problem: Problem, options: Options):
    """The GPU backend's choice of method (see :func:`epslap.solve`) for a problem and its
    options as the entry checked them: stored pairs by the sparse solver (its auction on the
    device); the candidates method where its option takes the problem; else the dense ε
    method (:func:`solve_gpu`), or for a matrix with sides up to 1024 and the ε solver's
    options at their defaults the batch kernel as a batch of one."""
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
    return DevicePasses(cost, maximize, device_ids(options.device))
