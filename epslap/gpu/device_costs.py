"""A cost's device form (a cost source's, or a matrix's on the device) and the kernels over it
outside the passes: the range rule of integer costs before a solve, and the dense matrix on
the device."""
from __future__ import annotations

import numpy as np

from .._validate import check_int_range
from .launch import LaunchConfig, pass_geometry
from .modules import pass_module
from .runtime import cost_args, import_cupy, wide_grid


def check_device_range(cuda_cost, n1: int, n2: int, device: int,
                       launch: LaunchConfig | None = None) -> None:
    """Integer costs of a device form within ``check_int_range``'s rule (else ValueError): one
    sweep over them, with the module the solve will use (compiled once)."""
    launch = launch or LaunchConfig()
    cupy = import_cupy()
    with cupy.cuda.Device(device):
        geo = pass_geometry(cupy, n2, launch)
        mod = pass_module(cupy, cuda_cost.code, True, geo.threads, geo.unroll, bool(geo.smem),
                          launch.phase_clocks)
        args, keep = cost_args(cupy, cuda_cost, n1, n2)
        lohi = cupy.asarray(np.array([2**63 - 1, -2**63], np.int64))
        mod.get_function("cost_range")(wide_grid(cupy), (256,), (*args, lohi))
        lo, hi = (int(x) for x in lohi.get())
        del keep
    check_int_range(lo, hi, (n1, n2))


def materialise(source, device: int = 0):
    """The dense matrix of a cost source, computed on the device (a CuPy array)."""
    cupy = import_cupy()
    n1, n2 = source.shape
    integral = np.dtype(source.dtype).kind == "i"
    with cupy.cuda.Device(device):
        cc = source.cuda_source()
        mod = pass_module(cupy, cc.code, integral)
        args, keep = cost_args(cupy, cc, n1, n2)
        out = cupy.empty((n1, n2), dtype=np.int64 if integral else np.float64)
        mod.get_function("fill_dense")(wide_grid(cupy), (256,), (*args, out))
        cupy.cuda.Device().synchronize()
        del keep
    return out


def device_form(src):
    """The source's device form (a ``costfns.CudaCost``), None where it has none."""
    from costfns import RowKernel
    if isinstance(src, RowKernel):
        return None
    try:
        return src.cuda_source()
    except NotImplementedError:
        return None


def matrix_cost(m):
    """A matrix on the device as a cost form: ``cost_fn`` reads its entry."""
    from costfns import CudaCost
    ctype = {"f": {4: "float", 8: "double"},
             "i": {1: "signed char", 2: "short", 4: "int", 8: "long long"},
             "u": {1: "unsigned char", 2: "unsigned short", 4: "unsigned int"},
             "b": {1: "unsigned char"}}[m.dtype.kind][m.itemsize]
    m = m if m.flags.c_contiguous else m.copy(order="C")
    code = ("__device__ __forceinline__ cost_t cost_fn(const CostArgs& a, long long i, "
            f"long long j) {{\n    return (cost_t)((const {ctype}*)a.p[0])[i * a.n2 + j];\n}}")
    return CudaCost(code, [m], [], [])
