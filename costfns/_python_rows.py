"""Plain Python cost functions, called from compiled code through Numba's object mode.

A Numba state cannot hold a Python object, so a state holds a key and the function is looked up
here by it (:data:`PY_FUNCS`); the rows it gives are written into the caller's buffer.
"""
from __future__ import annotations

import itertools
from typing import Callable

import numpy as np
from numba import njit, objmode

#: key -> the function ``fn(i, buf)`` that writes row ``i`` into ``buf``
PY_FUNCS: dict[int, Callable] = {}
#: key -> the first exception that function raised during a compiled solve
PY_ERRORS: dict[int, BaseException] = {}
KEYS = itertools.count(1)


def _py_fill(key, i, buf):
    """Never raises into compiled code: an error is kept for the host and the row becomes NaN
    (0 for integers), which stops the solve (the host then re-raises the original exception)."""
    try:
        PY_FUNCS[int(key)](int(i), buf)
    except BaseException as exc:  # noqa: BLE001 - re-raised by FunctionSource.raise_pending
        PY_ERRORS.setdefault(int(key), exc)
        buf[:] = np.nan if buf.dtype.kind == "f" else 0  # the host raises after the estimate


@njit
def python_row_fill(key, i, buf):
    """Row ``i`` of the Python function filed under ``key``, written into ``buf``. A function
    of its own: an object-mode block inside a function that holds a first-class function value
    does not compile (LLVM IR of a mistyped return)."""
    with objmode():
        _py_fill(key, i, buf)
