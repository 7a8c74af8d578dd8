"""Row caches under a memory budget: LFU and SLRU over fixed row slots (docs/algorithm.md §7).

Guthe & Thuerck 2021, §4: the solver only ever needs one cost row at a time; rows that do not fit
are recomputed on demand. A cache is itself a cost source (a ``NamedTuple`` registered with
``costfns.rows.cost_forms``) wrapping another one, so the one compiled solver loop is unchanged.

- **LFU**: access counts per row id for the whole solve (an evicted row keeps its count); the
  victim is the slot whose row has the lowest count (ties: higher row id); empty slots first.
- **SLRU**: a probationary and a protected segment (protected capacity ⌊E/2⌋). A miss replaces the
  probationary LRU slot (empty slots first) and puts it at the probationary MRU end; a hit in
  probationary promotes to the protected MRU end (demoting the protected LRU to the probationary MRU
  end when protected is full); a hit in protected moves it to the protected MRU end.

State arrays (E slots, n rows): ``slots`` (E, n2); in ``policy`` (``_Policy``): ``slot_row``
(E,), ``row_slot`` (n,), ``counts`` (n,), ``prev``/``nxt`` (E,) list links, ``seg`` (E,) segment
of a slot (0 probationary, 1 protected, -1 empty), ``heap``/``heap_pos`` (E,) the LFU min-heap of
filled slots keyed by (count of the slot's row, -row) and each slot's place in it, ``meta``
int64[8]: [policy, heads/tails of the two lists, protected size, protected capacity, filled
slots], ``hits`` int64[2]: [hits, misses].

Every operation is O(log E) or O(1) (a victim is never searched by scanning the slots): slots fill
in index order and are never emptied, so "empty slots first" is a counter; the LFU victim is the
heap's root.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, NamedTuple

import numpy as np
from numba import njit
from numba.typed import List as TypedList

from costfns.rows import cost_at, cost_forms, get_row, get_row_part
from ._sync import barrier, load_acquire, new_sync, request_abort

LFU, SLRU = 0, 1
POLICIES = {"lfu": LFU, "slru": SLRU}
# meta indices
_POLICY, _PH, _PT, _QH, _QT, _QSIZE, _QCAP, _FILLED = 0, 1, 2, 3, 4, 5, 6, 7  # P: probationary, Q: protected
# the queues' head and tail fields as int64, not literals: one compile of the list helpers serves
# both queues (a literal argument compiles a specialisation per value)
_PH64, _PT64, _QH64, _QT64 = (np.int64(f) for f in (_PH, _PT, _QH, _QT))


class _Policy(NamedTuple):
    """A cache's policy state: all that the LFU/SLRU code below reads and writes (no rows, no
    source). Every cache's ``_Policy`` has the same Numba type, so that code compiles once, not
    once per cost source type as it would inside ``CachedState`` (about 2.7 s each, cold)."""
    slot_row: np.ndarray
    row_slot: np.ndarray
    counts: np.ndarray
    prev: np.ndarray
    nxt: np.ndarray
    seg: np.ndarray
    heap: np.ndarray
    heap_pos: np.ndarray
    meta: np.ndarray
    hits: np.ndarray


class CachedState(NamedTuple):
    inner: Any
    slots: np.ndarray
    policy: _Policy
    limits: np.ndarray  # int64[2]: [largest |cost| allowed (0: no check), first row beyond + 1]


@njit(cache=True, nogil=True)
def _check_range(row, i, limits):
    """Integer rows are held to the range rule as they are computed (``limits[0]``, see
    ``epslap._validate.int_cost_limit``): the first row ``i`` beyond it is kept in ``limits[1]``
    (i + 1) for the host, which raises before the result is used."""
    lim = limits[0]
    if lim <= 0 or limits[1] != 0:
        return
    for j in range(row.shape[0]):
        if row[j] > lim or row[j] < -lim:
            limits[1] = i + 1
            return


@njit(cache=True, nogil=True)
def _unlink(s, k, head, tail):
    p, q = s.prev[k], s.nxt[k]
    if p >= 0:
        s.nxt[p] = q
    else:
        s.meta[head] = q
    if q >= 0:
        s.prev[q] = p
    else:
        s.meta[tail] = p
    s.prev[k] = -1
    s.nxt[k] = -1


@njit(cache=True, nogil=True)
def _push_mru(s, k, head, tail):
    """Append slot k at the MRU end (the tail) of a list."""
    t = s.meta[tail]
    s.prev[k] = t
    s.nxt[k] = -1
    if t >= 0:
        s.nxt[t] = k
    else:
        s.meta[head] = k
    s.meta[tail] = k


@njit(cache=True, nogil=True)
def _slru_hit(s, k):
    if s.seg[k] == 1:
        _unlink(s, k, _QH64, _QT64)
        _push_mru(s, k, _QH64, _QT64)
        return
    _unlink(s, k, _PH64, _PT64)
    if s.meta[_QCAP] == 0:  # E = 1: no protected segment
        _push_mru(s, k, _PH64, _PT64)
        return
    if s.meta[_QSIZE] >= s.meta[_QCAP]:
        lru = s.meta[_QH]
        _unlink(s, lru, _QH64, _QT64)
        s.seg[lru] = 0
        _push_mru(s, lru, _PH64, _PT64)
        s.meta[_QSIZE] -= 1
    s.seg[k] = 1
    _push_mru(s, k, _QH64, _QT64)
    s.meta[_QSIZE] += 1


@njit(cache=True, nogil=True, inline="always")
def _lfu_before(s, a, b):
    """Slot a is evicted before slot b: its row has a lower count (ties: the higher row id)."""
    ra, rb = s.slot_row[a], s.slot_row[b]
    ca, cb = s.counts[ra], s.counts[rb]
    return ca < cb or (ca == cb and ra > rb)


@njit(cache=True, nogil=True)
def _heap_swap(s, p, q):
    a, b = s.heap[p], s.heap[q]
    s.heap[p] = b
    s.heap[q] = a
    s.heap_pos[b] = p
    s.heap_pos[a] = q


@njit(cache=True, nogil=True)
def _heap_up(s, p):
    while p > 0:
        parent = (p - 1) // 2
        if not _lfu_before(s, s.heap[p], s.heap[parent]):
            return
        _heap_swap(s, p, parent)
        p = parent


@njit(cache=True, nogil=True)
def _heap_down(s, p):
    """Restore the heap below p after the key of its slot grew (a hit, or a new row at the root)."""
    size = s.meta[_FILLED]
    while True:
        c = 2 * p + 1
        if c >= size:
            return
        if c + 1 < size and _lfu_before(s, s.heap[c + 1], s.heap[c]):
            c += 1
        if not _lfu_before(s, s.heap[c], s.heap[p]):
            return
        _heap_swap(s, p, c)
        p = c


@njit(cache=True, nogil=True)
def _victim(s):
    """The slot to (re)fill for a missed row: an empty one first, else the policy's victim
    (for SLRU removed from its list; for LFU it stays at the heap's root)."""
    filled = s.meta[_FILLED]
    if filled < s.slot_row.shape[0]:
        return filled
    if s.meta[_POLICY] == LFU:
        return s.heap[0]
    k = s.meta[_PH]
    _unlink(s, k, _PH64, _PT64)
    return k


@njit(cache=True, nogil=True)
def _lookup(s, i):
    """One access to row ``i`` (``s``: a :class:`_Policy`): (its slot, whether the caller must
    fill the slot: a miss)."""
    s.counts[i] += 1
    k = s.row_slot[i]
    if k >= 0:
        s.hits[0] += 1
        if s.meta[_POLICY] == SLRU:
            _slru_hit(s, k)
        else:
            _heap_down(s, s.heap_pos[k])  # its row's count grew
        return k, False
    s.hits[1] += 1
    k = _victim(s)
    old = s.slot_row[k]
    if old >= 0:
        s.row_slot[old] = -1
    s.slot_row[k] = i
    s.row_slot[i] = k
    if old < 0:  # a new slot: it joins the heap / the lists
        s.meta[_FILLED] += 1
        if s.meta[_POLICY] == LFU:
            p = s.meta[_FILLED] - 1
            s.heap[p] = k
            s.heap_pos[k] = p
            _heap_up(s, p)
    elif s.meta[_POLICY] == LFU:
        _heap_down(s, s.heap_pos[k])  # the root got a new row
    if s.meta[_POLICY] == SLRU:
        s.seg[k] = 0
        _push_mru(s, k, _PH64, _PT64)
    return k, True


@njit(cache=True, nogil=True)
def replay(s, log, need):
    """Apply a device cache's access sequence to its policy state ``s`` (slots of width 0: the
    rows live on the device): every logged access is a hit; then, when ``need`` >= 0, the miss of
    row ``need``. Returns (slot to fill with ``need`` or -1, logged accesses that were not hits —
    0 unless the device and this state disagree)."""
    wrong = 0
    for t in range(log.shape[0]):
        k, miss = _lookup(s.policy, log[t])
        if miss:
            wrong += 1
    if need < 0:
        return -1, wrong
    k, miss = _lookup(s.policy, need)
    if not miss:
        wrong += 1
    return k, wrong


@njit(cache=True, nogil=True, inline="always")
def _into_slot(row, slot, i, limits):
    """A missed row's values into its slot (a source that filled ``slot`` needs no copy),
    then the range rule on them."""
    if row.ctypes.data != slot.ctypes.data:
        for j in range(slot.shape[0]):
            slot[j] = row[j]
    _check_range(slot, i, limits)


@njit(cache=True, nogil=True)
def access(s, i):
    """Slot holding row ``i`` after one access (computing the row on a miss)."""
    k, miss = _lookup(s.policy, i)
    if miss:
        slot = s.slots[k]
        _into_slot(get_row(s.inner, i, slot), slot, i, s.limits)
    return k


@njit(cache=True, nogil=True, inline="always")
def _cached_fill(s, i, buf):
    return s.slots[access(s, i)]


@njit(cache=True, nogil=True)
def _cached_part(s, i, lo, hi, buf):
    """Columns [lo, hi) of row ``i`` from a cache whose slots hold exactly those columns (one
    cache per solver thread; every thread sees the same access sequence, so the same hits)."""
    k, miss = _lookup(s.policy, i)
    slot = s.slots[k]
    if miss:
        # the inner source writes the part into buf[lo:hi]; a full-width slot (one thread) can
        # take the row directly
        row = get_row_part(s.inner, i, lo, hi, slot if slot.shape[0] == buf.shape[0] else buf)
        _into_slot(row, slot, i, s.limits)
    return slot


@njit(cache=True, nogil=True, inline="always")
def _cached_at(s, i, j):
    """One entry straight from the inner source (no cache access: hits and misses unchanged);
    only compiled where the inner source has random access (``costfns.rows``)."""
    return cost_at(s.inner, i, j)


cost_forms(entry=_cached_at, row=_cached_fill, part=_cached_part, wraps_inner=True)(CachedState)


class JoinedCaches(NamedTuple):
    """Whole rows assembled from per-thread caches of column slices (for the estimate and the
    final cost read-out). While helper threads serve it (:func:`serve_rows`), each slice is
    looked up — and on a miss computed — by its own thread: parallel row generation. One
    thread's cache is joined too (a list of one), so that the estimate's kernels compiled for
    a source serve every thread count, one included.

    The caches are held in a Numba typed list, not a tuple: a tuple's type names its length,
    and every thread count compiled the estimate's kernels anew (about 30 s each on a 2-core
    machine); the list's type does not (building it costs a process about 0.4 s once)."""

    caches: Any         # numba.typed.List of CachedState, one per column slice
    bounds: np.ndarray  # (T + 1,) int64 column bounds
    row: np.ndarray     # (n2,) the assembled row
    sync: np.ndarray    # barrier state shared with the helpers (epslap._sync)
    req: np.ndarray     # int64[3 + T]: [row requested (-1: stop), caller's barrier count,
    #                     serving?, then per helper t: req[3 + t] = 1 while it runs]


@njit(cache=True, nogil=True, inline="always")
def _fill_slice(s, t, i):
    lo = s.bounds[t]
    hi = s.bounds[t + 1]
    part = _cached_part(s.caches[t], i, lo, hi, s.row)
    dst = s.row[lo:hi]
    for j in range(hi - lo):  # a no-op when the inner source wrote s.row[lo:hi] itself
        dst[j] = part[j]


@njit(cache=True, nogil=True)
def _joined_fill(s, i, buf):
    nthreads = len(s.caches)
    if nthreads == 1:  # one thread's cache of every column: its row (a view of its slot)
        return _cached_part(s.caches[0], i, 0, s.row.shape[0], s.row)
    if s.req[2] == 0:  # no helpers: every slice here, in order
        for t in range(nthreads):
            _fill_slice(s, t, i)
        return s.row
    s.req[0] = i
    s.req[1] += 1
    # A helper that failed (a user's function raised there) aborts the barrier: once every
    # helper has left (none still writes its cache), this thread computes the slices itself, so
    # the same error is raised here (or the row comes out right)
    if not barrier(s.sync, nthreads, s.req[1]):   # helpers read the request
        _await_helpers_gone(s)
        for t in range(nthreads):
            _fill_slice(s, t, i)
        return s.row
    _fill_slice(s, 0, i)
    s.req[1] += 1
    if not barrier(s.sync, nthreads, s.req[1]):   # every slice is in s.row
        _await_helpers_gone(s)
        for t in range(1, nthreads):
            _fill_slice(s, t, i)
    return s.row


@njit(cache=True, nogil=True)
def _await_helpers_gone(s):
    """Wait until every helper thread has left ``_serve`` (``s.req[3 + t]``: helper t runs)."""
    for t in range(1, len(s.caches)):
        while load_acquire(s.req, 3 + t) != 0:
            pass


cost_forms(row=_joined_fill)(JoinedCaches)


@njit(cache=True, nogil=True)
def _serve(s, t):
    """Helper thread ``t`` >= 1: fill slice t of every requested row until the stop request."""
    nthreads = len(s.caches)
    gen = 0
    while True:
        gen += 1
        if not barrier(s.sync, nthreads, gen):
            return
        i = s.req[0]
        if i < 0:
            return
        _fill_slice(s, t, i)
        gen += 1
        if not barrier(s.sync, nthreads, gen):
            return


@njit(cache=True, nogil=True)
def _stop_serving(s):
    s.req[0] = -1
    s.req[1] += 1
    barrier(s.sync, len(s.caches), s.req[1])
    s.req[2] = 0


def join_caches(caches, bounds) -> JoinedCaches:
    n2 = int(bounds[-1])
    return JoinedCaches(TypedList(caches), np.asarray(bounds, np.int64),
                        np.empty(n2, caches[0].slots.dtype), new_sync(),
                        np.zeros(3 + len(caches), np.int64))


@contextmanager
def serve_rows(joined: JoinedCaches):
    """Run one helper thread per further slice while the block executes: every row requested
    through ``joined`` is then generated by all threads at once (two barriers per row)."""
    nthreads = len(joined.caches)
    if nthreads == 1:
        yield
        return
    joined.sync[:] = new_sync()  # barrier counts restart with the helpers' own
    joined.req[:3] = (0, 0, 1)
    errors: list[BaseException] = []

    def serve(t):
        try:
            _serve(joined, t)
        except BaseException as exc:  # a user's function raised in this helper
            errors.append(exc)
            request_abort(joined.sync)  # no thread waits for this one any longer
        finally:
            joined.req[3 + t] = 0  # gone: the solver's thread may now fill slice t itself

    joined.req[3:] = 0
    joined.req[4:] = 1  # helpers 1 … T-1 run
    helpers = [threading.Thread(target=serve, args=(t,), daemon=True, name=f"epslap-rows-{t}")
               for t in range(1, nthreads)]
    for h in helpers:
        h.start()
    try:
        yield
    except BaseException:
        request_abort(joined.sync)  # the block stopped between a row's barriers: release all
        raise
    finally:
        _stop_serving(joined)
        for h in helpers:
            h.join()
    if errors:
        raise errors[0]


def make_cache(inner_state, n_rows: int, n_cols: int, capacity: int, policy: str, dtype,
               int_limit: int = 0) -> CachedState:
    """A cache of ``capacity`` row slots over ``inner_state`` (a cost source's compiled state).
    ``int_limit`` > 0: integer rows must keep |cost| <= int_limit (see :func:`out_of_range`)."""
    if capacity < 1:
        raise ValueError(f"cache capacity must be at least one row, got {capacity}")
    if policy not in POLICIES:
        raise ValueError(f"cache must be one of 'auto', 'lfu', 'slru'; got {policy!r}")
    capacity = int(min(capacity, max(n_rows, 1)))
    meta = np.full(8, -1, np.int64)
    meta[_POLICY] = POLICIES[policy]
    meta[_QSIZE] = 0
    meta[_QCAP] = capacity // 2
    meta[_FILLED] = 0
    policy_state = _Policy(np.full(capacity, -1, np.int64), np.full(n_rows, -1, np.int64),
                           np.zeros(n_rows, np.int64), np.full(capacity, -1, np.int64),
                           np.full(capacity, -1, np.int64), np.full(capacity, -1, np.int64),
                           np.full(capacity, -1, np.int64), np.full(capacity, -1, np.int64), meta,
                           np.zeros(2, np.int64))
    return CachedState(inner_state, np.empty((capacity, n_cols), dtype), policy_state,
                       np.array([int_limit, 0], np.int64))


def out_of_range(caches) -> int:
    """The first row (in computing order) of any of ``caches`` that broke the integer range
    rule, or -1."""
    bad = [int(c.limits[1]) - 1 for c in caches if c.limits[1] != 0]
    return bad[0] if bad else -1
