"""solve_many and emd_matrix, here and on a local Dask cluster of two worker processes: results
equal to scipy's and to the local loop, result files resumed, bad members recorded, a worker
killed or restarted mid-run, Ctrl-C."""
from __future__ import annotations

import csv
import importlib.util
import itertools
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import warnings

import numpy as np
import pytest
from conftest import gpu, scipy_optimum
from test_emd import gradient, save, square

import costfns
import epslap
from epslap import Deferred, solve_many
from epslap._validate import int_cost_limit
from epslap.cli import main

DASK_REASON = "needs dask.distributed (pip install 'epslap[dask]')"


@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed", reason=DASK_REASON)
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=":0")
    with distributed.Client(cluster) as c:
        c.register_plugin(_KernelFromTheFirstCall())  # kept by restarted workers too
        yield c
    cluster.close()


try:
    from distributed import WorkerPlugin as _WorkerPlugin
except ImportError:  # the client fixture skips
    _WorkerPlugin = object


class _KernelFromTheFirstCall(_WorkerPlugin):
    """On each worker, as conftest does here: the small path's kernel from the first call, so
    that the workers' answers on ties are the test process's whatever Numba's disk cache
    holds (a clean checkout's first calls would take the vector form)."""

    def setup(self, worker):
        import epslap.cpu.jv_numpy
        epslap.cpu.jv_numpy.compile_from_now()


def mixed(tmp_path):
    """Good and bad members: matrices of several shapes and dtypes, a .npy path, a Deferred, an
    infeasible matrix, a NaN matrix, a missing file and a path that is not .npy."""
    rng = np.random.default_rng(5)
    good = [rng.random((6, 6)), rng.random((4, 9)), rng.integers(-5, 9, (7, 3)),
            np.where(rng.random((5, 5)) < 0.3, np.inf, rng.random((5, 5))) + np.eye(5)]
    npy = str(tmp_path / "m.npy")
    np.save(npy, rng.random((12, 12)))
    bad = [np.array([[1.0, np.inf], [2.0, np.inf]]), np.array([[np.nan, 1.0], [1.0, 1.0]]),
           str(tmp_path / "missing.npy"), str(tmp_path / "m.txt")]
    return good + [npy, Deferred(costfns.problem, "geometric", 40, seed=3)] + bad


def check(problems, results):
    """Each ok result is optimal (scipy); each bad member is an error that says why."""
    for p, r in zip(problems, results):
        if isinstance(p, Deferred):
            dense = p.build().dense()
        elif isinstance(p, str):
            dense = np.load(p) if os.path.exists(p) and p.endswith(".npy") else None
        else:
            dense = p
        ref = None if dense is None or np.isnan(dense).any() else scipy_optimum(dense)
        if ref is None:
            assert r.status == "error" and r.error, r
            continue
        assert r.ok, r.error
        assert abs(r.cost - ref) <= 1e-9 * max(1.0, abs(ref))
        assert abs(dense[r.row_ind, r.col_ind].sum() - ref) <= 1e-9 * max(1.0, abs(ref))


def test_local_solves_are_optimal_and_bad_members_are_recorded(tmp_path, capsys):
    problems = mixed(tmp_path)
    results = solve_many(problems, progress=True)
    bar = capsys.readouterr().err
    assert "solves: 100%" in bar and "10/10" in bar and "4 failed" in bar, bar
    check(problems, results)
    errors = [r.error for r in results if not r.ok]
    assert any("infeasible" in e for e in errors) and any("NaN" in e for e in errors)
    assert any("missing.npy" in e for e in errors) and any(".npy file" in e for e in errors)
    assert results[5].key == "costfns.classes.problem('geometric', 40, seed=3)"
    named = solve_many({"a": problems[0], "b": problems[1]})
    assert [r.key for r in named] == ["a", "b"]
    with pytest.raises(ValueError, match="the same"):
        solve_many([problems[0], problems[0].copy()])


@pytest.mark.parametrize("suffix", [".csv", ".npz", ".parquet"])
def test_output_is_resumed_and_failures_are_tried_again(tmp_path, suffix):
    if suffix == ".parquet":
        pytest.importorskip("pyarrow", reason="out=*.parquet needs pyarrow")
    problems = mixed(tmp_path)
    out = str(tmp_path / f"r{suffix}")
    first = solve_many(problems[:3], out=out)
    assert not any(r.from_output for r in first)
    again = solve_many(problems, out=out)
    assert [r.from_output for r in again] == [True] * 3 + [False] * (len(problems) - 3)
    check(problems, again)
    for a, b in zip(first, again):
        assert np.array_equal(a.col_ind, b.col_ind) and a.cost == b.cost
    third = solve_many(problems, out=out)  # the ok ones are read back, the failed ones retried
    assert [r.from_output for r in third] == [r.ok for r in again]
    for a, b in zip(again, third):
        assert a.status == b.status and (not a.ok or np.array_equal(a.row_ind, b.row_ind))


def test_csv_ignores_a_torn_line_and_refuses_a_foreign_file(tmp_path):
    problems = mixed(tmp_path)[:3]
    out = tmp_path / "r.csv"
    solve_many(problems[:2], out=str(out))
    text = out.read_text().splitlines(keepends=True)
    out.write_text("".join(text) + text[-1][: len(text[-1]) // 2])  # killed mid-write
    results = solve_many(problems, out=str(out))
    assert [r.from_output for r in results] == [True, True, False]
    foreign = tmp_path / "f.csv"
    foreign.write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="not a solve_many result file"):
        solve_many(problems, out=str(foreign))
    with pytest.raises(ValueError, match=r"\.csv, \.npz or \.parquet"):
        solve_many(problems, out=str(tmp_path / "r.json"))
    with pytest.raises(FileNotFoundError, match="does not exist"):
        solve_many(problems, out=str(tmp_path / "no" / "r.csv"))


FORMATS = [".csv", ".npz", pytest.param(".parquet", marks=pytest.mark.skipif(
    importlib.util.find_spec("pyarrow") is None, reason="out=*.parquet needs pyarrow"))]


def _dense(problem):
    if isinstance(problem, Deferred):
        return problem.build().dense()
    return np.load(problem) if isinstance(problem, str) else np.asarray(problem)


def _optimal(problems: dict, results, maximize: bool) -> None:
    """Each result is scipy's optimum of the problem as it is now."""
    for p, r in zip(problems.values(), results):
        assert r.ok, r.error
        ref = scipy_optimum(_dense(p), maximize=maximize)
        assert abs(r.cost - ref) <= 1e-9 * max(1.0, abs(ref)), (r.key, r.cost, ref)
        assert abs(_dense(p)[r.row_ind, r.col_ind].sum() - ref) <= 1e-9 * max(1.0, abs(ref))


@pytest.mark.parametrize("suffix", FORMATS)
def test_a_rerun_with_other_options_or_data_solves_again(tmp_path, suffix):
    rng = np.random.default_rng(11)
    npy = str(tmp_path / "m.npy")
    np.save(npy, rng.random((8, 8)))
    problems = {"file": npy, "matrix": rng.random((6, 9)),
                "source": Deferred(costfns.problem, "geometric", 30, seed=2)}
    out = str(tmp_path / f"r{suffix}")
    first = solve_many(problems, out=out)
    _optimal(problems, first, maximize=False)
    same = solve_many(problems, out=out)  # unchanged: every result read back
    assert [r.from_output for r in same] == [True] * 3
    for a, b in zip(first, same):
        assert a.cost == b.cost and np.array_equal(a.col_ind, b.col_ind)
    assert all(r.from_output for r in solve_many(problems, out=out, threads=1))  # no effect
    maxed = solve_many(problems, out=out, maximize=True)  # another optimum: solved again
    assert not any(r.from_output for r in maxed)
    _optimal(problems, maxed, maximize=True)
    assert all(a.cost < b.cost for a, b in zip(first, maxed))
    again = solve_many(problems, out=out, maximize=True)  # the new results replaced the old
    assert [r.from_output for r in again] == [True] * 3
    assert [r.cost for r in again] == [r.cost for r in maxed]
    np.save(npy, 5.0 + rng.random((8, 8)))  # other data under the same path and name
    problems["matrix"] = rng.random((6, 9))
    changed = solve_many(problems, out=out, maximize=True)
    assert [r.from_output for r in changed] == [False, False, True]
    _optimal(problems, changed, maximize=True)
    minimised = solve_many(problems, out=out)  # back to minimising: the file holds maxima
    assert not any(r.from_output for r in minimised)
    _optimal(problems, minimised, maximize=False)
    assert [r.from_output for r in solve_many(problems, out=out)] == [True] * 3


def test_fingerprints_follow_the_content(tmp_path):
    from epslap import many
    npy = tmp_path / "m.npy"
    np.save(npy, np.arange(6.0).reshape(2, 3))
    text = many._settings(str(npy), False)
    np.save(tmp_path / "copy.npy", np.arange(6.0).reshape(2, 3))
    assert many._settings(str(tmp_path / "copy.npy"), False) == text  # the content, not the name
    assert many._settings(str(npy), True) != text
    np.save(npy, np.arange(6.0).reshape(3, 2))  # the same bytes in another shape
    assert many._settings(str(npy), False) != text
    elsewhere = str(tmp_path / "only-on-the-workers.npy")
    assert many._fingerprint(elsewhere) == f"path-{elsewhere}"
    src = costfns.problem("geometric", 20, seed=1)  # a cost source object: by its pickle
    assert many._fingerprint(src) == many._fingerprint(costfns.problem("geometric", 20, seed=1))
    assert many._fingerprint(src) != many._fingerprint(costfns.problem("geometric", 20, seed=2))
    assert many._fingerprint(lambda: 0) is None  # does not pickle: never reused


def _brute_force(cost: np.ndarray) -> int:
    """The exact optimum in Python ints (scipy works in float64)."""
    n = len(cost)
    return min(sum(int(cost[i, p[i]]) for i in range(n)) for p in itertools.permutations(range(n)))


@pytest.mark.parametrize("suffix", FORMATS)
def test_integer_totals_round_trip_exactly(tmp_path, suffix):
    n = 4
    limit = int_cost_limit((n, n))  # the largest integer cost solve accepts at this shape
    big = np.random.default_rng(2).integers(limit - 10**6, limit + 1, (n, n), dtype=np.int64)
    exact = _brute_force(big)
    assert exact > 2**53 and int(float(exact)) != exact  # a float64 would change it
    problems = {"big": big, "negative": -big, "float": np.ones((3, 3)),
                "small": np.eye(3, dtype=np.int32)}
    out = str(tmp_path / f"r{suffix}")
    for run in range(2):  # solved, then read back
        results = solve_many(problems, out=out)
        assert [r.from_output for r in results] == [run == 1] * 4
        assert [type(r.cost) for r in results] == [int, int, float, int]
        assert [r.cost for r in results] == [exact, _brute_force(-big), 3.0, 0]


@pytest.mark.parametrize("suffix", FORMATS)
def test_an_output_of_the_older_layout_is_refused(tmp_path, suffix):
    out = tmp_path / f"old{suffix}"
    old = dict(key="a", status="ok", cost=1.0, seconds=0.1, rows_evaluated=2, error=None)
    if suffix == ".csv":
        out.write_text("key,status,cost,seconds,rows_evaluated,error,row_ind,col_ind,complete\n"
                       "a,ok,1.0,0.100000,2,,0 1,1 0,yes\n")
    elif suffix == ".npz":
        np.savez(out, records=np.frombuffer(json.dumps([old]).encode(), np.uint8),
                 row_ind_0=np.array([0, 1]), col_ind_0=np.array([1, 0]))
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq
        pq.write_table(pa.table({**{k: [v] for k, v in old.items()},
                                 "row_ind": [[0, 1]], "col_ind": [[1, 0]]}), str(out))
    before = out.read_bytes()
    with pytest.raises(ValueError, match=f"{re.escape(str(out))} was written by an older epslap.*"
                                         "delete it or use another out file"):
        solve_many({"a": np.array([[2.0, 0.5], [0.5, 2.0]])}, out=str(out))
    assert out.read_bytes() == before  # left as it was


def test_dask_equals_the_local_loop(tmp_path, client):
    problems = mixed(tmp_path)
    local = solve_many(problems)
    remote = solve_many(problems, client=client, out=str(tmp_path / "r.npz"))
    for a, b in zip(local, remote):
        assert (a.key, a.status, a.cost) == (b.key, b.status, b.cost)
        assert a.ok or a.error == b.error
        assert not a.ok or np.array_equal(a.col_ind, b.col_ind)


def _slow_problems(count=8, n=3000):  # about 0.3 s each on one thread
    return [Deferred(costfns.problem, "geometric", n, seed=s) for s in range(count)]


def _lines(path) -> list[list[str]]:
    if not os.path.exists(path):
        return []
    with open(path, newline="") as fh:
        return [row for row in csv.reader(fh)][1:]


def _when(predicate, timeout=60.0):
    t0 = time.monotonic()
    while not predicate():
        assert time.monotonic() - t0 < timeout, "timed out"
        time.sleep(0.02)


def _run_in_thread(**kw):
    box = {}

    def target():
        try:
            box["results"] = solve_many(**kw)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            box["error"] = exc
    t = threading.Thread(target=target)
    t.start()
    return t, box


@pytest.mark.parametrize("how", ["kill", "restart"])
def test_a_worker_lost_mid_run_loses_nothing(tmp_path, client, how):
    problems = _slow_problems()
    out = str(tmp_path / "r.csv")
    thread, box = _run_in_thread(problems=problems, client=client, out=out, threads=1)
    _when(lambda: len(_lines(out)) >= 1)
    assert any(client.processing().values())  # tasks under way on the workers
    if how == "kill":  # SIGKILL one worker process while both are solving; its nanny restarts it
        pid = next(iter(client.run(os.getpid).values()))
        os.kill(pid, signal.SIGKILL)
    else:
        # every task under way is cancelled: solve_many submits them again. The restart does
        # not wait for the workers: one that starts again on a loaded 2-core machine with an
        # empty Numba cache has taken more than 300 s, and the run goes on as they come back
        client.restart(wait_for_workers=False)
    thread.join(300)
    assert "error" not in box, box.get("error")
    results = box["results"]
    assert all(r.ok for r in results), [r.error for r in results if not r.ok]
    keys = [row[0] for row in _lines(out)]
    assert sorted(keys) == sorted(r.key for r in results)  # each once: nothing written twice
    for r in results[:2]:  # optimal (against the solve here)
        assert r.cost == epslap.solve(r_source(problems, r.key).build(), threads=1).cost


def r_source(problems, key):
    return next(p for p in problems if p.key == key)


def test_ctrl_c_cancels_and_the_output_stays_consistent(tmp_path, client):
    problems = _slow_problems(count=10)
    out = str(tmp_path / "r.csv")

    def interrupt():
        _when(lambda: len(_lines(out)) >= 1)
        os.kill(os.getpid(), signal.SIGINT)
    threading.Thread(target=interrupt, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        solve_many(problems, client=client, out=out, threads=1)
    _when(lambda: not any(client.processing().values()), timeout=30)  # nothing left running
    written = _lines(out)
    assert 1 <= len(written) < len(problems) and all(row[-1] == "yes" for row in written)
    results = solve_many(problems, client=client, out=out, threads=1)
    assert sum(r.from_output for r in results) == len(written)
    assert all(r.ok for r in results) and len(_lines(out)) == len(problems)


def test_emd_matrix_on_dask_records_a_bad_image(tmp_path, client):
    paths = [save(tmp_path, f"i{k}.png", img) for k, img in
             enumerate([square(), square(at=(2, 4)), gradient()])]
    local = epslap.emd_matrix(paths, progress=False)
    broken = str(tmp_path / "broken.png")
    with open(broken, "wb") as fh:
        fh.write(b"not an image")
    out = tmp_path / "d.csv"
    with pytest.warns(RuntimeWarning, match="3 of 6 pairs failed"):
        dist = epslap.emd_matrix(paths + [broken], out=str(out), progress=False, client=client)
    np.testing.assert_allclose(dist[:3, :3], local, rtol=1e-12)
    assert np.isnan(dist[3, :3]).all()
    rows = list(csv.reader(out.open()))[1:]
    assert sum(bool(r[5]) for r in rows) == 3 and all("broken.png" in r[5] for r in rows if r[5])
    with open(broken, "wb") as fh:  # repaired: a rerun solves only the three failed pairs
        fh.write(open(paths[2], "rb").read())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dist = epslap.emd_matrix(paths + [broken], out=str(out), progress=False, client=client)
    assert len(list(csv.reader(out.open()))) == 1 + 9 and not np.isnan(dist).any()
    np.testing.assert_allclose(dist[3, :3], local[2], rtol=1e-12, atol=1e-15)


def test_cli_emd_on_a_running_scheduler(tmp_path, client, capsys):
    paths = [save(tmp_path, f"i{k}.png", img) for k, img in enumerate([square(), gradient()])]
    assert main(["emd", *paths, "--scheduler", client.scheduler.address, "--no-progress"]) == 0
    local = epslap.emd_matrix(paths, progress=False)
    assert f"{local[0, 1]:10.5f}" in capsys.readouterr().out
    assert client.status == "running"  # the CLI closed its own client, not the cluster


def test_cli_emd_on_local_workers(tmp_path, capsys):
    pytest.importorskip("distributed", reason=DASK_REASON)
    paths = [save(tmp_path, f"i{k}.png", img) for k, img in
             enumerate([square(), gradient(), square(at=(2, 4))])]
    assert main(["emd", *paths, "--workers", "2", "--no-progress"]) == 0
    text = capsys.readouterr().out
    local = epslap.emd_matrix(paths, progress=False)
    assert f"{local[0, 1]:10.5f}" in text and f"{local[1, 2]:10.5f}" in text
    missing = str(tmp_path / "missing.png")
    assert main(["emd", paths[0], missing, "--workers", "1", "--no-progress"]) == 1
    assert "missing.png" in capsys.readouterr().err
    assert main(["emd", *paths, "--workers", "0"]) == 2
    assert main(["emd", *paths, "--workers", "2", "--scheduler", "tcp://x:1"]) == 2


@gpu
def test_gpu_backend_equals_the_cpu(tmp_path):
    problems = mixed(tmp_path)
    on_gpu = solve_many(problems, backend="gpu")
    check(problems, on_gpu)
    for a, b in zip(solve_many(problems), on_gpu):
        assert a.status == b.status and (not a.ok or abs(a.cost - b.cost) <= 1e-9 * abs(a.cost))


def test_importing_epslap_does_not_import_dask():
    code = ("import sys, epslap; epslap.solve_many([[[1.0]]]); "
            "print(any(m.split('.')[0] in ('dask', 'distributed') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=os.path.dirname(os.path.dirname(__file__)))
    assert out.stdout.strip() == "False"


def test_the_former_name_of_deferred_still_works():
    assert epslap.Source is epslap.Deferred and epslap.many.Source is epslap.Deferred
    assert repr(epslap.Deferred(costfns.problem, "geometric", 5, seed=1)).startswith("Deferred(")


def test_names_that_collide_and_members_that_are_not_matrices(tmp_path):
    """Two keys of one ``str`` would name one result (the first was dropped): refused. A list
    that is not a matrix, or a file that is not a .npy, fails as that problem alone, with a
    message that says what it is."""
    a = np.array([[1, 2], [3, 4]])
    with pytest.raises(ValueError, match="have the same name '1'"):
        solve_many({1: a, "1": 10 * a})
    res = solve_many({"good": a, "bad": [[1, 2], [3]]})
    assert [r.status for r in res] == ["ok", "error"]
    assert res[0].cost == 5 and "expected a matrix (2-D array)" in res[1].error
    res = solve_many([a, [[1, 2], [3]]])
    assert [r.status for r in res] == ["ok", "error"]
    junk = tmp_path / "junk.npy"
    junk.write_bytes(b"garbage")
    res = solve_many([str(junk)])
    assert res[0].status == "error" and "not a NumPy .npy" in res[0].error
    assert "allow_pickle" not in res[0].error
