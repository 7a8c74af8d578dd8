"""What one GPU solve is set up with (``solver._setup``): the device, the modules and kernels,
the device state and the row cache, shared by the passes, the checkpoints and the result."""
from __future__ import annotations

from typing import NamedTuple

from .launch import PassGeometry
from .rowcache import DeviceCostRows
from .runtime import wide_grid
from .state import DeviceState


class Run(NamedTuple):
    """What ``solver._setup`` prepares for one solve on the current device."""
    cupy: object
    n1: int
    n2: int
    integral: bool
    work: type             # np.int64 or np.float64: the dtype of prices and costs
    geo: PassGeometry
    src_mod: object        # eps_ssp.cu for the device cost (None without one)
    src_args: tuple        # its CostArgs parameters (None without a device cost)
    est_mod: object        # estimate.cu for the device cost (None without one)
    pass_kernel: object    # eps_pass, for the device cost or for the row cache
    pass_args: tuple
    state: DeviceState
    row_cache: object      # rowcache.DeviceRowCache or None
    keep: list             # device arrays the kernels' pointers refer to
    parts: tuple = ()      # split.Partition per launch of a pass split over devices (else none)
    masks: list = ()       # each partition's columns (split.owned_columns), on the first device


def source_rows(cupy, src_mod, src_args) -> DeviceCostRows:
    """The cost source's rows, filled on the device by its module's ``fill_row``."""
    return DeviceCostRows(src_mod.get_function("fill_row"), src_args, wide_grid(cupy))
