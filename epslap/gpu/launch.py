"""How the GPU backends launch their kernels: :class:`LaunchConfig`, and the grid, block, unroll
and shared-memory choices of the ε-SSP pass kernel that follow from it and the problem's size.

Nothing here imports CuPy (``epslap.gpu.LaunchConfig`` is importable without it): functions that
ask the device take the ``cupy`` module as an argument.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .._validate import is_count
from .runtime import multiprocessors, smem_optin

THREADS = 512

# Up to this many columns the pass kernel runs on at most 32 blocks of 512 threads, where the
# blocks agree on each step through one warp per block (exchange.cuh, grid_best's short path);
# beyond it every multiprocessor gets a block. Measured on an H100, geometric on demand, µs per
# step, 32 x 512 against 132 x 256: 3.08 / 3.15 (random, n = 32000), 4.18 / 3.76 (n = 48000),
# 4.74 / 4.03 (n = 64000); at n = 128000 32 x 512 took 7.84 µs against 5.73 before the
# large-grid exchange polled only the slots' heads (docs/design-notes.md).
SHORT_PATH_MAX_N2 = 32768

# 32-bit words of one exchange slot (exchange.cuh, Slot)
SLOT_WORDS = 32

# bytes per column of the pass kernel's column state in shared memory (eps_ssp.cu, SMEM_STATE):
# v, d and the matched cost (8 each), owner and pred (int32), the open flag
SMEM_BYTES_PER_COLUMN = 33

SMEM_STATE_MODES = ("auto", "on", "off")

# the environment variables :meth:`LaunchConfig.from_env` reads
ENV_THREADS = "EPSLAP_GPU_THREADS"
ENV_BLOCKS = "EPSLAP_GPU_BLOCKS"
ENV_SMEM_STATE = "EPSLAP_GPU_SMEM_STATE"
ENV_PHASE_CLOCKS = "EPSLAP_GPU_PHASE_CLOCKS"
ENV_HUNGARIAN_BLOCKS = "EPSLAP_HUNGARIAN_BLOCKS"


@dataclass(frozen=True)
class LaunchConfig:
    """The launch configuration of the GPU backends, passed into the solvers
    (``epslap.solve(..., launch=LaunchConfig(...))``). Every field defaults to the tuned choice;
    the others exist for tests and diagnostics. Every configuration reaches an optimum (certified
    as always); the grid decides the order in which an ε-pass adds its blocks' partial sums.

    ``threads``: threads per block of the ε-SSP pass and estimate kernels, a multiple of 32 up to
    1024 (None: 512, see :func:`threads_for`). ``blocks``: blocks of their cooperative launches,
    at most one per multiprocessor (None: by the problem's size, :func:`blocks_for`).
    ``smem_state``: the pass kernel's column state in shared memory: "auto" (from 4 columns per
    thread on, where it fits: :func:`smem_state_bytes`), "on" (wherever it fits) or "off".
    ``phase_clocks``: the diagnostic build of the pass kernel, which counts block 0's clock
    cycles per phase of a pass (``stats["phase_cycles"]``). ``hungarian_blocks``: blocks of the
    Hungarian kernel (None: 2 per multiprocessor; more are clamped to what is co-resident).
    """
    threads: int | None = None
    blocks: int | None = None
    smem_state: str = "auto"
    phase_clocks: bool = False
    hungarian_blocks: int | None = None

    def __post_init__(self):
        if self.threads is not None and not (is_count(self.threads, 32)
                                             and self.threads <= 1024 and self.threads % 32 == 0):
            raise ValueError("LaunchConfig.threads must be None or a multiple of 32 from 32 to "
                             f"1024, got {self.threads!r}")
        for name in ("blocks", "hungarian_blocks"):
            value = getattr(self, name)
            if value is not None and not is_count(value, 1):
                raise ValueError(f"LaunchConfig.{name} must be None or a positive integer, "
                                 f"got {value!r}")
        if self.smem_state not in SMEM_STATE_MODES:
            raise ValueError("LaunchConfig.smem_state must be one of 'auto', 'on', 'off'; got "
                             f"{self.smem_state!r}")
        if not isinstance(self.phase_clocks, bool):
            raise ValueError(f"LaunchConfig.phase_clocks must be a bool, got "
                             f"{self.phase_clocks!r}")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> LaunchConfig:
        """The configuration the environment asks for (``os.environ`` by default), read where a
        solve enters a GPU backend without a configuration: ``EPSLAP_GPU_THREADS``,
        ``EPSLAP_GPU_BLOCKS``, ``EPSLAP_HUNGARIAN_BLOCKS`` (integers; unset or empty: the
        default), ``EPSLAP_GPU_SMEM_STATE`` ("1" on, "0" off, else auto) and
        ``EPSLAP_GPU_PHASE_CLOCKS`` (any non-empty value: the diagnostic build)."""
        env = os.environ if environ is None else environ

        def count(name):
            text = env.get(name)
            if not text:
                return None
            try:
                return int(text)
            except ValueError:
                raise ValueError(f"{name}={text!r}: expected an integer") from None

        smem = {"1": "on", "0": "off"}.get(env.get(ENV_SMEM_STATE), "auto")
        return cls(threads=count(ENV_THREADS), blocks=count(ENV_BLOCKS), smem_state=smem,
                   phase_clocks=bool(env.get(ENV_PHASE_CLOCKS)),
                   hungarian_blocks=count(ENV_HUNGARIAN_BLOCKS))


def launches_serialised(environ: Mapping[str, str] | None = None) -> bool:
    """Whether CUDA runs every launch to its end before the next one starts
    (``CUDA_LAUNCH_BLOCKING`` set): a pass split over devices, whose launches wait for each
    other at every step, cannot run then (``epslap.gpu.split``)."""
    env = os.environ if environ is None else environ
    return env.get("CUDA_LAUNCH_BLOCKING", "0") not in ("", "0")


def resolve_launch(launch: LaunchConfig | None) -> LaunchConfig:
    """``launch``, or the environment's configuration where none is given (the one place the
    GPU backends read the environment: ``epslap.solve``'s dispatch)."""
    if launch is None:
        return LaunchConfig.from_env()
    if not isinstance(launch, LaunchConfig):
        raise TypeError(f"launch must be an epslap.gpu.LaunchConfig, got {type(launch).__name__}")
    return launch


def threads_for(launch: LaunchConfig) -> int:
    """Threads per block (``launch.threads`` overrides): 512 at every size. On the large grid
    (one block per multiprocessor) 512 threads beat 256 once a thread owns about two columns or
    more: NVIDIA H100, geometric on demand, µs per step 3.52 against 3.78 (n = 64000), 4.13
    against 4.56 (n = 128000); NVIDIA H200, n = 256000, 155.8 s against 205.1 s. 1024 threads
    cap the registers at 64 and spill (4.40 µs at n = 128000). On the short path (32 blocks)
    132 x 512 loses: 3.87 against 3.24 µs (random dense, n = 32000)."""
    return launch.threads or THREADS


def blocks_for(n2: int, sms: int, launch: LaunchConfig) -> int:
    """Blocks of the cooperative kernels (``launch.blocks`` overrides): at most one per
    multiprocessor, all co-resident as a cooperative launch requires; 32 on the short path."""
    if launch.blocks:
        return launch.blocks
    return min(sms, 32) if n2 <= SHORT_PATH_MAX_N2 else sms


def unroll_for(n2: int, n_blocks: int, threads: int) -> int:
    """Columns per thread whose loads one scan issues together (eps_pass's UNROLL): all of a
    thread's columns up to 4, so that a step waits for one memory latency, not one per column."""
    return max(1, min(4, -(-n2 // (n_blocks * threads))))


def smem_state_bytes(cupy, n2: int, n_blocks: int, threads: int, mode: str = "auto") -> int:
    """Dynamic shared memory of the pass kernel when its column state goes to shared memory
    (one slot per column of every thread of a block), else 0: the state stays in global memory.

    Shared memory is used from 4 columns per thread on, where it fits: geometric on demand on an
    NVIDIA H100, µs per step shared / global, 4.41 / 4.59 at n = 256000 (4 columns per thread)
    but 3.87 / 3.65 at n = 128000 (2 columns per thread). ``mode`` "on" uses it wherever it
    fits, "off" never (``LaunchConfig.smem_state``)."""
    per_thread = -(-n2 // (n_blocks * threads))
    if mode == "off" or (mode != "on" and per_thread < 4):
        return 0
    slots = per_thread * threads
    need = slots * SMEM_BYTES_PER_COLUMN
    # the opt-in limit, less what the kernel's static shared memory takes (below 4 KiB)
    limit = smem_optin(cupy) - 4096
    return need if need <= limit else 0


class PassGeometry(NamedTuple):
    """The pass kernel's launch for one problem: ``threads`` per block, ``blocks``, ``unroll``
    (columns per thread loaded together) and ``smem`` (bytes of column state in shared memory;
    0: in global memory)."""
    threads: int
    blocks: int
    unroll: int
    smem: int


def pass_geometry(cupy, n2: int, launch: LaunchConfig, blocks: int | None = None) -> PassGeometry:
    """The pass kernel's launch on the current device for ``n2`` columns; ``blocks`` overrides
    the configuration (the single-block rerun of a solve whose certificate failed)."""
    sms = multiprocessors(cupy)
    n_blocks = int(blocks or blocks_for(n2, sms, launch))
    if not 1 <= n_blocks <= sms:
        raise ValueError(f"backend='gpu': {n_blocks} blocks requested; 1 to {sms} are "
                         "possible on this device")
    return grid_geometry(cupy, n2, launch, n_blocks)


def grid_geometry(cupy, n2: int, launch: LaunchConfig, n_blocks: int) -> PassGeometry:
    """The pass kernel's geometry on a grid of ``n_blocks`` blocks, one launch's or the logical
    grid of a pass split over several devices (``split.py``): the unroll and the shared-memory
    column state follow from the columns per thread (the limit of the current device)."""
    threads = threads_for(launch)
    return PassGeometry(threads, n_blocks, unroll_for(n2, n_blocks, threads),
                        smem_state_bytes(cupy, n2, n_blocks, threads, launch.smem_state))


def exchange_slots(cupy, n_blocks: int, threads: int):
    """Zeroed slots of the pass kernel's exchange (exchange.cuh, Slot): two buffers, room for
    one slot per warp of every block."""
    return cupy.zeros(2 * n_blocks * max(threads // 32, 1) * SLOT_WORDS, dtype=np.uint32)
