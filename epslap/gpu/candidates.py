"""Candidates, then certify on the GPU (``solve(..., backend="gpu", candidates=...)``).

The method's driver (``epslap.candidates``) and the exact sparse pass stay on the host; this
module gives them the device's parts (``candidates.cu``): the candidate and certificate passes
over every cost, computed inside the kernel from a cost source's device form (or read from a
matrix on the device), and the auction phases of the sparse solve, every free row bidding at
once. Only the candidates, the failing rows' pairs and the auction's prices cross to the host.
"""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..candidates import check_values
from .api import device_matrix, negated, oriented_source
from .device_costs import check_device_range, device_form, matrix_cost
from .modules import CANDIDATE_TILE, candidates_module
from .runtime import cost_args, import_cupy, multiprocessors

#: threads per block of the passes and the auction; blocks per multiprocessor (the auction is
#: one cooperative launch: every block must be resident)
BLOCK = 256
PASS_BLOCKS_PER_SM = 4
AUCTION_BLOCKS_PER_SM = 2
#: the device's auction rounds stop when fewer rows than this are free: the host's Gauss–Seidel
#: auction (``cpu.parallel_auction``, on the free cores) assigns the rest (a device round costs
#: several microseconds whatever the number of bidders, a host bid a fraction of one)
AUCTION_HOST_BELOW = 64
#: the list length of the passes' default build (a row's candidates, or a failing row's
#: violating pairs); a longer list has a build of its own
LIST_MAX = 64
#: the largest point dimension the passes' box bound is compiled for (a box bound in more
#: dimensions rarely skips a tile)
BOX_DIM_MAX = 8
_INT64_MAX = np.iinfo(np.int64).max


class DevicePasses:
    """The canonical problem (n1 <= n2, minimised) on one GPU, with the two streaming passes
    and the auction phase of ``epslap.candidates`` (``HostPasses``'s interface)."""

    backend = "gpu"
    threads = None
    pass_method = "scan"

    def __init__(self, cost, maximize: bool, device: int | tuple[int, ...]):
        from costfns import CostSource
        cupy = self.cupy = import_cupy()
        devices = (device,) if isinstance(device, int) else tuple(device)
        self.device = devices[0]  # the auction's, and that of a CuPy matrix's canonical form
        with cupy.cuda.Device(self.device):
            if isinstance(cost, CostSource):
                self.shape = tuple(cost.shape)
                src, self.transposed = oriented_source(cost)
                cc = device_form(src)
                if cc is None:
                    raise ValueError(f"candidates on backend='gpu' need a matrix or a cost source "
                                     f"with a device form; {type(cost).__name__} has none "
                                     f"(backend='cpu' takes it)")
                self.integral = np.dtype(src.dtype).kind in "iu"
                n1, n2 = src.shape
                if self.integral:
                    check_device_range(cc, n1, n2, self.device)
                if maximize:
                    cc = negated(cc)
                points = None if maximize else _box_points(src)
            else:
                points = None
                m, self.transposed, self.integral = device_matrix(cupy, cost, maximize)
                self.shape = m.shape[::-1] if self.transposed else m.shape
                n1, n2 = m.shape
                cc = matrix_cost(m)
        self.n1, self.n2 = n1, n2
        self.work = np.dtype(np.int64 if self.integral else np.float64)
        self.code = cc.code
        # the streaming passes split the rows over the devices, each with its own copy of the
        # cost's arrays (a device listed twice holds two: a test of the split on one GPU)
        self.parts = [_DevicePart(cupy, d, cc, n1, n2, points) for d in devices]
        self.module = self._module(LIST_MAX, self.parts[0])
        self._csr = None
        self._host_phase = None
        self.auction_log: list = []  # per phase: (eps, device rounds, device bids, host bids,
        #                               device s, host s)

    def _module(self, k_max: int, part):
        """The passes' module on ``part``'s device whose rows keep lists of up to ``k_max``
        entries (built once per device)."""
        boxes = part.boxes
        with self.cupy.cuda.Device(part.device):
            return candidates_module(self.cupy, self.code, self.integral, k_max,
                                     0 if boxes is None else boxes.dim,
                                     boxes is not None and boxes.root)

    def _scan(self, v, u, own, rows, k: int, rel: float):
        """Start the pass over ``rows`` on every device, each over its share (consecutive rows:
        neighbours in a point set's spatial order skip the same tiles): ``[(part, share,
        outputs)]``, the outputs still on their devices (``scan_rows``'s, then the rows'
        least reduced costs)."""
        shares = np.array_split(rows, len(self.parts))
        return [(part, share, self._launch(part, v, u, own, share, k, rel))
                for part, share in zip(self.parts, shares)]

    def _launch(self, part, v, u, own, rows, k: int, rel: float):
        cupy = self.cupy
        with cupy.cuda.Device(part.device):
            # a longer list than the default build's has its own build
            module = self._module(max(k, LIST_MAX), part)
            m = rows.size
            row_min = cupy.zeros(m, np.float64)
            out = (cupy.zeros((m, k), np.int64), cupy.zeros((m, k), self.work),
                   cupy.zeros(m, np.int32), cupy.zeros(m, self.work),
                   cupy.zeros(1, np.uint64), cupy.zeros(1, np.int32))
            if m:
                grid = (min(PASS_BLOCKS_PER_SM * part.sms, -(-m // BLOCK)),)
                null = np.uint64(0)
                u_arg = null if u is None else cupy.asarray(u, self.work)
                own_arg = null if own is None else cupy.asarray(own, np.int64)
                box = (null,) * 3 if part.boxes is None else part.boxes.args(v)
                module.get_function("scan_rows")(
                    grid, (BLOCK,), (*part.args, cupy.asarray(v, self.work), u_arg,
                                     np.float64(rel), cupy.asarray(rows, np.int64), own_arg,
                                     np.int64(m), np.int32(k), *box, row_min, *out))
            return out + (row_min,)

    def compile_passes(self, progress=None) -> float:
        """``HostPasses.compile_passes``: the device's passes were built with the module."""
        return 0.0

    def certificate_kernels(self) -> list:
        """``HostPasses.certificate_kernels``: none on the host (the pass runs on the device)."""
        return []

    def candidates(self, v, k: int, rows, maximize: bool):
        """``HostPasses.candidates`` on the devices: each device's share copied straight into
        its rows of the host's arrays, the devices' copies at once (threads)."""
        cupy = self.cupy
        m = rows.size
        lists = (np.empty((m, k), np.int64), np.empty((m, k), self.work), np.empty(m, np.int32),
                 np.empty(m, self.work))
        pending = self._scan(v, None, None, rows, k, 0.0)
        ends = np.cumsum([share.size for _, share, _ in pending])

        def gather(t):
            part, share, out = pending[t]
            lo, hi = ends[t] - share.size, ends[t]
            with cupy.cuda.Device(part.device):
                for host, dev in zip(lists, out[:4]):
                    cupy.asnumpy(dev, out=host[lo:hi])
                return float(out[4].get().view(np.float64)[0]), int(out[5].get()[0])
        seen = _each(gather, len(pending))
        check_values(self, int(np.bitwise_or.reduce([f for _, f in seen])),
                     max(b for b, _ in seen), maximize)
        cols, vals, counts, diag = lists
        return cols, vals, counts.astype(np.int64), diag

    def certify(self, v, u, row_to_col, rows, cap: int, rel: float):
        """``HostPasses.certify`` on the devices: only the failing rows' pairs come back."""
        cupy = self.cupy
        pending = self._scan(v, u, row_to_col, rows, cap, rel)

        def gather(t):
            part, share, (cols, vals, counts, _, _, _, row_min) = pending[t]
            with cupy.cuda.Device(part.device):
                at = cupy.flatnonzero(counts)
                return (share[at.get()], cols[at].get(), vals[at].get(),
                        counts[at].get().astype(np.int64), row_min.get())
        return tuple(np.concatenate(x) for x in zip(*_each(gather, len(pending))))

    def _host_auction(self):
        """The host's end of an auction phase: the rows the device left free, shared among
        the free cores (``cpu.parallel_auction``; their chains of bids lie far apart)."""
        from ..cpu.parallel_auction import parallel_auction
        from ..cpu.cores import resolve_threads
        if self._host_phase is None:
            self._host_phase = parallel_auction(resolve_threads(None, self.n2))
        return self._host_phase

    def auction(self, indptr, indices, data, v, row_to_col, col_to_row, eps, jump, max_bids,
                big):
        """One auction phase (``cpu.sparse.auction``'s arguments and result) on the device:
        every free row bids at once each round (``candidates.cu``, auction_phase)."""
        cupy = self.cupy
        n1, n2 = row_to_col.size, v.size
        t_start = time.perf_counter()
        with cupy.cuda.Device(self.device):
            if self._csr is None or self._csr[0] is not indptr:
                self._csr = (indptr, cupy.asarray(indptr), cupy.asarray(indices),
                             cupy.asarray(data, self.work),
                             cupy.full(n2, _INT64_MAX, np.int64), cupy.full(n2, -1, np.int64),
                             cupy.empty(n1, np.int64), cupy.empty(n1, np.int64),
                             cupy.empty(2 * n1, np.int64))
            _, d_ptr, d_idx, d_data, col_key, winner, bid_col, bid_key, free_list = self._csr
            d_v = cupy.asarray(v)
            d_r2c = cupy.asarray(row_to_col)
            d_c2r = cupy.asarray(col_to_row)
            counters = cupy.zeros(5, np.uint64)
            grid = (AUCTION_BLOCKS_PER_SM * self.parts[0].sms,)
            work = self.work.type
            self.module.get_function("auction_phase")(
                grid, (BLOCK,), (d_ptr, d_idx, d_data, d_v, d_r2c, d_c2r, col_key, winner,
                                 bid_col, bid_key, free_list, work(eps), work(jump),
                                 np.int64(n1),
                                 np.int64(max_bids), np.int64(AUCTION_HOST_BELOW), counters))
            _, _, rounds, bids, status = (int(x) for x in counters.get())
            if status:
                return -1
            v[:] = d_v.get()
            row_to_col[:] = d_r2c.get()
            col_to_row[:] = d_c2r.get()
        t_host = time.perf_counter()
        host = self._host_auction()(indptr, indices, data, v, row_to_col, col_to_row, eps,
                                    jump, max_bids - bids, big)
        t_end = time.perf_counter()
        self.auction_log.append((float(eps), rounds, bids, host, round(t_host - t_start, 3),
                                 round(t_end - t_host, 3)))
        return -1 if host < 0 else bids + host


def _box_points(src):
    """``(X, Y, root)`` of a squared Euclidean (``root`` False) or Euclidean point set whose
    passes may skip tiles by their box bound, else None: the dimension at most BOX_DIM_MAX,
    and every cost within the float range (the skipped tiles' costs are not read, so the
    value check relies on the bound of the points' common box)."""
    from costfns import Euclidean, SqEuclidean

    from .._validate import float_cost_limit
    if type(src) not in (SqEuclidean, Euclidean):
        return None
    x, y = src.X, src.Y
    if not 0 < x.shape[1] <= BOX_DIM_MAX or not (x.size and y.size):
        return None
    span = np.maximum(x.max(axis=0), y.max(axis=0)) - np.minimum(x.min(axis=0), y.min(axis=0))
    largest = float(np.sqrt((span ** 2).sum()) if type(src) is Euclidean else (span ** 2).sum())
    if not largest * 1.01 <= float_cost_limit(src.shape):
        return None
    return x, y, type(src) is Euclidean


def _each(fn, count: int) -> list:
    """``[fn(0), …, fn(count - 1)]``, on a thread each where there are several (one per
    device: their copies to the host run at once)."""
    if count == 1:
        return [fn(0)]
    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(fn, range(count)))


class _DevicePart:
    """One device's share of the passes: its copy of the cost's arrays (and of the points'
    tile boxes) and its multiprocessors."""

    def __init__(self, cupy, device: int, cc, n1: int, n2: int, points):
        self.device = device
        with cupy.cuda.Device(device):
            self.args, self._arrays = cost_args(cupy, cc, n1, n2)
            self.boxes = None if points is None else TileBoxes(cupy, *points)
            self.sms = multiprocessors(cupy)


class TileBoxes:
    """The passes' box bound (``candidates.cu``, scan_rows): the row points, each tile of
    CANDIDATE_TILE columns' bounding box (least coordinates, then largest), and per pass its
    largest price."""

    def __init__(self, cupy, x, y, root: bool):
        self.cupy = cupy
        self.dim, self.root = x.shape[1], root
        self.starts = np.arange(0, y.shape[0], CANDIDATE_TILE)  # each tile's first column
        box = np.concatenate([np.minimum.reduceat(y, self.starts, axis=0),
                              np.maximum.reduceat(y, self.starts, axis=0)], axis=1)
        self.box = cupy.asarray(box)
        self.rows = cupy.asarray(np.ascontiguousarray(x))

    def args(self, v):
        """The kernel's ``row_points, tile_box, tile_vmax`` under the prices ``v``."""
        vmax = np.maximum.reduceat(v, self.starts)
        return self.rows, self.box, self.cupy.asarray(vmax, np.float64)


def device_auction(integral: bool, device: int):
    """The device's auction phase (``DevicePasses.auction``) for a sparse problem given as its
    stored pairs: the passes' module built around a placeholder cost (the auction reads the
    pairs, never ``cost_fn``)."""
    return DevicePasses(np.zeros((1, 1), np.int64 if integral else np.float64), False,
                        device).auction
