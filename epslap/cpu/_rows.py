"""Row access for the compiled solver: one generic ``get_row`` that every cost source plugs into.

The solver loop is written once and calls ``get_row(src, i, buf)``; Numba specialises it per
source *type* at compile time (no Python round trip, no per-call dispatch):

- a 2-D NumPy array (dense, any supported dtype): returns the view ``src[i]``;
- a ``typing.NamedTuple`` whose class carries a ``_fill_row`` attribute, a jitted function
  ``(src, i, buf) -> buf`` that writes row ``i`` into ``buf`` and returns it (computed sources:
  point sets, synthetic classes, caches).

A source class only has to define ``_fill_row``; nothing here changes when a source is added.
"""
from numba import types
from numba.extending import overload


def get_row(src, i, buf):  # pragma: no cover - only ever called from compiled code
    """Return row ``i`` of cost source ``src`` (a view, or ``buf`` filled in)."""
    raise NotImplementedError("get_row is only available inside Numba-compiled code")


@overload(get_row, jit_options={"cache": True, "nogil": True})
def _get_row_overload(src, i, buf):
    if isinstance(src, types.Array) and src.ndim == 2:
        def dense_row(src, i, buf):
            return src[i]
        return dense_row
    if isinstance(src, types.BaseNamedTuple):
        fill = getattr(src.instance_class, "_fill_row", None)
        if fill is not None:
            def computed_row(src, i, buf):
                return fill(src, i, buf)
            return computed_row
    return None
