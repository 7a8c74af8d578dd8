"""Float costs near the top of the float64 range: refused with a message naming the rule where
the solver's prices could overflow (never a silently wrong answer), solved exactly below it."""
from __future__ import annotations

import numpy as np
import pytest

import costfns
import epslap
from epslap._validate import canonical_dense, float_cost_limit
from tests.conftest import scipy_optimum

MESSAGE = r"could overflow float64.*scale the costs down"


def _huge(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).random((n, n)) * 1.7e308


@pytest.mark.parametrize("call", [
    lambda c: epslap.solve(c),
    lambda c: epslap.solve(c, maximize=True),
    lambda c: epslap.linear_sum_assignment(c),
    lambda c: epslap.solve(c, threads=2),
    lambda c: epslap.solve(c, epsilon=False),
    lambda c: epslap.solve_batch(np.stack([c / 2**900, c])),
], ids=["solve", "maximize", "linear_sum_assignment", "threads", "no-epsilon", "batch"])
def test_near_overflow_matrices_are_refused_on_every_route(call):
    with pytest.raises(ValueError, match=MESSAGE):
        call(_huge(5))


def test_the_epsilon_path_and_a_source_refuse_them_too():
    with pytest.raises(ValueError, match=MESSAGE):
        epslap.solve(_huge(1500) * 1e-3, threads=1)  # past the small path's size
    row = costfns.from_function(lambda i: np.full(3000, 1e306) * (1 + np.arange(3000) % 3),
                                (3000, 3000), kind="row")
    with pytest.raises(ValueError, match=MESSAGE):
        epslap.solve(row, memory="50MiB")


def test_the_gpu_route_checks_the_matrix_before_it_leaves_the_host():
    with pytest.raises(ValueError, match=MESSAGE):
        canonical_dense(_huge(5), maximize=False)


@pytest.mark.parametrize("n", [5, 40, 1200])
def test_costs_just_below_the_limit_are_solved_exactly(n):
    """Scaled by a power of two the problem is the same: the optimum scales exactly."""
    small = np.random.default_rng(n).random((n, n))
    k = int(np.floor(np.log2(float_cost_limit((n, n))))) - 1
    big = np.ldexp(small, k)
    assert np.abs(big).max() <= float_cost_limit((n, n))
    sol = epslap.solve(big)
    ref = epslap.solve(small)
    assert np.array_equal(sol.col_ind, ref.col_ind)
    assert sol.cost == pytest.approx(np.ldexp(scipy_optimum(small), k), rel=1e-12)
    assert epslap.verify(big, sol.row_ind, sol.col_ind, sol.u, sol.v)["optimal"]
