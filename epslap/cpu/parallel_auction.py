"""One ε-phase of the sparse auction on several CPU threads, without locks.

The Gauss–Seidel auction (``cpu.sparse.auction``) bids for one free row at a time; a bid that
takes a column frees its owner, which bids next, so a phase's last free rows make long chains
of bids. Those chains mostly lie in different parts of the problem, and here each thread runs
its own share of the free rows and the chains they start, reading and writing the prices and
the assignment with plain loads and stores. Two threads that bid for one column at the same
moment may both think they hold it, or lower its price by one step instead of two: nothing
here is trusted (a stale read may even raise a price a little). Afterwards :func:`mend` keeps
every column with one owner that points back to it and frees the rest, and the sequential
auction assigns the rows left free, so the phase ends as a sequential one does: every row
assigned, though some pair may lie more than ε from its row's minimum. The auction only sets
prices for the exact pass that follows (``epslap.sparse``), whose result does not depend on
them; a race can cost bids, never the answer.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .._sync import new_sync, run_workers
from .sparse import auction, best_two

#: free rows below which a phase runs on one thread (``cpu.sparse.auction``): the GPU's auction
#: hands the host phases with 64 rows free (``gpu.candidates.AUCTION_HOST_BELOW``)
PARALLEL_MIN = 32


@njit(cache=True, nogil=True)
def auction_share(indptr, indices, data, v, row_to_col, col_to_row, eps, jump, max_bids, big,
                  rows, queue, out):
    """One thread's share: bids for ``rows`` (free on entry) and for the rows their bids free,
    until none is left or ``max_bids``; ``out[0]`` the bids, -1 where a row stores no pair.
    ``queue``: this thread's ring of rows to bid for (a row it cannot hold is left free)."""
    cap = queue.size
    size = 0
    for r in range(rows.size):
        queue[r] = rows[r]
        size += 1
    head = 0
    bids = 0
    while size > 0 and bids < max_bids:
        i = queue[head]
        head += 1
        if head == cap:
            head = 0
        size -= 1
        if row_to_col[i] >= 0:  # taken by another thread's bid meanwhile
            continue
        arg, best, second = best_two(indptr, indices, data, v, i, big)
        if arg < 0:
            out[0] = -1
            return
        step = (second - best) if second < big else jump
        v[arg] -= step + eps
        prev = col_to_row[arg]
        col_to_row[arg] = i
        row_to_col[i] = arg
        bids += 1
        if prev >= 0 and prev != i:
            row_to_col[prev] = -1
            if size < cap:
                tail = head + size
                if tail >= cap:
                    tail -= cap
                queue[tail] = prev
                size += 1
    out[0] = bids


@njit(cache=True, nogil=True)
def mend(row_to_col, col_to_row):
    """Keep each pair that both sides name; free every row and column that names a partner
    who does not name it back. Returns the rows left free."""
    for j in range(col_to_row.size):
        i = col_to_row[j]
        if i >= 0 and row_to_col[i] != j:
            col_to_row[j] = -1
    free = 0
    for i in range(row_to_col.size):
        j = row_to_col[i]
        if j >= 0 and col_to_row[j] != i:
            row_to_col[i] = -1
        if row_to_col[i] < 0:
            free += 1
    return free


def parallel_auction(threads: int):
    """``cpu.sparse.auction`` (same arguments and result, without its stop flag) with each
    phase's free rows shared among ``threads`` threads (module docstring); one thread, or fewer
    than PARALLEL_MIN free rows, run the sequential auction itself."""
    never = np.zeros(1, np.int64)  # (the stop flag the sequential auction reads: never set)

    def phase(indptr, indices, data, v, row_to_col, col_to_row, eps, jump, max_bids, big):
        free = np.flatnonzero(row_to_col < 0)
        if threads < 2 or free.size < PARALLEL_MIN:
            return auction(indptr, indices, data, v, row_to_col, col_to_row, eps, jump,
                           max_bids, big, never)
        shares = np.array_split(free, threads)  # contiguous labels: each thread its own part
        out = np.zeros((threads, 1), np.int64)
        share_bids = np.int64(max_bids // threads)

        def args_of(t):
            return (indptr, indices, data, v, row_to_col, col_to_row, eps, jump, share_bids,
                    big, shares[t], np.empty(row_to_col.size, np.int64), out[t])
        run_workers(auction_share, args_of, threads, new_sync())
        if (out < 0).any():
            return -1
        mend(row_to_col, col_to_row)
        done = int(out.sum())
        rest = auction(indptr, indices, data, v, row_to_col, col_to_row, eps, jump,
                       np.int64(max(0, max_bids - done)), big, never)
        return -1 if rest < 0 else done + rest
    return phase
