"""``epslap.emd2``: exact transport between equal-size uniform point clouds, against the
optimum of the materialised cost matrix (scipy) and, where POT is installed, ``ot.emd2``."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment
from scipy.spatial.distance import cdist

import epslap


@pytest.mark.parametrize("metric", ["sqeuclidean", "euclidean"])
@pytest.mark.parametrize("n,d", [(1, 2), (7, 1), (60, 2), (300, 3)])
def test_emd2_is_the_assignment_optimum_over_n(metric, n, d):
    rng = np.random.default_rng(n * 10 + d)
    xa, xb = rng.random((n, d)), rng.random((n, d)) + 0.3
    m = cdist(xa, xb, metric=metric)
    r, c = linear_sum_assignment(m)
    value, sol = epslap.emd2(xa, xb, metric, return_solution=True)
    assert value == pytest.approx(m[r, c].sum() / n, rel=1e-12)
    assert sol.cost == pytest.approx(n * value, rel=1e-15)
    assert epslap.verify(m, sol.row_ind, sol.col_ind, sol.u, sol.v)["optimal"]
    assert epslap.emd2(xa, xb, metric) == value


def test_emd2_takes_one_dimensional_clouds_as_points_on_a_line():
    xa, xb = np.array([0.0, 2.0, 5.0]), np.array([1.0, 4.0, 9.0])
    # on a line the sorted matching is optimal: |0-1| + |2-4| + |5-9| = 7
    assert epslap.emd2(xa, xb, "euclidean") == pytest.approx(7 / 3)


@pytest.mark.parametrize("xa,xb,match", [
    (np.zeros((3, 2)), np.zeros((4, 2)), "equal size"),
    (np.zeros((3, 2)), np.zeros((3, 3)), "same dimension"),
    (np.zeros((0, 2)), np.zeros((0, 2)), "at least one point"),
    (np.array([[np.nan, 0.0]]), np.zeros((1, 2)), "finite|NaN|nan"),
])
def test_emd2_refuses_what_is_not_an_assignment(xa, xb, match):
    with pytest.raises(ValueError, match=match):
        epslap.emd2(xa, xb)


def test_emd2_refuses_an_unknown_metric():
    with pytest.raises(ValueError, match="metric"):
        epslap.emd2(np.zeros((2, 2)), np.ones((2, 2)), "cityblock")


def test_emd2_agrees_with_pot():
    ot = pytest.importorskip("ot")
    rng = np.random.default_rng(4)
    xa, xb = rng.random((200, 2)), rng.random((200, 2))
    w = np.full(200, 1 / 200)
    for metric in ("sqeuclidean", "euclidean"):
        ref = ot.emd2(w, w, ot.dist(xa, xb, metric=metric))
        assert epslap.emd2(xa, xb, metric) == pytest.approx(ref, rel=1e-9)


@pytest.mark.parametrize("cls", ["SqEuclidean", "Euclidean"])
def test_points_whose_squared_distances_overflow_are_refused(cls):
    """Finite points whose squared distance is beyond float64 would make an inf cost, which
    the solvers read as a forbidden pair ("infeasible"): refused when the source is made."""
    import costfns
    x, y = np.array([[0.0], [1.0]]), np.array([[0.0], [1e155]])
    with pytest.raises(ValueError, match="overflow float64.*scale the points down"):
        getattr(costfns, cls)(x, y)
    with pytest.raises(ValueError, match="overflow float64"):
        epslap.emd2(x, y)
    getattr(costfns, cls)(x, y / 1e10)  # within range: made as before
    # each coordinate's largest difference squared is finite and their sum is not, but no
    # single pair's is: taken (the pairs are summed where the bound cannot decide)
    wide = getattr(costfns, cls)(np.zeros((2, 2)), np.array([[1e154, 0.0], [0.0, 1e154]]))
    assert np.isfinite(wide.dense()).all()
    with pytest.raises(ValueError, match="overflow float64"):  # ... and where one pair's is
        getattr(costfns, cls)(np.zeros((1, 2)), np.array([[1e154, 1e154]]))


def test_emd2_refuses_complex_coordinates_and_solve_names_extended_precision():
    """Complex points were cast to float64 with NumPy's warning (their imaginary part dropped:
    a distance of 0 between different clouds); a float128 matrix said "Cannot cast ... the cost
    must be a numeric array (... float)", of a float."""
    a = np.random.default_rng(0).random((5, 2))
    with pytest.raises(TypeError, match="real coordinates"):
        epslap.emd2(a.astype(complex) + 1j, a)
    if np.dtype(np.longdouble).itemsize > 8:
        with pytest.raises(TypeError, match="extended precision"):
            epslap.solve(np.eye(3, dtype=np.longdouble))


@pytest.mark.parametrize("metric", ["sqeuclidean", "euclidean"])
@pytest.mark.parametrize("scale", [1e-170, 1e-150, 1e-3, 1.0, 1e3, 1e150, 1e160])
def test_emd2_at_any_scale_is_the_unit_scale_value_scaled(metric, scale):
    """Points 1e-170 apart had a W1 of 0 (their squared differences underflowed) and points 1e160
    apart were refused (theirs overflowed) though the value is a float64: the clouds are solved
    at unit scale (a power of two, exact) and the value scaled back."""
    rng = np.random.default_rng(3)
    xa, xb = rng.random((30, 2)), rng.random((30, 2))
    unit, unit_sol = epslap.emd2(xa, xb, metric, return_solution=True)
    power = 2 if metric == "sqeuclidean" else 1
    expected = unit * scale * scale if power == 2 else unit * scale  # (inf beyond float64)
    if not np.isfinite(expected):
        with pytest.raises(ValueError, match="would overflow float64"):
            epslap.emd2(xa * scale, xb * scale, metric)
        return
    value, sol = epslap.emd2(xa * scale, xb * scale, metric, return_solution=True)
    assert value == pytest.approx(expected, rel=1e-12, abs=1e-323)
    assert np.array_equal(sol.col_ind, unit_sol.col_ind)
    if 1e-100 < scale < 1e100:  # the duals in the points' units (cdist's range)
        dense = cdist(xa * scale, xb * scale, metric)
        assert epslap.verify(dense, sol.row_ind, sol.col_ind, sol.u, sol.v)["optimal"]
