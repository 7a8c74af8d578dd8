"""Independent tasks run locally or as Dask tasks, results handed over as each finishes.

:func:`solve_many` and :func:`epslap.emd_matrix` share this runner. A task is ``(key, fn, args)``
with ``fn`` importable (it travels by reference) and small arguments (paths and parameters,
not arrays). Each task runs under :func:`guarded`, which turns an exception of the task itself
(a bad matrix, an unreadable image, an infeasible problem) into a failed result, so the other
tasks complete. A task lost with its worker is run again by Dask's scheduler; one cancelled
under us (``client.restart()``) is submitted again here, up to ``retries`` times. Ctrl-C
cancels what is still pending and re-raises; the caller's output, written as results arrive,
stays consistent.

Dask is imported only here, and only when a client is given or asked for.
"""
from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import CancelledError
from typing import Any, NamedTuple


class Outcome(NamedTuple):
    """What one task gave: ``value`` (None where it failed), ``error`` (None where it did not,
    else one line naming the exception) and the task's own ``seconds``."""
    value: Any
    error: str | None
    seconds: float


def guarded(fn: Callable, *args) -> Outcome:
    """``fn(*args)`` with its time; an ``Exception`` it raises becomes a failed outcome
    (KeyboardInterrupt and SystemExit pass)."""
    t0 = time.perf_counter()
    try:
        value = fn(*args)
    except Exception as exc:  # noqa: BLE001 - recorded as this task's error, the rest goes on
        return Outcome(None, f"{type(exc).__name__}: {exc}", time.perf_counter() - t0)
    return Outcome(value, None, time.perf_counter() - t0)


def run_tasks(tasks: Sequence[tuple], on_result: Callable[[Any, Outcome], None], *,
              client=None, progress: bool = False, desc: str = "tasks",
              retries: int = 2) -> None:
    """Run ``tasks`` (``(key, fn, args)``) and call ``on_result(key, outcome)`` in this process
    as each finishes: in order without ``client``, in completion order with a
    ``dask.distributed.Client``."""
    bar = _bar(len(tasks), progress, desc)
    failed = 0

    def done(key, outcome: Outcome) -> None:
        nonlocal failed
        on_result(key, outcome)
        failed += outcome.error is not None
        if bar is not None:
            if failed:
                bar.set_postfix_str(f"{failed} failed", refresh=False)
            bar.update(1)
    try:
        if client is None:
            for key, fn, args in tasks:
                done(key, guarded(fn, *args))
        else:
            _run_on_dask(client, tasks, done, retries)
    finally:
        if bar is not None:
            bar.close()


def _run_on_dask(client, tasks: Sequence[tuple], done: Callable, retries: int) -> None:
    from distributed import as_completed
    tag = uuid.uuid4().hex[:8]
    meta: dict = {}

    def submit(k: int, attempt: int):
        key, fn, args = tasks[k]
        fut = client.submit(guarded, fn, *args, pure=False, key=f"epslap-{tag}-{k}-{attempt}")
        meta[fut.key] = (k, attempt)
        return fut

    pending = as_completed([submit(k, 0) for k in range(len(tasks))])
    try:
        for fut in pending:
            k, attempt = meta.pop(fut.key)
            try:
                outcome = fut.result()
            except Exception as exc:  # noqa: BLE001 - lost, cancelled or failed outside fn
                if _lost(fut, exc) and attempt < retries:
                    pending.add(submit(k, attempt + 1))
                    continue
                outcome = Outcome(None, f"{type(exc).__name__}: {exc}", 0.0)
            fut.release()
            done(tasks[k][0], outcome)
    except KeyboardInterrupt:
        futures = list(pending.futures)
        pending.clear()
        client.cancel(futures)
        raise


def _lost(fut, exc: BaseException) -> bool:
    """Whether a task failed for its worker's sake (killed, restarted), not its own."""

    from distributed.scheduler import KilledWorker
    return fut.status == "cancelled" or isinstance(exc, (CancelledError, KilledWorker))


def _bar(total: int, enabled: bool, desc: str):
    if not enabled or total == 0:
        return None
    from tqdm import tqdm
    return tqdm(total=total, desc=desc, unit=desc.rstrip("s"), dynamic_ncols=True, leave=True)


def make_client(scheduler: str | None = None, workers: int | None = None, *,
                gpu: bool = False):
    """A ``dask.distributed.Client``: of the scheduler at ``scheduler`` (an address), else of a
    new local cluster of ``workers`` processes (one per GPU with ``gpu``, through dask-cuda's
    ``LocalCUDACluster``). Returns ``(client, threads_per_solve)``: the CPU threads one solve
    may use so that the workers share this machine's cores (None for a remote scheduler)."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise ImportError("running on Dask needs dask.distributed: pip install "
                          "'epslap[dask]'") from None
    if scheduler is not None:
        return Client(scheduler), None
    if workers is None or workers < 1:
        raise ValueError(f"workers must be a positive count, not {workers!r}")
    if gpu:
        try:
            from dask_cuda import LocalCUDACluster
        except ImportError:
            raise ImportError("GPU workers need dask-cuda: pip install dask-cuda") from None
        cluster = LocalCUDACluster(n_workers=workers, threads_per_worker=1)
        return Client(cluster), 1
    threads = max(1, (os.cpu_count() or 1) // workers)
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                           dashboard_address=":0")
    return Client(cluster), threads


def close_client(client) -> None:
    """Close a client from :func:`make_client` and the local cluster it started, if any."""
    cluster = getattr(client, "cluster", None)
    client.close()
    if cluster is not None:
        cluster.close()
