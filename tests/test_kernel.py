"""The pass kernel's argmin against a direct reading of the tie rule (docs/algorithm.md §4):
smallest d over open columns; among equals an unassigned column; then the lowest index. Closed columns
carry a sentinel distance instead of a flag (a quiet NaN; KEY_MIN for integers)."""
import numpy as np
import pytest
from numba import njit

from epslap.cpu import passes as K


@njit(cache=True)
def _argmin(d, free_mask, integral):
    """The kernel's argmin, given the per-block minima that its scan would have left (taken here
    by a plain loop over the keys, not by the kernel's scan)."""
    dkey = d.view(np.int64)
    n_blocks = (d.shape[0] + K.BLOCK - 1) // K.BLOCK
    block_min = np.full(n_blocks, K.KEY_MAX, np.int64)
    block_free = np.full(n_blocks, K.KEY_MAX, np.int64)
    for j in range(d.shape[0]):
        b = j // K.BLOCK
        k = K.key_of(dkey[j], integral)
        block_min[b] = min(block_min[b], k)
        if free_mask[j] < 0:
            block_free[b] = min(block_free[b], k)
    return K.argmin_open(dkey, free_mask, block_min, block_free, integral)


def _reference(d, closed, free):
    open_cols = np.flatnonzero(~closed)
    if len(open_cols) == 0:
        return -1
    best = d[open_cols].min()
    ties = [j for j in open_cols if d[j] == best]
    free_ties = [j for j in ties if free[j]]
    return (free_ties or ties)[0]


@pytest.mark.parametrize("integral", [False, True])
def test_argmin_tie_rule_with_closed_sentinels(integral):
    rng = np.random.default_rng(11)
    for trial in range(400):
        m = int(rng.integers(1, 3 * K.BLOCK))
        if integral:
            d = rng.integers(-3, 4, m).astype(np.int64)
        else:  # values one ulp apart, -0.0 next to +0.0 is never produced by the kernel
            base = rng.integers(0, 3, m).astype(np.float64) + 0.6076905593623301
            d = np.where(rng.random(m) < 0.5, base, np.nextafter(base, 1.0))
            d[rng.random(m) < 0.05] = np.inf
        closed = rng.random(m) < (0.3 if trial % 10 else 1.0)
        free = rng.random(m) < 0.5
        ref = _reference(d, closed, free)
        dk = d.copy()
        dk.view(np.int64)[closed] = K.KEY_MIN if integral else K._CLOSED_BITS
        free_mask = np.where(free, K.KEY_MIN, K.KEY_MAX).astype(np.int64)
        assert _argmin(dk, free_mask, integral) == ref
