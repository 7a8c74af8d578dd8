"""A search of a tree of boxes in place of the n² passes for squared Euclidean point sets: the
same candidates, the same failing rows and pairs as the scanning passes, and the same optimum."""
from __future__ import annotations

import numpy as np
import pytest

import costfns
import epslap
import epslap.candidates as cand
from conftest import assert_certificate_catches_planted_violations, assert_optimal
from epslap.point_pairs import applies
from epslap.point_passes import PointPasses


def _source(n1, n2, d, seed):
    rng = np.random.default_rng(seed)
    return costfns.SqEuclidean(rng.random((n1, d)), rng.random((n2, d)))


def test_applies_to_squared_euclidean_and_euclidean_minimised_only():
    src = _source(5, 5, 2, 0)
    assert applies(src, False)
    assert not applies(src, True)
    assert applies(costfns.Euclidean(src.X, src.Y), False)
    assert not applies(costfns.Euclidean(src.X, src.Y), True)
    assert not applies(src.dense(), False)


def _distances(src):
    """The same points with Euclidean costs (the square root of the same sums)."""
    return costfns.Euclidean(src.X, src.Y)


def _clustered(n1, n2, d, seed):
    """Points in 6 tight clusters, each side's share of a cluster different: the optimum moves
    mass between clusters, and the prices differ from cluster to cluster."""
    rng = np.random.default_rng(seed)
    centres = rng.random((6, d)) * 10
    x = centres[rng.integers(0, 3, n1)] + rng.normal(scale=0.05, size=(n1, d))
    y = centres[rng.integers(0, 6, n2)] + rng.normal(scale=0.05, size=(n2, d))
    return costfns.SqEuclidean(x, y)


def _grid(n1, n2, d, seed):
    """Integer points on a small grid, some repeated: ties everywhere, broken by column."""
    rng = np.random.default_rng(seed)
    return costfns.SqEuclidean(rng.integers(0, 12, (n1, d)).astype(float),
                               rng.integers(0, 12, (n2, d)).astype(float))


@pytest.mark.parametrize("shape", [(400, 400), (250, 400), (400, 250)])
@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("layout", [_source, _clustered, _grid])
@pytest.mark.parametrize("metric", ["sqeuclidean", "euclidean"])
def test_passes_equal_the_scanning_passes(shape, d, layout, metric):
    src = layout(*shape, d, seed=sum(shape) + d)
    src = _distances(src) if metric == "euclidean" else src
    tree, scan = PointPasses(src, False, 2), cand.HostPasses(src, False, 1)
    n1 = min(shape)
    rows = np.arange(n1, dtype=np.int64)
    rng = np.random.default_rng(1)
    for v in (np.zeros(max(shape)), -rng.random(max(shape)) * 0.05):  # at 0, then all different
        for got, want in zip(tree.candidates(v, 7, rows, False),
                             scan.candidates(v, 7, rows, False)):
            np.testing.assert_array_equal(got, want)
    sol = epslap.solve(src, candidates=True)
    r2c = np.asarray(sol.col_ind if shape[0] <= shape[1] else sol.row_ind)
    u = np.asarray(sol.u if shape[0] <= shape[1] else sol.v, np.float64)
    v = np.asarray(sol.v if shape[0] <= shape[1] else sol.u, np.float64)
    order = np.argsort(sol.row_ind if shape[0] <= shape[1] else sol.col_ind)
    r2c = r2c[order]
    assert tree.certify(v, u, r2c, rows, 5, cand.CERTIFY_REL)[0].size == 0
    bad = v.copy()
    bad[::7] += 0.01  # columns made cheap: the rows near them lose their certificate
    got = tree.certify(bad, u, r2c, rows, 5, cand.CERTIFY_REL)
    want = scan.certify(bad, u, r2c, rows, 5, cand.CERTIFY_REL)
    np.testing.assert_array_equal(got[0], want[0])  # the same failing rows
    assert got[0].size
    np.testing.assert_array_equal(got[3], want[3])  # as many pairs each
    for t in range(got[0].size):  # the same pairs (their order among equal values may differ)
        assert set(got[1][t, :got[3][t]]) == set(want[1][t, :want[3][t]])
    np.testing.assert_allclose(got[4], want[4], rtol=0, atol=0)  # each row's least c - v


@pytest.mark.parametrize("shape", [(600, 600), (300, 500), (500, 300)])
@pytest.mark.parametrize("metric", ["sqeuclidean", "euclidean"])
def test_solves_against_scipy_and_uses_the_tree_passes(shape, metric):
    src = _source(*shape, 2, seed=shape[0])
    src = _distances(src) if metric == "euclidean" else src
    sol = epslap.solve(src, candidates=8, threads=2)
    assert sol.stats["method"] == "candidates"
    assert sol.stats["pass_method"] == "box tree"
    assert_optimal(src.dense(), sol)


def test_planted_shortcut_found_by_the_certificate():
    """41 rows and 40 columns in a tight cluster, one column far away: row 0, a little toward
    it, must take the far column, a pair beyond every list of 3 nearest columns (only row 40's
    identity pair reaches it at first); the tree's certificate pass finds it, adds it, and the
    answer uses it."""
    rng = np.random.default_rng(5)
    x = rng.random((41, 2)) * 0.01
    x[0] = [0.05, 0.05]
    y = np.vstack([x[1:] + rng.random((40, 2)) * 1e-3, [[10.0, 10.0]]])
    src = costfns.SqEuclidean(x, y)
    sol = epslap.solve(src, candidates=3)
    assert_optimal(src.dense(), sol)
    st = sol.stats
    assert st["method"] == "candidates" and st["rounds"] >= 2 and st["edges_added"] >= 1
    assert st["pass_method"] == "box tree"
    assert sol.col_ind[0] == 40  # the far column, by the planted pair


def test_wrong_duals_never_certify():
    src = _source(300, 300, 2, seed=9)
    sol = epslap.solve(src, candidates=True)
    assert_certificate_catches_planted_violations(PointPasses(src, False, 1), src, sol)


@pytest.mark.parametrize("shape", [(300, 300), (180, 300), (300, 180)])
@pytest.mark.parametrize("layout", [_source, _clustered, _grid])
@pytest.mark.parametrize("metric", ["sqeuclidean", "euclidean"])
def test_verify_of_a_point_set_reads_few_pairs_and_says_what_the_matrix_says(shape, layout,
                                                                              metric):
    """``epslap.verify`` of a squared Euclidean source reads only the pairs within each row's
    reach (``point_pairs.verify_pairs``), and its report equals the matrix form's for
    the solver's duals, for duals made infeasible and for a wrong assignment."""
    from epslap.point_pairs import verify_pairs
    src = layout(*shape, 2, 7)
    src = _distances(src) if metric == "euclidean" else src
    dense = src.dense()
    sol = epslap.solve(src, candidates=False)
    pairs = verify_pairs(src, sol.row_ind, sol.col_ind, sol.u, sol.v)
    if layout is _source:  # the own pairs and a few near ties, not n1 x n2 (a grid ties more)
        assert pairs.data.size < 4 * min(shape)
    u_bad = sol.u.copy()
    u_bad[3] += 1e-3
    v_bad = sol.v.copy()
    v_bad[np.argmax(v_bad)] += 1e-6
    wrong = sol.col_ind.copy()
    wrong[[0, 1]] = wrong[[1, 0]]
    for row_ind, col_ind, u, v in ((sol.row_ind, sol.col_ind, sol.u, sol.v),
                                   (sol.row_ind, sol.col_ind, u_bad, sol.v),
                                   (sol.row_ind, sol.col_ind, sol.u, v_bad),
                                   (sol.row_ind, wrong, sol.u, sol.v)):
        got = epslap.verify(src, row_ind, col_ind, u, v)
        assert got == epslap.verify(dense, row_ind, col_ind, u, v)
    assert epslap.verify(src, sol.row_ind, sol.col_ind, sol.u, sol.v)["optimal"]
    assert not epslap.verify(src, sol.row_ind, sol.col_ind, u_bad, sol.v)["optimal"]


def test_verify_of_a_point_set_with_duals_far_off_streams_every_cost(monkeypatch):
    """Duals far above the costs put most pairs below the rows' reach: past the pair budget
    ``verify_pairs`` hands the check back, and the full stream gives the matrix's report."""
    import epslap.point_pairs as point_pairs
    src = _source(200, 200, 2, 9)
    sol = epslap.solve(src, candidates=False)
    u = sol.u + 10.0
    assert point_pairs.verify_pairs(src, sol.row_ind, sol.col_ind, u, sol.v) is not None
    monkeypatch.setattr(point_pairs, "VERIFY_PAIRS_MIN", 0)
    assert point_pairs.verify_pairs(src, sol.row_ind, sol.col_ind, u, sol.v) is None
    got = epslap.verify(src, sol.row_ind, sol.col_ind, u, sol.v)
    assert got == epslap.verify(src.dense(), sol.row_ind, sol.col_ind, u, sol.v)
    assert not got["optimal"]
    assert point_pairs.verify_pairs(src, sol.row_ind, sol.col_ind, sol.u, sol.v) is not None


def test_verify_of_a_point_set_far_from_the_origin_or_with_huge_duals():
    """The margin above each row's dual scales with the cloud, not its place (a cloud far from
    the origin lists as few pairs as at the origin), and duals spread beyond the float range go to the full check, which
    reports them."""
    from epslap.point_pairs import verify_pairs
    rng = np.random.default_rng(3)
    x, y = rng.random((200, 2)), rng.random((200, 2))
    listed = []
    for offset in (0.0, 1e6):
        src = costfns.SqEuclidean(x + offset, y + offset)
        sol = epslap.solve(src, candidates=False)
        listed.append(verify_pairs(src, sol.row_ind, sol.col_ind, sol.u, sol.v).data.size)
        assert epslap.verify(src, sol.row_ind, sol.col_ind, sol.u, sol.v) == epslap.verify(
            src.dense(), sol.row_ind, sol.col_ind, sol.u, sol.v)
    assert listed[1] <= 2 * listed[0] < 2000
    v = sol.v.copy()
    v[:2] = 1e308, -1e308
    assert verify_pairs(src, sol.row_ind, sol.col_ind, sol.u, v) is None
    report = epslap.verify(src, sol.row_ind, sol.col_ind, sol.u, v)
    assert not report["optimal"] and "dual infeasible" in report["reason"]


def _balanced_clusters(n, d, seed):
    """20 tight clusters, as many points of each side in each: prices differ between them."""
    rng = np.random.default_rng(seed)
    centres = rng.random((20, d))
    label = rng.integers(0, 20, n)
    return costfns.SqEuclidean(centres[label] + rng.normal(scale=0.01, size=(n, d)),
                               centres[rng.permutation(label)]
                               + rng.normal(scale=0.01, size=(n, d)))


@pytest.mark.parametrize("layout", ["uniform", "clusters"])
def test_a_row_reads_a_few_tiles_of_the_tree(layout):
    """The passes read a handful of the tree's tiles a row, not every column: on uniform and on
    clustered points (prices differing between clusters) alike."""
    src = (_source(12000, 12000, 2, seed=4) if layout == "uniform"
           else _balanced_clusters(12000, 2, seed=4))
    sol = epslap.solve(src, candidates=True, threads=2)
    st = sol.stats
    assert st["pass_method"] == "box tree" and st["tiles"] == 94
    assert st["tiles_read_per_row"] < 12, st["tiles_read_per_row"]
    assert epslap.verify(src, sol.row_ind, sol.col_ind, sol.u, sol.v)["optimal"]
