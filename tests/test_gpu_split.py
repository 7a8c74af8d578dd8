"""One problem's ε-passes split over several GPUs (``device=[0, 1]``, epslap/gpu/split.py).

On one GPU the split runs as two partitions of that device (``device=[0, 0]``): two launches
that form one logical grid and agree on every step through each other's slots. With the same
logical grid as a single launch (``LaunchConfig(blocks=...)``), every step, every price and every
count must be the same bit for bit. With two GPUs, ``device=[0, 1]``: the optimum of the
one-device solve, certified. The option's errors are checked without a GPU.
"""
from __future__ import annotations

import numpy as np
import pytest

import costfns
import epslap
from conftest import GPU_REASON, assert_optimal, gpu
from epslap.gpu import LaunchConfig


def _device_count() -> int:
    if GPU_REASON is not None:
        return 0
    import cupy
    return cupy.cuda.runtime.getDeviceCount()


two_gpus = pytest.mark.skipif(GPU_REASON is not None or _device_count() < 2,
                              reason=f"needs two CUDA devices ({GPU_REASON or 'one found'})")

def _points(n1: int, n2: int, seed: int):
    """Squared distances between n1 and n2 uniform points in the plane."""
    return costfns.SqEuclidean(np.random.default_rng(seed).random((n1, 2)),
                               np.random.default_rng(seed + 1).random((n2, 2)))


CASES = {  # name: (cost, maximize)
    "geometric": (lambda: costfns.problem("geometric", 3000, seed=1), False),
    "random short": (lambda: costfns.problem("random", 2000, seed=2), False),
    "integer max": (lambda: costfns.problem("integer", 1500, seed=3), True),
    "rectangular": (lambda: _points(900, 2500, 4), False),
    "rectangular max T": (lambda: _points(2500, 1900, 4), True),
    "dense": (lambda: costfns.generate("random", 800, seed=5), False),
}


def _same(a, b):
    assert np.array_equal(a.row_ind, b.row_ind) and np.array_equal(a.col_ind, b.col_ind)
    assert np.array_equal(a.v, b.v) and np.array_equal(a.u, b.u) and a.cost == b.cost
    for key in ("rows_evaluated", "passes", "epsilons", "polish_rows"):
        assert a.stats[key] == b.stats[key], key


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("blocks", [4, 16, 24])  # 48 logical blocks: the long exchange path
@pytest.mark.parametrize("name", list(CASES))
def test_two_partitions_of_one_gpu_equal_one_launch(name, blocks):
    make, maximize = CASES[name]
    cost = make()
    one = epslap.solve(cost, backend="gpu", maximize=maximize,
                       launch=LaunchConfig(blocks=2 * blocks))
    split = epslap.solve(cost, backend="gpu", maximize=maximize, device=[0, 0],
                         launch=LaunchConfig(blocks=blocks))
    assert split.stats["devices"] == [0, 0]
    assert split.stats["grid_per_device"] == [blocks, blocks]
    assert split.stats["grid"] == one.stats["grid"] == 2 * blocks
    assert not split.stats["gpu_single_block_rerun"]
    _same(one, split)
    if isinstance(cost, np.ndarray):
        assert_optimal(cost, split, maximize=maximize)


@gpu
@pytest.mark.gpu
def test_two_partitions_with_the_column_state_in_shared_memory():
    cost = costfns.problem("geometric", 6000, seed=9)
    one = epslap.solve(cost, backend="gpu", launch=LaunchConfig(blocks=2, smem_state="on"))
    split = epslap.solve(cost, backend="gpu", device=[0, 0],
                         launch=LaunchConfig(blocks=1, smem_state="on"))
    assert split.stats["column_state_bytes_shared"] == one.stats["column_state_bytes_shared"] > 0
    _same(one, split)


@gpu
@pytest.mark.gpu
def test_three_partitions():
    cost = costfns.problem("geometric", 2500, seed=6)
    one = epslap.solve(cost, backend="gpu", launch=LaunchConfig(blocks=24))
    split = epslap.solve(cost, backend="gpu", device=[0, 0, 0], launch=LaunchConfig(blocks=8))
    assert split.stats["grid_per_device"] == [8, 8, 8]
    _same(one, split)


@gpu
@pytest.mark.gpu
def test_split_refuses_what_runs_on_one_device():
    geo = costfns.problem("geometric", 500, seed=1)
    with pytest.raises(ValueError, match="device row cache"):
        epslap.solve(geo, backend="gpu", device=[0, 0], cache="lfu")
    fn = costfns.from_function(lambda i: np.cos(np.arange(300) * (i + 0.5)), (300, 300),
                               kind="row")
    with pytest.raises(ValueError, match="without a device form"):
        epslap.solve(fn, backend="gpu", device=[0, 0])
    with pytest.raises(ValueError, match="at most"):
        epslap.solve(geo, backend="gpu", device=[0, 0], launch=LaunchConfig(blocks=10**4))


@gpu
@pytest.mark.gpu
def test_checkpoints_of_a_split_solve_resume_split_or_on_one_launch(tmp_path):
    """Checkpoints inside the passes (the kernel stopped between two augmentations at the
    host's request, on every partition at once) change nothing; the last one resumes to the
    same solve, split again or as one launch of the same grid."""
    cost = costfns.problem("geometric", 3000, seed=1)
    one = epslap.solve(cost, backend="gpu", launch=LaunchConfig(blocks=16))
    path = tmp_path / "split.ckpt"
    split = epslap.solve(cost, backend="gpu", device=[0, 0], launch=LaunchConfig(blocks=8),
                         checkpoint=path, checkpoint_every=1e-9)
    _same(one, split)
    # between passes at most one per pass (and the estimate's): the rest stopped inside a pass
    assert split.stats["checkpoints_written"] > one.stats["passes"] + 2
    for device, blocks in (([0, 0], 8), (0, 16)):
        resumed = epslap.solve(cost, backend="gpu", device=device,
                               launch=LaunchConfig(blocks=blocks), resume=path)
        _same(one, resumed)


@pytest.mark.parametrize("device", [[], [0, -1], [0, 1.0], "0,1", [True]])
def test_device_lists_are_checked(device):
    with pytest.raises(ValueError, match="device must be"):
        epslap.solve(np.eye(3), backend="gpu", device=device)


def test_a_split_is_refused_where_launches_are_serialised(monkeypatch):
    from epslap.gpu.solver import _check_split
    monkeypatch.setenv("CUDA_LAUNCH_BLOCKING", "1")
    with pytest.raises(ValueError, match="CUDA_LAUNCH_BLOCKING"):
        _check_split((0, 1), 0, object(), None, None, LaunchConfig())


def test_device_lists_are_for_the_gpu_backend():
    for backend in ("cpu", "hungarian-gpu"):
        with pytest.raises(ValueError, match="device must be an integer"):
            epslap.solve(np.eye(3), backend=backend, device=[0, 1])


@two_gpus
@pytest.mark.gpu
@pytest.mark.parametrize("name", ["geometric", "integer max", "rectangular"])
def test_two_gpus_reach_the_one_gpu_optimum(name):
    make, maximize = CASES[name]
    cost = make()
    one = epslap.solve(cost, backend="gpu", maximize=maximize)
    split = epslap.solve(cost, backend="gpu", maximize=maximize, device=[0, 1])
    assert split.stats["devices"] == [0, 1]
    assert not split.stats["gpu_single_block_rerun"]
    if maximize or name == "integer max":
        assert split.cost == one.cost
    else:
        assert split.cost == pytest.approx(one.cost, rel=1e-12)


@two_gpus
@pytest.mark.gpu
def test_two_gpus_equal_one_launch_of_the_same_grid():
    cost = costfns.problem("geometric", 3000, seed=7)
    one = epslap.solve(cost, backend="gpu", launch=LaunchConfig(blocks=32))
    split = epslap.solve(cost, backend="gpu", device=[0, 1], launch=LaunchConfig(blocks=16))
    _same(one, split)


@two_gpus
@pytest.mark.gpu
def test_two_gpus_with_the_default_grid():
    """A grid of every multiprocessor on each GPU: more blocks than one device holds (the
    certificate reads the logical grid's module); the dense method ("auto" would take the
    candidates method at this size)."""
    cost = costfns.problem("geometric", 40000, seed=8)
    one = epslap.solve(cost, backend="gpu", candidates=False)
    split = epslap.solve(cost, backend="gpu", device=[0, 1], candidates=False)
    assert split.stats["grid"] == sum(split.stats["grid_per_device"]) > one.stats["grid"]
    assert not split.stats["gpu_single_block_rerun"]
    assert split.cost == pytest.approx(one.cost, rel=1e-12)


CANDIDATE_CASES = {  # name: (cost, maximize): a point set (box bound), a matrix, integers
    "geometric": (lambda: costfns.problem("geometric", 3000, seed=11), False),
    "matrix": (lambda: costfns.generate("random", 1500, seed=12), False),
    "integer max": (lambda: costfns.problem("integer", 1200, seed=13), True),
    "rectangular T": (lambda: _points(2600, 1700, 14), False),
}


def _same_candidates_solve(a, b, cost, maximize=False):
    """The same optimum (the device's auction, every free row bidding at once, may end on
    another of equal cost: its bids race); ``b``'s duals certify it (the host's check)."""
    assert a.stats["method"] == b.stats["method"] == "candidates"
    assert epslap.verify(cost, b.row_ind, b.col_ind, b.u, b.v, maximize=maximize)["optimal"]
    if np.issubdtype(np.asarray(a.v).dtype, np.integer):
        assert a.cost == b.cost
    else:
        assert a.cost == pytest.approx(b.cost, rel=1e-12)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("devices", [[0, 0], pytest.param([0, 1], marks=two_gpus)])
@pytest.mark.parametrize("name", list(CANDIDATE_CASES))
def test_candidates_split_by_rows_reach_the_one_device_optimum(name, devices):
    """The candidates method's streaming passes split by rows (``[0, 0]``: two partitions of
    one GPU; ``test_gpu_passes_equal_the_cpu_passes`` compares the split passes themselves;
    ``[0, 1]``: two GPUs): the one-device optimum, certified."""
    make, maximize = CANDIDATE_CASES[name]
    cost = make()
    one = epslap.solve(cost, backend="gpu", maximize=maximize, candidates=True)
    split = epslap.solve(cost, backend="gpu", maximize=maximize, candidates=True,
                         device=devices)
    _same_candidates_solve(one, split, cost, maximize)
    if isinstance(cost, np.ndarray):
        assert_optimal(cost, split, maximize=maximize)


@gpu
@pytest.mark.gpu
def test_every_device():
    """``device="all"``: the candidates' passes over every visible GPU; a dense solve on the
    first."""
    cost = costfns.problem("geometric", 2000, seed=16)
    one = epslap.solve(cost, backend="gpu", candidates=True)
    every = epslap.solve(cost, backend="gpu", candidates=True, device="all")
    _same_candidates_solve(one, every, cost)
    dense = epslap.solve(cost, backend="gpu", candidates=False, device="all")
    assert dense.cost == pytest.approx(one.cost, rel=1e-12)
    assert dense.stats["devices"] == [0]


def test_every_device_is_for_the_gpu_backend():
    with pytest.raises(ValueError, match="device must be an integer"):
        epslap.solve(np.eye(3), device="all")
    with pytest.raises(ValueError, match="device must be"):
        epslap.solve(np.eye(3), backend="gpu", device="every")
