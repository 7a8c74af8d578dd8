"""The host's side of a compiled CPU kernel: compile it (or load it from the disk cache) once per
kind of arguments, run it on a worker thread that Ctrl-C can stop cleanly, and read rows
through a source's helper threads."""
from __future__ import annotations

import threading
import time
from contextlib import nullcontext
from typing import Any

import numba
import numpy as np

from .._progress import compile_clock
from .._status import STOP_NOW
from .._sync import request_abort
from . import compile_ahead


def _compile(dispatcher, args) -> float:
    """Compile (or load from the disk cache) ``dispatcher`` for ``args``; return seconds spent."""
    sig = tuple(numba.typeof(a) for a in args)
    t0 = time.perf_counter()
    compile_ahead.wait_if_compiling(dispatcher, sig)  # (then loaded from the disk cache)
    dispatcher.compile(sig)
    return time.perf_counter() - t0


#: seconds between two looks of the host at a running kernel (progress, load, checkpoints)
POLL_S = 0.1


def run_interruptibly(fn, ctl: np.ndarray, on_tick=None, sync=None) -> Any:
    """Run ``fn()`` on a worker thread; poll ``on_tick``. Ctrl-C sets the stop flag ``ctl[0]``
    (the passes read it) and aborts the barrier state ``sync`` when given (the estimate's); the
    worker then ends within a row, and KeyboardInterrupt is raised once it has.

    The end of the worker is an Event it sets itself, not ``Thread.join``/``is_alive``: a
    KeyboardInterrupt that lands inside ``join(timeout)`` can leave CPython reporting the
    still-running thread as stopped, and the caller would then save a checkpoint before the
    kernel has filled its resume state (and leave the thread running)."""
    box: dict[str, Any] = {}
    done = threading.Event()

    def work():
        try:
            box["result"] = fn()
        except BaseException as exc:  # pragma: no cover - compiled code does not raise
            box["error"] = exc
        finally:
            done.set()

    worker = threading.Thread(target=work, name="epslap-cpu", daemon=True)
    worker.start()
    interrupted = False
    while not done.is_set():
        try:
            if not done.wait(POLL_S) and on_tick is not None:
                on_tick()
        except KeyboardInterrupt:
            ctl[0] = STOP_NOW
            if sync is not None:
                request_abort(sync)
            interrupted = True
    while worker.is_alive():  # fn has returned: the thread ends at once; none is left behind
        try:  # (on a loaded machine its end could come after the caller had moved on)
            worker.join()
        except KeyboardInterrupt:
            interrupted = True
    if "error" in box:
        raise box["error"]
    if interrupted:
        raise KeyboardInterrupt("epslap solve interrupted")
    return box["result"]


#: (dispatcher, ``_arg_key`` of its arguments) compiled or loaded in this process
_READY: set = set()


#: the array flags Numba's type of an array reads (C and F contiguous, aligned, writeable)
_LAYOUT_FLAGS = 0x1 | 0x2 | 0x100 | 0x400


def _arg_key(a):
    """What Numba's type of ``a`` depends on, read cheaply (about half the time of reading the
    flags one by one: this runs for every argument of every solve): an array's dtype,
    dimensions and layout flags, a tuple's (or named tuple's) members, a scalar's type; any
    other object by identity (conservative: a new object is looked at by Numba again)."""
    kind = type(a)
    if kind is np.ndarray:
        return (a.dtype, a.ndim, a.flags.num & _LAYOUT_FLAGS)
    if isinstance(a, tuple):
        return (kind, *[_arg_key(x) for x in a])
    if a is None or isinstance(a, (bool, int, float, np.generic)):
        return kind
    return (kind, id(a))


def compile_kernels(kernels, progress=None, what: str = "the CPU kernels") -> float:
    """Compile every (dispatcher, arguments) of a step's kernel table; return seconds spent.
    With ``progress`` (a :class:`SolveProgress`, or True for a line of its own), a compile this
    process has not done yet is shown as a phase whose clock runs. A table whose kernels this
    process has readied for arguments of the same kinds returns at once: Numba's types of every
    argument cost about 2 ms per solve, a tenth of a 4000-row solve of an easy class."""
    keys = [(dispatcher, _arg_key(args)) for dispatcher, args in kernels]
    if all(key in _READY for key in keys):
        return 0.0

    def compile_all():
        spent = sum(_compile(dispatcher, args)
                    for dispatcher, args in compile_ahead.meet_in_the_middle(kernels))
        compile_ahead.finish(kernels)
        return spent
    if progress and any(tuple(numba.typeof(a) for a in args) not in dispatcher.overloads
                        for dispatcher, args in kernels):
        with (compile_clock(what) if progress is True else progress.compiling(what)):
            spent = compile_all()
    else:
        spent = compile_all()
    _READY.update(keys)
    return spent


#: (dispatcher, ``_arg_key`` of its arguments) that :func:`compile_later` has looked at once
_LOOKED: set = set()


def compile_later(kernels) -> None:
    """Start compiling a later step's kernel table in a second process where this process has
    not readied it (``compile_ahead``: where a core is free and the disk cache lacks them);
    its :func:`compile_kernels` then loads what the child compiled. A table is looked at once
    per process and kind of arguments, judged by its first kernel (tables are readied whole):
    the look (Numba's types, the cache's index) costs about 2 ms, as much as a whole solve of
    some problems whose step never comes (a declined sample), and even the check of every
    kernel's arguments a tenth of a millisecond a solve."""
    if not kernels:
        return
    dispatcher, args = kernels[0]
    first = (dispatcher, _arg_key(args))
    if first in _READY or first in _LOOKED:
        return
    compile_ahead.start(kernels)
    _LOOKED.add(first)


def rows_served(estimate_context):
    """``estimate_context()`` (the context in which helper threads compute a source's rows),
    or a context that does nothing where there is none."""
    return nullcontext() if estimate_context is None else estimate_context()


def read_rows(src, n2: int, row_dtype, rows: np.ndarray, estimate_context) -> np.ndarray:
    """Rows ``rows`` of ``src`` (inside ``estimate_context``: rows that helper threads
    compute)."""
    from costfns.rows import fill_rows
    out = np.empty((len(rows), n2), dtype=row_dtype)

    with rows_served(estimate_context):
        for k, i in enumerate(rows):
            fill_rows(src, np.int64(i), out[k:k + 1])
    return out
