"""Host-side plumbing of cost sources that both backends use: the default row budget, the
negation of a maximisation, and the errors that compiled code can only record (a Python cost
function's exception, an integer row beyond the range rule), raised on the host."""
from __future__ import annotations

from typing import NamedTuple

from numba import njit

from costfns.rows import cost_at, cost_forms, get_row, get_row_part

from ._validate import check_int_range
from .cache import out_of_range

DEFAULT_MEMORY = "2GiB"


@njit(cache=True, nogil=True, inline="always")
def _negated_fill(s, i, buf):
    row = get_row(s.inner, i, buf)
    for j in range(buf.shape[0]):
        buf[j] = -row[j]
    return buf


@njit(cache=True, nogil=True, inline="always")
def _negated_part(s, i, lo, hi, buf):
    row = get_row_part(s.inner, i, lo, hi, buf)
    out = buf[lo:hi]
    for j in range(hi - lo):  # in place when the inner source wrote buf[lo:hi] itself
        out[j] = -row[j]
    return out


@njit(cache=True, nogil=True, inline="always")
def _negated_at(s, i, j):
    return -cost_at(s.inner, i, j)


@cost_forms(entry=_negated_at, row=_negated_fill, part=_negated_part, wraps_inner=True)
class NegatedState(NamedTuple):
    """The costs of ``inner`` negated (a maximisation solved as a minimisation)."""

    inner: object


def raise_pending(source) -> None:
    """A Python cost function that raised inside the compiled solve: surface its exception."""
    pending = getattr(source, "raise_pending", None)
    if pending is not None:
        pending()


def raise_out_of_range(source, caches, shape) -> None:
    """An integer row beyond the range rule, seen by a row cache: the array path's error."""
    i = out_of_range(caches)
    if i >= 0:
        row = source.row(i)
        check_int_range(row.min(), row.max(), shape)
