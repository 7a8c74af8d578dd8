"""Cost sources for epslap: dense arrays, point sets and the paper's problem classes.

Every source knows its ``shape`` and ``dtype`` and produces any row from compiled code
(``state()``), so the solver can stream it; ``dense()`` materialises the matrix.
"""
from ._base import CostSource, CudaCost
from .classes import (PROBLEMS, Disjoint, Geometric, LowRank, Random, RandomInt, Sanity,
                      generate, problem)
from .device import RowKernel
from .functions import FunctionSource, OnDisk, from_function
from .images import ImageEMD, ImageReadError, load_image, load_image_pair, pixel_features
from .sources import Dense, Euclidean, SqEuclidean

__all__ = ["CostSource", "CudaCost", "Dense", "SqEuclidean", "Euclidean", "Random", "RandomInt",
           "Geometric", "Disjoint", "Sanity", "LowRank", "ImageEMD", "ImageReadError", "load_image",
           "load_image_pair", "pixel_features", "OnDisk",
           "from_function", "RowKernel", "FunctionSource", "PROBLEMS", "problem", "generate"]
