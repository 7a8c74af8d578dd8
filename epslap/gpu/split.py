"""One problem's ε-passes split over several GPUs (``solve(..., backend="gpu", device=[0, 1])``).

The columns are split, as the published CUDA solver does: each pass runs as one launch of the
pass kernel per device, and the launches together form one logical grid (``GridPart`` in
``exchange.cuh``): logical block b of the grid is block b - base of the launch that holds it, and
column j still belongs to logical thread j % S. Every launch keeps its own copy of the column
state and scans only its own threads' columns; the blocks agree on each Dijkstra step's winner
through their exchange slots, where each block writes its candidate into every launch's slots
(peer-to-peer across devices) and polls only its own launch's. The host copies the prices and
the rows' order from the first device before a pass and takes each launch's columns back after
it; the estimate, the schedule between passes, the assigned costs and the certificate run on the
first device as in a one-device solve.

A device listed twice gets two partitions, two launches at once on that device: the split's
protocol tested on one GPU (it gives the same answer as one launch).

Every launch of a pass must run at the same time: a block waits for every other block's
candidate at each step. Launches that the driver serialises would wait forever, so a split is
refused under ``CUDA_LAUNCH_BLOCKING=1``. Two cooperative launches on one device ran together
on every GPU tried (H100, H200), but CUDA does not promise it: ``device=[0, 0]`` is a test of the
protocol, not a way to solve faster. The ``memory=`` budget is checked on the first device.
"""
from __future__ import annotations

from collections import Counter
from typing import NamedTuple

import numpy as np

from .launch import LaunchConfig, PassGeometry, blocks_for
from .runtime import cost_args, multiprocessors


class Partition(NamedTuple):
    """One launch of a split pass: on ``device``, logical blocks ``base .. base + blocks - 1``,
    its own ``state`` (``DeviceState``; the first partition's is the solve's), pass ``kernel``
    and cost ``args`` there, ``peers`` (a device array of the other partitions' slot pointers)
    and the ``stream`` it is launched on."""
    device: int
    base: int
    blocks: int
    state: object
    kernel: object
    args: tuple
    peers: object
    stream: object
    keep: list


def split_blocks(cupy, devices: tuple[int, ...], n2: int, launch: LaunchConfig) -> list[int]:
    """Blocks of each partition's launch: ``launch.blocks`` each where given, else the blocks a
    one-device solve would take on that device, shared between the partitions of one device
    (so that every launch on it is co-resident)."""
    shares = Counter(devices)
    out = []
    for d in devices:
        if launch.blocks:
            out.append(launch.blocks)
        else:
            out.append(max(1, blocks_for(n2, multiprocessors(cupy, d), launch) // shares[d]))
    for d, count in shares.items():
        used = sum(b for dev, b in zip(devices, out) if dev == d)
        if used > multiprocessors(cupy, d):
            raise ValueError(f"backend='gpu': {used} blocks on device {d} (over {count} "
                             f"partitions); at most {multiprocessors(cupy, d)} fit there at once")
    return out


def enable_peer_access(cupy, devices: tuple[int, ...]) -> None:
    """Peer access between every two distinct devices of the split, or a clear error."""
    rt = cupy.cuda.runtime
    distinct = sorted(set(devices))
    for a in distinct:
        for b in distinct:
            if a == b:
                continue
            if not rt.deviceCanAccessPeer(a, b):
                raise ValueError(f"backend='gpu': device {a} cannot access device {b}'s memory "
                                 "(peer-to-peer); a split needs devices linked by NVLink or PCIe "
                                 "peer access")
            with cupy.cuda.Device(a):
                try:
                    rt.deviceEnablePeerAccess(b)
                except rt.CUDARuntimeError as exc:  # already enabled: fine
                    if "PeerAccessAlreadyEnabled" not in str(exc):
                        raise


def make_partitions(cupy, run_state, devices, blocks, geo: PassGeometry, make_state,
                    make_kernel, cuda_cost, n1: int, n2: int, first_kernel, first_args):
    """The partitions of a split solve. The first is on the current device and uses the solve's
    own state, kernel and cost arguments; the others get theirs on their devices
    (``make_state(cupy, blocks)`` and ``make_kernel(cupy)`` build them there)."""
    enable_peer_access(cupy, devices)
    parts, base = [], 0
    for p, (d, nb) in enumerate(zip(devices, blocks)):
        with cupy.cuda.Device(d):
            if p == 0:
                state, kernel, args, keep = run_state, first_kernel, first_args, []
            else:
                state = make_state(cupy, nb)
                kernel = make_kernel(cupy)
                args, keep = cost_args(cupy, cuda_cost, n1, n2)
            stream = cupy.cuda.Stream(non_blocking=True)
            parts.append([d, base, nb, state, kernel, args, None, stream, keep])
        base += nb
    for p, part in enumerate(parts):  # each launch writes into every other launch's slots
        with cupy.cuda.Device(part[0]):
            others = [np.uint64(q[3].xslots.data.ptr) for k, q in enumerate(parts) if k != p]
            part[6] = cupy.asarray(np.array(others, dtype=np.uint64))
    return tuple(Partition(*part) for part in parts)


def owned_columns(cupy, n2: int, threads: int, total_blocks: int, part: Partition):
    """Mask of the columns a partition's threads own (column j: logical thread j % S)."""
    t = cupy.arange(n2, dtype=np.int64) % (total_blocks * threads)
    return (t >= part.base * threads) & (t < (part.base + part.blocks) * threads)


def _copy(cupy, dst, dst_dev: int, src, src_dev: int) -> None:
    """src into dst (cudaMemcpyPeer: ordered after all work on both devices; the callers also
    synchronise the devices around their copies, whatever stream the solve runs on)."""
    cupy.cuda.runtime.memcpyPeer(dst.data.ptr, dst_dev, src.data.ptr, src_dev, src.nbytes)


def launch_split(cupy, parts: tuple, geo: PassGeometry, pass_args, keep_assignment: bool) -> None:
    """Start one launch of the pass on every partition: the first's prices and row order copied
    to the others (and, going on inside a pass: a stop's or a checkpoint's, its assignment, the
    kernel's loop record and the threads' partial sums), every state reset, then every launch
    started (only after all resets: a launch writes into the others' slots at once).
    ``pass_args(state)`` gives the kernel's arguments from the state's row order up to the log's
    capacity."""
    first = parts[0]
    names = ("v", "perm") + (("owner", "cmatch", "resume", "susp_d") if keep_assignment else ())
    for p in parts:  # what the caller's streams wrote (v -= v.max(), a restore) is done
        cupy.cuda.Device(p.device).synchronize()
    for p in parts:
        with cupy.cuda.Device(p.device):
            if p is not first:
                for name in names:
                    _copy(cupy, getattr(p.state, name), p.device, getattr(first.state, name),
                          first.device)
            p.state.reset_pass(keep_assignment=keep_assignment)
    for p in parts:
        cupy.cuda.Device(p.device).synchronize()
    for p in parts:
        with cupy.cuda.Device(p.device), p.stream:
            p.kernel((p.blocks,), (geo.threads,), (
                *p.args, *pass_args(p.state), np.uint32(p.base), np.uint32(geo.blocks),
                np.uint64(p.peers.data.ptr), np.int32(len(parts) - 1)), shared_mem=geo.smem)


def finish_split(cupy, parts: tuple, geo: PassGeometry, masks: list) -> None:
    """Wait for every launch, then take each partition's columns (prices, owners, matched costs),
    its threads' partial sums and its blocks' sums back into the first's arrays."""
    for p in parts:
        p.stream.synchronize()
    first = parts[0]
    with cupy.cuda.Device(first.device):
        st = first.state
        cupy.cuda.Device().synchronize()
        for p, mask in zip(parts[1:], masks[1:]):
            for name in ("v", "owner", "cmatch"):
                tmp = cupy.empty_like(getattr(st, name))
                _copy(cupy, tmp, first.device, getattr(p.state, name), p.device)
                cupy.copyto(getattr(st, name), tmp, where=mask)
            threads = (p.base * geo.threads, (p.base + p.blocks) * geo.threads)
            for name, (lo, hi) in (("susp_d", threads), ("out_f64", (3 + p.base,
                                                                     3 + p.base + p.blocks))):
                tmp = cupy.empty(hi - lo, dtype=np.float64)
                _copy(cupy, tmp, first.device, getattr(p.state, name)[lo:hi], p.device)
                getattr(st, name)[lo:hi] = tmp
        cupy.cuda.Device().synchronize()  # merged, whatever stream reads it next
