"""Candidates, then certify: a sparse solve over each row's cheapest columns, proven optimal for
the full problem by one streaming pass over every cost.

For most costs solved at scale (point sets, pixels, random matrices) each row's optimal partner
lies among its few cheapest columns. The method (docs/algorithm.md, "Candidates, then certify"):

1. **Candidates**: one pass over every row keeps its ``k`` smallest ``c_ij - v_j`` (``v = 0``),
   plus the pair ``(i, i)`` of the identity matching, so that the sparse problem has a complete
   assignment whenever the diagonal is finite.
2. **Sparse solve** (``epslap.sparse.solve_canonical``): exact over the candidate pairs, giving
   an assignment σ and prices v with ``c_ij - v_j >= u_i = c_iσ(i) - v_σ(i)`` on every stored
   pair (and the free columns of a rectangular problem at the top price).
3. **Certify**: one pass over every row computes ``min_j (c_ij - v_j)`` over *all* columns. A
   row whose minimum is not below ``u_i`` is clean. If every row is clean, (u, v) is a dual
   certificate of the full problem: σ is optimal, whatever the candidates were.
4. Otherwise each failing row adds its (at most ``k``) most violating columns, and the sparse
   problem is solved again from the assignment and prices it had (the exact pass re-augments
   only the rows the new pairs undercut). Every round adds a pair, so the loop ends; after
   ``MAX_ROUNDS`` rounds, or where the diagonal is forbidden and the candidates hold no
   complete assignment, the caller solves the problem with the dense method instead.

Exactness comes from the certificate pass, not from the candidates.

For point sets with squared Euclidean or Euclidean costs on the CPU both passes search a tree of
boxes over the columns instead of scanning every cost (``epslap.point_passes``): a few tiles a row, not n².
"""
from __future__ import annotations

import math
import sys
import time

import numpy as np

from ._sources import int32_negation_error, negated, raise_pending
from ._sync import new_sync, run_workers
from ._validate import (Options, Problem, canonical_dense, check_before_compile, check_float_range,
                        check_int_range, read_only_view)
from .certificate import CHECK_RTOL, RTOL
from .cpu.candidates import (FLAG_NAN, FLAG_NEG_INF, appended_pairs, candidate_rows,
                             certify_rows, lists_to_csr)
from .cpu.api import PRECHECK_MAX
from .cpu.small import MAX_SQUARE, leaves_early
from .cpu.cores import AUTO_MIN_COLS, AUTO_MIN_COLS_FLOAT, resolve_threads
from .cpu.compile_ahead import pending, stop_all
from .cpu.host import compile_kernels, compile_later, run_interruptibly
from .errors import InfeasibleError
from .locality import relabeled, restore_labels
from .solution import finish
from .sparse import SparseProblem, kernel_table, solve_canonical

#: candidates per row for ``candidates=True``/``"auto"``: K_PER_LOG2 per doubling of n beyond
#: 2**K_FROM_LOG2 columns, within [K_MIN, K_MAX] (measured on geometric, random and integer
#: costs, design notes: 32 at 4000, 40 at 8000, 48 at 16,000, 64 from 65,536; the random and
#: integer classes certify in one round from about 24, point sets need more as n grows) up to
#: K_GROW_ABOVE columns; beyond, K_PER_DOUBLING_LARGE more per doubling: the share of rows whose
#: optimum lies outside their cheapest columns grows with n, and at millions of rows the
#: re-solve of each such row is an exact search over a large part of the graph (NVIDIA H200,
#: geometric: 1,024,000 points 43.4 s with 64 per row, 46.2 s with 80; 4,096,000 points with 84
#: or 88 per row not within 330-420 s, with 104 in 277 s: 374 rows failed the first
#: certificate pass, and their re-solve took about 95 s)
K_PER_LOG2 = 8
K_FROM_LOG2 = 8
K_MIN = 24
K_MAX = 64
K_GROW_ABOVE = 2**20
K_PER_DOUBLING_LARGE = 20
#: ``"auto"`` takes candidates for a cost source (costs on demand) with at least this many rows
#: and columns, per backend (measured against the dense method on every class, benchmark page;
#: on the GPU from 2000: one H200, every class at 2000-8000, best of three in turns, taken
#: 0.12-0.34x the dense method, declined 1.01-1.05x). On the CPU a source whose matrix fits the
#: memory budget is computed once and follows AUTO_MATRIX_MIN_SIDE instead
#: (``backends.solve_on_cpu``)
AUTO_MIN_SIDE = {"cpu": 4000, "gpu": 2000}
#: the same for a matrix in memory: on the CPU the candidates beat the dense ε method from just
#: above the small path's square problems (``cpu.small.MAX_SQUARE``; random, integer and
#: geometric 1100-3000: 0.15-0.38x, one thread, benchmark page), and the sample that declines
#: the other classes costs them 0.85-1.11x at 1100-3000 by medians of nine turns (sanity, the
#: cheapest declined solve, is decided by the sample's first look, 17 rows: about 0.15 ms on
#: 1.8 ms at 1100). From 700 to 1024 rows the small path keeps integer matrices: candidates
#: there took geometric in 0.34-0.58x its time but integer in up to 1.34x and sanity
#: 1.08-1.18x; float matrices are looked at from ``cpu.small.AUTO_FLOAT_FROM`` (850)
#: On the GPU from 2000 (one H200, 2000-8000: taken 0.17-0.43x, declined 1.00-1.02x)
AUTO_MATRIX_MIN_SIDE = {"cpu": 1025, "gpu": 2000}
#: below this many rows ``"auto"`` on the GPU takes candidates for nearly square problems only
#: (those measured from 2000 to 8000); one with a sixteenth more columns than rows keeps the
#: GPU's rectangular route there, as it did below the former threshold of 16,000
AUTO_GPU_SQUARE_BELOW = 16000
#: a matrix on the CPU with at least this share of spare columns (n2 - n1 >= n1 * share)
#: stays with the small path's rectangular solve from v = 0, which ``"auto"`` would otherwise
#: pass over (random, one thread: 2000 x 2600 29 ms there against 44 ms by candidates, 4000 x
#: 8000 220 against 256 ms, 8000 x 16,000 518 against 712 ms; 2000 x 2200 33 ms both ways,
#: 4000 x 4300 276 against 166 ms)
AUTO_MATRIX_SPARE_MAX = 0.125
#: the backends where ``"auto"`` may take candidates
AUTO_BACKENDS = tuple(AUTO_MIN_SIDE)
#: the backends where ``"auto"`` may take candidates for a matrix in memory (NumPy array) as
#: well (measured at 4000 and 16,000 on the CPU, at 16,000 on the GPU: benchmark page)
AUTO_MATRIX_BACKENDS = ("cpu", "gpu")
#: ``"auto"`` hands a problem to the dense method when the first certificate pass finds more
#: than this fraction of the rows failing (a class whose optimum is far from its rows' cheapest
#: columns: the rounds would cost more than the dense method)
AUTO_FAIL_MAX = 0.25
#: before anything else, ``"auto"`` computes the candidates of every AUTO_SAMPLE_EVERY-th row
#: (at least AUTO_SAMPLE_MIN rows) and declines where their columns spread less than
#: AUTO_SPREAD_MIN (``_spread``): about one row in 64 read, against the dense method's n or more
AUTO_SAMPLE_EVERY = 64
AUTO_SAMPLE_MIN = 64
#: the sampled rows' candidates per row: the spread of 16 per row matches that of 64 within
#: 0.02 on every class at 4000-64,000 (design notes), and the sample, what a declined problem
#: pays, takes about a third less time
AUTO_SAMPLE_K = 16
#: a square matrix of at most ``cpu.small.MAX_SQUARE`` columns whose first look finds more than
#: this share of its rows' cheapest costs equal to the next one stays with the small path, which
#: solves ties fast: integer values stored as floats, 1000 x 1000 one thread, took 3.6-7.2x its
#: time by candidates (values 0-99: 36 against 7 ms; random values rounded to 0.1: 23 against 3.2)
AUTO_TIES_MAX = 0.25
#: a sample of a matrix takes a thread per this many entries read (at most the free cores)
SAMPLE_ENTRIES_PER_THREAD = 2**18
AUTO_SPREAD_MIN = 0.5
#: the sample is read in two looks: first every AUTO_FIRST_EVERY-th sampled row, which decides
#: alone where its spread lies below AUTO_SURE_BELOW or from AUTO_SURE_ABOVE up; the rest only
#: between them. Spreads of the first look (16-17 rows) on every class at 1100-16,000, three seeds:
#: sanity and rank-1 0.02-0.08, rank-8 0.19-0.39, separated 0.41-0.67, random, integer and
#: point sets 0.88-1.03; the full sample reads lower for the classes whose rows share their
#: columns (more rows, the same few columns) and the same for the others, so a first look's
#: verdict is the full sample's (design notes)
AUTO_FIRST_EVERY = 4
AUTO_SURE_BELOW = 0.15
AUTO_SURE_ABOVE = 0.8
#: a matrix taken on the CPU whose sampled rows look *local* (``_locality`` above LOCAL_ABOVE:
#: a row's cheapest columns are those of the row nearest its cheapest column, as in a point set)
#: gets at least K_LOCAL candidates per row (K_LOCAL_SMALL below K_LOCAL_FROM columns).
#: Locality of the first look at 1100-4000, three seeds: point sets 0.74-0.86, random and
#: integer 0.00-0.02 (separated 0.56-0.74 and rank-8 0.25-0.39, both declined by their spread
#: first). Geometric matrices, one thread: at 2000 the default 24 per row fails 16-220 rows in
#: the first certificate pass (0.26-0.94x the dense method), 48 none (0.33-0.45x); at 3000 28
#: per row 0.34-0.78x, 48 0.33-0.48x; at 4000 32 0.20-0.32x, 48 0.16-0.24x; at 8000 the default
#: 40 certifies in one round (0.16x; 64: 0.21x); at 1100 and 1500 32 per row 0.21-0.51x, 24
#: 0.28-0.66x, 48 0.25-0.72x. Random and integer matrices keep the default: 48 per row costs
#: them 20-40 % at 2000
LOCAL_ABOVE = 0.5
K_LOCAL = 48
K_LOCAL_SMALL = 32
K_LOCAL_FROM = 2000
#: certificate rounds before the problem goes to the dense method
MAX_ROUNDS = 64
#: a float pair fails the certificate pass beyond this fraction of (|c| + |u| + |v|): a quarter
#: of ``epslap.verify``'s tolerance, which leaves room for the rounding of c - v itself
CERTIFY_REL = RTOL / 4
#: when the first certificate pass fails more than this fraction of the rows, a second
#: candidate pass takes each failing row's k cheapest columns by reduced cost under the prices
#: of the first sparse solve (those pairs are added; the rounds go on from there). Only the
#: failing rows: every row's list doubled the sparse problem for rows that already held their
#: partners (2-core machine, benchmarks/studies/reprice_ab.py: 32,000 uniform points with 16
#: per row 11.7 -> 8.2-8.9 s in the same rounds; 200,000 clustered points on 2 threads
#: 122.6-134.3 -> 86.4-90.4 s, 25.8 -> 14.5 M pairs)
REPRICE_ABOVE = 0.05
#: the problem goes to the dense method once the certificate passes have added more than this
#: many times the candidate pairs (the optimum lies far from the rows' cheapest columns)
ADDED_MAX = 2.0
#: violating pairs a failing row adds per round (its most violating columns)
CAP = 12
#: most failing rows of a pass whose violations are looked at as rounding (``_without_rounding``)
ROUNDING_ROWS_MAX = 256


def default_k(n2: int) -> int:
    """Candidates per row for ``candidates=True``/``"auto"`` (see K_PER_LOG2)."""
    if n2 > K_GROW_ABOVE:
        doublings = math.ceil(math.log2(n2 / K_GROW_ABOVE))
        return K_MAX + K_PER_DOUBLING_LARGE * doublings
    doublings = math.log2(max(n2, 2)) - K_FROM_LOG2
    return int(min(K_MAX, max(K_MIN, round(K_PER_LOG2 * doublings))))


def check_candidates(candidates, *, backend: str, epsilon: bool, continued: bool) -> None:
    """Refuse a ``candidates`` option that is not "auto", True, False or a count, or that asks
    for the method where it does not apply (``continued``: ``cost_limit``, ``init`` or a
    checkpoint, the dense method's options)."""
    if candidates is False or (candidates.__class__ is str and candidates == "auto"):
        return
    if candidates is not True and not (
            isinstance(candidates, (int, np.integer))
            and not isinstance(candidates, (bool, np.bool_)) and candidates >= 1):
        raise ValueError(f"candidates must be 'auto', True, False or a count of columns "
                         f"per row >= 1, got {candidates!r}")
    for name, off in (("cost_limit, init and checkpoints", continued),
                      ("epsilon=False", not epsilon)):
        if off:
            raise ValueError(f"candidates does not apply with {name}: pass "
                             f"candidates=False for the dense method")
    if backend not in ("cpu", "gpu"):
        raise ValueError(f"candidates are solved on backend='cpu' or 'gpu', not "
                         f"backend={backend!r}")


def candidates_per_row(problem: Problem, options: Options) -> int | None:
    """``solve``'s ``candidates`` option (checked by :func:`check_candidates`) as a count per
    row for this problem, ``None`` for the dense method."""
    candidates = options.candidates
    auto = candidates.__class__ is str
    if candidates is False or (auto and (options.continued or not options.epsilon
                                         or options.backend not in AUTO_BACKENDS)):
        return None
    shape = problem.cost.shape
    if auto and not (problem.form == "source" or (problem.form == "matrix"
                                                   and options.backend in AUTO_MATRIX_BACKENDS)):
        return None
    matrix = problem.form == "matrix"
    least = (AUTO_MATRIX_MIN_SIDE if matrix else AUTO_MIN_SIDE)[options.backend]
    early = matrix and options.backend == "cpu" and leaves_early(*shape, problem.cost.dtype)
    if min(shape) == 0 or (auto and min(shape) < least and not early):
        return None  # (an empty problem: nothing to choose, the dense path's answer)
    if (auto and matrix and options.backend == "cpu"
            and max(shape) - min(shape) >= AUTO_MATRIX_SPARE_MAX * min(shape)):
        return None  # wide: the small path's rectangular solve
    if (auto and options.backend == "gpu" and min(shape) < AUTO_GPU_SQUARE_BELOW
            and 16 * (max(shape) - min(shape)) >= max(shape)):
        return None  # wide: the GPU's rectangular route (one exact pass over the real rows)
    if auto and options.backend == "gpu" and problem.form == "source" and (
            options.cache != "auto" or not _has_device_form(problem.cost)):
        return None  # the dense method's device row cache: asked for, or the only way there
    if candidates is True or auto:
        return default_k(max(shape))
    return int(candidates)


def _has_device_form(source) -> bool:
    """Whether a cost source's costs can be computed on the GPU (the candidates' device passes
    need that; the dense method streams the others' rows through a device row cache)."""
    from .gpu.device_costs import device_form
    return device_form(source) is not None


#: the matrix dtypes this process has sent to the candidate passes (which compile on the first):
#: a matrix of another is checked in NumPy first (``cpu.api.PRECHECK_MAX``)
_PASSED_DTYPES: set = set()


def solve_by_candidates(problem: Problem, options: Options, passes_of):
    """The candidates method where ``solve``'s option takes it, with the backend's passes
    (``passes_of(cost, maximize, options)``): ``(Solution, None)``; ``(None, why)`` where
    ``"auto"`` declined the problem after a look (a sample, or the first certificate pass: the
    caller's dense method solves it and reports why); ``(None, None)`` where the option chose
    the dense method."""
    k = candidates_per_row(problem, options)
    if k is None:
        return None, None
    auto = options.candidates.__class__ is str
    spread = None
    matrix = problem.cost if problem.form == "matrix" else None
    # the sparse solve's kernels on a free core from here, a first use's sample included
    # (integral as the passes judge it: ``canonical_dense``'s rule, a source's own dtype)
    compile_later(sparse_kernels(np.dtype(problem.cost.dtype).kind in "biu",
                                 merging=options.progress))
    if matrix is not None and matrix.dtype not in _PASSED_DTYPES:
        if matrix.size <= PRECHECK_MAX:
            # the input errors before the passes' first compile of this dtype (the passes
            # check every value again), as the dense method does
            check_before_compile(matrix, problem.maximize)
        _PASSED_DTYPES.add(matrix.dtype)
    locality = None
    if auto and matrix is not None:
        on_cpu = options.backend == "cpu"
        spread, declined, locality = matrix_sample(
            matrix, problem.maximize, k, options.threads if on_cpu else None, locality=on_cpu,
            ties=on_cpu and matrix.shape[0] == matrix.shape[1] <= MAX_SQUARE)
        if declined is not None:
            stop_all()
            return None, declined
        if locality is not None and locality > LOCAL_ABOVE:
            n2 = max(matrix.shape)
            k = max(k, K_LOCAL if n2 >= K_LOCAL_FROM else K_LOCAL_SMALL)
    t_start = time.perf_counter()
    labeled, order = relabeled(problem.cost)  # a point set in a spatial order
    result = solve_candidates(passes_of(labeled, problem.maximize, options),
                              maximize=problem.maximize, k=k, t_start=t_start, auto=auto,
                              progress=options.progress, order=order, spread=spread,
                              locality=locality)
    if result[0] is None:  # handed to the dense method: a child compiling ahead is of no use
        stop_all()
    return result


#: entries of a matrix's scan from which it runs interruptibly (:meth:`HostPasses.run`): about
#: 30 ms of reading on one thread
INTERRUPTIBLE_ENTRIES = 1 << 26


class HostPasses:
    """The two streaming passes on the CPU threads over the canonical problem (n1 <= n2,
    minimised): a matrix or a cost source as compiled row access (``src`` for ``get_row``,
    ``buf_dtype`` of its rows). ``epslap.gpu.candidates.DevicePasses`` is the GPU's."""

    backend = "cpu"
    #: how the passes find a row's least reduced costs (``stats["pass_method"]``)
    pass_method = "scan"

    def __init__(self, cost, maximize: bool, threads):
        from costfns import CostSource
        from costfns.functions import FunctionSource
        self.source = None
        if isinstance(cost, CostSource):
            n1, n2 = cost.shape
            self.shape = (n1, n2)
            self.transposed = n1 > n2
            source = cost.transpose() if self.transposed else cost
            raw = source.state()
            if maximize:
                raw = negated(raw)
            self.src, self.buf_dtype = raw, np.dtype(source.dtype)
            self.source = source
            if threads is None and isinstance(source, FunctionSource):
                threads = 1  # a user's function runs on one thread unless asked
        else:
            # the candidate pass reads every entry and reports NaN, -inf and the largest |c|
            # (``check_values``): no sweeps of the matrix beforehand
            canon = canonical_dense(cost, maximize, check_values=False)
            self.src, self.buf_dtype = canon.matrix, canon.matrix.dtype
            self.transposed = canon.transposed
            self.shape = canon.matrix.shape[::-1] if canon.transposed else canon.matrix.shape
        self.n1, self.n2 = min(self.shape), max(self.shape)
        self.integral = self.buf_dtype.kind in "iu"
        self.work = np.dtype(np.int64 if self.integral else np.float64)
        # a matrix's passes take the free cores from the column count where the dense method
        # takes them for a float matrix (the passes share nothing but their output: no
        # barrier per step to pay for)
        self.threads = resolve_threads(threads, self.n2, AUTO_MIN_COLS if self.source is not None
                                       else AUTO_MIN_COLS_FLOAT)

    def run(self, kernel, args, count=None):
        """``kernel(src, buf, sync, *head, first, stride, n1, *tail)`` on every thread, ``args
        = (head, tail)``, each thread with its own row buffer (``first`` = its index). A cost
        source's scan (its rows computed, maybe by a slow function) and a matrix's of
        INTERRUPTIBLE_ENTRIES entries or more run all off the calling thread: Ctrl-C stops them at
        their threads' next rows (``cpu.host.run_interruptibly``) and raises KeyboardInterrupt
        then. A smaller matrix's scan runs on the calling thread too (the worker's start and
        its wake-up cost more than the wait for its end)."""
        sync = new_sync()
        rows = self.n1 if count is None else count

        def scan():
            run_workers(kernel, lambda tid: self._worker_args(args, tid, count, sync),
                        self.threads, sync)
        if self.source is None and rows * self.n2 < INTERRUPTIBLE_ENTRIES:
            scan()
        else:
            run_interruptibly(scan, np.zeros(1, np.int64), sync=sync)
        if self.source is not None:
            raise_pending(self.source)

    def _worker_args(self, args, tid: int, count=None, sync=None) -> tuple:
        """Thread ``tid``'s arguments of a scan (:meth:`run`), with a row buffer of its own."""
        head, tail = args
        buf = np.empty(self.n2, self.buf_dtype)
        return (self.src, buf, new_sync() if sync is None else sync, *head, tid, self.threads,
                self.n1 if count is None else count, *tail)

    def compile_passes(self, progress=None) -> float:
        """Compile (or load) both scans for this cost's row form, with arguments made as the
        passes make theirs; the seconds spent. With ``progress`` a first use's compile is shown
        as a phase with a running clock, not silence inside the first pass."""
        v, rows = np.zeros(1, self.work), np.zeros(1, np.int64)
        scans = [(candidate_rows, self._worker_args(self._candidate_args(v, 1, rows), 0, 1))]
        return compile_kernels(scans + self.certificate_kernels(), progress,
                               "the candidate passes")

    def certificate_kernels(self) -> list:
        """The certificate pass's kernel with arguments of its types (compiled beside the
        sparse solve's where a child compiles those: see ``solve_candidates``)."""
        v, rows = np.zeros(1, self.work), np.zeros(1, np.int64)
        args = self._certify_args(v, v.copy(), rows.copy(), rows, 1, 0.0)
        return [(certify_rows, self._worker_args(args, 0, 1))]

    def _candidate_args(self, v, k: int, rows) -> tuple:
        """``(head, tail)`` of :func:`candidate_rows` over ``rows``; the tail its outputs
        ``(cols, vals, counts, diag, stats, flags)``."""
        m = rows.size
        return (v, k, rows), (np.zeros((m, k), np.int64), np.zeros((m, k), self.work),
                              np.zeros(m, np.int64),
                              np.zeros(m, self.work if self.integral else np.float64),
                              np.zeros((self.threads, 2)), np.zeros(self.threads, np.int64))

    def _certify_args(self, v, u, row_to_col, rows, cap: int, rel: float) -> tuple:
        """``(head, tail)`` of :func:`certify_rows` over ``rows``; the tail its outputs
        ``(cols, vals, counts, row_min)``."""
        m = rows.size
        return (v, u, cap, rel, rows, row_to_col), (np.zeros((m, cap), np.int64),
                                                    np.zeros((m, cap), self.work),
                                                    np.zeros(m, np.int64), np.zeros(m))

    def candidates(self, v, k: int, rows, maximize: bool):
        """Each of ``rows``' k cheapest columns by ``c - v`` (``cpu.candidates.candidate_rows``),
        values checked: ``(cols, vals, counts, diag)`` by position in ``rows``."""
        args = self._candidate_args(v, k, rows)
        self.run(candidate_rows, args, count=rows.size)
        cols, vals, counts, diag, stats, flags = args[1]
        check_values(self, int(np.bitwise_or.reduce(flags)), scanned_range(stats, self.integral),
                     maximize)
        return cols, vals, counts, diag

    def certify(self, v, u, row_to_col, rows, cap: int, rel: float):
        """The certificate pass over ``rows`` (``cpu.candidates.certify_rows``): the rows that
        fail it, with their (at most ``cap``) most violating pairs, and every row's least
        ``c_ij - v_j`` beside its own pair: ``(failing, cols, vals, counts, row_min)``."""
        args = self._certify_args(v, u, row_to_col, rows, cap, rel)
        self.run(certify_rows, args, count=rows.size)
        cols, vals, counts, row_min = args[1]
        at = counts > 0
        return rows[at], cols[at], vals[at], counts[at], row_min


def solve_candidates(prob, *, maximize: bool, k: int, t_start: float, auto: bool = False,
                     progress: bool = False, order=None, spread: float | None = None,
                     locality: float | None = None):
    """Solve by candidates, then certify (module docstring) with the passes ``prob`` (a
    :class:`HostPasses`, or ``epslap.gpu.candidates.DevicePasses``, whose auction phases then
    run on the device; the exact pass stays on the CPU): ``(Solution, None)``, or ``(None,
    why)`` where the method hands the problem to the dense method (the caller solves it then).
    ``auto``: decline where a sample's candidates do not spread (AUTO_SPREAD_MIN), and hand over
    as soon as the first certificate pass finds more than ``AUTO_FAIL_MAX`` of the rows failing.
    ``progress``: a line per round on stderr. ``order``: the passes' problem is a point set
    relabeled by ``epslap.locality.relabeled``, whose labels the result is mapped back to.
    ``spread``: ``"auto"``'s sample was judged already (``matrix_sample``), with this spread
    (and ``locality``, reported in the stats)."""
    auction = getattr(prob, "auction", None)
    n1, n2, work = prob.n1, prob.n2, prob.work
    v = np.zeros(n2, work)
    k = min(k, n2)
    # the sparse solve's kernels (the merge of added pairs too where a clock shows the
    # compile), which ``solve_by_candidates`` may have handed to a child already
    sparse_table = sparse_kernels(prob.integral, merging=progress)
    # a first use's compile (with progress: a phase with a clock, not silence in the passes)
    compile_s = prob.compile_passes(progress)
    t0 = time.perf_counter()
    if auto and spread is None:
        def sampled(rows):
            cols, _, counts, _ = prob.candidates(v, min(k, AUTO_SAMPLE_K), rows, maximize)
            return cols, counts
        spread, why = sample_spread(n1, n2, sampled)
        if why:
            return None, why
    every_row = np.arange(n1, dtype=np.int64)
    cand_cols, cand_vals, counts, diag = prob.candidates(v, k, every_row, maximize)
    time_candidates = time.perf_counter() - t0
    # (with progress, a clock for a first use's compile instead of silence inside the solve);
    # where a child compiles these kernels, the certificate's scan here meanwhile
    own = prob.certificate_kernels() if pending() else []
    t1 = time.perf_counter()
    compile_s += compile_kernels(own + sparse_table, progress, "the sparse solve")
    t0 += time.perf_counter() - t1  # (the solve's times leave the compile out)
    sparse = _candidate_csr(n1, n2, cand_cols, cand_vals, counts, diag, prob.integral)
    del cand_cols, cand_vals
    diag_ok = bool(np.isfinite(diag).all()) if not prob.integral else True
    edges0 = int(sparse.data.size)
    rounds, added, streamed, first_failing = 0, 0, 0, 0
    row_to_col, dirty, u = None, None, None
    solve_stats: list = []
    time_certify = 0.0
    check = every_row  # the rows the next certificate pass reads
    margin = np.zeros(n1)  # each row's margin to the certificate at its last pass
    repriced = 0
    rel = 0.0 if prob.integral else CERTIFY_REL

    def certify(rows):
        """The certificate pass over ``rows``: the rows that fail it, with their pairs."""
        nonlocal time_certify, rounds, streamed
        t1 = time.perf_counter()
        failing, cols, vals, counts, row_min = prob.certify(v, u, row_to_col, rows, CAP, rel)
        margin[rows] = row_min - u[rows]
        if failing.size and rel:
            failing, cols, vals, counts = _without_rounding(prob, sparse, v, u, row_to_col,
                                                            failing, cols, vals, counts)
        time_certify += time.perf_counter() - t1
        rounds += 1
        streamed += int(rows.size)
        return failing, cols, vals, counts

    while True:
        before = None if row_to_col is None else (v.copy(), u, row_to_col)
        try:
            # prices in the reported position (max v = 0) from the start: the certificate
            # passes judge the duals as they will be reported
            row_to_col, v, assigned, st = solve_canonical(
                sparse, v=v, row_to_col=row_to_col, shift=True, auction=auction)
        except InfeasibleError:
            if diag_ok:
                raise  # the candidates hold a complete assignment: the stored pairs decide
            return None, "no complete assignment among the candidates"
        solve_stats.append(st)
        u = assigned - v[row_to_col]
        if before is not None:
            check = _rows_to_recheck(before, v, u, row_to_col, dirty, margin)
        dirty, add_cols, add_vals, add_counts = certify(check)
        if progress:
            print(f"candidates: round {rounds}, {dirty.size} of {check.size} rows failing, "
                  f"{sparse.data.size} pairs, {time.perf_counter() - t0:.1f} s",
                  file=sys.stderr, flush=True)
        if rounds == 1:
            first_failing = int(dirty.size)
            if auto and dirty.size > AUTO_FAIL_MAX * n1:
                return None, (f"the first certificate pass found {dirty.size} of {n1} rows "
                              f"failing")
            if dirty.size > REPRICE_ABOVE * n1:
                # the cheapest columns by cost missed many rows' partners: take each failing
                # row's cheapest by reduced cost c - v under the sparse solve's prices as well
                t1 = time.perf_counter()
                cols, vals, counts, _ = prob.candidates(v, k, dirty, maximize)
                time_candidates += time.perf_counter() - t1
                repriced = int(counts.sum())
                added += repriced
                sparse = _merged(sparse, dirty, cols, vals, counts)
                del cols, vals
                continue
        if not dirty.size and check.size < n1:
            # clean where read: the rows skipped by the margins are read here, so that the
            # answer rests on one full pass (the prices are at max v = 0 already)
            check = every_row
            dirty, add_cols, add_vals, add_counts = certify(every_row)
        if not dirty.size:
            break
        if rounds >= MAX_ROUNDS:
            return None, f"no certificate after {rounds} rounds"
        added += int(add_counts.sum())
        if added - repriced > ADDED_MAX * edges0:
            return None, (f"the certificate passes added {added - repriced} pairs to {edges0} "
                          f"candidates without a certificate")
        sparse = _merged(sparse, dirty, add_cols, add_vals, add_counts)
    stats = {"backend": prob.backend, "method": "candidates", "candidates_per_row": k,
             "pass_method": prob.pass_method,
             "candidate_edges": edges0, "edges_added": added, "edges": int(sparse.data.size),
             "rounds": rounds, "rows_streamed": streamed, "first_failing": first_failing,
             "repriced_edges": repriced,
             "sample_spread": spread, "sample_locality": locality,
             "rows_evaluated": n1 + streamed + sum(s["rows_evaluated"] for s in solve_stats),
             "augmentations": sum(s["augmentations"] for s in solve_stats),
             "auction_bids": sum(s["auction_bids"] for s in solve_stats),
             "auction_gave_up": solve_stats[0]["auction_gave_up"],
             "passes": sum(s["passes"] for s in solve_stats),
             "epsilons": solve_stats[0]["epsilons"],
             "time_candidates_s": time_candidates, "time_certify_s": time_certify,
             "time_auction_s": sum(s["time_auction_s"] for s in solve_stats),
             "time_sparse_s": sum(s["time_solve_s"] for s in solve_stats),
             "time_estimate_s": time_candidates,
             "time_solve_s": time.perf_counter() - t0 - time_candidates,
             "compile_s": compile_s, "threads": prob.threads}
    tree = getattr(prob, "tree", None)  # a tree's passes (``point_passes``): what a row read
    if tree is not None and tree.rows_searched:
        stats["tiles_read_per_row"] = tree.tiles_read / tree.rows_searched
        stats["tiles"] = tree.tiles
    if getattr(prob, "auction_log", None):
        stats["auction_phases"] = prob.auction_log  # (eps, device rounds, device/host bids,
        #                                               device/host seconds)
    if order is not None:
        row_to_col, v, assigned = restore_labels(order, prob.transposed, row_to_col, v,
                                                 assigned)
    # the prices as certified, in the reported position already
    return finish((n1, n2), prob.transposed, prob.integral, row_to_col, v, assigned, stats,
                  maximize, t_start, shift=False), None


def _sample_rows(n1: int):
    """The rows ``"auto"`` samples (every AUTO_SAMPLE_EVERY-th, at least AUTO_SAMPLE_MIN)."""
    step = max(1, min(AUTO_SAMPLE_EVERY, n1 // AUTO_SAMPLE_MIN))
    return np.arange(0, n1, step, dtype=np.int64)


def matrix_sample(cost: np.ndarray, maximize: bool, k: int, threads=None,
                  locality: bool = False, ties: bool = False):
    """``"auto"``'s sample of a matrix in memory, read before anything else is built (the
    passes' checks and copies of the whole matrix would cost a declined problem more than its
    sample), on ``threads`` threads (``cpu.cores.resolve_threads``; on the GPU's host every
    free core): ``(spread, why, local)``, ``why`` None where candidates may go on, ``local``
    the first look's :func:`_locality` where asked and not declined (else None). A minimised
    C-contiguous float64 or int64 matrix is read where it is, others' sampled rows are copied
    into that form first. ``ties``: decline also where the first look's cheapest costs tie
    (AUTO_TIES_MAX; a square matrix the small path would solve otherwise)."""
    c = cost if cost.shape[0] <= cost.shape[1] else cost.T
    n1, n2 = c.shape
    k = min(k, n2, AUTO_SAMPLE_K)
    work = np.dtype(np.float64 if c.dtype.kind == "f" else np.int64)
    in_place = c.dtype == work and not maximize and c.flags.c_contiguous  # (compiled layout)

    def sampled(sample):
        if in_place:
            src, rows = c, sample
        else:  # the canonical rows (minimised), copied
            src = np.ascontiguousarray(c[sample], dtype=work)
            if maximize:
                np.negative(src, out=src)
            rows = np.arange(sample.size, dtype=np.int64)
        src = read_only_view(src)  # (the kernels' type of a matrix: canonical_dense's)
        m = sample.size
        # a thread per SAMPLE_ENTRIES_PER_THREAD entries read: a first look's 17 rows are
        # read faster alone than the threads start (16 of them: 3 ms on a GPU machine's host)
        nt = max(1, min(resolve_threads(threads, n2), m, m * n2 // SAMPLE_ENTRIES_PER_THREAD))
        cols = np.zeros((m, k), np.int64)
        counts = np.zeros(m, np.int64)
        vals, diag = np.zeros((m, k), work), np.zeros(m, work)
        stats, flags = np.zeros((nt, 2)), np.zeros(nt, np.int64)
        sync = new_sync()
        run_workers(candidate_rows,
                    lambda t: (src, np.empty(n2, work), sync, np.zeros(n2, work), k, rows, t, nt,
                               m, cols, vals, counts, diag, stats, flags), nt, sync)
        looks.append((sample, cols, counts))
        if len(looks) == 1 and ties:
            tied.append(_tied(vals, counts))
        return cols, counts
    looks: list = []
    tied: list = []
    spread, why = sample_spread(n1, n2, sampled)
    if why is None and tied and tied[0] > AUTO_TIES_MAX:
        why = (f"the cheapest costs of the sampled rows tie ({tied[0]:.0%} equal to the next "
               f"one): the small path")
    if why is not None or not locality:
        return spread, why, None
    return spread, why, _locality(c, maximize, *looks[0], sampled)


def _locality(c: np.ndarray, maximize: bool, rows, cols, counts, sampled) -> float:
    """How *local* the sampled rows of the canonical-shaped matrix ``c`` are: for each, the
    share of its cheapest columns (``cols``, ``counts``; its very cheapest ``j`` left out) that
    are also among those of the row ``i'`` cheapest in column ``j`` (``sampled(rows)`` gives
    rows' candidates), averaged. In a point set ``i'`` lies near ``j``, so near ``i``, and the
    two rows share most of their neighbours; in a random matrix they share about none."""
    near = np.empty(rows.size, np.int64)
    for t, i in enumerate(rows):
        column = c[:, cols[t, 0] if counts[t] else 0].astype(np.float64)
        if maximize:
            np.negative(column, out=column)
        column[i] = np.inf
        near[t] = np.argmin(column)
    near_cols, near_counts = sampled(near)
    shares = []
    for t in range(rows.size):
        own = set(cols[t, 1:counts[t]].tolist())
        if own:
            shares.append(len(own.intersection(near_cols[t, :near_counts[t]].tolist())) / len(own))
    return float(np.mean(shares)) if shares else 0.0


def sample_spread(n1: int, n2: int, sampled):
    """``"auto"``'s judgement of the sampled rows (``_sample_rows``) in two looks
    (AUTO_FIRST_EVERY): ``(spread, why)`` as :func:`_judged` gives it. ``sampled(rows)``
    returns those rows' candidates ``(cols, counts)``."""
    sample = _sample_rows(n1)
    # (contiguous like every row list of the passes: a strided one compiles them once more)
    first = np.ascontiguousarray(sample[::AUTO_FIRST_EVERY])
    cols, counts = sampled(first)
    spread = _spread(cols, counts, n2)
    if not AUTO_SURE_BELOW <= spread < AUTO_SURE_ABOVE:
        return _judged(first.size, spread)
    rest = np.delete(sample, np.s_[::AUTO_FIRST_EVERY])
    more_cols, more_counts = sampled(rest)
    return _judged(sample.size, _spread(np.concatenate((cols, more_cols)),
                                        np.concatenate((counts, more_counts)), n2))


def _tied(vals, counts) -> float:
    """The share of the sampled rows' candidate costs (ascending per row) equal to the next."""
    held = np.arange(1, vals.shape[1])[None, :] < counts[:, None]  # (the lists' own pairs)
    pairs = int(np.count_nonzero(held))
    ties = int(np.count_nonzero((vals[:, 1:] == vals[:, :-1]) & held))
    return ties / pairs if pairs else 0.0


def _judged(sampled: int, spread: float):
    """``(spread, why)``: why ``"auto"`` declines a sample that spreads this little, or None."""
    if spread < AUTO_SPREAD_MIN:
        return spread, (f"the candidates of {sampled} sampled rows share their columns "
                        f"(spread {spread:.2f} < {AUTO_SPREAD_MIN})")
    return spread, None


def _spread(cols, counts, n2: int) -> float:
    """How widely the sampled rows' candidates spread over the columns: the distinct columns
    among them over the number expected if each row's had been drawn uniformly at random
    (about 1 for random and point-set costs; far below 1 where every row's cheapest columns
    are the same few: low-rank and separated classes, whose optimum lies elsewhere)."""
    picks = int(counts.sum())
    if picks == 0 or n2 == 0:
        return 1.0
    kept = np.arange(cols.shape[1])[None, :] < counts[:, None]
    seen = np.zeros(n2, np.bool_)  # (a mark per column: no sort, as np.unique would)
    seen[cols[kept]] = True
    return int(np.count_nonzero(seen)) / (n2 * -math.expm1(-picks / n2))


def _without_rounding(prob, sparse, v, u, row_to_col, failing, cols, vals, counts):
    """The certificate pass's failing rows without those whose every violating pair the sparse
    problem holds already and which meet ``epslap.verify``'s own tolerance (judged at
    CHECK_RTOL, so that this pass's own float rounding, at most 2**-52 of the pair's terms,
    cannot carry a pair past RTOL; the pass judges at a quarter of RTOL): the sparse solve settled such a pair on its own arithmetic
    (distances summed along a path) and the pass's ``c - v`` differs from it by a few ulps at a
    tie, so adding the pair again changes nothing and the rounds would repeat it until
    MAX_ROUNDS (Euclidean distances of random points, 1150 x 1200: one row, 8 ulps, 64
    rounds). Those rows hold ``verify``'s rule, the certificate the result carries. Looked at
    only where few rows fail (ROUNDING_ROWS_MAX): rounding touches a handful of ties, and a
    round where many rows fail adds pairs anyway."""
    if failing.size > ROUNDING_ROWS_MAX:
        return failing, cols, vals, counts
    held = np.zeros(failing.size, np.bool_)
    for t, i in enumerate(failing):
        stored = sparse.indices[sparse.indptr[i]:sparse.indptr[i + 1]]
        held[t] = np.isin(cols[t, :counts[t]], stored).all()
    if not held.any():
        return failing, cols, vals, counts
    still = prob.certify(v, u, row_to_col, failing[held], CAP, CHECK_RTOL)[0]
    keep = ~held | np.isin(failing, still)
    return failing[keep], cols[keep], vals[keep], counts[keep]


def _rows_to_recheck(before, v, u, row_to_col, dirty, margin):
    """The rows the next certificate pass reads after a re-solve: the failing ones, those
    whose pair changed, and those whose dual rose, plus the largest rise of a price, by more
    than half their margin at their last pass (``c_ij - v_j - u_i`` beside their own pair; a
    price that falls only widens it). The others stay clean in exact arithmetic; the loop ends
    on a full pass all the same (``solve_candidates``), so this choice decides speed only."""
    v_old, u_old, r2c_old = before
    rise = max(0.0, float((v - v_old).max())) if v.size else 0.0
    changed = (row_to_col != r2c_old) | ((u - u_old) + rise > 0.5 * margin)
    changed[dirty] = True
    return np.flatnonzero(changed).astype(np.int64)


def scanned_range(stats: np.ndarray, integral: bool):
    """What :func:`cpu.candidates.candidate_rows`'s threads saw (``stats``): the largest finite
    |c| of float rows, the exact ``(least, largest)`` of integer ones."""
    if integral:
        ints = stats.view(np.int64)
        return int(ints[:, 0].min()), int(ints[:, 1].max())
    return float(stats[:, 0].max())


def check_values(prob, seen: int, biggest, maximize: bool) -> None:
    """The dense input's value errors for what a candidate pass read (``seen``: its value
    flags, ``biggest``: its largest finite |c|, or for integer costs read exactly their
    ``(least, largest)``): a cost source's, and a matrix's on the host (on the GPU a matrix
    was checked on its upload)."""
    if seen and getattr(prob, "source", 0) is None:  # a matrix: scipy's words
        raise ValueError("matrix contains invalid numeric entries")
    if seen & FLAG_NAN:
        raise ValueError("cost contains NaN")
    if seen & FLAG_NEG_INF:
        raise ValueError(f"cost contains {'+inf (maximize=True)' if maximize else '-inf'}")
    if prob.integral:
        if isinstance(biggest, tuple):  # exact: the scan's least and largest
            lo, hi = biggest
            biggest = max(-lo, hi)
        else:
            lo, hi = -int(biggest), int(biggest)
        source = getattr(prob, "source", None)
        if (maximize and source is not None and np.dtype(source.dtype) == np.int32
                and biggest >= 2**31):
            # the passes read the rows negated in int32, where -(-2**31) wraps to itself (the
            # only way to 2**31 in magnitude): the row cache's error (_sources)
            low = np.iinfo(np.int32).min
            raise int32_negation_error(next(
                (i for i in range(source.shape[0]) if source.row(i).min() == low), 0))
        check_int_range(lo, hi, prob.shape)
    else:
        check_float_range(biggest, prob.shape)


def sparse_kernels(integral: bool, merging: bool = True) -> list:
    """The sparse solve's kernels and the CSR builders below, with arguments of their types;
    ``merging``: with :func:`appended_pairs` (needed only where a certificate pass fails).
    Made once per process and kind (its arguments are only looked at)."""
    key = (bool(integral), bool(merging))
    if key not in _SPARSE_TABLES:
        _SPARSE_TABLES[key] = _sparse_table(*key)
    return _SPARSE_TABLES[key]


#: :func:`sparse_kernels` by (integral, merging)
_SPARSE_TABLES: dict = {}


def _sparse_table(integral: bool, merging: bool) -> list:
    work = np.int64 if integral else np.float64
    lists = (np.zeros((1, 1), np.int64), np.zeros((1, 1), work), np.zeros(1, np.int64))
    builders = [(lists_to_csr, lists + (np.zeros(1, work), not integral))]
    if merging:
        csr = (np.zeros(2, np.int64), np.zeros(1, np.int64), np.zeros(1, work))
        builders.append((appended_pairs, csr + (np.zeros(1, np.int64),) + lists))
    return kernel_table(integral) + builders


def compile_sparse_kernels(integral: bool, progress: bool = True) -> float:
    """Compile :func:`sparse_kernels` (``progress``: with a running clock); the seconds spent."""
    return compile_kernels(sparse_kernels(integral), progress, "the sparse solve")


def _candidate_csr(n1, n2, cand_cols, cand_vals, counts, diag, integral) -> SparseProblem:
    """The candidate pairs, with (i, i) added where finite and not among them."""
    indptr, indices, data = lists_to_csr(cand_cols, cand_vals, counts,
                                         diag.astype(cand_vals.dtype), not integral)
    return SparseProblem(indptr, indices, data, n1, n2, False, integral)


def _merged(prob: SparseProblem, rows, add_cols, add_vals, add_counts) -> SparseProblem:
    """``prob`` with row ``rows[t]``'s pairs ``add_cols[t, :add_counts[t]]`` appended: the
    certificate's violators, or the second candidate pass's (which may repeat a held pair at
    the same cost: a pair stored twice changes no search)."""
    indptr, indices, data = appended_pairs(prob.indptr, prob.indices, prob.data,
                                           np.asarray(rows, np.int64), add_cols,
                                           add_vals.astype(prob.data.dtype), add_counts)
    return prob._replace(indptr=indptr, indices=indices, data=data)
