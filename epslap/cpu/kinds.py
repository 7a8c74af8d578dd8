"""What compiled code asks of its arrays' element type, answered while it compiles.

``c.dtype.kind in "biu"`` inside a compiled function makes Numba compile its string search
(about 1.5 s on the 2-core machine, on the first call of every such function in a fresh
environment); :func:`is_integral` is a constant of the compiled code instead.
"""
from __future__ import annotations

from numba import types
from numba.extending import overload


def is_integral(c) -> bool:
    """Whether the array ``c`` holds integers (booleans included): the exact int64 arithmetic."""
    return c.dtype.kind in "biu"


@overload(is_integral)
def _is_integral_typed(c):
    """:func:`is_integral` resolved at compile time."""
    flag = isinstance(c.dtype, (types.Integer, types.Boolean))
    return lambda c: flag
