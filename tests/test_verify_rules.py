"""``epslap.verify`` as an adversary would use it: duals shifted, scaled, rounded or near the
top of the float range never certify a suboptimal assignment; matrices it must refuse (NaN,
-inf) or judge exactly (uint64 beyond int64) are handled, never overflowed."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import epslap


def _brute_force(c: np.ndarray) -> float:
    n = c.shape[0]
    return min(math.fsum(c[i, p[i]] for i in range(n)) for p in itertools.permutations(range(n)))


def test_shifted_duals_do_not_certify_the_issue_example():
    c = np.array([[1, 2, 1e9], [2, 1, 3], [5, 5, 5]], dtype=float)
    s = epslap.solve(c)
    rep = epslap.verify(c, [0, 1, 2], [0, 2, 1], s.u + 2**52, s.v - 2**52)
    assert not rep["optimal"] and rep["gap"] == 2.0
    # the optimal assignment with the same shift: only the shift's own rounding is judged,
    # and here it rounds nothing away
    assert epslap.verify(c, s.row_ind, s.col_ind, s.u + 2**52, s.v - 2**52)["optimal"]


magnitudes = st.sampled_from([1.0, 1e-6, 1e6, 1e12, 2.0**500, 2.0**-500])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(2, 5), seed=st.integers(0, 2**32 - 1), scale=magnitudes,
       wide=st.booleans(), shift_exp=st.integers(-20, 1000), sign=st.sampled_from([-1.0, 1.0]))
def test_no_shift_of_the_duals_certifies_a_suboptimal_assignment(n, seed, scale, wide,
                                                                 shift_exp, sign):
    rng = np.random.default_rng(seed)
    c = rng.random((n, n)) * scale
    if wide:  # entries spread over many orders of magnitude, some negative
        c = rng.choice([-1.0, 1.0], (n, n)) * np.exp(rng.normal(0, 8, (n, n)))
    opt = _brute_force(c)
    s = epslap.solve(c)
    shift = sign * math.ldexp(1.0, shift_exp)
    u, v = s.u + shift, s.v - shift
    for perm in itertools.permutations(range(n)):
        total = math.fsum(c[i, perm[i]] for i in range(n))
        if total <= opt + 1e-9 * (abs(opt) + np.abs(c).max()):
            continue  # optimal or within float noise of it
        rows = np.arange(n)
        cols = np.array(perm)
        # the duals that fit this assignment best: its own u from the shifted v
        u_fit = c[rows, cols] - v[cols]
        for uu in (u, u_fit):
            rep = epslap.verify(c, rows, cols, uu, v)
            assert not rep["optimal"], (perm, total, opt, rep)


@settings(max_examples=200, deadline=None)
@given(n=st.integers(2, 5), seed=st.integers(0, 2**32 - 1), k=st.integers(-900, 900))
def test_verdict_is_the_same_for_costs_and_duals_scaled_by_a_power_of_two(n, seed, k):
    rng = np.random.default_rng(seed)
    c = rng.random((n, n)) * 2.0**100
    s = epslap.solve(c)
    perm = rng.permutation(n)
    for rows, cols in ((s.row_ind, s.col_ind), (np.arange(n), perm)):
        for u, v in ((s.u, s.v), (s.u * (1 + 1e-9), s.v)):
            a = epslap.verify(c, rows, cols, u, v)
            b = epslap.verify(np.ldexp(c, k), rows, cols, np.ldexp(u, k), np.ldexp(v, k))
            assert a["optimal"] == b["optimal"], (a, b)


def test_entries_and_duals_near_the_top_of_the_range_get_an_answer():
    rng = np.random.default_rng(3)
    c = rng.random((5, 5)) * 1.7e308
    from scipy.optimize import linear_sum_assignment
    r, k = linear_sum_assignment(c)
    rep = epslap.verify(c, r, k, np.zeros(5), np.zeros(5))  # feasible, gap far from 0
    assert not rep["optimal"] and "gap" in rep["reason"]
    rep = epslap.verify(c, r, k, np.full(5, 1e308), np.full(5, 1e308))
    assert not rep["optimal"] and "infeasible" in rep["reason"]
    # a real certificate at that scale: a diagonal-dominant matrix with exact duals
    d = np.full((3, 3), 1.5e308)
    np.fill_diagonal(d, 1e308)
    rep = epslap.verify(d, [0, 1, 2], [0, 1, 2], np.full(3, 1e308), np.zeros(3))
    assert rep["optimal"] and math.isinf(rep["primal"])  # 3e308 is beyond float64


def test_minus_inf_is_refused_as_solve_refuses_it():
    c = np.array([[1.0, -np.inf], [1.0, 1.0]])
    with pytest.raises(ValueError, match="-inf"):
        epslap.verify(c, [0, 1], [0, 1], [0.0, 0.0], [1.0, 1.0])
    with pytest.raises(ValueError, match=r"\+inf \(maximize=True\)"):
        epslap.verify(np.array([[1.0, np.inf], [1.0, 1.0]]), [0, 1], [0, 1], [0.0, 0.0],
                      [1.0, 1.0], maximize=True)


def test_uint64_beyond_int64_is_checked_exactly_not_wrapped():
    c = np.array([[2**64 - 1, 2**64 - 2], [2**64 - 3, 5]], dtype=np.uint64)
    # the identity (2**64 + 4) is optimal. Read as int64 the matrix would be [[-1, -2], [-3, 5]],
    # where the swap (-5) is optimal with these duals: they must not certify the swap
    wrapped = epslap.verify(c, [0, 1], [1, 0], np.array([-2, -3]), np.array([0, 0]))
    assert wrapped["exact"] and not wrapped["optimal"]
    assert wrapped["primal"] == 2**65 - 5
    good = epslap.verify(c, [0, 1], [0, 1], np.array([2**64 - 1, 6], dtype=np.uint64),
                         np.array([0, -1]))
    assert good["optimal"], good


def _wide(rng, n):
    return rng.choice([-1.0, 1.0], (n, n)) * np.exp(rng.normal(0, 8, (n, n)))


def test_the_solvers_duals_meet_the_rule_on_wide_range_floats():
    """±exp(N(0, 8)) costs (1e-14 … 1e14): the polishing passes alone left 3 % of these
    with duals beyond verify's rule; the repair from the optimal assignment mends them."""
    import warnings
    rng = np.random.default_rng(2024)
    repaired = 0
    for _ in range(400):
        n = int(rng.integers(2, 13))
        c = _wide(rng, n)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no "duals miss the rule" warning
            s = epslap.solve(c)
        repaired += "dual_repair_rows" in s.stats
        rep = epslap.verify(c, s.row_ind, s.col_ind, s.u, s.v)
        assert rep["optimal"], (c, rep)
        if n <= 7:
            assert s.cost == pytest.approx(_brute_force(c), rel=1e-12)
    assert repaired > 0  # the repair was exercised


def test_dual_repair_lowers_the_top_price_where_a_tiny_row_needs_it():
    """A row whose dual is tiny next to its partner's price (-0.58 = -3590.06 + 3589.48) met
    the rule on the ε path only once the top column's price was lowered below 0 by 8e-14. The
    small path now certifies it by the vector form's solve (no repair)."""
    from tests.conftest import cpu_path
    c = np.array([[-1.9994374648328242e-01, -5.7930876975987389e-01, -3.5900568535024968e+03],
                  [-3.6784652181703270e+04, -2.7891887380748093e-01, 2.6395272123681514e-04],
                  [5.6135186924444595e-06, -1.7368194128798754e-08, -8.2093837206234394e-05]])
    with cpu_path("eps"):
        s = epslap.solve(c)
    assert "dual_repair_rows" in s.stats
    small = epslap.solve(c)
    assert small.stats["method"] == "jv" and "dual_repair_rows" not in small.stats
    for sol in (s, small):
        assert epslap.verify(c, sol.row_ind, sol.col_ind, sol.u, sol.v)["optimal"]
        assert sol.cost == pytest.approx(_brute_force(c), rel=1e-14)


def test_an_int64_cost_or_dual_of_minus_2_63_is_judged_exactly():
    """``np.abs(-2**63)`` is -2**63: the exact check took int64 arithmetic for such a cost and
    the wrapped reduced cost read as no violation (a wrong assignment certified)."""
    c = np.array([[0, -2**63], [0, 0]], dtype=np.int64)
    rep = epslap.verify(c, [0, 1], [0, 1], np.array([0, 0]), np.array([0, 0]))
    assert not rep["optimal"] and rep["max_violation"] == 2**63
    rep = epslap.verify(np.array([[1], [5], [7]]), [0], [0], np.array([0, -2**63, -5]),
                        np.array([1]))
    assert not rep["optimal"] and rep["max_violation"] == 0  # only the gap is off


def test_tiny_costs_beside_one_near_the_float_maximum_keep_their_precision():
    """A cost near 1.8e308 in a block made the whole block scaled down by a power of two, where
    costs of 1e-285 lost their precision and a violation 1e11 times the tolerance passed; each
    entry whose terms lie below 2**900 is now judged unscaled."""
    for a, big, rel in ((1e-285, 1.7e308, 1e-3), (1e-300, 1e300, 1e-6)):
        c = np.array([[a, a * (1 - rel), big], [a * (1 - rel), a, big], [big, big, 0.0]])
        assert not epslap.verify(c, [0, 1, 2], [0, 1, 2], np.array([a, a, 0.0]),
                                 np.zeros(3))["optimal"]
        low = a * (1 - rel)
        assert epslap.verify(c, [0, 1, 2], [1, 0, 2], np.array([low, low, 0.0]),
                             np.zeros(3))["optimal"]


def test_boolean_duals_are_read_as_zero_and_one_and_maximize_must_be_a_bool():
    rep = epslap.verify(np.eye(2), [0, 1], [0, 1], np.array([True, False]),
                        np.array([False, False]))
    assert not rep["optimal"] and rep["gap"] == 1.0
    assert epslap.verify(np.eye(2), [0, 1], [1, 0], np.array([False, False]),
                         np.array([False, False]))["optimal"]
    with pytest.raises(TypeError, match="maximize must be True or False"):
        epslap.verify(np.eye(2), [0, 1], [1, 0], np.zeros(2), np.zeros(2), maximize="False")


def test_an_unassigned_column_below_its_bound_is_refused_beside_large_costs():
    """Row 0 takes 5 while column 1, free, offers it 1: the duals put that free column at -4
    (its pair then tight), and the gap of 4 is within the tolerance of a sum of 1e21. An
    unassigned column's dual is judged at its bound, 0, as complementary slackness asks."""
    c = np.array([[5.0, 1.0, 1e21], [1e21, 1e21, 1e21]])
    rep = epslap.verify(c, [0, 1], [0, 2], np.array([5.0, 1e21]), np.array([0.0, -4.0, 0.0]))
    assert not rep["optimal"] and "unassigned lines' duals at their bound" in rep["reason"]
    assert rep["max_violation"] == 4.0
    rep = epslap.verify(c, [0, 1], [1, 2], np.array([1.0, 1e21]), np.zeros(3))
    assert rep["optimal"], rep
    # rows of a tall matrix alike, and the maximised sign
    rep = epslap.verify(c.T, [0, 2], [0, 1], np.array([0.0, -4.0, 0.0]), np.array([5.0, 1e21]))
    assert not rep["optimal"]
    rep = epslap.verify(-c, [0, 1], [0, 2], np.array([-5.0, -1e21]), np.array([0.0, 4.0, 0.0]),
                        maximize=True)
    assert not rep["optimal"] and "unassigned lines' duals at their bound" in rep["reason"]


def _brute_force_rect(c: np.ndarray, maximize: bool):
    """The exact optimum of a wide matrix (n1 <= n2), in fractions."""
    from fractions import Fraction
    n1, n2 = c.shape
    values = (sum(Fraction(float(c[i, p[i]])) for i in range(n1))
              for p in itertools.permutations(range(n2), n1))
    return max(values) if maximize else min(values)


@pytest.mark.parametrize("c", [
    np.array([[9e+01, 3e-11, 5e+01, 8e+00, 8e+03],
              [1e-12, 0e+00, 5e-02, 9e-16, 8e+09],
              [1e+01, 0e+00, 8e-16, 0e+00, 9e+10]]),
    np.array([[1.0e-03, 4.0e+01, 3.0e+00, 9.0e+19, 0.0e+00, 6.9999999999999991e-11],
              [1.0e-02, 1.0e-13, 5.9999999999999999e-19, 1.0e-03, 9.0000000000000003e-16,
               6.9999999999999991e-17],
              [9.0e+14, 0.0e+00, 6.9999999999999997e-18, 8.0000000000000002e-13, 1.0e-08,
               1.0e-02],
              [8.0e+04, 6.0000000000000008e-08, 6.0000000000000004e-18, 4.0e+05,
               9.0000000000000014e-18, 0.0e+00]])])
def test_wide_range_rectangles_get_duals_with_the_free_columns_on_top(c):
    """Maximised wide matrices of costs from 1e-19 to 1e19: the padded solve left a free
    column a rounding below the others (-9e-16, a dual the gap alone did not see), and the
    repair that moved it would not certify; the free columns now end on top and a row that
    misses the rule on one raises its own column's price instead."""
    from fractions import Fraction
    import warnings
    for cost, maximize in ((c, True), (-c, False), (c.T, True)):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            s = epslap.solve(cost, maximize=maximize)
        assert epslap.verify(cost, s.row_ind, s.col_ind, s.u, s.v, maximize=maximize)["optimal"]
        got = sum(Fraction(float(cost[i, j])) for i, j in zip(s.row_ind, s.col_ind))
        wide = cost if cost.shape[0] <= cost.shape[1] else cost.T
        assert got == _brute_force_rect(wide, maximize)
