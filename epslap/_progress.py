"""A small text progress bar fed from the counters a running kernel writes (``ctl``)."""
from __future__ import annotations

import sys
import time

import numpy as np


class ProgressBar:
    """Draws ``pass P  rows k/n  rate  ETA`` on stderr from ``ctl[1]`` (pass) and ``ctl[2]``."""

    def __init__(self, rows_per_pass: int, ctl: np.ndarray, stream=None, extra=None):
        self.n = max(int(rows_per_pass), 1)
        self.ctl = ctl
        self.stream = stream if stream is not None else sys.stderr
        self.extra = extra
        self.t0 = time.perf_counter()
        self.pass_t0 = self.t0
        self.last_pass = -1

    def update(self) -> None:
        p, k, evaluated = int(self.ctl[1]), int(self.ctl[2]), int(self.ctl[3])
        now = time.perf_counter()
        if p != self.last_pass:
            self.last_pass, self.pass_t0 = p, now
        elapsed = max(now - self.pass_t0, 1e-9)
        rate = k / elapsed
        eta = (self.n - k) / rate if rate > 0 else float("inf")
        width = 30
        fill = int(width * k / self.n)
        bar = "#" * fill + "-" * (width - fill)
        tail = f" {self.extra()}" if self.extra else ""
        self.stream.write(
            f"\rpass {p + 1} [{bar}] {k}/{self.n} rows  {rate:,.0f} rows/s  "
            f"evaluated {evaluated:,}  ETA {eta:5.1f}s{tail}   ")
        self.stream.flush()

    def close(self) -> None:
        self.update()
        self.stream.write(f"\ndone in {time.perf_counter() - self.t0:.2f}s\n")
        self.stream.flush()
