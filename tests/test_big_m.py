"""Float matrices with a big-M (costs far above all the others): the optimum on every route
(epslap/big_m.py), against scipy, and a certificate of the problem as given."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment as scipy_lsa

import costfns
import epslap
from conftest import gpu
from epslap.big_m import thresholds


def _check(c, maximize=False, **kw):
    r, k = scipy_lsa(c, maximize=maximize)
    want = c[r, k].sum()
    sol = epslap.solve(c, maximize=maximize, **kw)
    assert c[sol.row_ind, sol.col_ind].sum() == pytest.approx(want, rel=1e-9, abs=1e-9)
    rep = epslap.verify(c, sol.row_ind, sol.col_ind, sol.u, sol.v, maximize=maximize)
    assert rep["optimal"], rep["reason"]
    return sol


def _forced_column(n, big, seed=0):
    """One column big everywhere but one finite cost (that pair is forced): the ε passes'
    prices reached the big cost, and every reduced cost was rounded at its magnitude."""
    c = np.random.default_rng(seed).random((n, n))
    c[:, 0] = big
    c[1, 0] = 5.0
    return c


def _blocks(n, parts, big, seed=0):
    """Blocks on the diagonal, big costs between them, rows and columns shuffled."""
    rng = np.random.default_rng(seed)
    c = rng.random((n, n))
    b = np.arange(n) * parts // n
    c[b[:, None] != b[None, :]] = big
    return c[rng.permutation(n)][:, rng.permutation(n)]


@pytest.mark.parametrize("big", [1e14, 1e20, 1e300])
def test_a_forced_pair_in_a_big_column_on_every_route(tmp_path, big):
    c = _forced_column(60, big)
    for kw in (dict(threads=2), dict(checkpoint=tmp_path / "c.ckpt"), dict(candidates=False),
               dict(init=np.zeros(60))):
        _check(c, **kw)
    assert _check(c, threads=2).stats["big_m_apart"] == 8.0  # the ε passes: solved apart (c < 8)
    _check(-c, maximize=True, threads=2)
    # a cost source through a row cache is solved as given: it says its answer is in doubt;
    # one whose matrix fits the budget is that matrix, solved apart
    with pytest.warns(RuntimeWarning, match="big-M standing for forbidden pairs"):
        epslap.solve(costfns.Dense(c), memory=8 * 60 * 8)
    _check_source = epslap.solve(costfns.Dense(c), threads=2)
    assert _check_source.cost == pytest.approx(_check(c).cost, rel=1e-12)
    assert _check_source.stats["big_m_apart"] == 8.0


def test_big_m_blocks_by_candidates_and_the_default_route():
    _check(_blocks(6, 2, 1e20, seed=0), candidates=True)
    _check(_blocks(200, 5, 1e300, seed=1), candidates=True)
    _check(_blocks(1100, 5, 1e300, seed=0))  # the default route: candidates, then the ε method
    _check(_forced_column(1100, 1e20))


def test_an_optimum_that_needs_a_big_cost_keeps_the_first_solution():
    """Forbidding the big costs leaves no complete assignment: the solution as solved stands."""
    c = np.random.default_rng(3).random((30, 30))
    c[:, 0] = 1e20  # column 0 can only be taken at a big cost
    sol = epslap.solve(c, threads=2)
    assert "big_m_apart" not in sol.stats
    r, k = scipy_lsa(c)
    assert sol.cost == pytest.approx(c[r, k].sum(), rel=1e-12)


def test_splits_are_found_only_above_a_gap_wider_than_n_times_the_small_costs():
    c = np.random.default_rng(0).random((50, 50))
    assert thresholds(c, False) == []
    wide = np.exp(np.random.default_rng(1).normal(0, 3, (50, 50)))  # no gap: no split
    assert thresholds(wide, False) == []
    c[0, :] = 1e20
    (t,) = thresholds(c, False)
    assert 1.0 <= t < 1e20 and thresholds(-c, True) == [t]
    c[1, :] = 1e300  # two gaps: the lower split first
    assert len(thresholds(c, False)) == 2 and thresholds(c, False)[0] == t


def test_batch_members_on_the_epsilon_path_are_solved_apart():
    """Members too large for the batch's small path take the ε path, one by one: a big-M column
    gave 557.16 against 6.63 at 1100 x 1100."""
    rng = np.random.default_rng(0)
    c = rng.random((2, 1100, 1100))
    c[:, :, 0] = 1e20
    c[:, 1, 0] = 5.0
    batch = epslap.solve_batch(c)
    for k in range(2):
        r, j = scipy_lsa(c[k])
        assert batch.cost[k] == pytest.approx(c[k][r, j].sum(), rel=1e-12)


def test_the_default_calls_hand_over_apart_and_maximised_profits_split_at_zero(tmp_path):
    """Three routes a review found: the default call's small path handing a 300 x 300 matrix
    to the ε path (77.49 against 54.08 by scipy), a maximisation of positive profits with
    -1e20 for forbidden pairs (no positive small cost: no split was found), and a checkpoint of
    a solve whose second solve was apart (it held the cut problem: the resume was refused)."""
    from epslap.big_m import thresholds
    rng = np.random.default_rng(1)
    c = np.outer(rng.random(300), rng.random(300)) + 1e-9 * rng.random((300, 300))
    c[:, 0] = 1e20
    c[1, 0] = 5.0
    assert _check(c).stats["big_m_apart"] == 8.0
    r, k = epslap.linear_sum_assignment(c)
    r0, k0 = scipy_lsa(c)
    assert c[r, k].sum() == pytest.approx(c[r0, k0].sum(), rel=1e-12)
    profits = rng.random((300, 300)) * 100
    profits[:, 0] = -1e20
    profits[1, 0] = 5.0
    assert thresholds(profits, True) == [0.0]
    assert _check(profits, maximize=True, threads=2).stats["big_m_apart"] == 0.0
    small = _forced_column(60, 1e20)
    first = epslap.solve(small, checkpoint=tmp_path / "c.ckpt")
    assert epslap.solve(small, resume=tmp_path / "c.ckpt").cost == first.cost


def test_a_warm_start_of_exact_matches_is_used():
    """Assigned costs all 0 (a cloud against a permutation of itself): any price spread read
    as misled against them, and a good hint was solved again without it."""
    x = np.random.default_rng(0).random((300, 2))
    c = ((x[:, None] - x[np.random.default_rng(1).permutation(300)][None]) ** 2).sum(-1)
    warm = epslap.solve(c, init=epslap.solve(c))
    assert warm.stats["warm_start"] == "used" and warm.cost == 0.0


def test_a_line_all_one_big_cost_is_subtracted_and_the_rest_solved_exactly():
    """A column all 1e50 must be assigned (no split serves): every assignment takes it once, so
    it is subtracted (exactly: zeros) and the small costs beside it are solved at their own
    magnitude. Against the small-cost optimum of the same matrix with the column zeroed (the
    float totals cannot tell: scipy's own choice misses it in most of these)."""
    for seed in range(12):
        rng = np.random.default_rng(seed)
        n = int(rng.integers(4, 30))
        c = rng.random((n, n))
        j = int(rng.integers(n))
        c[:, j] = 1e50
        zeroed = c.copy()
        zeroed[:, j] = 0.0
        r, k = scipy_lsa(zeroed)
        sol = epslap.solve(c, threads=2)  # the ε path (the small path keeps its own choice)
        assert sol.stats["big_m_lines"] == 1
        assert zeroed[sol.row_ind, sol.col_ind].sum() == pytest.approx(zeroed[r, k].sum(),
                                                                       rel=1e-12)
        assert epslap.verify(c, sol.row_ind, sol.col_ind, sol.u, sol.v)["optimal"]


def test_the_line_route_sums_float32_costs_in_float64():
    """A float32 row whose only finite cost is big (a line subtracted) beside a small cost: the
    value is the float64 sum of the assigned float32 costs, as on every other route (summed in
    float32 the 0.7 went missing)."""
    c = np.array([[-99999992, 0.7], [-np.inf, 2.3]], np.float32)
    first = epslap.solve(c, maximize=True)
    warm = epslap.solve(c, maximize=True, init=first)
    assert warm.stats["big_m_lines"] == 1
    want = float(c.astype(np.float64)[warm.row_ind, warm.col_ind].sum())
    assert warm.cost == want == first.cost


@gpu
@pytest.mark.parametrize("on_device", [False, True], ids=["numpy", "cupy"])
def test_big_m_on_the_gpu_from_host_and_device_matrices(on_device):
    """The GPU's ε method is misled as the CPU's: a NumPy matrix and a CuPy one (the look, the
    histogram of magnitudes and the cut on the device) are solved apart, the same optimum as
    scipy's and a certificate of the matrix as given."""
    import cupy

    def put(c):
        return cupy.asarray(c) if on_device else c

    for c, maximize in ((_forced_column(1100, 1e20), False), (-_forced_column(1100, 1e300), True),
                        (_blocks(1100, 5, 1e300, seed=2), False)):
        r, k = scipy_lsa(c, maximize=maximize)
        sol = epslap.solve(put(c), maximize=maximize, backend="gpu", candidates=False)
        assert c[sol.row_ind, sol.col_ind].sum() == pytest.approx(c[r, k].sum(), rel=1e-9)
        assert epslap.verify(c, sol.row_ind, sol.col_ind, sol.u, sol.v,
                             maximize=maximize)["optimal"]
    c = np.random.default_rng(3).random((1100, 1100))
    c[:, 7] = 1e50  # a column all one big cost: subtracted, the rest solved at its magnitude
    zeroed = c.copy()
    zeroed[:, 7] = 0.0
    r, k = scipy_lsa(zeroed)
    sol = epslap.solve(put(c), backend="gpu", candidates=False)
    assert sol.stats["big_m_lines"] == 1
    assert zeroed[sol.row_ind, sol.col_ind].sum() == pytest.approx(zeroed[r, k].sum(), rel=1e-12)


def _stored_big_m(seed: int):
    """A small sparse problem of stored costs -1, 0, 1 and 1e20 (a full matching among its
    pairs): ``(matrix, values, best)``, ``best`` its exact optimum in fractions (brute
    force)."""
    import itertools
    from fractions import Fraction

    import scipy.sparse as sp
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 7))
    mask = rng.random((n, n)) < 0.6
    mask[np.arange(n), rng.permutation(n)] = True
    vals = rng.choice([-1.0, 0.0, 1.0, 1e20], (n, n))
    r, c = np.nonzero(mask)
    best = min(sum(Fraction(vals[i, p[i]]) for i in range(n))
               for p in itertools.permutations(range(n)) if mask[np.arange(n), p].all())
    return sp.csr_array((vals[r, c], (r, c)), shape=(n, n)), vals, best


def _exact_cost(vals, sol):
    from fractions import Fraction
    return sum(Fraction(vals[i, j]) for i, j in zip(sol.row_ind, sol.col_ind))


def test_stored_pairs_with_a_big_cost_are_solved_without_it_first():
    """Sparse input: the auction's ε starts from the largest cost, and a stored 1e20 beside
    costs of -1, 0, 1 ended at wrong assignments (-2 for -3, 1 for 0), with duals that
    verify passed in some. Against brute force in exact fractions; 1013 of 3000 such problems
    were wrong before."""
    import scipy.sparse as sp
    m = sp.csr_array((np.array([-1.0, -1, 1e20, -1, -1, -1, 0]),
                      ([0, 0, 1, 1, 1, 2, 2], [0, 2, 0, 1, 2, 0, 2])), shape=(3, 3))
    sol = epslap.solve(m)
    assert sol.cost == -3.0 and sol.stats["big_m_apart"] == 0.0
    for seed in range(150):
        m, vals, best = _stored_big_m(seed)
        got = _exact_cost(vals, epslap.solve(m))
        if best < 1e19:  # (an optimum that needs the big cost: its small ones up to rounding)
            assert got == best, seed
        else:
            assert float(got) == float(best), seed


def test_stored_lines_of_one_big_cost_are_subtracted_and_the_rest_solved_exactly():
    """Sparse input whose optimum needs a 1e20 because a row stores nothing else (or a column,
    where every column is assigned): no split of the costs serves, and the solve as given
    ended 1-3 above the optimum with a warning that its duals miss the rule. Such a line's
    value is subtracted (its costs become 0), the rest solved apart: the exact optimum, in
    fractions, with certified duals."""
    import warnings
    for seed in (53, 93, 109):
        m, vals, best = _stored_big_m(seed)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            sol = epslap.solve(m)
        assert _exact_cost(vals, sol) == best, seed
        assert sol.stats["big_m_lines"] >= 1 and sol.cost == float(best)
        assert epslap.verify(m, sol.row_ind, sol.col_ind, sol.u, sol.v)["optimal"]
        neg = epslap.solve(-m, maximize=True)
        assert neg.cost == -float(best) and neg.stats["big_m_lines"] >= 1
