"""Rectangular problems solved as such (docs/algorithm.md §10): one exact pass from v = 0 over the
real rows, no virtual rows, for matrices in memory on the pass kernel and for cost sources
through a table or a row cache. Checked against scipy and the dual certificate."""
from __future__ import annotations

import numpy as np
import pytest

import costfns
import epslap
from conftest import assert_optimal, cpu_path
from epslap._schedule import rectangular_from_zero

SHAPES = [(1, 40), (3, 500), (20, 400), (100, 300), (300, 100), (60, 64)]


@pytest.mark.parametrize("n1,n2", [(1, 2), (2, 4000), (150, 160), (15, 16), (16, 17), (16, 16),
                                   (3000, 3200), (3001, 3200)])
def test_rule(n1, n2):
    assert rectangular_from_zero(n1, n2) == (n1 < n2 and 16 * (n2 - n1) >= n2)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32])
@pytest.mark.parametrize("maximize", [False, True])
def test_matrices_and_sources(shape, dtype, maximize):
    """A matrix in memory of a rectangular shape takes the small path even with threads=2 (the
    passes would pad it); the same costs through a row cache take the rectangular route."""
    rng = np.random.default_rng(sum(shape))
    c = (rng.random(shape) * 1000).astype(dtype)
    n1, n2 = sorted(shape)
    rect = rectangular_from_zero(n1, n2)
    sol = epslap.solve(c, maximize=maximize, threads=2)
    assert_optimal(c, sol, maximize=maximize)
    assert sol.stats["method"] == ("jv" if rect else "eps")
    if shape[0] <= shape[1]:  # a source of more rows than columns is refused transposed
        one_row = c.dtype.itemsize * n2  # a row cache of one row (a one-row source: a table)
        sol = epslap.solve(costfns.Dense(c), maximize=maximize, memory=one_row)
        assert_optimal(c, sol, maximize=maximize)
        expected = "eps" if not rect else ("jv" if n1 == 1 else "rectangular")
        assert sol.stats["method"] == expected


def test_a_polish_that_frees_a_lowered_column_is_redone():
    """The polish re-augments every row from prices that fell on assigned columns; here it
    leaves column 5 (price -1) free, which certifies nothing for a rectangular problem: the
    polish is redone with the virtual rows (scipy's optimum is 3)."""
    inf = np.inf
    c = np.array([[4., 3., inf, 1., inf, 0.], [inf, 0., 0., 4., 3., inf],
                  [inf, 3., 4., 3., 3., 2.]])
    sol = epslap.solve(costfns.Dense(c), memory=8 * 6)
    assert sol.stats["method"] == "rectangular"
    assert_optimal(c, sol)


def test_scaled_sources_keep_certified_duals():
    """Costs scaled by 1e-6 … 1e8 through a row cache: every certificate holds (where the
    rectangular route's float duals miss verify's rule, the padded solve is taken)."""
    rng = np.random.default_rng(11)
    for _ in range(300):
        n1 = int(rng.integers(1, 30))
        n2 = n1 + int(rng.integers(n1 // 8 + 1, 50))
        c = rng.random((n1, n2)) * 10.0 ** float(rng.integers(-6, 9))
        sol = epslap.solve(costfns.Dense(c), memory=8 * n2)
        assert_optimal(c, sol)


@pytest.mark.parametrize("threads", [1, 2])
def test_forbidden_pairs_and_infeasible(threads):
    rng = np.random.default_rng(1)
    c = rng.random((30, 200))
    c[rng.random(c.shape) < 0.7] = np.inf
    with cpu_path("eps"):
        assert_optimal(c, epslap.solve(c, threads=threads))
        c[4, :] = np.inf
        with pytest.raises(epslap.InfeasibleError):
            epslap.solve(c, threads=threads)


@pytest.mark.parametrize("memory", [None, "64KiB"])  # a table, then a row cache of a few rows
@pytest.mark.parametrize("threads", [None, 2])
def test_sources(memory, threads):
    rng = np.random.default_rng(7)
    for src in (costfns.Random(40, seed=2, n2=1500),
                costfns.SqEuclidean(rng.random((1500, 2)), rng.random((200, 2))),
                costfns.RandomInt(25, 1000, seed=3, n2=900)):
        sol = epslap.solve(src, memory=memory, threads=threads)
        assert_optimal(src.dense(), sol)
        if memory is not None:
            assert sol.stats["method"] == "rectangular"
            assert sol.stats["cache_policy"] in ("lfu", "slru")


def test_few_rows_do_not_cost_the_square():
    """2 rows of 100,000 columns through a row cache: a handful of rows evaluated (the padded
    square read every one of 100,000 virtual rows' columns in every pass)."""
    src = costfns.Random(2, seed=5, n2=100_000)
    sol = epslap.solve(src, memory="1MiB")  # one row fits: a row cache
    assert sol.stats["method"] == "rectangular"
    assert sol.stats["rows_evaluated"] <= 8
    c = src.dense()
    assert_optimal(c, sol)
    # the optimum of two rows: each row's minimum unless they share its column
    r0, r1 = np.argmin(c[0]), np.argmin(c[1])
    if r0 != r1:
        assert sol.cost == pytest.approx(c[0, r0] + c[1, r1])


@pytest.mark.parametrize("route", ["rectangular source", "plain", "warm start"])
def test_rows_are_validated_where_the_estimate_does_not_run(route):
    """The solves that start from given prices (v = 0, or a hint) only validate the rows
    (``epslap.cpu.estimate.validate``): NaN or -inf is a ValueError before a row without a finite
    cost is an InfeasibleError, as scipy, on every route."""
    shape = (4, 300) if route == "rectangular source" else (30, 30)
    for bad, err in [(np.nan, ValueError), (-np.inf, ValueError), ("row", epslap.InfeasibleError)]:
        c = np.random.default_rng(1).random(shape)
        if bad == "row":
            c[2] = np.inf
        else:
            c[1, 7] = bad
            c[2] = np.inf  # an infeasible row too: the invalid entry is reported first
        with pytest.raises(err) as info:
            if route == "rectangular source":
                epslap.solve(costfns.Dense(c), memory=8 * shape[1])
            elif route == "plain":
                epslap.solve(c, epsilon=False)
            else:
                epslap.solve(costfns.Dense(c), init=np.zeros(shape[1]), memory=8 * shape[1] * 4)
        if err is ValueError:
            assert "NaN or -inf" in str(info.value)
