"""The column-partitioned parallel CPU kernel: with 2 (or 3) threads it must give exactly
the serial kernel's result — the same assignment, duals, cost, rows evaluated and cache hits —
because the cross-thread merge applies the serial tie rule. No timings here."""
import threading
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

import costfns
import epslap
from epslap.cpu import passes as ker
from epslap import _sync
from epslap.cpu.cores import AUTO_MIN_COLS, resolve_threads
from epslap._validate import read_only_view
from epslap.errors import InfeasibleError

from conftest import assert_certified, assert_optimal, cpu_path

CLASSES = ["random", "geometric", "disjoint", "sanity", "rank1", "rank2", "rank8", "integer"]


@pytest.fixture(autouse=True)
def _epsilon_path():
    """These tests compare the ε-passes on several threads with one thread: small matrices
    would otherwise take the one-thread small path (docs/algorithm.md §9)."""
    with cpu_path("eps"):
        yield


def _same(a, b):
    """Two solutions are the same solve: identical assignment, duals, cost and statistics."""
    assert a.cost == b.cost
    np.testing.assert_array_equal(a.row_ind, b.row_ind)
    np.testing.assert_array_equal(a.col_ind, b.col_ind)
    np.testing.assert_array_equal(a.u, b.u)
    np.testing.assert_array_equal(a.v, b.v)
    for key in ("rows_evaluated", "passes", "epsilons", "cache_hits", "cache_misses"):
        assert a.stats.get(key) == b.stats.get(key), key


@pytest.mark.parametrize("name", CLASSES)
def test_every_class_two_threads_equals_one(name):
    c = costfns.generate(name, 160, seed=3)
    one = epslap.solve(c, threads=1)
    two = epslap.solve(c, threads=2)
    assert one.stats["threads"] == 1 and two.stats["threads"] == 2
    _same(one, two)
    assert_optimal(c, two)


@pytest.mark.parametrize("name", ["random", "sanity", "rank1", "integer"])
def test_three_uneven_slices(name):
    c = costfns.generate(name, 101, seed=5)  # 101 columns: slices of 32, 32, 37
    one = epslap.solve(c, threads=1)
    three = epslap.solve(c, threads=3)
    assert three.stats["threads"] == 3
    _same(one, three)
    assert_optimal(c, three)


@pytest.mark.parametrize("kind", ["wide", "tall", "float32", "int32", "forbidden", "maximize",
                                  "plain_ssp"])
def test_variants_two_threads(kind, rng):
    c = rng.random((70, 110))
    kw = {}
    if kind == "tall":
        c = c.T.copy()
    elif kind == "float32":
        c = c.astype(np.float32)
    elif kind == "int32":
        c = rng.integers(0, 20, (90, 90)).astype(np.int32)  # many ties
    elif kind == "forbidden":
        c[rng.random(c.shape) < 0.3] = np.inf
    elif kind == "maximize":
        kw["maximize"] = True
    elif kind == "plain_ssp":
        kw["epsilon"] = False
    one = epslap.solve(c, threads=1, **kw)
    two = epslap.solve(c, threads=2, **kw)
    _same(one, two)
    assert_optimal(c, two, maximize=kw.get("maximize", False))


@settings(max_examples=25, deadline=None)
@given(st.integers(16, 48), st.integers(16, 48), st.integers(1, 6), st.integers(0, 2**31 - 1))
def test_ties_property(n1, n2, high, seed):
    """Small integer ranges: the matrix is full of exact ties, where only the tie rule decides."""
    c = np.random.default_rng(seed).integers(0, high, (n1, n2))
    one = epslap.solve(c, threads=1)
    two = epslap.solve(c, threads=2)
    _same(one, two)
    assert_optimal(c, two)


@pytest.mark.parametrize("policy,rows", [("lfu", 40), ("slru", 20), ("slru", 1)])
@pytest.mark.parametrize("name", ["random", "geometric", "rank2", "integer"])
def test_on_demand_per_thread_caches(name, policy, rows):
    """Each thread caches its own columns; all see the same accesses: identical hits/misses."""
    src = costfns.problem(name, 120, seed=1)
    memory = rows * 120 * np.dtype(src.dtype).itemsize
    one = epslap.solve(src, threads=1, memory=memory, cache=policy)
    two = epslap.solve(src, threads=2, memory=memory, cache=policy, maximize=False)
    assert one.stats["cache_policy"] == policy and one.stats["cache_rows"] == rows
    assert two.stats["cache_misses"] > 0
    _same(one, two)
    assert_optimal(src.dense(), two)


def test_a_new_thread_count_compiles_no_new_estimate_kernel():
    """The threads' row caches reach the estimate in a typed list, whose type does not name
    their number (one thread's cache too): 2, 3 and 4 threads run the kernels that one thread
    compiled."""
    from epslap.cpu.estimate import stage_ab, stage_cde
    src = costfns.problem("random", 120, seed=5)
    memory = 30 * 120 * 8
    one = epslap.solve(src, threads=1, memory=memory)
    kernels = (stage_ab.ab_worker, stage_cde.cde_worker)
    compiled = [len(k.signatures) for k in kernels]
    for threads in (2, 3, 4):
        more = epslap.solve(src, threads=threads, memory=memory)
        assert more.stats["threads"] == threads
        _same(one, more)
    assert [len(k.signatures) for k in kernels] == compiled
    assert_optimal(src.dense(), more)


def test_on_demand_maximize_and_table():
    src = costfns.problem("geometric", 100, seed=4)
    for memory in (None, 30 * 100 * 8):
        one = epslap.solve(src, threads=1, memory=memory, maximize=True)
        two = epslap.solve(src, threads=2, memory=memory, maximize=True)
        _same(one, two)
        assert_optimal(src.dense(), two, maximize=True)


def test_source_without_partial_rows_runs_whole_rows_per_thread():
    c = costfns.generate("random", 64, seed=9)
    src = costfns.from_function(lambda i: c[i], c.shape, kind="row")  # Python: no slices
    one = epslap.solve(src, threads=1, memory=16 * 64 * 8)
    two = epslap.solve(src, threads=2, memory=16 * 64 * 8)
    auto = epslap.solve(src, memory=16 * 64 * 8)
    assert auto.stats["threads"] == 1  # auto never splits a source that cannot give slices
    _same(one, two)
    assert_optimal(c, two)


def test_infeasible_stops_every_thread():
    c = np.ones((40, 40))
    c[:, 5] = np.inf
    c[3, :] = np.inf
    c[3, 5] = 1.0
    c[7, :] = np.inf
    c[7, 5] = 1.0  # rows 3 and 7 both need column 5
    with pytest.raises(InfeasibleError):
        epslap.solve(c, threads=2)


def _worker_args(c, nthreads, ctl):
    n1, n2 = c.shape
    slots = np.zeros(2 * nthreads * ker.SLOT, np.int64)
    sync = _sync.new_sync()
    result = np.zeros(3)
    bufs = np.empty((nthreads, n2))
    v = np.zeros(n2)
    io = ker.fresh_io(v, np.arange(n1, dtype=np.int64), np.full(n1, -1, np.int64),
                    np.zeros(ker.MAX_PASSES), result)
    meet = ker.Meeting(sync, slots, slots.view(np.float64), ctl)
    shared = (n1, n2, 0.0, 0.0, False, np.inf, io, meet)
    c = read_only_view(c)  # as the library hands matrices to the kernels
    return [(np.int64(t), np.int64(nthreads), c, bufs[t]) + shared for t in range(nthreads)], \
        result


def test_stop_request_reaches_every_thread():
    """The host's stop flag (Ctrl-C) is read by thread 0 and published through the slots, so all
    threads stop at the same augmentation: no thread is left waiting at a barrier."""
    c = costfns.generate("random", 64, seed=1)
    ctl = np.zeros(8, np.int64)
    ctl[0] = 1
    args, result = _worker_args(c, 2, ctl)
    statuses = [None, None]

    def run(t):
        statuses[t] = ker.pass_worker(*args[t])

    threads = [threading.Thread(target=run, args=(t,)) for t in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads)
    assert statuses == [ker.STATUS_INTERRUPTED, ker.STATUS_INTERRUPTED]
    assert result[0] == ker.STATUS_INTERRUPTED


def test_abort_flag_releases_a_waiting_thread():
    """A worker whose peer never arrives returns STATUS_ABORTED once the host sets the flag."""
    c = costfns.generate("random", 64, seed=1)
    args, result = _worker_args(c, 2, np.zeros(8, np.int64))
    sync = args[0][-1].sync
    box = {}
    t = threading.Thread(target=lambda: box.setdefault("st", ker.pass_worker(*args[0])))
    t.start()
    t.join(0.5)
    assert t.is_alive()  # waiting for thread 1 at the first barrier
    sync[_sync._ABORT] = 1
    t.join(60)
    assert not t.is_alive() and box["st"] == ker.STATUS_ABORTED


@njit(nogil=True)
def _ping_pong(tid, sync, cells, rounds):
    """Each round: write my cell, barrier, read the peer's cell, barrier. Counts stale reads."""
    stale = 0
    gen = 0
    for k in range(1, rounds + 1):
        cells[tid * 16] = k
        gen += 1
        _sync.barrier(sync, 2, gen)
        stale += cells[(1 - tid) * 16] != k
        gen += 1
        _sync.barrier(sync, 2, gen)
    return stale


@njit(nogil=True)
def _split_ping_pong(tid, sync, cells, rounds):
    """Split barrier, double-buffered as the estimate uses it: write round k into buffer k & 1,
    arrive, do unrelated work, await, read the peer's round k. Counts stale reads (the peer's
    next write goes to the other buffer, so a correct barrier never shows k + 1 either)."""
    stale = 0
    for k in range(1, rounds + 1):
        cells[(k & 1) * 32 + tid * 16] = k
        _sync.arrive(sync, 2, k)
        for j in range(k % 64):  # work between arriving and waiting
            cells[64 + tid * 16] += j
        if not _sync.wait_for(sync, 2, k):
            return -1
        stale += cells[(k & 1) * 32 + (1 - tid) * 16] != k
    return stale


@pytest.mark.parametrize("ping_pong,rounds,arrivals", [(_ping_pong, 5000, 2 * 2 * 5000),
                                                       (_split_ping_pong, 20000, 2 * 20000)])
def test_barrier_publishes_plain_stores(ping_pong, rounds, arrivals):
    """The whole barrier and the split one (``arrive`` … ``wait_for``): what a thread stored
    before arriving is what its peer reads after waiting."""
    sync = _sync.new_sync()
    cells = np.zeros(96, np.int64)
    out = [None, None]

    def run(t):
        out[t] = ping_pong(t, sync, cells, rounds)

    threads = [threading.Thread(target=run, args=(t,)) for t in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert out == [0, 0]
    assert sync[_sync._ARRIVE] == arrivals


def test_atomic_add_from_two_threads():
    @njit(nogil=True)
    def bump(a, n):
        for _ in range(n):
            _sync.atomic_add(a, 0, 1)

    a = np.zeros(8, np.int64)
    threads = [threading.Thread(target=bump, args=(a, 100000)) for _ in range(2)]
    bump(np.zeros(8, np.int64), 1)  # compile first
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert a[0] == 200000


def test_threads_argument():
    c = costfns.generate("random", 50, seed=0)
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="threads must be None or a positive integer"):
            epslap.solve(c, threads=bad)
    assert epslap.solve(c).stats["threads"] == 1  # auto: below the crossover
    import numba
    with pytest.warns(RuntimeWarning, match="cores this process may use"):
        capped = epslap.solve(c, threads=64).stats["threads"]
    assert capped == min(6, numba.get_num_threads())  # at least 8 columns per thread
    assert resolve_threads(None, AUTO_MIN_COLS - 1) == 1
    from epslap.cpu import cores as solver
    old = solver.other_running
    try:
        solver.other_running = lambda: 0
        assert resolve_threads(None, AUTO_MIN_COLS) == min(numba.get_num_threads(),
                                                           solver.available_cores(),
                                                           AUTO_MIN_COLS // 8)
        solver.other_running = lambda: 10**6  # every core busy: one thread
        assert resolve_threads(None, AUTO_MIN_COLS) == 1
    finally:
        solver.other_running = old
    assert 0 <= old() < 10**6
    assert resolve_threads(3, 10) == 1


def test_auto_threads_start_lower_for_float_matrices():
    """threads=None: a float matrix in memory takes every core from AUTO_MIN_COLS_FLOAT columns,
    an integer one only from AUTO_MIN_COLS (the measured crossovers differ)."""
    import numba
    from epslap.cpu import cores as solver
    assert solver.AUTO_MIN_COLS_FLOAT < AUTO_MIN_COLS
    n = solver.AUTO_MIN_COLS_FLOAT
    rng = np.random.default_rng(5)
    # a class whose estimate certifies the optimum: the rule is about the thread count, and
    # 4 lock-step threads on a 2-core machine took seconds over a random matrix's passes
    cf = costfns.generate("sanity", n, seed=5).astype(np.float64)
    ci = rng.integers(0, 10 * n, (n, n))
    want = min(numba.get_num_threads(), solver.available_cores(), n // 8)
    old = solver.other_running
    try:
        solver.other_running = lambda: 0
        sf = epslap.solve(cf, candidates=False)  # (the dense method's rule)
        si = epslap.solve(ci, candidates=False)
    finally:
        solver.other_running = old
    assert sf.stats["threads"] == want
    assert si.stats["threads"] == 1
    assert resolve_threads(None, n - 1, solver.AUTO_MIN_COLS_FLOAT) == 1
    assert_certified(cf, sf)  # (scipy takes seconds on this class)
    assert_certified(ci, si)


def test_col_ranges_partition_the_columns():
    for n2 in (1, 7, 8, 17, 100, 4001):
        for t in (1, 2, 3, 4):
            bounds = [ker.col_range(n2, t, k) for k in range(t)]
            assert bounds[0][0] == 0 and bounds[-1][1] == n2
            for (lo, hi), (lo2, _) in zip(bounds, bounds[1:]):
                assert lo <= hi == lo2 and lo2 % 8 == 0


def test_cli_threads_flag(capsys):
    from epslap.cli import main
    assert main(["solve", "--problem", "rank2", "--n", "80", "--threads", "2"]) == 0
    out = capsys.readouterr().out
    assert "OPTIMAL" in out and "(threads 2)" in out


@njit(nogil=True)
def _one_barrier(sync, gen):
    return _sync.barrier(sync, 2, gen)


def test_late_peer_wakes_a_sleeping_waiter():
    """A waiter that went to sleep in futex_wait is released by the late peer's arrival."""
    import time
    sync = _sync.new_sync()
    _one_barrier(_sync.new_sync(), 0)  # compile (gen 0: passes at once)
    for gen in (1, 2):
        box = {}
        t = threading.Thread(target=lambda: box.setdefault("ok", _one_barrier(sync, gen)))
        t.start()
        time.sleep(0.2)  # far beyond the spin phase: the waiter sleeps
        assert t.is_alive()
        assert _one_barrier(sync, gen)
        t.join(10)
        assert not t.is_alive() and box["ok"]
    assert sync[_sync._SLEEPERS] == 0 and sync[_sync._ARRIVE] == 4


def test_load_watch_reads_the_core_share():
    """Two windows in a row below 0.7 of a core per thread: stalled; one good window resets."""
    from epslap._sync import LoadWatch
    watch = LoadWatch(None, 2, window_s=0.2, share=0.7)
    clock, cpu = [0.0], [0.0]
    watch._clock, watch._cpu, watch._mark = (lambda: clock[0]), (lambda: cpu[0]), (0.0, 0.0)

    def step(dt, used):
        clock[0] += dt
        cpu[0] += used
        return watch.stalled()
    assert not step(0.1, 0.2)          # window not over yet
    assert not step(0.25, 0.5)         # 0.35 s wall, 0.7 s CPU: 1.0 core per thread
    assert not step(0.25, 0.25)        # 0.5 of a core per thread: one low window
    assert not step(0.25, 0.45)        # 0.9: back up, the count restarts
    assert not step(0.25, 0.25)
    assert step(0.25, 0.25)            # two low windows in a row


@pytest.mark.slow  # two solves of n = 4000 on threads that stop and hand over (6 s)
def test_stalled_threads_hand_over_to_one_thread(monkeypatch):
    """When the watch reports a stall, the threads stop at an augmentation and one thread
    finishes from their prices: the same optimum, a warning, and the time of the hand-over."""
    import epslap.cpu.cores as cpu_cores
    monkeypatch.setattr(cpu_cores, "LOAD_WATCH", True)
    monkeypatch.setattr(cpu_cores, "other_running", lambda: 0)  # the start: no busy cores
    monkeypatch.setattr(cpu_cores, "available_cores", lambda: 2)
    monkeypatch.setattr(_sync.LoadWatch, "stalled", lambda self: True)
    for seed in (2, 3):  # geometric 4000: long enough for the host's first look (0.1 s)
        c = costfns.generate("geometric", 4000, seed=seed)
        with pytest.warns(RuntimeWarning, match="stalled each other"):
            # the dense passes (a matrix this size would take candidates): automatic threads
            sol = epslap.solve(c, candidates=False)  # hand over, explicit ones are kept
        assert sol.stats["threads"] == 2
        assert sol.stats["threads_stalled_after_s"] is not None
        assert_certified(c, sol)


def test_an_explicit_thread_count_is_honoured_on_busy_cores(monkeypatch, recwarn):
    """Busy cores lower the automatic count only; an explicit one below the cores is kept
    (without a warning), and a stall during the passes does not take it away."""
    import epslap.cpu.cores as cpu_cores
    monkeypatch.setattr(cpu_cores, "LOAD_WATCH", True)
    monkeypatch.setattr(cpu_cores, "available_cores", lambda: 2)
    monkeypatch.setattr(cpu_cores, "other_running", lambda: 10**6)
    assert cpu_cores.resolve_threads(2, 4000) == 2
    assert cpu_cores.resolve_threads(None, 4000) == 1
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]
    monkeypatch.setattr(_sync.LoadWatch, "stalled", lambda self: True)
    c = costfns.generate("geometric", 2500, seed=4)
    sol = epslap.solve(c, threads=2)
    assert sol.stats["threads"] == 2 and sol.stats.get("threads_stalled_after_s") is None
    assert_optimal(c, sol)


def test_explicit_threads_are_capped_at_the_cores_that_exist_in_every_phase(monkeypatch):
    """NUMBA_NUM_THREADS=64 on 2 cores: threads=64 runs on 2 (one warning), the dense estimate
    included (it was run on 64 threads)."""
    import numba

    import epslap.cpu.cores as cpu_cores
    monkeypatch.setattr(cpu_cores, "available_cores", lambda: 2)
    monkeypatch.setattr(numba, "get_num_threads", lambda: 64)
    with pytest.warns(RuntimeWarning, match="more than the 2 cores") as caught:
        assert cpu_cores.resolve_threads(64, 4000) == 2
    assert len(caught) == 1 and "\n" not in str(caught[0].message)
    seen = []
    import epslap.cpu.estimate.driver as estimate_driver
    real = estimate_driver.CpuStages

    def spy(src, bufs, *a, **k):
        seen.append(len(bufs))
        return real(src, bufs, *a, **k)
    monkeypatch.setattr(estimate_driver, "CpuStages", spy)
    c = np.random.default_rng(1).random((2200, 2200))
    with pytest.warns(RuntimeWarning, match="more than the 2 cores"):
        sol = epslap.solve(c, threads=64, candidates=False)
    assert sol.stats["threads"] == 2 and seen and max(seen) <= 2
    assert_optimal(c, sol)


def test_own_spinning_threads_are_not_counted_as_other_processes():
    """Threads of this process that are runnable (e.g. a parallel region's workers still
    spinning) are ours: other_running() leaves them out."""
    import threading

    import epslap.cpu.cores as cpu_cores
    from numba import njit

    from epslap._sync import load_acquire

    @njit(nogil=True, cache=False)
    def spin(stop):  # an atomic load: a plain one may be hoisted out of the loop
        x = 0.0
        while load_acquire(stop, 0) == 0:
            x += 1.0
        return x
    stop = np.zeros(1, np.int64)
    spin(np.ones(1, np.int64))  # compile
    workers = [threading.Thread(target=spin, args=(stop,)) for _ in range(3)]
    for w in workers:
        w.start()
    try:
        time.sleep(0.05)
        assert cpu_cores.own_running() >= 4  # three spinners and the caller
        with open("/proc/loadavg") as fh:
            total = int(fh.read().split()[3].split("/")[0])
        assert cpu_cores.other_running() <= max(0, total - 4) + 2  # loadavg moves meanwhile
    finally:
        stop[0] = 1
        for w in workers:
            w.join()
