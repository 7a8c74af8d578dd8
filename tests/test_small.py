"""The small-problem path (epslap/cpu/jv.py, docs/algorithm.md §9) against scipy: every shape up
to 30 on many seeds, rectangular both ways, ties, +inf, integers, maximisation, errors, and the
dual certificate of every answer."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

import epslap
from epslap.cpu import jv, small


def _reference(c, maximize=False):
    r, k = linear_sum_assignment(c, maximize=maximize)
    return c[r, k].sum()


def _check(c, maximize=False, **options):
    sol = epslap.solve(c, maximize=maximize, **options)
    assert sol.stats["method"] == "jv"
    assert sol.cost == pytest.approx(_reference(c, maximize), rel=1e-12, abs=1e-12)
    assert len(sol.row_ind) == min(c.shape)
    assert len(np.unique(sol.col_ind)) == len(sol.col_ind)
    cert = epslap.verify(c, sol.row_ind, sol.col_ind, sol.u, sol.v, maximize=maximize)
    assert cert["optimal"], cert
    return sol


@pytest.mark.parametrize("n1", range(1, 31))
def test_every_shape_up_to_30(n1):
    rng = np.random.default_rng(n1)
    for n2 in range(1, 31):
        for kind in range(4):
            if kind == 0:
                c = rng.random((n1, n2))
            elif kind == 1:  # many ties
                c = rng.integers(0, 3, (n1, n2)).astype(np.float64)
            elif kind == 2:
                c = rng.integers(-5, 6, (n1, n2))
            else:  # forbidden pairs, still feasible: one finite cost per row on a permutation
                c = rng.random((n1, n2))
                c[rng.random((n1, n2)) < 0.4] = np.inf
                cols = rng.permutation(max(n1, n2))
                if n1 <= n2:
                    c[np.arange(n1), cols[:n1]] = rng.random(n1)
                else:
                    c[cols[:n2], np.arange(n2)] = rng.random(n2)
            _check(c, maximize=bool(kind & 1) and kind != 3)


@pytest.mark.parametrize("seed", range(40))
def test_square_sizes_around_the_crossover(seed):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(31, small.MAX_SQUARE + 1))
    pts_a, pts_b = rng.random((n, 2)), rng.random((n, 2))
    geometric = ((pts_a[:, None] - pts_b[None]) ** 2).sum(-1)
    _check(geometric if seed % 2 else rng.random((n, n)), candidates=False)


@pytest.mark.parametrize("n", [small.AUTO_FLOAT_FROM - 1, small.AUTO_FLOAT_FROM])
def test_float_matrices_leave_the_small_path_for_autos_sample_from_its_size(n):
    """From ``AUTO_FLOAT_FROM`` columns a square float matrix goes to ``"auto"``'s sample (and
    a random one to the candidates) in ``solve`` and in the drop-in alike; an integer matrix
    of that size stays on the small path."""
    rng = np.random.default_rng(n)
    c = rng.random((n, n))
    taken = n >= small.AUTO_FLOAT_FROM
    if taken:
        assert small.small_assignment(c, False) is None
    else:
        assert small.small_assignment(c, False) is not None
    ties = np.round(c, 1)  # ties among each row's cheapest costs: the small path's
    assert epslap.solve(ties).stats["method"] == "jv"
    assert "tie" in epslap.solve(ties).stats.get("candidates", "tie")
    sol = epslap.solve(c)
    assert sol.stats["method"] == ("candidates" if taken else "jv")
    assert sol.cost == pytest.approx(_reference(c, False), rel=1e-12)
    r, k = epslap.linear_sum_assignment(c)
    assert c[r, k].sum() == pytest.approx(sol.cost, rel=1e-12)
    assert epslap.solve((c * 1000).astype(np.int64)).stats["method"] == "jv"
    assert epslap.solve(rng.random((n, n + 100))).stats["method"] == "jv"  # (not square)


def test_rectangular_few_rows_many_columns():
    """Few rows: only real rows are augmented (no virtual rows padding to a square)."""
    rng = np.random.default_rng(7)
    for shape in [(2, 8000), (20, 4000), (8000, 2), (200, 1000)]:
        sol = _check(rng.random(shape))
        assert sol.stats["rows_evaluated"] < 50 * min(shape)


def test_a_row_whose_least_cost_is_at_a_free_column_takes_it():
    """The search's shortcut (jv._least_and_free): a row whose least reduced cost lies at a free
    column takes that column, the first one on ties, a free one before an assigned one, and
    -0.0 against 0.0 is a tie as in the search."""
    rng = np.random.default_rng(11)
    c = rng.random((10, 100))
    c[np.arange(10), np.arange(0, 100, 10)] = -1.0  # distinct least columns
    sol = _check(c)
    np.testing.assert_array_equal(sol.col_ind, np.arange(0, 100, 10))
    np.testing.assert_array_equal(_check(c.T.copy()).row_ind, np.arange(0, 100, 10))
    ties = np.array([[0.0, 1.0, 1.0, 5.0], [1.0, 0.0, 0.0, 5.0], [0.0, 0.0, 2.0, 0.0]])
    np.testing.assert_array_equal(_check(ties).col_ind, [0, 1, 3])
    zeros = np.array([[-0.0, 3.0, 3.0], [-0.0, 0.0, 3.0]])
    np.testing.assert_array_equal(_check(zeros).col_ind, [0, 1])
    np.testing.assert_array_equal(epslap.linear_sum_assignment(zeros)[1], [0, 1])


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64, np.uint8, np.bool_])
def test_dtypes(dtype):
    rng = np.random.default_rng(3)
    c = (rng.random((12, 17)) * 50).astype(dtype)
    sol = _check(c)
    assert isinstance(sol.cost, float if np.dtype(dtype).kind == "f" else int)


def test_errors_match_the_epsilon_path():
    c = np.ones((4, 4))
    c[1, 2] = np.nan
    with pytest.raises(ValueError, match="invalid numeric entries"):
        epslap.solve(c)
    c[1, 2] = -np.inf
    with pytest.raises(ValueError, match="invalid numeric entries"):
        epslap.solve(c)
    c = np.ones((3, 3))
    c[0, :] = np.inf
    with pytest.raises(ValueError, match="infeasible"):
        epslap.solve(c)
    c = np.full((3, 5), np.inf)
    c[0, 1] = c[1, 1] = c[2, 3] = 1.0  # rows 0 and 1 both need column 1
    with pytest.raises(ValueError, match="infeasible"):
        epslap.solve(c)


def test_unassigned_columns_hold_dual_zero():
    rng = np.random.default_rng(5)
    c = rng.random((6, 40)) + 3.0
    sol = _check(c)
    free = np.setdiff1d(np.arange(40), sol.col_ind)
    np.testing.assert_array_equal(sol.v[free], 0.0)
    assert (sol.v <= 0).all()


def test_large_offsets_keep_a_valid_certificate():
    """Costs 1e9 + U[0, 1): prices held far above the final spread are checked entry by entry."""
    rng = np.random.default_rng(9)
    _check(1e9 + rng.random((50, 50)))


@pytest.mark.parametrize("name", ["rank1", "rank2", "geometric", "disjoint"])
def test_polish_recomputes_duals_lowered_uniformly(name):
    """Maximising a rank-one matrix lowers every price while the rows are assigned: reduced
    costs held at |v| ~ 0.5 miss the per-entry rule of duals ~ 1e-3; the exact pass from the
    final prices (``jv.polish``) recomputes them at their own magnitude."""
    import costfns
    polished = 0
    for seed in range(3):
        c = costfns.generate(name, 80, seed=seed)  # below the row budget (jv.ROW_BUDGET)
        for maximize in (False, True):
            polished += _check(c, maximize).stats["polish_rows"] > 0
    if name == "rank1":
        assert polished > 0  # the case this guards was met


def test_duals_that_miss_the_rule_go_to_the_epsilon_path(monkeypatch):
    rng = np.random.default_rng(4)
    c = rng.random((30, 30))
    sol = epslap.solve(c)
    v, x = sol.v, sol.col_ind
    bad = v.copy()
    bad[3] += 1e-6  # a reduced cost below zero
    u = np.empty(30)
    assert jv._row_duals(c, v - v.max(), x, u)
    assert not jv._row_duals(c, bad - bad.max(), x, u)  # row 3's column is no longer its best

    def uncertified(m, maximize, xs, duals):
        return jv.NEEDS_EPSILON, 0.0, 0, 0
    monkeypatch.setitem(small._ENTRIES, c.dtype, uncertified)
    sol = epslap.solve(c)
    assert sol.stats.get("method") != "jv"
    assert sol.cost == pytest.approx(_reference(c), rel=1e-12)
    r, k = epslap.linear_sum_assignment(c)
    assert c[r, k].sum() == pytest.approx(_reference(c), rel=1e-12)


@pytest.mark.parametrize("seed", range(40))
def test_big_assigned_entry_keeps_a_valid_certificate(seed):
    """An assigned cost of -1e15 (a maximised 1e15) among costs of 1e-3: u_0 taken from the
    assigned pair, c_00 - v_0, is rounded at 1e15 and misses row 0's other entries by their whole
    size; the row's smallest reduced cost certifies every entry (``jv._row_duals``)."""
    c = np.random.default_rng(seed).random((19, 19)) * 1e-3
    c[0, 0] = 1e15
    sol = _check(c, maximize=True)
    assert sol.col_ind[0] == 0
    rest = np.delete(np.delete(c, 0, 0), 0, 1)
    r, k = linear_sum_assignment(rest, maximize=True)
    picked = c[sol.row_ind[1:], sol.col_ind[1:]].sum()
    assert picked == pytest.approx(rest[r, k].sum(), rel=1e-12)  # the small entries optimal too


def test_linear_sum_assignment_matches_solve():
    rng = np.random.default_rng(8)
    for shape in [(1, 1), (5, 5), (7, 3), (3, 7), (60, 60)]:
        for dtype in (np.float64, np.float32, np.int64, np.int32, np.uint8):
            c = (rng.random(shape) * 100).astype(dtype)
            for maximize in (False, True):
                sol = epslap.solve(c, maximize=maximize)
                r, k = epslap.linear_sum_assignment(c, maximize=maximize)
                np.testing.assert_array_equal(r, sol.row_ind)
                np.testing.assert_array_equal(k, sol.col_ind)
                assert r.dtype == np.int64 and k.dtype == np.int64
    f = np.asfortranarray(rng.random((9, 9)))  # not C-contiguous: converted once
    assert epslap.solve(f).cost == pytest.approx(_reference(f), rel=1e-12)


def test_linear_sum_assignment_edge_inputs():
    """The drop-in's own small path (no duals copied out) against scipy on the inputs it must
    hand on or convert: other layouts, read-only, truthy maximize flags, empty and wrong shapes,
    and the errors."""
    rng = np.random.default_rng(9)
    c = rng.random((6, 8))
    for m in (np.asfortranarray(c), c[:, ::2], c.T, c.astype(np.float16)):
        assert epslap.linear_sum_assignment(m)[1].tolist() == \
            linear_sum_assignment(m)[1].tolist()
    ro = c.copy()
    ro.flags.writeable = False
    assert epslap.linear_sum_assignment(ro)[1].tolist() == linear_sum_assignment(ro)[1].tolist()
    i32 = (c * 100).astype(np.int32)
    for flag in (np.bool_(True), 1, True):
        assert epslap.linear_sum_assignment(i32, flag)[1].tolist() == \
            linear_sum_assignment(i32, maximize=True)[1].tolist()
    for empty in (np.zeros((0, 3)), np.zeros((3, 0))):
        r, k = epslap.linear_sum_assignment(empty)
        assert r.size == k.size == 0
    with pytest.raises(ValueError):
        epslap.linear_sum_assignment(np.zeros((2, 2, 2)))
    bad = np.ones((4, 4))
    bad[1, 2] = np.nan
    with pytest.raises(ValueError, match="invalid numeric entries"):
        epslap.linear_sum_assignment(bad)
    bad[1, 2] = 1.0
    bad[0, :] = np.inf
    with pytest.raises(ValueError, match="infeasible"):
        epslap.linear_sum_assignment(bad)


def test_epsilon_false_and_large_square_keep_the_epsilon_path():
    rng = np.random.default_rng(2)
    assert epslap.solve(rng.random((20, 20)), epsilon=False).stats.get("method") != "jv"
    n = small.MAX_SQUARE + 1
    assert epslap.solve(rng.random((n, n))).stats.get("method") != "jv"


@pytest.mark.parametrize("name", ["rank1", "disjoint"])
def test_long_paths_hand_over_to_the_epsilon_path(name):
    """Low-rank and disjoint costs make plain shortest paths long (docs/algorithm.md §5): past
    jv.ROW_BUDGET rows per row the ε path takes over, and its answer is certified."""
    import costfns
    c = costfns.generate(name, 1000, seed=1)
    sol = epslap.solve(c)
    assert sol.stats["method"] == "eps"
    cert = epslap.verify(c, sol.row_ind, sol.col_ind, sol.u, sol.v)
    assert cert["optimal"], cert
    assert sol.cost == pytest.approx(_reference(c, False), rel=1e-12)


# two 2 x 2 matrices whose entries span 13-19 orders of magnitude (found by the hypothesis
# test of verify's rule): the row reductions priced a column at the scale of another row's
# cost (3.5e11) and the polish kept that rounding (the ε path then missed the rule too, with a
# warning); and a float check whose own rounding passed an assigned pair at 0.99 RTOL that
# verify's exact excess put at 1.004 RTOL
_SPREAD = [np.array([[float.fromhex(x) for x in row] for row in m]) for m in (
    [["-0x1.9beaa20fa574fp-24", "-0x1.4044c1d79fb34p-3"],
     ["-0x1.02833d374f220p-10", "-0x1.46e03dba8c336p+38"]],
    [["-0x1.b92f67e66c790p-15", "-0x1.8289570f11162p+9"],
     ["0x1.83c713b1d0f25p-3", "0x1.73896b83f67dbp+1"]])]


@pytest.mark.parametrize("k", range(len(_SPREAD)))
@pytest.mark.parametrize("maximize", [False, True])
def test_costs_spread_over_many_magnitudes_get_certified_duals(k, maximize):
    """The small path certifies both (the vector form's solve, from the column minima without
    the row reductions, after the polish; its checks keep their own rounding aside): no
    warning, duals that ``verify`` accepts, alone and in a batch."""
    import warnings
    c = _SPREAD[k]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sol = epslap.solve(c, maximize=maximize)
        batch = epslap.solve_batch(np.stack([c, c.T, c]), maximize=maximize)
    assert sol.stats["method"] == "jv"
    assert epslap.verify(c, sol.row_ind, sol.col_ind, sol.u, sol.v, maximize=maximize)["optimal"]
    for t, m in enumerate((c, c.T, c)):
        s = batch.solution(t)
        assert epslap.verify(m, s.row_ind, s.col_ind, s.u, s.v, maximize=maximize)["optimal"]
    xs, duals = np.empty(4, np.int64), np.empty(4)
    assert jv.solve_small(np.ascontiguousarray(c), maximize, xs, duals)[0] == 0


#: rectangular matrices whose first duals miss the rule (a tiny cost beside -1e4): the polish
#: freed every column at its old price and left the cheap column 1 unassigned at -1e4
_POLISH_TRAPS = [
    np.array([[-1e4, 0, 0, 0], [1, -1e4, 1, 0.1], [1e-9, -1e4, 0.1, 1]]),
    np.array([[-1e4, 0, 0, 0], [1, 1, 1, -1e4], [1e-9, 1, 1, -1e4]]),
]


@pytest.mark.parametrize("form", ["kernel", "vector"])
def test_a_rectangular_polish_never_leaves_a_cheap_column_free(form):
    """A polish of a rectangular problem is kept only where every column it leaves free is at
    the top price (the certificate's condition, as the GPU batch kernel checks it); else the ε
    path solves it: -19999.9, where the small path returned -9999.8 "optimal" before."""
    from epslap.cpu import jv_numpy
    entry = jv.solve_small if form == "kernel" else jv_numpy.solve_small
    for c in _POLISH_TRAPS:
        for m in (c, c.T.copy()):
            xs = np.empty(2 * min(m.shape), np.int64)
            duals = np.empty(sum(m.shape))
            status = entry(m, False, xs, duals)[0]
            if status == 0:  # certified: then it must be the optimum
                k = min(m.shape)
                r, j = linear_sum_assignment(m)
                assert m[xs[:k], xs[k:]].sum() == pytest.approx(m[r, j].sum(), rel=1e-12)
    d = _POLISH_TRAPS[0]
    for got in (epslap.solve(d).cost, d[epslap.linear_sum_assignment(d)].sum(),
                epslap.solve_batch(d[None]).cost[0], epslap.solve(d.T).cost):
        assert got == pytest.approx(-19999.9, rel=1e-12)
    c = np.array([[-1e4, 0, 0, 0], [1, 1, 1, -1e4], [1e-9, 1, 1, -1e4], [0, 0, -1e4, 0]])
    assert epslap.solve(c, cost_limit=0.1).cost == pytest.approx(-30000.0)  # via [c | limit]


def test_rectangular_matrices_of_mixed_magnitudes_against_scipy():
    """Costs in [0, 1], some -1e2 … -1e12 and some tiny ones, rectangular both ways; duals
    certified without a warning (seed 100: a row's dual, its pair's -1e9 minus a price near
    -1e9, held only 1.2e-7 of precision beside an entry of 1e-5 whose rule needed 1.6e-8)."""
    import warnings
    for seed in range(400):
        rng = np.random.default_rng(seed)
        n1, n2 = int(rng.integers(1, 12)), int(rng.integers(1, 12))
        c = rng.random((n1, n2))
        c[rng.random((n1, n2)) < rng.uniform(0.05, 0.4)] = -10.0 ** int(rng.integers(2, 13))
        tiny = rng.random((n1, n2)) < 0.1
        c[tiny] = 10.0 ** -rng.integers(3, 14, tiny.sum()).astype(float)
        r, j = linear_sum_assignment(c)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            sol = epslap.solve(c)
        assert sol.cost == pytest.approx(c[r, j].sum(), rel=1e-12, abs=1e-12), seed
        assert epslap.verify(c, sol.row_ind, sol.col_ind, sol.u, sol.v)["optimal"], seed


@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.float32, np.int32])
def test_two_smallest_by_vector_passes_is_the_scan(dtype):
    """Rows from ``_TWO_PASSES_FROM`` columns find their two smallest reduced costs by two
    vector passes: the same least cost, its first column, the second (a tie included, with its
    column) and whether there is a second, as the scan that shorter rows take."""
    rng = np.random.default_rng(7)
    n2 = jv._TWO_PASSES_FROM + 3
    wt = np.int64 if np.dtype(dtype).kind == "i" else np.float64
    for trial in range(300):
        top = [2, 5, 1000][trial % 3]
        c = rng.integers(-top, top, (4, n2)).astype(dtype)
        if trial % 7 == 0:
            c[1] = c[1, 0]  # one value everywhere
        v = rng.integers(-3, 3, n2).astype(wt)
        if wt is np.float64 and trial % 5 == 0:
            c = c * 0.0  # +0.0 and -0.0
            v = v * 0.0
        for i in range(4):
            got = jv._two_smallest(c, v, i)
            want = jv._two_smallest_scan(c, v, i)
            assert got[:3] == want[:3]
            assert (got[3] < 0) == (want[3] < 0)
            if got[2] == got[0]:
                assert got[3] == want[3]


@pytest.mark.parametrize("shape", [(300, 300), (280, 420)])
def test_rows_past_the_two_pass_width_with_ties(shape):
    rng = np.random.default_rng(shape[1])
    for top in (2, 4, 50):
        _check(rng.integers(0, top, shape))
        _check(rng.integers(0, top, shape).astype(np.float64), maximize=True)
