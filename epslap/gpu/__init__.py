"""The GPU backends (CuPy): ``backend="gpu"`` (:mod:`.api`, :mod:`.solver`) and
``backend="hungarian-gpu"`` (:mod:`.hungarian`). Importing this package does not import CuPy:
:class:`LaunchConfig` configures the backends' launches without a GPU."""
from .launch import LaunchConfig

__all__ = ["LaunchConfig"]
