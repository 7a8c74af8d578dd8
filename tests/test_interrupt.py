"""Ctrl-C as it really arrives: SIGINT delivered by the operating system at random moments of a
CPU solve. A signal that lands in the passes leaves a checkpoint of the pass under way (rows
evaluated > 0) that resumes to the optimum; wherever it lands, no solver thread is left running.

(``tests/test_checkpoint.py`` raises KeyboardInterrupt from a progress callback, outside the
wait on the worker; a real signal can land inside that wait.)"""
from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import pytest

import costfns
import epslap
import epslap.cpu.host as cpu_host
from epslap.checkpoint import load
from tests.conftest import assert_optimal


def _solver_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "epslap-cpu" and t.is_alive()]


def _sigint_after(delay: float) -> threading.Timer:
    timer = threading.Timer(delay, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    return timer


@pytest.mark.skipif(not hasattr(signal, "SIGINT") or os.name != "posix",
                    reason="needs POSIX signals")
def test_real_sigint_in_the_passes_writes_the_pass_under_way_and_leaves_no_thread(tmp_path):
    c = costfns.generate("geometric", 2500, seed=11)
    # the dense method (the one that checkpoints); compiles, and its times place the signals
    plain = epslap.solve(c, threads=1, candidates=False)
    t_est = plain.stats["time_estimate_s"]
    t_total = plain.stats["time_total_s"] if "time_total_s" in plain.stats else None
    t0 = time.perf_counter()
    epslap.solve(c, threads=1, candidates=False)
    t_total = time.perf_counter() - t0 if t_total is None else t_total
    assert t_total > t_est
    rng = np.random.default_rng(5)
    in_passes = 0
    for trial in range(6):
        path = tmp_path / f"run{trial}.ckpt"
        # the first four inside the passes' window, the others anywhere in the solve
        lo = t_est + 0.15 * (t_total - t_est) if trial < 4 else 0.0
        hi = t_est + 0.85 * (t_total - t_est) if trial < 4 else t_total
        timer = _sigint_after(float(rng.uniform(lo, hi)))
        try:
            sol = epslap.solve(c, threads=1, checkpoint=path, checkpoint_every="1h")
        except KeyboardInterrupt:
            sol = None
        try:  # a signal sent after the solve returned is delivered here
            timer.join()
            time.sleep(0.05)
        except KeyboardInterrupt:
            assert sol is not None
        assert not _solver_threads(), "a solver thread is still running after the interrupt"
        if sol is not None:  # the signal came after the solve
            assert_optimal(c, sol)
            continue
        state = load(str(path)) if path.exists() else None
        if state is None or state["header"]["reason"] == "estimate":
            resumed = (epslap.solve(c, threads=1, resume=path) if state
                       else epslap.solve(c, candidates=False))
        else:
            assert state["header"]["reason"] == "interrupted", state["header"]
            assert state["header"]["rows_evaluated"] > 0
            in_passes += 1
            resumed = epslap.solve(c, threads=1, resume=path)
            assert resumed.stats["rows_evaluated_before_resume"] > 0
            # the augmentation a signal cuts is done again after the resume
            assert plain.stats["rows_evaluated"] <= resumed.stats["rows_evaluated"] \
                <= plain.stats["rows_evaluated"] + c.shape[0]
        assert resumed.cost == plain.cost
        assert_optimal(c, resumed)
    assert in_passes >= 2, "the signals placed in the passes did not interrupt them"


def test_wait_on_the_worker_does_not_trust_a_join_that_was_interrupted(monkeypatch):
    """The worker's end is its own Event: the loop waits on it whatever ``is_alive`` says."""
    ctl = np.zeros(8, np.int64)
    release = threading.Event()
    monkeypatch.setattr(threading.Thread, "is_alive", lambda self: False)

    def fn():
        release.wait(5)
        return 42
    threading.Timer(0.2, release.set).start()
    assert cpu_host.run_interruptibly(fn, ctl) == 42


@pytest.mark.skipif(not hasattr(signal, "SIGINT") or os.name != "posix",
                    reason="needs POSIX signals")
def test_real_sigint_in_a_candidate_scan_stops_it_within_a_row():
    """The candidates method's streaming scans poll the stop flag at every row: with a slow
    Python row function (a whole scan about 6 s here) Ctrl-C raises within a few rows' time,
    not after the scan, and leaves no scan thread running."""
    n = 300
    sent: list[float] = []

    def row(i):
        time.sleep(0.02)
        if len(sent) == 0 and i >= 5:  # in the scan (after every compile): the signal now
            sent.append(time.perf_counter())
            os.kill(os.getpid(), signal.SIGINT)
        return np.cos(np.arange(n) * (i + 0.5)) + 1.0
    src = costfns.from_function(row, (n, n), kind="row")
    t_raised = None
    try:
        epslap.solve(src, candidates=16, threads=1)
    except KeyboardInterrupt:
        t_raised = time.perf_counter()
    assert sent and t_raised is not None
    assert t_raised - sent[0] < 1.0, t_raised - sent[0]  # the scan alone: about 6 s
    time.sleep(0.05)
    assert not [t for t in threading.enumerate()
                if t.name.startswith("epslap-cpu") and t.is_alive()]


@pytest.mark.skipif(not hasattr(signal, "SIGINT") or os.name != "posix",
                    reason="needs POSIX signals")
def test_real_sigint_in_a_sparse_exact_pass_stops_it_before_the_next_row():
    """A rectangular sparse problem runs one exact pass over all its rows (no auction): with
    over a million stored pairs it runs on a worker thread whose kernel looks at the stop flag
    before each row's search, so Ctrl-C raises at once rather than after the pass."""
    import scipy.sparse as sp
    from epslap.sparse import INTERRUPTIBLE_FROM
    n, m, k = 300_000, 320_000, 8
    rng = np.random.default_rng(0)
    cols = rng.integers(0, m, n * k)
    cols[::k] = np.arange(n)  # a complete matching among the stored pairs
    s = sp.csr_matrix((rng.random(n * k), (np.repeat(np.arange(n), k), cols)), shape=(n, m))
    assert s.nnz >= INTERRUPTIBLE_FROM
    epslap.solve(s)  # compiled
    t0 = time.perf_counter()
    epslap.solve(s)
    full = time.perf_counter() - t0
    timer = _sigint_after(0.3 * full)
    t0 = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        epslap.solve(s)
    late = time.perf_counter() - t0 - 0.3 * full
    timer.join()
    assert late < 0.4 * full, (late, full)  # the rest of the pass: about 0.7 of it
    time.sleep(0.05)
    assert not _solver_threads()
