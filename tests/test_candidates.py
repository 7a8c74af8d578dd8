"""Candidates, then certify: the same optimum as scipy on every class, whatever the candidates."""
from __future__ import annotations

import numba
import numpy as np
import pytest

import costfns
import epslap
import epslap.candidates as cand
from conftest import assert_certificate_catches_planted_violations, assert_optimal, gpu

CLASSES = ["random", "geometric", "disjoint", "sanity", "rank1", "rank8", "integer"]


def _matrix(name, n1, n2, seed):
    rng = np.random.default_rng(seed)
    if name == "random":
        return rng.random((n1, n2))
    if name == "geometric":
        x, y = rng.random((n1, 2)), rng.random((n2, 2))
        return ((x[:, None] - y[None]) ** 2).sum(-1)
    if name == "disjoint":
        x, y = rng.random((n1, 2)), rng.random((n2, 2)) + [2.0, 0.0]
        return ((x[:, None] - y[None]) ** 2).sum(-1)
    if name == "sanity":
        return np.add.outer(np.arange(n1), np.arange(n2)) + rng.random((n1, n2)) * 1e-3
    if name in ("rank1", "rank8"):
        r = int(name[4:])
        return rng.random((n1, r)) @ rng.random((r, n2))
    return rng.integers(-50, 1000, (n1, n2))


@pytest.mark.parametrize("name", CLASSES)
@pytest.mark.parametrize("shape", [(120, 120), (80, 130), (130, 80)])
@pytest.mark.parametrize("maximize", [False, True])
def test_matrix_classes_against_scipy(name, shape, maximize):
    c = _matrix(name, *shape, seed=sum(shape))
    sol = epslap.solve(c, maximize=maximize, candidates=3)  # few candidates: several rounds
    assert_optimal(c, sol, maximize)
    if sol.stats.get("method") == "candidates":
        st = sol.stats
        assert st["rounds"] >= 1 and st["rows_streamed"] >= min(shape)
        assert st["edges"] == st["candidate_edges"] + st["edges_added"]
    else:  # handed over to the dense method, saying why
        assert sol.stats["candidates"]


@pytest.mark.parametrize("name", ["random", "geometric", "integer", "rank8"])
def test_cost_sources_against_scipy(name):
    src = costfns.problem(name, 300, seed=3)
    for threads in (1, 2):
        sol = epslap.solve(src, candidates=True, threads=threads)
        assert_optimal(src.dense(), sol)
        assert sol.stats["threads"] == threads or sol.stats.get("candidates")
    sol = epslap.solve(src, candidates=8, maximize=True)
    assert_optimal(src.dense(), sol, maximize=True)


def test_a_poor_first_certificate_takes_the_failing_rows_again_by_reduced_cost():
    """More than REPRICE_ABOVE of the rows failing the first pass: each failing row (and only
    those) gets its k cheapest columns by c - v under the first solve's prices; the answer is
    still the full problem's (the certificate of the point set, read independently)."""
    rng = np.random.default_rng(3)
    src = costfns.SqEuclidean(rng.random((6000, 2)), rng.random((6000, 2)))
    sol = epslap.solve(src, candidates=20)
    st = sol.stats
    assert st["method"] == "candidates"
    assert cand.REPRICE_ABOVE * 6000 < st["first_failing"] < 6000 // 2
    assert st["repriced_edges"] == 20 * st["first_failing"]
    report = epslap.verify(src, sol.row_ind, sol.col_ind, sol.u, sol.v)
    assert report["optimal"], report


def test_planted_shortcut_found_by_the_certificate(monkeypatch):
    """Row 0's optimal partner is its second cheapest column, outside its one candidate: only
    the certificate pass can find that pair, add it and use it."""
    monkeypatch.setattr(cand, "ADDED_MAX", 1e9)  # one candidate per row: many pairs added
    rng = np.random.default_rng(7)
    n = 60
    c = 10.0 + rng.random((n, n))
    c[:, 5] = 0.0  # every row's cheapest column: 5 (each row's only candidate)
    c[0, 37] = 0.5  # row 0's shortcut, beyond its candidates
    c[np.arange(n), np.arange(n)] += 5.0  # the identity pairs (always added) are dear
    sol = epslap.solve(c, candidates=1)
    assert_optimal(c, sol)
    st = sol.stats
    assert st["method"] == "candidates" and st["rounds"] >= 2 and st["edges_added"] >= 1
    assert sol.col_ind[0] == 37  # the planted pair is used
    monkeypatch.undo()
    sol = epslap.solve(c, candidates=1)  # the rounds add more than twice the candidates
    assert_optimal(c, sol)
    assert "without a certificate" in sol.stats["candidates"]


def test_wrong_duals_never_certify():
    src = costfns.problem("geometric", 200, seed=2)
    sol = epslap.solve(src, candidates=True)
    assert_certificate_catches_planted_violations(cand.HostPasses(src, False, 1), src, sol)


def test_streamed_verify_equals_the_matrix_form():
    src = costfns.problem("random", 150, seed=4)
    sol = epslap.solve(src, candidates=True)
    dense = src.dense()
    for u, v in ((sol.u, sol.v), (sol.u + 1e-3, sol.v)):
        a = epslap.verify(src, sol.row_ind, sol.col_ind, u, v)
        b = epslap.verify(dense, sol.row_ind, sol.col_ind, u, v)
        assert a["optimal"] == b["optimal"]
        assert a["max_violation"] == pytest.approx(b["max_violation"], rel=1e-12, abs=1e-15)
        assert a["gap"] == pytest.approx(b["gap"], rel=1e-12, abs=1e-12)


def _sources_for_verify():
    rng = np.random.default_rng(0)
    x, y = rng.random((300, 2)), rng.random((250, 2))
    m = rng.random((200, 260))
    m[rng.random(m.shape) < 0.05] = np.inf  # forbidden pairs
    return [(costfns.Euclidean(x, y), False), (costfns.Euclidean(y, x), True),
            (costfns.Dense(m), False),
            (costfns.Dense(rng.random((150, 150)).astype(np.float32)), True),
            (costfns.problem("rank8", 300, seed=3), False),
            (costfns.problem("sanity", 300, seed=3), True)]


def test_compiled_verify_of_a_source_reports_what_the_matrix_form_reports(monkeypatch):
    """``verify`` of a float cost source scans its rows compiled (``cpu.verify_rows``): the
    same report as the matrix form, for the solver's duals and for one dual made infeasible,
    rectangular both ways, maximised, float32, with forbidden pairs; a NaN cost still raises
    the matrix form's error."""
    import epslap.certificate as certificate
    used = []
    scan = certificate._compiled_scan

    def spy(source, *rest):
        out = scan(source, *rest)
        if source is not None:  # the matrix form passes none
            used.append(out)
        return out
    monkeypatch.setattr(certificate, "_compiled_scan", spy)
    for src, maximize in _sources_for_verify():
        sol = epslap.solve(src, maximize=maximize, candidates=False)
        bad = sol.u.copy()
        bad[4] += -1e-3 if maximize else 1e-3
        for u in (sol.u, bad):
            a = epslap.verify(src, sol.row_ind, sol.col_ind, u, sol.v, maximize=maximize)
            assert a == epslap.verify(src.dense(), sol.row_ind, sol.col_ind, u, sol.v,
                                      maximize=maximize)
            assert a["optimal"] == (u is sol.u)
    assert used and all(x is not None for x in used)
    m = np.random.default_rng(1).random((40, 40))
    sol = epslap.solve(m)
    m[3, 5] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        epslap.verify(costfns.Dense(m), sol.row_ind, sol.col_ind, sol.u, sol.v)
    assert used[-1] is None  # handed to the NumPy loop, which names the NaN


@pytest.mark.parametrize("form", ["python element", "python row", "jitted row"])
def test_verify_of_a_source_without_an_entry_form(form):
    """A source read by rows only (a Python function, a row function): its assigned pairs'
    costs come from the rows the scan reads. They were read by an entry form it does not have
    (0 for every pair): a wrong assignment with zero duals was reported optimal and the
    optimum was not."""
    m = np.random.default_rng(1).random((30, 40)) * 1000 + 1
    if form == "python element":
        src = costfns.from_function(lambda i, j: m[i, j], m.shape)
    elif form == "python row":
        src = costfns.from_function(lambda i: m[i], m.shape, kind="row")
    else:
        @numba.njit
        def fill(i, out):
            out[:] = m[i]
        src = costfns.from_function(fill, m.shape, kind="row")
    sol = epslap.solve(m)
    wrong = (np.arange(30), np.arange(30)[::-1], np.zeros(30), np.zeros(40))
    for args in ((sol.row_ind, sol.col_ind, sol.u, sol.v), wrong):
        got = epslap.verify(src, *args)
        assert got == epslap.verify(m, *args)
    assert epslap.verify(src, sol.row_ind, sol.col_ind, sol.u, sol.v)["optimal"]
    assert not epslap.verify(src, *wrong)["optimal"]


def test_verify_of_rows_given_by_an_object_that_is_not_a_cost_source():
    """``verify`` takes any object with ``rows``, ``shape`` and ``dtype`` (the GPU certificate
    passes the host's rows so): read by the NumPy loop, the matrix form's report (the compiled
    scan needs a cost source's state, and called that object's attribute before)."""
    from epslap.gpu.certificate import StateRows

    def cost(i, j):
        return float((i * 7 + j * 13) % 31) + 0.25 * ((i + 2 * j) % 5)
    src = costfns.from_function(cost, (90, 150))
    sol = epslap.solve(src)
    rows = StateRows(src.state(), (90, 150), np.dtype(np.float64))
    for u in (sol.u, sol.u + 1e-3):
        got = epslap.verify(rows, sol.row_ind, sol.col_ind, u, sol.v)
        assert got == epslap.verify(src.dense(), sol.row_ind, sol.col_ind, u, sol.v)
        assert got["optimal"] == (u is sol.u)


def test_auto_takes_candidates_where_they_spread(monkeypatch):
    monkeypatch.setattr(cand, "AUTO_MIN_SIDE", {"cpu": 100, "gpu": 100})
    monkeypatch.setattr(cand, "AUTO_MATRIX_MIN_SIDE", {"cpu": 100, "gpu": 100})
    geo = costfns.problem("geometric", 400, seed=1)
    sol = epslap.solve(geo)
    assert sol.stats["method"] == "candidates"
    assert_optimal(geo.dense(), sol)
    low = costfns.problem("rank1", 400, seed=1)
    sol = epslap.solve(low)
    assert "share their columns" in sol.stats["candidates"]
    assert_optimal(low.dense(), sol)


@pytest.mark.parametrize("name", CLASSES)
@pytest.mark.parametrize("shape", [(400, 400), (400, 440), (440, 400)])  # (not wide)
def test_auto_on_matrices_samples_them_first(name, shape, monkeypatch):
    """A matrix in memory: ``"auto"`` judges a NumPy sample of its rows before anything else
    is built, with the same rule as for cost sources (the sample's spread and the message)."""
    import epslap.cpu.small as small
    monkeypatch.setattr(cand, "AUTO_MIN_SIDE", {"cpu": 100, "gpu": 100})
    monkeypatch.setattr(cand, "AUTO_MATRIX_MIN_SIDE", {"cpu": 100, "gpu": 100})
    monkeypatch.setattr(small, "QUICK_SIDE", 0)  # no shortcut for small matrices in the way
    c = _matrix(name, *shape, seed=2)
    for maximize in (False, True):
        sol = epslap.solve(c, maximize=maximize)
        assert_optimal(c, sol, maximize)
        canon = (-c if maximize else c)
        canon = canon if shape[0] <= shape[1] else canon.T
        rows = cand._sample_rows(canon.shape[0])
        k = cand.default_k(max(shape))
        near = np.sort(canon[rows], axis=1, kind="stable")[:, k - 1:k]  # each row's k-th value
        picks = [np.flatnonzero(canon[r] < t[0])[:k] for r, t in zip(rows, near)]
        spread = np.unique(np.concatenate(picks)).size / (canon.shape[1] * -np.expm1(
            -rows.size * k / canon.shape[1]))
        if sol.stats.get("method") == "candidates":
            assert sol.stats["sample_spread"] >= cand.AUTO_SPREAD_MIN
        elif "share their columns" in sol.stats.get("candidates", ""):
            assert spread < cand.AUTO_SPREAD_MIN + 0.05  # the rule, up to ties at the k-th
    if name in ("random", "geometric"):
        assert epslap.solve(c).stats["method"] == "candidates"
    if name in ("rank1", "sanity"):
        assert "share their columns" in epslap.solve(c).stats["candidates"]
    monkeypatch.setattr(cand, "AUTO_MATRIX_BACKENDS", ())  # matrices off: the dense method
    assert epslap.solve(c).stats.get("method") != "candidates"


def test_default_count_grows_with_n_and_faster_beyond_a_million():
    counts = [cand.default_k(n) for n in (2, 5000, 65536, 1024000, 2**20, 2**20 + 1,
                                          4096000, 16384000)]
    assert counts == [24, 34, 64, 64, 64, 84, 104, 144]


def test_forbidden_diagonal_hands_over_or_solves():
    rng = np.random.default_rng(3)
    c = rng.random((50, 50))
    c[np.arange(50), np.arange(50)] = np.inf
    c[:, 0] = 0.0  # all candidates in column 0: no complete assignment among them (k = 1)
    c[0, 0] = np.inf
    sol = epslap.solve(c, candidates=1)
    assert_optimal(c, sol)
    assert sol.stats["candidates"] == "no complete assignment among the candidates"


def test_infeasible_and_bad_values():
    c = np.ones((4, 4))
    c[2] = np.inf
    with pytest.raises(epslap.InfeasibleError):
        epslap.solve(c, candidates=2)
    nan = costfns.from_function(lambda i, j: float("nan") if (i, j) == (3, 1) else 1.0, (5, 5))
    with pytest.raises(ValueError, match="NaN"):
        epslap.solve(nan, candidates=2)
    neg = costfns.from_function(lambda i, j: -np.inf if (i, j) == (0, 4) else 1.0, (5, 5))
    with pytest.raises(ValueError, match="-inf"):
        epslap.solve(neg, candidates=2)


@pytest.mark.parametrize("value, maximize", [(np.nan, False), (-np.inf, False), (np.nan, True),
                                             (np.inf, True), (1e306, False)])
@pytest.mark.parametrize("transpose", [False, True])
def test_a_matrix_s_bad_values_are_named_by_the_candidate_pass(value, maximize, transpose):
    """A matrix's values are checked by the candidate pass itself (no sweeps beforehand): the
    same errors as the dense method's, wherever the entry lies."""
    c = np.random.default_rng(4).random((30, 40))
    c[17, 33] = value
    c = c.T if transpose else c
    text = "overflow" if value == 1e306 else "invalid numeric entries"
    for method in (2, False):
        with pytest.raises(ValueError, match=text):
            epslap.solve(c, maximize=maximize, candidates=method)


def test_float_matrix_checks_by_its_minimum_and_maximum():
    from epslap._validate import check_float_matrix
    c = np.random.default_rng(5).random((20, 30))
    check_float_matrix(c)
    c[4, 4] = np.inf  # a forbidden pair: the finite entries' range decides
    c[5, 5] = 1e306
    with pytest.raises(ValueError, match="overflow"):
        check_float_matrix(c)
    c[5, 5] = 1.0
    check_float_matrix(c)
    for bad in (np.nan, -np.inf):
        d = c.copy()
        d[7, 2] = bad
        with pytest.raises(ValueError, match="invalid numeric entries"):
            check_float_matrix(d)


@pytest.mark.parametrize("value", [0, -3, "many", 2.5, None])
def test_bad_option_values(value):
    with pytest.raises(ValueError, match="candidates must be"):
        epslap.solve(np.ones((3, 3)), candidates=value)


def test_options_that_exclude_candidates():
    c = np.random.default_rng(0).random((6, 6))
    for kwargs in ({"cost_limit": 1.0}, {"init": np.zeros(6)}, {"epsilon": False}):
        with pytest.raises(ValueError, match="candidates does not apply"):
            epslap.solve(c, candidates=3, **kwargs)
        assert epslap.solve(c, **kwargs).row_ind.size  # "auto": the dense method
    with pytest.raises(ValueError, match="sparse cost"):
        import scipy.sparse as sp
        epslap.solve(sp.csr_array(c), candidates=3)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("name", CLASSES)
def test_gpu_candidates_against_scipy(name):
    src = costfns.problem(name, 500, seed=5)
    for maximize in (False, True):
        sol = epslap.solve(src, backend="gpu", candidates=4, maximize=maximize)
        assert_optimal(src.dense(), sol, maximize)
        if sol.stats.get("method") == "candidates":
            assert sol.stats["backend"] == "gpu"
    m = _matrix(name, 150, 230, seed=1)
    for mat in (m, m.T):
        assert_optimal(mat, epslap.solve(mat, backend="gpu", candidates=3))


def test_tile_boxes_hold_each_tiles_extremes():
    """The box bound's host side (no GPU needed: a stand-in for CuPy's asarray): each tile of
    CANDIDATE_TILE columns, the last one short, has its points' least and largest coordinates
    and its largest price."""
    import types

    from epslap.gpu.candidates import TileBoxes
    from epslap.gpu.modules import CANDIDATE_TILE as T
    host = types.SimpleNamespace(asarray=lambda a, dtype=None: np.asarray(a, dtype))
    rng = np.random.default_rng(4)
    for n2, d in ((1, 2), (T, 3), (2 * T + 5, 2)):
        x, y, v = rng.random((3, d)), rng.random((n2, d)), rng.random(n2) - 0.5
        rows, box, vmax = TileBoxes(host, x, y, False).args(v)
        np.testing.assert_array_equal(rows, x)
        for t in range(-(-n2 // T)):
            part = slice(t * T, (t + 1) * T)
            np.testing.assert_array_equal(box[t], np.concatenate([y[part].min(0), y[part].max(0)]))
            assert vmax[t] == v[part].max()
        assert box.shape == (-(-n2 // T), 2 * d) and box.flags.c_contiguous


@gpu
@pytest.mark.gpu
def test_gpu_candidates_beyond_the_default_list_length():
    """A count above the default build's list length gets a build with lists that long (the
    default build's lists hold LIST_MAX: a longer request overran them)."""
    from epslap.gpu.candidates import LIST_MAX
    src = costfns.problem("geometric", 300, seed=2)
    sol = epslap.solve(src, backend="gpu", candidates=LIST_MAX + 24)
    assert sol.stats["candidates_per_row"] == LIST_MAX + 24
    assert_optimal(src.dense(), sol)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("blocks, device", [("full", 0), ("one", 0), ("full", (0, 0, 0))])
def test_gpu_passes_equal_the_cpu_passes(blocks, device, monkeypatch):
    """Same costs, same arithmetic (no fused multiply-add): the same candidates, the same
    failing rows and pairs; with one block of threads, each thread scans several rows; with
    the rows split over three partitions of the device, each its share (``device=[0, 0, 0]``:
    a test of the split over GPUs on one), in the order asked."""
    import epslap.gpu.candidates as gc
    for name in ("geometric", "integer", "random"):
        src = costfns.problem(name, 700, seed=6)
        host, dev = cand.HostPasses(src, False, 2), gc.DevicePasses(src, False, device)
        assert len(dev.parts) == (1 if device == 0 else 3)
        if blocks == "one":
            monkeypatch.setattr(gc, "PASS_BLOCKS_PER_SM", 1)
            for part in dev.parts:
                part.sms = 1
        rows = np.arange(700, dtype=np.int64)
        if device != 0:
            rows = np.random.default_rng(2).permutation(rows)
        rng = np.random.default_rng(1)
        v = (rng.random(700) * 0.05).astype(host.work) if name != "integer" else \
            rng.integers(0, 5000, 700).astype(np.int64)
        for some in (rows, rows[::3]):  # every row, and a subset (a poor pass's failing rows)
            for got, want in zip(dev.candidates(v, 9, some, False),
                                 host.candidates(v, 9, some, False)):
                np.testing.assert_array_equal(got, want)
        sol = epslap.solve(src, candidates=True)
        u = np.asarray(sol.u, host.work)
        r2c = np.asarray(sol.col_ind, np.int64)
        bad = np.asarray(sol.v, host.work).copy()
        bad[::7] += 1 if name == "integer" else 0.01  # rows that lose their certificate
        got = dev.certify(bad, u, r2c, rows, 5, cand.CERTIFY_REL)
        want = host.certify(bad, u, r2c, rows, 5, cand.CERTIFY_REL)
        for g, w in zip(got[:4], want[:4]):
            np.testing.assert_array_equal(g, w)
        # each row's least reduced cost beside its pair: exact, or a lower bound of it where
        # the device skipped tiles by their box bound (a point set)
        if dev.parts[0].boxes is None:
            np.testing.assert_array_equal(got[4], want[4])
        else:
            assert (got[4] <= want[4]).all()


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["sq2", "sq3", "euclid2", "unordered"])
def test_gpu_box_bound_skips_tiles_without_changing_the_passes(kind):
    """The passes of a point set with tiles skipped by their box bound return what the full
    scan returns (candidates under zero and under solved prices; the certificate's failing rows
    and pairs under prices that break it); the rows of a relabeled set skip most tiles."""
    import epslap.gpu.candidates as gc
    from epslap.locality import relabeled
    n, d = 2000, 3 if kind == "sq3" else 2
    rng = np.random.default_rng(7)
    x, y = rng.random((n, d)), rng.random((n, d))
    src = (costfns.Euclidean if kind == "euclid2" else costfns.SqEuclidean)(x, y)
    if kind != "unordered":
        src, _ = relabeled(src)
    boxed = gc.DevicePasses(src, False, 0)
    assert boxed.parts[0].boxes is not None
    full = gc.DevicePasses(src, False, 0)
    full.parts[0].boxes = None  # the passes' module of a scan without the bound
    rows = np.arange(n, dtype=np.int64)
    sol = epslap.solve(src, candidates=True)
    v = np.asarray(sol.v, np.float64)
    for prices in (np.zeros(n), v):
        for got, want in zip(boxed.candidates(prices, 12, rows, False),
                             full.candidates(prices, 12, rows, False)):
            np.testing.assert_array_equal(got, want)
    u = np.asarray(sol.u, np.float64)
    r2c = np.asarray(sol.col_ind, np.int64)
    for prices in (v, v + np.where(np.arange(n) % 5 == 0, 0.01, 0.0)):
        got = boxed.certify(prices, u, r2c, rows, 5, cand.CERTIFY_REL)
        want = full.certify(prices, u, r2c, rows, 5, cand.CERTIFY_REL)
        for g, w in zip(got[:4], want[:4]):
            np.testing.assert_array_equal(g, w)
        assert (got[4] <= want[4]).all()
    assert sol.cost == epslap.solve(src, backend="gpu", candidates=True).cost


def test_gpu_auto_leaves_sources_without_a_device_form_to_the_dense_method():
    """On the GPU the candidates' passes compute the costs on the device: ``"auto"`` leaves a
    source without a device form (a Python or jitted function, a file) to the dense method's
    device row cache, and so a source given an explicit ``cache=`` (no GPU needed to decide)."""
    from epslap._validate import Options, Problem
    from tests.conftest import GPU_AUTO_MIN_SIDE
    n = max(GPU_AUTO_MIN_SIDE)
    fn = costfns.from_function(lambda i, j: float(i ^ j), (n, n))
    geo = costfns.problem("geometric", n, seed=1)
    gpu = Options(backend="gpu")
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(cand.AUTO_MIN_SIDE, "gpu", GPU_AUTO_MIN_SIDE[0])
        assert cand.candidates_per_row(Problem(fn, "source", False), gpu) is None
        assert cand.candidates_per_row(Problem(geo, "source", False), gpu) is not None
        assert cand.candidates_per_row(Problem(geo, "source", False),
                                       gpu._replace(cache="lfu")) is None
        assert cand.candidates_per_row(Problem(fn, "source", False),
                                       gpu._replace(candidates=True)) is not None


@gpu
@pytest.mark.gpu
def test_gpu_auto_default_threshold_takes_square_problems_from_2000(monkeypatch):
    """The package's own GPU thresholds (the suite keeps its dense-solver tests below them,
    tests/conftest.py): square sources and matrices of 2000 rows by candidates, the optimum of
    the dense method; a wide one keeps the GPU's rectangular route."""
    from tests.conftest import GPU_AUTO_MIN_SIDE
    assert GPU_AUTO_MIN_SIDE == (2000, 2000)
    monkeypatch.setitem(cand.AUTO_MIN_SIDE, "gpu", GPU_AUTO_MIN_SIDE[0])
    monkeypatch.setitem(cand.AUTO_MATRIX_MIN_SIDE, "gpu", GPU_AUTO_MIN_SIDE[1])
    for src in (costfns.problem("geometric", 2000, seed=3), costfns.problem("random", 2000)):
        for cost in (src, src.dense()):
            sol = epslap.solve(cost, backend="gpu")
            assert sol.stats["method"] == "candidates" and sol.stats["backend"] == "gpu"
            assert sol.cost == pytest.approx(
                epslap.solve(cost, backend="gpu", candidates=False).cost, rel=1e-12)
    wide = costfns.Random(2000, seed=4, n2=2200)
    assert epslap.solve(wide, backend="gpu").stats.get("method") == "rectangular"
    assert epslap.solve(costfns.problem("geometric", 1999), backend="gpu").stats.get(
        "method") != "candidates"


@gpu
@pytest.mark.gpu
def test_gpu_auto_takes_candidates_where_they_spread(monkeypatch):
    monkeypatch.setattr(cand, "AUTO_MIN_SIDE", {"cpu": 100, "gpu": 100})
    monkeypatch.setattr(cand, "AUTO_MATRIX_MIN_SIDE", {"cpu": 100, "gpu": 100})
    geo = costfns.problem("geometric", 400, seed=1)
    sol = epslap.solve(geo, backend="gpu")
    assert sol.stats["method"] == "candidates" and sol.stats["backend"] == "gpu"
    assert_optimal(geo.dense(), sol)
    low = costfns.problem("rank1", 400, seed=1)
    sol = epslap.solve(low, backend="gpu")
    assert "share their columns" in sol.stats["candidates"]
    assert_optimal(low.dense(), sol)
    for src, taken in ((geo, True), (low, False)):  # the same choice for NumPy matrices
        sol = epslap.solve(src.dense(), backend="gpu")
        assert (sol.stats.get("method") == "candidates") == taken
        assert sol.stats["backend"] == "gpu"
        assert_optimal(src.dense(), sol)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("blocks", ["full", "one"])
def test_gpu_auction_phase_is_eps_complementary(blocks, monkeypatch):
    import scipy.sparse as sp

    import epslap.gpu.candidates as gc
    from epslap.sparse import canonical_sparse
    n = 3000
    m = sp.random(n, n, density=0.004, random_state=3, format="csr") + sp.identity(n) * 2.0
    prob = canonical_sparse(m.tocsr(), False)
    dev = gc.DevicePasses(np.zeros((2, 2)), False, 0)
    monkeypatch.setattr(gc, "AUCTION_HOST_BELOW", 1)  # every bid on the device
    if blocks == "one":  # each thread bids for several rows
        monkeypatch.setattr(gc, "AUCTION_BLOCKS_PER_SM", 1)
        dev.parts[0].sms = 1
    v = np.zeros(n)
    r2c, c2r = np.full(n, -1), np.full(n, -1)
    eps = 1e-3
    bids = dev.auction(prob.indptr, prob.indices, prob.data, v, r2c, c2r, eps, 1.0,
                       10**9, np.inf)
    assert bids >= n and (r2c >= 0).all() and (c2r[r2c] == np.arange(n)).all()
    assert dev.auction_log[-1][3] == 0  # no bid left to the host
    for i in range(0, n, 37):
        lo, hi = prob.indptr[i], prob.indptr[i + 1]
        red = prob.data[lo:hi] - v[prob.indices[lo:hi]]
        mine = prob.data[lo:hi][prob.indices[lo:hi] == r2c[i]][0] - v[r2c[i]]
        assert mine <= red.min() + eps * (1 + 1e-9)


@pytest.mark.parametrize("integral", [False, True])
def test_candidate_lists_to_csr_and_appended_pairs(integral):
    """The compiled CSR build of the candidate lists (the identity pair appended where a row
    lacks it and its cost is finite) and the appending of certificate pairs, row by row
    against a plain Python reading of the same lists."""
    rng = np.random.default_rng(3)
    n1, n2, k = 40, 55, 6
    work = np.int64 if integral else np.float64
    counts = rng.integers(0, k + 1, n1)
    cols = rng.integers(0, n2, (n1, k))
    cols[::5, 0] = np.arange(0, n1, 5)  # some rows hold their identity pair
    vals = (rng.integers(-50, 50, (n1, k)) if integral else rng.random((n1, k))).astype(work)
    diag = rng.random(n1) if not integral else rng.integers(0, 9, n1)
    if not integral:
        diag[3] = np.inf  # not finite: not appended
    prob = cand._candidate_csr(n1, n2, cols, vals, counts, diag, integral)
    rows_want = []
    for i in range(n1):
        pairs = list(zip(cols[i, :counts[i]], vals[i, :counts[i]]))
        if i not in cols[i, :counts[i]] and np.isfinite(diag[i]):
            pairs.append((i, work(diag[i])))
        rows_want.append(pairs)

    def rows_of(p):
        return [list(zip(p.indices[p.indptr[i]:p.indptr[i + 1]],
                         p.data[p.indptr[i]:p.indptr[i + 1]])) for i in range(n1)]
    assert rows_of(prob) == rows_want and prob.data.dtype == work
    add_rows = np.array([0, 7, 39])
    add_counts = np.array([2, 0, 3])
    add_cols = rng.integers(0, n2, (3, 3))
    add_vals = rng.integers(0, 9, (3, 3)).astype(work)
    merged = cand._merged(prob, add_rows, add_cols, add_vals, add_counts)
    for t, i in enumerate(add_rows):
        rows_want[i] = rows_want[i] + list(zip(add_cols[t, :add_counts[t]],
                                                add_vals[t, :add_counts[t]]))
    assert rows_of(merged) == rows_want


def test_auto_thresholds_differ_for_matrices_and_cost_sources(monkeypatch):
    """``"auto"`` looks at a matrix in memory from AUTO_MATRIX_MIN_SIDE rows and at a cost
    source streamed through row caches from AUTO_MIN_SIDE (a source's sample computes its
    rows); a source whose matrix fits the memory budget is computed once and takes the
    matrix's rule."""
    import scipy.optimize
    c = costfns.generate("random", 2000, seed=3)
    sol = epslap.solve(c)
    assert sol.stats["method"] == "candidates"
    r, col = scipy.optimize.linear_sum_assignment(c)
    assert sol.cost == pytest.approx(c[r, col].sum(), rel=1e-12)
    # a wide matrix (n1 / 8 spare columns or more) stays with the small path's rectangular solve
    wide = np.random.default_rng(4).random((2000, 2250))
    assert epslap.solve(wide).stats.get("method") != "candidates"
    assert epslap.solve(wide.T).stats.get("method") != "candidates"
    assert epslap.solve(wide[:, :2249]).stats["method"] == "candidates"
    import epslap.cpu.small as small
    monkeypatch.setattr(small, "QUICK_SIDE", 0)  # no shortcut for small matrices in the way
    monkeypatch.setattr(cand, "AUTO_MATRIX_MIN_SIDE", {"cpu": 300, "gpu": 300})
    monkeypatch.setattr(cand, "AUTO_MIN_SIDE", {"cpu": 500, "gpu": 500})
    src = costfns.problem("geometric", 400, seed=1)
    assert epslap.solve(src.dense()).stats["method"] == "candidates"
    assert epslap.solve(src, memory="64KiB").stats.get("method") != "candidates"
    tabled = epslap.solve(src)
    assert tabled.stats["method"] == "candidates" and tabled.stats["cache_policy"] == "table"
    assert tabled.cost == pytest.approx(epslap.solve(src.dense(), candidates=False).cost,
                                        rel=1e-12)
    assert epslap.solve(src.dense()[:299]).stats.get("method") != "candidates"


def test_auto_sample_is_judged_on_a_quarter_of_its_rows_where_that_decides():
    """The first look (every 4th sampled row) decides alone where its spread is clearly low
    (rows sharing their cheapest columns) or clearly high; a separated class reads the rest."""
    n = 1100
    sample = cand._sample_rows(n)
    first = sample[::cand.AUTO_FIRST_EVERY].size
    for name, rows in (("sanity", first), ("rank1", first), ("disjoint", sample.size)):
        c = costfns.generate(name, n, seed=1)
        sol = epslap.solve(c)
        assert f"the candidates of {rows} sampled rows share" in sol.stats["candidates"]
        assert_optimal(c, sol)
    c = costfns.generate("random", n, seed=1)
    sol = epslap.solve(c)
    assert sol.stats["method"] == "candidates"
    assert sol.stats["sample_spread"] >= cand.AUTO_SURE_ABOVE
    assert_optimal(c, sol)


def _least_k(row, v, k):
    """The reference of a candidate list: the k least finite ``c - v`` by value, then column."""
    finite = np.flatnonzero(np.isfinite(row))
    r = row[finite].astype(v.dtype) - v[finite]
    keep = finite[np.lexsort((finite, r))][:k]
    return keep


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int32])
@pytest.mark.parametrize("threads", [1, 2])
def test_candidate_pass_keeps_each_row_s_k_least_by_value_then_column(dtype, threads):
    """Rows of scales a thousand times apart in turn (each row's hint from the row before is
    then far too low or far too high), with ties, forbidden pairs and rows with fewer than k
    finite costs: every list is the reference's."""
    rng = np.random.default_rng(5)
    n1, n2, k = 60, 300, 12
    if np.dtype(dtype).kind == "f":
        c = rng.integers(0, 40, (n1, n2)).astype(dtype) * 0.5  # many ties
        c *= np.where(np.arange(n1) % 3 == 0, 1000.0, 1.0)[:, None].astype(dtype)
        c[rng.random((n1, n2)) < 0.1] = np.inf
        c[7, 5:] = np.inf  # five finite costs only
    else:
        c = rng.integers(0, 40, (n1, n2)).astype(dtype)
        c *= np.where(np.arange(n1) % 3 == 0, 1000, 1)[:, None].astype(dtype)
    passes = cand.HostPasses(c, False, threads)
    work = passes.work
    for v in (np.zeros(n2, work), (rng.integers(0, 5, n2) * (1 if work.kind == "i" else 0.25)
                                   ).astype(work)):
        rows = rng.permutation(n1).astype(np.int64)
        cols, vals, counts, _ = passes.candidates(v, k, rows, False)
        for t, i in enumerate(rows):
            want = _least_k(c[i], v, k)
            np.testing.assert_array_equal(cols[t, :counts[t]], want)
            np.testing.assert_array_equal(vals[t, :counts[t]], c[i, want])


@pytest.mark.parametrize("integral", [False, True])
def test_certificate_pass_against_numpy(integral):
    """Each row's least ``c - v`` beside its own pair and its violating pairs (its own pair too,
    where ``u`` is not the assignment's) as NumPy computes them, with the duals of the
    optimum a little disturbed."""
    rng = np.random.default_rng(6)
    n1, n2 = 80, 120
    c = rng.integers(0, 100, (n1, n2)) if integral else rng.random((n1, n2))
    sol = epslap.solve(c, candidates=False)
    work = np.int64 if integral else np.float64
    r2c = np.asarray(sol.col_ind, np.int64)[np.argsort(sol.row_ind)]
    u = np.asarray(sol.u, work)
    v = np.asarray(sol.v, work).copy()
    v[::9] += 3 if integral else 0.03  # those columns' pairs undercut some rows' duals
    passes = cand.HostPasses(c, False, 2)
    rows = np.arange(n1, dtype=np.int64)
    failing, cols, vals, counts, row_min = passes.certify(v, u, r2c, rows, 4, 0.0)
    red = c - v[None, :]
    beside = red.astype(np.float64)
    beside[rows, r2c] = np.inf
    np.testing.assert_array_equal(row_min, beside.min(axis=1))
    violating = red < u[:, None]
    assert violating[rows, r2c].any()  # some rows' own pairs violate too
    np.testing.assert_array_equal(failing, np.flatnonzero(violating.any(axis=1)))
    for t, i in enumerate(failing):
        assert counts[t] == min(4, violating[i].sum())
        assert set(cols[t, :counts[t]]) <= set(np.flatnonzero(violating[i]))


def test_auto_gives_local_matrices_more_candidates(monkeypatch):
    """A matrix whose sampled rows share their cheapest columns with the row nearest their
    cheapest column (a point set) gets at least K_LOCAL_SMALL / K_LOCAL candidates per row;
    a random matrix the default count."""
    import epslap.cpu.small as small
    monkeypatch.setattr(small, "QUICK_SIDE", 0)  # no shortcut for small matrices in the way
    monkeypatch.setattr(cand, "AUTO_MATRIX_MIN_SIDE", {"cpu": 100, "gpu": 100})
    for name in ("geometric", "random", "integer"):
        c = _matrix(name, 400, 400, seed=3)
        sol = epslap.solve(c)
        assert_optimal(c, sol)
        assert sol.stats["method"] == "candidates"
        local = sol.stats["sample_locality"]
        if name == "geometric":
            assert local > cand.LOCAL_ABOVE
            assert sol.stats["candidates_per_row"] == cand.K_LOCAL_SMALL
        else:
            assert local < 0.1
            assert sol.stats["candidates_per_row"] == cand.default_k(400)
    monkeypatch.setattr(cand, "K_LOCAL_FROM", 400)
    assert epslap.solve(_matrix("geometric", 400, 400, seed=3)).stats[
        "candidates_per_row"] == cand.K_LOCAL


def test_integer_costs_beyond_float_precision_are_certified_exactly():
    """Integer costs near 2**55 (within the range rule for small n): reduced costs that a float
    cannot tell apart still fail the certificate where they violate it (the certificate pass
    compares them as integers), so the candidates' answer is the optimum."""
    import scipy.optimize
    rng = np.random.default_rng(9)
    for trial in range(40):
        n = int(rng.integers(3, 12))
        off = rng.integers(0, 20, (n, n))
        c = off + 2**55
        r, k = scipy.optimize.linear_sum_assignment(off)
        for per_row in (1, 2):
            sol = epslap.solve(c, candidates=per_row)
            assert off[sol.row_ind, sol.col_ind].sum() == off[r, k].sum(), (trial, per_row)


def test_a_violation_at_rounding_level_on_a_held_pair_does_not_repeat_the_rounds():
    """Euclidean distances of random points: one row's violating pair, already held by the
    sparse problem, reads 8 ulps below its dual in the certificate pass (the sparse solve summed
    it along a path). It is judged at ``verify``'s tolerance instead of being added again for 64
    rounds: a certificate in three rounds, and ``verify`` agrees."""
    import scipy.optimize
    from scipy.spatial.distance import cdist
    rng = np.random.default_rng(1)
    c = cdist(rng.random((1150, 2)), rng.random((1200, 2)))
    sol = epslap.solve(c, candidates=32, threads=1)
    assert sol.stats["method"] == "candidates", sol.stats.get("candidates")
    assert sol.stats["rounds"] <= 4
    r, k = scipy.optimize.linear_sum_assignment(c)
    assert sol.cost == pytest.approx(c[r, k].sum(), rel=1e-12)
    assert epslap.verify(c, sol.row_ind, sol.col_ind, sol.u, sol.v)["optimal"]


def test_integer_costs_at_the_range_rules_limit_are_taken_by_the_candidates_method():
    """The candidate pass's largest |c| is a float: an int64 at the limit of the range rule read
    as one above it, and the method refused what the dense one solves (with a range the matrix
    does not hold). The matrix's own range decides now; one above the limit is still refused."""
    from epslap._validate import int_cost_limit
    m = np.zeros((6, 59), np.int64)
    m[0, 0] = int_cost_limit(m.shape)
    for k in (True, 8):
        assert epslap.solve(m, candidates=k).cost == 0
    m[0, 0] += 1
    with pytest.raises(ValueError, match="could overflow int64"):
        epslap.solve(m, candidates=True)


@pytest.mark.parametrize("n", [3, 40])
def test_an_integer_source_at_the_range_rule_s_limit_is_judged_exactly(n):
    """The candidate pass keeps an integer source's least and largest cost exactly (a float
    maximum rounded a cost one below the limit up to above it at n = 3, and one above it down
    at n = 40): the candidates method accepts and refuses what the dense method does, and its
    message gives the costs' own range."""
    from epslap._validate import int_cost_limit
    limit = int_cost_limit((n, n))
    for value, accepted in ((limit - 1, True), (limit, True), (limit + 1, False)):
        m = np.eye(n, dtype=np.int64)
        m[0, 0] = value
        for candidates in (False, True):
            src = costfns.Dense(m)
            if accepted:
                assert epslap.solve(src, candidates=candidates, memory=n * 16).cost == 0
            else:
                with pytest.raises(ValueError, match=rf"integer costs in \[0, {value}\]"):
                    epslap.solve(src, candidates=candidates, memory=n * 16)
