"""Warm starts, checkpoints and resume on the GPU backend (docs/algorithm.md §11): checkpoints
between passes change nothing, a resume from one takes the remaining passes of the
uninterrupted solve, a warm start is exact whatever its hint. Skipped, with the reason shown,
where CuPy or a CUDA device is missing."""
from __future__ import annotations

import numpy as np
import pytest

import costfns
import epslap
from conftest import assert_optimal, gpu
from epslap.checkpoint import CheckpointError, load

pytestmark = [gpu, pytest.mark.gpu]


def _same(a, b):
    assert np.array_equal(a.row_ind, b.row_ind) and np.array_equal(a.col_ind, b.col_ind)
    assert np.array_equal(a.v, b.v) and a.cost == b.cost


def _sources():
    return {
        "device cost": lambda: costfns.problem("geometric", 3000, seed=1),
        "dense": lambda: costfns.generate("random", 2000, seed=2),
        "integer max": lambda: costfns.generate("integer", 1500, seed=3),
        "host rows": lambda: costfns.from_function(
            lambda i: np.cos(np.arange(700) * (i + 0.5)) + 1.0, (700, 700), kind="row"),
    }


def _long_passes():
    """A dense device-cost problem whose ε passes outlast the host's first looks (below the
    size from which "auto" takes candidates on the GPU)."""
    return costfns.problem("geometric", 8000, seed=1)


@pytest.mark.parametrize("name", list(_sources()))
def test_checkpoints_between_passes_and_resume(name, tmp_path):
    cost = _sources()[name]()
    kw = dict(backend="gpu", maximize=name == "integer max")
    if name == "host rows":
        kw["memory"] = "2MiB"  # the search state and about 140 rows
    plain = epslap.solve(cost, **kw)
    path = tmp_path / "gpu.ckpt"
    with_ckpt = epslap.solve(cost, checkpoint=path, checkpoint_every=1e-9, **kw)
    _same(plain, with_ckpt)
    assert with_ckpt.stats["rows_evaluated"] == plain.stats["rows_evaluated"]
    # after the estimate, after every pass but the last, and inside the passes
    polished = plain.stats["polish_rows"] > 0
    assert with_ckpt.stats["checkpoints_written"] >= plain.stats["passes"] - polished
    head = load(str(path))["header"]
    assert head["mode"].startswith("gpu-")
    resumed = epslap.solve(cost, resume=path, **kw)
    _same(plain, resumed)
    assert resumed.stats["rows_evaluated"] == plain.stats["rows_evaluated"]
    assert resumed.stats["rows_evaluated_before_resume"] == head["rows_evaluated"]
    if isinstance(cost, np.ndarray):
        assert_optimal(cost, resumed, maximize=kw["maximize"])


def test_ctrl_c_between_passes_leaves_a_checkpoint(monkeypatch, tmp_path):
    import epslap.gpu.solver as gs
    c = costfns.generate("geometric", 2000, seed=4)
    plain = epslap.solve(c, backend="gpu")
    calls = {"n": 0}
    run = gs.EpsPasses.run

    def interrupted_after_two(self, *args, **kw):
        out = run(self, *args, **kw)
        calls["n"] += 1
        if calls["n"] == 2:  # a Ctrl-C the kernel saw too late: raised once the pass counts
            assert kw.get("defer_interrupt")
            self.interrupt_after = True
        return out
    monkeypatch.setattr(gs.EpsPasses, "run", interrupted_after_two)
    path = tmp_path / "int.ckpt"
    with pytest.raises(KeyboardInterrupt):
        epslap.solve(c, backend="gpu", checkpoint=path, checkpoint_every="1h")
    assert load(str(path))["header"]["reason"] == "interrupted"
    monkeypatch.undo()
    resumed = epslap.solve(c, backend="gpu", resume=path)
    _same(plain, resumed)  # it goes on after the pass the Ctrl-C came in, on the same path
    assert_optimal(c, resumed)


def test_a_cpu_checkpoint_is_refused_by_the_gpu(tmp_path):
    c = costfns.generate("random", 1200, seed=5)
    path = tmp_path / "cpu.ckpt"
    epslap.solve(c, checkpoint=path, threads=1)
    with pytest.raises(CheckpointError, match="'gpu-eps'"):
        epslap.solve(c, backend="gpu", resume=path)


@pytest.mark.parametrize("name", ["geometric", "random"])
def test_gpu_warm_start_is_exact_and_cheaper(name):
    c = costfns.generate(name, 2000, seed=6)
    after = c * (1.0 + 0.01 * np.random.default_rng(6).standard_normal(c.shape))
    prev = epslap.solve(c, backend="gpu")
    cold = epslap.solve(after, backend="gpu")
    warm = epslap.solve(after, backend="gpu", init=prev)
    assert warm.stats["warm_start"] == "used"
    assert warm.cost == cold.cost
    assert_optimal(after, warm)
    assert warm.stats["rows_evaluated"] < 0.6 * cold.stats["rows_evaluated"]
    src = costfns.problem("geometric", 2000, seed=6)  # a device cost, from the CPU's duals
    sol = epslap.solve(src, backend="gpu", init=epslap.solve(src, threads=1))
    assert sol.stats["warm_start"] == "used"


@pytest.mark.parametrize("scale", [1.0, 1e300])
def test_gpu_bad_hint_still_gives_the_optimum(scale):
    c = costfns.generate("geometric", 600, seed=7)
    sol = epslap.solve(c, backend="gpu",
                       init=np.random.default_rng(1).standard_normal(600) * scale)
    assert sol.stats["warm_start"] in ("used", "rejected")
    assert_optimal(c, sol)


def test_gpu_hint_far_above_the_costs_scale_gives_the_optimum_where_blocks_are_apart():
    """As on the CPU (tests/test_checkpoint.py): a hint 1e21 times the costs' scale, of blocks
    that +inf entries or a big-M separate, kept within the costs' scale, or the solve done
    again without it."""
    from conftest import blocks_far_apart
    wrong = sum(epslap.solve(m, backend="gpu", init=hint).cost != want
                for m, want, hint in blocks_far_apart(np.random.default_rng(9), 40, (3, 40)))
    assert wrong == 0


def test_float_duals_that_miss_the_certificate_are_polished_on_the_device(monkeypatch):
    """The first result's duals missing the per-entry rule (forced here) are redone by one exact
    pass from its prices, not by the single-block rerun."""
    import epslap.gpu.solver as gs
    c = costfns.generate("geometric", 1500, seed=2)
    plain = epslap.solve(c, backend="gpu")
    calls = {"n": 0}
    real = gs.certified

    def first_fails(*args, **kwargs):
        calls["n"] += 1
        return False if calls["n"] == 1 else real(*args, **kwargs)
    monkeypatch.setattr(gs, "certified", first_fails)
    sol = epslap.solve(c, backend="gpu")
    assert calls["n"] == 2 and not sol.stats["gpu_single_block_rerun"]
    assert sol.stats["polish_rows"] >= 1500
    # (the plain solve may have needed the polish too: its duals are judged as reported, at a
    # maximum of 0, where the passes' prices can miss the rule by a unit in the last place)
    assert sol.stats["rows_evaluated"] >= plain.stats["rows_evaluated"]
    assert sol.cost == plain.cost
    assert_optimal(c, sol)


@pytest.mark.parametrize("name", ["device cost", "host rows"])
def test_checkpoints_inside_a_pass_and_resume_from_one(name, tmp_path, monkeypatch):
    """With an interval shorter than a pass the kernel is stopped between two augmentations,
    the pass under way is saved, and the solve goes on: the same result; a resume from such a
    checkpoint (in a fresh solve) ends the same too."""
    import shutil

    import epslap.checkpoint as ckpt
    # passes long enough (tens of milliseconds on an H200) for the host's look to land in one
    cost = _long_passes() if name == "device cost" else _sources()[name]()
    kw = dict(backend="gpu")
    if name == "host rows":
        kw["memory"] = "2MiB"
    plain = epslap.solve(cost, **kw)
    path = tmp_path / "gpu.ckpt"
    inside = tmp_path / "inside.ckpt"
    write = ckpt.write

    def keep_first_inside(p, header, arrays):
        write(p, header, arrays)
        if "owner" in arrays and not inside.exists():
            shutil.copy(p, inside)
    monkeypatch.setattr(ckpt, "write", keep_first_inside)
    stopped = epslap.solve(cost, checkpoint=path, checkpoint_every=0.01, **kw)
    monkeypatch.undo()
    _same(plain, stopped)
    assert stopped.stats["rows_evaluated"] == plain.stats["rows_evaluated"]
    assert inside.exists(), "no checkpoint inside a pass: the passes were too short"
    assert load(str(inside))["header"]["sched"]["in_pass"] is not None
    resumed = epslap.solve(cost, resume=inside, **kw)
    _same(plain, resumed)
    assert resumed.stats["rows_evaluated"] == plain.stats["rows_evaluated"]


def test_ctrl_c_inside_a_pass_stops_the_kernel_and_saves_the_pass(tmp_path, monkeypatch):
    """Ctrl-C at the host's k-th look at a running pass stops the kernel between two
    augmentations and saves the pass under way. On a GPU shared with other processes a short
    pass may end before the kernel sees the request: that Ctrl-C is saved between passes,
    which must resume as well; a later look (k = 2, 4, 8) lands inside a pass."""
    import time
    c = _long_passes()
    plain = epslap.solve(c, backend="gpu")
    sleep = time.sleep
    inside = 0
    for k, look in enumerate((1, 2, 4, 8)):
        looks = []

        def ctrl_c_at(seconds, look=look, looks=looks):  # the host's look-th look
            looks.append(seconds)
            if len(looks) == look:
                raise KeyboardInterrupt
            sleep(seconds)
        monkeypatch.setattr(time, "sleep", ctrl_c_at)
        path = tmp_path / f"int{k}.ckpt"
        with pytest.raises(KeyboardInterrupt):
            epslap.solve(c, backend="gpu", checkpoint=path, checkpoint_every="1h")
        monkeypatch.undo()
        head = load(str(path))["header"]
        assert head["reason"] == "interrupted"
        inside += head["sched"].get("in_pass") is not None
        resumed = epslap.solve(c, backend="gpu", resume=path)
        _same(plain, resumed)
        if inside:
            break
    assert inside, "no Ctrl-C landed inside a pass"
