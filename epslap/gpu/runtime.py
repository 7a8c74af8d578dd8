"""CuPy and the device: the import with a clear error, the device attributes the launches depend
on, the grid of the grid-stride helper kernels, and the cost source's kernel arguments."""
from __future__ import annotations

from types import ModuleType

import numpy as np

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
