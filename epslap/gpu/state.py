"""The device arrays of one ε-SSP solve (:class:`DeviceState`) and the device memory they take
(:func:`device_bytes`, :func:`search_bytes`)."""
from __future__ import annotations

import numpy as np

from .device_estimate import LIST_K, greedy_chunk, greedy_layout, greedy_smem
from .launch import SLOT_WORDS, LaunchConfig, blocks_for, exchange_slots
from .runtime import multiprocessors, smem_optin

# the pass kernel's resume record (eps_ssp.cu, "rows from a device row cache"): its length and
# the fields the host reads or writes
RESUME, R_NEED, R_LOGN, R_FILL_SLOT, R_EVICT = 32, 1, 13, 16, 17


class DeviceState:
    """Device arrays of one solve (all O(n2), the estimate's row arrays O(n1))."""

    def __init__(self, cupy, n1, n2, n_blocks, threads, work, log_cap=0, rec_blocks=None):
        """``n_blocks``: blocks of the pass's (logical) grid; ``rec_blocks``: of this device's
        launch, where a pass is split over several (default: all)."""
        self.cupy, self.n1, self.n2 = cupy, n1, n2
        self.v = cupy.zeros(n2, dtype=work)
        self.d = cupy.empty(n2, dtype=work)
        self.pred = cupy.empty(n2, dtype=np.int64)
        self.col_open = cupy.ones(n2, dtype=np.uint8)
        self.owner = cupy.empty(n2, dtype=np.int64)
        self.cpred = cupy.empty(n2, dtype=work)   # c[pred[j]][j] and c[owner[j]][j]
        self.cmatch = cupy.empty(n2, dtype=work)
        self.perm = cupy.arange(n1, dtype=np.int64)
        # pass kernel: per block, the record of an augmentation's steps; the exchange slots
        self.rec = cupy.empty((rec_blocks or n_blocks) * 3 * (n2 + 1), dtype=np.int32)
        self.xslots = exchange_slots(cupy, n_blocks, threads)
        # Cand / Pair slots: 2 * n_blocks entries of at most 48 bytes each
        self.slots = cupy.empty(2 * max(n_blocks, 1024) * 6, dtype=np.float64)
        self.out_f64 = cupy.zeros(3 + n_blocks + 4, dtype=np.float64)  # ... + phase clocks
        self.out_i64 = cupy.zeros(2, dtype=np.int64)
        self.progress = cupy.zeros(4, dtype=np.int64)
        # a suspended pass (device row cache): its loop state, then the access log (one
        # allocation: a single copy reads the record and the log's start); each thread's sum
        self.log_cap = log_cap
        self.resume_log = cupy.zeros(RESUME + log_cap, dtype=np.int64)
        self.resume = self.resume_log[:RESUME]
        self.alog = self.resume_log[RESUME:]
        self.head_len = RESUME + min(log_cap, 224)
        self.susp_d = cupy.zeros(n_blocks * threads, dtype=np.float64)
        # estimation
        self.vf = cupy.zeros(n2, dtype=np.float64)
        self.best1 = cupy.empty(n2, dtype=np.float64)
        self.best2 = cupy.empty(n2, dtype=np.float64)
        self.flag = cupy.zeros(n2, dtype=np.uint8)
        self.pick = cupy.full(n1, -1, dtype=np.int64)
        self.regret = cupy.empty(n1, dtype=np.float64)
        self.rmin = cupy.empty(n1, dtype=np.float64)
        self.sums = cupy.zeros(3, dtype=np.float64)
        self.sms = multiprocessors(cupy)  # the estimate's grid
        chunk = greedy_chunk(n1)  # the greedy sweeps' row lists, a chunk at a time
        self.list_val = cupy.empty(chunk * LIST_K, dtype=np.float64)
        self.list_col = cupy.empty(chunk * LIST_K, dtype=np.uint32)
        self.list_len = cupy.empty(chunk, dtype=np.int32)
        # estimate_greedy's dynamic shared memory; whether its bitmaps of taken columns are there
        self.greedy_shared, self.bits_in_smem = greedy_layout(cupy, n2)
        words = 0 if self.bits_in_smem else self.sms * -(-n2 // 32)
        self.taken_bits = cupy.empty(max(words, 1), dtype=np.uint32)  # else in shared memory

    def reset_pass(self, keep_assignment: bool = False) -> None:
        """Before a pass: no assignment, every column open, fresh slots and outputs.
        ``keep_assignment``: a pass that goes on from a checkpoint (owner, cmatch, the resume
        record and the partial sums as restored)."""
        if not keep_assignment:
            self.resume.fill(0)
            self.owner.fill(-1)
        self.col_open.fill(1)
        self.xslots.fill(0)
        self.out_f64.fill(0)
        self.out_i64.fill(0)
        self.progress.fill(0)

    def row_to_col(self):
        """Column of every real row, from the columns' owners (on the device)."""
        cupy = self.cupy
        cols = cupy.arange(self.n2, dtype=np.int64)
        real = (self.owner >= 0) & (self.owner < self.n1)
        out = cupy.full(self.n1, -1, dtype=np.int64)
        out[self.owner[real]] = cols[real]
        return out


def device_bytes(n1: int, n2: int, n_blocks: int, smem_optin: int = 0, sms: int = 0) -> int:
    """Device memory the search allocates for an n1 x n2 problem (n1 <= n2) on ``n_blocks``
    blocks: the O(n2) state of the passes and of the estimate (one column: v, d, pred, owner,
    cpred, cmatch, vf, best1, best2, a copy of v in stage E: 8 bytes each, two flags), the O(n1)
    row arrays (perm, pick, regret, rmin, the result), each block's int32 record of an
    augmentation's steps and the greedy sweeps' row lists (and each block's bitmap of taken
    columns where it does not fit in ``smem_optin`` bytes of shared memory: one per
    multiprocessor, ``sms``, which defaults to ``n_blocks``). Mirrors :class:`DeviceState`;
    CuPy's temporaries (a few O(n) arrays) come on top."""
    bits_global = not greedy_smem(n2, smem_optin)[1]
    per_col = 10 * 8 + 2
    per_row = 8 * 5
    record = n_blocks * 3 * (n2 + 1) * 4
    fixed = (2 * max(n_blocks, 1024) * 6 * 8 + 2 * n_blocks * 32 * 4 * SLOT_WORDS
             + 8 * (n_blocks + 16)
             + 8 * n_blocks * 1024 + 128  # ... and a suspended pass's state
             + greedy_chunk(n1) * (LIST_K * 12 + 4))
    bitmaps = 4 * (sms or n_blocks) * -(-n2 // 32) if bits_global else 0
    return per_col * n2 + per_row * n1 + record + fixed + bitmaps


def search_bytes(cupy, n1: int, n2: int, device=None, launch: LaunchConfig | None = None) -> int:
    """:func:`device_bytes` of an n1 x n2 problem (either orientation) on ``device`` (default:
    the current one), with the grid ``launch`` gives there (default: the tuned one), that
    device's opt-in shared memory and multiprocessors: what a memory budget must leave to the
    search (epslap.gpu.api checks it)."""
    lo, hi = sorted((int(n1), int(n2)))
    sms = multiprocessors(cupy, device)
    blocks = blocks_for(hi, sms, launch or LaunchConfig())
    return device_bytes(lo, hi, blocks, smem_optin(cupy, device), sms)
