"""Array and bit helpers for compiled code."""
from __future__ import annotations

from numba import njit, types
from numba.extending import intrinsic


@intrinsic
def float_bits(typingctx, x):
    """The IEEE bits of a float64 as an int64 (a register bitcast, no memory round trip); an
    int64 as itself (the integer forms of the kernels that take either)."""
    if x not in (types.float64, types.int64):
        return None

    def codegen(context, builder, sig, args):
        if sig.args[0] == types.int64:
            return args[0]
        return builder.bitcast(args[0], context.get_value_type(types.int64))
    return types.int64(x), codegen


@intrinsic
def bits_float(typingctx, x):
    """The float64 whose bits are the int64 (the inverse of :func:`float_bits`)."""
    if x != types.int64:
        return None

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], context.get_value_type(types.float64))
    return types.float64(x), codegen


@njit(cache=True, nogil=True, inline="always")
def copy_into(dst, src, n: int) -> None:
    """``dst[:n] = src[:n]``, element by element. An array assigned to a slice compiles Numba's
    shape-mismatch error, and with it the formatting of its message (string and repr code:
    several seconds of a fresh environment's first compile)."""
    for t in range(n):
        dst[t] = src[t]


@njit(cache=True, nogil=True, inline="always")
def flip_path(pred, row_col, f, j) -> None:
    """Augment along the alternating path from free row ``f`` to column ``j``: walking back
    through ``pred`` (column -> the row it was reached from), each row on the path takes the
    column it reached (``row_col[i]``), the next column back being the one the row held."""
    while True:
        i = pred[j]
        held = row_col[i]
        row_col[i] = j
        if i == f:
            return
        j = held
