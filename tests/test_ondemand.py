"""Cost sources and the row cache: streamed and materialised paths agree; policies match a model."""
from __future__ import annotations

from collections import OrderedDict

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import costfns
import epslap
from conftest import assert_optimal, cpu_path
from epslap._validate import parse_memory
from epslap.cache import access, make_cache
from costfns.rows import cost_at, get_row_part, random_access

SOURCES = {
    "random": lambda: costfns.Random(50, seed=3),
    "geometric": lambda: costfns.Geometric(50, seed=3),
    "disjoint": lambda: costfns.Disjoint(50, seed=3),
    "sanity": lambda: costfns.Sanity(50, seed=3),
    "rank2": lambda: costfns.LowRank(50, 2, seed=3),
    "integer": lambda: costfns.RandomInt(50, 500, seed=3),
}


@pytest.fixture(autouse=True)
def _epsilon_path():
    """Costs on demand run the ε-passes; the dense solves they are compared with must too
    (small matrices would otherwise take the small path, docs/algorithm.md §9)."""
    with cpu_path("eps"):
        yield


@pytest.mark.parametrize("name", SOURCES)
def test_source_rows_match_dense_and_generator(name):
    src = SOURCES[name]()
    dense = src.dense()
    assert dense.shape == src.shape and dense.dtype == src.dtype
    for i in (0, 17, 49):
        np.testing.assert_array_equal(src.row(i), dense[i])
    np.testing.assert_array_equal(costfns.problem(name, 50, 3).dense(), dense)


def test_class_definitions():
    g = costfns.Geometric(30, seed=1)
    d = ((g.X[:, None, :] - g.Y[None, :, :]) ** 2).sum(-1)
    np.testing.assert_allclose(g.dense(), d, rtol=1e-12)
    s = costfns.Sanity(20, seed=2)
    np.testing.assert_allclose(s.dense(), s.a[:, None] + s.b[None, :] + 0.1 * (1 - np.eye(20)))
    lr = costfns.LowRank(20, 3, seed=2)
    np.testing.assert_allclose(lr.dense(), lr.w.T @ lr.w / 3)
    r = costfns.Random(300, seed=5).dense()
    assert 0 <= r.min() and r.max() < 1 and abs(r.mean() - 0.5) < 0.01
    assert not np.array_equal(r, costfns.Random(300, seed=6).dense())
    ri = costfns.RandomInt(200, 10, seed=1).dense()
    assert ri.min() == 0 and ri.max() == 10


@pytest.mark.parametrize("memory_rows", [1, 3, 15, 60, None])
@pytest.mark.parametrize("cache", ["lfu", "slru", "auto"])
def test_cache_sizes_give_the_dense_optimum(memory_rows, cache):
    src = costfns.Geometric(60, seed=4)
    memory = None if memory_rows is None else memory_rows * 60 * 8
    sol = epslap.solve(src, memory=memory, cache=cache)
    assert_optimal(src.dense(), sol)
    dense_sol = epslap.solve(src.dense())
    assert sol.stats["rows_evaluated"] == dense_sol.stats["rows_evaluated"]
    if memory_rows is not None and memory_rows < 60:
        assert sol.stats["cache_rows"] == memory_rows
        assert sol.stats["cache_misses"] >= 60
        if cache == "auto":
            assert sol.stats["cache_policy"] == ("lfu" if 4 * memory_rows >= 60 else "slru")
    else:
        assert sol.stats["cache_policy"] == "table"


def test_rectangular_integer_and_maximize_sources():
    src = costfns.SqEuclidean(np.random.default_rng(0).random((30, 3)),
                              np.random.default_rng(1).random((45, 3)))
    for s in (src, src.T):
        for maximize in (False, True):
            sol = epslap.solve(s, memory=5 * 45 * 8, maximize=maximize)
            assert_optimal(s.dense(), sol, maximize=maximize)
    ints = costfns.RandomInt(40, 1000, seed=2)
    sol = epslap.solve(ints, memory=4 * 40 * 8)
    assert isinstance(sol.cost, int)
    assert_optimal(ints.dense(), sol)


def test_function_sources_python_and_numba():
    rng = np.random.default_rng(3)
    c = rng.random((25, 30))

    @numba.njit
    def elem(i, j):
        return c_global[i, j]

    @numba.njit
    def fill(i, out):
        out[:] = c_global[i]

    global c_global
    c_global = c
    variants = [
        costfns.from_function(lambda i, j: c[i, j], c.shape),
        costfns.from_function(lambda i: c[i], c.shape, kind="row"),
        costfns.from_function(lambda i, out: out.__setitem__(slice(None), c[i]), c.shape,
                              kind="row"),
        costfns.from_function(elem, c.shape),
        costfns.from_function(fill, c.shape, kind="row"),
    ]
    for src in variants:
        np.testing.assert_array_equal(src.dense(), c)
        assert_optimal(c, epslap.solve(src, memory=3 * 30 * 8))


def test_ondisk(tmp_path):
    c = costfns.Random(40, seed=9).dense()
    np.save(tmp_path / "c.npy", c)
    src = costfns.OnDisk(tmp_path / "c.npy")
    assert_optimal(c, epslap.solve(src, memory=4 * 40 * 8))
    with pytest.raises(ValueError, match="cannot read"):
        costfns.OnDisk(tmp_path / "missing.npy")
    with open(tmp_path / "archive.npy", "wb") as f:  # a .npz under a .npy name
        np.savez(f, c=c)
    with pytest.raises(ValueError, match="not a NumPy .npy file"):
        costfns.OnDisk(tmp_path / "archive.npy")
    (tmp_path / "text.npy").write_text("1 2\n3 4\n")
    with pytest.raises(ValueError, match="not a NumPy .npy file"):
        costfns.OnDisk(tmp_path / "text.npy")
    np.save(tmp_path / "small.npy", c.astype(np.uint8))  # read in place: not a row dtype
    with pytest.raises(ValueError, match="got \\|u1"):
        costfns.OnDisk(tmp_path / "small.npy")


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.int16, np.uint8, np.uint16, np.uint32,
                                   np.uint64, np.float16, ">f8", ">i4", ">i8"])
def test_dense_takes_every_dtype_the_solver_takes(dtype):
    """``costfns.Dense`` holds any numeric matrix: one of another dtype is copied once into
    the narrowest row dtype that holds it exactly (they were refused)."""
    c = (np.random.default_rng(4).random((12, 15)) * 100).astype(dtype)
    src = costfns.Dense(c)
    assert src.dtype.isnative and src.dtype in (np.dtype(t) for t in (
        np.float64, np.float32, np.int64, np.int32))
    np.testing.assert_array_equal(src.dense(), c)
    for maximize in (False, True):
        assert epslap.solve(src, maximize=maximize, memory=4 * 15 * 8).cost == \
            epslap.solve(c, maximize=maximize).cost
    with pytest.raises(ValueError, match="numeric matrix"):
        costfns.Dense(np.zeros((3, 3), complex))


def test_bad_sources_and_budgets():
    src = costfns.Random(100, seed=0)
    with pytest.raises(ValueError, match="smaller than one cost row"):
        epslap.solve(src, memory=100)
    with pytest.raises(ValueError, match="memory must be"):
        epslap.solve(src, memory="lots")
    with pytest.raises(ValueError, match="cache must be one of"):
        epslap.solve(src, cache="fifo")

    def raises(i, j):
        raise RuntimeError(f"sensor {i} offline")
    with pytest.raises(RuntimeError, match="sensor 0 offline"):
        epslap.solve(costfns.from_function(raises, (5, 5)))
    with pytest.raises(ValueError, match=r"returned shape \(3,\)"):
        epslap.solve(costfns.from_function(lambda i: np.zeros(3), (5, 5), kind="row"))
    with pytest.raises(ValueError, match="invalid numeric entries"):
        epslap.solve(costfns.from_function(lambda i, j: np.nan, (5, 5)))
    with pytest.raises(ValueError, match="invalid numeric entries"):
        epslap.solve(costfns.from_function(lambda i, j: np.nan, (50, 50)), memory=2 * 50 * 8)
    with pytest.raises(ValueError, match="kind must be"):
        costfns.from_function(lambda i, j: 0.0, (5, 5), kind="column")


def test_parse_memory():
    assert parse_memory("1GiB") == 2**30
    assert parse_memory("500MB") == 500_000_000
    assert parse_memory(4096) == 4096
    assert parse_memory("1.5 KiB") == 1536


class _ModelLFU:
    def __init__(self, cap):
        self.cap, self.slots, self.counts = cap, [], {}

    def access(self, r):
        self.counts[r] = self.counts.get(r, 0) + 1
        if r in self.slots:
            return True
        if len(self.slots) < self.cap:
            self.slots.append(r)
        else:
            victim = min(self.slots, key=lambda x: (self.counts[x], -x))
            self.slots[self.slots.index(victim)] = r
        return False


class _ModelSLRU:
    def __init__(self, cap):
        self.cap, self.qcap = cap, cap // 2
        self.prob, self.prot = OrderedDict(), OrderedDict()  # first = LRU

    def access(self, r):
        if r in self.prot:
            self.prot.move_to_end(r)
            return True
        if r in self.prob:
            del self.prob[r]
            if self.qcap == 0:
                self.prob[r] = True
                return True
            if len(self.prot) >= self.qcap:
                old, _ = self.prot.popitem(last=False)
                self.prob[old] = True
            self.prot[r] = True
            return True
        if len(self.prob) + len(self.prot) >= self.cap:
            self.prob.popitem(last=False)
        self.prob[r] = True
        return False


@numba.njit(cache=True)
def _replay(state, seq, out):
    for t in range(seq.shape[0]):
        before = state.policy.hits[0]
        access(state, seq[t])
        out[t] = state.policy.hits[0] > before


@settings(max_examples=150, deadline=None)
@given(cap=st.integers(1, 8), policy=st.sampled_from(["lfu", "slru"]),
       seq=st.lists(st.integers(0, 11), min_size=1, max_size=200))
def test_cache_policies_match_reference_model(cap, policy, seq):
    n_rows = 12
    src = costfns.Random(n_rows, seed=1)
    state = make_cache(src.state(), n_rows, n_rows, cap, policy, np.float64)
    got = np.zeros(len(seq), np.bool_)
    _replay(state, np.array(seq, np.int64), got)
    model = (_ModelLFU if policy == "lfu" else _ModelSLRU)(min(cap, n_rows))
    expected = [model.access(r) for r in seq]
    assert got.tolist() == expected
    dense = src.dense()  # every cached slot holds its row's true values
    for k, r in enumerate(state.policy.slot_row):
        if r >= 0:
            np.testing.assert_array_equal(state.slots[k], dense[r])


@settings(max_examples=100, deadline=None)
@given(cap=st.integers(1, 8), policy=st.sampled_from(["lfu", "slru"]),
       seq=st.lists(st.integers(0, 11), min_size=1, max_size=200))
def test_device_cache_protocol_matches_reference_model(cap, policy, seq):
    """The GPU row cache's protocol, simulated on the host: the kernel logs accesses to present
    rows and suspends on a missing one; ``replay`` applies the log and the miss. Hits, misses and
    the rows held must be those of the reference model (the same semantics as the CPU cache)."""
    from epslap.cache import replay
    n_rows = 12
    state = make_cache(np.zeros((1, 1)), n_rows, 0, cap, policy, np.float64)
    slot_of = np.full(n_rows, -1)
    slot_row = np.full(min(cap, n_rows), -1)
    log, hit = [], []
    for r in seq:
        if slot_of[r] >= 0:
            log.append(r)
            hit.append(True)
            continue
        k, wrong = replay(state, np.array(log, np.int64), np.int64(r))
        assert wrong == 0
        log = []
        if slot_row[k] >= 0:
            slot_of[slot_row[k]] = -1
        slot_of[r], slot_row[k] = k, r
        hit.append(False)
    replay(state, np.array(log, np.int64), np.int64(-1))
    model = (_ModelLFU if policy == "lfu" else _ModelSLRU)(min(cap, n_rows))
    assert hit == [model.access(r) for r in seq]
    hits = state.policy.hits
    assert (int(hits[0]), int(hits[1])) == (hit.count(True), hit.count(False))
    held = set(model.slots) if policy == "lfu" else set(model.prob) | set(model.prot)
    assert set(slot_row[slot_row >= 0].tolist()) == held


@numba.njit(cache=True)
def _part_copy(state, i, lo, hi, buf):
    return get_row_part(state, i, lo, hi, buf).copy()


@pytest.mark.parametrize("name", list(costfns.PROBLEMS))
def test_row_parts_equal_the_dense_matrix(name):
    """Every class's partial row (a thread's column slice) is bit-identical to the dense row."""
    src = costfns.problem(name, 300, seed=2)
    dense = src.dense()
    buf = np.empty(300, dense.dtype)
    for i, lo, hi in [(0, 0, 300), (5, 17, 203), (299, 256, 300), (7, 0, 1), (100, 100, 101)]:
        np.testing.assert_array_equal(_part_copy(src.state(), i, lo, hi, buf), dense[i, lo:hi])


@numba.njit(cache=True)
def _random_access(state):
    return random_access(state)


@numba.njit(cache=True)
def _entries(state, out):
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[i, j] = cost_at(state, i, j)


@pytest.mark.parametrize("name", list(costfns.PROBLEMS))
def test_single_entries_equal_the_dense_matrix(name):
    """``cost_at`` (what the pass kernel reads for an assigned edge instead of keeping a copy of
    every improving edge) is bit-identical to the rows, also through a row cache and negation."""
    from epslap._sources import NegatedState
    src = costfns.problem(name, 60, seed=5)
    dense = src.dense()
    cached = make_cache(src.state(), 60, 60, 7, "lfu", dense.dtype)
    for state, sign in ((src.state(), 1), (cached, 1), (NegatedState(cached), -1)):
        assert _random_access(state)
        out = np.empty_like(dense)
        _entries(state, out)
        np.testing.assert_array_equal(out, sign * dense)
    assert int(cached.policy.hits[0]) == int(cached.policy.hits[1]) == 0  # entries bypass the cache


def test_sources_without_entries_keep_tracking():
    f = costfns.from_function(lambda i, j: float(i + j), (5, 5))
    assert not _random_access(f.state())
    assert not _random_access(make_cache(f.state(), 5, 5, 2, "lfu", np.float64))


def test_row_kernel_checks_its_shape():
    """Checked when built (no GPU needed: the kernel is not launched here)."""
    for shape in [(-1, 5), (3.0, 4), (3,)]:
        with pytest.raises(ValueError, match="shape must be"):
            costfns.RowKernel(lambda *args: None, shape)
    assert costfns.RowKernel(lambda *args: None, (3, 4)).shape == (3, 4)


def test_a_python_row_function_binding_data_by_a_default_argument_returns_its_row():
    """``lambda i, a=a: a[i]`` has two parameters, one with a default: it was called as the
    fill form ``fn(i, out)`` and failed with "returned shape ()"."""
    a = np.random.default_rng(4).random((30, 30))
    src = costfns.from_function(lambda i, a=a: a[i], a.shape, kind="row")
    assert epslap.solve(src, memory=30 * 8 * 4).cost == pytest.approx(epslap.solve(a).cost)
