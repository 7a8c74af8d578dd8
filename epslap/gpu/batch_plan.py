"""How the batch kernel (``batch.cu``) is launched for a stack of B members of n1 x n2: the team
for the width (lanes or a block, columns per lane), the shared memory, the grid, the module
built for those choices, and the timing events; made once per shape and device and kept (a
detection batch's call is a few tenths of a millisecond, of which working these out again took
a tenth). ``epslap.gpu.batch`` launches with it."""
from __future__ import annotations

import threading
import time
from typing import NamedTuple

import numpy as np

from .._validate import float_cost_limit
from .modules import EPS_OPTIONS, GPU_DIR, build_module, status_header

BATCH_CU = GPU_DIR / "batch.cu"

#: the status of a member whose duals missed ``verify``'s rule on the device, polish included
#: (not a _status value: it never leaves the batch's modules; the member is solved again on
#: the host)
UNCERTIFIED = 64

#: the C type the kernel reads for each input dtype it takes as is
C_TYPES = {"float32": "float", "float64": "double", "int32": "int", "int64": "long long"}

# Per process: a call on small batches lasts a few milliseconds, of which querying the device's
# properties and the kernel's attributes would take two (measured on an H200)
_DEVICES: dict = {}  # device -> (name, attributes)
_KERNELS: dict = {}  # (device, defines) -> (kernel, attributes)


class Geometry(NamedTuple):
    """One launch's shape: ``team`` threads per problem, ``k`` columns per thread, ``threads``
    per block, ``minb`` blocks per multiprocessor the registers are sized for."""
    team: int
    k: int
    threads: int
    minb: int


def geometry(n2: int) -> Geometry:
    """The team for ``n2`` columns (``k`` a power of two, so that few modules are compiled). Up
    to 4 columns per lane a team is the narrowest part of a warp that holds them (8, 16 or 32
    lanes: more problems in flight, each step one set of loads); up to 256 columns a warp with 8
    per lane; wider problems a block of 256 threads, whose argmin costs one barrier per step.
    ``minb`` is the most blocks whose registers fit without spills (nvcc -Xptxas -v, sm_90: 80
    registers at up to 4 columns per lane, 95 at 8 (a block: 87 at 4, 114 at 8, 168 at 16)),
    except at 4 columns per lane, where 8 blocks (64 registers, a few bytes spilled) keep more
    problems in flight: 10-14% less kernel time than 6 blocks (H200; 100,000 x 20x20 and
    10,000 x 100x100, random and geometric, float32 and float64)."""
    for team, most in ((8, 8), (8, 16), (8, 32), (16, 64), (32, 128)):
        if n2 <= most:
            k = most // team
            return Geometry(team, k, 128, 8 if k == 4 else 6)
    if n2 <= 256:
        return Geometry(32, 8, 128, 4)
    k = next(k for k in (2, 4, 8, 16) if 256 * k >= n2)
    return Geometry(256, k, 256, 2 if k <= 8 else 1)


#: a batch of one whose matrix takes at most this many bytes is read from shared memory
#: (batch.cu, STAGE): 100 x 100 float64 single problems, NVIDIA H200: see the benchmark page
STAGE_BYTES_MAX = 160 * 1024
#: ... from this many columns: a team of a whole warp or a block (the narrower teams' problems
#: take few steps, and their blocks hold several teams)
STAGE_MIN_COLS = 65


def _stage_bytes(b: int, n1: int, n2: int, itemsize: int, dev: dict) -> int:
    """Shared memory for a batch of one's copy of its matrix (0: read from global memory),
    where the device gives a block that much beside the team's workspace (and 4 KiB for the
    kernel's own)."""
    size = (n1 * n2 * itemsize + 15) // 16 * 16
    if b != 1 or n2 < STAGE_MIN_COLS or size > STAGE_BYTES_MAX:
        return 0
    if team_bytes(n1, n2) + size + 4096 > dev.get("MaxSharedMemoryPerBlockOptin", 49152):
        return 0
    return size


def team_bytes(n1: int, n2: int) -> int:
    """Shared memory of one team (batch.cu, team_bytes): v, y, pred, x and the free list."""
    return (16 * n2 + 8 * n1 + 15) // 16 * 16


#: (device, b, n1, n2, dtype, integral) -> a launch's plan (``launch_plan``), made once per
#: process
_PLANS: dict = {}
_THREAD_EVENTS = threading.local()  # each thread's (start, end) timing events, per device


def launch_plan(cupy, b: int, n1: int, n2: int, dtype, integral: bool, stats: dict) -> tuple:
    """``(kernel, geometry, stage bytes, shared memory, grid, float range limit)`` of a launch
    over ``b`` members of ``n1 x n2``."""
    key = (cupy.cuda.Device().id, b, n1, n2, dtype.name, integral)
    plan = _PLANS.get(key)
    if plan is not None:
        return plan
    geo = geometry(n2)
    dev = device_info(cupy)[1]
    stage = _stage_bytes(b, n1, n2, dtype.itemsize, dev)
    if stage:  # one team, alone in its block, reading its matrix from shared memory
        geo = Geometry(geo.team, geo.k, geo.team, 1)
    defines = {"COST_INTEGRAL": int(integral), "IN_T": C_TYPES[dtype.name],
               "THREADS": geo.threads, "TEAM": geo.team, "K": geo.k, "MINB": geo.minb,
               "UNCERTIFIED": UNCERTIFIED, "STAGE": int(bool(stage))}
    kernel, attrs = _kernel(cupy, defines, stats)
    teams = geo.threads // geo.team
    smem = teams * (team_bytes(n1, n2) + stage)
    if smem > dev["MaxSharedMemoryPerBlockOptin"] - attrs.get("shared_size_bytes", 0):
        raise ValueError(f"backend='gpu': a {n1}x{n2} batch member needs {smem} bytes of "
                         "shared memory, more than this device gives a block")
    if smem > 48 * 1024:
        kernel.max_dynamic_shared_size_bytes = max(smem, kernel.max_dynamic_shared_size_bytes)
    grid = min(-(-b // teams), _resident_blocks(dev, attrs, geo.threads, smem))
    plan = (kernel, geo, stage, smem, grid, np.float64(float_cost_limit((n1, n2))))
    if len(_PLANS) >= 1024:
        _PLANS.clear()
    _PLANS[key] = plan
    return plan


def timing_events(cupy) -> tuple:
    """This thread's two timing events on the current device (made once: a call makes none)."""
    per_device = getattr(_THREAD_EVENTS, "pairs", None)
    if per_device is None:
        per_device = _THREAD_EVENTS.pairs = {}
    dev = cupy.cuda.Device().id
    pair = per_device.get(dev)
    if pair is None:
        pair = per_device[dev] = (cupy.cuda.Event(), cupy.cuda.Event())
    return pair


def device_info(cupy) -> tuple[str, dict]:
    """(name, attributes) of the current device, queried once per process."""
    dev = cupy.cuda.Device()
    info = _DEVICES.get(dev.id)
    if info is None:
        info = (cupy.cuda.runtime.getDeviceProperties(dev.id)["name"].decode(),
                dict(dev.attributes))
        _DEVICES[dev.id] = info
    return info


def _kernel(cupy, defines: dict, stats: dict):
    """``batch_solve`` built for ``defines`` on the current device, and its attributes."""
    key = (cupy.cuda.Device().id, tuple(defines.items()))
    got = _KERNELS.get(key)
    if got is None:
        t0 = time.perf_counter()
        kernel = build_module(cupy, BATCH_CU, status_header(), defines,
                              EPS_OPTIONS).get_function("batch_solve")
        got = (kernel, dict(kernel.attributes))  # compiles the module
        stats["compile_s"] += time.perf_counter() - t0
        _KERNELS[key] = got
    return got


def _resident_blocks(dev: dict, attrs: dict, threads: int, smem: int) -> int:
    """Blocks of this kernel that fit on the device at once (registers are allocated per warp
    in units of 256 and per quarter of a multiprocessor)."""
    per_warp = -(-max(attrs.get("num_regs", 255), 1) * 32 // 256) * 256
    warps = 4 * ((dev.get("MaxRegistersPerMultiprocessor", 65536) // 4) // per_warp)
    by_regs = warps // (threads // 32)
    by_threads = dev.get("MaxThreadsPerMultiProcessor", 2048) // threads
    by_smem = dev.get("MaxSharedMemoryPerMultiprocessor", 233472) // (
        smem + attrs.get("shared_size_bytes", 0) + 1024)
    per_sm = max(1, min(by_regs, by_threads, by_smem, dev.get("MaxBlocksPerMultiprocessor", 32)))
    return per_sm * dev["MultiProcessorCount"]


