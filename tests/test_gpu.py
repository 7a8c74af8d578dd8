"""The GPU backend against scipy and the CPU backend (same algorithm: same optimum, about the
same rows evaluated). Skipped, with the reason shown, where CuPy or a CUDA device is missing."""
from __future__ import annotations

import numpy as np
import pytest

import costfns
import epslap
from conftest import GPU_REASON as _REASON, assert_optimal, gpu




@pytest.mark.skipif(_REASON is None, reason="a GPU is present: the missing-GPU error cannot occur")
def test_missing_gpu_error_names_the_extra():
    with pytest.raises(epslap.GPUUnavailableError, match=r"epslap\[gpu-cuda1[23]\]|no usable|no CUDA"):
        epslap.solve(np.eye(3), backend="gpu")


CLASSES = ["random", "geometric", "disjoint", "sanity", "rank1", "rank2", "rank8", "integer"]


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("name", CLASSES)
@pytest.mark.parametrize("n", [200, 1000])
def test_classes_dense_and_on_demand_match_cpu(name, n):
    src = costfns.problem(name, n, seed=3)
    c = src.dense()
    cpu = epslap.solve(c)
    for cost in (c, src):
        sol = epslap.solve(cost, backend="gpu")
        assert_optimal(c, sol)
        assert sol.stats["backend"] == "gpu"
        assert sol.stats["host_syncs_per_augmentation"] <= 1
        assert sol.stats["gpu_single_block_rerun"] is False  # the full grid was exact itself
        r_cpu, r_gpu = cpu.stats["rows_evaluated"], sol.stats["rows_evaluated"]
        assert abs(r_gpu - r_cpu) <= 0.05 * r_cpu, (r_gpu, r_cpu)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(50, 120), (120, 50), (1, 7), (7, 1)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32])
@pytest.mark.parametrize("maximize", [False, True])
def test_rectangular_dtypes_maximize(shape, dtype, maximize):
    rng = np.random.default_rng(sum(shape))
    c = (rng.random(shape) * 1000).astype(dtype)
    assert_optimal(c, epslap.solve(c, backend="gpu", maximize=maximize), maximize=maximize)


@gpu
@pytest.mark.gpu
def test_cupy_input_inf_and_infeasible():
    import cupy
    rng = np.random.default_rng(5)
    c = rng.random((80, 80))
    c[rng.random((80, 80)) < 0.5] = np.inf
    sol = epslap.solve(cupy.asarray(c), backend="gpu")
    assert_optimal(c, sol)
    bad = np.ones((4, 4))
    bad[:2, :] = np.inf
    with pytest.raises(ValueError, match="cost matrix is infeasible"):
        epslap.solve(cupy.asarray(bad), backend="gpu")
    with pytest.raises(ValueError, match="invalid numeric entries"):
        epslap.solve(cupy.asarray(np.full((3, 3), np.nan)), backend="gpu")


@gpu
@pytest.mark.gpu
def test_rectangular_source_on_device():
    rng = np.random.default_rng(2)
    src = costfns.SqEuclidean(rng.random((70, 3)), rng.random((150, 3)))
    for s in (src, src.T):
        for maximize in (False, True):
            assert_optimal(s.dense(), epslap.solve(s, backend="gpu", maximize=maximize),
                           maximize=maximize)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("blocks", [2, 7, 132])
def test_grid_barrier_selftest(blocks):
    """The cooperative grid barrier the solver relies on: every block sees every write."""
    import cupy
    import costfns as cf
    from epslap.gpu import solver as S
    mod = S._module(cupy, cf.Geometric(5).cuda_source().code, False, 128)
    counters = cupy.zeros(blocks, dtype=np.int64)
    errors = cupy.zeros(1, dtype=np.uint64)
    mod.get_function("barrier_selftest")((blocks,), (128,), (counters, errors, np.int32(500)))
    assert int(errors.get()[0]) == 0


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("name", ["geometric", "random", "integer", "rank8", "disjoint"])
def test_full_grid_is_exact_at_larger_n(name):
    """One block per multiprocessor, n = 4000 (where the old multi-block race showed): the first
    attempt must certify on its own (no single-block rerun) and match scipy and the CPU."""
    src = costfns.problem(name, 4000, seed=1)
    c = src.dense()
    cpu = epslap.solve(c)
    for cost in (c, src):
        sol = epslap.solve(cost, backend="gpu")
        assert sol.stats["grid"] >= 2
        assert sol.stats["gpu_single_block_rerun"] is False
        assert sol.stats["certificate_max_violation"] <= 1e-9 * 4000
        assert abs(float(sol.cost) - float(cpu.cost)) <= 1e-9 * 4000 * max(1.0, abs(float(cpu.cost)))
        assert sol.stats["rows_evaluated"] == cpu.stats["rows_evaluated"]


def _exchange_reference(n_threads, iterations):
    """The checksum every block of ``exchange_selftest`` must reach (NumPy, wrap-around uint)."""
    g = np.arange(n_threads, dtype=np.uint64)
    total = 0
    for it in range(iterations):
        h = ((g * 2654435761) & 0xFFFFFFFF) ^ np.uint64((it * 40503 + 12345) & 0xFFFFFFFF)
        val = (h >> np.uint64(7)) % np.uint64(1000)
        key = ((h & np.uint64(1)) << np.uint64(31)) | g
        w = np.lexsort((key, val))[0]
        total = (total * 1000003 + int(key[w]) + int(g[w])) % 2**64
    return total


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("blocks,threads", [(1, 128), (7, 128), (32, 512), (32, 256), (16, 512), (33, 256), (132, 128), (64, 32)])
def test_pass_exchange_agrees_in_every_block(blocks, threads):
    """The slot exchange that replaces the grid barrier in the pass kernel: every block ends
    every step with the same, correct winner (value, then tie rule)."""
    import cupy
    import costfns as cf
    from epslap.gpu import solver as S
    mod = S._module(cupy, cf.Geometric(5).cuda_source().code, False, threads)
    slots = cupy.zeros(2 * blocks * max(threads // 32, 1) * 16, dtype=np.uint32)
    sums = cupy.zeros(blocks, dtype=np.uint64)
    iterations = 300
    mod.get_function("exchange_selftest")((blocks,), (threads,), (slots, sums, np.int32(iterations)))
    got = sums.get()
    assert len(set(got.tolist())) == 1
    assert int(got[0]) == _exchange_reference(blocks * threads, iterations)


def test_gpu_options_that_do_not_apply_are_errors():
    """backend='gpu' keeps no row cache: asking for one is an error, also without a GPU."""
    with pytest.raises(ValueError, match=r"cache='lfu' applies to backend='cpu'"):
        epslap.solve(np.eye(3), backend="gpu", cache="lfu")
    with pytest.raises(ValueError, match="memory must be"):
        epslap.solve(np.eye(3), backend="gpu", memory="lots")


def test_gpu_budget_message_names_sizes():
    from epslap.gpu.api import _check_budget
    from epslap.gpu.solver import device_bytes
    need = device_bytes(1000, 1000, 132)
    assert need > 1000 * 8 * 8 + 132 * 3 * 1001 * 4   # at least the columns' state and the records
    _check_budget(need, need, 1000, 1000, 0)           # exactly enough passes
    with pytest.raises(ValueError, match=r"memory budget 1\.0 MiB is too small for backend='gpu' "
                                         r"at 1000x1000: the search state and the uploaded matrix"):
        _check_budget(2**20, need + 8 * 10**6, 1000, 1000, 8 * 10**6)


@gpu
@pytest.mark.gpu
def test_gpu_budget_too_small_is_an_error():
    c = np.random.default_rng(1).random((300, 300))
    with pytest.raises(ValueError, match="too small for backend='gpu' at 300x300"):
        epslap.solve(c, backend="gpu", memory="1KiB")
    assert_optimal(c, epslap.solve(c, backend="gpu", memory="1GiB"))
