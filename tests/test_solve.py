"""The CPU solver against scipy (optimal value) and its own dual certificate."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.optimize import linear_sum_assignment as scipy_lsa

import costfns
import epslap
from conftest import PATHS, assert_optimal, cpu_path, scipy_optimum

DTYPES = [np.float64, np.float32, np.int64, np.int32, np.int16, np.uint8]


@st.composite
def cost_matrices(draw):
    """Small matrices of every kind: rectangular, integer/float32, heavy ties, +inf patterns."""
    n1 = draw(st.integers(1, 9))
    n2 = draw(st.integers(1, 9))
    dtype = draw(st.sampled_from(DTYPES))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    levels = draw(st.sampled_from([2, 5, 100, 0]))  # few distinct values = many ties; 0: continuous
    if levels:
        c = rng.integers(0, levels, size=(n1, n2)).astype(dtype)
    elif np.issubdtype(dtype, np.integer):
        c = rng.integers(0, min(np.iinfo(dtype).max, 2**40), size=(n1, n2)).astype(dtype)
    else:
        c = (rng.random((n1, n2)) * 100).astype(dtype)
    if np.issubdtype(dtype, np.floating) and draw(st.booleans()):
        c[rng.random((n1, n2)) < draw(st.sampled_from([0.2, 0.5, 0.8]))] = np.inf
    return c


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(c=cost_matrices(), maximize=st.booleans(), path=st.sampled_from(PATHS))
def test_matches_scipy(c, maximize, path):
    if maximize and np.issubdtype(c.dtype, np.floating):
        c = np.where(np.isinf(c), -np.inf, c)  # forbidden pairs are -inf when maximising
    ref = scipy_optimum(c, maximize)
    if ref is None:
        with pytest.raises(ValueError, match="cost matrix is infeasible"), cpu_path(path):
            epslap.solve(c, maximize=maximize)
        return
    with cpu_path(path):
        sol = epslap.solve(c, maximize=maximize)
    assert_optimal(c, sol, maximize)
    if np.issubdtype(c.dtype, np.integer):
        assert isinstance(sol.cost, int) and sol.cost == int(round(ref))


@pytest.mark.parametrize("epsilon", [True, False])
@pytest.mark.parametrize("name", ["random", "geometric", "disjoint", "sanity", "rank1", "rank2",
                                  "rank4", "rank8", "integer", "integer0.1n", "integer1n"])
@pytest.mark.parametrize("path", PATHS)
def test_paper_classes_against_scipy(name, epsilon, path):
    c = costfns.generate(name, 300, seed=7)
    with cpu_path(path):
        sol = epslap.solve(c, epsilon=epsilon)
    assert_optimal(c, sol)
    assert sol.stats["passes"] >= 1 and sol.stats["rows_evaluated"] >= 300


@pytest.mark.parametrize("name", ["random", "geometric", "rank8"])
def test_paper_classes_n1000(name):
    c = costfns.generate(name, 1000, seed=1)
    with cpu_path("eps"):  # the ε-passes (n = 1000 may take the small path)
        sol = epslap.solve(c)
    assert_optimal(c, sol)
    assert sol.stats["passes"] >= 2, "ε-pricing should run at least one ε-pass here"


def test_sanity_class_returns_identity_in_n_rows():
    c = costfns.generate("sanity", 500, seed=3)
    with cpu_path("eps"):
        sol = epslap.solve(c)
    np.testing.assert_array_equal(sol.col_ind, np.arange(500))
    assert sol.stats["rows_evaluated"] == 500  # docs/algorithm.md §2: one exact pass, n rows


@pytest.mark.parametrize("shape", [(40, 90), (90, 40), (1, 50), (50, 1), (1, 1)])
@pytest.mark.parametrize("dtype", [np.float64, np.int64])
@pytest.mark.parametrize("path", PATHS)
def test_rectangular_both_ways(shape, dtype, path, rng):
    c = (rng.random(shape) * 1000).astype(dtype)
    with cpu_path(path):
        sol = epslap.solve(c)
    assert_optimal(c, sol)
    r, k = scipy_lsa(c)
    np.testing.assert_array_equal(sol.row_ind, r)  # same rows (scipy's convention) ...
    assert c[sol.row_ind, sol.col_ind].sum() == pytest.approx(c[r, k].sum())  # ... same optimum


def test_float32_is_solved_as_given(rng):
    # values that collide in float32 but not in float64: the answer is optimal for the float32 data
    c = (rng.random((60, 60)) * 1e4).astype(np.float32)
    sol = epslap.solve(c)
    assert_optimal(c, sol)
    assert isinstance(sol.cost, float)


@pytest.mark.parametrize("shape", [(0, 0), (0, 5), (5, 0)])
def test_empty(shape):
    sol = epslap.solve(np.zeros(shape))
    assert sol.row_ind.shape == (0,) and sol.col_ind.shape == (0,) and sol.cost == 0
    r, k = epslap.linear_sum_assignment(np.zeros(shape))
    assert r.dtype == np.int64 and k.dtype == np.int64


def test_scipy_drop_in_examples():
    # the examples of scipy's documentation and test suite
    cost = np.array([[4, 1, 3], [2, 0, 5], [3, 2, 2]])
    r, k = epslap.linear_sum_assignment(cost)
    np.testing.assert_array_equal(r, [0, 1, 2])
    np.testing.assert_array_equal(k, [1, 0, 2])
    assert cost[r, k].sum() == 5
    c2 = np.array([[400, 150, 400], [400, 450, 600], [300, 225, 300]])
    r, k = epslap.linear_sum_assignment(c2)
    assert c2[r, k].sum() == 850
    r, k = epslap.linear_sum_assignment(c2, maximize=True)
    assert c2[r, k].sum() == scipy_optimum(c2, maximize=True)
    c3 = np.array([[10, 10, 8], [9, 8, 1], [9, 7, 4]], dtype=float)
    r, k = epslap.linear_sum_assignment(c3.T)
    rs, ks = scipy_lsa(c3.T)
    assert c3.T[r, k].sum() == c3.T[rs, ks].sum()
    b = np.array([[True, False], [False, True]])
    np.testing.assert_array_equal(epslap.linear_sum_assignment(b)[1], scipy_lsa(b)[1])


def test_inf_forbidden_pairs_and_infeasible():
    c = np.array([[np.inf, 1.0], [2.0, np.inf]])
    sol = epslap.solve(c)
    np.testing.assert_array_equal(sol.col_ind, [1, 0])
    bad = np.array([[np.inf, np.inf], [1.0, 2.0]])
    with pytest.raises(ValueError, match="cost matrix is infeasible"):
        epslap.solve(bad)
    with pytest.raises(epslap.InfeasibleError):
        epslap.linear_sum_assignment(bad)
    # infeasible only through the matching structure (Hall's condition), not a whole row
    hall = np.array([[1.0, np.inf, np.inf], [2.0, np.inf, np.inf], [1.0, 1.0, 1.0]])
    with pytest.raises(ValueError, match="cost matrix is infeasible"):
        epslap.solve(hall)


@pytest.mark.parametrize("bad, exc, match", [
    (np.array([[np.nan, 1.0], [1.0, 2.0]]), ValueError, "matrix contains invalid numeric entries"),
    (np.array([[-np.inf, 1.0], [1.0, 2.0]]), ValueError, "matrix contains invalid numeric entries"),
    (np.zeros(3), ValueError, r"expected a matrix \(2-D array\), got a 1-D array"),
    (np.zeros((2, 2, 2)), ValueError, r"expected a matrix \(2-D array\), got a 3-D array"),
    (np.array([["a", "b"]]), TypeError, "Cannot cast array data from dtype"),
    (np.array([[1 + 1j]]), TypeError, "Cannot cast array data from dtype"),
    (np.array([[object()]]), TypeError, "Cannot cast array data from dtype"),
    (np.array([[2**62, 0], [0, 1]], dtype=np.int64), ValueError, "could overflow int64"),
])
def test_bad_input_errors(bad, exc, match):
    with pytest.raises(exc, match=match):
        epslap.solve(bad)
    with pytest.raises(exc, match=match):
        epslap.linear_sum_assignment(bad)
    try:  # the same exception type as scipy, where scipy raises at all
        scipy_lsa(bad)
    except (ValueError, TypeError) as ref:
        assert isinstance(ref, exc)


@pytest.mark.parametrize("options, exc, match", [
    (dict(cost_limit="x"), TypeError, "cost_limit must be a real number"),
    (dict(candidates=0), ValueError, "candidates must be"),
    (dict(launch=1), ValueError, "launch applies to backend='gpu'"),
    (dict(init=np.zeros(2), resume="r.ckpt"), ValueError, "init and resume exclude each other"),
])
def test_an_option_error_comes_before_the_matrix_error(options, exc, match):
    """The entry checks the options before the matrix (a 3-D array here)."""
    with pytest.raises(exc, match=match):
        epslap.solve(np.zeros((2, 2, 2)), **options)


class _OtherGpuArray:
    """A GPU array that is not CuPy's (the CUDA array interface, another library's dtype)."""
    __cuda_array_interface__ = {"shape": (2, 2), "typestr": "<f8", "data": (0, False),
                                "version": 3}
    ndim, shape, dtype = 2, (2, 2), object()


@pytest.mark.parametrize("backend", ["cpu", "gpu", "hungarian-gpu"])
def test_a_gpu_array_that_is_not_cupys_gets_a_clear_error(backend):
    match = "given to the CPU backend" if backend == "cpu" else "is not a CuPy array"
    with pytest.raises(TypeError, match=match):
        epslap.solve(_OtherGpuArray(), backend=backend)


def test_a_warm_start_is_checked_before_any_cost_is_computed():
    calls = []

    def cost(i, j):
        calls.append((i, j))
        return float(i + j)
    src = costfns.from_function(cost, (50, 50))
    with pytest.raises(ValueError, match="expected 50 column duals"):
        epslap.solve(src, init=np.zeros(3))
    assert not calls
    for empty in (costfns.Dense(np.zeros((0, 5))), np.zeros((0, 5))):
        with pytest.raises(ValueError, match="expected 5 column duals"):
            epslap.solve(empty, init=np.zeros(3))


def test_launch_is_refused_on_the_cpu_for_every_cost_form():
    import scipy.sparse as sp
    for cost in (np.eye(3), sp.csr_matrix(np.eye(3)), costfns.Dense(np.eye(3))):
        with pytest.raises(ValueError, match="launch applies to backend='gpu'"):
            epslap.solve(cost, launch=1)


def test_maximize_with_inf_is_invalid_like_scipy():
    c = np.array([[np.inf, 1.0], [1.0, 2.0]])
    with pytest.raises(ValueError, match="matrix contains invalid numeric entries"):
        epslap.solve(c, maximize=True)


def test_unknown_backend():
    with pytest.raises(ValueError, match="backend must be one of"):
        epslap.solve(np.eye(2), backend="tpu")


def test_plain_ssp_evaluates_more_rows_than_epsilon_on_rank1():
    c = costfns.generate("rank1", 400, seed=0)
    with cpu_path("eps"):
        with_eps = epslap.solve(c).stats["rows_evaluated"]
    without = epslap.solve(c, epsilon=False).stats["rows_evaluated"]
    assert with_eps * 10 < without  # docs/algorithm.md §5: 3,503 vs 500,500 at n = 1000


@pytest.mark.parametrize("path", PATHS)
def test_stats_fields(path):
    with cpu_path(path):
        sol = epslap.solve(costfns.generate("geometric", 200, 0))
    for key in ("rows_evaluated", "passes", "epsilons", "time_estimate_s", "time_solve_s",
                "compile_s"):
        assert key in sol.stats
    assert len(sol.stats["epsilons"]) == sol.stats["passes"]
    assert sol.stats["epsilons"][-1] == 0.0
    r, k = sol  # unpacks like scipy's tuple
    assert r is sol.row_ind and k is sol.col_ind


def test_verify_detects_a_wrong_answer():
    c = costfns.generate("random", 50, 1)
    sol = epslap.solve(c)
    cert = epslap.verify(c, sol.row_ind, sol.col_ind, sol.u, sol.v)
    assert cert["optimal"] and abs(cert["gap"]) < 1e-9
    worse = np.roll(sol.col_ind, 1)
    cert = epslap.verify(c, sol.row_ind, worse, sol.u, sol.v)
    assert not cert["optimal"] and cert["gap"] > 1e-6
    cert = epslap.verify(c, sol.row_ind, sol.col_ind, sol.u + 1.0, sol.v)
    assert not cert["optimal"] and cert["max_violation"] > 0.5


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("dtype", [np.int64, np.int32])
@pytest.mark.parametrize("maximize", [False, True])
def test_integer_matrix_checked_and_narrowed_in_one_sweep(threads, dtype, maximize):
    """The compiled sweep (int64/int32 input, rows split over threads) gives NumPy's answer:
    int32 where every (negated, if maximising) value fits, else int64, the same values."""
    from epslap._validate import canonical_dense
    rng = np.random.default_rng(4)
    for lo, hi in [(0, 1000), (-2**31, 2**31 - 1), (-2**31 + 1, 2**31 - 1), (-2**40, 2**40)]:
        if dtype == np.int32 and hi >= 2**31:
            continue
        c = rng.integers(lo, hi, (7, 11), dtype=np.int64, endpoint=True)
        c[0, 0], c[-1, -1] = lo, hi
        c = c.astype(dtype)
        ref = -c.astype(np.int64) if maximize else c.astype(np.int64)
        fits = ref.min() >= -2**31 and ref.max() < 2**31
        got = canonical_dense(c, maximize, threads=threads)
        assert got.transposed is False and got.integral
        assert got.matrix.dtype == (np.int32 if fits else np.int64)
        np.testing.assert_array_equal(got.matrix.astype(np.int64), ref)
    with pytest.raises(ValueError, match="could overflow int64"):
        canonical_dense(np.array([[2**61, 0], [0, 1]], dtype=np.int64), maximize, threads=threads)


_NO_COMPILE_PROBE = r"""
import sys
import numpy as np
import numba.core.registry as reg
import epslap
from epslap.errors import InfeasibleError

def compiled():
    return {(m, n) for m, mod in list(sys.modules.items()) if m.startswith(("epslap", "costfns"))
            for n, f in vars(mod).items()
            if isinstance(f, reg.CPUDispatcher) and f.overloads}

before = compiled()
small_nan = np.array([[np.nan, 1.0], [1.0, 1.0]])
small_inf_row = np.array([[np.inf, np.inf], [1.0, 2.0]])
big = np.random.default_rng(0).random((1100, 1100))
big_nan, big_neg_inf = big.copy(), big.copy()
big_nan[5, 7] = np.nan
big_neg_inf[3, 3] = -np.inf
big_pos_inf_max = big.copy()
big_pos_inf_max[4, 4] = np.inf
for m, kw, exc, text in [(small_nan, {}, ValueError, "invalid numeric entries"),
                         (small_inf_row, {}, InfeasibleError, "infeasible"),
                         (big_nan, {}, ValueError, "invalid numeric entries"),
                         (big_neg_inf, {}, ValueError, "invalid numeric entries"),
                         (big_pos_inf_max, {"maximize": True}, ValueError, "invalid numeric"),
                         (np.full((1100, 1100), 1e306), {}, ValueError, "overflow")]:
    for call in (epslap.linear_sum_assignment, epslap.solve):
        try:
            call(m, **kw)
        except exc as e:
            assert text in str(e), (text, str(e))
        else:
            raise AssertionError(f"no {exc.__name__} for {text}")
print(sorted(compiled() - before))
"""


def test_input_errors_come_before_any_compile(tmp_path):
    """A fresh process with an empty Numba cache reports NaN, -inf, +inf when maximising, costs
    beyond the range rule and a line without a finite cost, on the small path and on the
    ε-passes, without compiling a kernel of epslap or costfns first."""
    import os
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    out = subprocess.run([sys.executable, "-c", _NO_COMPILE_PROBE], env=env, text=True,
                         capture_output=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]", out.stdout


@pytest.mark.parametrize("dtype", [">f8", ">f4", ">f2"])
def test_big_endian_float_matrices_are_read_as_scipy_reads_them(dtype):
    """A float matrix in the other byte order (a file written elsewhere) is solved, as scipy
    solves it; it was refused as "not numeric"."""
    c = np.random.default_rng(6).random((7, 11)).astype(dtype)
    native = c.astype(c.dtype.newbyteorder("="))
    for m in (c, c.T):
        assert np.array_equal(epslap.linear_sum_assignment(m)[1], scipy_lsa(m)[1])
        assert_optimal(np.asarray(m, native.dtype), epslap.solve(m))
    assert epslap.solve(c, cost_limit=0.3).cost == epslap.solve(native, cost_limit=0.3).cost
    assert epslap.solve_batch([c, c.T]).cost.tolist() == \
        epslap.solve_batch([native, native.T]).cost.tolist()


def test_none_is_refused_with_scipys_error_type():
    with pytest.raises(ValueError, match="expected a matrix"):
        scipy_lsa(None)
    with pytest.raises(ValueError, match="expected a matrix"):
        epslap.linear_sum_assignment(None)


def test_read_only_and_writeable_matrices_share_the_kernels(tmp_path):
    """The kernels get every matrix read-only (Numba compiles a kernel once per writeability):
    a matrix loaded read-only (``np.load(mmap_mode="r")``, the CLI's) reuses the set a matrix
    in memory compiled, and the answers agree with scipy's."""
    from epslap._validate import canonical_dense
    from epslap.cpu import candidates, passes
    from epslap.cpu.estimate import stage_ab
    rng = np.random.default_rng(5)
    c = rng.random((60, 70))
    assert not canonical_dense(c, False).matrix.flags.writeable
    assert c.flags.writeable  # the caller's array is left as it was
    np.save(tmp_path / "c.npy", c)
    loaded = np.load(tmp_path / "c.npy", mmap_mode="r")
    with cpu_path("eps"):
        for m in (c, loaded, np.ascontiguousarray(c.T)):
            for maximize in (False, True):
                sol = epslap.solve(m, maximize=maximize, threads=1)
                assert sol.cost == pytest.approx(scipy_optimum(np.asarray(m), maximize),
                                                 rel=1e-12)
    big = rng.random((1100, 1100))  # "auto"'s sample and the candidates method
    sol = epslap.solve(big, threads=1)
    assert sol.stats["method"] == "candidates"
    assert sol.cost == pytest.approx(scipy_optimum(big), rel=1e-12)
    # (the argument that holds the matrix, where the source is one)
    for kernel, at in ((stage_ab.ab_worker, 2), (passes.pass_worker, 2),
                       (candidates.candidate_rows, 0)):
        writeable = [sig[at] for sig in kernel.signatures
                     if getattr(sig[at], "ndim", 0) == 2 and sig[at].mutable]
        assert not writeable, (kernel, writeable)
