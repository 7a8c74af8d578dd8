"""Many independent solves of large problems, locally or on a Dask cluster: :func:`solve_many`.

Each problem is solved by :func:`epslap.solve` in one task. What travels to a worker is what
describes the problem: a ``.npy`` path (the worker maps the file), a :class:`Deferred` (a factory
and its parameters: the worker builds the costs), or a matrix (sent as it is: fine for small
ones). Results are handed back as they finish and written to ``out`` at once
(``epslap._outputs``); a rerun with the same ``out`` solves only what is not there yet with the
same settings: each record carries the options that change the answer and a fingerprint of the
problem's content (:func:`_settings`), so a rerun with ``maximize=True`` or after a ``.npy`` was
overwritten solves again instead of handing back the old problem's answer.
"""
from __future__ import annotations

import hashlib
import os
import pickle
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from ._api import solve
from ._outputs import ManyResult, open_output
from ._runner import Outcome, run_tasks


class Deferred:
    """A problem described by a factory and its arguments, built where it is solved:
    ``Deferred(costfns.problem, "geometric", 16000, seed=1)``,
    ``Deferred(costfns.ImageEMD, "a.jpg", "b.jpg", size=11000)``. The factory must be importable
    on the workers (a module-level function or class): it travels by reference, the arguments
    by value, so they should be small. (Named ``Source`` before: a name too close to
    ``costfns.CostSource``, which is a cost, not a recipe for one; ``epslap.many.Source`` still
    names this class.)"""

    __slots__ = ("factory", "args", "kwargs")

    def __init__(self, factory: Callable, *args: Any, **kwargs: Any):
        if not callable(factory):
            raise TypeError(f"Deferred needs a callable factory, not {type(factory).__name__}")
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
        return f"Deferred({self.key})"


#: the former name of :class:`Deferred`
Source = Deferred


def solve_many(problems: Iterable | Mapping, *, client=None, backend: str = "cpu",
               maximize: bool = False, memory: int | str | None = None,
               threads: int | None = None, out: str | os.PathLike | None = None,
               progress: bool = False, retries: int = 2) -> list[ManyResult]:
    """Solve independent problems, on the workers of a Dask cluster or here, one at a time.

    Parameters
    ----------
    problems : iterable or mapping
        Each a matrix, a path to a ``.npy`` file, a :class:`Deferred`, or a cost source object
        (sent pickled: prefer a :class:`Deferred` for large ones). A mapping names each problem
        by its key; otherwise a path is named by itself, a Deferred by its text, a matrix by a
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
        arrives, and problems the file already holds as solved with the same settings are not
        solved again (a failed one is tried again). The settings are ``maximize`` and the
        problem's content: a matrix's bytes, a ``.npy`` file's bytes (hashed here before the
        run, so each file is read once more on this machine; a path that exists only on the
        workers is known by its text alone, so a file overwritten there is not noticed), a
        Deferred's text (its factory must give the same costs for the same arguments) or
        another object's pickle (one that does not pickle is always solved again). A problem
        solved again replaces its old result. A CSV gains one line per result (the last line
        of a key wins); the others are replaced atomically, so an interrupted run never
        leaves a torn file. A file of the older layout, without settings, is refused.
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
    settings: dict[str, str | None] = {}
    if sink is not None:  # before any task starts: a file changed under the run is solved again
        settings = {key: _settings(p, maximize) for key, p in named.items()}
    results: dict[str, ManyResult] = {}
    try:
        if sink is not None:
            for rec in sink.done().values():
                if rec.key in named and rec.settings is not None and \
                        rec.settings == settings[rec.key]:
                    results[rec.key] = replace(rec, from_output=True)
        tasks = [(key, _solve_one, (_payload(p), options)) for key, p in named.items()
                 if key not in results]

        def finished(key: str, outcome: Outcome) -> None:
            result = _result(key, outcome, settings.get(key))
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
        named = {}
        for k, p in problems.items():
            if str(k) in named:  # results are named by str(key): one would replace the other
                first = next(q for q in problems if str(q) == str(k))
                raise ValueError(f"problems {first!r} and {k!r} have the same name {str(k)!r} "
                                 "(results are named by str(key)); give distinct names")
            named[str(k)] = p
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
    if isinstance(problem, Deferred):
        return problem.key
    if isinstance(problem, (np.ndarray, list)):
        return _matrix_digest(problem)
    return f"problem{k}"


def _matrix_digest(problem) -> str:
    try:
        a = np.ascontiguousarray(problem)
    except (ValueError, TypeError):  # not a matrix (ragged rows): named by its text, and
        digest = hashlib.sha1(repr(problem).encode()).hexdigest()  # its solve says why
        return f"matrix-{digest[:16]}"
    digest = hashlib.sha1(f"{a.shape}{a.dtype.str}".encode() + a.tobytes()).hexdigest()
    return f"matrix-{digest[:16]}"


#: The options in a stored result's settings are those that change the answer: ``maximize``
#: (another optimum). ``backend``, ``memory`` and ``threads`` are left out: every backend
#: gives an optimal assignment of the same problem (the same total, up to the rounding of a
#: float sum; between tied optima the assignment may differ, and each is a right answer), and
#: ``memory`` and ``threads`` only bound the rows held and the cores used. A run resumed on
#: other hardware or with other limits so reuses what is done.
def _settings(problem, maximize: bool) -> str | None:
    """What a stored result must match to be reused: the options that change the answer and
    the problem's content fingerprint; None where the problem has no fingerprint."""
    print_ = _fingerprint(problem)
    return None if print_ is None else f"maximize={bool(maximize)};problem={print_}"


def _fingerprint(problem) -> str | None:
    """The problem's content as a short text, computed here (see ``out`` in
    :func:`solve_many`)."""
    if isinstance(problem, (str, os.PathLike)):
        path = os.fspath(problem)
        if path.endswith(".npy") and os.path.isfile(path):
            try:
                return f"npy-{_file_digest(path)}"
            except OSError:  # unreadable here: the worker reports it, or reads its own copy
                pass
        return f"path-{path}"
    if isinstance(problem, Deferred):
        return f"source-{problem.key}"
    if isinstance(problem, (np.ndarray, list)):
        return _matrix_digest(problem)
    return _pickle_digest(problem)


def _file_digest(path: str, chunk: int = 1 << 22) -> str:
    """blake2b of a file's bytes (header included: shape and dtype), read in chunks."""
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def _pickle_digest(problem) -> str | None:
    """A cost source object by its pickle, its arrays hashed where they lie (protocol 5, out of
    band) rather than copied; None where it does not pickle."""
    h = hashlib.blake2b(digest_size=16)

    def buffer(b: pickle.PickleBuffer) -> bool:
        raw = b.raw()
        h.update(len(raw).to_bytes(8, "little"))
        h.update(raw)
        return False  # out of band: not copied into the pickle
    try:
        h.update(pickle.dumps(problem, protocol=5, buffer_callback=buffer))
    except Exception:  # noqa: BLE001 - any failure to pickle: no fingerprint, always solved
        return None
    return f"pickle-{h.hexdigest()}"


def _payload(problem):
    """What travels to the worker: paths and Sources as they are, lists as arrays (a list that
    is not a matrix as it is: its solve reports it, for that problem alone)."""
    if isinstance(problem, list):
        try:
            return np.asarray(problem)
        except (ValueError, TypeError):
            return problem
    return problem


def _solve_one(problem, options: dict) -> dict:
    """On the worker: build or read the costs, solve, keep what the result needs."""
    if isinstance(problem, (str, os.PathLike)):
        path = os.fspath(problem)
        if not path.endswith(".npy"):
            raise ValueError(f"{path}: a problem given as a path must be a .npy file")
        try:
            problem = np.load(path, mmap_mode="r", allow_pickle=False)
        except ValueError as exc:
            from .errors import unreadable
            raise ValueError(f"{path}: {unreadable(exc)}") from None
    elif isinstance(problem, Deferred):
        problem = problem.build()
    sol = solve(problem, **options)
    cost = int(sol.cost) if isinstance(sol.cost, (int, np.integer)) else float(sol.cost)
    return dict(cost=cost, row_ind=np.asarray(sol.row_ind, np.int64),
                col_ind=np.asarray(sol.col_ind, np.int64),
                rows_evaluated=sol.stats.get("rows_evaluated"))


def _result(key: str, outcome: Outcome, settings: str | None) -> ManyResult:
    if outcome.error is not None:
        return ManyResult(key, "error", seconds=outcome.seconds, error=outcome.error,
                          settings=settings)
    v = outcome.value
    return ManyResult(key, "ok", cost=v["cost"], seconds=outcome.seconds,
                      rows_evaluated=v["rows_evaluated"], row_ind=v["row_ind"],
                      col_ind=v["col_ind"], settings=settings)
