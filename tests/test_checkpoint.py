"""Checkpoints, resume and warm starts (``solve(checkpoint=, resume=, init=)``): a resumed solve
takes the steps of one that never stopped, whatever stopped it (an interval, Ctrl-C, SIGKILL);
foreign, damaged and newer checkpoints are refused; a warm start is exact whatever its hint."""
from __future__ import annotations

import _thread
import json
import os
import shutil
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
import epslap.checkpoint as ckpt
import epslap.cpu.passes as ker
import epslap.cpu.host as cpu_host
from epslap.checkpoint import CheckpointError, load, parse_interval
from tests.conftest import assert_optimal, blocks_far_apart, cpu_path


@pytest.fixture
def often(monkeypatch):
    """The host looks at the kernel every 2 ms, so that short solves write checkpoints."""
    monkeypatch.setattr(cpu_host, "POLL_S", 0.002)


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
    plain = epslap.solve(c, threads=1, candidates=False)  # the method that checkpoints
    fired = {}

    def tick(self):  # the first progress update of the passes
        if self.mode != "phase" and not fired:
            fired["t"] = time.perf_counter()
            _thread.interrupt_main()

    monkeypatch.setattr(progress.SolveProgress, "tick", tick)
    monkeypatch.setattr(cpu_host, "POLL_S", 0.002)
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
    import epslap.cpu.host as s
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
    assert CheckpointError is epslap.CheckpointError and issubclass(CheckpointError, ValueError)
    with pytest.raises(epslap.CheckpointError, match="another problem"):
        epslap.solve(costfns.generate("random", 600, seed=11), resume=path)
    with pytest.raises(CheckpointError, match=r"of a \(600, 600\) problem"):
        epslap.solve(c[:500, :500].copy(), resume=path)
    with pytest.raises(CheckpointError, match="float32"):
        epslap.solve(c.astype(np.float32), resume=path)
    with pytest.raises(CheckpointError, match="'ssp'"):
        epslap.solve(c, epsilon=False, resume=path)
    with pytest.raises(CheckpointError, match="another problem"):  # the maximisation
        epslap.solve(c, maximize=True, resume=path)
    # a matrix in memory is hashed whole: a row outside the sampled ones, one entry
    for i, j in ((1, 0), (301, 17)):
        other = c.copy()
        other[i, j] += 1.0
        with pytest.raises(CheckpointError, match="another problem: its costs differ"):
            epslap.solve(other, resume=path)
    assert epslap.solve(c, resume=path).cost == pytest.approx(epslap.solve(c).cost, rel=1e-12)


def test_a_checkpoint_of_an_earlier_version_hashed_by_rows_still_resumes(saved, tmp_path):
    """Checkpoints written before the whole matrix was hashed carry the sampled rows' hash (and
    no ``fingerprint_of``): a resume judges them that way."""
    from epslap.checkpoint import fingerprint, fingerprint_rows, load, write
    c, path = saved
    state = load(str(path))
    header = {k: v for k, v in state["header"].items()
              if k not in ("fingerprint_of", "format", "version", "written")}
    header["fingerprint"] = fingerprint(c[fingerprint_rows(600)], 600, 600, header["mode"])
    old = tmp_path / "old.ckpt"
    write(str(old), header, {k: state[k] for k in state if k != "header"})
    assert epslap.solve(c, resume=old).cost == pytest.approx(epslap.solve(c).cost, rel=1e-12)


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
    # without checkpoint= or resume= nothing is written: an interval is refused (a malformed or
    # ambiguous one with its own message first), on the small path's shortcut too
    for alone, why in (("10s", "applies with checkpoint= or resume="), (60, "applies with"),
                       ("5m", "ambiguous"), ("soon", "checkpoint_every")):
        for m in (c, np.random.default_rng(1).random((1100, 1100))):
            with pytest.raises(ValueError, match=why):
                epslap.solve(m, checkpoint_every=alone)
    assert epslap.solve(c, checkpoint_every="5min").cost == epslap.solve(c).cost
    with pytest.raises(ValueError, match="backend='cpu' and 'gpu'"):
        epslap.solve(c, backend="hungarian-gpu", init=np.zeros(20))
    with pytest.raises(ValueError, match="cost_limit"):
        epslap.solve(c, cost_limit=0.5, checkpoint="x.ckpt")
    with pytest.raises(ValueError, match="exclude each other"):
        epslap.solve(c, init=np.zeros(20), resume="x.ckpt")


# ---- altered contents -------------------------------------------------------------------------
# A file altered and saved again passes its checksums: its contents are checked member by
# member, so that it is refused by name instead of crashing the passes (an index out of range),
# hanging them (a negated row order) or misleading them (NaN prices).

@pytest.fixture(scope="module")
def inside(tmp_path_factory):
    """A checkpoint written inside a pass (its resume record active) of a small CPU solve, and
    the same solve without checkpoints."""
    c = costfns.generate("random", 400, seed=21)
    with cpu_path("eps"):  # the path a checkpointed solve takes
        plain = epslap.solve(c, threads=1)
    folder = tmp_path_factory.mktemp("inside")
    path, kept = folder / "run.ckpt", folder / "inside.ckpt"
    write, poll = ckpt.write, cpu_host.POLL_S

    def keep_first_inside(p, header, arrays):
        write(p, header, arrays)
        rc = arrays["resume_row_col"]
        # inside a pass, with rows paired and rows still free (the members the tests alter;
        # a checkpoint after a pass's last augmentation, taken on a busy machine, has none free)
        if (arrays["resume"][ker.R_ACTIVE] == 1.0 and (rc >= 0).any() and (rc < 0).any()
                and not kept.exists()):
            shutil.copy(p, kept)
    ckpt.write, cpu_host.POLL_S = keep_first_inside, 0.0005
    try:
        for _ in range(5):  # a busy machine can starve the host's poll through a short pass
            epslap.solve(c, threads=1, checkpoint=path, checkpoint_every=1e-9)
            if kept.exists():
                break
    finally:
        ckpt.write, cpu_host.POLL_S = write, poll
    assert kept.exists(), "no checkpoint inside a pass: the passes were too short"
    return c, kept, plain


def _rewritten(path, tmp_path, alter=None):
    """``path`` loaded, altered by ``alter(header, arrays)`` and written again (valid
    checksums)."""
    state = load(str(path))
    header = state.pop("header")
    if alter is not None:
        alter(header, state)
    out = tmp_path / "altered.ckpt"
    ckpt.write(str(out), header, state)
    return out


def _paired(a):
    """The first row holding a pair in the pass under way, and a row holding none."""
    rc = a["resume_row_col"]
    return int(np.flatnonzero(rc >= 0)[0]), int(np.flatnonzero(rc < 0)[0])


def _set(name, index, value):
    def alter(h, a):
        a[name][index] = value
    return alter


def _replace(name, make):
    def alter(h, a):
        a[name] = make(a[name])
    return alter


def _drop(name):
    def alter(h, a):
        del a[name]
    return alter


def _head(key, value=KeyError):
    def alter(h, a):
        if value is KeyError:
            del h[key]
        else:
            h[key] = value
    return alter


def _column_twice(h, a):
    r0, r1 = _paired(a)
    a["resume_row_col"][r1] = a["resume_row_col"][r0]


def _pair_dropped(h, a):
    a["resume_row_col"][_paired(a)[0]] = -1


def _pair_added(h, a):
    rc = a["resume_row_col"]
    free = np.setdiff1d(np.arange(rc.size), rc[rc >= 0])
    rc[_paired(a)[1]] = free[0]


ALTERED = {
    "perm shifted": (_replace("perm", lambda p: p + 10**9), r"perm\[0\] = 1000000\d* is outside"),
    "perm negated": (_replace("perm", lambda p: -p), r"perm\[\d+\] = -\d+ is outside"),
    "perm duplicate": (_replace("perm", lambda p: np.r_[p[1], p[1:]]),
                       "perm is not a permutation of the rows: row"),
    "perm uint64 max": (_replace("perm", lambda p: np.r_[np.uint64(2**64 - 1),
                                                          p[1:].astype(np.uint64)]),
                        r"perm\[0\] = 18446744073709551615"),
    "perm floats": (_replace("perm", lambda p: p.astype(np.float64)), "perm has dtype float64"),
    "perm short": (_replace("perm", lambda p: p[:-1]), r"perm has shape \(399,\)"),
    "v NaN": (_set("v", 7, np.nan), r"damaged: v holds NaN or inf \(at index 7\)"),
    "v inf": (_set("v", 0, -np.inf), r"damaged: v holds NaN or inf"),
    "v huge": (_set("v", 3, 1e308), r"damaged: v\[3\] = 1e\+308 is beyond"),
    "v strings": (_replace("v", lambda v: v.astype(str)), "v has dtype <U"),
    "v 2-D": (_replace("v", lambda v: v.reshape(20, 20)), r"v has shape \(20, 20\)"),
    "resume_row_col floats": (_replace("resume_row_col", lambda r: r.astype(np.float64)),
                              "resume_row_col has dtype float64"),
    "resume_row_col past n": (_set("resume_row_col", 5, 400), r"resume_row_col\[5\] = 400"),
    "resume_row_col below -1": (_set("resume_row_col", 9, -2), r"resume_row_col\[9\] = -2"),
    "resume_row_col column twice": (_column_twice, "resume_row_col gives column"),
    "resume_row_col pair dropped": (_pair_dropped, "resume_row_col does not pair"),
    "resume_row_col pair added": (_pair_added, "resume_row_col does not pair"),
    "resume k past the rows": (_set("resume", ker.R_K, 401), "resume: k = 401"),
    "resume k negative": (_set("resume", ker.R_K, -1), "resume: k = -1"),
    "resume k fraction": (_set("resume", ker.R_K, 2.5), "resume: k = 2.5"),
    "resume active 0.5": (_set("resume", ker.R_ACTIVE, 0.5), "resume: active flag"),
    "resume pass": (_set("resume", ker.R_PASS, ker.MAX_PASSES), "resume: pass = 64"),
    "resume rows": (_set("resume", ker.R_ROWS, -3), "resume: rows evaluated = -3"),
    "resume reverse": (_set("resume", ker.R_REVERSE, 2), "resume: reverse = 2"),
    "resume eps NaN": (_set("resume", ker.R_EPS, np.nan), "resume holds NaN"),
    "resume eps too big": (_set("resume", ker.R_EPS, 1e6), "resume: the pass's ε = 1000000"),
    "resume short": (_replace("resume", lambda r: r[:4]), r"resume has shape \(4,\)"),
    "eps_log inf": (_set("eps_log", 2, np.inf), "eps_log holds NaN or inf"),
    "eps_log negative": (_set("eps_log", 2, -0.5), "eps_log holds a negative"),
    **{f"missing {name}": (_drop(name), f"member {name} is missing")
       for name in ("v", "perm", "resume", "resume_row_col", "eps_log")},
    **{f"header without {key}": (_head(key), f"header {key} is missing")
       for key in ("eps_upper", "eps_lower", "start_absmax", "reason", "rows_evaluated",
                   "shape", "dtype", "mode", "fingerprint")},
    "header eps_upper a string": (_head("eps_upper", "0.1"), "header eps_upper is '0.1'"),
    "header eps_lower NaN": (_head("eps_lower", float("nan")), "header eps_lower is nan"),
    "header eps_upper negative": (_head("eps_upper", -1.0), r"header eps_upper = -1.0 is outs"),
    "header start_absmax inf": (_head("start_absmax", float("inf")), "header start_absmax"),
    "header rows_evaluated float": (_head("rows_evaluated", 1.5), "header rows_evaluated is 1.5"),
    "header rows_evaluated bool": (_head("rows_evaluated", True), "header rows_evaluated is True"),
    "header reason a number": (_head("reason", 3), "header reason is 3, not a string"),
    "header shape a number": (_head("shape", 400), "of a 400 problem"),
    "header dtype nonsense": (_head("dtype", 5), "of 5 costs"),
}


@pytest.mark.parametrize("case", list(ALTERED))
def test_a_checkpoint_altered_with_valid_checksums_is_refused_by_member(case, inside, tmp_path):
    c, path, _ = inside
    alter, message = ALTERED[case]
    altered = _rewritten(path, tmp_path, alter)
    with pytest.raises(CheckpointError, match=message) as err:
        epslap.solve(c, threads=1, resume=altered)
    assert str(altered) in str(err.value)


def test_an_unaltered_checkpoint_written_again_still_resumes(inside, tmp_path):
    c, path, plain = inside
    assert load(str(path))["resume"][ker.R_K] > 0  # inside a pass, some rows paired
    again = _rewritten(path, tmp_path)
    resumed = epslap.solve(c, threads=1, resume=again)
    _same(plain, resumed)
    assert resumed.stats["rows_evaluated"] == plain.stats["rows_evaluated"]


def test_integer_prices_beyond_the_solvers_range_are_refused(tmp_path):
    c = costfns.generate("integer", 300, seed=22)
    path = tmp_path / "int.ckpt"
    first = epslap.solve(c, threads=1, checkpoint=path, checkpoint_every="1h")
    for alter, message in [(_set("v", 4, 2**62), r"v\[4\] = 4611686018427387904 is outside"),
                           (_set("v", 0, -2**62), r"v\[0\] = -4611686018427387904"),
                           (_replace("v", lambda v: v.astype(np.float64)),
                            "v has dtype float64, expected integers")]:
        with pytest.raises(CheckpointError, match=message):
            epslap.solve(c, threads=1, resume=_rewritten(path, tmp_path, alter))
    _same(first, epslap.solve(c, threads=1, resume=_rewritten(path, tmp_path)))


def _gpu_inside(c, state):
    """What a GPU solve writes inside a pass (``gpu.checkpoints.DeviceCheckpoints.save``), made from a
    CPU checkpoint's pass: no GPU here, and the checks are host code."""
    from epslap.gpu.state import R_NEED, RESUME
    h, rec, rc = state["header"], state["resume"], state["resume_row_col"]
    n = rc.size
    owner = np.full(n, -1, np.int64)
    paired = np.flatnonzero(rc >= 0)
    owner[rc[paired]] = paired
    cmatch = np.full(n, np.nan)  # the columns without a pair hold leftovers
    real = (owner >= 0) & (owner < c.shape[0])
    cmatch[owner >= 0] = 0.0
    cmatch[real] = c[owner[real], np.flatnonzero(real)]
    record = np.zeros(RESUME, np.int64)
    record[[0, R_NEED, 2]] = 1, -1, int(rec[ker.R_K])
    record[11:13] = np.array([rec[ker.R_ROWS], rec[ker._R_SUM_EPS]]).view(np.int64)
    passes = int(rec[ker.R_PASS])
    h = dict(h, mode="gpu-eps", passes=passes, epsilons=state["eps_log"][:passes].tolist(),
             rows_evaluated_passes=0,
             sched=dict(eps=h["eps_upper"], first=passes == 0, second=passes == 1,
                        reverse=bool(rec[ker.R_REVERSE]), total_d=0.0, total_eps=0.0,
                        in_pass=float(rec[ker.R_EPS])))
    return {"header": h, "v": state["v"], "perm": state["perm"], "owner": owner,
            "cmatch": cmatch, "record": record, "susp_d": np.zeros(7)}


def _sched(key, value=KeyError):
    def alter(s):
        if value is KeyError:
            del s["header"]["sched"][key]
        else:
            s["header"]["sched"][key] = value
    return alter


def _member(name, index, value):
    def alter(s):
        s[name][index] = value
    return alter


def _owner_twice(s):
    j = np.flatnonzero(s["owner"] < 0)[0]
    s["owner"][j], s["cmatch"][j] = s["owner"].max(), 0.0


GPU_ALTERED = {
    "owner past n": (_member("owner", 3, 400), r"owner\[3\] = 400 is outside"),
    "owner row twice": (_owner_twice, "owner pairs row"),
    "owner pair dropped": (lambda s: s["owner"].__setitem__(np.flatnonzero(s["owner"] >= 0)[0],
                                                            -1),
                           "owner does not pair"),
    "cmatch NaN where paired": (lambda s: s["cmatch"].__setitem__(
        np.flatnonzero(s["owner"] >= 0)[0], np.nan), "cmatch holds NaN or inf for a paired"),
    "record phase": (_member("record", 0, 2), "record: phase = 2"),
    "record row needed": (_member("record", 1, 10**12), "record: row needed"),
    "record seq": (_member("record", 14, 5), "record: seq = 5"),
    "record k": (_member("record", 2, 401), r"record: k = 401 is outside \[0, 400\]"),
    "record rows NaN": (_member("record", 11, np.array(np.nan).view(np.int64)),
                        "record: rows evaluated nan"),
    "susp_d inf": (_member("susp_d", 2, np.inf), "susp_d holds NaN or inf"),
    "sched in_pass a string": (_sched("in_pass", "x"), "header sched.in_pass is 'x'"),
    "sched in_pass -0.5": (_sched("in_pass", -0.5), "header sched.in_pass = -0.5"),
    "sched without reverse": (_sched("reverse"), "header sched.reverse is missing"),
    "sched eps NaN": (_sched("eps", float("nan")), "header sched.eps is nan"),
    "header epsilons": (lambda s: s["header"].__setitem__("epsilons", [0.1, "x"]),
                        "header epsilons is not a list"),
    "header sched a list": (lambda s: s["header"].__setitem__("sched", []),
                            "header sched is \\[\\], not a dict"),
    **{f"missing {name}": (lambda s, name=name: s.pop(name), f"member {name} is missing")
       for name in ("owner", "cmatch", "record", "susp_d")},
}


@pytest.mark.parametrize("case", ["unaltered", *GPU_ALTERED])
def test_a_gpu_checkpoint_inside_a_pass_is_checked_member_by_member(case, inside):
    c, path, _ = inside
    state = _gpu_inside(c, load(str(path)))
    n = c.shape[0]
    if case == "unaltered":
        ckpt.check_contents(state, "g.ckpt", n, n, False, "gpu-eps")
        assert state["owner"].dtype == np.int64 and state["record"].dtype == np.int64
        return
    alter, message = GPU_ALTERED[case]
    alter(state)
    with pytest.raises(CheckpointError, match=message):
        ckpt.check_contents(state, "g.ckpt", n, n, False, "gpu-eps")


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
    # against the cold solve of the method a warm start takes (the dense ε method)
    prev = epslap.solve(before, maximize=maximize, threads=1, candidates=False)
    cold = epslap.solve(after, maximize=maximize, threads=1, candidates=False)
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


@pytest.mark.parametrize("seed", [5, 20, 22, 52])
def test_a_warm_start_of_a_rectangular_integer_source_through_a_row_cache(seed, tmp_path):
    """A rectangular source solves its real rows alone from prices v = 0, whose unassigned
    columns stay at the top price (the certificate). A hint's prices need not: the solve took
    them as they were and ended above the optimum (10 x 16, 4 of 60 seeds) with duals that
    failed verify. The exact pass with the virtual rows now settles it, in both orientations.
    (A hint alone is not needed there: the solve from v = 0 costs less; with a checkpoint
    file the hint's exact pass runs.)"""
    m = np.random.default_rng(seed).integers(0, 100, (10, 16))
    for cost in (m, m.T.copy()):
        prev = epslap.solve(cost)
        warm = epslap.solve(costfns.Dense(cost), init=prev, memory=16 * 8,
                            checkpoint=tmp_path / "w.ckpt")
        assert warm.stats["method"] == "rectangular" and warm.stats["warm_start"] == "used"
        assert_optimal(cost, warm)
        alone = epslap.solve(costfns.Dense(cost), init=prev, memory=16 * 8)
        assert alone.stats["warm_start"] == "not needed" and alone.cost == warm.cost


def test_a_checkpoint_into_a_missing_folder_is_refused_before_the_work(tmp_path):
    c = np.random.default_rng(0).random((60, 60))
    with pytest.raises(ValueError, match="folder .* does not exist"):
        epslap.solve(c, checkpoint=tmp_path / "no" / "c.ckpt")
    with pytest.raises(ValueError, match="is a folder"):
        epslap.solve(c, checkpoint=tmp_path)


def test_a_hint_whose_spread_is_beyond_the_float_range_is_a_start_like_any_other():
    """Finite prices 1e308 and -1e308: moving them to a maximum of 0 overflowed to -inf, and the
    solve said "infeasible"; now they are kept within the range rule of the costs."""
    m = np.array([[1.0, 2.0], [3.0, 1.0]])
    tall = np.random.default_rng(1).random((40, 2))  # solved over its columns: u is the hint
    for cost, hint in ((m, (np.zeros(2), [1e308, -1e308])), (costfns.Dense(m), [1e308, -1e308]),
                       (m.astype(np.int64), [1e308, -1e308]),
                       (tall, (np.resize([1e308, -1e308], 40), np.zeros(2)))):
        for maximize in (False, True):
            got = epslap.solve(cost, init=hint, maximize=maximize)
            assert got.cost == epslap.solve(cost, maximize=maximize).cost


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


def test_init_takes_a_solution_a_pair_or_the_column_duals_and_checks_both_sides():
    """A tuple of another length is no pair (not NumPy's shape error); a side of a pair of the
    wrong length is refused, also where the problem's orientation leaves it unused."""
    c = np.random.default_rng(3).random((6, 8))  # small: the checks come before any path
    prev = epslap.solve(c)
    for init in (prev, (prev.u, prev.v), prev.v):
        assert_optimal(c, epslap.solve(c, init=init))
    with pytest.raises(ValueError, match=r"init takes a Solution, a pair \(u, v\) or the "
                                         r"column duals v alone; got a tuple of 3"):
        epslap.solve(c, init=(prev.u, prev.v, prev.v))
    with pytest.raises(ValueError, match="got a tuple of 1"):
        epslap.solve(c, init=(prev.v,))
    with pytest.raises(ValueError, match=r"init: u has shape \(5,\), expected 6 row duals"):
        epslap.solve(c, init=(prev.u[:5], prev.v))  # solved over its columns: u unused
    with pytest.raises(ValueError, match=r"init: v has shape \(7,\), expected 8 column duals"):
        epslap.solve(c, init=(prev.u, prev.v[:7]))
    tall = c.T.copy()  # solved over its rows: v unused
    prev_t = epslap.solve(tall)
    assert_optimal(tall, epslap.solve(tall, init=(prev_t.u, prev_t.v)))
    with pytest.raises(ValueError, match=r"init: v has shape \(2,\), expected 6 column duals"):
        epslap.solve(tall, init=(prev_t.u, prev_t.v[:2]))
    with pytest.raises(ValueError, match=r"init: u has shape \(8, 1\), expected 8 row duals"):
        epslap.solve(tall, init=(prev_t.u[:, None], prev_t.v))


def test_a_hint_far_above_the_costs_scale_gives_the_optimum_where_blocks_are_apart():
    """Blocks that +inf entries (or a big-M) separate: a hint of the same problem in other
    units (1e21 times the costs) or with the blocks' prices 1e19 apart had the passes compute
    every reduced cost at a magnitude whose rounding exceeds the costs, and end above the
    optimum with duals that met verify's rule at that magnitude. Float hints are now kept
    within (n_rows + n_cols) times the costs' scale, and a solve whose prices still spread far
    beyond its assigned costs is done again without the hint ("rejected")."""
    inf = np.inf
    c = np.array([[9., 0., inf, inf], [inf, 7., 1., 6.], [7., 0., inf, 6.], [inf, 7., inf, 3.]])
    prev = epslap.solve(c * 1e21)
    for cost in (c, costfns.Dense(c)):
        assert epslap.solve(cost, init=prev).cost == 11.0
    assert epslap.solve(c, init=prev, epsilon=False).cost == 11.0
    assert epslap.solve(-c, init=epslap.solve(-c * 1e21, maximize=True),
                        maximize=True).cost == -11.0
    small = np.array([[1., inf, 0.], [2., inf, 0.], [0., 3., 0.]])
    assert epslap.solve(small, init=np.array([0., 1e19, -1e19])).cost == 4.0
    big_m = np.array([[0., 2., 1e300], [2., 0., 1e300], [1e300, 1e300, 0.]])
    sol = epslap.solve(big_m, init=np.array([1e19, -1e19, 0.]))
    assert sol.cost == 0.0 and sol.stats["warm_start"] == "rejected"
    wrong = sum(epslap.solve(m, init=hint).cost != want
                for m, want, hint in blocks_far_apart(np.random.default_rng(8), 150, (3, 12)))
    assert wrong == 0


def test_a_warm_start_of_a_matrix_with_many_spare_columns_takes_the_default_route():
    """The small path's rectangular solve (or candidates) from scratch costs less than a hint's
    exact pass there (2000 x 2400: 16 against 76-200 ms, the hint sometimes rejected after it):
    the hint is checked, then not used; the optimum is the same."""
    rng = np.random.default_rng(26)
    c = rng.integers(0, 1000, (240, 200)).astype(float)
    after = c * (1 + 0.01 * rng.standard_normal(c.shape))
    prev = epslap.solve(c)
    for cost in (after, after.T.copy()):
        hint = prev if cost is after else (prev.v, prev.u)
        warm = epslap.solve(cost, init=hint)
        assert warm.stats["warm_start"] == "not needed" and warm.stats["method"] == "jv"
        assert_optimal(cost, warm)
    with pytest.raises(ValueError, match="init: u has shape"):
        epslap.solve(after, init=(np.zeros(3), prev.v))
