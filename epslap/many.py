"""Many independent solves of large problems, locally or on a Dask cluster: :func:`solve_many`.

Each problem is solved by :func:`epslap.solve` in one task. What travels to a worker is what
describes the problem: a ``.npy`` path (the worker maps the file), a :class:`Source` (a factory
and its parameters: the worker builds the costs), or a matrix (sent as it is: fine for small
ones). Results are handed back as they finish and written to ``out`` at once
(``epslap._outputs``); a rerun with the same ``out`` solves only what is not there yet.
"""
from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from ._outputs import ManyResult, open_output
from ._runner import Outcome, run_tasks


class Source:
    """A problem described by a factory and its arguments, built where it is solved:
    ``Source(costfns.problem, "geometric", 16000, seed=1)``,
    ``Source(costfns.ImageEMD, "a.jpg", "b.jpg", size=11000)``. The factory must be importable
    on the workers (a module-level function or class): it travels by reference, the arguments
    by value, so they should be small."""

    __slots__ = ("factory", "args", "kwargs")

    def __init__(self, factory: Callable, *args: Any, **kwargs: Any):
        if not callable(factory):
            raise TypeError(f"Source needs a callable factory, not {type(factory).__name__}")
        self.factory, self.args, self.kwargs = factory, args, kwargs

    def __getstate__(self):
        return self.factory, self.args, self.kwargs

    def __setstate__(self, state):
        self.factory, self.args, self.kwargs = state

    def build(self):
        return self.factory(*self.args, **self.kwargs)

    @property
    def key(self) -> str:
        """A name that is the same in every process: the factory's and the arguments' text."""
        name = f"{getattr(self.factory, '__module__', '?')}." \
               f"{getattr(self.factory, '__qualname__', repr(self.factory))}"
        parts = [repr(a) for a in self.args]
        parts += [f"{k}={v!r}" for k, v in sorted(self.kwargs.items())]
        return f"{name}({', '.join(parts)})"

    def __repr__(self) -> str:
        return f"Source({self.key})"


def solve_many(problems: Iterable | Mapping, *, client=None, backend: str = "cpu",
               maximize: bool = False, memory: int | str | None = None,
               threads: int | None = None, out: str | os.PathLike | None = None,
               progress: bool = False, retries: int = 2) -> list[ManyResult]:
    """Solve independent problems, on the workers of a Dask cluster or here, one at a time.

    Parameters
    ----------
    problems : iterable or mapping
        Each a matrix, a path to a ``.npy`` file, a :class:`Source`, or a cost source object
        (sent pickled: prefer a :class:`Source` for large ones). A mapping names each problem
        by its key; otherwise a path is named by itself, a Source by its text, a matrix by a
        hash of its bytes and anything else by its position (``problem<k>``).
    client : dask.distributed.Client, optional
        Run each solve as a Dask task on the client's workers (GPU workers of dask-cuda's
        ``LocalCUDACluster`` with ``backend="gpu"``). None: run here, in order.
    backend, maximize, memory, threads
        As for :func:`epslap.solve`, for every problem. Workers that share a machine's cores
        should be given ``threads`` (e.g. 1 with one worker per core): the automatic choice
        looks at the machine's load when each solve starts, not at the other workers.
    out : path, optional
        ``.csv``, ``.npz`` or ``.parquet`` (needs pyarrow): each result is added as it
        arrives, and problems the file already holds as solved are not solved again (a failed
        one is tried again). A CSV gains one line per result; the others are replaced
        atomically, so an interrupted run never leaves a torn file.
    progress : bool
        A progress bar on stderr (solves finished, failures).
    retries : int
        Times a task cancelled with its worker is submitted again (Dask itself re-runs a task
        whose worker died).

    Returns
    -------
    list of ManyResult
        In the order of ``problems``. A problem that fails (a bad matrix, an infeasible
        problem, an unreadable file) has ``status == "error"`` and does not stop the others.
    """
    named = _named(problems)
    options = dict(backend=backend, maximize=maximize, memory=memory, threads=threads)
    sink = open_output(out) if out is not None else None
    results: dict[str, ManyResult] = {}
    try:
        if sink is not None:
            for rec in sink.done().values():
                if rec.key in named:
                    results[rec.key] = replace(rec, from_output=True)
        tasks = [(key, _solve_one, (_payload(p), options)) for key, p in named.items()
                 if key not in results]

        def finished(key: str, outcome: Outcome) -> None:
            result = _result(key, outcome)
            if sink is not None:
                sink.add(result)
            results[key] = result
        run_tasks(tasks, finished, client=client, progress=progress, desc="solves",
                  retries=retries)
    finally:
        if sink is not None:
            sink.close()
    return [results[key] for key in named]


def _named(problems) -> dict:
    if isinstance(problems, Mapping):
        named = {str(k): p for k, p in problems.items()}
    else:
        named = {}
        for k, p in enumerate(problems):
            key = _key(p, k)
            if key in named:
                raise ValueError(f"problems {list(named).index(key)} and {k} are the same "
                                 f"({key}); give a mapping to name each one")
            named[key] = p
    return named


def _key(problem, k: int) -> str:
    if isinstance(problem, (str, os.PathLike)):
        return os.fspath(problem)
    if isinstance(problem, Source):
        return problem.key
    if isinstance(problem, (np.ndarray, list)):
        a = np.ascontiguousarray(problem)
        digest = hashlib.sha1(f"{a.shape}{a.dtype.str}".encode() + a.tobytes()).hexdigest()
        return f"matrix-{digest[:16]}"
    return f"problem{k}"


def _payload(problem):
    """What travels to the worker: paths and Sources as they are, lists as arrays."""
    return np.asarray(problem) if isinstance(problem, list) else problem


def _solve_one(problem, options: dict) -> dict:
    """On the worker: build or read the costs, solve, keep what the result needs."""
    from ._api import solve
    if isinstance(problem, (str, os.PathLike)):
        path = os.fspath(problem)
        if not path.endswith(".npy"):
            raise ValueError(f"{path}: a problem given as a path must be a .npy file")
        problem = np.load(path, mmap_mode="r", allow_pickle=False)
    elif isinstance(problem, Source):
        problem = problem.build()
    sol = solve(problem, **options)
    return dict(cost=float(sol.cost), row_ind=np.asarray(sol.row_ind, np.int64),
                col_ind=np.asarray(sol.col_ind, np.int64),
                rows_evaluated=sol.stats.get("rows_evaluated"))


def _result(key: str, outcome: Outcome) -> ManyResult:
    if outcome.error is not None:
        return ManyResult(key, "error", seconds=outcome.seconds, error=outcome.error)
    v = outcome.value
    return ManyResult(key, "ok", cost=v["cost"], seconds=outcome.seconds,
                      rows_evaluated=v["rows_evaluated"], row_ind=v["row_ind"],
                      col_ind=v["col_ind"])
