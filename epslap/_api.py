"""The public entry points: ``solve`` and the scipy drop-in ``linear_sum_assignment``."""
from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from . import checkpoint as ckpt
from ._validate import (Options, Problem, check_cost_limit, check_options, form_of,
                        output_path_problem, problem_of)
from .backends import solve_on
from .big_m import solve_apart
from .candidates import check_candidates
from .cpu import small as _small
from .cpu.api import solve_cpu
from .limit import solve_with_limit
from .solution import Solution

if TYPE_CHECKING:  # the GPU package is imported only when a GPU backend is asked for
    from .gpu.launch import LaunchConfig


def solve(cost: Any, *, maximize: bool = False, epsilon: bool = True, backend: str = "cpu",
          memory: int | str | None = None, cache: str = "auto", threads: int | None = None,
          progress: bool = False, device: int = 0,
          launch: LaunchConfig | None = None, cost_limit: float | None = None,
          init: Any = None, checkpoint: str | os.PathLike | None = None,
          checkpoint_every: float | str = ckpt.EVERY_DEFAULT,
          resume: str | os.PathLike | None = None,
          candidates: str | bool | int = "auto") -> Solution:
    r"""Solve the linear assignment problem exactly with ε-pricing successive shortest paths.

    Minimises :math:`\sum_i c_{i,\sigma(i)}` over injective maps :math:`\sigma` from the shorter
    side to the longer one (Guthe & Thuerck, "Algorithm 1015", ACM TOMS 47(2), 2021,
    doi:10.1145/3442348): an estimate of the column potentials, a few ε-scaled passes that refine
    them, and a final exact pass (ε = 0) whose result is optimal.

    Parameters
    ----------
    cost : array_like, shape (n1, n2), a sparse matrix, or a ``costfns.CostSource``
        Cost matrix: float64, float32 (solved exactly as given) or any integer dtype (exact integer
        arithmetic). ``+inf`` marks a forbidden pair (``-inf`` when ``maximize``). A cost source
        (point sets, a function, a file, the paper's classes) is evaluated row by row on demand.
        A SciPy sparse matrix or array (CSR, CSC, COO…) or a CSR tuple ``(indptr, indices,
        data[, n_cols])`` stores the allowed pairs only: every absent pair is forbidden, an
        explicit zero is a zero cost (``epslap.sparse``); it is solved by shortest augmenting
        paths over the stored pairs (a heap search touches a row's stored pairs only), on the
        CPU, without ``cost_limit``, ``init`` or checkpoints.
    maximize : bool
        Maximise instead of minimise.
    epsilon : bool
        Use ε-pricing (default). ``False`` runs plain successive shortest paths (one exact pass).
    backend : {"cpu", "gpu", "hungarian-gpu"}
        Where to solve. ``"gpu"`` (needs CuPy: the ``gpu-cuda12``/``gpu-cuda13`` extras) accepts
        NumPy and CuPy matrices (a CuPy input never leaves the device) and cost sources with a
        device form, whose costs are computed inside the GPU kernels; a matrix whose sides are
        at most 1024 is solved by the batch kernel as a batch of one (one launch) unless an
        option of the ε solver is set (``memory``, ``cache``, ``init``, checkpoints, ``launch``,
        ``epsilon=False``, several devices). ``"hungarian-gpu"`` is
        the comparison backend: the classical Hungarian algorithm on the GPU (Lopes et al.
        2019, doi:10.1016/j.jpdc.2019.03.014, with Kawtikwar et al.'s improvements) on a dense
        matrix held on the device; ``epsilon`` and ``memory`` do not apply to it.
    memory : int or str, optional
        Budget for cost rows of a cost source (bytes or e.g. ``"1GiB"``); default 2 GiB. When the
        whole matrix fits it is computed once as a table, else rows go through a row cache.
        A row is one of the problem as it is solved, along the longer side (a source with more
        rows than columns is solved transposed: its rows then hold n_rows costs).
        It bounds the rows held (table or cache slots) and, with ``backend="gpu"``, the device
        memory. The process adds its own: the Python, NumPy and Numba runtime with the
        compiled kernels, and the solver's O(n) state (measured by ``benchmarks/memory.py``;
        the numbers are on the benchmark page). A table is held once (a maximisation of an
        array source negates it into a copy). For a matrix already in host memory on the CPU
        backend ``memory`` and ``cache`` have nothing to bound: they are validated and
        otherwise ignored.
        With ``backend="gpu"``: a budget of device memory (search state, an uploaded NumPy
        matrix, a device row cache), checked before anything is allocated; too small to hold
        the search state and one cached row is an error. A NumPy matrix larger than the budget
        (or the device) is streamed into a device row cache through pinned memory.
    cache : {"auto", "lfu", "slru"}
        Row cache policy; ``auto`` picks LFU when at least a quarter of the rows fit, else SLRU.
        With ``backend="gpu"`` the cache lives in device memory and holds rows that come from
        the host (a NumPy matrix that does not fit, a cost source without a device form), from a
        user's kernel (``costfns.RowKernel``), or — with "lfu"/"slru" given explicitly — the
        rows of a device cost (for expensive costs); ``stats`` then report its hits and misses.
    threads : int, optional
        CPU threads for the passes and, for a dense matrix, the estimate (``backend="cpu"``).
        Each thread owns a slice of the columns (its part of d, v, the free flags and, for a row
        cache, its own cache of those columns, computed in parallel) and the threads meet at one
        barrier per Dijkstra step; results are
        identical for every thread count. ``None`` (default): the free cores — those this
        process may run on (CPU affinity, at most ``numba.get_num_threads()``) less the
        runnable tasks of other processes at the start (Linux ``/proc/loadavg``, this process's
        own threads not counted) — when the problem has at least
        ``epslap.cpu.cores.AUTO_MIN_COLS_FLOAT`` (2000) columns for a float matrix in memory
        (a cost source whose matrix fits ``memory`` is computed once and solved as one),
        ``AUTO_MIN_COLS`` (4000) for integer matrices and costs through row caches, else 1
        (below those measured crossovers the per-step barrier costs more than the split scan
        saves; the candidates method's streaming passes, which share no barrier, follow the
        same counts, 2000 columns for every matrix in memory); they
        hand over to one thread if they stall each other during the passes. ``1``: the serial
        kernel. An explicit count is honoured whatever else runs, up to the cores this process
        may run on (and ``numba.get_num_threads()``): above that it is capped with a warning,
        since lock-step threads without a core of their own stall each other. Every count
        keeps at least 8 columns per thread.
        For a matrix in memory the estimate's certificate sweep and stages A–E use the same
        threads (same results).
    progress : bool
        Draw a progress bar on stderr during the passes (CPU backend).
    device : int, list of int or "all"
        CUDA device for ``backend="gpu"`` and ``"hungarian-gpu"``. With ``backend="gpu"``, a
        list of devices (``[0, 1]``) or ``"all"`` (every visible device) spreads one problem
        over them. The candidates method splits its streaming passes (candidates and
        certificate: every cost, computed on the devices) by rows over the devices; its sparse
        solve runs on the first. With a list, the dense ε method splits its passes too: each
        GPU scans its share of the columns, and the GPUs agree on every Dijkstra step through
        peer-to-peer memory (a cost source with a device form or a matrix; the estimate, the
        schedule and the certificate run on the first device); with ``"all"`` it runs on the
        first device (its split pays from about n = 512,000 only). A device listed twice gets
        two partitions on it (a test of the split on one GPU).
    cost_limit : float, optional
        Let rows and columns stay unmatched, each at the price ``cost_limit / 2`` (lap's and
        lapcpp's convention): a pair is matched only where that pays, a cost below the limit
        (above it when maximising). ``row_ind``/``col_ind`` then hold the matched pairs only,
        ``cost`` is their sum (without the penalties), the duals certify the problem with the
        limit (``epslap.verify(..., cost_limit=)``) and ``stats`` counts ``matched``,
        ``unmatched_rows`` and ``unmatched_cols``. For a matrix (NumPy, or CuPy on
        ``backend="gpu"``); ``None`` or ``inf`` (``-inf`` when maximising): every line of the
        shorter side is matched. Solved exactly as a rectangular problem with one slack
        column per row (``epslap/limit.py``); not with ``init``, checkpoints or ``resume``.
    init : Solution, (u, v) or array, optional
        A warm start (``backend="cpu"`` or ``"gpu"``): the duals of a similar problem solved
        before — the previous
        frame of a tracking sequence, the previous image pair, a coarser problem — as its
        ``Solution``, a pair ``(u, v)``, or the column duals ``v`` (of length n_cols; a problem
        with more rows than columns needs ``u`` too). The solve validates the rows, skips the
        ε-passes and runs the exact pass from these prices. Any finite hint gives the same
        optimum; a good one makes it much cheaper than the dense method (docs/algorithm.md §11,
        the benchmark page), not always than the default route (where candidates, then
        certify, take a problem: geometric 16,000 cold in 0.55 s, warm 2.4 s).
        On the CPU a matrix or cost source with many spare columns (at least a sixteenth more
        columns than rows) is solved from scratch by the default route instead (the small
        path's rectangular solve, candidates, the rectangular dense method from v = 0), which
        costs less than a hint's exact pass (``stats["warm_start"] = "not needed"``; the hint
        is checked all the same; with a checkpoint file the hint is used).
        ``stats["warm_start"]`` says ``"used"``, or ``"rejected"`` where float duals from a
        hint far off the costs' scale missed ``verify``'s rule, or ended spread far beyond the
        assigned costs, and the problem was solved again without it. Float prices are kept
        within (n_rows + n_cols) times four times the costs' largest finite magnitude of the
        top (``checkpoint.canonical_hint``): a hint in other units, or whose blocks (that
        ``+inf`` entries separate) sit far apart, would have the passes round every reduced
        cost at a magnitude above the costs themselves.
    checkpoint : path, optional
        Write the solve's state to this file: after the estimate, every ``checkpoint_every``
        during the passes, and on Ctrl-C before the KeyboardInterrupt. Each write replaces the
        previous one atomically. ``stats["checkpoints_written"]`` counts them. Both
        backends stop between two augmentations for it (the GPU kernel at the host's request
        while it runs) and go on from there, so no work is lost and a resumed solve takes the
        same steps.
    checkpoint_every : float or str
        Seconds between checkpoints, or a string such as ``"90s"``, ``"5min"``, ``"1h"``
        (``"5m"`` is refused as ambiguous: in sizes ``m`` means 10**6). Only with
        ``checkpoint`` or ``resume`` (alone it is a ValueError: nothing would be written).
    resume : path, optional
        Go on from a checkpoint of this same problem (the same cost, ``maximize``, ``epsilon``
        and backend; any thread count and memory budget) where it stopped: the same optimum,
        certified as usual, ``stats["resumed_from"]`` and
        ``stats["rows_evaluated_before_resume"]`` set. A checkpoint of another problem, a
        damaged or truncated file or a newer format raises ``epslap.CheckpointError``
        (a ValueError) saying which. New checkpoints go to ``checkpoint``, else to this file.
    launch : epslap.gpu.LaunchConfig, optional
        How the GPU backends launch their kernels (threads, blocks, shared-memory column state,
        the phase-clock diagnostic build, Hungarian blocks); for diagnostics and tests, the
        defaults are the tuned choices. ``None``: from the environment variables
        ``EPSLAP_GPU_THREADS``, ``EPSLAP_GPU_BLOCKS``, ``EPSLAP_GPU_SMEM_STATE``,
        ``EPSLAP_GPU_PHASE_CLOCKS`` and ``EPSLAP_HUNGARIAN_BLOCKS``
        (:meth:`epslap.gpu.LaunchConfig.from_env`), read here once. Not for ``backend="cpu"``.
    candidates : "auto", True, False or int
        Solve on each row's cheapest columns, then certify the answer against every cost
        (``epslap.candidates``): a streaming pass finds each row's k cheapest columns, a sparse
        solve over them gives the duals, and a pass over all costs proves them feasible or adds
        the pairs that violate them, until none does. The result is exact either way.
        ``"auto"`` (default): taken for NumPy matrices (a nested list is read as one) and cost
        sources (on ``backend="gpu"`` a CuPy matrix takes the dense method), from
        ``candidates.AUTO_MATRIX_MIN_SIDE`` rows and columns for a matrix (1025 on the CPU, 850
        for a square float matrix whose cheapest costs do not tie, 2000 on the GPU) and
        ``candidates.AUTO_MIN_SIDE`` for a cost source (4000 on the CPU; on the CPU a smaller
        source whose matrix fits ``memory`` is computed once and takes a matrix's rule; 2000 on
        the GPU for a source with a device form and ``cache="auto"``) where a sample of rows
        shows that it pays (a matrix on the CPU with an eighth more columns than rows or more
        keeps the small path's rectangular solve, and on the GPU below 16,000 rows a problem
        with a sixteenth more columns than rows its rectangular route); the dense ε method
        otherwise. ``True``: 8 columns
        per row per doubling of n, from 24 to 64 (32 at 4000), and 20 more per doubling beyond
        2**20 columns (104 at 4,096,000); an int: that many; ``False``: the dense method. A
        problem whose certificate keeps failing goes to the dense method, and
        ``stats["candidates"]`` says why. With ``init``, checkpoints or ``epsilon=False``,
        ``"auto"`` takes the dense method and an explicit request is refused (ValueError); with
        ``cost_limit`` an explicit request is refused and ``"auto"`` chooses for the extended
        matrix (one slack column per row), as for any matrix. On the GPU the host's end of each
        auction phase runs on several threads: where several assignments are optimal, which one
        is returned may change from run to run.

    Returns
    -------
    Solution
        ``row_ind``, ``col_ind`` (scipy conventions), ``cost``, duals ``u``, ``v`` and ``stats``.

    Raises
    ------
    ValueError
        Not a matrix; NaN or -inf entries; no complete finite assignment (``InfeasibleError``);
        integer values that could overflow int64.
    TypeError
        A non-numeric array.
    """
    if (type(cost) is np.ndarray and cost.ndim == 2 and backend == "cpu" and threads is None
            and (maximize is False or maximize is True) and epsilon is True and memory is None
            and cost_limit is None and init is None and checkpoint is None and resume is None
            and checkpoint_every is ckpt.EVERY_DEFAULT
            and candidates.__class__ is str and candidates == "auto" and progress is False
            and launch is None and cache.__class__ is str and cache == "auto"
            and device.__class__ is int and device == 0):
        # every option at its default, a matrix: what the checks below would let through to
        # the small path, without them (a tiny problem's call is mostly the calls around it)
        n1, n2 = cost.shape
        if 0 < n1 <= _small.QUICK_SIDE and 0 < n2 <= _small.QUICK_SIDE:
            t_start = time.perf_counter()
            sol = _small.small_solution(cost, maximize, t_start)
            if sol is not None:
                return sol
            # the ε path, whose prices a big-M can mislead (epslap/big_m.py)
            return solve_apart(Problem(cost, "matrix", maximize), lambda p: solve_cpu(
                p.cost, maximize=maximize, epsilon=True, threads=None, progress=False,
                t_start=t_start, small_tried=p.cost is cost))
    check_options(backend=backend, maximize=maximize, epsilon=epsilon, memory=memory,
                  cache=cache, threads=threads, progress=progress, device=device)
    form = form_of(cost, backend)
    options = _options(form, backend=backend, maximize=maximize, epsilon=epsilon,
                       memory=memory, cache=cache, threads=threads, progress=progress,
                       device=device, launch=launch, cost_limit=cost_limit, init=init,
                       checkpoint=checkpoint, checkpoint_every=checkpoint_every, resume=resume,
                       candidates=candidates)
    problem = problem_of(cost, form, maximize)  # (the options' errors come first)
    try:
        if options.limit is not None:  # a matrix with one slack column per row, on the backend
            return solve_with_limit(problem, options.limit, lambda extended: solve_on(
                extended, options._replace(limit=None)))
        # big costs far above the rest (a big-M) solved apart (epslap/big_m.py)
        return solve_apart(problem, lambda p: solve_on(p, options), lambda p: solve_on(
            p, options._replace(init=None, carry=None)))
    except KeyboardInterrupt:
        from .cpu.compile_ahead import stop_all
        stop_all()  # a child compiling a later step for it: the solve will not reach it
        raise


def _options(form: str, *, backend, maximize, epsilon, memory, cache, threads, progress, device,
             launch, cost_limit, init, checkpoint, checkpoint_every, resume,
             candidates) -> Options:
    """The checks of ``solve``'s options that involve more than one of them (those of one
    alone: ``check_options``), as an :class:`Options`."""
    if form == "sparse":
        _check_sparse_options(backend, cost_limit, init, checkpoint, resume, candidates)
    limit = check_cost_limit(cost_limit, maximize)
    check_candidates(candidates, backend=backend, epsilon=epsilon,
                     continued=not (limit is None and init is None and checkpoint is None
                                    and resume is None))
    carry = None
    if init is not None or checkpoint is not None or resume is not None:
        carry = _continuation(backend, limit, init, checkpoint, checkpoint_every, resume)
    if checkpoint is None and resume is None and not (checkpoint_every is ckpt.EVERY_DEFAULT
                                                      or checkpoint_every == ckpt.EVERY_DEFAULT):
        ckpt.parse_interval(checkpoint_every)  # (its own error first: a malformed interval)
        raise ValueError("checkpoint_every applies with checkpoint= or resume= (without them "
                         "nothing is written)")
    if backend in ("gpu", "hungarian-gpu"):
        from .gpu.launch import resolve_launch
        launch = resolve_launch(launch)
    elif launch is not None:
        raise ValueError(f"launch applies to backend='gpu' and 'hungarian-gpu', not "
                         f"backend={backend!r}")
    return Options(backend=backend, epsilon=epsilon, memory=memory, cache=cache,
                   threads=threads, progress=progress, device=device, launch=launch,
                   limit=limit, candidates=candidates, init=init, carry=carry)


def _check_sparse_options(backend, cost_limit, init, checkpoint, resume, candidates) -> None:
    """A sparse cost is solved by its own exact solver, on the CPU or the GPU, without the
    dense method's options."""
    if not (candidates is False or (candidates.__class__ is str and candidates == "auto")):
        raise ValueError("candidates does not apply to a sparse cost: its stored pairs are "
                         "solved directly")
    if backend not in ("cpu", "gpu"):
        raise ValueError(f"sparse cost input is solved on backend='cpu' or 'gpu', not "
                         f"backend={backend!r}")
    for name, value in (("cost_limit", cost_limit), ("init", init), ("checkpoint", checkpoint),
                        ("resume", resume)):
        if value is not None:
            raise ValueError(f"{name} does not apply to a sparse cost")


def _continuation(backend, limit, init, checkpoint, checkpoint_every, resume):
    """Check ``solve``'s warm-start and checkpoint options; the :class:`Checkpointing` of the
    solve (a loaded checkpoint when resuming)."""
    used = [name for name, value in (("init", init), ("checkpoint", checkpoint),
                                     ("resume", resume)) if value is not None]
    if backend not in ("cpu", "gpu"):
        raise ValueError(f"{', '.join(used)}: warm starts, checkpoints and resume are for "
                         f"backend='cpu' and 'gpu', not {backend!r}")
    if limit is not None:
        raise ValueError(f"{', '.join(used)} cannot be combined with cost_limit")
    if init is not None and resume is not None:
        raise ValueError("init and resume exclude each other: a resumed solve goes on from the "
                         "checkpoint's prices")
    every = ckpt.parse_interval(checkpoint_every)
    path = os.fspath(checkpoint) if checkpoint is not None else None
    why = None if path is None else output_path_problem(path)
    if why is not None:  # refused now, not at the first write after the estimate
        raise ValueError(f"checkpoint {path!r}: {why}")
    if resume is None:
        return ckpt.Checkpointing(path=path, every_s=every)
    resume = os.fspath(resume)
    return ckpt.Checkpointing(path=path if path is not None else resume, every_s=every,
                              resume_path=resume, loaded=ckpt.load(resume))


def linear_sum_assignment(cost_matrix: Any, maximize: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Drop-in for :func:`scipy.optimize.linear_sum_assignment`: the same arguments, the same
    error types (each message says at least what scipy's says), and an optimal assignment of
    the same cost.

    Returns ``(row_ind, col_ind)`` as int64 arrays, ``row_ind`` sorted; the optimal assignment
    is ``cost_matrix[row_ind, col_ind]``. Where several assignments are optimal (ties, e.g. a
    matrix of zeros) the one returned may differ from scipy's: both are optimal, and the total
    ``cost_matrix[row_ind, col_ind].sum()`` is the same (exactly for integer costs, within
    float rounding for float costs).
    """
    maximize = bool(maximize)
    if type(cost_matrix) is np.ndarray:  # the small path's assignment alone, if it takes it
        pair = _small.small_assignment(cost_matrix, maximize)
        if pair is not None:
            return pair
    sol = solve(cost_matrix, maximize=maximize)
    return sol.row_ind, sol.col_ind
