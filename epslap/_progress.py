"""Progress of a CPU solve on stderr (``progress=True``), drawn with tqdm from the counters the
running kernel writes (``ctl``: pass index, rows augmented in the pass, rows evaluated; ``eps_log``:
each pass's ε).

Phases, in order: compiling the kernels (only when this process has not compiled them yet, with
that reason and the time it took: Numba's disk cache makes it a load in later processes), the
estimate (elapsed time: it is one or two sweeps over the rows), each pass with its ε and the exact
pass, then the polish pass where one runs. A pass shows the rows it has augmented of the rows it
augments and the rows evaluated so far. There is no ETA and no rate: the last rows of a pass cost
the most (their searches are the longest), so a rate measured early promises too much.
"""
from __future__ import annotations

import sys
import time
from contextlib import contextmanager

import numpy as np

_PASS_FORMAT = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} rows [{elapsed}{postfix}]"
_PHASE_FORMAT = "{desc} [{elapsed}{postfix}]"


class SolveProgress:
    """Phases of one solve; ``rows_per_pass``: the rows every pass augments."""

    def __init__(self, rows_per_pass: int, ctl: np.ndarray, eps_log: np.ndarray, extra=None,
                 stream=None):
        from tqdm import tqdm
        self._tqdm = tqdm
        self.n = max(int(rows_per_pass), 1)
        self.ctl = ctl
        self.eps_log = eps_log
        self.extra = extra
        self.stream = stream if stream is not None else sys.stderr
        self.t0 = time.perf_counter()
        self.bar = None
        self.mode = "phase"  # "phase": a clock only; "passes", "polish": the kernel's counters
        self.shown_pass = -1

    def _open(self, desc: str, total=None, fmt: str = _PASS_FORMAT):
        self._close_bar()
        self.bar = self._tqdm(total=total, desc=desc, file=self.stream, bar_format=fmt,
                              leave=True, dynamic_ncols=True, mininterval=0.1)

    def _close_bar(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def note(self, text: str) -> None:
        """One line outside any bar."""
        self._close_bar()
        self.stream.write(text + "\n")
        self.stream.flush()

    @contextmanager
    def compiling(self, what: str):
        """Around a compile that this process has not done yet; a load from Numba's disk cache
        (under a second) leaves no line behind."""
        self._open(f"compiling {what} (first use in this process; cached on disk for the next)",
                   fmt=_PHASE_FORMAT)
        t0 = time.perf_counter()
        try:
            yield
        finally:
            took = time.perf_counter() - t0
            self.bar.leave = took >= 1.0
            self.bar.set_postfix_str(f"done in {took:.1f} s", refresh=True)
            self._close_bar()

    def estimate(self) -> None:
        """The estimate starts (its ticks only move the clock)."""
        self.mode = "phase"
        self._open("estimate", fmt=_PHASE_FORMAT)

    def passes(self) -> None:
        """The passes start: from here the ticks read the kernel's counters."""
        self._close_bar()
        self.mode, self.shown_pass = "passes", -1

    def polish(self) -> None:
        """The polish pass starts (docs/algorithm.md §8): its counters restart at pass 0."""
        self._close_bar()
        self.mode, self.shown_pass = "polish", -1

    def tick(self) -> None:
        """Called from the host's polling loop while a phase runs."""
        if self.mode == "phase":
            if self.bar is not None:
                self.bar.refresh()
            return
        p, k, evaluated = int(self.ctl[1]), int(self.ctl[2]), int(self.ctl[3])
        if p != self.shown_pass or self.bar is None:
            if self.bar is not None:  # the previous pass augmented every row
                self.bar.n = self.n
            self.shown_pass = p
            if self.mode == "polish":
                desc = "polish: exact pass from the final prices"
            else:
                eps = float(self.eps_log[p]) if p < len(self.eps_log) else 0.0
                desc = f"pass {p + 1}, ε = {eps:.3g}" if eps > 0 else f"pass {p + 1}, exact"
            self._open(desc, total=self.n)
        self.bar.n = min(k, self.n)
        tail = f", {self.extra()}" if self.extra else ""
        self.bar.set_postfix_str(f"rows evaluated {evaluated:,}{tail}", refresh=False)
        self.bar.refresh()

    def close(self, stats: dict | None = None) -> None:
        if self.mode != "phase":  # the last pass as it ended (also when it took under a tick)
            self.tick()
        self._close_bar()
        line = f"solved in {time.perf_counter() - self.t0:.2f} s"
        if stats:
            line += (f": {stats.get('passes', 0)} passes, "
                     f"{stats.get('rows_evaluated', 0):,} rows evaluated")
        self.note(line)
