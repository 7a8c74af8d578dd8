"""The estimate (docs/algorithm.md §2): the certified early exit, validation order, and the claim
that a skipped exact pass would have returned exactly the estimate's assignment."""
from __future__ import annotations

import numpy as np
import pytest

import costfns
import epslap
from conftest import assert_optimal, cpu_path
from epslap._estimate_driver import needs_cde
from epslap._status import STATUS_CERTIFIED, STATUS_OK
from epslap.cache import join_caches, make_cache
from epslap._sync import new_sync
from epslap._validate import read_only_view as ro  # the kernels get matrices read-only
from epslap.cpu import passes as ker
from epslap.cpu import estimate as est
from epslap.cpu.estimate import certify as cert



@pytest.fixture(autouse=True)
def _epsilon_path():
    """The estimate runs on the ε path only: small matrices would take the small path."""
    with cpu_path("eps"):
        yield

def _estimate(c):
    n1, n2 = c.shape
    integral = c.dtype.kind in "iu"
    v = np.zeros(n2, np.int64 if integral else np.float64)
    perm = np.zeros(n1, np.int64)
    pick = np.full(n1, -1, np.int64)
    status, eps_upper, eps_lower = est.estimate(ro(c), [np.empty(n2, c.dtype)], n1, n2, v, perm,
                                                integral, pick)
    return status, eps_upper, eps_lower, v, perm, pick


def _run_passes(c, v, perm, eps_upper, eps_lower):
    n1, n2 = c.shape
    integral = c.dtype.kind in "iu"
    inf_val = np.int64(2**62) if integral else np.inf
    row_to_col = np.full(n1, -1, np.int64)
    slots = np.zeros(2 * ker.SLOT, np.int64)
    result = np.zeros(3)
    io = ker.fresh_io(v, perm, row_to_col, np.zeros(ker.MAX_PASSES), result)
    meet = ker.Meeting(new_sync(), slots, slots.view(v.dtype), np.zeros(8, np.int64))
    ker.pass_worker(np.int64(0), np.int64(1), ro(c), np.empty(n2, c.dtype), n1, n2,
                    float(eps_upper), float(eps_lower), integral, inf_val, io, meet)
    status, n_pass, rows = int(result[0]), int(result[1]), result[2]
    assert status == STATUS_OK
    return row_to_col, n_pass, rows


def _sanity_like(n1, n2, seed, dtype=np.float64):
    """a_i + b_j + 0.1·[i ≠ j] on the first n1 columns, a constant 10 on the extra columns."""
    rng = np.random.default_rng(seed)
    c = rng.random(n1)[:, None] + rng.random(n2)[None, :] + 0.1
    c[np.arange(n1), np.arange(n1)] -= 0.1
    c[:, n1:] = 10.0
    if np.dtype(dtype).kind in "iu":
        c = np.round(c * 1000)
    return c.astype(dtype)


@pytest.mark.parametrize("shape,dtype", [((300, 300), np.float64), ((200, 260), np.float64),
                                         ((300, 300), np.int64), ((250, 250), np.float32)])
def test_certified_estimate_is_what_the_exact_pass_returns(shape, dtype):
    c = _sanity_like(*shape, seed=5, dtype=dtype)
    status, eps_upper, eps_lower, v, perm, pick = _estimate(c)
    assert status == STATUS_CERTIFIED and eps_upper == 0.0
    np.testing.assert_array_equal(perm, np.arange(shape[0]))  # stages C–E did not run
    v_pass = v.copy()
    row_to_col, n_pass, rows = _run_passes(c, v_pass, perm, eps_upper, eps_lower)
    # the pass that the solver skips would give the same assignment, the same v, n1 rows
    np.testing.assert_array_equal(row_to_col, pick)
    np.testing.assert_array_equal(v_pass, v)
    assert (n_pass, rows) == (1, shape[0])
    np.testing.assert_array_equal(pick, np.arange(shape[0]))


@pytest.mark.parametrize("n", [1, 3, 500])
def test_sanity_class_is_certified_by_the_estimate(n):
    c = costfns.generate("sanity", n, seed=3)
    sol = epslap.solve(c)
    assert sol.stats["certified_by_estimate"]
    np.testing.assert_array_equal(sol.col_ind, np.arange(n))
    assert sol.stats["rows_evaluated"] == n and sol.stats["passes"] == 1
    cert = epslap.verify(c, sol.row_ind, sol.col_ind, sol.u, sol.v)
    assert cert["optimal"], cert
    assert_optimal(c, sol)


def test_sanity_maximize_and_transposed_are_certified_and_optimal():
    # nearly square (fewer than n2/16 extra columns): the ε-passes and their estimate
    # (docs/algorithm.md §10)
    c = -_sanity_like(152, 160, seed=2)  # maximise -c: the same problem
    sol = epslap.solve(c, maximize=True)
    assert_optimal(c, sol, maximize=True)
    sol = epslap.solve(_sanity_like(152, 160, seed=2).T)
    assert sol.stats["certified_by_estimate"]
    assert_optimal(_sanity_like(152, 160, seed=2).T, sol)


@pytest.mark.parametrize("name", ["random", "geometric", "rank2", "integer"])
def test_no_certificate_where_the_estimate_is_not_optimal(name):
    c = costfns.generate(name, 200, seed=1)
    sol = epslap.solve(c)
    assert not sol.stats["certified_by_estimate"]
    assert_optimal(c, sol)


def test_epsilon_false_never_skips_the_pass():
    c = costfns.generate("sanity", 200, seed=1)
    sol = epslap.solve(c, epsilon=False)
    assert not sol.stats["certified_by_estimate"]
    assert_optimal(c, sol)


def test_nan_is_reported_before_an_infeasible_row():
    # scipy's order: invalid entries first, even when an earlier row has no finite cost
    c = np.ones((3, 3))
    c[0] = np.inf
    c[2, 1] = np.nan
    with pytest.raises(ValueError, match="matrix contains invalid numeric entries"):
        epslap.solve(c)
    c[2, 1] = -np.inf
    with pytest.raises(ValueError, match="matrix contains invalid numeric entries"):
        epslap.solve(c)
    c[2, 1] = 1.0
    with pytest.raises(ValueError, match="cost matrix is infeasible"):
        epslap.solve(c)


def test_negative_nan_and_negative_zero():
    c = np.array([[1.0, 2.0], [3.0, 4.0]])
    c[1, 0] = -np.float64("nan")
    with pytest.raises(ValueError, match="matrix contains invalid numeric entries"):
        epslap.solve(c)
    c = np.array([[-0.0, 0.0, 1.0], [0.0, -0.0, 1.0], [1.0, 1.0, -0.0]])
    sol = epslap.solve(c)
    assert_optimal(c, sol)


@pytest.mark.parametrize("name", ["rank2", "rank8", "geometric"])
def test_eps_passes_take_rows_in_natural_order(name):
    # the authors' solver resets perm to the identity whenever ε_0 > 0 (stage C's regret order
    # only serves a solve that starts with the exact pass); rank 2 runs stages C–E at this size
    c = costfns.generate(name, 300, seed=1)
    status, eps_upper, _, _, perm, _ = _estimate(c)
    assert status == STATUS_OK and eps_upper > 0.0
    np.testing.assert_array_equal(perm, np.arange(300))


def test_regret_order_kept_when_the_solve_starts_exact():
    # rank 1: ε_0 = 0 after stages C–E, so the exact pass runs the regret order back to front
    c = costfns.generate("rank1", 300, seed=1)
    status, eps_upper, _, _, perm, _ = _estimate(c)
    assert eps_upper == 0.0
    assert sorted(perm) == list(range(300)) and not np.array_equal(perm, np.arange(300))
    assert_optimal(c, epslap.solve(c))


def test_dense_and_on_demand_estimates_agree():
    # the dense path updates the column statistics four rows at a time, sources one at a time
    for name in ("random", "rank2", "sanity"):
        src = costfns.problem(name, 257, seed=2)
        dense = _estimate(src.dense())
        n = 257
        v = np.zeros(n)
        perm = np.zeros(n, np.int64)
        pick = np.zeros(n, np.int64)
        # as the solver streams: one thread's row cache, joined (the kernels' type in a solve)
        cached = join_caches([make_cache(src.state(), n, n, n, "lfu", np.float64)], [0, n])
        status, eu, el = est.estimate(cached, [np.empty(n)], n, n, v, perm, False, pick)
        assert (status, eu, el) == dense[:3]
        np.testing.assert_array_equal(v, dense[3])
        np.testing.assert_array_equal(perm, dense[4])


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("name,expected", [("sanity", STATUS_CERTIFIED),
                                           ("random", cert.ABORT), ("geometric", cert.ABORT),
                                           ("rank2", cert.ABORT), ("disjoint", cert.ABORT)])
def test_speculative_certificate_sweep(name, expected, threads):
    c = costfns.generate(name, 400, seed=4)
    pick = np.full(400, -1, np.int64)
    bufs = [np.empty(400) for _ in range(threads)]
    status = cert.certify_sweep(ro(c), bufs, 400, 400, np.empty(400), pick, threads)
    assert status == expected
    if expected == cert.ABORT:  # gave up early: only a few rows were assigned
        assert (pick >= 0).sum() < 100
    else:  # the exact pass's answer for this class: the identity
        np.testing.assert_array_equal(pick, np.arange(400))


@pytest.mark.parametrize("threads", [1, 2])
def test_certificate_sweep_with_more_tied_minima_than_kept(threads):
    """Rows whose first kept minimisers are all taken are read again: the picks are still each
    row's lowest-index free minimiser, exactly what the skipped exact pass returns."""
    n = 100
    c = np.full((n, n), 1.1)
    c[:cert.CERT_SAMPLE] = 1.0        # the sample: v = 0, every column a minimum of these rows
    c[cert.CERT_SAMPLE:, :4] = 1.0    # later rows: minima at 0..3 (all taken soon) and at i
    c[np.arange(cert.CERT_SAMPLE, n), np.arange(cert.CERT_SAMPLE, n)] = 1.0
    vf, pick = np.empty(n), np.full(n, -1, np.int64)
    status = cert.certify_sweep(ro(c), [np.empty(n) for _ in range(threads)], n, n, vf, pick,
                                threads)
    assert status == STATUS_CERTIFIED
    np.testing.assert_array_equal(vf, 0.0)
    row_to_col, n_pass, rows = _run_passes(c, vf.copy(), np.arange(n), 0.0, 0.0)
    np.testing.assert_array_equal(pick, row_to_col)
    assert pick[n - 5] == n - 5 and pick[cert.CERT_SAMPLE - 1] == 4  # both read again
    sol = epslap.solve(c, threads=threads)
    assert sol.stats["certified_by_estimate"]
    np.testing.assert_array_equal(sol.col_ind, pick)
    assert_optimal(c, sol)


def test_speculative_sweep_validates_every_row():
    c = _sanity_like(100, 100, seed=1)
    c[0, 5] = np.nan  # row 0 is the last row of the reverse sweep
    with pytest.raises(ValueError, match="matrix contains invalid numeric entries"):
        epslap.solve(c)
    c[0, 5] = -np.inf
    with pytest.raises(ValueError, match="matrix contains invalid numeric entries"):
        epslap.solve(c)


@pytest.mark.parametrize("threads", [2, 3])
@pytest.mark.parametrize("name,shape", [("random", (300, 300)), ("geometric", (257, 300)),
                                        ("rank1", (300, 300)), ("rank1", (250, 300)),
                                        ("rank2", (300, 300)), ("rank1-int", (300, 300)),
                                        ("disjoint", (200, 203)), ("sanity", (300, 300))])
def test_estimate_on_threads_equals_one_thread(name, shape, threads):
    """Stages C–E on column slices (one barrier per row) give exactly the sequential estimate
    (rank1/rank2 run stages C–E at these sizes, the others stop after stage B)."""
    from epslap.cpu.estimate.driver import estimate_rows
    c = np.ascontiguousarray(costfns.generate(name.split("-")[0], shape[1], seed=6)[:shape[0]])
    if name.endswith("-int"):
        c = np.round(c * 1000).astype(np.int64)
    integral = c.dtype.kind in "iu"
    one = estimate_rows(c, *shape, c.dtype, integral=integral)
    many = estimate_rows(c, *shape, c.dtype, integral=integral, threads=threads)
    for a, b in zip(one[:6], many[:6]):
        np.testing.assert_array_equal(a, b)
    n1, n2 = shape
    stages = est.CpuStages(ro(c), [np.empty(n2, c.dtype)], n1, n2, np.empty(n2),
                           np.empty(n1, np.int64), np.zeros(n1, np.int64), integral)
    ab = stages.stages_ab()
    assert needs_cde(ab.gap_i, ab.gap) == name.startswith("rank")  # whether stages C–E ran


@pytest.mark.parametrize("n", [12, 16, 24])
def test_estimate_on_more_threads_than_column_lines(n):
    """Three threads on 12-24 columns: column slices of whole 8-column lines leave a thread an
    empty slice (n = 12: thread 0), which still takes every barrier. Stages C–E run here."""
    from epslap.cpu.estimate.driver import estimate_rows
    c = costfns.generate("rank1", n, seed=6)
    one = estimate_rows(c, n, n, c.dtype, integral=False)
    many = estimate_rows(c, n, n, c.dtype, integral=False, threads=3)
    for a, b in zip(one[:6], many[:6]):
        np.testing.assert_array_equal(a, b)


def _stages_ab_reference(c):
    """Stages A and B (docs/algorithm.md §2) written directly in NumPy, for float64 costs without
    inf: (gap_i, gap, g0, v of stage A, stage B's picks, stage B's regrets)."""
    c = c + 0.0  # -0.0 ties +0.0, as in the kernel
    n1, n2 = c.shape
    rmin = c.min(axis=1)
    taken = np.zeros(n2, bool)
    g_a = 0.0
    for i in range(n1):  # A: the first unpicked minimiser of each row, in row order
        p = int(np.flatnonzero(~taken & (c[i] == c[i][~taken].min()))[0])
        taken[p] = True
        g_a += c[i, p]
    red = np.sort(c - rmin[:, None], axis=0)
    v = red[1] if n1 > 1 else red[0]
    v = v - v.max()
    t = c - v
    taken[:] = False
    pick = np.empty(n1, np.int64)
    regret = np.empty(n1)
    lb_b = ub_b = 0.0
    for i in range(n1 - 1, -1, -1):  # B: the same greedy on c - v, rows back to front
        q = int(np.flatnonzero(~taken & (t[i] == t[i][~taken].min()))[0])
        taken[q] = True
        pick[i] = q
        j0 = int(np.argmin(t[i]))
        regret[i] = np.delete(t[i], j0).min() - t[i, j0]
        lb_b += t[i].min() + v[q]
        ub_b += c[i, q]
    ub_id = np.trace(c[:, :n1])
    lb_a = rmin.sum()
    g_a = min(g_a, ub_id)
    return ub_id - lb_a, min(ub_b, g_a) - lb_b, g_a - lb_a, v, pick, regret


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("name,shape", [("random", (300, 300)), ("rank1", (300, 300)),
                                        ("ties", (200, 240)), ("rank1", (150, 200))])
def test_stages_a_and_b_against_a_direct_reference(name, shape, threads):
    """Stages A and B on 1-3 column slices (software-pipelined: each thread reads the next row
    before it waits for the current row's pick) against a direct NumPy transcription. rank1 has
    every row's minimiser in the same columns, so the next row's pick is recomputed after the
    current one takes its column; "ties" has many equal costs (lowest-index rule)."""
    n1, n2 = shape
    if name == "ties":
        c = np.random.default_rng(3).integers(0, 4, shape).astype(np.float64)
    else:
        c = np.ascontiguousarray(costfns.generate(name, n2, seed=6)[:n1])
    gap_i, gap, g0, v_ref, pick_ref, regret_ref = _stages_ab_reference(c)
    pick = np.empty(n1, np.int64)
    stages = est.CpuStages(ro(c), [np.empty(n2) for _ in range(threads)], n1, n2, np.empty(n2),
                           np.empty(n1, np.int64), pick, False)
    ab = stages.stages_ab()
    assert ab is not None and stages.status == STATUS_OK
    np.testing.assert_allclose(ab, [gap_i, gap, g0], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(stages.vf, v_ref, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(pick, pick_ref)
    np.testing.assert_allclose(stages.regret, regret_ref, rtol=0, atol=1e-12)
