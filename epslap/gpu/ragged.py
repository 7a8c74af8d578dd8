"""A list of matrices of different shapes as one padded stack, for one launch of the batch kernel
(a detection batch whose images hold different numbers of targets, say), and each member's
result read back out of the padded one.

Member k, canonically a × b (a <= b: transposed where it has more rows than columns), sits in
the top-left corner of an R × C slot, R the most canonical rows of any member and C >= R the most
columns. Its rows get +inf (a forbidden pair) in the padding columns; the R - a padding rows cost
0 everywhere. Every complete assignment of the slot then gives the member's rows the member's
columns (any other costs +inf) and the padding rows what is left (C - a >= R - a columns), at
the member's cost plus 0: the slot's optimum restricted to the member's rows is the member's
optimum. Its duals certify the member too: u_i + v_j <= c_ij holds on the member's entries, and
every column the member leaves free is either free in the slot or held by a padding row, whose
zero row puts that column's price at the top of all prices, so the free columns share the top
price that the canonical result's shift moves to 0. The kernel judges those duals at the slot's
magnitudes, which for a member narrower than the slot (its prices far below the free padding
column's top) are looser than the member's own: :func:`members_missing_rule` judges such
members again as ``verify`` will, and one that misses is solved alone.

Integer members are padded as float64 (the slot needs +inf) where every cost obeys the integer
range rule with 2**53 in place of 2**62 (``exact_limit``): every price and path length is then an
integer below 2**53, which float64 holds exactly, and the results are read back as int64.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._validate import float_kind

#: pad only where the padded stack holds at most this many times the members' entries (and
#: 64 per member): beyond it separate launches per shape read less
MAX_GROWTH = 4


class Plan(NamedTuple):
    """The padded stack's slot (``rows`` x ``cols``), its dtype, and each member's canonical
    sides and orientation; ``integral``: integer members, padded as float64."""
    rows: int
    cols: int
    dtype: np.dtype
    sides: np.ndarray  # (B, 2): canonical rows a, columns b of each member
    transposed: np.ndarray  # (B,) bool
    integral: bool


def exact_limit(p: "Plan") -> int:
    """The largest |cost| of an integer member that the float64 slot solves exactly:
    ``_validate.int_cost_limit``'s rule with 2**53 for 2**62."""
    return (2**53 - 1) // (4 * p.cols + 8)


def plan(mats: list, max_cols: int) -> Plan | None:
    """How to pad ``mats`` (matrices already checked: 2-D, a dtype the batch takes) into one
    stack, or None where they are neither all floats nor all integers, the slot would be wider
    than ``max_cols``, empty, or too large for the entries it holds (:data:`MAX_GROWTH`)."""
    kinds = {"f" if m.dtype.kind == "f" else "i" for m in mats}
    if len(kinds) != 1:
        return None
    shapes = np.array([m.shape for m in mats], dtype=np.int64)
    transposed = shapes[:, 0] > shapes[:, 1]
    sides = np.sort(shapes, axis=1)
    rows = int(sides[:, 0].max())
    cols = max(int(sides[:, 1].max()), rows)
    if rows == 0 or cols > max_cols:
        return None
    held = int((sides[:, 0] * sides[:, 1]).sum()) + 64 * len(mats)
    if len(mats) * rows * cols > MAX_GROWTH * held:
        return None
    integral = kinds == {"i"}
    dtype = np.float64 if integral else np.result_type(*[float_kind(m.dtype) for m in mats])
    return Plan(rows, cols, np.dtype(dtype), sides, transposed, integral)


#: fills the padded stack from the members laid end to end (``flat``, member k from
#: ``offset[k]``, its caller's rows one after the other): element i of the stack is row r, column
#: c of slot k; a transposed member's canonical (r, c) is its caller's (c, r)
_PAD_SOURCE = """
    const long long k = i / (rows * cols), r = (i / cols) % rows, c = i % cols;
    const long long a = sides[2 * k], b = sides[2 * k + 1];
    if (r < a && c < b)
        out = transposed[k] ? flat[offset[k] + c * a + r] : flat[offset[k] + r * b + c];
    else
        out = r < a ? forbidden : (T)0;
"""
_PAD_KERNELS: dict = {}


def pad(cupy, mats: list, p: Plan, maximize: bool):
    """The (B, rows, cols) stack of ``mats`` on the device, built by one kernel from the members
    laid end to end (one upload for NumPy members, one concatenation for CuPy ones); None for
    integer members beyond :func:`exact_limit`. The batch kernel negates as it reads when
    maximising: the padding columns hold -inf then."""
    on_device = isinstance(mats[0], cupy.ndarray)
    xp = cupy if on_device else np
    flat = xp.concatenate([m.ravel() if m.dtype == p.dtype else m.astype(p.dtype).ravel()
                           for m in mats])
    if p.integral and flat.size and max(-float(flat.min()), float(flat.max())) > exact_limit(p):
        return None
    sizes = p.sides[:, 0] * p.sides[:, 1]
    offset = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    kernel = _PAD_KERNELS.get(p.dtype)
    if kernel is None:
        kernel = _PAD_KERNELS[p.dtype] = cupy.ElementwiseKernel(
            "raw T flat, raw int64 offset, raw int64 sides, raw bool transposed, int64 rows, "
            "int64 cols, T forbidden", "T out", _PAD_SOURCE, "epslap_pad_members")
    stack = cupy.empty((len(mats), p.rows, p.cols), p.dtype)
    forbidden = p.dtype.type(-np.inf if maximize else np.inf)
    kernel(cupy.asarray(flat), cupy.asarray(offset), cupy.asarray(p.sides),
           cupy.asarray(p.transposed), np.int64(p.rows), np.int64(p.cols), forbidden, stack)
    return stack


def unpad(p: Plan, x, u, v, total, maximize: bool) -> tuple:
    """The members' results packed in slot-shaped host arrays, from the padded stack's
    canonical result (``x``, ``u`` (B, rows), ``v`` (B, cols), ``total`` (B,); minimised,
    prices shifted to a top of 0 over the slot): ``(row_ind, col_ind, u, v, total)``, member
    k's in the first entries of row k (:func:`members` cuts them out). Each member's prices are
    shifted to a top of 0 over its own columns (u by as much: the same reduced costs) and put
    in the caller's sign; row_ind and col_ind in the caller's orientation, row_ind sorted, as
    ``solution.orient_duals`` makes them."""
    a, width = p.sides[:, 0], p.sides[:, 1]
    own = np.arange(p.cols) < width[:, None]
    top = np.where(own, v, -np.inf).max(axis=1, initial=-np.inf)
    top[width == 0] = 0.0
    v = v - top[:, None]
    u = u + top[:, None]
    if maximize:
        u, v, total = -u, -v, -total
    if p.integral:  # integers below 2**53 (exact_limit): exact in float64
        u, v, total = (np.rint(w).astype(np.int64) for w in (u, v, total))
    keyed = np.where(np.arange(p.rows) < a[:, None], x, p.cols)  # padding rows sort last
    order = np.argsort(keyed, axis=1, kind="stable")
    flip = p.transposed[:, None]
    row_ind = np.where(flip, np.take_along_axis(keyed, order, axis=1),
                       np.arange(p.rows, dtype=np.int64))
    col_ind = np.where(flip, order, x)
    return row_ind, col_ind, u, v, total


def members_missing_rule(cupy, m, p: Plan, x, u, v, maximize: bool, rtol: float) -> np.ndarray:
    """The members whose duals, moved to a top of 0 over their own columns as :func:`unpad`
    moves them, miss ``epslap.verify``'s per-entry rule (``rtol``; free columns judged at 0),
    from the padded stack ``m`` on the device and its canonical float result ``x``, ``u``,
    ``v`` (host). The kernel's certificate judged the slot, at the magnitudes of the slot's
    prices: a square member in a wider slot has its columns' prices far below the slot's top
    (the free padding column holds it), and prices rounded at that magnitude can miss the rule
    at the member's own (a member of costs near -2.6e20 beside a rounding of 1e-3). Only
    members whose own top is not the slot's are judged again (the others were judged at their
    own magnitudes)."""
    a, width = p.sides[:, 0], p.sides[:, 1]
    own = np.arange(p.cols) < width[:, None]
    top = np.where(own, v, -np.inf).max(axis=1, initial=-np.inf)
    top[width == 0] = 0.0
    idx = np.flatnonzero(top != v.max(axis=1, initial=0.0))
    if not idx.size:
        return idx
    rows_host = np.arange(p.rows) < a[idx, None]
    rows_in = cupy.asarray(rows_host)
    own_d = cupy.asarray(own[idx])
    us = cupy.asarray(u[idx] + top[idx, None])
    vs = cupy.asarray(v[idx] - top[idx, None])
    xs = cupy.asarray(np.where(rows_host, x[idx], 0))
    c = m[idx].astype(np.float64)
    if maximize:
        c = -c
    taken = cupy.zeros(vs.shape, bool)
    k, i = cupy.nonzero(rows_in)
    taken[k, xs[k, i]] = True
    vr = cupy.where(own_d & ~taken, cupy.maximum(vs, 0.0), vs)  # free columns at their bound
    inside = rows_in[:, :, None] & own_d[:, None, :] & cupy.isfinite(c)
    with np.errstate(invalid="ignore"):
        excess = (us[:, :, None] + vr[:, None, :]) - c
        tol = rtol * ((cupy.abs(c) + cupy.abs(us)[:, :, None]) + cupy.abs(vr)[:, None, :])
        bad = (inside & (excess > tol)).any(axis=(1, 2))
        paired = cupy.take_along_axis(c, xs[:, :, None], axis=2)[:, :, 0]
        paired_v = cupy.take_along_axis(vs, xs, axis=1)
        slack = cupy.abs(paired - us - paired_v)
        slack_tol = rtol * ((cupy.abs(paired) + cupy.abs(us)) + cupy.abs(paired_v))
        bad |= (rows_in & ~(slack <= slack_tol)).any(axis=1)
    return idx[cupy.asnumpy(bad)]


def members(p: Plan, row_ind, col_ind, u, v, cut=None) -> tuple:
    """Lists of each member's ``(row_ind, col_ind, u, v)``, views of :func:`unpad`'s packed
    arrays (``cut(a, k, n)``: the first n entries of row k of ``a``, by default ``a[k, :n]``): a
    transposed member's row duals are the slot's column prices and its column duals the slot's
    row duals."""
    cut = cut or (lambda a, k, n: a[k, :n])
    out: tuple = ([], [], [], [])
    for k, (n, w) in enumerate(p.sides.tolist()):
        flip = p.transposed[k]
        out[0].append(cut(row_ind, k, n))
        out[1].append(cut(col_ind, k, n))
        out[2].append(cut(v, k, w) if flip else cut(u, k, n))
        out[3].append(cut(u, k, n) if flip else cut(v, k, w))
    return out
