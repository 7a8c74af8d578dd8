"""Point sets relabeled in a spatial order for candidates, then certify: the labels map back."""
from __future__ import annotations

import numpy as np
import pytest

import costfns
import epslap
from conftest import assert_optimal, gpu
from epslap import locality


def test_morton_order_visits_a_grid_quadrant_by_quadrant():
    g = np.array([(x, y) for x in range(8) for y in range(8)], float)
    rng = np.random.default_rng(0)
    pts = g[rng.permutation(64)]
    order = locality.morton_order(pts, np.zeros(2), np.full(2, 8.0))
    assert np.array_equal(np.sort(order), np.arange(64))
    seen = pts[order]
    for q in range(4):  # each run of 16 fills one 4 x 4 quadrant, each run of 4 one 2 x 2 cell
        block = seen[16 * q:16 * (q + 1)] // 4
        assert (block == block[0]).all()
    for c in range(16):
        cell = seen[4 * c:4 * (c + 1)] // 2
        assert (cell == cell[0]).all()


def test_restore_labels_inverts_the_relabeling():
    rng = np.random.default_rng(1)
    x, y = rng.random((7, 2)), rng.random((11, 2))
    src = costfns.SqEuclidean(x, y)
    moved, order = locality.relabeled(src)
    rows, cols = order
    np.testing.assert_array_equal(moved.X, x[rows])
    np.testing.assert_array_equal(moved.Y, y[cols])
    r2c = np.array([3, -1, 0, 10, 5, 1, 2])  # the relabeled problem's pairs (-1: free)
    v, assigned = rng.random(11), rng.random(7)
    back, v_back, a_back = locality.restore_labels(order, False, r2c, v, assigned)
    for i in range(7):
        want = -1 if r2c[i] < 0 else cols[r2c[i]]
        assert back[rows[i]] == want
        assert a_back[rows[i]] == assigned[i]
    np.testing.assert_array_equal(v_back[cols], v)
    # an 11 x 7 source: the canonical problem is its transpose (rows = the source's columns)
    moved, order = locality.relabeled(costfns.SqEuclidean(y, x))
    rows, cols = order
    r2c = rng.permutation(11)[:7]  # canonical row t (source column cols[t]) -> source row
    back, v_back, _ = locality.restore_labels(order, True, r2c, rng.random(11), rng.random(7))
    np.testing.assert_array_equal(back[cols], rows[r2c])

def test_only_point_sets_are_relabeled():
    assert locality.relabeled(costfns.problem("random", 50, seed=1))[1] is None
    assert locality.relabeled(np.zeros((3, 3)))[1] is None
    img = costfns.ImageEMD(np.random.default_rng(2).random((6, 6, 3)),
                           np.random.default_rng(3).random((6, 6, 3)))
    moved, order = locality.relabeled(img)
    assert order is not None and isinstance(moved, type(img.points))


@pytest.mark.parametrize("shape", [(300, 300), (220, 310), (310, 220)])
@pytest.mark.parametrize("kind", [costfns.SqEuclidean, costfns.Euclidean])
def test_relabeled_point_sets_against_scipy(shape, kind):
    rng = np.random.default_rng(sum(shape))
    src = kind(rng.random((shape[0], 2)), rng.random((shape[1], 2)))
    for maximize in (False, True):
        sol = epslap.solve(src, candidates=6, maximize=maximize)
        assert_optimal(src.dense(), sol, maximize)


def test_image_emd_through_candidates_against_scipy():
    rng = np.random.default_rng(4)
    img = costfns.ImageEMD(rng.random((12, 12, 3)), rng.random((12, 12, 3)))
    sol = epslap.solve(img, candidates=8)
    assert sol.stats["method"] == "candidates"
    assert_optimal(img.dense(), sol)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(260, 340), (340, 260)])
def test_gpu_relabeled_point_sets_against_scipy(shape):
    rng = np.random.default_rng(7)
    for kind in (costfns.SqEuclidean, costfns.Euclidean):
        src = kind(rng.random((shape[0], 3)), rng.random((shape[1], 3)))
        for maximize in (False, True):
            sol = epslap.solve(src, backend="gpu", candidates=5, maximize=maximize)
            assert_optimal(src.dense(), sol, maximize)
