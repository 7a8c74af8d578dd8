"""Input normalisation at the edge: validate once, then hand the core the canonical problem.

Canonical problem: a C-contiguous 2-D array with ``n1 <= n2`` (transposed if needed), minimised
(negated if ``maximize``), dtype float64, float32, int64 or int32, with no NaN and no -inf.
Error messages for dense input are scipy's, so ``linear_sum_assignment`` is a drop-in.
"""
from __future__ import annotations

import math
import numbers
import os
import re
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from numba import njit

from costfns import CostSource

from ._status import STATUS_INFEASIBLE, STATUS_INVALID, raise_for_status
from ._sync import new_sync, run_workers
from .sparse_input import is_sparse

#: Largest |cost| times (4·n + 8) that keeps every potential and path length inside int64.
_INT_LIMIT = 2**62


@dataclass(frozen=True)
class CanonicalDense:
    matrix: np.ndarray  # (n1, n2), n1 <= n2, C-contiguous, minimised
    transposed: bool
    integral: bool


class Problem(NamedTuple):
    """A cost as ``solve`` checked it at the entry (:func:`problem_of`); nothing below checks
    its form again. ``form``: ``"matrix"`` (a 2-D numeric NumPy array), ``"device"`` (a 2-D
    numeric CuPy array, GPU backends), ``"source"`` (a ``costfns.CostSource``) or
    ``"sparse"`` (stored pairs, ``epslap.sparse``). Its values (NaN, range rules) are checked
    by the method that reads them."""
    cost: Any
    form: str
    maximize: bool


class Options(NamedTuple):
    """``solve``'s options as the entry checked them: ``limit`` the finite cost limit (or
    None), ``carry`` the ``checkpoint.Checkpointing`` of a warm start or checkpoints (or None),
    ``launch`` the resolved ``gpu.LaunchConfig`` of the GPU backends (None on the CPU)."""
    backend: str = "cpu"
    epsilon: bool = True
    memory: Any = None
    cache: str = "auto"
    threads: int | None = None
    progress: bool = False
    device: Any = 0
    launch: Any = None
    limit: Any = None
    candidates: Any = "auto"
    init: Any = None
    carry: Any = None

    @property
    def continued(self) -> bool:
        """A cost limit, a warm start or checkpoints: the dense method's options."""
        return self.limit is not None or self.carry is not None


def form_of(cost, backend: str) -> str:
    """What ``cost`` is (the ``form`` of its :class:`Problem`), without looking at its values:
    a cost source, stored pairs, a GPU array (GPU backends) or anything else, read as a matrix.
    A GPU array other than CuPy's is refused with a clear error."""
    if isinstance(cost, CostSource):
        return "source"
    if is_sparse(cost):
        return "sparse"
    if backend != "cpu" and is_device_array(cost):
        if not any(k.__module__.partition(".")[0] == "cupy" for k in type(cost).__mro__):
            raise TypeError(f"a GPU array of type {type(cost).__name__} is not a CuPy array: "
                            "pass cupy.asarray(cost) (no copy on the device)")
        return "device"
    return "matrix"


def problem_of(cost, form: str, maximize: bool) -> Problem:
    """``cost`` of that ``form`` (:func:`form_of`) as a :class:`Problem`: a matrix's shape and
    dtype checked (scipy's errors), a nested list made an array."""
    if form == "matrix":
        cost = as_matrix(cost)
    elif form == "device":
        check_device_matrix(cost)
    return Problem(cost, form, maximize)


def is_device_array(cost) -> bool:
    """A GPU array (CuPy, or anything else with the CUDA array interface)."""
    return hasattr(cost, "__cuda_array_interface__") and not isinstance(cost, np.ndarray)


def array_module(a):
    """The array module of ``a``: NumPy, or CuPy for a device array."""
    if is_device_array(a):
        import cupy
        return cupy
    return np


def check_device_matrix(cost) -> None:
    """A CuPy input's shape and dtype errors (a matrix of bools, integers or floats), in the
    words of :func:`as_matrix`'s for a NumPy one."""
    if cost.ndim != 2:
        raise ValueError(f"expected a matrix (2-D array), got a {cost.ndim}-D array")
    if cost.dtype.kind not in "biuf":
        raise TypeError(f"Cannot cast array data from {cost.dtype!r} to dtype('float64') "
                        "according to the rule 'safe'")


def output_path_problem(path) -> str | None:
    """Why a file cannot be written at ``path`` (its folder is missing, or it is a folder),
    said before any work; None where it can. The CLI's outputs and ``checkpoint=`` ask it."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        return f"folder {folder} does not exist"
    if os.path.isdir(path):
        return "is a folder (give a file name in it)"
    return None


def float_kind(dtype: np.dtype) -> np.dtype | None:
    """The native float dtype the solvers compute a float ``dtype`` in (float16 widens to
    float32, exactly; either byte order: a big-endian file's matrix is read as scipy reads it),
    or None for one they do not take (extended precision)."""
    if dtype.kind != "f":
        return None
    size = dtype.itemsize
    if size == 8:
        return np.dtype(np.float64)
    if size in (2, 4):
        return np.dtype(np.float32)
    return None


def as_matrix(cost) -> np.ndarray:
    """``np.asarray`` with scipy's type and shape errors."""
    if is_device_array(cost):
        raise TypeError("a GPU array was given to the CPU backend: pass backend='gpu' or "
                        "copy it to the host first (cupy.asnumpy)")
    if cost is None:  # scipy's error for it (np.asarray makes it a 0-D object array)
        raise ValueError("expected a matrix (2-D array), got a 0-D array")
    try:
        arr = np.asarray(cost)
    except ValueError as exc:  # rows of different lengths
        raise ValueError(f"expected a matrix (2-D array): {exc}") from None
    if arr.dtype.kind == "f" and float_kind(arr.dtype) is None:
        raise TypeError(f"{arr.dtype} (extended precision) costs are not solved as such: "
                        "convert them to float64 (or float32)")
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"Cannot cast array data from {arr.dtype!r} to dtype('float64') "
                        "according to the rule 'safe': the cost must be a numeric array "
                        "(bool, integer or float)")
    if arr.ndim != 2:
        raise ValueError(f"expected a matrix (2-D array), got a {arr.ndim}-D array")
    return arr


def canonical_dense(cost, maximize: bool, check_values: bool = True,
                    threads: int = 1) -> CanonicalDense:
    """Validate and orient a dense cost matrix; see the module docstring.

    ``check_values=False`` leaves a float matrix's NaN/-inf test and range rule to the caller
    (the CPU solver's estimate and the candidate pass read every entry anyway and report them;
    the GPU checks after the upload). ``threads``: threads for the one sweep that checks and
    narrows a C-contiguous int64/int32 matrix.
    """
    arr = as_matrix(cost)
    integral = arr.dtype.kind in "biu"
    if integral:
        arr = _integer_matrix(arr, maximize, threads)
    else:
        arr = arr.astype(float_kind(arr.dtype), copy=False)
        if maximize:
            arr = -arr
        if check_values:
            check_float_matrix(arr)
    transposed = arr.shape[0] > arr.shape[1]
    if transposed:
        arr = arr.T
    return CanonicalDense(read_only_view(np.ascontiguousarray(arr)), transposed, integral)


def read_only_view(m: np.ndarray) -> np.ndarray:
    """``m``, or a read-only view of it: the kernels read a matrix and never write it, and
    Numba compiles a kernel once for read-only and once for writeable arrays. Every matrix
    handed over read-only, a matrix loaded read-only (``np.load(..., mmap_mode="r")``, the CLI's
    ``.npy``) and one built in memory share one set of kernels."""
    if m.flags.writeable:
        m = m.view()
        m.flags.writeable = False
    return m


def check_float_matrix(m) -> None:
    """NaN, -inf and the range rule for a minimised float matrix (NumPy): its minimum and
    maximum show every invalid entry (NaN spreads to both, -inf is the minimum), so a matrix
    with none costs two reductions; the finite entries' range is looked at apart only where a
    +inf (a forbidden pair) is the maximum."""
    if not m.size:
        return
    lo, hi = float(m.min()), float(m.max())
    if lo != lo or hi != hi or lo == -np.inf:
        raise ValueError("matrix contains invalid numeric entries")
    check_float_range(max(-lo, hi) if hi < np.inf else largest_finite(m), m.shape)


def check_before_compile(m: np.ndarray, maximize: bool) -> None:
    """The input errors a first call would otherwise report only after its kernels' compile
    (seconds to a minute in a fresh environment): NaN, -inf (+inf when maximising), costs
    beyond the range rules, and a line of the shorter side with no finite cost (infeasible).
    Made where the kernels for the matrix's dtype are not compiled yet (they check everything
    again): a finite matrix costs its minimum and maximum (NaN and ±inf show in them), only
    one with non-finite entries is looked at closer."""
    if m.dtype.kind == "f":
        lo, hi = (float(m.min()), float(m.max())) if m.size else (0.0, 0.0)
        if -np.inf < lo and hi < np.inf:  # (False for NaN)
            check_float_range(max(-lo, hi), m.shape)
            return
        if lo != lo or hi != hi or (hi == np.inf if maximize else lo == -np.inf):
            raise_for_status(STATUS_INVALID, "cpu")  # NaN (it spreads to both), or -inf
        finite = np.isfinite(m)  # the forbidden pairs' infinity: the range of the others
        lo = float(m.min(where=finite, initial=0.0))
        hi = float(m.max(where=finite, initial=0.0))
        check_float_range(max(-lo, hi), m.shape)
        if not finite.any(axis=1 if m.shape[0] <= m.shape[1] else 0).all():
            raise_for_status(STATUS_INFEASIBLE, "cpu")
    elif m.size:
        check_int_matrix_range(m, maximize)


def check_int_matrix_range(m: np.ndarray, maximize: bool) -> None:
    """:func:`check_int_range` for a non-empty integer matrix as given (``maximize``: its
    costs are negated for the solve)."""
    lo, hi = int(m.min()), int(m.max())
    check_int_range(-hi if maximize else lo, -lo if maximize else hi, m.shape)


def int_cost_limit(shape) -> int:
    """The largest |cost| an integer problem of this shape may hold: |cost| * (4n + 8) stays
    below 2**62, so no potential or path length overflows int64 and no cost reaches the
    solvers' forbidden marker (2**62)."""
    return (_INT_LIMIT - 1) // (4 * max(shape) + 8)


#: float costs are held to |cost| * (4n + 8) <= FLOAT_BIG: prices, path lengths and their
#: differences then stay finite (a 5 x 5 of 1.7e308 overflowed into a wrong answer)
FLOAT_BIG = 2.0**1020


def float_cost_limit(shape) -> float:
    """The largest |cost| a float problem of this shape may hold (the float twin of
    :func:`int_cost_limit`)."""
    return FLOAT_BIG / (4.0 * max(shape) + 8.0)


def largest_finite(a) -> float:
    """The largest finite |entry| of an array (NumPy or CuPy; 0.0 where none is finite): two
    reductions and no temporary where every entry is finite (the common case), a masked pass
    over the finite ones otherwise."""
    if not a.size:
        return 0.0
    lo, hi = float(a.min()), float(a.max())
    if np.isfinite(lo) and np.isfinite(hi):
        return max(abs(lo), abs(hi))
    finite = np.isfinite(a)
    if isinstance(a, np.ndarray):  # no copy of the entries, only the mask
        lo = float(np.min(a, where=finite, initial=np.inf))
        hi = float(np.max(a, where=finite, initial=-np.inf))
        return max(abs(lo), abs(hi)) if lo <= hi else 0.0
    kept = abs(a[finite])
    return float(kept.max()) if kept.size else 0.0


def check_float_range(costs, shape) -> None:
    """Refuse finite float costs beyond :func:`float_cost_limit`; ``costs``: the largest finite
    |cost| or an array of costs (NumPy or CuPy)."""
    big = largest_finite(costs) if hasattr(costs, "shape") else float(costs)
    if big > float_cost_limit(shape):
        raise ValueError(
            f"float costs up to {big:.4g} in magnitude could overflow float64 during the solve "
            f"of a problem of shape {shape[0]}x{shape[1]} (|cost| * (4n + 8) must stay below "
            f"2**1020, "
            f"here |cost| <= {float_cost_limit(shape):.4g}); scale the costs down (multiplying "
            "every cost by the same positive number does not change the optimal assignment)")


def check_int_range(lo: int, hi: int, shape) -> None:
    """Refuse integer costs in [lo, hi] beyond :func:`int_cost_limit` (every integer source,
    array or computed, is held to this one rule)."""
    if max(abs(int(lo)), abs(int(hi))) > int_cost_limit(shape):
        raise ValueError(
            f"integer costs in [{lo}, {hi}] could overflow int64 during the solve of a "
            f"{shape[0]}x{shape[1]} problem (|cost| * (4n + 8) must stay below 2**62); "
            "shift or rescale the costs, or pass them as float64")


def _integer_matrix(arr: np.ndarray, maximize: bool, threads: int = 1) -> np.ndarray:
    """Integers stay exact: int32 where every value fits, else int64; refuse what could overflow.

    A C-contiguous int64/int32 matrix is checked and narrowed in one compiled sweep on
    ``threads`` threads (``_range_and_int32``); other integer types take NumPy's three sweeps.
    """
    if arr.size == 0:
        return arr.astype(np.int64)
    narrowed = None
    if arr.dtype in (np.int64, np.int32) and arr.flags.c_contiguous:
        lo, hi, narrowed = _range_and_int32(arr, maximize, threads)
    else:
        lo, hi = int(arr.min()), int(arr.max())
        if maximize:
            lo, hi = -hi, -lo
    check_int_range(lo, hi, arr.shape)
    fits = lo >= -2**31 and hi < 2**31
    if fits and narrowed is not None:
        return narrowed
    out = arr.astype(np.int32 if fits and not maximize else np.int64)
    if maximize:
        out = -out
        if fits:
            out = out.astype(np.int32)
    return out


def _range_and_int32(arr: np.ndarray, maximize: bool, threads: int):
    """(min, max, int32 copy) of ``arr`` (negated if ``maximize``; min and max as Python ints)
    in one read of the matrix, its rows split over ``threads`` threads. The copy is only valid
    when min and max fit in int32 (else its entries wrapped)."""
    n1 = arr.shape[0]
    threads = max(1, min(int(threads), n1))
    out = np.empty(arr.shape, np.int32)
    ranges = np.zeros((threads, 2), np.int64)
    sync = new_sync()
    run_workers(_range_and_int32_rows,
                lambda t: (arr[n1 * t // threads:n1 * (t + 1) // threads],
                           out[n1 * t // threads:n1 * (t + 1) // threads], maximize, ranges[t]),
                threads, sync)
    return int(ranges[:, 0].min()), int(ranges[:, 1].max()), out


@njit(cache=True, nogil=True)
def _range_and_int32_rows(a, out, maximize, lo_hi):
    """lo_hi = (min, max) of ``a`` (negated if ``maximize``, in int64); out = that as int32."""
    lo = np.int64(2**63 - 1)
    hi = -lo - 1
    for i in range(a.shape[0]):
        row = a[i]
        orow = out[i]
        for j in range(row.shape[0]):
            x = np.int64(row[j])
            x = -x if maximize else x
            lo = min(lo, x)
            hi = max(hi, x)
            orow[j] = np.int32(x)
    lo_hi[0] = lo
    lo_hi[1] = hi


_BACKENDS = ("cpu", "gpu", "hungarian-gpu")
_CACHES = ("auto", "lfu", "slru")


def check_flag(name: str, value) -> None:
    """A boolean option: True or False (NumPy's too), else TypeError naming it."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}")


def is_count(value, minimum: int) -> bool:
    """An integer (not a bool) of at least ``minimum``."""
    return (isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
            and value >= minimum)


def check_options(*, backend, maximize, epsilon, memory, cache, threads, progress,
                  device) -> None:
    """Validate ``solve``'s execution options once, for every backend: one message per option.

    ``memory`` and ``cache`` are checked even where they have no effect (a matrix already in
    host memory on the CPU backend), so that a typo never passes silently. The defaults of a
    plain CPU call return at once (a tiny problem's whole solve costs about as much as the full
    checks).
    """
    if (backend == "cpu" and (maximize is False or maximize is True) and epsilon is True
            and progress is False and memory is None and threads is None
            and cache.__class__ is str and cache == "auto"
            and device.__class__ is int and device == 0):
        return
    if backend not in _BACKENDS:
        raise ValueError(f"backend must be one of {_BACKENDS}, got {backend!r}")
    check_flag("maximize", maximize)
    check_flag("epsilon", epsilon)
    check_flag("progress", progress)
    if not isinstance(cache, str) or cache not in _CACHES:  # an array would compare per item
        raise ValueError(f"cache must be one of 'auto', 'lfu', 'slru'; got {cache!r}")
    if memory is not None:
        parse_memory(memory)
    if threads is not None and not is_count(threads, 1):
        raise ValueError(f"threads must be None or a positive integer, got {threads!r}")
    if not is_count(device, 0):
        every = isinstance(device, str) and device == "all"
        if backend == "gpu" and (isinstance(device, (list, tuple)) or every):
            device_ids(device)  # several GPUs: one problem split over them
        else:
            raise ValueError(f"device must be an integer >= 0 (a list of them, or 'all', with "
                             f"backend='gpu'), got {device!r}")


def device_ids(device) -> tuple[int, ...]:
    """``device`` as a tuple of device ids (an int: one device; a list: one problem split over
    them; ``"all"``: every visible device), with a clear error otherwise."""
    if is_count(device, 0):
        return (int(device),)
    if isinstance(device, str) and device == "all":
        from .gpu.runtime import import_cupy
        count = import_cupy().cuda.runtime.getDeviceCount()
        return tuple(range(count))
    if isinstance(device, (list, tuple)) and device and all(is_count(d, 0) for d in device):
        return tuple(int(d) for d in device)
    raise ValueError(f"device must be an integer >= 0, a non-empty list of them or 'all', got "
                     f"{device!r}")


#: the units a memory budget may be written in (``parse_memory``; the CLI reads them too)
MEMORY_UNITS = {"": 1, "b": 1, "k": 1e3, "kb": 1e3, "kib": 2**10, "m": 1e6, "mb": 1e6,
                "mib": 2**20, "g": 1e9, "gb": 1e9, "gib": 2**30, "t": 1e12, "tb": 1e12,
                "tib": 2**40}


def parse_memory(memory) -> int:
    """Bytes from an int or a string such as ``"512MiB"``, ``"2 GB"``, ``"1.5GiB"``."""
    if isinstance(memory, (int, np.integer)) and not isinstance(memory, bool):
        value = int(memory)
    else:
        m = re.fullmatch(r"\s*([-+]?[0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*", str(memory))
        if not m or m.group(2).lower() not in MEMORY_UNITS:
            raise ValueError(f"memory must be a number of bytes or a string like '2GiB' or "
                             f"'500MB', got {memory!r}")
        value = int(float(m.group(1)) * MEMORY_UNITS[m.group(2).lower()])
    if value <= 0:
        raise ValueError(f"memory must be positive, got {memory!r}")
    return value


def spread_rows(n: int, count: int) -> np.ndarray:
    """``count`` row indices (fewer where ``n`` is smaller) spread evenly over ``0 … n - 1``,
    the first and the last among them: the rows a look at a large problem samples."""
    return np.unique(np.linspace(0, n - 1, min(n, count)).astype(np.int64))


def check_cost_limit(cost_limit, maximize: bool):
    """The limit as a finite Python int or float, or None for none (None, or +inf — -inf when
    maximising — means every line of the shorter side is matched)."""
    if cost_limit is None:
        return None
    if isinstance(cost_limit, (bool, np.bool_)) or not isinstance(cost_limit, numbers.Real):
        raise TypeError(f"cost_limit must be a real number or None, got {cost_limit!r}")
    value = cost_limit
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, numbers.Integral):
        value = int(value)  # exact, however large: the range is checked against the costs
        if abs(value) > _FLOAT_MAX:
            raise ValueError(f"cost_limit={value} lies beyond the float64 range: its price per "
                             "unmatched line (cost_limit / 2) could not be reported; give a "
                             "float64 number, or None for no limit")
        return value
    try:
        as_float = float(value)
    except OverflowError:
        as_float = None
    if as_float is None or (as_float == as_float and as_float != value):
        raise ValueError(f"cost_limit={value!r} is not a float64 number (it would be rounded); "
                         "give a float or an int")
    value = as_float
    if math.isnan(value):
        raise ValueError("cost_limit is NaN")
    if math.isinf(value):
        if (value > 0) != bool(maximize):
            return None
        raise ValueError(f"cost_limit={value} would leave every pair unmatched; give a finite "
                         f"limit, or {'-' if maximize else '+'}inf (or None) for none")
    return value


_FLOAT_MAX = float(np.finfo(np.float64).max)
