"""Atomics and a spin barrier for compiled worker threads (Numba has no CPU atomics).

The parallel CPU kernel runs T Python threads that each call the same ``nogil`` compiled worker;
they synchronise through one shared int64 array ``sync``. The intrinsics below emit LLVM atomic
instructions, so the loads in a spin loop cannot be hoisted and the orderings are the C++11 ones:

- ``atomic_add(a, k, x)``: ``atomicrmw add`` with ``seq_cst``; returns the old value.
- ``load_acquire(a, k)``: ``load atomic … acquire``; ``_load_seq_cst(a, k)``: ``… seq_cst``.
- ``_store_release(a, k, x)``: ``store atomic … release``.

The barrier is a monotonically increasing arrival counter ``sync[_ARRIVE]``: the g-th barrier of a
run (g = 1, 2, …; every thread counts its own) is passed once the counter reaches g·T. A thread's
plain stores before its ``seq_cst`` increment happen-before every load that follows another
thread's ``acquire`` load of a counter value at or beyond it (the increments form a release
sequence), so per-thread result slots written before the barrier are visible after it. The counter
never resets (2^63 arrivals is out of reach), so no sense reversal is needed. While spinning a
thread also watches ``sync[_ABORT]`` (set by the host if a worker ends abnormally), so no thread
can be left waiting forever; after ``SPINS_BEFORE_SLEEP`` polls (with the x86 ``pause`` hint) it
sleeps in ``futex_wait`` (Linux; a bounded spin elsewhere) so that a descheduled peer on a
loaded machine gets the core back.
"""
import os
import platform
import sys
import threading
import time

import numpy as np
from llvmlite import ir
import numba
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

SPINS_BEFORE_SLEEP = 4096  # busy-wait this long (~0.1 ms) before sleeping in the kernel
_ARRIVE = 0    # index of the barrier's arrival counter in ``sync`` (its own cache line)
_EPOCH = 4     # futex word: bumped by the last arriver of every barrier (low 32 bits compared)
_ABORT = 8     # abort flag (second cache line)
_SLEEPERS = 10  # threads asleep in futex_wait
_TIMESPEC = 12  # struct timespec {sec, nsec}: the sleep's timeout, so an abort is seen
SYNC_SIZE = 16
SLEEP_NS = 2_000_000


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity; ``os.cpu_count()`` elsewhere)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def usable_cores() -> int:
    """The threads a compiled kernel may run on at once: the cores this process may run on, at
    most the threads Numba may use."""
    return max(1, min(available_cores(), numba.get_num_threads()))


def new_sync():
    """A fresh barrier state for one run."""
    sync = np.zeros(SYNC_SIZE, np.int64)
    sync[_TIMESPEC + 1] = SLEEP_NS
    return sync


def reset_sync(sync) -> None:
    """Restart the barrier counts of ``sync`` for another run, keeping a pending abort."""
    abort = sync[_ABORT]
    sync[:] = new_sync()
    sync[_ABORT] = abort


def request_abort(sync) -> None:
    """Make every barrier of the runs on ``sync`` fail from now on (a stop request): waiting
    threads return, and a worker that checks ``aborted`` between barriers stops too."""
    sync[_ABORT] = 1


@njit(cache=True, nogil=True, inline="always")
def aborted(sync):
    """Whether a stop was requested on ``sync`` (a plain read, between barriers)."""
    return sync[_ABORT] != 0


@njit(cache=True, nogil=True, inline="always")
def await_or_stop(sync, nthreads, gen):
    """``wait_for``, and False after a stop request also for a single thread (which never waits):
    for loops that meet once per row, where one more read per row costs nothing."""
    return wait_for(sync, nthreads, gen) and not aborted(sync)


class LoadWatch:
    """Tells, from the host, when lock-step threads stall: over two windows of ``window_s``
    seconds in a row, the process got less than ``share`` of a core per solver thread (its CPU
    time against the wall clock; the host itself only sleeps while it watches). On a quiet
    machine every spinning or working solver thread holds its core; when other processes want
    the cores too, a thread is often off its core while its peers wait for it at the next
    barrier, and a parallel solve runs several times slower than one thread would."""

    def __init__(self, sync, nthreads: int, window_s: float = 0.2, share: float = 0.7):
        import resource  # Unix only: the module imports everywhere
        self.nthreads, self.window_s, self.share = nthreads, window_s, share
        self._clock = time.perf_counter

        def cpu() -> float:
            r = resource.getrusage(resource.RUSAGE_SELF)
            return r.ru_utime + r.ru_stime
        self._cpu = cpu
        self._mark = (self._clock(), cpu())
        self._low = 0

    def stalled(self) -> bool:
        t, c = self._clock(), self._cpu()
        t0, c0 = self._mark
        if t - t0 < self.window_s:
            return False
        self._mark = (t, c)
        low = (c - c0) < self.share * self.nthreads * (t - t0)
        self._low = self._low + 1 if low else 0
        return self._low >= 2


def run_workers(worker, args_of, nthreads: int, sync) -> None:
    """Run ``worker(*args_of(tid))`` for every tid at once: tid 0 on this thread,
    the others on threads of their own (the compiled worker releases the GIL). A worker that
    raises (it should not: compiled code returns statuses) sets the abort flag so no peer waits
    at a barrier forever; its exception is raised here. The workers report through their
    arrays."""
    errors: list[BaseException] = []

    def work(tid):
        try:
            worker(*args_of(tid))
        except BaseException as exc:  # pragma: no cover - compiled code does not raise
            errors.append(exc)
            sync[_ABORT] = 1

    peers = [threading.Thread(target=work, args=(t,), name=f"epslap-cpu-{t}", daemon=True)
             for t in range(1, nthreads)]
    for p in peers:
        p.start()
    work(0)
    for p in peers:
        p.join()
    if errors:
        raise errors[0]


def _item_ptr(context, builder, aryty, ary, idx, idxty):
    arr = context.make_array(aryty)(context, builder, ary)
    k = context.cast(builder, idx, idxty, types.intp)
    return cgutils.get_item_pointer(context, builder, aryty, arr, [k], wraparound=False)


def _int64_write(name: str, doc: str, result, emit):
    """An intrinsic ``name(ary, idx, val)`` on an int64 array's element: ``emit(context,
    builder, pointer, value)`` writes it (``val`` cast to int64) and gives the result, of
    Numba type ``result``."""
    def write(typingctx, ary, idx, val):
        if not (isinstance(ary, types.Array) and ary.dtype == types.int64):
            return None
        sig = result(ary, idx, val)

        def codegen(context, builder, signature, args):
            ptr = _item_ptr(context, builder, signature.args[0], args[0], args[1],
                            signature.args[1])
            x = context.cast(builder, args[2], signature.args[2], types.int64)
            return emit(context, builder, ptr, x)
        return sig, codegen
    write.__name__ = write.__qualname__ = name  # distinct names for Numba's typing
    write.__doc__ = doc
    return intrinsic(write)


atomic_add = _int64_write(
    "atomic_add", "Atomically ``ary[idx] += val`` (int64, seq_cst); returns the old value.",
    types.int64, lambda context, builder, ptr, x: builder.atomic_rmw("add", ptr, x, "seq_cst"))


def _atomic_load(ordering: str, doc: str):
    """An intrinsic reading ``ary[idx]`` (int64) with an atomic load of the given LLVM ordering."""
    def load(typingctx, ary, idx):
        if not (isinstance(ary, types.Array) and ary.dtype == types.int64):
            return None
        sig = types.int64(ary, idx)

        def codegen(context, builder, signature, args):
            ptr = _item_ptr(context, builder, signature.args[0], args[0], args[1],
                            signature.args[1])
            return builder.load_atomic(ptr, ordering, 8)
        return sig, codegen
    load.__name__ = load.__qualname__ = f"_load_{ordering}"  # distinct names for Numba's typing
    load.__doc__ = doc
    return intrinsic(load)


load_acquire = _atomic_load("acquire", "``ary[idx]`` read with an atomic acquire load (int64).")
_load_seq_cst = _atomic_load("seq_cst", "``ary[idx]`` read with a sequentially consistent "
                                        "atomic load (int64).")


_FUTEX_WAIT_PRIVATE = 128  # FUTEX_WAIT | FUTEX_PRIVATE_FLAG
_FUTEX_WAKE_PRIVATE = 129  # FUTEX_WAKE | FUTEX_PRIVATE_FLAG


def _futex_nr():
    """The futex syscall number on this Linux machine, or None where there is none."""
    if not sys.platform.startswith("linux"):
        return None
    return {"x86_64": 202, "amd64": 202, "aarch64": 98, "arm64": 98}.get(platform.machine().lower())


@intrinsic
def _futex(typingctx, ary, idx, op, val, ts_idx):
    """futex(&ary[idx] (its low 32 bits), op, val, &ary[ts_idx] as a timespec) through the
    variadic ``syscall``; where there is no futex it does nothing and returns -1."""
    if not (isinstance(ary, types.Array) and ary.dtype == types.int64):
        return None
    sig = types.int64(ary, idx, op, val, ts_idx)

    def codegen(context, builder, signature, args):
        nr = _futex_nr()
        i64 = ir.IntType(64)
        if nr is None:
            return ir.Constant(i64, -1)
        aryty = signature.args[0]
        ptr = _item_ptr(context, builder, aryty, args[0], args[1], signature.args[1])
        ts = _item_ptr(context, builder, aryty, args[0], args[4], signature.args[4])
        fnty = ir.FunctionType(i64, [i64], var_arg=True)
        fn = cgutils.get_or_insert_function(builder.module, fnty, "syscall")
        op_ = context.cast(builder, args[2], signature.args[2], types.int64)
        val_ = context.cast(builder, args[3], signature.args[3], types.int64)
        i32 = ir.IntType(32)
        return builder.call(fn, [ir.Constant(i64, nr), builder.ptrtoint(ptr, i64),
                                 builder.trunc(op_, i32), builder.trunc(val_, i32),
                                 builder.ptrtoint(ts, i64), ir.Constant(i64, 0),
                                 ir.Constant(i32, 0)])
    return sig, codegen


def _emit_store_release(context, builder, ptr, x):
    builder.store_atomic(x, ptr, "release", 8)
    return context.get_dummy_value()


_store_release = _int64_write("_store_release",
                              "``ary[idx] = val`` as an atomic release store (int64).",
                              types.void, _emit_store_release)


@intrinsic
def _cpu_relax(typingctx):
    """The x86 ``pause`` hint inside a spin loop (nothing elsewhere)."""
    sig = types.void()

    def codegen(context, builder, signature, args):
        if platform.machine().lower() in ("x86_64", "amd64", "i686", "x86"):
            fnty = ir.FunctionType(ir.VoidType(), [])
            fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.x86.sse2.pause")
            builder.call(fn, [])
        return context.get_dummy_value()
    return sig, codegen


@njit(cache=True, nogil=True, inline="always")
def barrier(sync, nthreads, gen):
    """Wait until all ``nthreads`` threads reached their ``gen``-th barrier (gen counts from 1):
    ``arrive`` then ``wait_for``. Returns False if the run was aborted while waiting."""
    arrive(sync, nthreads, gen)
    return wait_for(sync, nthreads, gen)


@njit(cache=True, nogil=True, inline="always")
def arrive(sync, nthreads, gen):
    """This thread's arrival at its ``gen``-th barrier (the first half of a split barrier: the
    thread may do work that does not need the others' results before it calls ``wait_for``). Its
    plain stores before the arrival are visible to every thread after that thread's ``wait_for``
    of the same ``gen``. The last arriver bumps the epoch and wakes sleepers only when there are
    any (one futex syscall per barrier otherwise would cost more than a step). A single thread
    does nothing."""
    if nthreads == 1:
        return
    if atomic_add(sync, _ARRIVE, 1) + 1 == gen * nthreads:  # the last to arrive
        atomic_add(sync, _EPOCH, 1)
        if _load_seq_cst(sync, _SLEEPERS) > 0:
            _futex(sync, _EPOCH, _FUTEX_WAKE_PRIVATE, nthreads, _TIMESPEC)


@njit(cache=True, nogil=True, inline="always")
def wait_for(sync, nthreads, gen):
    """Wait until every thread has arrived at its ``gen``-th barrier (after this thread's own
    ``arrive(gen)``). Returns False if the run was aborted while waiting. A single thread never
    waits. A waiter spins (x86 ``pause``) for SPINS_BEFORE_SLEEP polls, then sleeps in
    ``futex_wait`` on the epoch word (with a short timeout), so that on a loaded machine its core
    goes to the peer it waits for instead of being burnt.
    Sleeper handshake (all seq_cst): waiter: read epoch e; sleepers += 1; re-check the counter;
    futex_wait(epoch, e). Last arriver: counter += 1; epoch += 1; if sleepers: wake. Either the
    waiter's re-check sees the last arrival, or the arriver sees the sleeper; a wake that comes
    between the re-check and the sleep finds the epoch changed, and futex_wait returns at once.
    """
    if nthreads == 1:
        return True
    target = gen * nthreads
    spins = 0
    while load_acquire(sync, _ARRIVE) < target:
        if load_acquire(sync, _ABORT) != 0:
            return False
        spins += 1
        if spins < SPINS_BEFORE_SLEEP:
            _cpu_relax()
            continue
        spins = 0
        e = _load_seq_cst(sync, _EPOCH)
        atomic_add(sync, _SLEEPERS, 1)
        if _load_seq_cst(sync, _ARRIVE) < target:
            _futex(sync, _EPOCH, _FUTEX_WAIT_PRIVATE, e & 0xFFFFFFFF, _TIMESPEC)
        atomic_add(sync, _SLEEPERS, -1)
    return True
