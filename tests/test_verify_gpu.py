"""``epslap.verify(..., backend="gpu")``: every cost scanned on the device gives the host's
report (float and integer sources, CuPy matrices, rectangular both ways, maximised, wrong
duals and a wrong assignment); costs the device does not judge go to the host's check."""
from __future__ import annotations

import numpy as np
import pytest

import costfns
import epslap
from conftest import GPU_REASON, gpu


def test_verify_names_a_backend_it_does_not_have():
    m = np.eye(3)
    with pytest.raises(ValueError, match="backend must be 'cpu' or 'gpu'"):
        epslap.verify(m, [0, 1, 2], [0, 1, 2], np.zeros(3), np.zeros(3), backend="tpu")


@pytest.mark.skipif(GPU_REASON is None, reason="a GPU is present: the error is for machines "
                                               "without one")
def test_verify_on_the_gpu_without_one_says_so():
    src = costfns.SqEuclidean(np.zeros((3, 2)), np.ones((3, 2)))
    with pytest.raises(epslap.GPUUnavailableError, match="CuPy"):
        epslap.verify(src, [0, 1, 2], [0, 1, 2], np.zeros(3), np.zeros(3), backend="gpu")


def _same_report(a, b):
    assert a["optimal"] == b["optimal"] and a["complete"] == b["complete"]
    assert a["exact"] == b["exact"] and bool(a["reason"]) == bool(b["reason"])
    for key in ("max_violation", "gap", "primal", "max_assigned_slack"):
        assert a[key] == pytest.approx(b[key], rel=1e-9, abs=1e-12), key


def _cases():
    rng = np.random.default_rng(5)
    x, y = rng.random((300, 2)), rng.random((250, 2))
    m = rng.random((200, 260))
    m[rng.random(m.shape) < 0.05] = np.inf
    return [(costfns.SqEuclidean(x, y), False), (costfns.SqEuclidean(y, x), False),
            (costfns.Euclidean(x, y), True), (costfns.Dense(m), False),
            (costfns.problem("rank8", 300, seed=3), False),
            (costfns.problem("integer", 300, seed=3), False),
            (costfns.problem("integer", 300, seed=4), True)]


@gpu
def test_gpu_verify_reports_what_the_host_reports():
    from epslap.gpu.verify import DeviceCosts
    scans = []
    real = DeviceCosts.pair_costs

    def spy(self, r, k):  # the device answered (no hand-over to the host's check)
        scans.append(1)
        return real(self, r, k)
    DeviceCosts.pair_costs = spy
    try:
        for src, maximize in _cases():
            sol = epslap.solve(src, maximize=maximize, candidates=False)
            bad = sol.u.copy()
            bad[4] += (-1 if maximize else 1) * (1 if src.dtype.kind == "i" else 1e-3)
            wrong = sol.col_ind.copy()
            wrong[[0, 1]] = wrong[[1, 0]]
            before = len(scans)
            for u, cols in ((sol.u, sol.col_ind), (bad, sol.col_ind), (sol.u, wrong)):
                host = epslap.verify(src.dense(), sol.row_ind, cols, u, sol.v,
                                     maximize=maximize)
                got = epslap.verify(src, sol.row_ind, cols, u, sol.v, maximize=maximize,
                                    backend="gpu")
                _same_report(got, host)
                assert got["optimal"] == (u is sol.u and cols is sol.col_ind)
            assert len(scans) == before + 3
    finally:
        DeviceCosts.pair_costs = real


@gpu
def test_gpu_verify_of_cupy_matrices():
    import cupy
    rng = np.random.default_rng(2)
    for m in (rng.random((120, 90)), rng.random((90, 120)).astype(np.float32),
              rng.integers(-50, 50, (100, 100)).astype(np.int32),
              rng.random((60, 60)) < 0.5, rng.integers(0, 9, (50, 50)).astype(np.uint64)):
        for maximize in (False, True):
            sol = epslap.solve(m, maximize=maximize)
            got = epslap.verify(cupy.asarray(m), sol.row_ind, sol.col_ind, sol.u, sol.v,
                                maximize=maximize, backend="gpu")
            _same_report(got, epslap.verify(m, sol.row_ind, sol.col_ind, sol.u, sol.v,
                                            maximize=maximize))
            assert got["optimal"]
    m = rng.random((40, 40))
    sol = epslap.solve(m)
    m[3, 5] = np.nan
    with pytest.raises(ValueError, match="NaN"):  # the host's check names it
        epslap.verify(cupy.asarray(m), sol.row_ind, sol.col_ind, sol.u, sol.v, backend="gpu")
    with pytest.raises(ValueError, match="CuPy matrix or a cost source"):
        epslap.verify(m, sol.row_ind, sol.col_ind, sol.u, sol.v, backend="gpu")


@gpu
def test_gpu_verify_of_a_large_point_set_answer():
    """An answer of 20,000 points solved by candidates: verified on the device (all 4·10^8
    pairs) and on the host (the pairs below each row's reach), both optimal; a dual raised fails on both."""
    src = costfns.problem("geometric", 20000, seed=4)
    sol = epslap.solve(src, candidates=True)
    u = sol.u.copy()
    for uu in (sol.u, u):
        a = epslap.verify(src, sol.row_ind, sol.col_ind, uu, sol.v, backend="gpu")
        b = epslap.verify(src, sol.row_ind, sol.col_ind, uu, sol.v)
        _same_report(a, b)
        u[17] += 1e-4
    assert a["optimal"] is False and b["optimal"] is False
