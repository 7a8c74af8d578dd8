"""The device row cache: LFU/SLRU over row slots in device memory (docs/algorithm.md §7 on the GPU).

For costs that are expensive or come from the host — a NumPy matrix larger than the device, a
cost source without a device form (a Python or Numba function, a file), a user's CUDA kernel
(``costfns.RowKernel``), or a device cost the user asks to cache — the pass kernel reads rows
from ``slots`` (E, n2) through ``slot_of`` (n1,): the slot of each row, -1 when it is not on the
device. When it needs a missing row, the kernel suspends (``eps_ssp.cu``, EXTERNAL_ROWS); the
host then

1. replays the kernel's log of accesses to present rows, and the miss, through the CPU cache's
   own compiled policy code (``epslap.cache``: same LFU/SLRU semantics, one implementation),
   which names the slot to fill (and so the row it evicts);
2. fills the slot with the row: from host memory through a pinned buffer, or by a kernel launch;
3. updates ``slot_of`` and resumes the kernel.

Host synchronisations are then one per miss (plus one per pass); a hit costs nothing extra.
"""
from __future__ import annotations

import numpy as np

from costfns import CudaCost
from costfns.rows import fill_rows
from ..cache import POLICIES, make_cache, replay

def log_capacity(n2: int) -> int:
    """Accesses logged on the device between two host visits (a full log costs one visit)."""
    return int(min(1 << 20, max(4096, 8 * n2)))


_CACHE_CODE = """
#define EXTERNAL_ROWS 1
__device__ __forceinline__ long long row_slot(const CostArgs& a, long long i) {
    return ((const long long*)a.p[1])[i];
}
__device__ __forceinline__ cost_t cost_fn(const CostArgs& a, long long i, long long j) {
    return ((const cost_t*)a.p[0])[row_slot(a, i) * a.n2 + j];
}"""


class HostRows:
    """Rows computed on the host (a compiled cost-source state or a NumPy matrix), copied to the
    device through a pinned buffer."""

    def __init__(self, cupy, state, n2: int, row_dtype, work):
        self.cupy, self.state = cupy, state
        mem = cupy.cuda.alloc_pinned_memory(n2 * np.dtype(work).itemsize)
        self.pinned = np.frombuffer(mem, dtype=work, count=n2).reshape(1, n2)
        self._mem = mem  # keeps the pinned allocation alive
        # rows of another dtype are computed into a staging row, then converted
        same = np.dtype(row_dtype) == np.dtype(work)
        self.stage = self.pinned if same else np.empty((1, n2), dtype=row_dtype)
        # a copy from pinned memory may still be under way when the call returns: the next
        # row waits for it before it overwrites the buffer (rows read back to back, e.g. a
        # checkpoint's fingerprint rows, raced with their uploads)
        self.uploaded = cupy.cuda.Event(disable_timing=True)
        self.uploaded.record()

    def fill(self, i: int, dst) -> None:
        self.uploaded.synchronize()
        fill_rows(self.state, np.int64(i), self.stage)
        if self.stage is not self.pinned:
            self.pinned[0] = self.stage[0]
        dst.set(self.pinned[0])
        self.uploaded.record()


class KernelRows:
    """Rows written on the device by a user's ``costfns.RowKernel`` (negated for maximize)."""

    def __init__(self, source, negate: bool):
        self.source, self.negate = source, negate

    def fill(self, i: int, dst) -> None:
        self.source.fill_device(dst, i)
        if self.negate:
            dst *= -1


class DeviceCostRows:
    """Rows of a device cost (its ``fill_row`` kernel): an expensive cost computed once per miss."""

    def __init__(self, kernel, args, grid):
        self.kernel, self.args, self.grid = kernel, args, grid

    def fill(self, i: int, dst) -> None:
        self.kernel(self.grid, (256,), (*self.args, np.int64(i), dst))


class DeviceRowCache:
    """``capacity`` row slots on the device under ``policy`` ("lfu" or "slru"), filled by
    ``rows`` (one of the classes above)."""

    def __init__(self, cupy, n1: int, n2: int, work, capacity: int, policy: str, rows):
        if policy not in POLICIES:
            raise ValueError(f"cache must be one of 'auto', 'lfu', 'slru'; got {policy!r}")
        self.cupy, self.n1, self.n2, self.rows, self.policy = cupy, n1, n2, rows, policy
        capacity = int(max(1, min(capacity, n1)))
        self.slots = cupy.empty((capacity, n2), dtype=work)
        self.slot_of = cupy.full(n1, -1, dtype=np.int64)
        # (the access log is not here: it follows the resume record, state.DeviceState)
        self.state = make_cache(np.zeros((1, 1)), n1, 0, capacity, policy, work)
        self.slot_row = np.full(capacity, -1, dtype=np.int64)
        self.mismatches = 0

    @property
    def capacity(self) -> int:
        return int(self.slots.shape[0])

    @staticmethod
    def device_bytes(capacity: int, n1: int, n2: int) -> int:
        return capacity * n2 * 8 + n1 * 8 + log_capacity(n2) * 8

    def cuda_cost(self) -> CudaCost:
        return CudaCost(_CACHE_CODE, [self.slots, self.slot_of], [], [])

    def serve(self, need: int, log: np.ndarray) -> tuple[int, int]:
        """The kernel suspended: replay its logged accesses, then fill row ``need`` (-1: the log
        was full, nothing to fill). Returns (slot of ``need``, the row it evicted or -1) for the
        kernel, which updates ``slot_of`` itself when it resumes."""
        k, wrong = replay(self.state, log, np.int64(need))
        self.mismatches += int(wrong)
        if need < 0:
            return -1, -1
        old = int(self.slot_row[k])
        self.rows.fill(need, self.slots[k])
        self.slot_row[k] = need
        return int(k), old

    def stats(self) -> dict:
        hits, misses = (int(x) for x in self.state.policy.hits)
        return dict(cache_policy=self.policy, cache_rows=self.capacity, cache_hits=hits,
                    cache_misses=misses, cache_location="device")
