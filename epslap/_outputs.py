"""The results of :func:`epslap.solve_many` (:class:`ManyResult`) and their files, one record per
problem added as it arrives.

``.csv`` gains one line per record, flushed to disk at once; each line ends with a ``complete``
field, so a line torn by a crash is recognised and ignored. ``.npz`` and ``.parquet`` hold
arrays natively; they are rewritten (to a temporary file, then renamed over the old one) at most
every ``REWRITE_S`` seconds and when the run ends, so a crash leaves the last whole file. A
problem counts as done when its last record is ``ok``; a failed one is tried again by a rerun.
"""
from __future__ import annotations

import csv
import json
import os
import time
from dataclasses import dataclass

import numpy as np

REWRITE_S = 2.0
_FIELDS = ["key", "status", "cost", "seconds", "rows_evaluated", "error", "row_ind", "col_ind",
           "complete"]


_SCALARS = ("key", "status", "cost", "seconds", "rows_evaluated", "error")


@dataclass(frozen=True)
class ManyResult:
    """One problem's result. ``status``: ``"ok"`` or ``"error"`` (``error`` says why);
    ``row_ind``/``col_ind``/``cost`` as :func:`epslap.solve` gives them; ``seconds``: the solve's
    time on its worker; ``from_output``: read from ``out`` (solved by an earlier run: a CSV
    keeps the assignment too). The result files store every field but ``from_output``."""

    key: str
    status: str
    cost: float | None = None
    row_ind: np.ndarray | None = None
    col_ind: np.ndarray | None = None
    seconds: float = 0.0
    rows_evaluated: int | None = None
    error: str | None = None
    from_output: bool = False

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def scalars(self) -> dict:
        return {name: getattr(self, name) for name in _SCALARS}


def open_output(path) -> _Output:
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"out={path!r}: folder {folder} does not exist")
    for suffix, kind in ((".csv", _Csv), (".npz", _Npz), (".parquet", _Parquet)):
        if path.endswith(suffix):
            return kind(path)
    raise ValueError(f"out={path!r}: give a .csv, .npz or .parquet file")


class _Output:
    def __init__(self, path: str):
        self.path = path
        self.records: dict[str, ManyResult] = {}  # the last record of each key

    def done(self) -> dict[str, ManyResult]:
        return {k: r for k, r in self.records.items() if r.status == "ok"}

    def add(self, rec: ManyResult) -> None:
        self.records[rec.key] = rec

    def close(self) -> None:
        pass


def _ints(text: str) -> np.ndarray:
    return np.array(text.split(), dtype=np.int64)


class _Csv(_Output):
    def __init__(self, path: str):
        super().__init__(path)
        if os.path.exists(path) and os.path.getsize(path) > 0:
            with open(path, newline="") as fh:
                reader = csv.reader(fh)
                if next(reader, None) != _FIELDS:
                    raise ValueError(f"{path} is not a solve_many result file (its first line "
                                     f"is not {','.join(_FIELDS)}); use another file")
                for row in reader:
                    if len(row) == len(_FIELDS) and row[-1] == "yes":  # else: a torn line
                        self.records[row[0]] = self._parse(row)
            self.fh = open(path, "a", newline="")  # noqa: SIM115 - closed by close()
        else:
            self.fh = open(path, "w", newline="")  # noqa: SIM115
            csv.writer(self.fh).writerow(_FIELDS)
        self.writer = csv.writer(self.fh)
        self._sync()

    @staticmethod
    def _parse(row: list[str]) -> ManyResult:
        key, status, cost, seconds, rows, error, ri, ci, _ = row
        return ManyResult(key, status, cost=float(cost) if cost else None, seconds=float(seconds),
                      rows_evaluated=int(rows) if rows else None, error=error or None,
                      row_ind=_ints(ri) if status == "ok" else None,
                      col_ind=_ints(ci) if status == "ok" else None)

    def add(self, rec: ManyResult) -> None:
        super().add(rec)

        def text(a):
            return "" if a is None else " ".join(map(str, np.asarray(a).tolist()))
        self.writer.writerow([rec.key, rec.status, "" if rec.cost is None else repr(rec.cost),
                              f"{rec.seconds:.6f}",
                              "" if rec.rows_evaluated is None else rec.rows_evaluated,
                              rec.error or "", text(rec.row_ind), text(rec.col_ind), "yes"])
        self._sync()

    def _sync(self) -> None:
        self.fh.flush()
        os.fsync(self.fh.fileno())

    def close(self) -> None:
        self.fh.close()


class _Rewritten(_Output):
    """Outputs rewritten whole (atomically), at most every ``REWRITE_S`` seconds."""

    def __init__(self, path: str):
        super().__init__(path)
        if os.path.exists(path):
            for rec in self._read():
                self.records[rec.key] = rec
        self.last, self.dirty = 0.0, False

    def add(self, rec: ManyResult) -> None:
        super().add(rec)
        self.dirty = True
        if time.monotonic() - self.last >= REWRITE_S:
            self._flush()

    def close(self) -> None:
        if self.dirty:
            self._flush()

    def _flush(self) -> None:
        tmp = f"{self.path}.tmp-{os.getpid()}{os.path.splitext(self.path)[1]}"
        try:
            self._write(tmp, list(self.records.values()))
            os.replace(tmp, self.path)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
        self.last, self.dirty = time.monotonic(), False


class _Npz(_Rewritten):
    """``records``: the scalars of every record as JSON; ``row_ind_<k>``, ``col_ind_<k>``: the
    assignment of record k."""

    def _read(self) -> list[ManyResult]:
        try:
            with np.load(self.path, allow_pickle=False) as z:
                scalars = json.loads(z["records"].tobytes().decode())
                return [ManyResult(**s, row_ind=z.get(f"row_ind_{k}"),
                                   col_ind=z.get(f"col_ind_{k}")) for k, s in enumerate(scalars)]
        except (OSError, ValueError, KeyError) as exc:
            raise ValueError(f"{self.path} is not a readable solve_many result file "
                             f"({exc})") from None

    def _write(self, tmp: str, records: list[ManyResult]) -> None:
        arrays = {}
        for k, r in enumerate(records):
            if r.row_ind is not None:
                arrays[f"row_ind_{k}"] = r.row_ind
                arrays[f"col_ind_{k}"] = r.col_ind
        blob = json.dumps([r.scalars() for r in records]).encode()
        with open(tmp, "wb") as fh:
            np.savez(fh, records=np.frombuffer(blob, np.uint8), **arrays)
            fh.flush()
            os.fsync(fh.fileno())


class _Parquet(_Rewritten):
    """One row per record; ``row_ind`` and ``col_ind`` are list columns."""

    @staticmethod
    def _pyarrow():
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise ImportError("out=*.parquet needs pyarrow (pip install pyarrow); .csv and "
                              ".npz need nothing more") from None
        return pa, pq

    def _read(self) -> list[ManyResult]:
        _, pq = self._pyarrow()
        rows = pq.read_table(self.path).to_pylist()
        return [ManyResult(**{k: (np.array(v, np.int64) if k in ("row_ind", "col_ind") and
                              v is not None else v) for k, v in row.items()}) for row in rows]

    def _write(self, tmp: str, records: list[ManyResult]) -> None:
        pa, pq = self._pyarrow()
        cols = {name: [getattr(r, name) for r in records] for name in _FIELDS[:-1]}
        for name in ("row_ind", "col_ind"):
            cols[name] = [None if a is None else np.asarray(a).tolist() for a in cols[name]]
        schema = pa.schema([("key", pa.string()), ("status", pa.string()),
                            ("cost", pa.float64()), ("seconds", pa.float64()),
                            ("rows_evaluated", pa.int64()), ("error", pa.string()),
                            ("row_ind", pa.list_(pa.int64())), ("col_ind", pa.list_(pa.int64()))])
        pq.write_table(pa.table(cols, schema=schema), tmp)
