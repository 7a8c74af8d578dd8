"""Cost sources for epslap: dense arrays, point sets and the paper's problem classes.

Every source knows its ``shape`` and ``dtype`` and produces any row from compiled code
(``state()``), so the solver can stream it; ``dense()`` materialises the matrix.
"""
from ._base import CostSource, CudaCost
from .classes import (PROBLEMS, Disjoint, Geometric, LowRank, Random, RandomInt, Sanity,
                      generate, problem)
from .device import RowKernel
from .functions import FunctionSource, OnDisk, from_function
from .images import ImageEMD, load_image, pixel_features
from .sources import Dense, SqEuclidean

__all__ = ["CostSource", "CudaCost", "Dense", "SqEuclidean", "Random", "RandomInt", "Geometric",
           "Disjoint", "Sanity", "LowRank", "ImageEMD", "load_image", "pixel_features", "OnDisk",
           "from_function", "RowKernel", "FunctionSource", "PROBLEMS", "problem", "generate"]
