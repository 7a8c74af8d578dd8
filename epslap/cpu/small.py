"""The small path's entry from Python (the compiled path itself: :mod:`epslap.cpu.jv`): which
problems take it, its compiled entry per dtype (or, before a compile pays, its vector form in
NumPy: :mod:`epslap.cpu.jv_numpy`), its statuses as the ε path's errors, and its result as a
:class:`~epslap.Solution` or a scipy pair. A tiny problem's time is mostly these calls."""
from __future__ import annotations

import time

import numba
import numpy as np

from .._schedule import rectangular_from_zero
from .._status import raise_for_status
from .._validate import as_matrix, check_before_compile, check_float_range, check_int_matrix_range
from ..solution import Solution, assemble
from . import jv_numpy
from .compile_ahead import on_disk
from .jv import NEEDS_EPSILON, OUT_OF_RANGE, solve_small


#: square problems up to this many columns take this path. One thread, 2 vCPU, against the
#: ε-passes, it is faster up to n = 1000 on random, geometric, sanity and integer costs
#: (geometric 14.9 against 18.4 ms at n = 1000, 51 against 49 ms at n = 1500; random 4.7
#: against 13.4 ms at n = 1000, crossing near n = 2000-3000); low-rank and disjoint costs leave
#: it for the ε path after ROW_BUDGET rows per row
MAX_SQUARE = 1024
#: nearly square rectangular problems (fewer than n2/16 extra columns) up to this many columns
#: take this path (1000 x 1010 random: 22 ms here against 14 ms on the ε-passes)
MAX_NEAR_SQUARE = 512


#: ``candidates="auto"`` looks at square float matrices from this many columns
#: (``epslap.candidates.AUTO_MATRIX_MIN_SIDE`` for the others: MAX_SQUARE + 1), so that those
#: from here to MAX_SQUARE leave this path for its sample and, where taken, the candidates.
#: One thread, 2 vCPU, best of 7: random 850 and 1000 0.90x and 0.75x this path's time,
#: geometric 0.47x and 0.27x, declined classes 0.86-1.16x (sanity 1000 1.12x: its 2 ms solve
#: pays the 0.1-0.2 ms sample); random 700 0.86-1.08x, integer 850 1.31x (integers stay), and
#: nearly square ones gain nothing (860 x 960 random 1.17x, geometric 1.29x; 900 x 1000 0.87-1.03x).
#: Float matrices whose cheapest costs tie stay too (``candidates.AUTO_TIES_MAX``), and so do
#: those of a process that answers this path's calls without compiling (:func:`renting`)
AUTO_FLOAT_FROM = 850

#: a matrix with both sides at most this takes this path without a call of :func:`applies`
#: (whose rule it satisfies): the per-call shortcut of the public entry points
QUICK_SIDE = MAX_NEAR_SQUARE


def applies(n1: int, n2: int) -> bool:
    """Whether a dense canonical problem (n1 <= n2) takes this path: small square ones, and
    rectangular ones with at least n2/16 more columns than rows, which the ε-passes would pad
    with that many virtual rows. Nearly square ones stay with the ε-passes (2 vCPU, 2000 rows,
    geometric costs: 2050 columns 0.27 s here against 0.08 s there, 2200 columns 0.045 s against
    0.070 s, 3000 columns 0.023 s against 2.0 s)."""
    return (n2 <= MAX_NEAR_SQUARE or (n1 == n2 and n2 <= MAX_SQUARE)
            or rectangular_from_zero(n1, n2))


def takes(n1: int, n2: int, threads) -> bool:
    """Whether a non-empty matrix of n1 x n2 (either orientation) takes this path when
    ``threads`` are asked for: where it :func:`applies`, on one thread, and for a rectangular
    one with many spare columns with any thread count (the ε-passes would pad it)."""
    lo, hi = (n1, n2) if n1 <= n2 else (n2, n1)
    return lo > 0 and applies(lo, hi) and (threads is None or threads == 1
                                           or rectangular_from_zero(lo, hi))


#: the dtypes ``solve_small`` is compiled for -> its compiled entry point, once compiled
_ENTRIES: dict = {np.dtype(t): None for t in (np.float64, np.float32, np.int64, np.int32)}


def _kernel_matrix(arr: np.ndarray, maximize: bool) -> np.ndarray:
    """``arr`` (a validated matrix, see ``_validate.as_matrix``) as a C-contiguous, aligned,
    writeable, native matrix of a dtype ``solve_small`` is compiled for: float16 widens to
    float32 and other integers to int64 (both exact; uint64 beyond int64 is refused by the
    range rule), int32 to int64 when maximising (-(-2**31) has no int32)."""
    arr = as_matrix(arr)
    dtype = arr.dtype
    if dtype.kind == "f":
        dtype = np.dtype(np.float32 if dtype.itemsize <= 4 else np.float64)
    elif dtype.kind == "u" and dtype.itemsize == 8 and arr.size and int(arr.max()) >= 2**63:
        check_int_matrix_range(arr, maximize)
    elif dtype.kind in "biu" and (dtype != np.int32 or maximize):
        dtype = np.dtype(np.int64)
    return np.require(arr, dtype.newbyteorder("="), ["C", "A", "W"])


def _entry(m: np.ndarray):
    """(compiled ``solve_small`` for ``m``'s type, compile seconds): the overload is called
    directly, without the dispatcher's typing of its arguments; ``m`` must be what
    ``_kernel_matrix`` returns (the type it was compiled for)."""
    t0 = time.perf_counter()
    sig = _signature(m)
    solve_small.compile(sig)
    entry = solve_small.overloads[sig].entry_point
    _ENTRIES[m.dtype] = entry
    return entry, time.perf_counter() - t0


def _raise(status: int, arr: np.ndarray, maximize: bool) -> None:
    """The exception of a failed ``solve_small`` (the messages of the ε path); returns for
    NEEDS_EPSILON."""
    if status == NEEDS_EPSILON:
        return
    if status == OUT_OF_RANGE and arr.dtype.kind == "f":
        check_float_range(arr, arr.shape)
    if status == OUT_OF_RANGE:
        check_int_matrix_range(arr, maximize)
    raise_for_status(status, "cpu")


_INT32 = np.dtype(np.int32)
#: ``solve_small``'s duals argument when none are asked for: empty, of the work dtype of each
#: dtype of ``_ENTRIES``
_NO_DUALS = {t: np.empty(0, np.int64 if t.kind == "i" else np.float64) for t in _ENTRIES}
_INT64 = np.dtype(np.int64)
_FLOAT64 = np.dtype(np.float64)


def _signature(m: np.ndarray) -> tuple:
    """The types ``solve_small`` is compiled for with the matrix ``m`` (``_kernel_matrix``'s)."""
    work = np.int64 if m.dtype.kind == "i" else np.float64
    return (numba.typeof(m), numba.types.boolean, numba.typeof(np.empty(0, np.int64)),
            numba.typeof(np.empty(0, work)))


#: (kernel, signature) that Numba's disk cache did not hold when this process looked (a look
#: costs about a millisecond: the first calls' vector form looks once)
_NOT_ON_DISK: set = set()


def _on_disk(dispatcher, sig) -> bool:
    """``compile_ahead.on_disk``, remembered where it says no (asking the cache itself,
    ``load_overload``, would cost the first call 1.5 s of Numba's target set-up)."""
    if (dispatcher, sig) in _NOT_ON_DISK:
        return False
    held = on_disk(dispatcher, sig)
    if not held:
        _NOT_ON_DISK.add((dispatcher, sig))
    return held


def leaves_early(n1: int, n2: int, dtype: np.dtype) -> bool:
    """Whether a matrix of this shape and dtype leaves this path for ``"auto"``'s sample before
    MAX_SQUARE (``candidates.candidates_per_row`` looks at it; the drop-in's shortcut,
    :func:`small_assignment`, passes it on): a square float one from AUTO_FLOAT_FROM, unless
    this process still rents the vector form (:func:`renting`)."""
    return n1 == n2 >= AUTO_FLOAT_FROM and dtype.kind == "f" and not renting(dtype)


def renting(dtype: np.dtype) -> bool:
    """Whether this process answers the small path's calls on a float matrix of ``dtype`` with
    the vector form now (no kernel compiled here or on disk, and the rental still running):
    then a square float matrix from AUTO_FLOAT_FROM stays on this path, whose first calls in a
    fresh environment compile nothing, instead of compiling the candidates' kernels."""
    kernel_dtype = np.dtype(np.float32 if dtype.itemsize <= 4 else np.float64)
    if (_ENTRIES[kernel_dtype] is not None or kernel_dtype in _SEEN_ON_DISK
            or not jv_numpy.rent_pays()):
        return False
    if _on_disk(solve_small, _signature(np.empty((1, 1), kernel_dtype))):
        _SEEN_ON_DISK.add(kernel_dtype)  # (a look at the cache's index: 0.3 ms a call)
        return False
    return True


#: the kernel dtypes whose compiled small path :func:`renting` found in Numba's disk cache
_SEEN_ON_DISK: set = set()


def _prepare(arr: np.ndarray, maximize: bool):
    """(matrix, entry, compile seconds) for a matrix the entries do not take as it is, or whose
    dtype has no entry yet. Before this process has compiled the kernel, and where Numba's disk
    cache does not hold it, the entry is ``jv_numpy.solve_small`` (no compile) for as long as
    the ski rental of that module says."""
    m = arr
    entry = _ENTRIES.get(arr.dtype) if arr.flags.carray else None
    if entry is None or (maximize and arr.dtype == _INT32):
        m = _kernel_matrix(arr, maximize)
        entry = _ENTRIES[m.dtype]
    if entry is not None:
        return m, entry, 0.0
    check_before_compile(m, maximize)
    if jv_numpy.rent_pays() and not _on_disk(solve_small, _signature(m)):
        return m, jv_numpy.solve_small, 0.0
    entry, compile_s = _entry(m)
    return m, entry, compile_s


#: the stats of every small-path solve, copied and completed per call (cheaper than a literal)
_STATS = {"backend": "cpu", "method": "jv", "rows_evaluated": 0, "passes": 1, "epsilons": None,
          "eps_upper": 0.0, "eps_lower": 0.0, "time_estimate_s": 0.0, "time_solve_s": 0.0,
          "compile_s": 0.0, "threads": 1, "certified_by_estimate": False, "polish_rows": 0,
          "n_rows": 0, "n_cols": 0, "transposed": False, "maximize": False,
          "time_total_s": 0.0, "compiled": True}


def small_solution(arr: np.ndarray, maximize: bool, t_start: float) -> Solution | None:
    """The small path's :class:`Solution` of a non-empty matrix ``arr`` (2-D, numeric, the
    caller's orientation and sign; ``applies`` holds), or None where the ε path must solve.
    Raises as the ε path does. The common case (a C-contiguous float64/float32/int64/int32
    matrix whose entry is compiled) runs straight through: this is a tiny problem's whole
    Python overhead."""
    m = arr
    compile_s = 0.0
    entry = _ENTRIES.get(arr.dtype) if arr.flags.carray else None
    if entry is None or (maximize and arr.dtype == _INT32):
        m, entry, compile_s = _prepare(arr, maximize)
    n_rows, n_cols = arr.shape
    k = n_rows if n_rows < n_cols else n_cols
    xs = np.empty(2 * k, _INT64)  # dtype objects: np.empty converts a type on every call
    integral = m.dtype.kind == "i"
    duals = np.empty(n_rows + n_cols, _INT64 if integral else _FLOAT64)
    t0 = time.perf_counter()
    status, total, reads, polish_rows = entry(m, maximize, xs, duals)
    t1 = time.perf_counter()
    if status:
        return _raise(status, arr, maximize)
    stats = _STATS.copy()
    stats["rows_evaluated"] = reads
    stats["epsilons"] = [0.0]
    stats["time_solve_s"] = t1 - t0
    stats["compile_s"] = compile_s
    stats["polish_rows"] = polish_rows
    stats["n_rows"] = n_rows
    stats["n_cols"] = n_cols
    stats["transposed"] = n_rows > n_cols
    stats["maximize"] = maximize
    stats["time_total_s"] = time.perf_counter() - t_start
    if entry is jv_numpy.solve_small:  # the first calls' vector form (no kernel compiled)
        stats["compiled"] = False
    return assemble(xs[:k], xs[k:], int(total) if integral else float(total), duals[:n_rows],
                    duals[n_rows:], stats)


def small_assignment(arr: np.ndarray, maximize: bool):
    """``(row_ind, col_ind)`` of :func:`small_solution` (the same assignment) for an ndarray,
    without the rest of the result; None where this path does not take it (not 2-D, empty,
    too large) or the ε path must solve. Raises as the ε path does. Written for the common
    case's few hundred nanoseconds: no duals are copied out and nothing else is built."""
    if arr.ndim != 2:
        return None
    n_rows, n_cols = arr.shape
    if not (0 < n_rows <= QUICK_SIDE and 0 < n_cols <= QUICK_SIDE) and (
            not takes(n_rows, n_cols, None) or leaves_early(n_rows, n_cols, arr.dtype)):
        return None
    m = arr
    entry = _ENTRIES.get(arr.dtype) if arr.flags.carray else None
    if entry is None or (maximize and arr.dtype == _INT32):
        m, entry, _ = _prepare(arr, maximize)
    k = n_rows if n_rows < n_cols else n_cols
    xs = np.empty(2 * k, _INT64)
    status = entry(m, maximize, xs, _NO_DUALS[m.dtype])[0]
    if status:
        return _raise(status, arr, maximize)
    return xs[:k], xs[k:]
