"""Solving a cost source: orient, choose table or row cache under the memory budget, solve."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from ._api import empty_solve, finish
from .cache import make_cache, parse_memory
from .cpu._rows import get_row
from .cpu.solver import assigned_costs, solve_rows

DEFAULT_MEMORY = "2GiB"
_ROW_DTYPES = (np.float64, np.float32, np.int64, np.int32)


class _NegatedState(NamedTuple):
    inner: object


@njit(cache=True, nogil=True, inline="always")
def _negated_fill(s, i, buf):
    row = get_row(s.inner, i, buf)
    for j in range(buf.shape[0]):
        buf[j] = -row[j]
    return buf


_NegatedState._fill_row = _negated_fill


def _hit_rate_text(state):
    """Live cache hit rate for the progress bar (the kernel updates ``state.hits`` in place)."""
    hits = getattr(state, "hits", None)
    if hits is None:
        return None

    def text() -> str:
        h, m = int(hits[0]), int(hits[1])
        return f"cache hits {h / (h + m):.1%}" if h + m else "cache hits -"
    return text


def _raise_pending(source) -> None:
    """A Python cost function that raised inside the compiled solve: surface its exception."""
    pending = getattr(source, "raise_pending", None)
    if pending is not None:
        pending()


def solve_source(source, *, maximize, epsilon, memory, cache, progress, t_start):
    """Solve a ``costfns.CostSource`` on the CPU (see :func:`epslap.solve`)."""
    n1, n2 = source.shape
    transposed = n1 > n2
    if transposed:
        source = source.transpose()
        n1, n2 = n2, n1
    dtype = np.dtype(source.dtype)
    if dtype not in _ROW_DTYPES:
        raise ValueError(f"cost source dtype must be float64, float32, int64 or int32, got {dtype}")
    integral = dtype.kind == "i"
    if cache not in ("auto", "lfu", "slru"):
        raise ValueError(f"cache must be one of 'auto', 'lfu', 'slru'; got {cache!r}")
    budget = parse_memory(DEFAULT_MEMORY if memory is None else memory)
    row_bytes = n2 * dtype.itemsize
    cache_info: dict = {}
    if n1 * row_bytes <= budget:
        state = source.dense()
        if not integral and state.size and (np.isnan(state).any() or np.isneginf(state).any()):
            raise ValueError("matrix contains invalid numeric entries (NaN or -inf produced by "
                             "the cost source)")
        cache_info = dict(cache_policy="table", cache_rows=n1)
        inner = state
    else:
        capacity = budget // max(row_bytes, 1)
        if capacity < 1:
            raise ValueError(f"memory budget of {budget} bytes is smaller than one cost row "
                             f"({row_bytes} bytes for {n2} columns of {dtype}); raise memory")
        policy = cache if cache != "auto" else ("lfu" if 4 * capacity >= n1 else "slru")
        inner = make_cache(source.state(), n1, n2, capacity, policy, dtype)
        cache_info = dict(cache_policy=policy, cache_rows=int(inner.slots.shape[0]))
    if maximize:
        inner = _NegatedState(inner)
    if n1 == 0:
        row_to_col, v, _, stats = empty_solve(n2, integral, "cpu")
    else:
        extra = _hit_rate_text(inner.inner if maximize else inner)
        try:
            row_to_col, v, stats = solve_rows(inner, n1, n2, dtype, integral=integral,
                                              epsilon=epsilon, progress=progress,
                                              progress_extra=extra)
        finally:
            _raise_pending(source)
    assigned = assigned_costs(inner, n2, dtype, row_to_col, v.dtype)
    _raise_pending(source)
    stats.update(cache_info)
    cached = inner.inner if maximize else inner
    if hasattr(cached, "hits"):
        stats.update(cache_hits=int(cached.hits[0]), cache_misses=int(cached.hits[1]))
    else:
        stats.update(cache_hits=0, cache_misses=0)
    return finish((n1, n2), transposed, integral, row_to_col, v, assigned, stats, maximize,
                  t_start)
