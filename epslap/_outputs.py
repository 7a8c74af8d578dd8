"""The results of :func:`epslap.solve_many` (:class:`ManyResult`) and their files, one record per
problem added as it arrives.

``.csv`` gains one line per record, flushed to disk at once; each line ends with a ``complete``
field, so a line torn by a crash is recognised and ignored. ``.npz`` and ``.parquet`` hold
arrays natively; they are rewritten (to a temporary file, then renamed over the old one) at most
every ``REWRITE_S`` seconds and when the run ends, so a crash leaves the last whole file. A
problem counts as done when its last record is ``ok``; a failed one is tried again by a rerun.

Each record carries ``settings``: what its answer depends on (the options that change it and a
fingerprint of the problem's content, see ``epslap.many``), so that a rerun reuses a record only
when it would have solved the same thing. A file of the older layout, without them, is refused:
its records cannot be told apart. Integer totals stay Python ints in every format (a float64
holds only 53 bits).
"""
from __future__ import annotations

import csv
import json
import os
import time
from dataclasses import dataclass

import numpy as np

REWRITE_S = 2.0
_FIELDS = ["key", "settings", "status", "cost", "seconds", "rows_evaluated", "error", "row_ind",
           "col_ind", "complete"]
#: the layout before ``settings``: refused, see :func:`_older`
_OLD_FIELDS = ["key", "status", "cost", "seconds", "rows_evaluated", "error", "row_ind",
               "col_ind", "complete"]


_SCALARS = ("key", "settings", "status", "cost", "seconds", "rows_evaluated", "error")


def _older(path: str) -> ValueError:
    return ValueError(f"{path} was written by an older epslap, without the settings of each "
                      "result (the options and the problem's content fingerprint), so its "
                      "results cannot be checked against this run; delete it or use another "
                      "out file")


@dataclass(frozen=True)
class ManyResult:
    """One problem's result. ``status``: ``"ok"`` or ``"error"`` (``error`` says why);
    ``row_ind``/``col_ind``/``cost`` as :func:`epslap.solve` gives them; ``seconds``: the solve's
    time on its worker; ``settings``: what the answer depends on (``maximize`` and the
    problem's content fingerprint; None without ``out``, or for a problem that has no
    fingerprint and so is never reused);
    ``from_output``: read from ``out`` (solved by an earlier run with the same settings). The
    result files store every field but ``from_output``; an integer problem's ``cost`` is an
    exact int."""

    key: str
    status: str
    cost: float | int | None = None
    row_ind: np.ndarray | None = None
    col_ind: np.ndarray | None = None
    seconds: float = 0.0
    rows_evaluated: int | None = None
    error: str | None = None
    settings: str | None = None
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


class ResumableCsv:
    """A CSV file that a long run appends one line to per finished item and that a rerun
    resumes from (``solve_many``'s ``.csv`` and ``emd_matrix``'s ``out``): ``rows``, the lines
    already there under the header ``check_header`` accepted (which raises otherwise), and
    ``append``, which writes a line and flushes it (and fsyncs it, ``durable``). A new or empty
    file gets ``header``."""

    def __init__(self, path: str, header: list[str], check_header, durable: bool):
        self.durable = durable
        self.header, self.rows = header, []
        if os.path.exists(path) and os.path.getsize(path) > 0:
            with open(path, newline="") as fh:
                reader = csv.reader(fh)
                found = next(reader, None)
                check_header(found)
                self.header, self.rows = found, list(reader)
            self.fh = open(path, "a", newline="")  # noqa: SIM115 - closed by close()
            self.writer = csv.writer(self.fh)
        else:
            self.fh = open(path, "w", newline="")  # noqa: SIM115
            self.writer = csv.writer(self.fh)
            self.append(header)

    def append(self, row: list) -> None:
        self.writer.writerow(row)
        self.fh.flush()
        if self.durable:
            os.fsync(self.fh.fileno())

    def close(self) -> None:
        self.fh.close()


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


def _cost_text(cost: float | int | None) -> str:
    """An int as its digits, a float as its repr (which always has '.', 'e', 'inf' or 'nan')."""
    if cost is None:
        return ""
    return str(int(cost)) if isinstance(cost, (int, np.integer)) else repr(float(cost))


def _cost_value(text: str) -> float | int | None:
    if not text:
        return None
    return float(text) if any(s in text for s in (".", "e", "inf", "nan")) else int(text)


class _Csv(_Output):
    def __init__(self, path: str):
        super().__init__(path)

        def check_header(header) -> None:
            if header == _OLD_FIELDS:
                raise _older(path)
            if header != _FIELDS:
                raise ValueError(f"{path} is not a solve_many result file (its first line "
                                 f"is not {','.join(_FIELDS)}); use another file")
        self.file = ResumableCsv(path, _FIELDS, check_header, durable=True)
        for row in self.file.rows:
            if len(row) == len(_FIELDS) and row[-1] == "yes":  # else: a torn line
                self.records[row[0]] = self._parse(row)

    @staticmethod
    def _parse(row: list[str]) -> ManyResult:
        key, settings, status, cost, seconds, rows, error, ri, ci, _ = row
        return ManyResult(key, status, cost=_cost_value(cost), seconds=float(seconds),
                          rows_evaluated=int(rows) if rows else None, error=error or None,
                          settings=settings or None,
                          row_ind=_ints(ri) if status == "ok" else None,
                          col_ind=_ints(ci) if status == "ok" else None)

    def add(self, rec: ManyResult) -> None:
        super().add(rec)

        def text(a):
            return "" if a is None else " ".join(map(str, np.asarray(a).tolist()))
        self.file.append([rec.key, rec.settings or "", rec.status, _cost_text(rec.cost),
                          f"{rec.seconds:.6f}",
                          "" if rec.rows_evaluated is None else rec.rows_evaluated,
                          rec.error or "", text(rec.row_ind), text(rec.col_ind), "yes"])

    def close(self) -> None:
        self.file.close()


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
    """``records``: the scalars of every record as JSON (an int cost stays an exact JSON
    integer); ``row_ind_<k>``, ``col_ind_<k>``: the assignment of record k."""

    def _read(self) -> list[ManyResult]:
        try:
            with np.load(self.path, allow_pickle=False) as z:
                scalars = json.loads(z["records"].tobytes().decode())
                arrays = {name: z[name] for name in z.files if name != "records"}
        except (OSError, ValueError, KeyError) as exc:
            from .errors import unreadable
            raise ValueError(f"{self.path} is not a readable solve_many result file "
                             f"({unreadable(exc)})") from None
        if any(set(s) == set(_SCALARS) - {"settings"} for s in scalars):
            raise _older(self.path)
        if any(set(s) != set(_SCALARS) for s in scalars):
            raise ValueError(f"{self.path} is not a solve_many result file (its records do not "
                             f"hold {', '.join(_SCALARS)}); use another file")
        return [ManyResult(**s, row_ind=arrays.get(f"row_ind_{k}"),
                           col_ind=arrays.get(f"col_ind_{k}")) for k, s in enumerate(scalars)]

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
    """One row per record; ``row_ind`` and ``col_ind`` are list columns. ``cost`` is float64;
    ``cost_int`` holds an integer problem's exact total (null for a float one), which float64
    would round beyond 2**53."""

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
        table = pq.read_table(self.path)
        if table.column_names == _OLD_FIELDS[:-1]:
            raise _older(self.path)
        if table.column_names != _FIELDS[:-1] + ["cost_int"]:
            raise ValueError(f"{self.path} is not a solve_many result file (its columns are "
                             f"{', '.join(table.column_names)}); use another file")
        records = []
        for row in table.to_pylist():
            exact = row.pop("cost_int")
            if exact is not None:
                row["cost"] = exact
            for name in ("row_ind", "col_ind"):
                if row[name] is not None:
                    row[name] = np.array(row[name], np.int64)
            records.append(ManyResult(**row))
        return records

    def _write(self, tmp: str, records: list[ManyResult]) -> None:
        pa, pq = self._pyarrow()
        cols = {name: [getattr(r, name) for r in records] for name in _FIELDS[:-1]}
        for name in ("row_ind", "col_ind"):
            cols[name] = [None if a is None else np.asarray(a).tolist() for a in cols[name]]
        ints = [isinstance(c, (int, np.integer)) for c in cols["cost"]]
        cols["cost_int"] = [int(c) if i else None for c, i in zip(cols["cost"], ints)]
        cols["cost"] = [None if c is None else float(c) for c in cols["cost"]]
        schema = pa.schema([("key", pa.string()), ("settings", pa.string()),
                            ("status", pa.string()),
                            ("cost", pa.float64()), ("seconds", pa.float64()),
                            ("rows_evaluated", pa.int64()), ("error", pa.string()),
                            ("row_ind", pa.list_(pa.int64())), ("col_ind", pa.list_(pa.int64())),
                            ("cost_int", pa.int64())])
        pq.write_table(pa.table(cols, schema=schema), tmp)
