"""Checkpoints, resume and warm starts (``solve(checkpoint=, resume=, init=)``): a resumed solve
takes the steps of one that never stopped, whatever stopped it (an interval, Ctrl-C, SIGKILL);
foreign, damaged and newer checkpoints are refused; a warm start is exact whatever its hint."""
from __future__ import annotations

import _thread
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import zipfile

import numpy as np
import pytest

import costfns
import epslap
import epslap.cpu.solver as cpu_solver
from epslap.checkpoint import CheckpointError, load, parse_interval
from tests.conftest import assert_optimal, cpu_path


@pytest.fixture
def often(monkeypatch):
    """The host looks at the kernel every 2 ms, so that short solves write checkpoints."""
    monkeypatch.setattr(cpu_solver, "POLL_S", 0.002)


def _same(a, b):
    assert np.array_equal(a.row_ind, b.row_ind) and np.array_equal(a.col_ind, b.col_ind)
    assert np.array_equal(a.v, b.v) and np.array_equal(a.u, b.u)
    assert a.cost == b.cost


CASES = {
    "geometric": lambda: costfns.generate("geometric", 1200, seed=1),
    "integer max": lambda: costfns.generate("integer", 900, seed=2),
    "tall": lambda: costfns.generate("random", 1000, seed=3)[:, :900].copy(),
    "source": lambda: costfns.problem("geometric", 900, seed=5),
    "rectangular source": lambda: costfns.SqEuclidean(np.random.default_rng(6).random((1500, 2)),
                                                      np.random.default_rng(7).random((8000, 2))),
}


def _case(name):
    cost = CASES[name]()
    kw = {"maximize": name == "integer max"}
    if not isinstance(cost, np.ndarray):
        kw["memory"] = 64 * 8 * max(cost.shape)  # a row cache of 64 rows
    return cost, kw


@pytest.mark.parametrize("name", list(CASES))
def test_checkpoints_change_nothing_and_resume_gives_the_same_solve(name, often, tmp_path):
    cost, kw = _case(name)
    with cpu_path("eps"):  # the path a checkpointed solve takes, whatever the size
        plain = epslap.solve(cost, threads=1, **kw)
    path = tmp_path / "run.ckpt"
    for _ in range(5):  # a busy machine can starve the host's 2 ms poll through a short pass
        with_ckpt = epslap.solve(cost, threads=1, checkpoint=path, checkpoint_every=0.004, **kw)
        if with_ckpt.stats["checkpoints_written"] >= 2:
            break
    assert with_ckpt.stats["checkpoints_written"] >= 2  # after the estimate, and in the passes
    _same(plain, with_ckpt)
    assert with_ckpt.stats["rows_evaluated"] == plain.stats["rows_evaluated"]
    head = load(str(path))["header"]
    assert head["reason"] == "interval" and head["rows_evaluated"] > 0
    resumed = epslap.solve(cost, threads=2, resume=path, **kw)  # another thread count
    _same(plain, resumed)
    assert resumed.stats["resumed_from"] == str(path)
    assert resumed.stats["rows_evaluated_before_resume"] == head["rows_evaluated"]
    assert resumed.stats["rows_evaluated"] == plain.stats["rows_evaluated"]
    if isinstance(cost, np.ndarray):
        assert_optimal(cost, resumed, maximize=kw["maximize"])


def test_a_checkpoint_after_the_estimate_skips_it(tmp_path):
    c = costfns.generate("random", 800, seed=7)
    path = tmp_path / "est.ckpt"
    first = epslap.solve(c, threads=1, checkpoint=path, checkpoint_every="1h")
    assert load(str(path))["header"]["reason"] == "estimate"
    again = epslap.solve(c, threads=1, resume=path)
    _same(first, again)
    assert again.stats["time_estimate_s"] == 0.0


def test_ctrl_c_writes_a_last_checkpoint_and_the_resume_finishes_the_solve(monkeypatch,
                                                                           tmp_path):
    import epslap._progress as progress
    c = costfns.generate("geometric", 2000, seed=8)
    plain = epslap.solve(c, threads=1)
    fired = {}

    def tick(self):  # the first progress update of the passes
        if self.mode != "phase" and not fired:
            fired["t"] = time.perf_counter()
            _thread.interrupt_main()

    monkeypatch.setattr(progress.SolveProgress, "tick", tick)
    monkeypatch.setattr(cpu_solver, "POLL_S", 0.002)
    path = tmp_path / "int.ckpt"
    with pytest.raises(KeyboardInterrupt):
        epslap.solve(c, threads=1, checkpoint=path, checkpoint_every="1h", progress=True)
    state = load(str(path))
    assert state["header"]["reason"] == "interrupted"
    monkeypatch.undo()
    resumed = epslap.solve(c, resume=path)
    _same(plain, resumed)
    assert_optimal(c, resumed)


_KILLED_SOLVE = textwrap.dedent("""
    import sys
    import costfns, epslap
    import epslap.cpu.solver as s
    s.POLL_S = 0.002
    c = costfns.generate("random", 5000, seed=9)
    epslap.solve(c, threads=1, epsilon=False, checkpoint=sys.argv[1], checkpoint_every=0.01)
""")


@pytest.mark.slow  # three processes started and killed (8 s)
def test_sigkill_at_random_moments_leaves_a_checkpoint_that_resumes_to_the_optimum(tmp_path):
    c = costfns.generate("random", 5000, seed=9)
    plain = epslap.solve(c, threads=1, epsilon=False)
    rng = np.random.default_rng(0)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
         os.environ.get("PYTHONPATH", "")]))
    seen = set()
    for trial in range(3):
        path = tmp_path / f"kill{trial}.ckpt"
        proc = subprocess.Popen([sys.executable, "-c", _KILLED_SOLVE, str(path)], env=env)
        try:
            deadline = time.monotonic() + 120
            while not path.exists() and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.005)
            assert path.exists(), "the solve wrote no checkpoint"
            time.sleep(rng.uniform(0.0, 0.6))  # mid-passes, at times mid-write
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        state = load(str(path))  # never a torn file: the previous checkpoint or the new one
        seen.add(state["header"]["reason"])
        resumed = epslap.solve(c, threads=1, epsilon=False, resume=path)
        _same(plain, resumed)
        assert resumed.stats["rows_evaluated"] == plain.stats["rows_evaluated"]
    assert seen <= {"estimate", "interval"}


# ---- refusals ---------------------------------------------------------------------------------

@pytest.fixture
def saved(tmp_path):
    c = costfns.generate("random", 600, seed=10)
    path = tmp_path / "a.ckpt"
    epslap.solve(c, threads=1, checkpoint=path)
    return c, path


def test_a_checkpoint_of_another_problem_is_refused(saved):
    c, path = saved
    with pytest.raises(CheckpointError, match="another problem"):
        epslap.solve(costfns.generate("random", 600, seed=11), resume=path)
    with pytest.raises(CheckpointError, match=r"of a \(600, 600\) problem"):
        epslap.solve(c[:500, :500].copy(), resume=path)
    with pytest.raises(CheckpointError, match="float32"):
        epslap.solve(c.astype(np.float32), resume=path)
    with pytest.raises(CheckpointError, match="'ssp'"):
        epslap.solve(c, epsilon=False, resume=path)
    with pytest.raises(CheckpointError, match="another problem"):  # the maximisation
        epslap.solve(c, maximize=True, resume=path)


def test_damaged_truncated_foreign_and_newer_checkpoints_are_refused(saved, tmp_path):
    c, path = saved
    data = path.read_bytes()
    cut = tmp_path / "cut.ckpt"
    cut.write_bytes(data[:len(data) // 2])
    with pytest.raises(CheckpointError, match="damaged or truncated"):
        epslap.solve(c, resume=cut)
    flipped = bytearray(data)
    flipped[len(data) // 3] ^= 0xFF  # inside an array: its CRC-32 no longer matches
    bad = tmp_path / "bad.ckpt"
    bad.write_bytes(bytes(flipped))
    with pytest.raises(CheckpointError, match="damaged"):
        epslap.solve(c, resume=bad)
    other = tmp_path / "other.npz"
    np.savez(other, header=np.frombuffer(json.dumps({"format": "x"}).encode(), np.uint8))
    with pytest.raises(CheckpointError, match="not an epslap checkpoint"):
        epslap.solve(c, resume=other)
    newer = tmp_path / "newer.ckpt"
    with zipfile.ZipFile(path) as zin, zipfile.ZipFile(newer, "w") as zout:
        for item in zin.infolist():
            blob = zin.read(item)
            if item.filename == "header.npy":
                arr = np.lib.format.read_array(__import__("io").BytesIO(blob))
                head = json.loads(arr.tobytes().decode())
                head["version"] = 99
                out = __import__("io").BytesIO()
                np.lib.format.write_array(out, np.frombuffer(json.dumps(head).encode(),
                                                             np.uint8))
                blob = out.getvalue()
            zout.writestr(item, blob)
    with pytest.raises(CheckpointError, match="version 99"):
        epslap.solve(c, resume=newer)
    with pytest.raises(CheckpointError, match="does not exist"):
        epslap.solve(c, resume=tmp_path / "missing.ckpt")


def test_checkpoint_options_are_checked():
    c = np.random.default_rng(0).random((20, 20))
    assert parse_interval("5min") == 300.0 and parse_interval("90s") == 90.0
    assert parse_interval(2) == 2.0 and parse_interval("1h") == 3600.0
    for bad in ("soon", "-3s", 0, "5 parsecs"):
        with pytest.raises(ValueError, match="checkpoint_every"):
            epslap.solve(c, checkpoint="x.ckpt", checkpoint_every=bad)
    with pytest.raises(ValueError, match="backend='cpu' and 'gpu'"):
        epslap.solve(c, backend="hungarian-gpu", init=np.zeros(20))
    with pytest.raises(ValueError, match="cost_limit"):
        epslap.solve(c, cost_limit=0.5, checkpoint="x.ckpt")
    with pytest.raises(ValueError, match="exclude each other"):
        epslap.solve(c, init=np.zeros(20), resume="x.ckpt")


# ---- warm starts ------------------------------------------------------------------------------

def _perturbed(name, n, seed):
    c = costfns.generate(name, n, seed=seed)
    noise = np.random.default_rng(seed).standard_normal(c.shape)
    if c.dtype.kind == "i":
        return c, c + np.rint(0.01 * np.abs(c).mean() * noise).astype(c.dtype)
    return c, c * (1.0 + 0.01 * noise)


@pytest.mark.parametrize("name,maximize,cheaper", [
    ("geometric", False, True), ("geometric", True, True), ("random", False, True),
    # maximised uniform costs and the integer class: exact, but not cheaper than the ε-passes
    # (measured at n = 1500: 2.1x and 1.3-1.5x the cold solve's rows)
    ("random", True, False), ("integer", False, False)])
def test_a_warm_start_from_a_similar_problem_is_exact(name, maximize, cheaper):
    before, after = _perturbed(name, 1500, seed=12)
    prev = epslap.solve(before, maximize=maximize, threads=1)
    cold = epslap.solve(after, maximize=maximize, threads=1)
    warm = epslap.solve(after, maximize=maximize, threads=1, init=prev)
    assert warm.stats["warm_start"] == "used"
    assert_optimal(after, warm, maximize=maximize)
    assert warm.cost == cold.cost
    if cheaper:
        assert warm.stats["rows_evaluated"] < 0.6 * cold.stats["rows_evaluated"]
    again = epslap.solve(after, maximize=maximize, threads=1, init=(prev.u, prev.v))
    _same(warm, again)
    again = epslap.solve(after, maximize=maximize, threads=1, init=prev.v)
    _same(warm, again)


def test_a_warm_start_of_a_tall_problem_takes_the_row_duals():
    before, after = _perturbed("random", 700, seed=13)
    before, after = before[:, :500].copy(), after[:, :500].copy()  # more rows than columns
    prev = epslap.solve(before)
    warm = epslap.solve(after, init=prev)
    assert_optimal(after, warm)
    with pytest.raises(ValueError, match="solved over its rows"):
        epslap.solve(after, init=prev.v)


@pytest.mark.parametrize("scale", [1.0, 1e6, 1e300])
def test_a_bad_hint_still_gives_the_optimum(scale):
    c = costfns.generate("geometric", 400, seed=14)
    hint = np.random.default_rng(1).standard_normal(400) * scale
    sol = epslap.solve(c, init=hint)
    assert sol.stats["warm_start"] in ("used", "rejected")
    assert_optimal(c, sol)
    ci = costfns.generate("integer", 300, seed=15)
    sol = epslap.solve(ci, init=np.random.default_rng(2).standard_normal(300) * scale)
    assert_optimal(ci, sol)


def test_a_warm_start_of_a_cost_source():
    src = costfns.problem("geometric", 800, seed=16)
    prev = epslap.solve(src, memory=64 * 800 * 8)
    warm = epslap.solve(src, memory=64 * 800 * 8, init=prev)
    assert warm.stats["warm_start"] == "used"
    assert warm.cost == prev.cost
    assert warm.stats["rows_evaluated"] < prev.stats["rows_evaluated"]


def test_warm_start_hints_are_checked():
    c = np.random.default_rng(0).random((30, 40))
    with pytest.raises(ValueError, match="expected 40 column duals"):
        epslap.solve(c, init=np.zeros(30))
    with pytest.raises(ValueError, match="finite"):
        epslap.solve(c, init=np.full(40, np.nan))
    with pytest.raises(TypeError, match="numeric"):
        epslap.solve(c, init=np.array(["a"] * 40))
    with pytest.raises(ValueError, match="expected 40"):
        epslap.solve(c, init=np.zeros((2, 40)))
