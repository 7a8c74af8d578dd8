"""CuPy and the device: the import with a clear error, the device attributes the launches depend
on, the grid of the grid-stride helper kernels, and the cost source's kernel arguments."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from types import ModuleType

import numpy as np

from .._sync import available_cores
from ..errors import GPUUnavailableError


def import_cupy() -> ModuleType:
    """CuPy and a usable device, or a clear error naming the extra to install."""
    try:
        import cupy
    except ImportError as exc:
        raise GPUUnavailableError(
            "the GPU backends ('gpu', 'hungarian-gpu') need CuPy: pip install "
            "'epslap[gpu-cuda12]' (CUDA 12) or 'epslap[gpu-cuda13]' (CUDA 13)") from exc
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            raise GPUUnavailableError("backend='gpu': CuPy sees no CUDA device")
    except cupy.cuda.runtime.CUDARuntimeError as exc:
        raise GPUUnavailableError(f"backend='gpu': no usable CUDA device ({exc})") from exc
    return cupy


def multiprocessors(cupy, device: int | None = None) -> int:
    """Multiprocessors of ``device`` (default: the current one)."""
    return cupy.cuda.Device(device).attributes["MultiProcessorCount"]


def smem_optin(cupy, device: int | None = None) -> int:
    """The most shared memory one block may opt in to on ``device`` (default: the current one)."""
    return cupy.cuda.Device(device).attributes["MaxSharedMemoryPerBlockOptin"]


def wide_grid(cupy) -> tuple:
    """Grid of the grid-stride helper kernels: 4 blocks of 256 threads per multiprocessor, which
    stays within what a cooperative launch allows (the modules are built with cooperative groups,
    so CuPy launches every kernel of them cooperatively)."""
    return (4 * multiprocessors(cupy),)


def cost_args(cupy, cuda_cost, n1: int, n2: int) -> tuple[tuple, list]:
    """Pack a CudaCost into the kernels' CostArgs parameters (4 pointers, 4 doubles, 4 int64,
    n1, n2; common.cuh, COST_PARAMS). Returns ``(args, arrays)``: keep ``arrays`` alive while
    the kernels may read them."""
    here = cupy.cuda.Device().id
    arrays = [(a if a.device.id == here else cupy.copy(a))  # another device's: a copy here
              if isinstance(a, cupy.ndarray) else cupy.asarray(np.ascontiguousarray(a))
              for a in cuda_cost.arrays]
    ptrs = [np.uint64(a.data.ptr) for a in arrays] + [np.uint64(0)] * (4 - len(arrays))
    floats = ([np.float64(x) for x in cuda_cost.floats]
              + [np.float64(0)] * (4 - len(cuda_cost.floats)))
    ints = [np.int64(x) for x in cuda_cost.ints] + [np.int64(0)] * (4 - len(cuda_cost.ints))
    return tuple(ptrs + floats + ints + [np.int64(n1), np.int64(n2)]), arrays


#: a host array of at least this many bytes is uploaded in chunks through pinned buffers,
#: filled by UPLOAD_THREADS threads while the device copies the previous round (NVIDIA H200,
#: 16,000 x 16,000 float64: 0.08 s against 0.25 s for ``cupy.asarray``'s one pageable copy)
UPLOAD_CHUNKED_MIN = 64 << 20
UPLOAD_CHUNK = 16 << 20
UPLOAD_THREADS = 8


def upload(cupy, host: np.ndarray):
    """``cupy.asarray(host)`` on the current device; a large C-contiguous array through pinned
    buffers (UPLOAD_CHUNKED_MIN): the host's threads copy one round of chunks into one set of
    buffers while the device reads the other set. The copies run on a stream of their own that
    first waits for the current stream (the new array's memory may have been freed by work
    queued there), and are waited for whatever happens (no copy outlives its buffers)."""

    import cupyx
    threads = min(UPLOAD_THREADS, available_cores())
    if host.nbytes < UPLOAD_CHUNKED_MIN or not host.flags.c_contiguous or threads < 2:
        return cupy.asarray(host)
    src = host.reshape(-1)
    per = max(1, UPLOAD_CHUNK // host.itemsize)
    spans = [(lo, min(lo + per, src.size)) for lo in range(0, src.size, per)]
    threads = min(threads, len(spans))
    try:
        sets = [[cupyx.empty_pinned(per, host.dtype) for _ in range(threads)] for _ in range(2)]
    except (cupy.cuda.runtime.CUDARuntimeError, MemoryError):
        return cupy.asarray(host)  # no pinned memory to be had: one pageable copy
    out = cupy.empty(host.shape, host.dtype)
    dst = out.reshape(-1)
    read = [None, None]  # per set of buffers: the event after the device's copies from it
    stream = cupy.cuda.Stream(non_blocking=True)
    stream.wait_event(cupy.cuda.get_current_stream().record())
    try:
        with ThreadPoolExecutor(threads) as pool:
            for r, first in enumerate(range(0, len(spans), threads)):
                bufs, batch = sets[r % 2], spans[first:first + threads]
                if read[r % 2] is not None:
                    read[r % 2].synchronize()
                list(pool.map(lambda t: np.copyto(bufs[t][:batch[t][1] - batch[t][0]],
                                                  src[batch[t][0]:batch[t][1]]),
                              range(len(batch))))
                for buf, (lo, hi) in zip(bufs, batch):
                    dst[lo:hi].set(buf[:hi - lo], stream=stream)
                read[r % 2] = stream.record()
    finally:
        stream.synchronize()
    return out
