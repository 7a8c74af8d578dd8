"""Shared helpers: the independent references every test compares against."""
from __future__ import annotations

import os

# explicit thread counts are capped at the threads Numba may use; the parallel tests run 3 and 4
# threads (uneven column slices) also on a 2-core machine, so let Numba have 4 (an explicit
# NUMBA_NUM_THREADS in the environment wins). Must precede the first import of numba.
os.environ.setdefault("NUMBA_NUM_THREADS", "4")
# no child processes compiling ahead (epslap/cpu/compile_ahead.py) beside the test workers, which
# hold the cores already; tests/test_compile_ahead.py turns it on where it tests it
os.environ.setdefault("EPSLAP_COMPILE_AHEAD", "0")

from contextlib import contextmanager  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from scipy.optimize import linear_sum_assignment as scipy_lsa  # noqa: E402

import epslap  # noqa: E402
import epslap.cpu.cores as _cpu_cores  # noqa: E402

# tests pin thread counts (3 and 4 threads on 2 cores, compared row for row with 1 thread): no
# hand-over to one thread when the machine is busy (tests/test_parallel.py turns it on where it
# tests it)
_cpu_cores.LOAD_WATCH = False
# explicit thread counts are capped at the cores that exist; the tests' 3 and 4 threads are
# about uneven column slices, not speed: let them run on a 2-core machine
_real_cores = _cpu_cores.available_cores()
_cpu_cores.available_cores = lambda: max(4, _real_cores)
# the small path's kernel from the first call, whatever Numba's disk cache holds (a clean
# checkout holds nothing: its first calls would take the vector form, which
# tests/test_first_call.py tests on its own)
import epslap.cpu.jv_numpy as _jv_numpy  # noqa: E402

_jv_numpy.compile_from_now()
# the GPU tests of the single-problem ε solver use small matrices, which backend="gpu" solves as
# a batch of one otherwise: keep them on that solver (tests/test_gpu_batch.py tests the route)
import epslap.gpu.batch as _gpu_batch  # noqa: E402

_gpu_batch.SINGLE_MAX_SIDE = 0
# and their problems of 2000-8000 rows, which "auto" solves by candidates on the GPU: keep them
# on the dense solver, as below the former threshold (tests/test_candidates.py tests the
# candidates on the GPU, and the default threshold itself, GPU_AUTO_MIN_SIDE)
import epslap.candidates as _candidates  # noqa: E402

# (the package's values, kept where a second import of this file, as ``tests.conftest``, finds
# them after the first changed them)
GPU_AUTO_MIN_SIDE = getattr(_candidates, "_package_gpu_min_side", None) or (
    _candidates.AUTO_MIN_SIDE["gpu"], _candidates.AUTO_MATRIX_MIN_SIDE["gpu"])
_candidates._package_gpu_min_side = GPU_AUTO_MIN_SIDE
_candidates.AUTO_MIN_SIDE["gpu"] = _candidates.AUTO_GPU_SQUARE_BELOW
_candidates.AUTO_MATRIX_MIN_SIDE["gpu"] = _candidates.AUTO_GPU_SQUARE_BELOW


_OPTIMA: dict = {}  # scipy's optima by the matrix's bytes (tests check one matrix many times)


def scipy_optimum(cost, maximize=False):
    """scipy's optimal value, or None where scipy finds the matrix infeasible (computed once per
    distinct matrix: its shape, dtype and a digest of its entries)."""
    import hashlib
    c = np.asarray(cost)
    key = (c.shape, c.dtype.str, bool(maximize),
           hashlib.blake2b(np.ascontiguousarray(c).data, digest_size=16).digest())
    if key not in _OPTIMA:
        if len(_OPTIMA) > 256:
            _OPTIMA.clear()
        try:
            r, k = scipy_lsa(c.astype(np.float64), maximize=maximize)
            _OPTIMA[key] = c[r, k].astype(np.float64).sum()
        except ValueError:
            _OPTIMA[key] = None
    return _OPTIMA[key]


def assert_optimal(cost, sol, maximize=False, rel=1e-9):
    """The solution's cost equals scipy's, the assignment is complete and the duals certify it."""
    c = np.asarray(cost)
    ref = scipy_optimum(c, maximize)
    assert ref is not None, "scipy found this matrix infeasible but epslap solved it"
    scale = max(1.0, float(np.abs(c[np.isfinite(c)]).max()) if c.size else 1.0)
    tol = rel * scale * max(c.shape)
    got = c[sol.row_ind, sol.col_ind].astype(np.float64).sum()
    assert abs(got - ref) <= tol, (got, ref)
    assert abs(float(sol.cost) - ref) <= tol
    assert len(sol.row_ind) == min(c.shape)
    assert np.all(np.diff(sol.row_ind) > 0)
    assert len(np.unique(sol.col_ind)) == len(sol.col_ind)
    cert = epslap.verify(c, sol.row_ind, sol.col_ind, sol.u, sol.v, maximize=maximize)
    assert cert["optimal"], cert
    assert cert["max_violation"] <= tol and abs(cert["gap"]) <= tol, cert


def assert_certified(cost, sol, maximize=False, rel=1e-9):
    """For large matrices, where scipy takes seconds: the assignment is complete, its cost is
    the solution's, and the duals are a certificate of optimality (``epslap.verify``, itself
    checked against scipy and brute force in tests/test_verify_rules.py)."""
    c = np.asarray(cost)
    assert len(sol.row_ind) == min(c.shape) and len(np.unique(sol.col_ind)) == len(sol.col_ind)
    scale = max(1.0, float(np.abs(c[np.isfinite(c)]).max(initial=0.0)))
    tol = rel * scale * max(c.shape)
    assert abs(c[sol.row_ind, sol.col_ind].astype(np.float64).sum() - float(sol.cost)) <= tol
    cert = epslap.verify(c, sol.row_ind, sol.col_ind, sol.u, sol.v, maximize=maximize)
    assert cert["optimal"] and cert["max_violation"] <= tol and abs(cert["gap"]) <= tol, cert


#: the CPU backend's two paths for a matrix in memory (docs/algorithm.md §9)
PATHS = ["small", "eps"]


def assert_certificate_catches_planted_violations(passes, src, sol, trials=5):
    """``passes.certify`` (``epslap.candidates``) finds the solve's own duals clean, and for
    prices where one random pair (i, j) is made to violate by 1e-3, names row i failing with
    column j among its pairs, as ``epslap.verify`` says the duals fail."""
    from epslap.candidates import CAP, CERTIFY_REL
    n = src.shape[0]
    rows = np.arange(n, dtype=np.int64)
    u, v = np.asarray(sol.u, np.float64), np.asarray(sol.v, np.float64)
    r2c = np.asarray(sol.col_ind, np.int64)
    failing, _, _, _, row_min = passes.certify(v, u, r2c, rows, CAP, CERTIFY_REL)
    assert failing.size == 0 and (row_min - u >= -1e-12).all()
    dense = src.dense()
    rng = np.random.default_rng(0)
    for _ in range(trials):
        i = int(rng.integers(n))
        j = int((sol.col_ind[i] + 1 + rng.integers(n - 1)) % n)  # any other column
        bad = v.copy()
        bad[j] += (dense[i, j] - v[j] - u[i]) + 1e-3  # c_ij - v_j now below u_i by 1e-3
        failing, cols, _, counts, _ = passes.certify(bad, u, r2c, rows, CAP, CERTIFY_REL)
        assert i in failing
        at = int(np.flatnonzero(failing == i)[0])
        assert j in cols[at, :counts[at]]
        assert not epslap.verify(src, sol.row_ind, sol.col_ind, u, bad)["optimal"]


@contextmanager
def cpu_path(name: str):
    """Solve dense matrices through one path: "small" leaves the automatic choice (the
    Jonker–Volgenant path for small and rectangular problems), "eps" forces the ε-passes
    (neither the small path nor ``"auto"``'s candidates method)."""
    from epslap import candidates
    from epslap.cpu import small
    if name == "small":
        yield
        return
    saved = (small.applies, small.QUICK_SIDE, candidates.AUTO_MATRIX_MIN_SIDE,
             small.AUTO_FLOAT_FROM)
    small.applies, small.QUICK_SIDE = (lambda n1, n2: False), 0
    candidates.AUTO_MATRIX_MIN_SIDE = dict.fromkeys(saved[2], 2**62)
    small.AUTO_FLOAT_FROM = 2**62
    try:
        yield
    finally:
        (small.applies, small.QUICK_SIDE, candidates.AUTO_MATRIX_MIN_SIDE,
         small.AUTO_FLOAT_FROM) = saved


def _gpu_reason():
    """Why GPU tests cannot run here (None where CuPy sees a CUDA device)."""
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return "no CUDA device"
    except Exception as exc:  # ImportError, or a CUDA runtime error without a driver
        return f"CuPy or a CUDA device is not available ({type(exc).__name__})"
    return None


GPU_REASON = _gpu_reason()
gpu = pytest.mark.skipif(GPU_REASON is not None, reason=f"GPU test: {GPU_REASON}")


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


def batch_scipy_costs(mats, maximize=False):
    """scipy's optimal cost of every problem of a batch (float64)."""
    out = []
    for m in mats:
        r, k = scipy_lsa(m, maximize=maximize)
        out.append(m[r, k].astype(np.float64).sum())
    return np.array(out)


def batch_certified(mats, sol, maximize=False):
    """Every member's duals certify it (``verify``) and its rows come sorted."""
    for k, m in enumerate(mats):
        s = sol.solution(k)
        rep = epslap.verify(m, s.row_ind, s.col_ind, s.u, s.v, maximize=maximize)
        assert rep["optimal"], (k, rep)
        assert np.all(np.diff(s.row_ind) > 0)
        assert len(s.row_ind) == min(m.shape)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """Skipped tests in one line per reason, with their count (``-ra`` would list every one)."""
    skipped = terminalreporter.stats.get("skipped", [])
    if not skipped:
        return
    reasons: dict[str, int] = {}
    for report in skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reason = reason.removeprefix("Skipped: ")
        reasons[reason] = reasons.get(reason, 0) + 1
    parts = [f"{count} × {reason}" for reason, count in sorted(reasons.items(),
                                                               key=lambda kv: -kv[1])]
    terminalreporter.write_line(f"skipped {len(skipped)}: " + "; ".join(parts))


def blocks_far_apart(rng, trials: int, sizes: tuple):
    """``(matrix, scipy's optimum, hint)`` of small integer-valued float matrices with 30 % of
    their entries forbidden (+inf, or a 1e300 big-M in every other one), whose optimum holds no
    big-M, each with a warm-start hint of the same problem 10**15 … 10**21 times larger: the
    blocks' prices far apart (tests of ``checkpoint.canonical_hint``, CPU and GPU)."""
    for trial in range(trials):
        n = int(rng.integers(*sizes))
        m = rng.integers(0, 10, (n, n)).astype(float)
        m[rng.random((n, n)) < 0.3] = np.inf if trial % 2 else 1e300
        try:
            r, k = scipy_lsa(m)
        except ValueError:
            continue
        want = m[r, k].sum()
        if want >= 1e300:
            continue  # a big-M pair in the optimum: its total is rounded at 1e300 anyway
        with np.errstate(over="ignore"):  # (a big-M times 1e21: +inf, forbidden)
            hint = epslap.solve(m * 10.0 ** rng.integers(15, 22))
        yield m, want, hint
