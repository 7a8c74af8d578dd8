"""Progress of a CPU solve on stderr (``progress=True``), drawn with tqdm from the counters the
running kernel writes (``ctl``: pass index, rows augmented in the pass, rows evaluated; ``eps_log``:
each pass's ε).

Phases, in order: compiling the kernels (only when this process has not compiled them yet, with
that reason and the time it took: Numba's disk cache makes it a load in later processes), the
estimate (elapsed time: it is one or two sweeps over the rows), each pass with its ε and the exact
pass, then the polish pass where one runs. A pass shows the rows it has augmented of the rows it
augments and the rows evaluated so far.

A pass's bar measures work, not rows: the last rows of a pass cost the most (their searches are
the longest), so the share of rows augmented ran to 97 % in the first tenth of a pass. The work
left is estimated as the rows left times the rows evaluated per augmentation over the last
quarter of the rows augmented (``_WORK_WINDOW``), which rises as the searches lengthen, and,
from the second pass on, at least as what the last pass still had to do at the same row count
(passes of one solve have alike shapes). The bar shows the work done over the work done plus
that estimate, and never moves back: where the estimate grows faster than the work is done it
waits. The time left is the estimate of the work left at the pass's rate (rows evaluated per
second since it began), both shown; they converge as the pass ends.
"""
from __future__ import annotations

import sys
import threading
import time
from contextlib import contextmanager

import numpy as np

_PASS_FORMAT = "{desc}: {percentage:3.0f}%|{bar}| [{elapsed}{postfix}]"
#: the pass bar's scale: its position is the share of the work done, in these units
_SCALE = 10_000
#: the share of a pass's augmented rows over which the work per row is measured
_WORK_WINDOW = 0.25
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
        self.samples: list = []  # (rows augmented, rows evaluated) at this pass's ticks
        self.previous: list = []  # the last finished pass's samples (its shape of work)
        self.shown = 0  # the pass bar's position (of _SCALE): it never moves back
        self.pass_t0 = self.t0  # when the pass shown began
        self.last_tick = self.t0  # the end of the last look at the kernel's counters

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
        """Around a compile that this process has not done yet (:func:`compile_clock`)."""
        self._close_bar()
        with compile_clock(what, self.stream):
            yield

    def estimate(self) -> None:
        """The estimate starts (its ticks only move the clock)."""
        self.mode = "phase"
        self._open("estimate", fmt=_PHASE_FORMAT)

    def passes(self) -> None:
        """The passes start: from here the ticks read the kernel's counters."""
        self._close_bar()
        self.mode, self.shown_pass = "passes", -1
        self.last_tick = time.perf_counter()

    def polish(self) -> None:
        """The polish pass starts (docs/algorithm.md §8): its counters restart at pass 0."""
        self._close_bar()
        self.mode, self.shown_pass = "polish", -1
        self.last_tick = time.perf_counter()

    def tick(self) -> None:
        """Called from the host's polling loop while a phase runs."""
        if self.mode == "phase":
            if self.bar is not None:
                self.bar.refresh()
            return
        p, k, evaluated = int(self.ctl[1]), int(self.ctl[2]), int(self.ctl[3])
        if p != self.shown_pass or self.bar is None:
            if self.bar is not None:  # the previous pass augmented every row
                self.bar.n = _SCALE
            self.shown_pass = p
            if len(self.samples) > 1:
                self.previous = self.samples
            self.samples = [(0, self.samples[-1][1] if self.samples else 0)]
            if self.mode == "polish":
                desc = "polish: exact pass from the final prices"
            else:
                eps = float(self.eps_log[p]) if p < len(self.eps_log) else 0.0
                desc = f"pass {p + 1}, ε = {eps:.3g}" if eps > 0 else f"pass {p + 1}, exact"
            self._open(desc, total=_SCALE)
            # the pass began after the last look at the previous one: its rows evaluated since
            # then are this pass's (``_work``), and so is the time
            self.shown, self.pass_t0 = 0, self.last_tick

        k = min(k, self.n)
        done, left = self._work(k, evaluated)
        self.shown = max(self.shown, _SCALE * done // max(done + left, 1))
        self.bar.n = self.shown
        elapsed = time.perf_counter() - self.pass_t0
        rate = done / elapsed if elapsed > 0 else 0.0
        eta = self._tqdm.format_interval(left / rate) if rate > 0 else "?"
        tail = f", {self.extra()}" if self.extra else ""
        self.bar.set_postfix_str(
            f"{eta} left at {self._tqdm.format_sizeof(rate)} rows/s, {k:,}/{self.n:,} rows, "
            f"rows evaluated {evaluated:,}{tail}", refresh=False)
        self.bar.refresh()
        self.last_tick = time.perf_counter()

    def _work(self, k: int, evaluated: int) -> tuple[int, int]:
        """The pass's work done (rows evaluated since it began) and the work left estimated
        from the last ``_WORK_WINDOW`` of its augmented rows (module docstring)."""
        samples = self.samples
        if k > samples[-1][0] or evaluated > samples[-1][1]:
            samples.append((k, evaluated))
        k0, e0 = samples[0]
        done = max(evaluated - e0, 0)
        if k <= k0:
            return done, self.n - k  # nothing augmented yet: a row a row
        floor = k - max(1, int(_WORK_WINDOW * (k - k0)))
        kw, ew = next((s for s in samples if s[0] >= floor), samples[-1])
        if kw >= k:
            kw, ew = k0, e0
        per_row = max(evaluated - ew, 0) / (k - kw)
        left = (self.n - k) * max(per_row, 1.0)
        share = self._previous_share(k)
        if share > 0.0:  # the last pass had done this share of its work at k rows
            left = max(left, done / share - done)
        return done, int(round(left))

    def _previous_share(self, k: int) -> float:
        """The share of its work the last finished pass had done when it had augmented ``k``
        rows (0 where there is none): passes of one solve have alike shapes, their last rows
        the dearest, so it tells how much of this pass is left better than its rows do."""
        prev = self.previous
        if not prev:
            return 0.0
        total = prev[-1][1] - prev[0][1]
        at = max((s for s in prev if s[0] <= k), key=lambda s: s[0])
        return (at[1] - prev[0][1]) / total if total > 0 else 0.0

    def close(self, stats: dict | None = None) -> None:
        if self.mode != "phase":  # the last pass as it ended (also when it took under a tick)
            self.tick()
        self._close_bar()
        line = f"solved in {time.perf_counter() - self.t0:.2f} s"
        if stats:
            line += (f": {stats.get('passes', 0)} passes, "
                     f"{stats.get('rows_evaluated', 0):,} rows evaluated")
        self.note(line)


#: seconds between two redraws of a compile's clock
_CLOCK_S = 0.25


@contextmanager
def compile_clock(what: str, stream=None):
    """A line for a compile this process has not done yet, whose clock runs while it does: a
    thread redraws it (the compile holds the calling thread; Numba's front end lets others run
    between its steps). A load from Numba's disk cache (under a second) leaves no line behind."""

    from tqdm import tqdm
    bar = tqdm(desc=f"compiling {what} (first use in this process; cached on disk for the next)",
               file=stream if stream is not None else sys.stderr, bar_format=_PHASE_FORMAT,
               leave=True, dynamic_ncols=True, mininterval=0.1)
    stop = threading.Event()

    def redraw():
        while not stop.wait(_CLOCK_S):
            bar.refresh()
    clock = threading.Thread(target=redraw, name="epslap-compile-clock", daemon=True)
    clock.start()
    t0 = time.perf_counter()
    try:
        yield
    finally:
        stop.set()
        clock.join()
        took = time.perf_counter() - t0
        bar.leave = took >= 1.0
        bar.set_postfix_str(f"done in {took:.1f} s", refresh=True)
        bar.close()
