"""Costs from a user's CUDA kernel (CuPy ``RawKernel``) that fills a slice of a row on the device.

This is the GPU interface of Guthe & Thuerck's published solver: the user supplies a kernel
that writes the costs ``c[i][lo:hi]`` of one row into device memory, and the solver asks for rows
as it needs them. With ``backend="gpu"`` the rows go into a device row cache (LFU/SLRU under the
``memory`` budget; the rows are never copied to the host during the passes). The estimate and
the final certificate read every row on the host (one kernel launch and one copy per row).

The kernel's parameters are ``(T* out, long long i, long long lo, long long hi, <args>)`` with
``T`` = ``double`` (``dtype=float64``) or ``long long`` (``dtype=int64``): it must write
``out[j - lo] = c[i][j]`` for ``lo <= j < hi``, for any launch shape (a grid-stride loop).
Example: ``EXAMPLE_SOURCE`` below (squared distances between 2-D points held on the device)::

    import cupy, numpy, costfns, epslap
    from costfns.device import EXAMPLE_SOURCE
    kernel = cupy.RawKernel(EXAMPLE_SOURCE, "sqdist")
    n = 20000
    x, y = cupy.random.rand(n, 2), cupy.random.rand(n, 2)
    source = costfns.RowKernel(kernel, (n, n), args=(x, y))
    sol = epslap.solve(source, backend="gpu", memory="4GiB")
"""
from __future__ import annotations

import numpy as np

from ._base import CostSource, check_shape
from .functions import FunctionSource

_DTYPES = (np.dtype(np.float64), np.dtype(np.int64))

#: the module docstring's example kernel: c[i][j] = |x_i - y_j|² for 2-D points x, y (row-major)
EXAMPLE_SOURCE = r"""
extern "C" __global__ void sqdist(double* out, long long i, long long lo, long long hi,
                                  const double* x, const double* y) {
    for (long long j = lo + blockIdx.x * blockDim.x + threadIdx.x; j < hi;
         j += (long long)gridDim.x * blockDim.x) {
        const double dx = x[2 * i] - y[2 * j], dy = x[2 * i + 1] - y[2 * j + 1];
        out[j - lo] = dx * dx + dy * dy;
    }
}"""


class RowKernel(CostSource):
    """Costs from a CuPy ``RawKernel`` that fills a slice of a row (see the module docstring).

    ``args``: further kernel arguments (CuPy arrays, NumPy scalars); ``threads`` per block;
    ``blocks``: grid size (default: enough blocks for one column per thread, at most 1024).
    """

    def __init__(self, kernel, shape, *, args=(), dtype=np.float64, threads: int = 256,
                 blocks: int | None = None):
        if not callable(kernel):
            raise TypeError(f"kernel must be a cupy.RawKernel, got {type(kernel).__name__}")
        shape = check_shape(shape)
        dt = np.dtype(dtype)
        if dt not in _DTYPES:
            raise ValueError(f"RowKernel dtype must be float64 or int64 (the kernel writes "
                             f"double or long long), got {dt}")
        self.kernel, self.args, self.dtype = kernel, tuple(args), dt
        self.shape = (int(shape[0]), int(shape[1]))
        self.threads, self.blocks = int(threads), blocks
        self._host = FunctionSource(self._host_row, self.shape, dt, "row")
        self._scratch = None

    def fill_device(self, out, i: int, lo: int = 0, hi: int | None = None) -> None:
        """Launch the kernel: ``out[: hi - lo]`` (a CuPy array of ``dtype``) = c[i][lo:hi]."""
        hi = self.shape[1] if hi is None else hi
        if hi <= lo:
            return
        blocks = self.blocks or max(1, min(1024, (hi - lo + self.threads - 1) // self.threads))
        self.kernel((blocks,), (self.threads,),
                    (out, np.int64(i), np.int64(lo), np.int64(hi), *self.args))

    def _host_row(self, i: int, buf: np.ndarray) -> None:
        import cupy
        if self._scratch is None or self._scratch.shape[0] != self.shape[1]:
            self._scratch = cupy.empty(self.shape[1], dtype=self.dtype)
        self.fill_device(self._scratch, i)
        buf[:] = self._scratch.get()

    def state(self):
        """Host rows (for the estimate, the certificate and ``backend="cpu"``): one launch and
        one copy to the host per row, through the Python row path."""
        return self._host.state()

    def raise_pending(self) -> None:
        self._host.raise_pending()

    def dense(self) -> np.ndarray:
        return self._host.dense()

    def transpose(self):
        raise ValueError("RowKernel: a kernel with more rows than columns cannot be solved "
                         "transposed; give the kernel of the transposed problem (rows = the "
                         "shorter side)")
