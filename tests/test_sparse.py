"""Sparse cost input: absent pairs forbidden, against scipy on the dense matrix with inf."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linear_sum_assignment as scipy_lsa

import epslap
from conftest import gpu
from epslap.sparse import canonical_sparse, is_sparse, solve_canonical


def _dense(n1, n2, rows, cols, vals, maximize):
    out = np.full((n1, n2), -np.inf if maximize else np.inf)
    out[rows, cols] = vals
    return out


def _reference(dense, maximize):
    try:
        r, k = scipy_lsa(dense, maximize=maximize)
    except ValueError:
        return None
    return dense[r, k].sum()


@st.composite
def _problems(draw):
    n1 = draw(st.integers(1, 14))
    n2 = draw(st.integers(1, 14))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    mask = rng.random((n1, n2)) < draw(st.floats(0.15, 1.0))
    dtype = draw(st.sampled_from(["f8", "f4", "i8", "i4", "u2", "bool"]))
    if dtype == "bool":
        vals = rng.integers(0, 2, (n1, n2)).astype(bool)
    elif dtype[0] in "iu":
        lo = 0 if dtype[0] == "u" else -60
        vals = rng.integers(lo, 60, (n1, n2)).astype(dtype)  # small ranges: many ties
    else:
        vals = rng.normal(size=(n1, n2)).astype(dtype)
    fmt = draw(st.sampled_from(["csr", "csc", "coo", "triple"]))
    maximize = draw(st.booleans())
    return n1, n2, mask, vals, fmt, maximize


def _as_format(n1, n2, mask, vals, fmt):
    rows, cols = np.nonzero(mask)
    m = sp.coo_array((vals[mask], (rows, cols)), shape=(n1, n2))
    if fmt == "triple":
        c = m.tocsr()
        return (c.indptr, c.indices, c.data, n2)
    return m.asformat(fmt)


@settings(max_examples=150, deadline=None)
@given(_problems())
def test_sparse_matches_dense_with_inf(problem):
    n1, n2, mask, vals, fmt, maximize = problem
    cost = _as_format(n1, n2, mask, vals, fmt)
    solved = _solved_as_dense(cost, n1, n2, mask, vals, maximize)
    if solved is None:
        return
    sol, dense, want = solved
    assert sol.row_ind.size == min(n1, n2)
    assert sol.cost == pytest.approx(want, rel=1e-9, abs=1e-9)
    rep = epslap.verify(cost, sol.row_ind, sol.col_ind, sol.u, sol.v, maximize=maximize)
    assert rep["optimal"], rep["reason"]
    assert rep["exact"] == (vals.dtype.kind in "biu")
    r2, c2 = epslap.linear_sum_assignment(cost, maximize=maximize)
    assert dense[r2, c2].sum() == pytest.approx(want, rel=1e-9, abs=1e-9)


def _solved_as_dense(cost, n1, n2, mask, vals, maximize):
    """``(Solution, dense matrix with inf, scipy's optimum)`` of the sparse ``cost``, its
    optimum and certificate checked on the dense matrix; None where it is infeasible (and
    ``solve`` said so)."""
    rows, cols = np.nonzero(mask)
    dense = _dense(n1, n2, rows, cols, vals[mask].astype(np.float64), maximize)
    want = _reference(dense, maximize)
    if want is None:
        with pytest.raises(epslap.InfeasibleError):
            epslap.solve(cost, maximize=maximize)
        return None
    sol = epslap.solve(cost, maximize=maximize)
    assert dense[sol.row_ind, sol.col_ind].sum() == pytest.approx(want, rel=1e-9, abs=1e-9)
    ref = epslap.verify(dense, sol.row_ind, sol.col_ind, sol.u, sol.v, maximize=maximize)
    assert ref["optimal"], ref["reason"]
    return sol, dense, want


def test_explicit_zero_is_a_cost_and_absent_is_forbidden():
    # the cheap-looking absent pair (0, 0) must not be used; the stored zero (0, 1) is a cost
    m = sp.csr_array((np.array([0.0, 5.0, 1.0]), (np.array([0, 1, 1]), np.array([1, 0, 1]))),
                     shape=(2, 2))
    sol = epslap.solve(m)
    assert list(sol.col_ind) == [1, 0] and sol.cost == 5.0
    with pytest.raises(epslap.InfeasibleError, match="infeasible"):
        epslap.solve(sp.csr_array((np.array([1.0, 2.0]), (np.array([0, 1]), np.array([0, 0]))),
                                  shape=(2, 2)))


def test_stored_inf_is_forbidden_and_bad_values_are_named():
    m = sp.csr_array(np.array([[np.inf, 1.0], [2.0, 3.0]]))
    assert epslap.solve(m).cost == 3.0
    with pytest.raises(ValueError, match="NaN"):
        epslap.solve(sp.csr_array(np.array([[np.nan, 1.0], [2.0, 3.0]])))
    with pytest.raises(ValueError, match="-inf"):
        epslap.solve(sp.csr_array(np.array([[-np.inf, 1.0], [2.0, 3.0]])))
    with pytest.raises(ValueError, match="maximize"):
        epslap.solve(sp.csr_array(np.array([[np.inf, 1.0], [2.0, 3.0]])), maximize=True)
    with pytest.raises(ValueError, match="overflow"):
        epslap.solve(sp.csr_array(np.array([[2**61, 1], [2, 3]], dtype=np.int64)))
    with pytest.raises(ValueError, match="2\\*\\*1020"):
        epslap.solve(sp.csr_array(np.array([[1e307, 1.0], [2.0, 3.0]])))


def test_layout_errors_are_named():
    indptr, indices = np.array([0, 1, 2]), np.array([0, 1])
    with pytest.raises(ValueError, match="more than once"):
        epslap.solve((np.array([0, 2, 3]), np.array([1, 1, 0]), np.array([1.0, 2.0, 3.0])))
    with pytest.raises(ValueError, match="more than once"):
        epslap.solve(sp.coo_array((np.array([1.0, 2.0, 3.0]),
                                   (np.array([0, 0, 1]), np.array([1, 1, 0]))), shape=(2, 2)))
    with pytest.raises(ValueError, match="column index"):
        epslap.solve((indptr, np.array([0, 5]), np.array([1.0, 2.0]), 3))
    with pytest.raises(ValueError, match="CSR layout"):
        epslap.solve((np.array([0, 3, 1]), indices, np.array([1.0, 2.0])))
    with pytest.raises(TypeError, match="integer"):
        epslap.solve((indptr, indices.astype(float), np.array([1.0, 2.0]), 2))
    with pytest.raises(ValueError, match="n_cols"):
        epslap.solve((indptr, indices, np.array([1.0, 2.0]), -1))
    with pytest.raises(ValueError, match="cost_limit"):
        epslap.solve(sp.csr_array(np.eye(2)), cost_limit=3.0)


def test_triple_forms():
    # n_cols given: a trailing column without pairs still counts (3 rows, 4 columns: fine;
    # 4 rows, 3 stored columns of 4 would be infeasible)
    indptr, indices, data = np.array([0, 1, 2, 3]), np.array([0, 1, 2]), np.array([1., 2., 3.])
    assert epslap.solve((indptr, indices, data, 4)).cost == 6.0
    assert epslap.solve((indptr, indices, data)).cost == 6.0
    with pytest.raises(epslap.InfeasibleError):  # 4 x 4, only 3 columns stored
        epslap.solve((np.array([0, 1, 2, 3, 4]), np.array([0, 1, 2, 0]), np.ones(4), 4))
    # a dense 3 x 2 matrix given as a tuple of rows is not mistaken for CSR
    rows3 = (np.array([1.0, 2.0]), np.array([3.0, 4.0]), np.array([5.0, 0.0]))
    assert not is_sparse(rows3)
    assert epslap.solve(np.array(rows3)).cost == 1.0


def test_rectangular_duals_and_wide_problem():
    rng = np.random.default_rng(3)
    dense = rng.random((40, 300))
    dense[rng.random(dense.shape) < 0.7] = np.inf
    m = sp.csr_array(np.where(np.isinf(dense), 0, dense))
    m = sp.csr_array((dense[np.isfinite(dense)], np.nonzero(np.isfinite(dense))), shape=dense.shape)
    for cost, d in ((m, dense), (m.T.tocsr(), dense.T)):
        sol = epslap.solve(cost)
        assert sol.cost == pytest.approx(_reference(d, False), rel=1e-12)
        assert epslap.verify(cost, sol.row_ind, sol.col_ind, sol.u, sol.v)["optimal"]


def test_exact_pass_from_scratch_after_the_auction_gives_up(monkeypatch):
    # a bid budget of one bid: every auction gives up, and the exact pass must start from an
    # empty assignment (the auction's last pairs once stayed in col_to_row: a crash or worse)
    import epslap.sparse as sparse_mod
    monkeypatch.setattr(sparse_mod, "AUCTION_BIDS_PER_PAIR", 0)
    rng = np.random.default_rng(8)
    dense = rng.random((300, 300))
    dense[rng.random(dense.shape) < 0.9] = np.inf
    np.fill_diagonal(dense, rng.random(300))
    m = sp.csr_array((dense[np.isfinite(dense)], np.nonzero(np.isfinite(dense))), shape=dense.shape)
    sol = epslap.solve(m)
    assert sol.stats["auction_gave_up"]
    assert sol.cost == pytest.approx(_reference(dense, False), rel=1e-12)
    assert epslap.verify(m, sol.row_ind, sol.col_ind, sol.u, sol.v)["optimal"]


@pytest.mark.parametrize("integral", [False, True])
def test_auction_on_threads_leaves_the_exact_answer(integral, monkeypatch):
    """The lock-free auction phase on two threads (``cpu.parallel_auction``, the host's end of
    the GPU's phases): whatever the races do to the prices, ``mend`` leaves a consistent
    assignment and the exact pass the optimum (every phase shared, down to a few free rows)."""
    import epslap.cpu.parallel_auction as pa
    monkeypatch.setattr(pa, "PARALLEL_MIN", 2)
    rng = np.random.default_rng(11)
    for trial in range(6):
        n = int(rng.integers(50, 400))
        dense = rng.integers(0, 40, (n, n)).astype(float) if integral else rng.random((n, n))
        dense[rng.random(dense.shape) < 0.85] = np.inf
        np.fill_diagonal(dense, rng.integers(0, 40, n) if integral else rng.random(n))
        rows, cols = np.nonzero(np.isfinite(dense))
        vals = dense[rows, cols].astype(np.int64 if integral else np.float64)
        prob = canonical_sparse(sp.csr_array((vals, (rows, cols)), shape=(n, n)), False)
        row_to_col, v, assigned, st_ = solve_canonical(prob, auction=pa.parallel_auction(2))
        assert st_["auction_bids"] > 0 and len(st_["epsilons"]) > 1
        assert sorted(row_to_col) == list(range(n))
        assert assigned.sum() == pytest.approx(_reference(dense, False), rel=1e-12)


def test_mend_keeps_only_pairs_both_sides_name():
    from epslap.cpu.parallel_auction import mend
    row_to_col = np.array([0, 0, 2, -1, 1], np.int64)   # rows 0 and 1 both claim column 0
    col_to_row = np.array([1, 3, 2, -1, -1], np.int64)  # column 1 names row 3, which is free
    assert mend(row_to_col, col_to_row) == 3
    assert row_to_col.tolist() == [-1, 0, 2, -1, -1]
    assert col_to_row.tolist() == [1, -1, 2, -1, -1]


def test_wrong_duals_never_certify():
    rng = np.random.default_rng(5)
    dense = rng.integers(0, 100, (30, 30))
    m = sp.csr_array(dense)
    sol = epslap.solve(m)
    for t in range(20):
        u, v = sol.u.copy(), sol.v.copy()
        u[t % 30] += 1
        assert not epslap.verify(m, sol.row_ind, sol.col_ind, u, v)["optimal"]
    col = sol.col_ind.copy()
    col[[0, 1]] = col[[1, 0]]
    rep = epslap.verify(m, sol.row_ind, col, sol.u, sol.v)
    assert not rep["optimal"]
    # an assigned pair that is not stored is infinite
    holes = sp.csr_array((np.ones(2), (np.array([0, 1]), np.array([0, 1]))), shape=(2, 2))
    rep = epslap.verify(holes, [0, 1], [1, 0], [0.0, 0.0], [0.0, 0.0])
    assert not rep["optimal"] and "infinite" in rep["reason"]


def test_warm_start_after_new_pairs():
    """The candidates method's re-solve: a solved problem gains pairs, some undercutting the
    assignment; the warm exact pass gives the new optimum."""
    rng = np.random.default_rng(11)
    n = 60
    full = rng.random((n, n))
    mask = rng.random((n, n)) < 0.1
    mask[np.arange(n), rng.permutation(n)] = True
    small = sp.csr_array((full[mask], np.nonzero(mask)), shape=(n, n))
    prob = canonical_sparse(small, False)
    row_to_col, v, _, stats = solve_canonical(prob)
    assert stats["passes"] >= 2 and stats["auction_bids"] > 0  # the auction set the prices
    more = mask | (rng.random((n, n)) < 0.1)
    big = sp.csr_array((full[more], np.nonzero(more)), shape=(n, n))
    row_to_col2, v2, assigned, stats2 = solve_canonical(canonical_sparse(big, False), v=v,
                                                        row_to_col=row_to_col)
    assert stats2["rows_freed"] > 0
    want = _reference(np.where(more, full, np.inf), False)
    assert full[np.arange(n), row_to_col2].sum() == pytest.approx(want, rel=1e-12)


def test_warm_start_keeps_ties_that_a_price_shift_rounded_apart():
    """Shifting every price by a constant rounds each c - v anew, so pairs that tied their
    row's minimum may sit a unit of roundoff above it: a warm start keeps those rows (freeing
    them cost a search each over the ties around them) and its duals still meet verify."""
    from benchmarks.sparse import knn_graph
    m = knn_graph(3000, 20)
    prob = canonical_sparse(m, False)
    row_to_col, v, _, _ = solve_canonical(prob)
    moved = v - 1e-3 * np.abs(v).max()  # every price rounds, at the scale of the prices
    red = prob.data - moved[prob.indices]
    rows = np.repeat(np.arange(prob.n1), np.diff(prob.indptr))
    own = red[prob.indices == row_to_col[rows]]
    assert (own > np.minimum.reduceat(red, prob.indptr[:-1])).any()  # ties split by rounding
    row_to_col2, v2, assigned, stats = solve_canonical(prob, v=moved, row_to_col=row_to_col)
    assert stats["rows_freed"] == 0 and (row_to_col2 == row_to_col).all()
    u = assigned - v2[row_to_col2]
    rep = epslap.verify(m, np.arange(prob.n1), row_to_col2, u, v2)
    assert rep["optimal"], rep["reason"]


def test_float_duals_of_a_dense_knn_graph_meet_verify():
    """Prices that the auction left far below 0 and then shifted would round u and v apart at
    tight pairs of tiny costs (a 50-nearest-neighbour graph: thousands of pairs): they move to
    the reported position before the exact pass, and the duals meet verify's rule."""
    from benchmarks.sparse import knn_graph
    m = knn_graph(3000, 50)
    sol = epslap.solve(m)
    rep = epslap.verify(m, sol.row_ind, sol.col_ind, sol.u, sol.v)
    assert rep["optimal"], rep["reason"]  # the dual certificate: optimal on the stored pairs


def test_repair_mends_prices_rounded_apart():
    """The safety net: prices raised by many units in the last place (as rounding at a larger
    scale would leave them) miss verify's rule; the repair lowers them until every stored pair
    meets it again, without touching the assignment."""
    from benchmarks.sparse import knn_graph
    from epslap.certificate import RTOL
    from epslap.cpu.sparse import repair_duals
    m = knn_graph(2000, 20)
    prob = canonical_sparse(m, False)
    r2c, v, assigned, _ = solve_canonical(prob)
    bad = v + np.abs(v) * 2.0**-40 * np.random.default_rng(0).random(v.size)
    u = assigned - bad[r2c]
    assert not epslap.verify(m, np.arange(2000), r2c, u, bad)["optimal"]
    reads, lowered = repair_duals(prob.indptr, prob.indices, prob.data, bad, r2c, RTOL,
                                  np.int64(64 * 2000 + 1000))
    assert reads > 0 and lowered > 0
    rep = epslap.verify(m, np.arange(2000), r2c, assigned - bad[r2c], bad)
    assert rep["optimal"], rep["reason"]


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("integral", [False, True])
def test_gpu_sparse_against_scipy(integral):
    """backend='gpu': the auction phases on the device over the stored pairs, the exact pass
    on the host; square (the auction runs), rectangular both ways, maximize."""
    rng = np.random.default_rng(11 + integral)
    for shape in ((400, 400), (150, 260), (260, 150)):
        dense = (rng.integers(-50, 500, shape) if integral else rng.random(shape)).astype(
            np.int64 if integral else np.float64)
        keep = rng.random(shape) < 0.08
        np.fill_diagonal(keep, True)
        rows, cols = np.nonzero(keep)
        m = sp.csr_array((dense[keep], (rows, cols)), shape=shape)
        for maximize in (False, True):
            sol = epslap.solve(m, backend="gpu", maximize=maximize)
            want = _reference(_dense(*shape, rows, cols, dense[keep], maximize), maximize)
            assert sol.cost == pytest.approx(want, rel=1e-12)
            assert sol.stats["backend"] == "gpu"
            assert epslap.verify(m, sol.row_ind, sol.col_ind, sol.u, sol.v,
                                 maximize=maximize)["optimal"]
            if shape[0] == shape[1]:
                assert sol.stats["auction_bids"] > 0


def test_sparse_on_other_backends_is_refused():
    m = sp.csr_array(np.eye(3))
    with pytest.raises(ValueError, match="backend='cpu' or 'gpu'"):
        epslap.solve(m, backend="hungarian-gpu")


@pytest.mark.parametrize("integral", [False, True])
def test_a_bid_s_view_of_a_row_against_numpy(integral):
    """``cpu.sparse.best_two`` (branch-free): the first column of the least ``c - v``, that
    least and the second least (equal to it on a tie), over rows with ties, one pair or none."""
    from epslap.cpu.sparse import best_two
    rng = np.random.default_rng(8)
    work = np.int64 if integral else np.float64
    lengths = [0, 1, 2, 5, 40, 40, 7]
    indptr = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    indices = rng.integers(0, 30, indptr[-1]).astype(np.int64)
    data = rng.integers(0, 6, indptr[-1]).astype(work)  # many ties
    v = rng.integers(0, 3, 30).astype(work)
    big = work(2**62) if integral else np.inf
    for i in range(len(lengths)):
        arg, best, second = best_two(indptr, indices, data, v, i, big)
        r = data[indptr[i]:indptr[i + 1]] - v[indices[indptr[i]:indptr[i + 1]]]
        if r.size == 0:
            assert (arg, best, second) == (-1, big, big)
            continue
        order = np.argsort(r, kind="stable")
        assert arg == indices[indptr[i] + order[0]] and best == r[order[0]]
        assert second == (r[order[1]] if r.size > 1 else big)


def test_a_one_dimensional_sparse_array_is_refused_like_a_dense_one():
    x = sp.coo_array(np.array([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="expected a matrix .2-D sparse array., got a 1-D"):
        epslap.solve(x)
    with pytest.raises(ValueError, match="got a 1-D"):
        epslap.verify(x, [0], [0], [0.0], [0.0])


def test_relabeled_problems_give_the_optimum_in_the_labels_given(monkeypatch):
    """Every problem relabeled (``epslap.locality.sparse_order`` forced): the optimum, duals
    that certify it and the pairs in the caller's labels, rectangular both ways, maximised,
    integer and float; an infeasible one still named."""
    import epslap.locality as loc
    monkeypatch.setattr(loc, "SPARSE_RELABEL_FROM", 0)
    monkeypatch.setattr(loc, "SPARSE_SCATTERED", -1.0)
    monkeypatch.setattr(loc, "SPARSE_SHARED_MIN", -1.0)
    rng = np.random.default_rng(17)
    relabeled = 0
    for trial in range(120):
        n1, n2 = (int(x) for x in rng.integers(1, 16, 2))
        mask = rng.random((n1, n2)) < rng.uniform(0.2, 1.0)
        vals = (rng.integers(-20, 20, (n1, n2)) if trial % 2 else rng.normal(size=(n1, n2)))
        maximize = bool(trial % 3 == 0)
        cost = _as_format(n1, n2, mask, vals, ["csr", "csc", "coo", "triple"][trial % 4])
        solved = _solved_as_dense(cost, n1, n2, mask, vals, maximize)
        if solved is not None:
            relabeled += solved[0].stats["relabeled"]
    assert relabeled > 50


def test_a_scattered_neighbour_graph_is_relabeled_and_an_ordered_one_is_not():
    """A k-nearest-neighbour graph of points in random order has each row's columns all over
    the labels: it is solved in its graph's order (``stats["relabeled"]``); the same graph
    with rows and columns in the points' spatial order is solved as given; the same optimum,
    certified."""
    from scipy.spatial import cKDTree

    from epslap.locality import SPARSE_RELABEL_FROM, morton_order
    n, k = 30_000, 10
    rng = np.random.default_rng(4)
    x, y = rng.random((n, 2)), rng.random((n, 2))

    dist, idx = cKDTree(y).query(x, k=k)
    rows = np.concatenate([np.repeat(np.arange(n), k), np.arange(n)])
    cols = np.concatenate([idx.ravel(), np.arange(n)])
    vals = np.concatenate([(dist ** 2).ravel(), ((x - y) ** 2).sum(1)])
    scattered = sp.coo_array((vals, (rows, cols)), shape=(n, n)).tocsr()  # (duplicates summed)
    assert scattered.nnz >= SPARSE_RELABEL_FROM
    box = (np.zeros(2), np.ones(2))
    ordered = sp.csr_array(scattered[morton_order(x, *box)][:, morton_order(y, *box)])
    a, b = epslap.solve(scattered), epslap.solve(ordered)
    assert a.stats["relabeled"] and not b.stats["relabeled"]
    assert a.cost == pytest.approx(b.cost, rel=1e-12)
    for cost, sol in ((scattered, a), (ordered, b)):
        assert epslap.verify(cost, sol.row_ind, sol.col_ind, sol.u, sol.v)["optimal"]
        assert np.asarray(cost[sol.row_ind, sol.col_ind]).sum() == pytest.approx(sol.cost)


def test_a_dia_matrix_with_zeros_on_its_diagonals_is_refused_in_its_own_words():
    """DIA stores whole diagonals: a zero there may be a cost or padding, and SciPy's
    conversions drop it (this read as a pair stored twice); without zeros DIA solves."""
    zero = sp.dia_matrix((np.array([[1., 0., 3.], [0., 5., 6.]]), [0, 1]), shape=(3, 3))
    with pytest.raises(ValueError, match="DIA format holds zeros"):
        epslap.solve(zero)
    full = sp.dia_matrix((np.array([[1., 2., 3.], [0., 5., 6.]]), [0, 1]), shape=(3, 3))
    assert epslap.solve(full).cost == 6.0  # the diagonal: the only complete assignment


def test_bsr_padding_extended_precision_and_an_empty_tuple_are_refused_by_name():
    """A BSR block stores every pair it covers, so its zeros may be padding (they were solved
    as zero costs: 3.0 where the stored pairs give 5.0); float128 data was cast to float64
    (1e396 became +inf, a forbidden pair: "infeasible"); an empty tuple raised an IndexError."""
    padded = sp.csr_matrix([[1., 0.], [3., 4.]]).tobsr()
    with pytest.raises(ValueError, match="BSR format holds zeros"):
        epslap.solve(padded)
    assert epslap.solve(sp.csr_matrix([[1., 2.], [3., 4.]]).tobsr()).cost == 5.0
    huge = np.array([1, 1e4, 1, 1], np.longdouble)
    with pytest.raises(TypeError, match="extended precision"):
        epslap.solve((np.array([0, 2, 4]), np.array([0, 1, 0, 1]), huge))
    with pytest.raises(ValueError, match="indptr is empty"):
        epslap.solve((np.array([], np.int64), np.array([], np.int64), np.array([])))


def test_a_random_sparse_graph_keeps_its_labels():
    """Scattered labels but no neighbourhoods (a row's two cheapest columns share no other
    row): no order would put them near, and the order's own cost (0.3-0.45 s of a 1.3 s solve
    at 300,000 rows) would be paid for nothing."""
    from epslap.locality import SPARSE_RELABEL_FROM
    n, k = 40_000, 8
    rng = np.random.default_rng(2)
    cols = rng.integers(0, n, n * k)
    cols[::k] = np.arange(n)
    s = sp.csr_array((rng.random(n * k), (np.repeat(np.arange(n), k), cols)), shape=(n, n))
    assert s.nnz >= SPARSE_RELABEL_FROM
    sol = epslap.solve(s)
    assert not sol.stats["relabeled"]
    assert epslap.verify(s, sol.row_ind, sol.col_ind, sol.u, sol.v)["optimal"]


def test_an_infeasible_relabeled_problem_names_its_row_as_given():
    """A row that stores no pair in a neighbour graph solved in its graph's order was named by
    its new label."""
    from scipy.spatial import cKDTree
    n, k = 30_000, 10
    rng = np.random.default_rng(4)
    x, y = rng.random((n, 2)), rng.random((n, 2))
    _, idx = cKDTree(y).query(x, k=k)
    rows, cols = np.repeat(np.arange(n), k), idx.ravel()
    keep = rows != 5
    s = sp.coo_array((np.ones(keep.sum()), (rows[keep], cols[keep])), shape=(n, n)).tocsr()
    with pytest.raises(epslap.InfeasibleError, match="row 5 stores no pair"):
        epslap.solve(s)


def _hidden_hall_violation(n1, n2, seed=0):
    """Rows 0-4 store pairs in columns 0-3 only, the other rows in columns 4 and up: every line
    stores pairs, no complete assignment exists, and only a set of lines shows it."""
    rng = np.random.default_rng(seed)
    dense = np.full((n1, n2), np.inf)
    dense[:5, :4] = rng.random((5, 4))
    dense[5:, 4:] = rng.random((n1 - 5, n2 - 4))
    return dense


@pytest.mark.parametrize("scipy_present", [True, False])
def test_a_hall_violation_no_line_shows_is_named(scipy_present, monkeypatch):
    """Five rows sharing four columns: named at once by a maximum matching (the auction bid
    until its budget ran out: 17 s at n = 2000 with 300 pairs a row), and without SciPy still
    refused (by the exact pass)."""
    import builtins
    real_import = builtins.__import__
    if not scipy_present:
        def no_csgraph(name, *args, **kwargs):
            if name.startswith("scipy.sparse"):
                raise ImportError(name)
            return real_import(name, *args, **kwargs)
        monkeypatch.setattr(builtins, "__import__", no_csgraph)
    dense = _hidden_hall_violation(12, 12)
    m = sp.csr_array((dense[np.isfinite(dense)], np.nonzero(np.isfinite(dense))), shape=(12, 12))
    assert _reference(dense, False) is None  # scipy agrees: infeasible
    with pytest.raises(epslap.InfeasibleError) as err:
        epslap.solve(m)
    if scipy_present:
        assert "(5 rows, among them row " in str(err.value)
        assert "store pairs in only 4 columns" in str(err.value)
    # wider and taller: a tall problem's lines are its columns
    wide = _hidden_hall_violation(9, 14)
    tall = wide.T
    for d, words in ((wide, "(5 rows, among them row "), (tall, "(5 columns, among them column ")):
        s = sp.csr_array((d[np.isfinite(d)], np.nonzero(np.isfinite(d))), shape=d.shape)
        with pytest.raises(epslap.InfeasibleError) as err:
            epslap.solve(s)
        if scipy_present:
            assert words in str(err.value)
            assert "store pairs in only 4 " in str(err.value)


def test_a_hall_violation_is_named_before_the_auction_bids(monkeypatch):
    """n = 400, 60 pairs a row, a violation by 200 rows sharing 199 columns: the matching
    check decides before any auction phase (which would bid until its budget ran out)."""
    import epslap.sparse as sparse_mod

    def no_auction(*args, **kwargs):
        raise AssertionError("the auction ran on an infeasible problem")
    monkeypatch.setattr(sparse_mod, "_auction_phases", no_auction)
    rng = np.random.default_rng(0)
    n, k = 400, 60
    cols = np.concatenate([rng.choice(199 if i < 200 else n, k, replace=False) for i in range(n)])
    rows = np.repeat(np.arange(n), k)
    m = sp.csr_array((rng.random(rows.size), (rows, cols)), shape=(n, n))
    with pytest.raises(epslap.InfeasibleError, match=r"\(200 rows, among them row \d+, store "
                                                     r"pairs in only 199 columns\)"):
        epslap.solve(m)
