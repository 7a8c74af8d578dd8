"""User-defined costs: a function of (i, j) or of a row, and a ``.npy`` file on disk.

A Numba-jitted function is called from the compiled solver directly (no Python round trip); a
plain Python function is called through Numba's object mode, one row at a time.

A jitted function reaches the kernels as a first-class function value by default: its state's
Numba type holds the function's signature, not the function itself, so the kernels are compiled
once per dtype and loaded from Numba's disk cache by every later process, whatever function the
user passes (only the user's function is compiled, in well under a second). Element and row
functions, jitted or plain Python, share them with the built-in classes and matrices of their
dtype (``costfns.rows.ErasedState``: fields ``user``, ``row_fn``, ``key``). The call through a
function pointer cannot be inlined, which costs a little per entry for a cheap element function;
``specialize=True`` compiles the kernels for the very function instead (inlined, but compiled
anew in every process: tens of seconds; such kernels are not written to Numba's disk cache,
where no later process could find them: ``costfns._numba_cache``).
"""
from __future__ import annotations

import inspect
from typing import Any, Callable, NamedTuple

import numpy as np
from numba import njit
from numba.core.registry import CPUDispatcher

from ._base import CostSource, check_shape
from ._python_rows import KEYS, PY_ERRORS, PY_FUNCS
from .rows import (cost_forms, fill_rows, matrix_state, user_element_state,
                   user_row_state)


@njit(nogil=True, inline="always")
def _jit_element_at(s, i, j):
    return s.fn(i, j)


@cost_forms(entry=_jit_element_at)
class _JitElementState(NamedTuple):
    fn: Any


@njit(nogil=True, inline="always")
def _jit_row_fill(s, i, buf):
    s.fn(i, buf)
    return buf


@cost_forms(row=_jit_row_fill)
class _JitRowState(NamedTuple):
    fn: Any


class FunctionSource(CostSource):
    """Costs from a user function; build it with :func:`from_function`."""

    def __init__(self, fn, shape, dtype, kind, specialize: bool = False):
        self.fn, self.kind = fn, kind
        self.shape = (int(shape[0]), int(shape[1]))
        self.dtype = np.dtype(dtype)
        self.specialize = bool(specialize)
        self._key = None
        self._transposed = None  # the transposed source, made once (a jitted one compiles)
        self._family = [self]    # this source and its transpose: they raise each other's errors
        self._lines = "row"      # what this source's rows are in the user's problem

    def state(self):
        if isinstance(self.fn, CPUDispatcher):
            if self.specialize:
                return (_JitElementState if self.kind == "element" else _JitRowState)(self.fn)
            if self.kind == "element":  # the kernels of the built-in classes of its dtype
                return user_element_state(self.fn, self.dtype)
            return user_row_state(self.fn, self.dtype)
        if self._key is None:
            self._key = next(KEYS)
            PY_FUNCS[self._key] = self._python_row
        return user_row_state(None, self.dtype, self._key)

    def transpose(self) -> "FunctionSource":
        """The element function with its arguments swapped, jitted where ``fn`` is (the solver
        takes n1 > n2 transposed); a row function has no such form."""
        if self.kind != "element":
            raise ValueError("a row function with more rows than columns cannot be solved "
                             "transposed; give the function of the transposed problem (rows = "
                             "the shorter side), or kind='element'")
        if self._transposed is None:
            fn = self.fn
            swapped = _swapped_jit(fn) if isinstance(fn, CPUDispatcher) else (
                lambda i, j: fn(j, i))
            t = FunctionSource(swapped, self.shape[::-1], self.dtype, "element", self.specialize)
            t._transposed, t._family = self, self._family
            t._lines = "column" if self._lines == "row" else "row"
            self._family.append(t)
            self._transposed = t
        return self._transposed

    def raise_pending(self) -> None:
        """Re-raise the first exception the user function raised during a compiled solve (by
        this source or its transpose: a caller may hold either)."""
        for src in self._family:
            if src._key is not None and src._key in PY_ERRORS:
                raise PY_ERRORS.pop(src._key)

    def dense(self) -> np.ndarray:
        if isinstance(self.fn, CPUDispatcher):
            # serially: an exception the user's function raises inside Numba's parallel loop
            # is not reliably propagated (it may be lost on a worker thread)
            return self._fill_blocks(fill_rows)
        out = np.empty(self.shape, dtype=self.dtype)
        for i in range(self.shape[0]):
            self._python_row(i, out[i])
        return out

    def _python_row(self, i: int, buf: np.ndarray) -> None:
        n2 = self.shape[1]
        if self.kind == "element":  # checked as the row form is (no silent truncation)
            if n2 == 0:
                return
            out = np.array([self.fn(i, j) for j in range(n2)])
        else:
            out = self.fn(i) if _arity(self.fn) == 1 else self.fn(i, buf)
            if out is None:
                return
            out = np.asarray(out)
        if out.shape != (n2,):
            raise ValueError(f"cost function returned shape {out.shape} for {self._lines} {i}; "
                             f"expected ({n2},)")
        if not np.can_cast(out.dtype, self.dtype, "same_kind"):
            raise ValueError(f"cost function returned dtype {out.dtype} for {self._lines} {i}; "
                             f"expected {self.dtype}")
        buf[:] = out


def _swapped_jit(fn) -> CPUDispatcher:
    """``(i, j) -> fn(j, i)`` as a jitted function: what the kernels call (through a function
    pointer, or inlined with ``specialize``) for the transposed problem, as they call ``fn``."""
    @njit(nogil=True)
    def swapped(i, j):
        return fn(j, i)
    return swapped


def _arity(fn) -> int:
    """The positional parameters ``fn`` must be given: those with a default (``lambda i, a=a:
    a[i]``, a common way to bind data) are not counted."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 2
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is p.empty]
    return len(required) if required else len(positional)


def from_function(fn: Callable, shape: tuple[int, int], *, dtype=np.float64,
                  kind: str = "element", specialize: bool = False) -> FunctionSource:
    """A cost source from ``fn``.

    ``kind="element"``: ``fn(i, j) -> cost``. ``kind="row"``: ``fn(i) -> row`` or ``fn(i, out)``
    filling ``out`` (shape (n2,)). A Numba-jitted ``fn`` (``@numba.njit``; for rows the
    ``fn(i, out)`` form) runs inside the compiled solver; a plain Python one through object mode.
    NaN or -inf values are reported as errors by the solve.

    ``specialize`` (jitted ``fn`` only): ``False`` (default) calls ``fn`` through a function
    pointer, so the solver's kernels are compiled once and then loaded from Numba's disk cache
    in every later process; ``True`` compiles the kernels for this very ``fn`` (inlined, a little
    faster per entry for a cheap element function, but compiled again in every process).
    """
    if kind not in ("element", "row"):
        raise ValueError(f"kind must be 'element' or 'row', got {kind!r}")
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    shape = check_shape(shape)
    dt = np.dtype(dtype)
    if dt not in (np.float64, np.float32, np.int64, np.int32):
        raise ValueError(f"dtype must be float64, float32, int64 or int32, got {dt}")
    if kind == "element" and dt.kind == "i" and isinstance(fn, CPUDispatcher):
        _check_jit_returns_int(fn, dt)
    return FunctionSource(fn, shape, dt, kind, specialize)


def _check_jit_returns_int(fn, dt) -> None:
    """A jitted element function of an integer source must return integers: compiled code
    would truncate its floats silently."""
    from numba import types
    fn.compile((types.int64, types.int64))
    ret = fn.overloads[(types.int64, types.int64)].signature.return_type
    if not isinstance(ret, (types.Integer, types.Boolean)):
        raise ValueError(f"cost function returns {ret} for a {dt} source; return integers, or "
                         "pass dtype=np.float64")


#: the dtypes a memory-mapped matrix is read in without a copy (the solvers' row dtypes)
_IN_PLACE = tuple(np.dtype(t) for t in (np.float64, np.float32, np.int64, np.int32))


class OnDisk(CostSource):
    """A ``.npy`` matrix read through a memory map: only the rows the solver asks for are read."""

    def __init__(self, path):
        try:
            with open(path, "rb") as f:
                magic = f.read(6)
            if magic != b"\x93NUMPY":  # a .npz, a text or pickle file: np.load would take
                raise ValueError("not a NumPy .npy file")  # them and say something else
            self.matrix = np.load(path, mmap_mode="r")
        except (OSError, ValueError) as exc:
            raise ValueError(f"OnDisk: cannot read {path!r} as a .npy file: {exc}") from exc
        if self.matrix.ndim != 2:
            raise ValueError(f"OnDisk: expected a 2-D matrix, got {self.matrix.ndim} dimensions")
        if not self.matrix.flags.c_contiguous:
            raise ValueError("OnDisk: the .npy file must be in C order (rows contiguous)")
        dt = self.matrix.dtype
        if not (dt.isnative and dt in _IN_PLACE):
            raise ValueError(f"OnDisk: the file's rows are read in place, as float64, float32, "
                             f"int64 or int32 in this machine's byte order; got {dt.str} "
                             f"(save the matrix as one of those, or load it and pass it)")
        self.path = path
        self.shape = self.matrix.shape
        self.dtype = self.matrix.dtype

    def state(self):
        # the mapped buffer, not copied: the solver takes row views, pages load lazily
        return matrix_state(np.asarray(self.matrix))

    def transpose(self):
        raise ValueError("OnDisk: a matrix with more rows than columns cannot be streamed "
                         "transposed; save its transpose (in C order) instead")
