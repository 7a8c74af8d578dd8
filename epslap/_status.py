"""The one table of statuses that compiled code returns, on the CPU and on the GPU, and the one
place they become exceptions (:func:`raise_for_status`).

Compiled code never raises: a Numba kernel returns a status, a CUDA kernel writes one. The Numba
code reads the module-level ``STATUS_*`` integers (compile-time constants); the CUDA sources get
the same numbers as ``#define STATUS_*`` lines (:func:`cuda_defines`), never literals. Where a
kernel keeps the largest of several statuses (``atomicMax``), INVALID > INFEASIBLE makes a NaN
reported before an infeasible row, as scipy does.
"""
from __future__ import annotations

from enum import IntEnum

from .errors import InfeasibleError


class Status(IntEnum):
    OK = 0
    INFEASIBLE = 1       # no complete assignment of finite cost
    INTERRUPTED = 2      # a stop request (Ctrl-C)
    INVALID = 3          # NaN or -inf in a row
    CERTIFIED = 4        # the estimate's assignment is already optimal (an OK)
    ABORTED = 5          # a peer thread ended abnormally
    SUSPENDED = 6        # a GPU pass waits for the host to fill a missing row (not an end)
    BROKEN_PATH = 7      # Hungarian: an alternating path did not close (a defect)
    ITERATION_LIMIT = 8  # Hungarian: the dual updates exceeded their bound (a defect)
    PAUSED = 9           # a checkpoint's stop request, met after an augmentation (not an end)
    OUT_OF_RANGE = 10    # a finite cost beyond the range rule (the small path, the GPU batch)
    NEEDS_EPSILON = 11   # the small path hands the problem to the ε method (not an end)


STATUS_OK = int(Status.OK)
STATUS_INFEASIBLE = int(Status.INFEASIBLE)
STATUS_INTERRUPTED = int(Status.INTERRUPTED)
STATUS_INVALID = int(Status.INVALID)
STATUS_CERTIFIED = int(Status.CERTIFIED)
STATUS_ABORTED = int(Status.ABORTED)
STATUS_SUSPENDED = int(Status.SUSPENDED)
STATUS_BROKEN_PATH = int(Status.BROKEN_PATH)
STATUS_ITERATION_LIMIT = int(Status.ITERATION_LIMIT)
STATUS_PAUSED = int(Status.PAUSED)
STATUS_OUT_OF_RANGE = int(Status.OUT_OF_RANGE)


#: a stop request, as the host writes it into a CPU solve's control word (``ctl[0]``) and the
#: passes read it: none; now (Ctrl-C, a hand-over to one thread: the kernel ends before the next
#: row changes anything); after the augmentation under way (a checkpoint: no work is lost)
STOP_NONE = 0
STOP_NOW = 1
STOP_AFTER_AUGMENTATION = 2


def cuda_defines() -> str:
    """``#define STATUS_<NAME> <value>`` for every status, for the CUDA sources' headers."""
    return "".join(f"#define STATUS_{s.name} {s.value}\n" for s in Status)


def raise_for_status(status: int, backend: str) -> None:
    """Raise the exception ``status`` stands for; OK and CERTIFIED return."""
    if status == STATUS_OK or status == STATUS_CERTIFIED:  # the common case, without the enum
        return
    try:
        s = Status(int(status))
    except ValueError:
        raise RuntimeError(f"backend={backend!r}: unknown kernel status {status}") from None
    if s in (Status.OK, Status.CERTIFIED):
        return
    if s == Status.INFEASIBLE:
        raise InfeasibleError("cost matrix is infeasible")
    if s == Status.INVALID:
        raise ValueError("matrix contains invalid numeric entries (NaN or -inf; +inf when "
                         "maximising)")
    if s == Status.OUT_OF_RANGE:  # (the GPU batch names the magnitude: gpu/batch.py)
        raise ValueError("float costs could overflow float64 during the solve (|cost| * (4n + 8) "
                         "must stay below 2**1020); scale the costs down")
    if s == Status.INTERRUPTED:
        raise KeyboardInterrupt("epslap solve interrupted")
    what = {Status.ABORTED: "a solver thread ended abnormally",
            Status.SUSPENDED: "a pass ended waiting for a row",
            Status.BROKEN_PATH: "an alternating path did not close",
            Status.ITERATION_LIMIT: "the dual updates exceeded their bound",
            Status.NEEDS_EPSILON: "the small path's hand-over was read as an end"}[s]
    raise RuntimeError(f"backend={backend!r}: {what} (internal error); please report this "
                       "problem (use backend='cpu' meanwhile)")
