"""The comparison backend ``backend="hungarian-gpu"``: the classical Hungarian algorithm in one
cooperative CUDA kernel (``hungarian.cu``), its host driver (:mod:`.solver`), the numerics it
shares with its CPU reference (:mod:`.plan`) and that reference (:mod:`.reference`)."""
from .solver import solve_hungarian

__all__ = ["solve_hungarian"]
