"""``solve_batch(..., backend="gpu")`` (epslap/gpu/batch.py) against a loop of scipy calls: random
shapes, rectangular both ways, every team size, float32/float64/int32, +inf, maximisation, an
infeasible or invalid member named by its index, CuPy input staying on the device, float64
geometric members polished on the device instead of the CPU, and every member's dual
certificate. GPU tests skip, with the reason shown, where CuPy or a device is missing; the
missing-GPU error is checked where it can occur."""
from __future__ import annotations

import numpy as np
import pytest

import epslap
from conftest import GPU_REASON as _REASON, assert_optimal, batch_certified, batch_scipy_costs, gpu
from scipy.optimize import linear_sum_assignment as scipy_rows_cols


_scipy_costs = batch_scipy_costs
_certified = batch_certified


@pytest.mark.skipif(_REASON is None, reason="a GPU is present: the missing-GPU error cannot occur")
def test_missing_gpu_error_names_the_extra():
    with pytest.raises(epslap.GPUUnavailableError,
                       match=r"epslap\[gpu-cuda1[23]\]|no usable|no CUDA"):
        epslap.solve_batch(np.ones((2, 3, 3)), backend="gpu")


def test_unknown_backend_is_refused():
    with pytest.raises(ValueError, match="backend='cpu' or 'gpu'"):
        epslap.solve_batch(np.ones((2, 3, 3)), backend="hungarian-gpu")


# (B, n1, n2): every team of batch.cu (8, 16, 32 lanes; a warp with 8 columns per lane; a block
# of 256 threads) and both orientations
SHAPES = [(200, 5, 5), (300, 20, 20), (100, 50, 50), (60, 100, 100), (20, 200, 200),
          (4, 700, 700), (50, 12, 40), (50, 40, 12), (10, 90, 300), (10, 300, 90), (30, 1, 9),
          (30, 9, 1), (40, 1, 1)]


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32])
@pytest.mark.parametrize("maximize", [False, True])
def test_stack_matches_a_scipy_loop(shape, dtype, maximize):
    rng = np.random.default_rng(sum(shape) + 7 * maximize)
    c = (rng.random(shape) * 1000).astype(dtype)
    sol = epslap.solve_batch(c, maximize=maximize, backend="gpu")
    assert sol.stats["backend"] == "gpu"
    assert isinstance(sol.cost, np.ndarray)
    np.testing.assert_allclose(sol.cost, _scipy_costs(c, maximize), rtol=1e-12)
    assert sol.row_ind.shape == sol.col_ind.shape == (shape[0], min(shape[1:]))
    assert sol.cost.dtype.kind == ("i" if np.dtype(dtype).kind == "i" else "f")
    _certified(c, sol, maximize)
    assert sol.stats["cpu_fallbacks"] == 0
    r, k = epslap.linear_sum_assignment_batch(c, maximize=maximize, backend="gpu")
    np.testing.assert_array_equal(r, sol.row_ind)
    np.testing.assert_array_equal(k, sol.col_ind)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("cls", ["geometric", "ties"])
@pytest.mark.parametrize("n", [30, 100, 400])
def test_structured_costs(cls, n):
    """Geometric costs (long paths) and few distinct values (many ties)."""
    rng = np.random.default_rng(n)
    if cls == "geometric":
        p, q = rng.random((8, n, 2)), rng.random((8, n, 2))
        c = ((p[:, :, None, :] - q[:, None, :, :]) ** 2).sum(-1)
    else:
        c = rng.integers(0, 3, (8, n, n)).astype(np.float64)
    sol = epslap.solve_batch(c, backend="gpu")
    np.testing.assert_allclose(sol.cost, _scipy_costs(c), rtol=1e-12, atol=1e-12)
    _certified(c, sol)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize(("b", "n"), [(4000, 20), (1000, 100)])
def test_float64_geometric_members_are_polished_on_the_device(b, n):
    """Squared distances of points in the unit square, float64: a few members' prices, rounded
    at the magnitude of the path distances, miss verify's rule on entries whose cost and duals
    are all near 0 (seed 0 holds such members at both sizes). The device polishes them: none
    goes to the CPU, and every member is certified."""
    rng = np.random.default_rng(0)
    p, q = rng.random((b, n, 2)), rng.random((b, n, 2))
    c = ((p[:, :, None, :] - q[:, None, :, :]) ** 2).sum(-1)
    sol = epslap.solve_batch(c, backend="gpu")
    assert sol.stats["cpu_fallbacks"] == 0
    assert sol.stats["device_polishes"] > 0
    np.testing.assert_allclose(sol.cost, _scipy_costs(c), rtol=1e-12)
    _certified(c, sol)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("maximize", [False, True])
def test_inf_entries_and_random_shapes_in_a_list(maximize):
    rng = np.random.default_rng(11)
    bad = -np.inf if maximize else np.inf
    mats = []
    for k in range(80):
        n1, n2 = (int(x) for x in rng.integers(1, 60, 2))
        m = rng.random((n1, n2)) * 10
        if k % 4 == 0:
            m = np.round(m).astype(np.int32)
        elif k % 4 == 1:
            m[rng.random(m.shape) < 0.4] = bad
            m[np.arange(min(n1, n2)), np.arange(min(n1, n2))] = 1.0  # feasible
        elif k % 4 == 2:
            m = m.astype(np.float32)
        mats.append(m)
    sol = epslap.solve_batch(mats, maximize=maximize, backend="gpu")
    np.testing.assert_allclose(sol.cost, _scipy_costs(mats, maximize), rtol=1e-12)
    _certified(mats, sol, maximize)


@gpu
@pytest.mark.gpu
def test_a_bad_member_is_named_by_its_index():
    c = np.random.default_rng(1).random((6, 30, 30))
    c[3, 2, :] = np.inf
    with pytest.raises(epslap.InfeasibleError, match="problem 3: cost matrix is infeasible"):
        epslap.solve_batch(c, backend="gpu")
    c[4, 1, 1] = np.nan
    with pytest.raises(ValueError, match="problem 3: cost matrix is infeasible"):
        epslap.solve_batch(c, backend="gpu")  # the first bad member is the one named
    c[1, 5, 7] = -np.inf
    with pytest.raises(ValueError, match="problem 1: matrix contains invalid numeric entries"):
        epslap.solve_batch(c, backend="gpu")
    with pytest.raises(ValueError, match="problem 1: expected a matrix"):
        epslap.solve_batch([np.ones((2, 2)), np.ones(3)], backend="gpu")
    with pytest.raises(TypeError, match="problem 0"):
        epslap.solve_batch([np.array([["a"]])], backend="gpu")
    with pytest.raises(ValueError, match="could overflow int64"):
        epslap.solve_batch(np.full((2, 3, 3), 2**61, np.int64), backend="gpu")


@gpu
@pytest.mark.gpu
def test_cupy_input_stays_on_the_device():
    import cupy
    rng = np.random.default_rng(4)
    for shape in [(500, 20, 20), (40, 30, 70), (40, 70, 30)]:
        c = rng.random(shape).astype(np.float32)
        sol = epslap.solve_batch(cupy.asarray(c), backend="gpu")
        for name in ("row_ind", "col_ind", "cost", "u", "v"):
            assert isinstance(getattr(sol, name), cupy.ndarray), name
        np.testing.assert_allclose(cupy.asnumpy(sol.cost), _scipy_costs(c), rtol=1e-12)
        for k in range(0, shape[0], 7):
            rep = epslap.verify(c[k], cupy.asnumpy(sol.row_ind[k]), cupy.asnumpy(sol.col_ind[k]),
                                cupy.asnumpy(sol.u[k]), cupy.asnumpy(sol.v[k]))
            assert rep["optimal"], (k, rep)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("maximize", [False, True])
def test_a_member_the_device_cannot_certify_is_solved_on_the_cpu(maximize, monkeypatch):
    """A member whose duals missed the rule on the device (forced here) goes to the CPU path:
    the same optimum, and a certificate in the caller's orientation and sign."""
    import epslap.gpu.batch as gb
    launch = gb._launch

    def one_uncertified(*args, read=None, **options):
        launch(*args, **options)
        status = args[-2]  # (the members' statuses, on the device)
        status[min(1, status.size - 1)] = gb.UNCERTIFIED
        return None if read is None else read()  # (a batch of one reads its outputs here)
    monkeypatch.setattr(gb, "_launch", one_uncertified)
    for shape in ((3, 20, 20), (3, 12, 30), (3, 30, 12)):
        c = np.random.default_rng(sum(shape)).random(shape)
        sol = epslap.solve_batch(c, maximize=maximize, backend="gpu")
        assert sol.stats["cpu_fallbacks"] == 1
        np.testing.assert_allclose(sol.cost, _scipy_costs(c, maximize), rtol=1e-12)
        _certified(c, sol, maximize)
    # a batch of one (a single problem on backend="gpu") takes the batch's way then
    monkeypatch.setattr(gb, "SINGLE_MAX_SIDE", 1024)
    for shape in ((20, 20), (12, 30), (30, 12)):
        c = np.random.default_rng(sum(shape)).random(shape)
        sol = epslap.solve(c, maximize=maximize, backend="gpu")
        assert sol.stats["method"] == "batch kernel" and sol.stats["cpu_fallbacks"] == 1
        assert_optimal(c, sol, maximize=maximize)


@gpu
@pytest.mark.gpu
def test_empty_and_wide_members():
    sol = epslap.solve_batch(np.zeros((0, 3, 3)), backend="gpu")
    assert len(sol) == 0
    sol = epslap.solve_batch(np.zeros((2, 0, 3)), backend="gpu")
    assert sol.cost.tolist() == [0.0, 0.0]
    from epslap.gpu.batch import MAX_COLS
    c = np.random.default_rng(2).random((2, 3, MAX_COLS + 5))
    sol = epslap.solve_batch(c, backend="gpu")
    assert sol.stats["single_gpu_solves"] == 2
    np.testing.assert_allclose(sol.cost, _scipy_costs(c), rtol=1e-12)
    _certified(c, sol)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("limit", [0.05, 0.3])
def test_cost_limit_batches_on_the_device(limit):
    """cost_limit through the GPU batch (each member extended by its slack columns) gives the
    CPU batch's penalised optimum, CuPy input included."""
    import cupy
    rng = np.random.default_rng(3)
    c = rng.random((50, 12, 30))
    cpu = epslap.solve_batch(c, cost_limit=limit)
    for costs in (c, cupy.asarray(c)):
        gpu_sol = epslap.solve_batch(costs, backend="gpu", cost_limit=limit)
        for k in range(len(c)):
            r, col = (cupy.asnumpy(x) for x in (gpu_sol.row_ind[k], gpu_sol.col_ind[k]))
            pen = c[k][r, col].sum() + (12 + 30 - 2 * len(r)) * limit / 2
            rc, cc = cpu.row_ind[k], cpu.col_ind[k]
            ref = c[k][rc, cc].sum() + (12 + 30 - 2 * len(rc)) * limit / 2
            assert pen == pytest.approx(ref, abs=1e-12)
            u, v = cupy.asnumpy(gpu_sol.u[k]), cupy.asnumpy(gpu_sol.v[k])
            assert epslap.verify(c[k], r, col, u, v, cost_limit=limit)["optimal"]


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(1, 1), (7, 7), (30, 100), (100, 30), (1, 40), (40, 1),
                                   (300, 300), (1024, 1000)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int32, np.uint8])
@pytest.mark.parametrize("maximize", [False, True])
def test_a_small_single_problem_is_solved_as_a_batch_of_one(monkeypatch, shape, dtype,
                                                             maximize):
    """``solve(c, backend="gpu")`` on a matrix with sides up to SINGLE_MAX_SIDE: the batch
    kernel's one launch, NumPy or CuPy input, a Solution with NumPy arrays whose duals certify
    it, scipy's optimum; forbidden pairs kept."""
    import cupy
    from conftest import assert_optimal
    from epslap.gpu import batch
    monkeypatch.setattr(batch, "SINGLE_MAX_SIDE", 1024)
    rng = np.random.default_rng(sum(shape))
    c = (rng.random(shape) * 200).astype(dtype)
    if c.dtype.kind == "f" and min(shape) > 1:
        c[0, -1] = -np.inf if maximize else np.inf
    for x in (c, cupy.asarray(c)):
        sol = epslap.solve(x, backend="gpu", maximize=maximize)
        assert sol.stats["method"] == "batch kernel" and sol.stats["backend"] == "gpu"
        assert isinstance(sol.row_ind, np.ndarray) and isinstance(sol.u, np.ndarray)
        assert isinstance(sol.cost, int if c.dtype.kind in "iu" else float)
        assert_optimal(c, sol, maximize=maximize)


@gpu
@pytest.mark.gpu
def test_a_batch_of_one_names_a_single_problem_s_errors(monkeypatch):
    """The route's errors are a single problem's (no member index): NaN, -inf, float and
    integer range, infeasible, a bad dtype, not a matrix; a member of a float batch beyond the
    float range rule is refused by its index."""
    import cupy
    from epslap.gpu import batch
    monkeypatch.setattr(batch, "SINGLE_MAX_SIDE", 1024)
    c = np.random.default_rng(3).random((30, 20))  # (solved transposed: the message says 30x20)
    cases = []
    for value, text in ((np.nan, "invalid numeric entries"), (-np.inf, "invalid numeric entries"),
                        (1e306, "could overflow float64.* 30x20 ")):
        d = c.copy()
        d[4, 7] = value
        cases.append((d, ValueError, text))
    inf = c.copy()
    inf[:, :] = np.inf
    inf[:, 0] = 1.0
    cases += [(inf, epslap.InfeasibleError, "infeasible"),
              (np.full((3, 3), 2**62, np.int64), ValueError, "could overflow int64"),
              (np.ones((3, 3), np.complex128), TypeError, "Cannot cast"),
              (np.ones((2, 3, 3)), ValueError, "2-D")]
    for m, exc, text in cases:
        for x in (m, cupy.asarray(m)):
            with pytest.raises(exc, match=text) as info:
                epslap.solve(x, backend="gpu")
            assert not str(info.value).startswith("problem ")
    big = np.random.default_rng(4).random((5, 20, 30))
    big[3, 2, 2] = 1e306
    with pytest.raises(ValueError, match="problem 3: .*could overflow float64"):
        epslap.solve_batch(big, backend="gpu")


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(100, 100), (120, 150), (150, 120), (40, 200), (1, 500),
                                   (1, 80)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int32])
@pytest.mark.parametrize("maximize", [False, True])
def test_a_single_problem_reads_its_matrix_from_shared_memory(monkeypatch, shape, dtype,
                                                             maximize):
    """A batch of one whose matrix fits ``STAGE_BYTES_MAX`` is copied into shared memory and
    read there (``stats["matrix_in_shared_memory"]``): scipy's optimum and certified duals,
    forbidden pairs kept, geometric float64 costs (whose duals the device polishes) too; a
    batch of two and a matrix beyond the limit read global memory."""
    import cupy
    from epslap.gpu import batch
    monkeypatch.setattr(batch, "SINGLE_MAX_SIDE", 1024)
    rng = np.random.default_rng(sum(shape))
    c = (rng.random(shape) * 200).astype(dtype)
    if c.dtype.kind == "f" and min(shape) > 1:
        c[0, -1] = -np.inf if maximize else np.inf
    x, y = rng.random((shape[0], 2)), rng.random((shape[1], 2))
    geo = ((x[:, None] - y[None]) ** 2).sum(-1).astype(dtype) if dtype == np.float64 else c
    for m in (c, cupy.asarray(c), geo):
        sol = epslap.solve(m, backend="gpu", maximize=maximize)
        assert sol.stats["matrix_in_shared_memory"] is True
        assert_optimal(cupy.asnumpy(m), sol, maximize=maximize)
    pair = epslap.solve_batch(np.stack([c, c]), backend="gpu", maximize=maximize)
    assert pair.stats["matrix_in_shared_memory"] is False
    assert_optimal(c, pair.solution(1), maximize=maximize)


@gpu
@pytest.mark.gpu
def test_a_staged_single_problem_names_its_errors(monkeypatch):
    """NaN, -inf and an infeasible row of a matrix read from shared memory: the single
    problem's errors; a matrix beyond the stage's limit is read from global memory."""
    from epslap.gpu import batch
    monkeypatch.setattr(batch, "SINGLE_MAX_SIDE", 1024)
    c = np.random.default_rng(5).random((60, 80))
    for value, exc, text in ((np.nan, ValueError, "invalid numeric entries"),
                             (-np.inf, ValueError, "invalid numeric entries"),
                             ("row", epslap.InfeasibleError, "infeasible")):
        d = c.copy()
        if value == "row":
            d[7, :] = np.inf
        else:
            d[7, 9] = value
        with pytest.raises(exc, match=text):
            epslap.solve(d, backend="gpu")
    big = np.random.default_rng(6).random((300, 300))
    sol = epslap.solve(big, backend="gpu")
    assert sol.stats["matrix_in_shared_memory"] is False
    assert_optimal(big, sol)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(64, 300, 20), (64, 20, 300), (64, 250, 20), (1024, 100, 10),
                                   (40, 90, 100), (200, 9, 1), (30, 70, 33)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32])
@pytest.mark.parametrize("maximize", [False, True])
@pytest.mark.parametrize("in_place", [True, False])
def test_detection_shaped_batches_read_in_place_and_pairs_from_the_kernel(shape, dtype, maximize,
                                                                          in_place, monkeypatch):
    """A transposed batch of small members is read where it lies (or, beyond
    TRANSPOSED_IN_PLACE_MAX, copied), and warp teams (up to 256 columns) write each member's
    pairs in the caller's orientation (a block team's are oriented by ``orient.cu``): the CPU
    batch's optimum for every member, rows ascending, certified duals, the same for CuPy and
    NumPy input."""
    import cupy
    import epslap.gpu.batch as gb
    if not in_place:
        monkeypatch.setattr(gb, "TRANSPOSED_IN_PLACE_MAX", 0)
    rng = np.random.default_rng(sum(shape) + maximize)
    c = (rng.random(shape) * 1000).astype(dtype)
    cpu = epslap.solve_batch(c, maximize=maximize)
    for given in (cupy.asarray(c), c):
        sol = epslap.solve_batch(given, maximize=maximize, backend="gpu")
        assert sol.stats["pairs_from_batch_kernel"] is (max(shape[1:]) <= 256)
        row_ind, col_ind = cupy.asnumpy(sol.row_ind), cupy.asnumpy(sol.col_ind)
        assert (np.diff(row_ind, axis=1) > 0).all()
        np.testing.assert_allclose(cupy.asnumpy(sol.cost), cpu.cost, rtol=1e-9)
        picked = c[np.arange(shape[0])[:, None], row_ind, col_ind]
        np.testing.assert_allclose(picked.astype(np.float64).sum(axis=1), cpu.cost, rtol=1e-9)
        for k in range(0, shape[0], max(1, shape[0] // 5)):
            rep = epslap.verify(c[k], row_ind[k], col_ind[k], cupy.asnumpy(sol.u[k]),
                                cupy.asnumpy(sol.v[k]), maximize=maximize)
            assert rep["optimal"], rep


def test_which_single_problems_take_the_batch_kernel(monkeypatch):
    """Only a matrix with sides up to SINGLE_MAX_SIDE, on one device, with every option of the
    ε solver at its default goes to the batch kernel; anything else asks for that solver."""
    import costfns
    from epslap.gpu import batch
    from epslap.gpu.launch import LaunchConfig
    monkeypatch.setattr(batch, "SINGLE_MAX_SIDE", 1024)
    default = dict(memory=None, cache="auto", epsilon=True, init=None, checkpoint=None,
                   device=0, launch=LaunchConfig())
    assert batch.takes_single(np.ones((5, 7)), **default)
    assert batch.takes_single(np.ones((1024, 3)), **default)
    class OnDevice1:  # a device array of another device than the one asked for
        __cuda_array_interface__: dict = {}
        shape = (5, 5)
        device = type("Device", (), {"id": 1})()

    for cost in (np.ones((1025, 3)), np.ones((0, 4)), np.ones((2, 2, 2)), [[1.0, 2.0]],
                 costfns.Dense(np.ones((5, 5))), OnDevice1()):
        assert not batch.takes_single(cost, **default)
    assert batch.takes_single(OnDevice1(), **{**default, "device": 1})
    for change in (dict(memory="1GiB"), dict(cache="lfu"), dict(epsilon=False),
                   dict(init=np.zeros(5)), dict(checkpoint=object()), dict(device=[0]),
                   dict(launch=LaunchConfig(threads=256))):
        assert not batch.takes_single(np.ones((5, 5)), **{**default, **change})


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(50, 9, 4), (50, 4, 9), (3, 700, 300), (3, 300, 700)])
@pytest.mark.parametrize("maximize", [False, True])
@pytest.mark.parametrize("by", ["batch kernel", "kernel", "sort"])
def test_members_are_oriented_as_the_cpu_batch_orients_them(shape, maximize, by, monkeypatch):
    """The batch kernel's warp teams (members up to 256 columns) or ``orient.cu`` put every
    member's pairs in the caller's orientation, rows ascending, as the CPU batch does (a unique
    optimum: the same pairs), over more members than blocks (grid-stride) and with more rows
    than a block has threads; members with more than ORIENT_MAX_ROWS canonical rows (possible
    past MAX_COLS columns) take the device sort, with the same result."""
    import cupy
    import epslap.gpu.batch as gb
    monkeypatch.setattr(gb, "ORIENT_BLOCKS", 7)
    if by != "batch kernel":
        monkeypatch.setattr(gb, "PAIRS_IN_KERNEL", False)
    if by == "sort":
        monkeypatch.setattr(gb, "ORIENT_MAX_ROWS", 3)
    c = np.random.default_rng(sum(shape)).random(shape)
    gpu_sol = epslap.solve_batch(cupy.asarray(c), maximize=maximize, backend="gpu")
    cpu_sol = epslap.solve_batch(c, maximize=maximize)
    np.testing.assert_array_equal(cupy.asnumpy(gpu_sol.row_ind), cpu_sol.row_ind)
    np.testing.assert_array_equal(cupy.asnumpy(gpu_sol.col_ind), cpu_sol.col_ind)
    np.testing.assert_allclose(cupy.asnumpy(gpu_sol.cost), cpu_sol.cost, rtol=1e-12)


def _detection_batch(seed: int, count: int = 64, queries: int = 300):
    """A detection-shaped ragged list: ``queries`` predictions against 0-59 targets per image,
    float32 and float64."""
    rng = np.random.default_rng(seed)
    mats = [(rng.random((queries, int(k))) * 10).astype(np.float32 if i % 3 else np.float64)
            for i, k in enumerate(rng.integers(0, 60, count))]
    mats[1] = rng.random((17, queries))  # and one the other way round
    return mats


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("maximize", [False, True])
@pytest.mark.parametrize("on_device", [False, True])
def test_a_ragged_list_is_solved_in_one_launch(maximize, on_device):
    """Float matrices of different shapes are padded to one slot (``gpu/ragged.py``) and solved
    by one launch: every member's optimum and certificate, in the input's arrays."""
    import cupy
    mats = _detection_batch(30 + maximize)
    given = [cupy.asarray(m) for m in mats] if on_device else mats
    sol = epslap.solve_batch(given, maximize=maximize, backend="gpu")
    assert sol.stats["launches"] == 1
    assert sol.stats["padded_to"] == (max(min(m.shape) for m in mats), 300)
    kind = cupy.ndarray if on_device else np.ndarray
    assert all(isinstance(a, kind) for a in sol.row_ind + sol.col_ind + sol.u + sol.v)
    np.testing.assert_allclose(sol.cost, _scipy_costs(mats, maximize), rtol=1e-12)
    if on_device:
        sol = epslap.BatchSolution(*([cupy.asnumpy(a) for a in part]
                                     for part in (sol.row_ind, sol.col_ind)),
                                   sol.cost, *([cupy.asnumpy(a) for a in part]
                                               for part in (sol.u, sol.v)), sol.stats)
    _certified(mats, sol, maximize)


_WIDE_RANGE_RAGGED = [
    (False, [np.array([[4.9205034088380047e+13], [3.9057257462163374e+12]]),
             np.array([[-7.6416927197677293e-07, -1.1806363381354568e-16, 6.4411320991104155e-06,
                        2.7574600799301341e-01, 2.1312602619610722e+19],
                       [-4.4393935728043605e-17, -3.9162754218617135e-05, -1.3566124083224144e-15,
                        2.0433218342451323e-08, 1.0206166908930509e-12],
                       [-4.1793577111792712e-02, -1.8809088066656590e+07, 4.5316170824466809e+01,
                        -3.4089300950735446e+19, -3.1575964066561644e-20],
                       [4.7699691325252827e-02, -1.1346084727945984e+10, -6.0689430680311399e-17,
                        -7.0279682806615376e-05, -1.4517128152013801e-05],
                       [1.0092458231042530e-19, -2.2495745499679726e+20, -1.2586930854110356e+00,
                        -1.9450898276873719e+13, 8.5048252253169574e-09]]),
             np.random.default_rng(5).random((6, 5)) * 1e-7]),
    (True, [np.random.default_rng(6).random((6, 6)) * 10.0 ** np.random.default_rng(7).integers(
                -20, 18, (6, 6)),
            np.array([[2e+11, 2e-01, 6e-07, 6e+05],
                      [8e-11, 8e+12, 5e-09, 2e-03],
                      [9e+18, 7e+03, 9.999999999999999e-06, 2e-13],
                      [0.0, 5e+15, 6e+06, 9.000000000000001e-15]])]),
]


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("maximize, mats", _WIDE_RANGE_RAGGED)
def test_a_ragged_member_is_judged_at_its_own_magnitudes(maximize, mats):
    """A square member in a wider slot: the free padding column holds the slot's top price and
    the member's prices sit far below it (costs near -2.2e20, or 9e18 maximised), rounded at
    that magnitude. The slot's certificate passed; the member's duals, moved to its own top,
    missed verify's rule with no warning. Such members are judged again at their own
    magnitudes and solved alone where they miss."""
    sol = epslap.solve_batch(mats, maximize=maximize, backend="gpu")
    assert "padded_to" in sol.stats
    for k, c in enumerate(mats):
        rep = epslap.verify(c, sol.row_ind[k], sol.col_ind[k], sol.u[k], sol.v[k],
                            maximize=maximize)
        assert rep["optimal"], (k, rep)
        assert sol.cost[k] == pytest.approx(epslap.solve(c, maximize=maximize).cost, rel=1e-15)


@gpu
@pytest.mark.gpu
def test_a_ragged_list_names_its_bad_member_and_mends_the_rest(monkeypatch):
    """In the padded launch: a NaN or an infeasible member is named by its index; a member
    the device could not certify is solved on the CPU; one beyond the float range rule of the
    slot's shape but within its own is solved on its own."""
    import epslap.gpu.batch as gb
    mats = _detection_batch(40, count=12)
    first, second = [k for k, m in enumerate(mats) if k > 1 and m.shape[1] > 1][:2]
    bad = [m.copy() for m in mats]
    bad[first][0, 0] = np.nan
    with pytest.raises(ValueError, match=f"problem {first}: matrix contains invalid numeric"):
        epslap.solve_batch(bad, backend="gpu")
    bad = [m.copy() for m in mats]
    bad[second][:, 0] = np.inf  # a target no prediction may take
    with pytest.raises(epslap.InfeasibleError, match=f"problem {second}"):
        epslap.solve_batch(bad, backend="gpu")
    import cupy
    huge = [m.copy() for m in mats] + [np.array([[2.0**1012, 1.0], [1.0, 2.0**1012]])]
    for given in (huge, [cupy.asarray(m) for m in huge]):
        sol = epslap.solve_batch(given, backend="gpu")
        assert sol.cost[-1] == 2.0 and sol.stats["launches"] == 2
        np.testing.assert_allclose(sol.cost[:-1], _scipy_costs(mats), rtol=1e-12)
        assert isinstance(sol.col_ind[-1], type(given[-1]))
    launch = gb._launch

    def one_uncertified(*args):
        launch(*args)
        args[-2][3] = gb.UNCERTIFIED
    monkeypatch.setattr(gb, "_launch", one_uncertified)
    for maximize in (False, True):
        sol = epslap.solve_batch(mats, maximize=maximize, backend="gpu")
        assert sol.stats["cpu_fallbacks"] == 1
        np.testing.assert_allclose(sol.cost, _scipy_costs(mats, maximize), rtol=1e-12)
        _certified(mats, sol, maximize)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("maximize", [False, True])
def test_a_ragged_integer_list_is_one_launch_while_exact(maximize):
    """Integer members are padded as float64 while every cost is below the slot's exact limit
    (results int64, as the per-shape route gives them); beyond it, one launch per shape."""
    from epslap.gpu import ragged
    rng = np.random.default_rng(50 + maximize)
    mats = [rng.integers(-10**11, 10**11, (int(a), int(b))).astype(np.int32 if a % 2 else
                                                                   np.int64)
            for a, b in rng.integers(1, 40, (30, 2))]
    mats[0] = rng.integers(-10**9, 10**9, (7, 3)).astype(np.int32)
    sol = epslap.solve_batch(mats, maximize=maximize, backend="gpu")
    assert sol.stats["launches"] == 1 and sol.cost.dtype == np.int64
    want = [m[scipy_rows_cols(m, maximize)].sum() for m in mats]
    assert sol.cost.tolist() == want
    _certified(mats, sol, maximize)
    limit = ragged.exact_limit(ragged.plan(mats, 4096))
    mats[3] = mats[3].astype(np.int64)
    mats[3][0, 0] = limit + 1
    sol = epslap.solve_batch(mats, maximize=maximize, backend="gpu")
    assert sol.stats["launches"] > 1 and "padded_to" not in sol.stats
    assert sol.cost.tolist() == [m[scipy_rows_cols(m, maximize)].sum() for m in mats]


@gpu
@pytest.mark.gpu
def test_cost_limit_on_a_ragged_list():
    """cost_limit with members of different shapes: their extensions (slack columns) are
    padded to one slot too, and give the CPU batch's penalised optimum."""
    mats = _detection_batch(60, count=20, queries=40)
    for limit in (0.05, 0.4):
        cpu = epslap.solve_batch(mats, cost_limit=limit)
        gpu_sol = epslap.solve_batch(mats, backend="gpu", cost_limit=limit)
        assert gpu_sol.stats["launches"] == 1
        for k, m in enumerate(mats):
            def penalised(r, col):
                return m[r, col].astype(np.float64).sum() + (sum(m.shape) - 2 * len(r)) * limit / 2
            assert penalised(gpu_sol.row_ind[k], gpu_sol.col_ind[k]) == pytest.approx(
                penalised(cpu.row_ind[k], cpu.col_ind[k]), abs=1e-9)
            assert epslap.verify(m, gpu_sol.row_ind[k], gpu_sol.col_ind[k], gpu_sol.u[k],
                                 gpu_sol.v[k], cost_limit=limit)["optimal"]


@pytest.mark.skipif(_REASON is None, reason="a GPU is present: the missing-GPU error cannot occur")
def test_precompile_for_the_gpu_without_one_says_so_first(monkeypatch):
    """``precompile(gpu=True)`` on a machine without CuPy or a device raises the GPU error
    before it starts on the CPU kernels."""
    from epslap.cpu import jv_numpy
    monkeypatch.setattr(jv_numpy, "compile_from_now",
                        lambda: pytest.fail("the CPU kernels came first"))
    with pytest.raises(epslap.GPUUnavailableError, match="CuPy|CUDA device"):
        epslap.precompile(gpu=True)


@gpu
def test_precompile_builds_every_kind_the_batch_kernel_launches():
    """After ``epslap.gpu.precompile`` the batch kernel's launches of any width up to 4096,
    dtype, batch or single problem, detection-shaped or square, find their module built: no
    new module in this process (later processes load them from CuPy's kernel cache)."""
    from epslap.gpu import batch_plan
    from epslap.gpu.precompile import precompile_batch_kernels
    assert precompile_batch_kernels() == 80
    built = len(batch_plan._KERNELS)
    rng = np.random.default_rng(4)
    shapes = [(3, 5, 5), (64, 300, 20), (2, 40, 70), (1, 100, 100), (1, 30, 1000), (3, 9, 9),
              (1, 1024, 1024), (2, 200, 3000), (1, 2, 4000)]
    for b, n1, n2 in shapes:
        for dtype in (np.float32, np.float64, np.int32, np.int64):
            c = (rng.random((b, n1, n2)) * 100).astype(dtype)
            batch_certified(c, epslap.solve_batch(c, backend="gpu"))
    assert len(batch_plan._KERNELS) == built
