"""The batch kernel's modules built ahead of the first calls (``epslap.precompile(gpu=True)``).

A module of ``batch.cu`` is compiled per kind of launch, not per size: the team for the width
(``batch_plan.geometry``: one per power of two up to 4096 columns), the dtype read, and for a
batch of one whether its matrix is staged in shared memory. NVRTC takes about two seconds a
module, on the first call of each kind; CuPy keeps what it compiled in its kernel cache on
disk, so that after this every process on the machine loads them. Batches (``solve_batch``,
``linear_sum_assignment_batch``, lists of shapes) and single problems whose sides are at most
1024 run this kernel; the ε solver's and the candidates method's modules still compile on
their first call.
"""
from __future__ import annotations

import numpy as np

from .batch_plan import C_TYPES, launch_plan
from .modules import EPS_OPTIONS, ORIENT, build_module
from .runtime import import_cupy

#: one width per team ``batch_plan.geometry`` builds a module for
WIDTHS = (8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
#: the dtypes the batch kernel reads as they are (others are converted to one of these)
DTYPES = tuple(np.dtype(name) for name in C_TYPES)


def precompile_batch_kernels(device: int = 0) -> int:
    """Build (compile, or load from CuPy's kernel cache) every module of the batch kernel on
    ``device``, and the one that orients members; return how many launch kinds were readied.
    Raises ``GPUUnavailableError`` without CuPy or a device."""
    cupy = import_cupy()
    stats = {"compile_s": 0.0}
    kinds = 0
    with cupy.cuda.Device(device):
        for dtype in DTYPES:
            integral = dtype.kind == "i"
            for width in WIDTHS:
                launch_plan(cupy, 2, 1, width, dtype, integral, stats)  # a batch
                launch_plan(cupy, 1, 1, width, dtype, integral, stats)  # one problem (staged)
                kinds += 2
        build_module(cupy, ORIENT, {}, {}, EPS_OPTIONS,
                     cooperative=False).get_function("orient_members")
    return kinds

