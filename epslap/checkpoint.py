"""Checkpoints of a solve under way, resume from them, and warm starts (docs/algorithm.md §11).

A checkpoint holds what the pass loop needs to go on exactly where it stopped: the column prices
v, the row order, the ε bounds, the pass, its ε and statistics, the assignment the pass has made
so far and the rows evaluated (``cpu.passes.PassIO.resume``). It is written between two
augmentations, so the solve that resumes from it takes the same steps as one that never stopped
and ends with the same answer and the same count of rows evaluated.

The file is a NumPy ``.npz`` (a zip: every member carries a CRC-32, so a damaged file is refused)
with a JSON header, written to a temporary name and renamed over the previous checkpoint: a crash
while writing leaves the previous one intact. The header carries a fingerprint of the problem:
shape, dtype, the solve mode and a hash of some of its canonical rows (the first, the last and
evenly spaced ones between), so that a checkpoint of another problem is refused.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import time
import zipfile
from dataclasses import dataclass, field
from typing import Any

import numpy as np

FORMAT = "epslap-checkpoint"
VERSION = 1
FINGERPRINT_ROWS = 16

_UNITS = {"": 1.0, "s": 1.0, "sec": 1.0, "min": 60.0, "m": 60.0, "h": 3600.0}


class CheckpointError(ValueError):
    """A checkpoint that cannot be resumed from: another problem, a damaged or truncated file,
    or a format newer than this epslap reads."""


def parse_interval(every: float | str) -> float:
    """Seconds between checkpoints from a number of seconds or a string ``"90s"``, ``"5min"``,
    ``"1h"``."""
    if isinstance(every, (int, float)) and not isinstance(every, bool):
        seconds = float(every)
    elif isinstance(every, str):
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-z]*)\s*", every.lower())
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
    return np.unique(np.linspace(0, n1 - 1, min(n1, FINGERPRINT_ROWS)).astype(np.int64))


def fingerprint(rows: np.ndarray, n1: int, n2: int, mode: str) -> str:
    """A hash of the problem: its canonical shape, row dtype, solve mode and sampled rows."""
    h = hashlib.sha256(repr((n1, n2, rows.dtype.str, mode)).encode())
    h.update(np.ascontiguousarray(rows).tobytes())
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
            json.JSONDecodeError) as exc:
        raise CheckpointError(f"checkpoint {path!r} is damaged or truncated ({exc})") from None
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
    """Refuse a checkpoint of another problem, naming what differs. ``arrays``: the arrays it
    must hold and their lengths (default: the CPU pass loop's)."""
    h = state["header"]
    if tuple(h.get("shape", ())) != (n1, n2):
        raise CheckpointError(f"checkpoint {path!r} is of a {tuple(h.get('shape', ()))} problem "
                              f"(canonical shape), not of this {(n1, n2)} one")
    if h.get("dtype") != np.dtype(row_dtype).str:
        raise CheckpointError(f"checkpoint {path!r} is of {np.dtype(h.get('dtype'))} costs, "
                              f"not {np.dtype(row_dtype)}")
    if h.get("mode") != mode:
        raise CheckpointError(f"checkpoint {path!r} was written by a {h.get('mode')!r} solve, "
                              f"this one is {mode!r} (the backend, epsilon= or the problem's "
                              "shape differ)")
    if h.get("fingerprint") != print_:
        raise CheckpointError(f"checkpoint {path!r} is of another problem: the costs of its "
                              "sampled rows differ")
    want = arrays if arrays is not None else {"v": n2, "perm": n1, "resume_row_col": n2}
    for name, length in want.items():
        if name not in state or state[name].shape != (length,):
            raise CheckpointError(f"checkpoint {path!r} is damaged: {name} has the wrong shape")


def canonical_hint(init: Any, *, n_rows: int, n_cols: int, transposed: bool, maximize: bool,
                   integral: bool, limit: int = 0) -> np.ndarray:
    """The canonical column prices (work dtype, maximum 0) of a warm start ``init``: a previous
    :class:`~epslap.Solution` (its duals ``v``, or ``u`` where the problem is solved over its
    rows), a pair ``(u, v)``, or the column duals ``v`` alone. Any finite hint is a valid start:
    the passes stay exact whatever it is; only its length and values are checked here.
    Integer prices are rounded and kept within ``limit`` of the top (no int64 overflow)."""
    from .solution import Solution
    if isinstance(init, Solution):
        u, v = init.u, init.v
    elif isinstance(init, tuple) and len(init) == 2:
        u, v = init
    else:
        u, v = None, init
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
    if hint.size:
        hint = hint - hint.max()
    if integral:
        return np.maximum(np.rint(hint), -float(limit)).astype(np.int64)
    return hint
