"""Ragged batches padded to one slot (``epslap.gpu.ragged``): the padding's algebra checked on
the CPU, each padded slot solved by the CPU path in place of the batch kernel, every member's
optimum against scipy and its duals by ``verify``. The kernel itself runs the same stacks in
tests/test_gpu_batch.py."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment as scipy_lsa

import epslap
from conftest import gpu
from epslap.gpu import ragged


def _shapes(rng, count, most):
    shapes = [(int(a), int(b)) for a, b in rng.integers(1, most, (count, 2))]
    return shapes + [(most, most), (0, 4), (4, 0), (1, most)]


def _members(rng, shapes, dtypes=(np.float64, np.float32)):
    return [(rng.random(s) * 10).astype(dtypes[k % len(dtypes)]) for k, s in enumerate(shapes)]


def _padded(mats, p, maximize):
    """The padded stack built member by member (the reference for ``ragged.pad``'s kernel)."""
    stack = np.zeros((len(mats), p.rows, p.cols), p.dtype)
    for k, m in enumerate(mats):
        a, b = p.sides[k]
        stack[k, :a, :b] = m.T if p.transposed[k] else m
        stack[k, :a, b:] = -np.inf if maximize else np.inf
    return stack


def _solved_like_the_kernel(stack, maximize):
    """The canonical result of every padded slot as the batch kernel returns it (minimised:
    the kernel negates as it reads; prices shifted to a top of 0), by the CPU path."""
    b, rows, cols = stack.shape
    x = np.zeros((b, rows), np.int64)
    u, v, total = np.zeros((b, rows)), np.zeros((b, cols)), np.zeros(b)
    for k in range(b):
        sol = epslap.solve(-stack[k] if maximize else stack[k])
        x[k], u[k], v[k], total[k] = sol.col_ind, sol.u, sol.v, sol.cost
    return x, u, v, total


@pytest.mark.parametrize("maximize", [False, True])
@pytest.mark.parametrize("kind", ["float", "int"])
def test_padded_members_keep_their_optimum_and_certificate(maximize, kind):
    rng = np.random.default_rng(3)
    if kind == "float":
        mats = _members(rng, _shapes(rng, 24, 12))
        mats[5] = np.ones((6, 6))  # ties: a square member inside a wider slot
        mats[6][0, :] = np.inf if not maximize else -np.inf  # a forbidden row but one pair
        mats[6][0, 0] = 1.0
    else:  # integers up to the exact limit, and ties
        mats = [(rng.integers(-10**12, 10**12, s) if k % 2 else
                 rng.integers(-10**9, 10**9, s).astype(np.int32))
                if k % 3 else rng.integers(0, 3, s) for k, s in enumerate(_shapes(rng, 24, 12))]
    p = ragged.plan(mats, 4096)
    assert p is not None and (p.rows, p.cols) == (12, 12) and p.integral == (kind == "int")
    stack = _padded(mats, p, maximize)
    packed = ragged.unpad(p, *_solved_like_the_kernel(stack, maximize), maximize)
    row_ind, col_ind, u, v = ragged.members(p, *packed[:4])
    for k, m in enumerate(mats):
        if m.size:
            r, c = scipy_lsa(m, maximize=maximize)
            want = m[r, c].astype(np.float64).sum()
        else:
            want = 0.0
        if kind == "int":
            assert packed[4].dtype == np.int64 and u[k].dtype == v[k].dtype == np.int64
            assert packed[4][k] == m[r, c].sum() if m.size else packed[4][k] == 0
        assert packed[4][k] == pytest.approx(want, rel=1e-12, abs=1e-12), k
        assert len(row_ind[k]) == min(m.shape) and np.all(np.diff(row_ind[k]) > 0)
        got = m[row_ind[k], col_ind[k]].astype(np.float64).sum()
        assert got == pytest.approx(want, rel=1e-12, abs=1e-12)
        assert u[k].shape == (m.shape[0],) and v[k].shape == (m.shape[1],)
        rep = epslap.verify(m, row_ind[k], col_ind[k], u[k], v[k], maximize=maximize)
        assert rep["optimal"], (k, m.shape, rep)


def test_what_is_padded():
    rng = np.random.default_rng(5)
    floats = _members(rng, [(3, 40), (40, 7), (20, 39)])
    p = ragged.plan(floats, 4096)
    assert (p.rows, p.cols) == (20, 40) and p.dtype == np.float64
    assert p.sides.tolist() == [[3, 40], [7, 40], [20, 39]]
    assert p.transposed.tolist() == [False, True, False]
    assert ragged.plan(_members(rng, [(3, 4), (5, 6)], (np.float32,)), 4096).dtype == np.float32
    assert ragged.plan(floats + [np.ones((2, 2), np.int32)], 4096) is None  # integers: groups
    assert ragged.plan(floats, 39) is None  # wider than a team solves
    assert ragged.plan([np.ones((0, 3)), np.ones((3, 0))], 4096) is None  # nothing to solve
    few = [np.ones((100, 100))] + [np.ones((2, 2))] * 99
    assert ragged.plan(few, 4096) is None  # the slot would hold 25 times the entries


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("maximize", [False, True])
@pytest.mark.parametrize("on_device", [False, True])
def test_the_pad_kernel_builds_the_reference_stack(maximize, on_device):
    import cupy
    rng = np.random.default_rng(7)
    mats = _members(rng, _shapes(rng, 30, 20))
    p = ragged.plan(mats, 4096)
    given = [cupy.asarray(m) for m in mats] if on_device else mats
    stack = ragged.pad(cupy, given, p, maximize)
    assert isinstance(stack, cupy.ndarray) and stack.flags.c_contiguous
    np.testing.assert_array_equal(cupy.asnumpy(stack), _padded(mats, p, maximize))
