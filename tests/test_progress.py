"""``progress=True``: the phases of a CPU solve on stderr (epslap/_progress.py)."""
from __future__ import annotations

import io
import subprocess
import sys
import time

import numpy as np
import pytest

from epslap._progress import SolveProgress

_SCRIPT = """
import time, numpy as np, costfns, epslap
n = 200
def row(i):
    time.sleep(0.0004)  # a slow cost function: each pass takes a few tenths of a second
    return np.cos(np.arange(n) * (i + 0.5)) + 1.0
src = costfns.from_function(row, (n, n), kind="row")
sol = epslap.solve(src, memory=n * 8 * 4, progress=True)
print(sol.stats["passes"], sol.stats["rows_evaluated"])
"""


def test_phases_rows_and_time_left():
    out = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True,
                         timeout=600, check=True)
    err = out.stdout, out.stderr.replace("\r", "\n")
    passes, rows = (int(x) for x in out.stdout.split())
    text = err[1]
    assert "estimate [" in text
    assert "exact:" in text and "rows evaluated" in text and "cache hits" in text
    assert "solved in" in text and f"{passes} passes, {rows:,} rows evaluated" in text
    assert " left at " in text and "rows/s" in text and "/200 rows" in text  # time left, rate


def test_compile_phase_names_its_reason_and_time():
    stream = io.StringIO()
    prog = SolveProgress(10, np.zeros(8, np.int64), np.zeros(4), stream=stream)
    with prog.compiling("the passes"):
        time.sleep(1.05)
    text = stream.getvalue()
    assert "compiling the passes (first use in this process" in text and "done in 1." in text
    assert "[00:01" in text  # the clock moved while the block held the calling thread


def test_compile_clock_runs_while_the_compile_holds_the_thread():
    """A compile holds the calling thread: a thread of the clock redraws the line, so its
    elapsed time moves (it stood at [00:00] until the end before)."""
    from epslap._progress import compile_clock
    stream = io.StringIO()
    with compile_clock("the sparse solve", stream):
        t = time.perf_counter()
        while time.perf_counter() - t < 2.1:  # busy, as a compile is
            pass
    draws = stream.getvalue().split("\r")
    assert any("[00:01" in d for d in draws) and any("[00:02" in d for d in draws)
    assert "done in 2." in draws[-1] or "done in 2." in stream.getvalue()


def test_the_pass_bar_measures_work_not_rows():
    """Rows whose searches lengthen as the pass goes (row r evaluates 1 + r/10 rows): at half
    the rows augmented (a quarter of the work done) the bar is below half, and it tracks the
    work done more closely than the row count as the pass goes on."""
    stream = io.StringIO()
    ctl = np.zeros(8, np.int64)
    prog = SolveProgress(1000, ctl, np.array([0.5, 0.0]), stream=stream)
    prog.passes()
    total = sum(1 + r / 10 for r in range(1000))
    for k in range(0, 1001, 50):
        done = int(sum(1 + r / 10 for r in range(k)))
        ctl[1:4] = (0, k, done)
        prog.tick()
        shown = prog.bar.n / prog.bar.total
        if 0 < k < 1000:
            assert done / total <= shown + 1e-9 and shown <= k / 1000 + 1e-9
        if k == 500:
            assert shown < 0.4
    assert prog.bar.n == prog.bar.total
    prog.close({"passes": 1, "rows_evaluated": int(total)})


def test_a_later_pass_reads_its_work_left_from_the_last_pass():
    """Two passes of the same shape (the last tenth of the rows costs half the work): in the
    second, the bar follows the work done, where the rows' share alone would read 90 %."""
    stream = io.StringIO()
    ctl = np.zeros(8, np.int64)
    prog = SolveProgress(1000, ctl, np.array([0.5, 0.1, 0.0]), stream=stream)
    prog.passes()

    def work(k):  # rows evaluated by the first k augmentations of a pass
        return k if k <= 900 else 900 + (k - 900) * 9
    base = 0
    for p in (0, 1):
        for k in range(0, 1001, 20):
            ctl[1:4] = (p, k, base + work(k))
            prog.tick()
            if p == 1 and k == 900:
                assert abs(prog.bar.n / prog.bar.total - 0.5) < 0.05
        base += work(1000)
    prog.close({"passes": 2, "rows_evaluated": base})


def test_the_pass_bar_never_moves_back_and_its_time_left_follows_the_estimate():
    """Cheap rows first, then rows a hundred times dearer: the estimate of the work left jumps
    up and the share done falls; the bar waits instead of moving back, and the time left shown
    is the estimate's (work left at the pass's rate), not the bar's."""
    stream = io.StringIO()
    ctl = np.zeros(8, np.int64)
    prog = SolveProgress(1000, ctl, np.array([0.0]), stream=stream)
    prog.passes()

    def work(k):
        return k if k <= 500 else 500 + (k - 500) * 100
    positions, shares = [], []
    for k in range(0, 1001, 25):
        ctl[1:4] = (0, k, work(k))
        prog.tick()
        positions.append(prog.bar.n / prog.bar.total)
        done, left = prog._work(k, work(k))
        shares.append(done / max(done + left, 1))
    assert positions == sorted(positions) and positions[-1] == 1.0
    assert any(b < a - 0.05 for a, b in zip(shares, shares[1:]))  # the share itself fell
    prog.close({"passes": 1, "rows_evaluated": work(1000)})
    text = stream.getvalue()
    assert " left at " in text and "rows/s" in text


def test_pass_labels_from_the_kernel_counters():
    stream = io.StringIO()
    ctl = np.zeros(8, np.int64)
    eps_log = np.array([0.25, 0.0, 0.0])
    prog = SolveProgress(10, ctl, eps_log, stream=stream)
    prog.passes()
    ctl[1:4] = (0, 4, 7)
    prog.tick()
    ctl[1:4] = (1, 10, 30)
    prog.tick()
    prog.close({"passes": 2, "rows_evaluated": 30})
    text = stream.getvalue()
    assert "pass 1, ε = 0.25" in text and "4/10 rows" in text and "rows evaluated 7" in text
    assert "pass 2, exact" in text and "10/10 rows" in text
    assert "2 passes, 30 rows evaluated" in text


def test_the_small_path_says_what_ran(capsys):
    import epslap
    epslap.solve(np.random.default_rng(0).random((30, 30)), progress=True)
    err = capsys.readouterr().err
    assert "by the small path" in err and "rows evaluated" in err


_POINTS_SCRIPT = """
import numpy as np, costfns, epslap
rng = np.random.default_rng(0)
src = costfns.SqEuclidean(rng.random((500, 2)), rng.random((500, 2)))
sol = epslap.solve(src, candidates=True, progress=True)
print(sol.stats["pass_method"])
"""

_SCAN_SCRIPT = """
import numpy as np, epslap
c = np.random.default_rng(0).random((400, 400))
sol = epslap.solve(c, candidates=True, progress=True)
print(sol.stats["pass_method"])
"""


@pytest.mark.parametrize(("script", "method", "phase"), [
    (_POINTS_SCRIPT, ["box", "tree"], "compiling the point-set passes"),
    (_SCAN_SCRIPT, ["scan"], "compiling the candidate passes")])
def test_the_candidate_passes_show_their_compile_before_the_rounds(script, method, phase):
    """A candidate solve's passes (a point set's tree search, a matrix's scans) are readied as
    a phase with a clock (a fresh process: compiled, or loaded from the disk cache) before the
    first round is reported."""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=600, check=True)
    text = out.stderr.replace("\r", "\n")
    assert out.stdout.split() == method
    assert f"{phase} (first use in this process" in text
    assert "candidates: round 1," in text
    assert text.index(phase) < text.index("candidates: round 1,")
