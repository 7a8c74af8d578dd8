"""``epslap.verify(..., backend="gpu")``: the certificate's scan of every cost on one GPU.

The check is ``epslap.certificate``'s, pair by pair (``verify.cu``): a float pair's exact excess
``u_i + v_j - c_ij`` against ``RTOL * (|c_ij| + |u_i| + |v_j|)``, integer pairs exactly. The
costs are those a GPU solve reads: computed by the cost source's device form inside the kernel,
or read from a CuPy matrix; only each block's result and the assigned pairs' costs come back.
Costs the device arithmetic does not judge (NaN, -inf, magnitudes near the top of the range)
hand the problem to the host's check, which says what they are.
"""
from __future__ import annotations

import numpy as np

from .._exact import RTOL
from ..cpu.verify_rows import HUGE
from .runtime import cost_args, import_cupy, multiprocessors

#: threads per block of verify.cu (VBLOCK) and blocks per multiprocessor
BLOCK = 256
BLOCKS_PER_SM = 4
#: integer duals and costs below this magnitude keep u + v - c within int64 (verify.cu); float
#: costs at or above ``cpu.verify_rows.HUGE`` go to the host's check, as from the CPU's scan
INT_BOUND = 2**61


class DeviceCosts:
    """The costs of ``epslap.verify`` on device ``device``: a cost source's device form or a
    CuPy matrix (``shape``, ``dtype``, ``rows`` for the host's check)."""

    def __init__(self, cost, device: int):
        from costfns import CostSource

        from .device_costs import device_form, matrix_cost
        cupy = self.cupy = import_cupy()
        self.device = device
        self._matrix = None
        with cupy.cuda.Device(device):
            if isinstance(cost, cupy.ndarray):
                if cost.ndim != 2:
                    raise ValueError(f"cost must be a 2-D matrix, got {cost.ndim} dimensions")
                if cost.dtype.kind not in "biuf":
                    raise ValueError(f"cost must be numeric, got dtype {cost.dtype}")
                self._matrix = cost
                m = cost.astype(np.float32) if cost.dtype == np.float16 else cost
                self.cc = None if m.dtype == np.uint64 else matrix_cost(m)
                self.shape, self.dtype = tuple(cost.shape), np.dtype(cost.dtype)
            elif isinstance(cost, CostSource):
                self.cc = device_form(cost)
                if self.cc is None:
                    raise ValueError(f"verify on backend='gpu' needs a cost source with a "
                                     f"device form; {type(cost).__name__} has none "
                                     f"(backend='cpu' takes it)")
                self.shape, self.dtype = tuple(cost.shape), np.dtype(cost.dtype)
                self._source = cost
            else:
                raise ValueError(f"verify on backend='gpu' takes a CuPy matrix or a cost source "
                                 f"with a device form, not {type(cost).__name__} "
                                 f"(backend='cpu' takes it)")
        self.integral = self.dtype.kind in "biu"

    def rows(self, start: int, stop: int) -> np.ndarray:
        """Rows ``start:stop`` on the host (the host's check)."""
        if self._matrix is not None:
            return self.cupy.asnumpy(self._matrix[start:stop])
        return self._source.rows(start, stop)

    def _launch(self, name: str, grid: int, extra: tuple):
        from .modules import verify_module
        cupy = self.cupy
        n1, n2 = self.shape
        mod = verify_module(cupy, self.cc.code, self.integral)
        args, keep = cost_args(cupy, self.cc, n1, n2)
        mod.get_function(name)((grid,), (BLOCK,), (*args, *extra))
        cupy.cuda.Device().synchronize()
        del keep

    def scan_float(self, us, vs, au, av, sign: float):
        """``(worst, excess, flags)`` as ``cpu.verify_rows.scan_source`` (float costs, the
        duals scaled as the certificate gives them), or None (no device form of these costs)."""
        if self.cc is None or self.integral:
            return None
        cupy = self.cupy
        with cupy.cuda.Device(self.device):
            grid = BLOCKS_PER_SM * multiprocessors(cupy)
            worst, over = cupy.zeros(grid), cupy.full(grid, -1.0)
            flags = cupy.zeros(grid, np.int32)
            self._launch("verify_scan", grid, tuple(cupy.asarray(x, np.float64)
                                                    for x in (us, vs, au, av))
                         + (np.float64(sign), np.float64(RTOL), np.float64(HUGE),
                            worst, over, flags))
            return (float(worst.max()), float(over.max()),
                    int(np.bitwise_or.reduce(flags.get())))

    def scan_int(self, u, v, sign: int):
        """The largest ``sign * (u_i + v_j - c_ij)`` over every pair (0 without pairs, as the
        host's check), exactly, or None where the device's int64 arithmetic does not hold it
        (the host's check then)."""
        if self.cc is None or not self.integral:
            return None
        if any(x.size and int(np.abs(x).max()) >= INT_BOUND for x in (u, v)):
            return None
        n1, n2 = self.shape
        cupy = self.cupy
        with cupy.cuda.Device(self.device):
            grid = BLOCKS_PER_SM * multiprocessors(cupy)
            worst = cupy.zeros(grid, np.int64)
            flags = cupy.zeros(grid, np.int32)
            self._launch("verify_scan", grid, (cupy.asarray(u, np.int64),
                                               cupy.asarray(v, np.int64), np.int64(sign),
                                               np.float64(INT_BOUND), worst, flags))
            if int(np.bitwise_or.reduce(flags.get())):
                return None
            return int(worst.max()) if n1 * n2 else 0

    def pair_costs(self, r, k) -> np.ndarray:
        """The costs of the pairs ``(r[t], k[t])`` (int64 or float64), on the device."""
        cupy = self.cupy
        with cupy.cuda.Device(self.device):
            out = cupy.zeros(r.size, np.int64 if self.integral else np.float64)
            if r.size:
                grid = min(BLOCKS_PER_SM * multiprocessors(cupy), -(-r.size // BLOCK))
                self._launch("pair_costs", grid, (cupy.asarray(r, np.int64),
                                                  cupy.asarray(k, np.int64),
                                                  np.int64(r.size), out))
            return out.get()
