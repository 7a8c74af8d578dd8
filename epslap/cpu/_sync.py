"""Atomics and a spin barrier for compiled worker threads (Numba has no CPU atomics).

The parallel CPU kernel runs T Python threads that each call the same ``nogil`` compiled worker;
they synchronise through one shared int64 array ``sync``. The intrinsics below emit LLVM atomic
instructions, so the loads in a spin loop cannot be hoisted and the orderings are the C++11 ones:

- ``_atomic_add(a, k, x)``: ``atomicrmw add`` with ``acq_rel``; returns the old value.
- ``_load_acquire(a, k)``: ``load atomic … acquire``.
- ``_store_release(a, k, x)``: ``store atomic … release``.

The barrier is a monotonically increasing arrival counter ``sync[_ARRIVE]``: the g-th barrier of a
run (g = 1, 2, …; every thread counts its own) is passed once the counter reaches g·T. A thread's
plain stores before its ``acq_rel`` increment happen-before every load that follows another
thread's ``acquire`` load of a counter value at or beyond it (the increments form a release
sequence), so per-thread result slots written before the barrier are visible after it. The counter
never resets (2^63 arrivals is out of reach), so no sense reversal is needed. While spinning a
thread also watches ``sync[_ABORT]`` (set by the host if a worker ends abnormally), so no thread
can be left waiting forever; after ``SPINS_BEFORE_YIELD`` polls (with the x86 ``pause`` hint) it
calls ``sched_yield`` so that a descheduled peer on a loaded machine gets the core back.
"""
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

SPINS_BEFORE_YIELD = 4096  # busy-wait this long before giving the core away (shared machines)
_ARRIVE = 0   # index of the barrier's arrival counter in ``sync`` (its own cache line)
_ABORT = 8    # index of the abort flag (own cache line)
SYNC_SIZE = 16


def _item_ptr(context, builder, aryty, ary, idx, idxty):
    arr = context.make_array(aryty)(context, builder, ary)
    k = context.cast(builder, idx, idxty, types.intp)
    return cgutils.get_item_pointer(context, builder, aryty, arr, [k], wraparound=False)


@intrinsic
def _atomic_add(typingctx, ary, idx, val):
    """Atomically ``ary[idx] += val`` (int64, acq_rel); returns the old value."""
    if not (isinstance(ary, types.Array) and ary.dtype == types.int64):
        return None
    sig = types.int64(ary, idx, val)

    def codegen(context, builder, signature, args):
        ptr = _item_ptr(context, builder, signature.args[0], args[0], args[1], signature.args[1])
        x = context.cast(builder, args[2], signature.args[2], types.int64)
        return builder.atomic_rmw("add", ptr, x, "acq_rel")
    return sig, codegen


@intrinsic
def _load_acquire(typingctx, ary, idx):
    """``ary[idx]`` read with an atomic acquire load (int64)."""
    if not (isinstance(ary, types.Array) and ary.dtype == types.int64):
        return None
    sig = types.int64(ary, idx)

    def codegen(context, builder, signature, args):
        ptr = _item_ptr(context, builder, signature.args[0], args[0], args[1], signature.args[1])
        return builder.load_atomic(ptr, "acquire", 8)
    return sig, codegen


@intrinsic
def _store_release(typingctx, ary, idx, val):
    """``ary[idx] = val`` as an atomic release store (int64)."""
    if not (isinstance(ary, types.Array) and ary.dtype == types.int64):
        return None
    sig = types.void(ary, idx, val)

    def codegen(context, builder, signature, args):
        ptr = _item_ptr(context, builder, signature.args[0], args[0], args[1], signature.args[1])
        x = context.cast(builder, args[2], signature.args[2], types.int64)
        builder.store_atomic(x, ptr, "release", 8)
        return context.get_dummy_value()
    return sig, codegen


@intrinsic
def _cpu_relax(typingctx):
    """The x86 ``pause`` hint inside a spin loop (nothing elsewhere)."""
    sig = types.void()

    def codegen(context, builder, signature, args):
        import platform
        if platform.machine().lower() in ("x86_64", "amd64", "i686", "x86"):
            fnty = ir.FunctionType(ir.VoidType(), [])
            fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.x86.sse2.pause")
            builder.call(fn, [])
        return context.get_dummy_value()
    return sig, codegen


# sched_yield(2) bound by symbol name (resolved when the module is linked: cacheable)
_sched_yield = types.ExternalFunction("sched_yield", types.int32())


@njit(cache=True, nogil=True, inline="always")
def _barrier(sync, nthreads, gen):
    """Wait until all ``nthreads`` threads reached their ``gen``-th barrier (gen counts from 1).

    Returns False if the run was aborted while waiting. A single thread never waits.
    """
    if nthreads == 1:
        return True
    _atomic_add(sync, _ARRIVE, 1)
    target = gen * nthreads
    spins = 0
    while _load_acquire(sync, _ARRIVE) < target:
        if _load_acquire(sync, _ABORT) != 0:
            return False
        spins += 1
        if spins < SPINS_BEFORE_YIELD:
            _cpu_relax()
        else:  # the thread we wait for may have lost its core: let it run
            _sched_yield()
            spins = 0
    return True
