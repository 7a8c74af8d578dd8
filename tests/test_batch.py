"""Batches (epslap/batch.py) against a loop of scipy calls: 3-D stacks and lists of mixed shapes
and dtypes, rectangular both ways, +inf, maximisation, threads, errors naming the problem, and
every problem's dual certificate."""
from __future__ import annotations

import numpy as np
import pytest

import costfns
import epslap
from conftest import batch_certified, batch_scipy_costs
from epslap.cpu import small

_scipy_costs = batch_scipy_costs
_certified = batch_certified


@pytest.mark.parametrize("shape", [(50, 7, 7), (20, 4, 9), (20, 9, 4), (3, 1, 1), (8, 30, 30)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int32])
@pytest.mark.parametrize("maximize", [False, True])
def test_stack_matches_a_scipy_loop(shape, dtype, maximize):
    rng = np.random.default_rng(sum(shape))
    c = (rng.random(shape) * 100).astype(dtype)
    sol = epslap.solve_batch(c, maximize=maximize)
    np.testing.assert_allclose(sol.cost, _scipy_costs(c, maximize), rtol=1e-12)
    assert sol.row_ind.shape == sol.col_ind.shape == (shape[0], min(shape[1:]))
    assert sol.cost.dtype.kind == ("i" if np.dtype(dtype).kind == "i" else "f")
    _certified(c, sol, maximize)
    r, k = epslap.linear_sum_assignment_batch(c, maximize=maximize)
    np.testing.assert_array_equal(r, sol.row_ind)
    np.testing.assert_array_equal(k, sol.col_ind)


def test_list_of_mixed_shapes_and_dtypes():
    rng = np.random.default_rng(3)
    mats = []
    for k in range(60):
        n1, n2 = (int(x) for x in rng.integers(1, 12, 2))
        m = rng.random((n1, n2)) * 10
        if k % 3 == 0:
            m = np.round(m).astype(np.int64)
        elif k % 3 == 1:
            m[rng.random(m.shape) < 0.3] = np.inf
            m[np.arange(min(n1, n2)), np.arange(min(n1, n2))] = 1.0  # feasible
        mats.append(m)
    sol = epslap.solve_batch(mats)
    np.testing.assert_allclose(sol.cost, _scipy_costs(mats), rtol=1e-12)
    _certified(mats, sol)
    for k, m in enumerate(mats):
        assert sol.row_ind[k].shape == (min(m.shape),)


def test_threads_give_the_same_answers():
    c = np.random.default_rng(5).random((101, 25, 25))
    one = epslap.solve_batch(c, threads=1)
    two = epslap.solve_batch(c, threads=2)
    np.testing.assert_array_equal(one.col_ind, two.col_ind)
    np.testing.assert_array_equal(one.v, two.v)
    np.testing.assert_array_equal(one.stats["rows_evaluated"], two.stats["rows_evaluated"])


def test_a_bad_problem_is_named_by_its_index():
    c = np.random.default_rng(1).random((6, 4, 4))
    c[3, 2, :] = np.inf
    with pytest.raises(epslap.InfeasibleError, match="problem 3: cost matrix is infeasible"):
        epslap.solve_batch(c)
    c[3, 2, 1] = np.nan
    with pytest.raises(ValueError, match="problem 3: matrix contains invalid numeric entries"):
        epslap.solve_batch(c)
    with pytest.raises(ValueError, match="problem 1: expected a matrix"):
        epslap.solve_batch([np.ones((2, 2)), np.ones(3)])
    with pytest.raises(TypeError, match="problem 0"):
        epslap.solve_batch([np.array([["a"]])])
    with pytest.raises(ValueError, match="backend='cpu' or 'gpu'"):
        epslap.solve_batch(c, backend="hungarian-gpu")


def _two_cores(monkeypatch, numba_threads: int = 2) -> None:
    """The batch's cores (``_sync.usable_cores``) read as 2, whatever this machine or this
    process's affinity has (a 1-core runner included)."""
    import numba

    import epslap._sync as sync
    monkeypatch.setattr(sync, "available_cores", lambda: 2)
    monkeypatch.setattr(numba, "get_num_threads", lambda: numba_threads)


def test_large_members_take_the_epsilon_path(monkeypatch):
    """Members too large for the small path are solved as ``solve`` would, with the caller's
    ``threads`` (None: solve's own rule, one thread at this size), not with the batch's thread
    count (lock-step threads on a busy machine stall each other)."""
    import epslap.batch as batch
    _two_cores(monkeypatch)  # the batch's own thread count, on any machine
    asked = []
    solve = batch.solve_cpu
    monkeypatch.setattr(batch, "solve_cpu",
                        lambda c, **kw: asked.append(kw["threads"]) or solve(c, **kw))
    n = small.MAX_SQUARE + 8
    c = np.random.default_rng(2).random((2, n, n))
    sol = epslap.solve_batch(c)
    np.testing.assert_allclose(sol.cost, _scipy_costs(c), rtol=1e-12)
    _certified(c, sol)
    assert asked == [None, None] and sol.stats["threads"] > 1
    tries = []
    solve_small = small.small_solution
    monkeypatch.setattr(small, "small_solution",
                        lambda *a: tries.append(1) or solve_small(*a))
    pair = np.stack([costfns.Disjoint(600, seed=1).dense()] * 2)
    handed = epslap.solve_batch(pair)  # long paths: the batch's small path hands them back
    assert asked[-2:] == [None, None] and tries == []  # and they are not tried there again
    np.testing.assert_allclose(handed.cost, _scipy_costs(pair), rtol=1e-12)
    epslap.solve_batch(c[:1], threads=3)
    assert asked[-1] == 3


def test_empty_batches_and_problems():
    sol = epslap.solve_batch(np.zeros((0, 3, 3)))
    assert len(sol) == 0
    sol = epslap.solve_batch(np.zeros((2, 0, 3)))
    assert sol.cost.tolist() == [0.0, 0.0]


def _bad_members():
    """A member of each kind the checks refuse, with the words of its error."""
    from epslap._validate import int_cost_limit
    big = int_cost_limit((3, 3)) + 1
    return {
        "range": (np.full((3, 3), big), ValueError, r"integer costs in \[.*could overflow"),
        "range_maximize": (np.full((3, 3), -big), ValueError, r"integer costs in \["),
        "uint64": (np.full((3, 3), 2**64 - 1, np.uint64), ValueError, "integer costs in"),
        "float_range": (np.full((3, 3), 1e306), ValueError, "float costs up to"),
        "nan": (np.array([[np.nan, 1.0, 2.0], [1.0, 2.0, 3.0], [2.0, 3.0, 1.0]]), ValueError,
                "invalid numeric entries"),
        "neg_inf": (np.array([[-np.inf, 1.0, 2.0], [1.0, 2.0, 3.0], [2.0, 3.0, 1.0]]),
                    ValueError, "invalid numeric entries"),
        "shape": (np.ones(3), ValueError, "expected a matrix"),
        "ragged": ([[1.0, 2.0], [3.0]], ValueError, "inhomogeneous|sequence"),
        "dtype": (np.array([["a", "b"]]), TypeError, "[Cc]annot cast array data"),
        "complex": (np.ones((3, 3), complex), TypeError, "[Cc]annot cast array data"),
    }


@pytest.mark.parametrize("bad", list(_bad_members()))
@pytest.mark.parametrize("cost_limit", [None, 5])
@pytest.mark.parametrize("same_shape", [False, True])
def test_every_member_error_names_its_index(bad, cost_limit, same_shape):
    """Member 2 of a list is bad in each way the checks know: the error names it ("problem 2:
    …"), whether it shares its stack with good members (the range is checked per stack) or is
    alone in its shape, with a limit or without."""
    member, error, words = _bad_members()[bad]
    maximize = bad == "range_maximize"
    matrix = isinstance(member, np.ndarray) and member.ndim == 2
    shape = member.shape if same_shape and matrix else (2, 4)
    good = np.arange(np.prod(shape)).reshape(shape)
    dtype = member.dtype if isinstance(member, np.ndarray) and member.dtype.kind in "iuf" \
        else np.float64
    mats = [good.astype(dtype), good.astype(dtype) + 1, member, good.astype(dtype)]
    with pytest.raises(error, match=f"problem 2: .*({words})"):
        epslap.solve_batch(mats, cost_limit=cost_limit, maximize=maximize)
    if matrix and same_shape and bad not in ("dtype", "complex"):
        stack = np.stack(mats)  # a 3-D stack: one range check, the member named all the same
        with pytest.raises(error, match=f"problem 2: .*({words})"):
            epslap.solve_batch(stack, cost_limit=cost_limit, maximize=maximize)


def test_batch_threads_are_capped_at_the_cores(monkeypatch):
    import epslap.cpu.cores as cpu_solver
    monkeypatch.setattr(cpu_solver, "available_cores", lambda: 2)
    _two_cores(monkeypatch, numba_threads=64)
    c = np.random.default_rng(3).random((40, 12, 12))
    assert epslap.solve_batch(c).stats["threads"] == 2
    with pytest.warns(RuntimeWarning, match="more than the 2 cores"):
        sol = epslap.solve_batch(c, threads=64)
    assert sol.stats["threads"] == 2
    assert epslap.solve_batch(c, threads=2).stats["threads"] == 2


def test_a_list_names_its_first_bad_problem():
    """A list's members of one shape are solved together: the error names the first bad
    problem of the whole list, not that of the first group."""
    ok = np.ones((2, 2))
    bad3 = np.full((3, 3), np.inf)
    bad2 = np.full((2, 2), np.inf)
    with pytest.raises(epslap.InfeasibleError, match="problem 1:"):
        epslap.solve_batch([ok, bad3, bad2])
    with pytest.raises(ValueError, match="problem 1:"):
        epslap.solve_batch([ok, np.array([[np.nan, 1, 1]]), np.array([[np.nan, 1], [1, 1]])])
    with pytest.raises(epslap.InfeasibleError, match="problem 2:"):
        epslap.solve_batch([ok, np.ones((3, 3)), bad2, bad3])
