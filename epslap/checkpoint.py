"""Checkpoints of a solve under way, resume from them, and warm starts (docs/algorithm.md §11).

A checkpoint holds what the pass loop needs to go on exactly where it stopped: the column prices
v, the row order, the ε bounds, the pass, its ε and statistics, the assignment the pass has made
so far and the rows evaluated (``cpu.passes.PassIO.resume``). It is written between two
augmentations, so the solve that resumes from it takes the same steps as one that never stopped
and ends with the same answer and the same count of rows evaluated.

The file is a NumPy ``.npz`` (a zip: every member carries a CRC-32, so a damaged file is refused)
with a JSON header, written to a temporary name and renamed over the previous checkpoint: a crash
while writing leaves the previous one intact. The header carries a fingerprint of the problem:
shape, dtype, the solve mode and a hash of its canonical costs — the whole matrix for a matrix
on the CPU (``fingerprint_of`` "matrix"; one mapped from a .npy file is read once for it), else
of some of its rows (the first, the last and evenly spaced ones between: a cost source, the
GPU) — so that a checkpoint of another problem is refused. The contents
are checked before a resume uses them (:func:`check_contents`): a file altered and saved again
passes its checksums, and the compiled passes trust every index in it.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import time
import tokenize
import zipfile
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._validate import FLOAT_BIG, float_cost_limit, int_cost_limit, spread_rows
from .cpu import passes as ker
from .errors import CheckpointError, unreadable
from .solution import Solution

FORMAT = "epslap-checkpoint"
VERSION = 1
FINGERPRINT_ROWS = 16

_UNITS = {"": 1.0, "s": 1.0, "sec": 1.0, "min": 60.0, "h": 3600.0}




#: the time between two checkpoints unless asked otherwise (``solve(checkpoint_every=...)``)
EVERY_DEFAULT = "5min"


def parse_interval(every: float | str) -> float:
    """Seconds between checkpoints from a number of seconds or a string ``"90s"``, ``"5min"``,
    ``"1h"``."""
    if isinstance(every, (int, float)) and not isinstance(every, bool):
        seconds = float(every)
    elif isinstance(every, str):
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-z]*)\s*", every.lower())
        if m is not None and m.group(2) == "m":
            raise ValueError(f"checkpoint_every: {every!r} is ambiguous (in sizes 'm' means "
                             f"10**6): write '{m.group(1)}min' for minutes")
        if m is None or m.group(2) not in _UNITS:
            raise ValueError(f"checkpoint_every: {every!r} is not a duration (e.g. 300, '90s', "
                             "'5min', '1h')")
        seconds = float(m.group(1)) * _UNITS[m.group(2)]
    else:
        raise TypeError(f"checkpoint_every must be seconds or a string like '5min', got "
                        f"{type(every).__name__}")
    if not seconds > 0 or not np.isfinite(seconds):
        raise ValueError(f"checkpoint_every must be a positive duration, got {every!r}")
    return seconds


def fingerprint_rows(n1: int) -> np.ndarray:
    """The canonical rows hashed into a problem's fingerprint."""
    return spread_rows(n1, FINGERPRINT_ROWS)


def fingerprint(rows: np.ndarray, n1: int, n2: int, mode: str) -> str:
    """A hash of the problem: its canonical shape, row dtype, solve mode and sampled rows."""
    h = hashlib.sha256(repr((n1, n2, rows.dtype.str, mode)).encode())
    h.update(np.ascontiguousarray(rows).data)  # (no copy: a whole matrix may be hashed)
    return h.hexdigest()[:32]


@dataclass
class Checkpointing:
    """A solve's checkpoint settings and, when resuming, the state it starts from."""

    path: str | None = None
    every_s: float = 300.0
    resume_path: str | None = None
    loaded: dict | None = None
    written: int = 0
    last_write: float = field(default_factory=time.monotonic)

    def due(self) -> bool:
        return self.path is not None and time.monotonic() - self.last_write >= self.every_s


def writing(checkpoint: Checkpointing | None) -> Checkpointing | None:
    """``checkpoint`` where it writes files, else None (a warm start's alone: a solve again
    without the hint then takes its size's own path)."""
    return checkpoint if checkpoint is not None and checkpoint.path is not None else None


def write(path: str, header: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
    """Write a checkpoint atomically: a temporary file in the same directory, flushed to disk,
    then renamed over ``path``."""
    head = dict(header, format=FORMAT, version=VERSION, written=time.time())
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        with open(tmp, "wb") as fh:
            np.savez(fh, header=np.frombuffer(json.dumps(head).encode(), np.uint8), **arrays)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def load(path: str) -> dict:
    """Read a checkpoint: ``{"header": dict, name: array, ...}``. A missing, damaged, truncated
    or foreign file, or a newer format, raises :class:`CheckpointError` saying which."""
    if not os.path.exists(path):
        raise CheckpointError(f"checkpoint {path!r} does not exist")
    try:
        with np.load(path, allow_pickle=False) as z:
            out = {name: z[name] for name in z.files}
        header = json.loads(out.pop("header").tobytes().decode())
    except (zipfile.BadZipFile, EOFError, OSError, ValueError, KeyError, UnicodeDecodeError,
            json.JSONDecodeError, SyntaxError, tokenize.TokenError) as exc:
        # (a damaged member's .npy header: NumPy parses it before the member's CRC is read)
        raise CheckpointError(f"checkpoint {path!r} is damaged or truncated "
                              f"({unreadable(exc)})") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise CheckpointError(f"{path!r} is not an epslap checkpoint")
    version = header.get("version")
    if not isinstance(version, int) or version > VERSION:
        raise CheckpointError(f"checkpoint {path!r} has format version {version}; this epslap "
                              f"reads version {VERSION} and older: resume it with a newer epslap")
    out["header"] = header
    return out


def check_matches(state: dict, path: str, n1: int, n2: int, row_dtype, mode: str,
                  print_: str, arrays: dict[str, int] | None = None) -> None:
    """Refuse a checkpoint of another problem, naming what differs, then one whose contents
    could not be resumed from (:func:`check_contents`). ``arrays``: the arrays it must hold and
    their lengths (default: the CPU pass loop's)."""
    h = state["header"]
    for key in ("shape", "dtype", "mode", "fingerprint"):
        if key not in h:
            raise _damaged(path, f"header {key} is missing")
    shape = h.get("shape")
    shape = tuple(shape) if isinstance(shape, list) else shape
    if shape != (n1, n2):
        raise CheckpointError(f"checkpoint {path!r} is of a {shape} problem (canonical shape), "
                              f"not of this {(n1, n2)} one")
    if h.get("dtype") != np.dtype(row_dtype).str:
        raise CheckpointError(f"checkpoint {path!r} is of {_dtype_name(h.get('dtype'))} costs, "
                              f"not {np.dtype(row_dtype)}")
    if h.get("mode") != mode:
        raise CheckpointError(f"checkpoint {path!r} was written by a {h.get('mode')!r} solve, "
                              f"this one is {mode!r} (the backend, epsilon= or the problem's "
                              "shape differ)")
    if h.get("fingerprint") != print_:
        which = "costs" if h.get("fingerprint_of") == "matrix" else "sampled rows' costs"
        raise CheckpointError(f"checkpoint {path!r} is of another problem: its {which} "
                              "differ")
    want = arrays if arrays is not None else {"v": n2, "perm": n1, "resume_row_col": n2}
    for name, length in want.items():
        if name not in state:
            raise _damaged(path, f"member {name} is missing")
        if np.shape(state[name]) != (length,):
            raise _damaged(path, f"{name} has shape {np.shape(state[name])}, expected "
                                 f"({length},)")
    check_contents(state, path, n1, n2, np.dtype(row_dtype).kind in "biu", mode)


def _dtype_name(value) -> str:
    try:
        return str(np.dtype(value))
    except (TypeError, ValueError):
        return repr(value)


def _damaged(path: str, what: str) -> CheckpointError:
    return CheckpointError(f"checkpoint {path!r} is damaged: {what}")


# The limits below are the ones a solve of the problem stays within: a file's checksums only
# catch accidental damage, and the compiled passes index and loop by these values unchecked (a
# row order shifted out of range read outside the cost matrix; a negated one looped forever).
#: |integer price| below the solvers' forbidden marker 2**62 (``_validate._INT_LIMIT``)
INT_PRICE_LIMIT = 2**62


class _Contents:
    """The checks of one checkpoint's members, each error naming the file and the member."""

    def __init__(self, state: dict, path: str, n1: int, n2: int, integral: bool):
        self.state, self.path, self.n1, self.n2, self.integral = state, path, n1, n2, integral
        self.head = state["header"]
        #: the largest ε a solve of this problem uses: ε_upper <= the largest cost it may hold
        self.eps_limit = float(int_cost_limit((n1, n2)) if integral
                               else float_cost_limit((n1, n2)))
        self.price_limit = INT_PRICE_LIMIT if integral else FLOAT_BIG

    def bad(self, what: str) -> CheckpointError:
        return _damaged(self.path, what)

    # ---- header values --------------------------------------------------------------------

    def key(self, key: str, where: dict | None = None, prefix: str = "header "):
        where = self.head if where is None else where
        if key not in where:
            raise self.bad(f"{prefix}{key} is missing")
        return where[key]

    def number(self, key: str, *, integer: bool = False, low: float = 0.0,
               high: float = np.inf, where: dict | None = None, prefix: str = "header "):
        """A finite number (an integer where ``integer``) within [low, high]."""
        x = self.key(key, where, prefix)
        kind = "an integer" if integer else "a number"
        if isinstance(x, bool) or not isinstance(x, int if integer else (int, float)):
            raise self.bad(f"{prefix}{key} is {x!r}, not {kind}")
        if isinstance(x, float) and not np.isfinite(x):
            raise self.bad(f"{prefix}{key} is {x!r}, not a finite number")
        if not low <= x <= high:
            raise self.bad(f"{prefix}{key} = {x!r} is outside [{low:g}, {high:g}]")
        return x

    def flag(self, key: str, where: dict, prefix: str) -> bool:
        x = self.key(key, where, prefix)
        if not isinstance(x, bool):
            raise self.bad(f"{prefix}{key} is {x!r}, not true or false")
        return x

    def text(self, key: str) -> str:
        x = self.key(key)
        if not isinstance(x, str):
            raise self.bad(f"header {key} is {x!r}, not a string")
        return x

    def common_header(self) -> float:
        """The header values both writers put there; returns ε_upper (the largest ε of the
        solve's passes)."""
        eps_upper = self.number("eps_upper", high=self.eps_limit)
        self.number("eps_lower", high=self.eps_limit)
        self.number("start_absmax", high=self.price_limit)
        self.text("reason")
        self.number("rows_evaluated", integer=True)
        return float(eps_upper)

    # ---- arrays ---------------------------------------------------------------------------

    def array(self, name: str, shape: tuple | None, kinds: str, what: str,
              finite: bool = True) -> np.ndarray:
        """Member ``name``: present, of ``shape`` (None: any 1-D), of a dtype kind in ``kinds``
        (``what`` names it in the error); floats finite where ``finite``."""
        if name not in self.state:
            raise self.bad(f"member {name} is missing")
        a = self.state[name]
        if not isinstance(a, np.ndarray):
            raise self.bad(f"member {name} is not an array")
        if (a.shape != shape) if shape is not None else a.ndim != 1:
            raise self.bad(f"{name} has shape {a.shape}, expected "
                           f"{shape if shape is not None else 'one dimension'}")
        if a.dtype.kind not in kinds:
            raise self.bad(f"{name} has dtype {a.dtype}, expected {what}")
        if finite and a.dtype.kind == "f" and not np.isfinite(a).all():
            raise self.bad(f"{name} holds NaN or inf (at index "
                           f"{int(np.flatnonzero(~np.isfinite(a))[0])})")
        return a

    def ints(self, name: str, shape: tuple | None, low: int | None = None,
             high: int | None = None) -> np.ndarray:
        """An integer member, every value in [low, high) where given, as int64 (stored back)."""
        a = self.array(name, shape, "iu", "integers")
        if low is not None:
            out = (a < low) | (a >= high)  # exact for uint64 too
            if out.any():
                at = int(np.flatnonzero(out)[0])
                raise self.bad(f"{name}[{at}] = {int(a[at])} is outside [{low}, {high})")
        elif a.dtype.kind == "u" and a.size and int(a.max()) >= 2**63:
            raise self.bad(f"{name} holds values beyond int64")
        a = np.ascontiguousarray(a, dtype=np.int64)
        self.state[name] = a
        return a

    def floats(self, name: str, shape: tuple | None, limit: float) -> np.ndarray:
        """A float64 member (stored back), finite, every |value| <= ``limit``."""
        a = self.array(name, shape, "f", "floats")
        a = np.ascontiguousarray(a, dtype=np.float64)
        if a.size and np.abs(a).max() > limit:
            at = int(np.argmax(np.abs(a)))
            raise self.bad(f"{name}[{at}] = {float(a[at])!r} is beyond ±{limit:g}")
        self.state[name] = a
        return a

    def prices(self, name: str = "v") -> np.ndarray:
        """The column prices in the work dtype (stored back), within the solvers' range."""
        if self.integral:
            return self.ints(name, (self.n2,), -self.price_limit + 1, self.price_limit)
        return self.floats(name, (self.n2,), self.price_limit)

    def perm(self) -> np.ndarray:
        """The row order: a permutation of range(n1)."""
        p = self.ints("perm", (self.n1,), 0, self.n1)
        seen = np.bincount(p, minlength=self.n1)
        if (seen != 1).any():
            i = int(np.flatnonzero(seen != 1)[0])
            raise self.bad(f"perm is not a permutation of the rows: row {i} appears "
                           f"{int(seen[i])} times")
        return p

    def pass_rows(self, name: str, rows: np.ndarray, perm: np.ndarray, k: int,
                  reverse: bool) -> None:
        """The rows holding a pair in a pass after ``k`` augmentations (``rows``, one entry per
        pair): each once, and exactly those the pass augmented so far (perm[0..k) in the pass's
        order, then the virtual rows n1..), as no solve writes anything else."""
        count = np.bincount(rows, minlength=self.n2)
        if (count > 1).any():
            raise self.bad(f"{name} pairs row {int(np.flatnonzero(count > 1)[0])} more than "
                           "once")
        order = perm[::-1] if reverse else perm
        want = np.zeros(self.n2, dtype=bool)
        want[order[:min(k, self.n1)]] = True
        want[self.n1:max(k, self.n1)] = True
        if not np.array_equal(want, count == 1):
            raise self.bad(f"{name} does not pair the {k} rows the pass augmented so far "
                           f"(it pairs {rows.size})")

    # ---- the writers ------------------------------------------------------------------------

    def cpu(self, mode: str) -> None:
        """What the CPU solve's checkpoints (``cpu.solver._Checkpoints.save``) write."""
        eps_upper = self.common_header()
        self.prices()
        perm = self.perm()
        row_col = self.ints("resume_row_col", (self.n2,), -1, self.n2)
        self.floats("eps_log", (ker.MAX_PASSES,), self.eps_limit)
        if (self.state["eps_log"] < 0).any():
            raise self.bad("eps_log holds a negative ε")
        rec = self.floats("resume", (ker.RESUME_SIZE,), np.inf)
        if rec[ker.R_ACTIVE] not in (0.0, 1.0):
            raise self.bad(f"resume: active flag {float(rec[ker.R_ACTIVE])!r} is not 0 or 1")
        if rec[ker.R_ACTIVE] == 0.0:  # the passes start afresh: nothing else of it is read
            return
        n_aug = self.n1 if mode == "rectangular" else self.n2
        fields = {"k": (ker.R_K, 0, n_aug), "pass": (ker.R_PASS, 0, ker.MAX_PASSES - 1),
                  "rows evaluated": (ker.R_ROWS, 0, np.inf), "reverse": (ker.R_REVERSE, 0, 1)}
        for what, (i, low, high) in fields.items():
            x = float(rec[i])
            if x != np.floor(x) or not low <= x <= high:
                raise self.bad(f"resume: {what} = {x!r} is not an integer in [{low:g}, "
                               f"{high:g}]")
        eps = float(rec[ker.R_EPS])
        if eps != -1.0 and not 0.0 <= eps <= eps_upper:
            raise self.bad(f"resume: the pass's ε = {eps!r} is neither -1 (the exact pass) nor "
                           f"within [0, eps_upper = {eps_upper!r}]")
        # resume_row_col: the column of every row (virtual rows too), each column taken once
        paired = np.flatnonzero(row_col >= 0)
        count = np.bincount(row_col[paired], minlength=self.n2)
        if (count > 1).any():
            raise self.bad(f"resume_row_col gives column {int(np.flatnonzero(count > 1)[0])} "
                           "to more than one row")
        self.pass_rows("resume_row_col", paired, perm, int(rec[ker.R_K]),
                       rec[ker.R_REVERSE] == 1.0)

    def gpu(self, mode: str) -> None:
        """What ``gpu.checkpoints.DeviceCheckpoints.save`` writes; inside a pass also its
        assignment, loop record and partial sums."""
        eps_upper = self.common_header()
        self.number("passes", integer=True)
        eps_list = self.key("epsilons")
        if not isinstance(eps_list, list) or not all(
                isinstance(e, (int, float)) and not isinstance(e, bool)
                and 0.0 <= e <= self.eps_limit for e in eps_list):
            raise self.bad(f"header epsilons is not a list of ε in [0, {self.eps_limit:g}]")
        if "rows_evaluated_passes" in self.head:
            self.number("rows_evaluated_passes", integer=True)
        sched = self.key("sched")
        if not isinstance(sched, dict):
            raise self.bad(f"header sched is {sched!r}, not a dict")
        p = "header sched."
        self.number("eps", low=0.0, high=eps_upper, where=sched, prefix=p)
        for key in ("first", "second", "reverse"):
            self.flag(key, sched, p)
        for key in ("total_d", "total_eps"):
            self.number(key, low=-np.inf, where=sched, prefix=p)
        self.prices()
        perm = self.perm()
        in_pass = sched.get("in_pass")
        if in_pass is None:
            return
        eps = self.number("in_pass", low=-1.0, high=eps_upper, where=sched, prefix=p)
        if eps < 0.0 and eps != -1.0:
            raise self.bad(f"header sched.in_pass = {eps!r} is neither -1 (the exact pass) nor "
                           "an ε >= 0")
        self.gpu_pass(mode, perm, sched["reverse"])

    def gpu_pass(self, mode: str, perm: np.ndarray, reverse: bool) -> None:
        """The pass under way (``sched.in_pass``): owner, cmatch, the kernel's record (written
        at a stop between two augmentations: phase 1) and the threads' partial sums."""
        from .gpu.state import R_NEED, RESUME
        n_aug = self.n1 if mode == "gpu-rectangular" else self.n2
        owner = self.ints("owner", (self.n2,), -1, self.n2)
        if self.integral:
            self.ints("cmatch", (self.n2,))
        else:  # the cost of each column's pair; columns without one hold leftovers
            cm = self.array("cmatch", (self.n2,), "f", "floats", finite=False)
            if not np.isfinite(cm[owner >= 0]).all():
                raise self.bad("cmatch holds NaN or inf for a paired column")
            self.state["cmatch"] = np.ascontiguousarray(cm, dtype=np.float64)
        rec = self.ints("record", (RESUME,))
        fixed = {"phase": (_G_PHASE, 1), "row needed": (R_NEED, -1), "seq": (_G_SEQ, 0),
                 "parity": (_G_PARITY, 0)}
        for what, (i, want) in fixed.items():
            if rec[i] != want:
                raise self.bad(f"record: {what} = {int(rec[i])}, expected {want} (a checkpoint "
                               "is written at a stop between two augmentations)")
        k = int(rec[_G_K])
        if not 0 <= k <= n_aug:
            raise self.bad(f"record: k = {k} is outside [0, {n_aug}] (the rows of a pass)")
        bits = rec[[_G_ROWS, _G_EPS]].view(np.float64).tolist()
        if not (np.isfinite(bits).all() and bits[0] >= 0 and bits[0] == int(bits[0])):
            raise self.bad(f"record: rows evaluated {bits[0]!r} or Σ ε {bits[1]!r} is not "
                           "finite (rows: a whole number >= 0)")
        self.floats("susp_d", None, np.inf)
        self.pass_rows("owner", owner[owner >= 0], perm, k, bool(reverse))


# fields of the GPU pass kernel's record (eps_ssp.cu, enum R_PHASE ...) that a resume reads
_G_PHASE, _G_K, _G_ROWS, _G_EPS, _G_SEQ, _G_PARITY = 0, 2, 11, 12, 14, 15


def check_contents(state: dict, path: str, n1: int, n2: int, integral: bool, mode: str) -> None:
    """Refuse a checkpoint whose contents a resume could not go on from: a missing member or
    header key, an array of the wrong shape or dtype, NaN or inf, an index out of range, a row
    order that is no permutation, a pass record or assignment that no solve writes. The file's
    checksums only catch accidental damage; a file altered and saved again would otherwise
    crash (an index out of range), hang (a negated row order) or mislead the passes. ``mode``:
    the solve's (``gpu-...`` for the GPU's members). The integer arrays are stored back as
    int64, prices in the work dtype, floats as float64."""
    c = _Contents(state, path, n1, n2, integral)
    if mode.startswith("gpu-"):
        c.gpu(mode)
    else:
        c.cpu(mode)


#: a float warm start's prices are kept within this many times (n_rows + n_cols) times the
#: costs' largest finite magnitude below their top (``canonical_hint``'s ``scale``)
HINT_SPREAD_PER_LINE = 4.0


def hint_scale(cost) -> float | None:
    """The ``scale`` of :func:`canonical_hint`: a matrix's (NumPy or CuPy) largest finite
    |cost|; a cost source's over a few of its rows, spread over them (the whole matrix is not
    read before the solve; an underestimate only narrows the prices kept, which costs work,
    never exactness); None for a source without rows on the host (a ``RowKernel``)."""
    from ._validate import largest_finite
    if hasattr(cost, "dtype") and hasattr(cost, "ndim") and not hasattr(cost, "row"):
        return largest_finite(cost)
    try:
        return max((largest_finite(np.asarray(cost.row(int(i)), np.float64))
                    for i in spread_rows(cost.shape[0], HINT_SCALE_ROWS)), default=0.0)
    except (NotImplementedError, AttributeError, TypeError):
        return None


def hint_misled(v, assigned, lines: int, floor: float = 0.0) -> bool:
    """Whether a float warm-start solve ended with the prices of its assigned columns
    (canonical ``v[row_to_col]``: a rectangular problem's unassigned columns may keep a hint's
    prices far down, where no reduced cost that decides the assignment is computed) spread beyond
    ``HINT_MISLED_PER_LINE * lines`` times its largest assigned |cost| (``assigned``): prices a
    solve from no hint does not reach, whose rounding can exceed the costs that decide the
    assignment — where ``+inf`` entries or a big-M separate blocks, ``verify``'s rule judges
    such duals at their own magnitude and cannot tell. The solve is then done again without
    the hint (``stats["warm_start"] = "rejected"``): where the assigned costs are far below
    the others that decide the prices it may be so without need, never wrongly. ``floor``: a
    magnitude of the costs taken at least (``big_m.small_magnitude``: where the assigned costs
    are all 0, exact matches, any spread would read as misled)."""
    v, assigned = np.asarray(v), np.asarray(assigned)
    if not v.size:
        return False
    big = max(float(np.max(np.abs(assigned))) if assigned.size else 0.0, floor)
    return float(v.max()) - float(v.min()) > HINT_MISLED_PER_LINE * lines * big


#: :func:`hint_misled`'s bound: four times the spread a hint is kept within (its prices move
#: by the paths' lengths during the solve), times the largest assigned cost instead of the
#: largest cost
HINT_MISLED_PER_LINE = 4 * HINT_SPREAD_PER_LINE


#: rows of a cost source read by :func:`hint_scale`
HINT_SCALE_ROWS = 8


def canonical_hint(init: Any, *, n_rows: int, n_cols: int, transposed: bool, maximize: bool,
                   integral: bool, scale: float | None = None) -> np.ndarray:
    """The canonical column prices (work dtype, maximum 0) of a warm start ``init``: a previous
    :class:`~epslap.Solution` (its duals ``v``, or ``u`` where the problem is solved over its
    rows), a pair ``(u, v)``, or the column duals ``v`` alone. Any finite hint is a valid start:
    the passes stay exact whatever it is; only its length and values are checked here.
    Prices are kept within the range rule's cost limit of the top (integer ones rounded: no
    int64 overflow, ``_validate.int_cost_limit``; float ones within ``float_cost_limit``, so
    that a spread beyond the float range does not overflow to -inf). ``scale``: the costs'
    largest finite magnitude, where known; float prices are then kept within
    ``HINT_SPREAD_PER_LINE * (n_rows + n_cols) * scale`` of the top, the magnitude a solve from
    no hint can reach: a hint of the same problem in other units (1e21 times the costs) or of
    blocks that ``+inf`` entries separate, shifted far apart, would otherwise have the passes
    compute every reduced cost at a magnitude whose rounding exceeds the costs themselves —
    and end at a wrong assignment whose duals still meet ``verify``'s rule at that magnitude.
    Integer prices are exact at any magnitude."""
    if isinstance(init, Solution):
        u, v = init.u, init.v
    elif isinstance(init, tuple):
        if len(init) != 2:
            raise ValueError(f"init takes a Solution, a pair (u, v) or the column duals v "
                             f"alone; got a tuple of {len(init)}")
        u, v = init
    else:
        u, v = None, init
    # both sides of a pair are checked, the one not used too: a wrong length there says the
    # hint is of another problem (or the pair is swapped)
    for name, side, want, what in (("u", u, n_rows, "row"), ("v", v, n_cols, "column")):
        if side is not None and np.shape(side) != (want,):
            raise ValueError(f"init: {name} has shape {np.shape(side)}, expected {want} "
                             f"{what} duals (this problem is {n_rows} x {n_cols})")
    side = u if transposed else v
    if side is None:
        raise ValueError(f"init: this problem ({n_rows} x {n_cols}) is solved over its rows; "
                         "pass the previous Solution or (u, v), not the column duals alone")
    hint = np.asarray(side)
    want = n_rows if transposed else n_cols
    if hint.ndim != 1 or hint.shape[0] != want:
        raise ValueError(f"init: expected {want} {'row' if transposed else 'column'} duals, "
                         f"got an array of shape {hint.shape}")
    if hint.dtype.kind not in "biuf":
        raise TypeError(f"init: duals must be numeric, got dtype {hint.dtype}")
    hint = hint.astype(np.float64)
    if not np.isfinite(hint).all():
        raise ValueError("init: duals must be finite (NaN or inf found)")
    if maximize:
        hint = -hint
    # moved to a maximum of 0 and kept within the costs' range rule (any finite prices are a
    # start; a price further down than any cost reaches acts alike): a spread beyond the float
    # range overflowed to -inf here, which the solve read as "infeasible"
    if integral:
        limit = float(int_cost_limit((n_rows, n_cols)))
    else:
        limit = float_cost_limit((n_rows, n_cols))
        if scale is not None and np.isfinite(scale):
            limit = min(limit, HINT_SPREAD_PER_LINE * (n_rows + n_cols) * float(scale))
    if hint.size:
        with np.errstate(over="ignore"):
            hint = np.maximum(hint - hint.max(), -limit)
    if integral:
        return np.rint(hint).astype(np.int64)
    return hint
