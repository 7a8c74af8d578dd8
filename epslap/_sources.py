"""Host-side plumbing of cost sources that both backends use: the default row budget, the
negation of a maximisation, and the errors that compiled code can only record (a Python cost
function's exception, an integer row beyond the range rule), raised on the host."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from costfns.rows import cost_at, cost_forms, get_row, get_row_part

from ._validate import check_int_range, int_cost_limit
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


def negates_inside(state) -> bool:
    """Whether a cost state negates its own costs (a ``negate`` field: a built-in class's erased
    state, a Python function's): a maximisation then keeps the kernels compiled for its type,
    where any other state is wrapped in :class:`NegatedState`, a type of its own."""
    return "negate" in getattr(type(state), "_fields", ())


def negated(state):
    """``state``'s costs negated: in its own type where it :func:`negates_inside`, else
    behind :class:`NegatedState`."""
    return state._replace(negate=True) if negates_inside(state) else NegatedState(state)


def raise_pending(source) -> None:
    """A Python cost function that raised inside the compiled solve: surface its exception."""
    pending = getattr(source, "raise_pending", None)
    if pending is not None:
        pending()


def int_row_limit(shape, dtype, maximize: bool) -> int:
    """The largest |cost| a row cache lets through for integer costs of ``dtype``: the range
    rule, and for a maximised int32 source also 2**31 - 1 (the negation of -2**31 does not fit
    the int32 rows: it would wrap to itself)."""
    limit = int_cost_limit(shape)
    if maximize and np.dtype(dtype) == np.int32:
        limit = min(limit, 2**31 - 1)
    return limit


def int32_negation_error(row: int) -> ValueError:
    """The error of a maximised int32 cost source whose ``row`` holds -2**31."""
    return ValueError(f"maximize=True: row {row} of this int32 cost source holds -2**31, "
                      "whose negation int32 cannot hold; pass the costs as int64")


def raise_out_of_range(source, caches, shape, maximize: bool = False) -> None:
    """An integer row beyond the range rule, seen by a row cache: the array path's error (and
    for a maximised int32 source holding -2**31, which int32 cannot negate, an error that
    says so)."""
    i = out_of_range(caches)
    if i >= 0:
        row = source.row(i)
        if maximize and row.dtype == np.int32 and row.min() == np.iinfo(np.int32).min:
            raise int32_negation_error(i)
        check_int_range(row.min(), row.max(), shape)
