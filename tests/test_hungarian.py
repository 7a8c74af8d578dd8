"""The GPU Hungarian backend (``backend="hungarian-gpu"``).

Two layers:

* CPU (always run): ``epslap.gpu.hungarian.reference`` executes exactly the kernel's steps with the
  kernel's concurrency emulated adversarially (random list orders, stale cover reads, interleaved
  path walks); it is checked against scipy on many random problems of every kind, with the same
  numeric plan (exact / tolerance mode, storage dtype) and the same certificate as the driver.
* GPU (skipped, with the reason shown, where CuPy or a CUDA device is missing): the kernel itself
  against scipy, the CPU backend and the reference's invariants.
"""
from __future__ import annotations

import numpy as np
import pytest

import epslap
from conftest import GPU_REASON as _REASON, assert_optimal, gpu, scipy_optimum
from epslap._validate import canonical_dense
from epslap._status import (STATUS_BROKEN_PATH, STATUS_INFEASIBLE, STATUS_ITERATION_LIMIT,
                            STATUS_OK)
from epslap.gpu import LaunchConfig
from epslap.gpu.hungarian.plan import certificate_violation, numeric_plan, raise_for_status
from epslap.gpu.hungarian.reference import solve_reference




# ---------------------------------------------------------------------------------------------
# the problems (shared by the CPU-reference and the GPU tests)
# ---------------------------------------------------------------------------------------------

def _integer(rng, n1, n2, factor):
    hi = max(1, int(factor * max(n1, n2)))
    return rng.integers(0, hi + 1, size=(n1, n2))


def make_problem(kind, n1, n2, seed):
    """A problem of the kind the Hungarian papers test, as a NumPy matrix."""
    rng = np.random.default_rng(seed)
    if kind.startswith("int"):          # int0.1, int1, int10, int1000: range [0, factor * n]
        return _integer(rng, n1, n2, float(kind[3:]))
    if kind == "float64":
        return rng.random((n1, n2))
    if kind == "float32":
        return rng.random((n1, n2)).astype(np.float32)
    if kind == "wide_float":            # high range, awkward magnitudes
        return rng.random((n1, n2)) * 10.0 ** rng.integers(-3, 6, size=(n1, n2))
    if kind == "offset_float":          # large offset: the tolerance must scale with it
        return 1e6 + rng.random((n1, n2))
    if kind == "ties":                  # few distinct values: many optima
        return rng.integers(0, 2, size=(n1, n2)).astype(np.float64)
    if kind == "constant":
        return np.full((n1, n2), 7, dtype=np.int64)
    if kind == "inf":                   # forbidden pairs, still feasible (a diagonal stays finite)
        c = rng.random((n1, n2))
        c[rng.random((n1, n2)) < 0.5] = np.inf
        k = min(n1, n2)
        c[np.arange(k), rng.permutation(max(n1, n2))[:k] if n1 <= n2 else np.arange(k)] = 1.0
        return c
    if kind == "infeasible":            # two lines of the shorter side share their only pair
        c = rng.random((n1, n2)) if n1 <= n2 else rng.random((n2, n1))
        c[:2, :] = np.inf
        c[:2, 0] = 1.0
        return c if n1 <= n2 else c.T.copy()
    raise ValueError(kind)


KINDS = ["int0.1", "int1", "int10", "int1000", "float64", "float32", "wide_float",
         "offset_float", "ties", "constant", "inf"]


def _reference_solution(cost, maximize=False, **kw):
    """Run the reference through the public edge (canonical_dense) and map back like finish()."""
    from epslap.solution import finish
    canon = canonical_dense(cost, maximize)
    m = canon.matrix
    status, row_to_col, v, stats, plan = solve_reference(m, integral=canon.integral, **kw)
    raise_for_status(status)
    viol = certificate_violation(np, m, row_to_col, v, m.shape[0], m.shape[1])
    assert viol <= plan["cert_tol"], (viol, plan)
    work = np.int64 if canon.integral else np.float64
    assigned = m[np.arange(m.shape[0]), row_to_col].astype(work)
    if canon.integral:
        assert np.all(v == np.rint(v))
        v = np.rint(v).astype(np.int64)
    sol = finish(m.shape, canon.transposed, canon.integral, row_to_col, v, assigned,
                 {"backend": "reference", **stats}, maximize, 0.0)
    return sol, plan


# ---------------------------------------------------------------------------------------------
# CPU: the reference of the kernel's algorithm
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", [(1, 1), (5, 5), (17, 17), (30, 30), (12, 31), (31, 12)])
def test_reference_matches_scipy(kind, shape):
    for seed in range(3):
        cost = make_problem(kind, *shape, seed)
        sol, plan = _reference_solution(cost, n_blocks=1 + seed % 4, seed=seed, stale=0.5)
        assert_optimal(cost, sol)
        if kind.startswith("int") or kind in ("ties", "constant"):
            assert plan["exact"] and plan["tol"] == 0.0


@pytest.mark.parametrize("kind", ["int1", "float64", "ties", "inf"])
def test_reference_maximize(kind):
    cost = make_problem(kind if kind != "inf" else "float64", 14, 19, 4)
    if kind == "inf":
        cost = np.where(np.random.default_rng(0).random(cost.shape) < 0.3, -np.inf, cost)
        cost[np.arange(14), np.arange(14)] = 0.5
    sol, _ = _reference_solution(cost, maximize=True, n_blocks=3, seed=1)
    assert_optimal(cost, sol, maximize=True)


@pytest.mark.parametrize("seed", range(40))
def test_reference_adversarial_schedules(seed):
    """Many blocks (more than rows), heavy stale reads, all kinds: the logic must not depend on
    the schedule (only the optimum is unique; the assignment may differ)."""
    rng = np.random.default_rng(1000 + seed)
    kind = KINDS[seed % len(KINDS)]
    n1 = int(rng.integers(1, 25))
    n2 = int(rng.integers(n1, 30))
    cost = make_problem(kind, n1, n2, seed)
    sol, _ = _reference_solution(cost, n_blocks=int(rng.integers(1, 40)), seed=seed,
                                 stale=float(rng.choice([0.0, 0.5, 0.95])))
    assert_optimal(cost, sol)


def test_reference_several_paths_per_round_and_stats():
    cost = make_problem("int0.1", 60, 60, 0)
    status, _, _, stats, _ = solve_reference(cost, n_blocks=5, seed=0)
    assert status == STATUS_OK
    assert stats["phases"] == len(stats["paths_per_phase"])
    assert all(p >= 1 for p in stats["paths_per_phase"])
    assert max(stats["paths_per_phase"]) > 1   # Lopes et al.: several paths in one round
    assert stats["search_rounds"] >= stats["phases"]


@pytest.mark.parametrize("shape", [(3, 3), (3, 8), (8, 3)])
def test_reference_infeasible(shape):
    cost = make_problem("infeasible", *shape, 0)
    with pytest.raises(epslap.InfeasibleError, match="cost matrix is infeasible"):
        _reference_solution(cost, n_blocks=2, seed=0)
    all_inf = np.full(shape, np.inf)
    with pytest.raises(epslap.InfeasibleError, match="cost matrix is infeasible"):
        _reference_solution(all_inf, n_blocks=2, seed=0)


def test_numeric_plan_modes_and_storage():
    ints = np.arange(12).reshape(3, 4)
    p = numeric_plan(np, ints, integral=True)
    assert p["exact"] and p["tol"] == 0.0 and p["storage"] == np.float32
    big = ints * (2**26)
    p = numeric_plan(np, big, integral=True)
    assert p["exact"] and p["storage"] == np.int32
    floats_int = np.array([[1.0, np.inf], [3.0, 4.0]])
    p = numeric_plan(np, floats_int, integral=False)
    assert p["exact"] and p["has_inf"] and p["storage"] == np.float32
    p = numeric_plan(np, np.array([[0.5, 2.0e9], [1.0, 3.0]]), integral=False)
    assert not p["exact"] and p["tol"] == pytest.approx(2.0e9 * 2.0**-40)
    assert p["cert_tol"] > p["tol"] and p["storage"] == np.float64
    p = numeric_plan(np, np.array([[0.5, 2.0]], dtype=np.float32), integral=False)
    assert p["storage"] == np.float32
    with pytest.raises(ValueError, match="exceed what backend='hungarian-gpu' keeps exact"):
        numeric_plan(np, np.array([[2**52, 0], [0, 1]], dtype=np.int64), integral=True)


def test_status_codes_map_to_exceptions():
    raise_for_status(STATUS_OK)
    with pytest.raises(epslap.InfeasibleError, match="cost matrix is infeasible"):
        raise_for_status(STATUS_INFEASIBLE)
    with pytest.raises(RuntimeError, match="alternating path did not close"):
        raise_for_status(STATUS_BROKEN_PATH)
    with pytest.raises(RuntimeError, match="dual updates exceeded"):
        raise_for_status(STATUS_ITERATION_LIMIT)
    with pytest.raises(RuntimeError, match="unknown kernel status 99"):
        raise_for_status(99)


def test_backend_is_listed_and_validated():
    assert "hungarian-gpu" in epslap._validate._BACKENDS
    with pytest.raises(ValueError, match="backend must be one of"):
        epslap.solve(np.eye(2), backend="hungarian")


@pytest.mark.skipif(_REASON is None, reason="a GPU is present: the missing-GPU error cannot occur")
def test_missing_gpu_error_names_the_extra():
    with pytest.raises(epslap.GPUUnavailableError, match=r"epslap\[gpu-cuda1[23]\]|no usable|no CUDA"):
        epslap.solve(np.eye(3), backend="hungarian-gpu")


def test_kernel_source_has_the_entry_points():
    """The kernel file ships next to the driver and defines what the driver launches."""
    import os

    from epslap.gpu.hungarian import solver as hungarian
    src = open(hungarian._SRC).read()
    for name in ("hungarian_solve", "hungarian_check"):
        assert f"{name}(" in src
    assert os.path.basename(hungarian._SRC) == "hungarian.cu"
    assert "__launch_bounds__(THREADS, 2)" in src and hungarian.BLOCKS_PER_SM == 2


# ---------------------------------------------------------------------------------------------
# CPU: the kernel source itself, executed by the thread emulator (tests/kernel_emulator.py)
# ---------------------------------------------------------------------------------------------

from kernel_emulator import compiler_reason, solve_emulated  # noqa: E402

_EMU_REASON = compiler_reason()
emulated = pytest.mark.skipif(_EMU_REASON is not None, reason=f"kernel emulator: {_EMU_REASON}")


def _emulated_solution(cost, maximize=False, **kw):
    """hungarian.cu run by the emulator through the driver's run_kernels, mapped by finish()."""
    from epslap.solution import finish
    canon = canonical_dense(cost, maximize)
    m = canon.matrix
    row_to_col, v, assigned, stats = solve_emulated(m, canon.integral, **kw)
    return finish(m.shape, canon.transposed, canon.integral, row_to_col, v, assigned, stats,
                  maximize, 0.0)


@emulated
@pytest.mark.parametrize("gather", [False, True], ids=["stream", "gather"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", [(1, 1), (13, 13), (9, 22), (22, 9)])
def test_emulated_kernel_matches_scipy(kind, shape, gather):
    cost = make_problem(kind, *shape, 21)
    sol = _emulated_solution(cost, blocks=1 + sum(shape) % 4, seed=sum(shape), gather=gather)
    assert_optimal(cost, sol)
    st = sol.stats
    assert st["iterations"] == len(st["paths_per_iteration"])
    assert st["initial_matches"] + sum(st["paths_per_iteration"]) == max(shape)  # padded square
    if kind.startswith("int") or kind in ("ties", "constant"):
        assert st["exact"] and st["certificate_max_violation"] <= 0


@emulated
@pytest.mark.parametrize("seed", range(8))
def test_emulated_kernel_schedules_and_grids(seed):
    """More blocks than rows, one block, several: same optimum under perturbed schedules."""
    kind = ["int1", "float64", "ties", "inf"][seed % 4]
    cost = make_problem(kind, 18, 18 + seed % 3, 100 + seed)
    blocks = [1, 2, 5, 24][seed % 4]
    sol = _emulated_solution(cost, blocks=blocks, seed=seed, gather=seed % 2 == 1)
    assert_optimal(cost, sol)


@emulated
def test_emulated_kernel_gathers_when_few_columns_are_uncovered():
    cost = make_problem("int10", 20, 20, 3)
    sol = _emulated_solution(cost, blocks=3, gather=True)
    assert_optimal(cost, sol)
    assert 0 < sol.stats["dual_updates_gathered"] <= sol.stats["dual_updates"]


@emulated
@pytest.mark.parametrize("kind", ["int10", "float32"])
def test_emulated_kernel_maximize(kind):
    cost = make_problem(kind, 11, 16, 8)
    assert_optimal(cost, _emulated_solution(cost, maximize=True, blocks=3), maximize=True)


@emulated
@pytest.mark.parametrize("shape", [(6, 6), (5, 12), (12, 5)])
def test_emulated_kernel_infeasible(shape):
    with pytest.raises(epslap.InfeasibleError, match="cost matrix is infeasible"):
        _emulated_solution(make_problem("infeasible", *shape, 0), blocks=2)
    with pytest.raises(epslap.InfeasibleError, match="cost matrix is infeasible"):
        _emulated_solution(np.full(shape, np.inf), blocks=2)


@emulated
def test_cli_and_dispatch_with_the_emulated_kernel(tmp_path, capsys, monkeypatch):
    """``epslap solve --backend hungarian-gpu``: solve() dispatches to gpu.hungarian and the CLI
    prints the Hungarian counts (the device driver is replaced by the emulated kernel)."""
    import json

    from epslap.cli import main
    from epslap.gpu.hungarian import solver
    monkeypatch.setattr(solver, "solve_hungarian",
                        lambda cost, *, maximize, device, t_start, launch:
                        _emulated_solution(cost, maximize, blocks=2))
    c = make_problem("int10", 12, 12, 1)
    path = tmp_path / "c.npy"
    np.save(path, c)
    out = tmp_path / "r.json"
    assert main(["solve", str(path), "--backend", "hungarian-gpu", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "iterations" in text and "dual updates" in text and "OPTIMAL" in text
    assert json.loads(out.read_text())["cost"] == scipy_optimum(c)


# ---------------------------------------------------------------------------------------------
# GPU: the kernel
# ---------------------------------------------------------------------------------------------

def _gpu_solve(cost, **kw):
    sol = epslap.solve(cost, backend="hungarian-gpu", **kw)
    assert sol.stats["backend"] == "hungarian-gpu"
    return sol


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", [(1, 1), (7, 7), (100, 100), (301, 301), (60, 150), (150, 60)])
def test_gpu_matches_scipy(kind, shape):
    cost = make_problem(kind, *shape, 11)
    sol = _gpu_solve(cost)
    assert_optimal(cost, sol)
    assert sol.stats["iterations"] == len(sol.stats["paths_per_iteration"])
    if kind.startswith("int") or kind in ("ties", "constant"):
        assert sol.stats["exact"] and sol.stats["certificate_max_violation"] <= 0


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("factor", [0.1, 1, 10, 1000])
@pytest.mark.parametrize("n", [1000, 2500])
def test_gpu_integer_ranges_match_scipy_and_cpu(factor, n):
    """The Hungarian papers' classes: uniform integers in [0, factor * n], n no power of two."""
    cost = _integer(np.random.default_rng(n), n, n, factor)
    sol = _gpu_solve(cost)
    assert_optimal(cost, sol)
    assert sol.cost == epslap.solve(cost, backend="cpu").cost
    assert sol.stats["grid"] >= 1 and sum(sol.stats["paths_per_iteration"]) + \
        sol.stats["initial_matches"] == n


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("name", ["random", "geometric", "sanity", "rank1", "integer"])
def test_gpu_paper_classes_match_cpu(name):
    import costfns
    c = costfns.problem(name, 800, seed=2).dense()
    sol = _gpu_solve(c)
    assert_optimal(c, sol)
    cpu = epslap.solve(c, backend="cpu")
    assert abs(float(sol.cost) - float(cpu.cost)) <= 1e-9 * max(1.0, abs(float(cpu.cost)))


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["int1", "float64", "ties"])
@pytest.mark.parametrize("shape", [(90, 90), (40, 130), (130, 40)])
def test_gpu_maximize(kind, shape):
    cost = make_problem(kind, *shape, 5)
    assert_optimal(cost, _gpu_solve(cost, maximize=True), maximize=True)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(50, 50), (20, 70), (70, 20)])
def test_gpu_infeasible(shape):
    with pytest.raises(epslap.InfeasibleError, match="cost matrix is infeasible"):
        _gpu_solve(make_problem("infeasible", *shape, 0))
    with pytest.raises(epslap.InfeasibleError, match="cost matrix is infeasible"):
        _gpu_solve(np.full(shape, np.inf))


@gpu
@pytest.mark.gpu
def test_gpu_cupy_input_dtypes_and_empty():
    import cupy
    rng = np.random.default_rng(3)
    for dtype in (np.float64, np.float32, np.int32, np.int64, np.int16):
        c = (rng.random((120, 97)) * 50).astype(dtype)
        sol = _gpu_solve(cupy.asarray(c))
        assert_optimal(c, sol)
    sol = _gpu_solve(np.zeros((0, 4)))
    assert len(sol.row_ind) == 0 and sol.cost == 0


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("blocks", ["1", "3", "7"])
def test_gpu_grid_sizes(blocks):
    """The result must not depend on the grid (fewer blocks: more rows and zeros per block)."""
    launch = LaunchConfig(hungarian_blocks=int(blocks))
    for kind in ("int1", "float64", "ties"):
        cost = make_problem(kind, 333, 333, int(blocks))
        sol = _gpu_solve(cost, launch=launch)
        assert_optimal(cost, sol)
        assert sol.stats["grid"] == int(blocks)


@gpu
@pytest.mark.gpu
def test_gpu_64bit_indices():
    """n > 46,340: i * n overflows 32 bits (the published codes' limit). Certified on the device
    (scipy would take too long): exact mode, violation 0, and the cost matches the assignment."""
    import cupy
    n = 46_500
    free, total = cupy.cuda.runtime.memGetInfo()
    if free < 56 * 2**30:
        pytest.skip(f"needs ~56 GiB of free device memory, {free / 2**30:.0f} GiB free")
    rs = cupy.random.RandomState(7)
    c = cupy.floor(rs.random_sample((n, n), dtype=cupy.float32) * n)
    sol = _gpu_solve(c)
    assert sol.stats["exact"] and sol.stats["certificate_max_violation"] <= 0
    assert len(np.unique(sol.col_ind)) == n
    picked = float(c[cupy.asarray(sol.row_ind), cupy.asarray(sol.col_ind)].astype(cupy.float64).sum())
    assert picked == sol.cost
    assert abs(float(sol.u.sum() + sol.v.sum()) - sol.cost) <= 0
