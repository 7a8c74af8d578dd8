"""How many threads a CPU solve runs on: the count ``threads=None`` chooses (every core that
is free now, from the measured crossovers on), the cap on an explicit count, and the look at
other processes' load that lets lock-step threads hand over to one."""
from __future__ import annotations

import os
import warnings

import numba

from .._sync import available_cores
from ..errors import user_stacklevel

# threads=None uses one thread below this many columns (the measured crossovers: benchmarks/
# README.md "Two threads against one"); every core Numba may use from here on. Float matrices
# in memory gain from 2 threads at n = 2000 (1.2-1.4x), and so do cost sources computed as a
# table (solved as a matrix); integer matrices lose there (0.84x) and tie at 3000; costs
# through row caches keep the general rule.
AUTO_MIN_COLS = 4000
AUTO_MIN_COLS_FLOAT = 2000


def own_running() -> int:
    """Runnable threads of this process, the caller included (1 where unknown): the threads
    of an earlier parallel region that still spin count in /proc/loadavg, but they are ours."""
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return 1
    running = 0
    for tid in tasks:
        try:
            with open(f"/proc/self/task/{tid}/stat") as fh:
                running += fh.read().rsplit(")", 1)[1].split()[0] == "R"
        except (OSError, IndexError):
            continue
    return max(1, running)


def other_running() -> int:
    """Runnable tasks on the machine besides this process's own (0 where unknown)."""
    try:
        with open("/proc/loadavg") as fh:
            running = int(fh.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return 0
    return max(0, running - own_running())


#: hand automatically chosen lock-step threads over to one thread when other processes hold
#: the cores during the passes (``_sync.LoadWatch``). The tests that pin thread counts on a
#: shared machine turn it off.
LOAD_WATCH = True


def resolve_threads(threads, n2: int, min_cols: int = AUTO_MIN_COLS) -> int:
    """The number of solver threads for ``threads`` (``solve``'s keyword) and n2 columns; the
    one count every phase of the solve uses (estimate, passes, certificate).

    ``None``: every core that is free now — the cores this process may run on
    (:func:`available_cores`, at most ``numba.get_num_threads()``) less the runnable tasks of
    other processes (Linux ``/proc/loadavg``, without this process's own threads) — when n2 >=
    ``min_cols`` (AUTO_MIN_COLS; AUTO_MIN_COLS_FLOAT for a float matrix in memory), else 1
    (below the measured crossover the barrier per Dijkstra step costs more than the split scan
    saves). The threads meet once per Dijkstra step, so one that waits for a core stalls all:
    such automatic threads also hand over to one thread when they stall during the passes.
    An explicit count is honoured up to the cores that exist (and the threads Numba may use),
    whatever else runs; above that it is capped, with one warning. Every count keeps at least
    8 columns per thread.
    """
    cap = min(available_cores(), numba.get_num_threads())  # this module's name: tests pin it
    if threads is None:
        threads = cap if n2 >= min_cols else 1
        if threads > 1:  # lock-step threads lose badly to a peer that has no core of its own
            threads = max(1, min(threads, available_cores() - other_running()))
    elif threads > cap:
        warnings.warn(f"threads={threads} is more than the {cap} cores this process may use "
                      f"(its CPU affinity {available_cores()}, numba.get_num_threads() "
                      f"{numba.get_num_threads()}); using {cap}: lock-step threads without a "
                      "core of their own stall each other", RuntimeWarning,
                      stacklevel=user_stacklevel())
        threads = cap
    return int(max(1, min(int(threads), n2 // 8)))
