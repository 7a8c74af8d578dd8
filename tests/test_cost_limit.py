"""``cost_limit``: rows and columns may stay unmatched at cost_limit / 2 each (epslap/limit.py).

The reference is independent of epslap's formulation (one slack column per row): scipy on lap's
(n1 + n2)-square extension, whose added blocks cost L/2 and whose corner costs 0."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy.optimize import linear_sum_assignment as scipy_lsa

import costfns
import epslap


def reference(c, limit, maximize):
    """The optimal penalised objective: Σ matched costs + (unmatched lines) · L/2."""
    c = np.asarray(c, dtype=np.float64)
    n1, n2 = c.shape
    big = np.full((n1 + n2, n1 + n2), limit / 2)
    big[:n1, :n2] = c
    big[n1:, n2:] = 0.0
    r, k = scipy_lsa(big, maximize=maximize)
    return big[r, k].sum()


def penalised(c, sol, limit):
    n1, n2 = np.shape(c)
    matched = np.asarray(c, dtype=np.float64)[sol.row_ind, sol.col_ind].sum()
    return matched + (n1 + n2 - 2 * len(sol.row_ind)) * limit / 2


def check(c, limit, maximize, sol):
    assert np.all(np.diff(sol.row_ind) > 0)
    assert len(np.unique(sol.col_ind)) == len(sol.col_ind)
    got = penalised(c, sol, limit)
    ref = reference(c, limit, maximize)
    assert got == pytest.approx(ref, rel=1e-12, abs=1e-9)
    assert float(sol.cost) == pytest.approx(
        np.asarray(c, dtype=np.float64)[sol.row_ind, sol.col_ind].sum(), abs=1e-9)
    finite = np.isfinite(np.asarray(c, dtype=np.float64)[sol.row_ind, sol.col_ind])
    assert finite.all()
    cert = epslap.verify(c, sol.row_ind, sol.col_ind, sol.u, sol.v, maximize=maximize,
                         cost_limit=limit)
    assert cert["optimal"], cert
    assert cert["primal"] == pytest.approx(ref, rel=1e-12, abs=1e-9)
    assert sol.stats["matched"] == len(sol.row_ind)
    assert sol.stats["unmatched_rows"] == c.shape[0] - len(sol.row_ind)


@st.composite
def problems(draw):
    n1 = draw(st.integers(0, 6))
    n2 = draw(st.integers(0, 6))
    kind = draw(st.sampled_from(["float64", "float32", "int64", "int32"]))
    maximize = draw(st.booleans())
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    if kind.startswith("int"):
        c = rng.integers(-20, 20, (n1, n2)).astype(kind)
        limit = draw(st.integers(-30, 40))
    else:
        c = (rng.random((n1, n2)) * 10).astype(kind)
        if draw(st.booleans()):
            c[rng.random(c.shape) < 0.3] = -np.inf if maximize else np.inf
        limit = draw(st.floats(-5, 25, allow_nan=False, width=32))
    return c, limit, maximize


@settings(max_examples=300, deadline=None)
@given(problems())
# found by hypothesis: prices solved at the scale of L left an assigned pair of small costs a
# slack of one ulp of L (the duals' u is now taken from the shifted v)
@example(problem=(np.array([
               [9.998070067390593, 6.730901488215007, 0.09323440867327837, 3.2165567304372313],
               [8.578086610744759, 4.264150487027813, 7.973445075703349, 5.429529387307751],
               [9.549923690029882, 4.625663640346152, 7.870833575185589, 8.271669127158724],
               [8.045563466768037, 3.9700196806953336, 0.0829855341161001, 6.532630481833043]
]), 12.5, False))
def test_against_the_square_extension(problem):
    c, limit, maximize = problem
    check(c, limit, maximize, epslap.solve(c, maximize=maximize, cost_limit=limit))


@pytest.mark.parametrize("shape", [(40, 40), (30, 90), (90, 30), (200, 150)])
@pytest.mark.parametrize("threads", [1, 2])
def test_larger_and_threads(shape, threads):
    rng = np.random.default_rng(shape[0])
    c = rng.random(shape)
    for limit in (0.05, 0.3, 2.0):
        check(c, limit, False, epslap.solve(c, cost_limit=limit, threads=threads))


def test_against_lapcpp():
    lapcpp = pytest.importorskip("lapcpp")
    rng = np.random.default_rng(3)
    for shape in [(50, 50), (20, 70), (70, 20)]:
        c = rng.random(shape)
        total, r, k = lapcpp.lapjv(c, cost_limit=0.2)
        sol = epslap.solve(c, cost_limit=0.2)
        assert sol.cost == pytest.approx(total, abs=1e-12)
        assert len(sol.row_ind) == len(r)


def test_no_limit_and_extremes():
    c = np.array([[1.0, 5.0], [5.0, 1.0], [3.0, 3.0]])
    plain = epslap.solve(c)
    for none in (None, np.inf):
        sol = epslap.solve(c, cost_limit=none)
        assert sol.cost == plain.cost and "matched" not in sol.stats
    assert epslap.solve(c, maximize=True, cost_limit=-np.inf).cost == epslap.solve(
        c, maximize=True).cost
    low = epslap.solve(c, cost_limit=0.5)  # nothing pays
    assert len(low.row_ind) == 0 and low.cost == 0.0
    high = epslap.solve(c, cost_limit=100.0)  # everything pays: the usual optimum
    assert high.cost == plain.cost and len(high.row_ind) == 2
    ints = epslap.solve(np.array([[1, 9], [9, 1]]), cost_limit=4)
    assert ints.cost == 2 and isinstance(ints.cost, int) and ints.u.dtype == np.int64


@pytest.mark.parametrize("limit,error,match", [
    (float("nan"), ValueError, "NaN"), (-np.inf, ValueError, "unmatched"),
    (True, TypeError, "real number"), ("1", TypeError, "real number")])
def test_bad_limits(limit, error, match):
    with pytest.raises(error, match=match):
        epslap.solve(np.eye(3), cost_limit=limit)


def test_cost_source_refused_and_bad_entries_named():
    with pytest.raises(ValueError, match="not to a cost source"):
        epslap.solve(costfns.Random(5, seed=1), cost_limit=0.5)
    c = np.eye(3)
    c[1, 1] = np.nan
    with pytest.raises(ValueError, match="invalid numeric"):
        epslap.solve(c, cost_limit=0.5)


def test_verify_rejects_a_worse_answer():
    c = np.array([[0.1, 0.9], [0.9, 0.8]])
    sol = epslap.solve(c, cost_limit=1.0)
    assert len(sol.row_ind) == 2  # both pairs of the diagonal cost less than the limit
    cert = epslap.verify(c, sol.row_ind[:1], sol.col_ind[:1], sol.u, sol.v, cost_limit=1.0)
    assert not cert["optimal"]
    u = sol.u.copy()
    u[0] += 0.3  # above c - v on row 0's pair
    assert not epslap.verify(c, sol.row_ind, sol.col_ind, u, sol.v, cost_limit=1.0)["optimal"]
    # without the limit, fewer pairs than rows is no assignment
    assert not epslap.verify(c, sol.row_ind[:1], sol.col_ind[:1], sol.u, sol.v)["complete"]


@st.composite
def batches(draw):
    maximize = draw(st.booleans())
    kind = draw(st.sampled_from(["float64", "int64", "float32"]))
    limit = draw(st.integers(-10, 30)) if kind == "int64" else draw(
        st.floats(-3, 15, allow_nan=False, width=32))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    mats = []
    for _ in range(draw(st.integers(1, 5))):
        shape = (draw(st.integers(0, 5)), draw(st.integers(0, 5)))
        c = (rng.random(shape) * 10).astype(kind) if kind != "int64" else \
            rng.integers(-10, 10, shape)
        if kind == "float64" and draw(st.booleans()):
            c[rng.random(shape) < 0.3] = -np.inf if maximize else np.inf
        mats.append(c)
    stacked = draw(st.booleans()) and len({m.shape for m in mats}) == 1
    return (np.stack(mats) if stacked else mats), limit, maximize


@settings(max_examples=150, deadline=None)
@given(batches())
def test_batches_against_the_square_extension(problem):
    costs, limit, maximize = problem
    sol = epslap.solve_batch(costs, maximize=maximize, cost_limit=limit)
    for k, c in enumerate(costs):
        check(c, limit, maximize, _member(sol, k))
    if isinstance(costs, np.ndarray):
        assert sol.u.shape == costs.shape[:2] and sol.v.shape == (costs.shape[0], costs.shape[2])


def _member(sol, k):
    from epslap.solution import Solution
    stats = {"matched": int(sol.stats["matched"][k]),
             "unmatched_rows": int(sol.stats["unmatched_rows"][k])}
    return Solution(sol.row_ind[k], sol.col_ind[k], sol.cost[k], sol.u[k], sol.v[k], stats)


def test_batch_errors_name_the_member():
    with pytest.raises(ValueError, match="problem 1: .*invalid numeric"):
        epslap.solve_batch([np.eye(2), np.array([[np.nan, 1.0], [1.0, 1.0]])], cost_limit=0.5)
    with pytest.raises(ValueError, match="problem 1: expected a matrix"):
        epslap.solve_batch([np.eye(2), np.ones(3)], cost_limit=0.5)


def test_matrix_checks_are_solves():
    """The matrix is checked as ``solve`` checks it: a dtype float64 cannot hold exactly is
    refused, not rounded."""
    if np.dtype(np.longdouble).itemsize > 8:  # where long double is wider than float64
        with pytest.raises(TypeError, match="extended precision"):
            epslap.solve(np.eye(3, dtype=np.longdouble), cost_limit=0.5)
    with pytest.raises(ValueError, match="expected a matrix"):
        epslap.solve(np.ones(3), cost_limit=0.5)


def brute_force(c, limit, maximize):
    """The optimal penalised objective in exact arithmetic (``Fraction``), over every partial
    assignment of a tiny matrix: no float rounding of a huge limit, unlike :func:`reference`."""
    from fractions import Fraction
    from itertools import permutations
    c = np.asarray(c)
    n1, n2 = c.shape
    half = Fraction(_python(limit)) / 2
    best = None
    for cols in permutations(list(range(n2)) + [None] * n1, n1):
        pairs = [(i, j) for i, j in enumerate(cols) if j is not None]
        if any(not np.isfinite(float(c[i, j])) for i, j in pairs):
            continue
        total = sum((Fraction(c[i, j].item()) for i, j in pairs), Fraction(0))
        total += (n1 + n2 - 2 * len(pairs)) * half
        if best is None or (total > best if maximize else total < best):
            best = total
    return best


def exact_penalised(c, sol, limit):
    from fractions import Fraction
    n1, n2 = np.shape(c)
    matched = sum((Fraction(np.asarray(c)[i, j].item()) for i, j in zip(sol.row_ind,
                                                                        sol.col_ind)), Fraction(0))
    return matched + (n1 + n2 - 2 * len(sol.row_ind)) * Fraction(_python(limit)) / 2


def _python(x):
    """A NumPy scalar as the Python int or float of its value (exact)."""
    return x.item() if isinstance(x, np.generic) else x


_HUGE_LIMITS = [1e20, -1e20, 1e300, -1e300, 2**70, -2**70, 2**63, 2**63 - 1, -2**63,
                np.float64(1e20), np.int64(2**62), np.int64(-2**62), np.uint64(2**64 - 1),
                np.float32(3e38), 1.7e308, -1.7e308, 2**55 + 2, 2**55 + 1, 10**300, 7, 7.5,
                np.int32(-3), 0]


@pytest.mark.parametrize("limit", _HUGE_LIMITS, ids=repr)
@pytest.mark.parametrize("kind", ["int64", "int32", "uint8", "float64", "float32", "float_inf"])
@pytest.mark.parametrize("maximize", [False, True])
@pytest.mark.parametrize("shape", [(3, 3), (2, 4), (4, 2), (0, 3)])
def test_any_limit_is_exact_or_refused_by_name(limit, kind, maximize, shape):
    """Every limit, however large, with every dtype: the optimum of the exact brute force (in
    ``Fraction``s: a limit of 1e20 leaves no rounding room), a certificate that verify accepts,
    or a ValueError naming cost_limit. A limit beyond the costs is solved through an equivalent
    limit near them (epslap/limit.py), so none of these is refused."""
    rng = np.random.default_rng(len(repr(limit)) + 7 * shape[0] + shape[1])
    if kind.startswith("float"):  # eighths: every sum exact, so ties are ties
        c = (np.round(rng.random(shape) * 80 - 24) / 8).astype(
            "float64" if kind == "float_inf" else kind)
        if kind == "float_inf":
            c[rng.random(shape) < 0.4] = -np.inf if maximize else np.inf
    else:
        c = rng.integers(0 if kind == "uint8" else -9, 10, shape).astype(kind)
    sol = epslap.solve(c, maximize=maximize, cost_limit=limit)
    assert exact_penalised(c, sol, limit) == brute_force(c, limit, maximize)
    cert = epslap.verify(c, sol.row_ind, sol.col_ind, sol.u, sol.v, maximize=maximize,
                         cost_limit=limit)
    assert cert["optimal"], cert
    picked = np.asarray(c)[sol.row_ind, sol.col_ind]
    assert sol.cost == picked.sum(dtype=np.int64 if c.dtype.kind in "iu" else np.float64)
    assert isinstance(sol.cost, int) == (c.dtype.kind in "iu")
    even = float(limit).is_integer() and int(limit) % 2 == 0 and abs(int(limit)) < 2**63
    if c.dtype.kind in "iu" and even:  # the duals of an even limit stay exact integers
        assert sol.u.dtype == np.int64 and cert["exact"]
    check_batch = epslap.solve_batch([c, c.T], maximize=maximize, cost_limit=limit)
    for k, m in enumerate((c, c.T)):
        assert exact_penalised(m, _member(check_batch, k), limit) == brute_force(m, limit,
                                                                                 maximize)


@pytest.mark.parametrize("limit,match", [
    (float("nan"), "cost_limit is NaN"), (10**400, "cost_limit=1000.* beyond the float64 range"),
    (-np.inf, "cost_limit=-inf would leave every pair unmatched")])
@pytest.mark.parametrize("dtype", [np.int64, np.float64])
def test_unusable_limits_are_named(limit, match, dtype):
    with pytest.raises(ValueError, match=match):
        epslap.solve(np.eye(3, dtype=dtype), cost_limit=limit)
    with pytest.raises(ValueError, match=match):
        epslap.solve_batch([np.eye(3, dtype=dtype)], cost_limit=limit)


def test_limits_the_extended_problem_cannot_hold_are_named():
    """The refusals left: costs that E (one slack column per row: a wider problem, a stricter
    range rule) cannot hold, a limit among float costs so large that E cannot hold it, a
    non-integral limit with integer costs float64 would round, a limit that is no float64."""
    from fractions import Fraction
    from epslap._validate import float_cost_limit, int_cost_limit
    near = int_cost_limit((3, 3))  # fits the 3 x 3 alone, not the 3 x 6 with slack columns
    with pytest.raises(ValueError, match=r"cost_limit=5: .*3 slack columns.*integer costs"):
        epslap.solve(np.full((3, 3), near), cost_limit=5)
    c = np.array([[2**64 - 1, 1], [1, 1]], dtype=np.uint64)  # not wrapped into int64
    with pytest.raises(ValueError, match=r"cost_limit=5: .*18446744073709551615"):
        epslap.solve(c, cost_limit=5)
    big = float_cost_limit((3, 3)) * 0.9
    with pytest.raises(ValueError, match=r"cost_limit=1\.0: .*float costs"):
        epslap.solve(np.full((3, 3), big), cost_limit=1.0)
    c = np.array([[-big / 4, 0.0], [np.inf, big / 4]])  # +inf: the equivalent limit is far
    with pytest.raises(ValueError, match=r"cost_limit=1e\+308: .*cannot hold the limit"):
        epslap.solve(c, cost_limit=1e308)
    with pytest.raises(ValueError, match=r"cost_limit=2\.5 is not an integer.*2\*\*53"):
        epslap.solve(np.array([[2**55, 1], [1, 2]]), cost_limit=2.5)
    with pytest.raises(ValueError, match="cost_limit=Fraction.*not a float64 number"):
        epslap.solve(np.eye(2), cost_limit=Fraction(1, 3))
    assert epslap.solve(np.eye(2), cost_limit=Fraction(1, 2)).cost == 0.0  # exactly 0.5


@pytest.mark.parametrize("limit", [1e20, 2**70, 1e300, 10.0**305])
@pytest.mark.parametrize("maximize", [False, True])
def test_huge_limits_where_no_longer_matching_exists(limit, maximize):
    """Infinite entries leave rows unmatched at any limit: the limit beyond the costs is solved
    through an equivalent one, and the duals of the given limit still certify (the rows reached
    from the unmatched ones by alternating paths take the opposite shift)."""
    c = np.array([[1.0, 4.0, np.inf, np.inf], [2.0, np.inf, np.inf, np.inf],
                  [3.0, np.inf, np.inf, np.inf]])  # 2 pairs at most, the cheapest 4 + 2
    sign = -1 if maximize else 1
    c, limit = sign * c, sign * limit
    for m in (c, c.T):
        sol = epslap.solve(m, maximize=maximize, cost_limit=limit)
        assert len(sol.row_ind) == 2 and abs(sol.cost) == 4 + 2
        assert exact_penalised(m, sol, limit) == brute_force(m, limit, maximize)
        cert = epslap.verify(m, sol.row_ind, sol.col_ind, sol.u, sol.v, maximize=maximize,
                             cost_limit=limit)
        assert cert["optimal"], cert


def test_verify_names_the_limit_a_dual_exceeds():
    for c in ([[1, 5], [6, 2]], [[1.0, 5.0], [6.0, 2.0]]):
        rep = epslap.verify(c, [0, 1], [0, 1], [0, 0], [1, 2], cost_limit=3)
        assert not rep["optimal"]
        assert "a dual (u or v) is 0.5 above cost_limit / 2" in rep["reason"], rep["reason"]


def test_duals_of_mixed_magnitudes_meet_the_rule_of_each_entry():
    """Costs near -1e3 … -1e16 beside costs below 1 and L < 1: E's prices are rounded at the
    large scale, where v + L/2 drops L/2 (1e16) or puts a row a rounding above L/2 (1e3). Each
    row's dual is its least reduced cost where its pair's would break an entry of its own, and
    a row above L/2 takes L/2 with its column priced to match. Solved as before; the duals now
    certify (57 of 3000 such problems failed verify before, at every magnitude from 1e2 to
    1e16; 8 still do: 7 at 1e15-1e16, where E's own solve rounds at an ulp of 0.125 beside
    L/2 < 0.5 and matches a pair up to ~L beyond the limit, and one by 2 ulps at 1e2)."""
    for c in ([[0.0, -1e16], [1e-20, -1.0]], [[0.0, -1e3], [1e-3, -1.0]]):
        c = np.array(c)
        for m, maximize, limit in ((c, False, 0.5), (-c, True, -0.5), (c.T, False, 0.5)):
            sol = epslap.solve(m, cost_limit=limit, maximize=maximize)
            rep = epslap.verify(m, sol.row_ind, sol.col_ind, sol.u, sol.v, cost_limit=limit,
                                maximize=maximize)
            assert rep["optimal"], rep["reason"]
    failed = 0
    for seed in range(300):
        rng = np.random.default_rng(900000 + seed)
        c = rng.random((int(rng.integers(1, 30)), int(rng.integers(1, 30))))
        big = 10.0 ** int(rng.integers(2, 17))
        if big > 1e14:
            continue  # (E's rounding, above)
        forced = rng.random(c.shape) < rng.uniform(0.02, 0.3)
        c[forced] = -big * rng.random(forced.sum()) if rng.random() < 0.5 else -big
        maximize = bool(rng.random() < 0.3)
        limit = float(rng.uniform(0, 1))
        if maximize:
            c, limit = -c, -limit
        sol = epslap.solve(c, cost_limit=limit, maximize=maximize)
        failed += not epslap.verify(c, sol.row_ind, sol.col_ind, sol.u, sol.v,
                                    cost_limit=limit, maximize=maximize)["optimal"]
        batch = epslap.solve_batch(c[None], cost_limit=limit, maximize=maximize)
        failed += not epslap.verify(c, batch.row_ind[0], batch.col_ind[0], batch.u[0],
                                    batch.v[0], cost_limit=limit, maximize=maximize)["optimal"]
    assert failed == 0


_TINY_PAIRS_NEXT_TO_A_LARGE_LIMIT = [
    (np.array([[5e+10, 5e+10, 5e-19, 7e-04, 1e+19],
               [1e+11, 9e+04, 2e+07, 7.999999999999999e-17, 2e+12],
               [1e-18, 5e+05, 9e-08, 6e+18, 4e+06],
               [2e-14, 6e-06, 7e+01, 5e+13, 0.0],
               [0.0, 9e+06, 3e+00, 5e+10, 8e+06]]), 180000.0, False),
    (np.array([[-1.4269371069562720e-20, -1.3971722944530438e-16, -6.9972787793870084e+06,
                3.0542903450756575e-07],
               [np.inf, 2.2844126124086723e+05, 8.2589088214404926e-03, 5.8761865156317797e+09],
               [1.5984456310323842e-09, -3.9200256775413158e+17, 3.3098905666560456e+18,
                3.1774882861044113e+10],
               [5.6725549164834842e+06, np.inf, -5.5610963130248715e-17, 8.0609007998590791e+12],
               [np.inf, -1.6914322847757502e-17, -1.5641867282992825e+07,
                1.4855078354539785e+01]]), 6.108580690151315e-07, False),
    # E's solve warns that its duals miss the rule; the limit problem's own duals meet it
    (np.array([[8.8463715719605086e+05, 1.3539022835530378e+14, 5.0901990879222319e-17,
                3.3759857255212643e-03],
               [9.0795889663252426e-18, 5.8543126730041807e-17, 8.7644893475457045e-16,
                6.6987162598459160e+16],
               [5.4359758286784267e-09, 4.0862468390957785e+08, 4.1380937843829940e-18,
                2.5964172812164010e-01]]), 1.1708625346008361e-16, True),
    (np.array([[6.0893168704235774e-09, 7.6659324334478531e+18, 1.1712431186122485e-12,
                6.3999143419097647e+07, 6.5830130988853740e-14],
               [5.5421835469817840e+19, 2.4452775692441797e+11, 2.0945526324934295e-11,
                1.4860401922386113e+19, 4.1949135580636398e-14],
               [3.7575278931263545e-01, 3.3343099481090225e-16, 5.9112851779332960e+08,
                7.9262864177252181e+00, 6.4635037527348000e-16],
               [2.1071558686195835e-17, 1.0342330038194436e+02, 3.7107059938522112e+18,
                3.9016078787049268e+12, 6.5073945549835612e-07]]), 2.1071558686195835e-17, True),
]


@pytest.mark.parametrize("c, limit, maximize", _TINY_PAIRS_NEXT_TO_A_LARGE_LIMIT)
def test_tiny_pairs_next_to_a_large_limit_get_certified_duals_without_a_warning(c, limit,
                                                                                 maximize):
    """Costs from 1e-20 to 1e19 with a limit among them. In the first two a row's dual from
    its least reduced cost left its own pair slack by a rounding of E's prices (1e-11 beside a
    cost of 7e-4), with no warning: prices are now lowered along the violations instead. In
    the last two E's own solve warned that its duals miss the rule at E's scale, while the
    limit problem's duals, computed at each row's scale, are certified: no warning."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = epslap.solve(c, cost_limit=limit, maximize=maximize)
    assert epslap.verify(c, s.row_ind, s.col_ind, s.u, s.v, maximize=maximize,
                         cost_limit=limit)["optimal"]


def test_an_unmatched_rows_entry_missed_by_a_rounding_of_e_is_mended_by_the_mapping():
    """E's certificate as the GPU solver returned it for this matrix (L = 1.58e-6): mapped to
    the limit problem, row 3 is unmatched (dual L/2) and column 3's price, E's rounded at
    E's scale, put their entry (-1.58e-9) 4e-21 above its cost, beyond its rule of 3e-21;
    nothing checked the unmatched rows' entries. The mapping lowers that price now (its owner
    row 0 takes its pair's cost minus it) and verify certifies the result."""
    from epslap.limit import from_extended
    from epslap.solution import Solution
    c = np.array([[1.2590964379925261e-10, -2.4973216197545216e-19, -7.3356323506341605e-03,
                   -7.4647418730219056e-05],
                  [-7.7193293294818579e+11, 2.1248372085783088e-03, 8.0582923627443083e-08,
                   -2.1373783937647748e-07],
                  [8.4237979376017265e+09, -8.7427273285231060e+00, -3.1415777080546680e+15,
                   -1.4374422056896654e+04],
                  [1.0550035149153769e+06, 1.4142100286846001e+12, 2.3746114411203655e-04,
                   -1.5841745850065912e-09]])
    limit = 1.5841745850065912e-06
    e_solution = Solution(np.arange(4), np.array([3, 0, 2, 4]), -3142349640987616.0,
                          np.array([-7.3061659970627462e-05, -7.7193293294818579e+11,
                                    -3.1415777080546680e+15, 1.5841745850065912e-06]),
                          np.array([0.0, 0.0, -7.2625706906635328e-03, -1.5857587595915942e-06,
                                    0.0, 0.0, 0.0, 0.0]), {})
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = from_extended(e_solution, c.shape, False, limit, c)
    assert list(s.col_ind) == [3, 0, 2] and s.u[3] == limit / 2
    assert epslap.verify(c, s.row_ind, s.col_ind, s.u, s.v, cost_limit=limit)["optimal"]
    assert epslap.solve(c, cost_limit=limit).cost == s.cost
