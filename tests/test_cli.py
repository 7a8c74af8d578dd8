"""The ``epslap`` command line, run in-process through ``epslap.cli.main`` (one subprocess
checks ``python -m epslap``): results, and for every mistake one line on stderr with exit code 2
(usage) or 1 (failure), 130 on Ctrl-C."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import costfns
import epslap
from epslap.cli import main

ROOT = Path(__file__).resolve().parents[1]


def run(argv, capsys):
    """(exit code, stdout, stderr) of ``epslap argv``."""
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_line(err: str) -> str:
    """The error output: exactly one line, no traceback."""
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    return lines[0]


def test_solve_npy_file(tmp_path, capsys):
    c = costfns.generate("random", 40, seed=2)
    path = tmp_path / "c.npy"
    np.save(path, c)
    out = tmp_path / "r.json"
    assert main(["solve", str(path), "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "optimal cost" in text and "OPTIMAL" in text and "rows evaluated" in text
    res = json.loads(out.read_text())
    from scipy.optimize import linear_sum_assignment
    r, k = linear_sum_assignment(c)
    assert abs(res["cost"] - c[r, k].sum()) < 1e-9
    assert res["certificate"]["optimal"]


def test_solve_generated_problem_maximize_and_progress(capsys):
    assert main(["solve", "--problem", "geometric", "--n", "60", "--seed", "1", "--maximize",
                 "--progress"]) == 0
    captured = capsys.readouterr()
    assert "OPTIMAL" in captured.out
    assert "Traceback" not in captured.err  # the bar's content: epslap/_progress.py's tests
    assert "certificate: checking the duals against all 60 x 60 costs" in captured.err
    assert "certificate: done in" in captured.err


def test_version_and_python_dash_m(capsys):
    code, out, _ = run(["--version"], capsys)
    assert code == 0 and out.strip() == f"epslap {epslap.__version__}"
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-m", "epslap", "--version"], capture_output=True,
                          text=True, env=env, cwd=ROOT, check=False)
    assert proc.returncode == 0 and proc.stdout.strip() == f"epslap {epslap.__version__}"
    proc = subprocess.run([sys.executable, "-m", "epslap", "solve", "--n", "-5"],
                          capture_output=True, text=True, env=env, cwd=ROOT, check=False)
    assert proc.returncode == 2 and "--n" in one_line(proc.stderr)


def test_help_lists_problems_and_the_thread_rule(capsys):
    from epslap.cpu.cores import AUTO_MIN_COLS, AUTO_MIN_COLS_FLOAT
    code, out, _ = run(["solve", "--help"], capsys)
    assert code == 0
    flat = " ".join(out.split())
    assert all(name in flat for name in costfns.PROBLEMS)
    assert f"{AUTO_MIN_COLS_FLOAT} columns for a float matrix" in flat
    assert f"{AUTO_MIN_COLS} for integers or costs through row caches" in flat


@pytest.fixture
def npy(tmp_path):
    path = tmp_path / "c.npy"
    np.save(path, costfns.generate("random", 6, seed=1))
    return str(path)


USAGE_ERRORS = [  # argv (NPY: a valid matrix file), a phrase of the message
    (["solve", "--problem", "random", "--n", "-5"], "--n: must be a positive integer"),
    (["solve", "--problem", "random", "--n", "ten"], "--n: must be a positive integer"),
    (["solve", "--problem", "random", "--seed", "-1"], "--seed: must be an integer >= 0"),
    (["solve", "--problem", "random", "--threads", "0"], "--threads: must be a positive"),
    (["solve", "--problem", "nope"], "invalid choice: 'nope'"),
    (["solve", "--problem", "random", "--backend", "tpu"], "invalid choice: 'tpu'"),
    (["solve", "--problem", "random", "--cache", "bogus"], "invalid choice: 'bogus'"),
    (["solve", "--problem", "random", "--memory", "1XB"], "memory must be a number"),
    (["solve", "--problem", "random", "--memory", "1", "GiB"], "write --memory 1GiB"),
    (["solve", "--problem", "random", "--memory=2", "gb"], "write --memory 2gb"),
    (["emd", "a.png", "b.png", "--memory", "1", "MiB"], "write --memory 1MiB"),
    (["solve"], "give either a .npy matrix file or --problem NAME"),
    (["solve", "NPY", "--problem", "random"], "not both"),
    (["solve", "NPY", "--memory", "1GiB"], "nothing to bound on the CPU"),
    (["solve", "NPY", "--cache", "lfu"], "--cache bounds costs computed on demand"),
    (["solve", "NPY", "--n", "10"], "--n applies to --problem"),
    (["solve", "NPY", "--n", "10", "--seed", "1"], "--n, --seed apply to --problem"),
    (["solve", "--problem", "random", "--dense", "--memory", "1GiB"], "--dense materialises"),
    (["solve", "--problem", "random", "--backend", "gpu", "--threads", "2"],
     "--threads applies to --backend cpu"),
    (["solve", "--problem", "random", "--backend", "hungarian-gpu", "--memory", "1GiB"],
     "--memory does not apply to --backend hungarian-gpu"),
    (["solve", "--problem", "random", "--backend", "hungarian-gpu", "--no-epsilon"],
     "--no-epsilon does not apply"),
    (["solve", "--problem", "random", "--device", "1"], "--device applies to --backend gpu"),
    (["solve", "--problem", "random", "--backend", "gpu", "--device", "0,x"],
     "--device: must be a GPU id, ids separated by commas or all"),
    (["solve", "--problem", "random", "--backend", "gpu", "--device", "-1"],
     "--device: must be a GPU id, ids separated by commas or all"),
    (["solve", "--problem", "random", "--backend", "hungarian-gpu", "--device", "0,1"],
     "several --device ids"),
    (["solve", "--problem", "random", "--backend", "hungarian-gpu", "--device", "all"],
     "several --device ids"),
    (["solve", "--bogus"], "unrecognized arguments"),
    ([], "required: command"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
    (["emd", "a.png"], "give at least two images"),
    (["emd", "a.png", "b.png", "--size", "0"], "--size: must be a positive integer"),
    (["emd", "a.png", "b.png", "--position-weight", "-1"], "--position-weight: must be"),
    (["emd", "a.png", "b.png", "--metric", "cosine"], "invalid choice: 'cosine'"),
    (["solve", "--problem", "random", "--memory", "-1GiB"], "memory must be positive, got '-1GiB'"),
    (["solve", "--problem", "random", "--checkpoint", "c.ckpt", "--checkpoint-every", "5m"],
     "write '5min' for minutes"),
    (["solve", "--problem", "random", "--checkpoint-every", "10s"],
     "--checkpoint-every applies with --checkpoint or --resume"),
    (["solve", "--problem", "random", "--checkpoint", "c.ckpt", "--checkpoint-every", "soon"],
     "epslap solve: --checkpoint-every: 'soon' is not a duration"),
    (["solve", "--problem", "random", "--checkpoint", "c.ckpt", "--checkpoint-every", "0s"],
     "epslap solve: --checkpoint-every must be a positive duration"),
    (["solve", "NPY", "--json", ""], "--json needs a file name"),
    (["solve", "NPY", "--json", "NPY"], "is the input matrix file (it would be overwritten)"),
]


@pytest.mark.parametrize("argv, phrase", USAGE_ERRORS)
def test_usage_errors_exit_2_with_one_line(argv, phrase, npy, capsys):
    code, out, err = run([npy if a == "NPY" else a for a in argv], capsys)
    assert code == 2
    assert phrase in one_line(err)
    assert out == ""


def test_bad_values_in_a_matrix_exit_2(tmp_path, capsys):
    nan = tmp_path / "nan.npy"
    np.save(nan, np.array([[np.nan, 1.0], [1.0, 1.0]]))
    code, _, err = run(["solve", str(nan)], capsys)
    assert code == 2 and "invalid numeric entries" in one_line(err)
    cube = tmp_path / "cube.npy"
    np.save(cube, np.zeros((2, 2, 2)))
    code, _, err = run(["solve", str(cube)], capsys)
    assert code == 2 and "got a 3-D array" in one_line(err)
    words = tmp_path / "words.npy"
    np.save(words, np.array([["a", "b"], ["c", "d"]]))
    code, _, err = run(["solve", str(words)], capsys)
    assert code == 2 and "the cost must be a numeric array" in one_line(err)
    assert "holds strings (<U1)" in err and "Cannot cast" not in err
    waves = tmp_path / "waves.npy"
    np.save(waves, np.ones((2, 2), complex))
    code, _, err = run(["solve", str(waves)], capsys)
    assert code == 2 and "holds complex numbers (complex128)" in one_line(err)


def test_warnings_are_one_line_each(monkeypatch, capsys):
    import warnings

    def warn_once(*args, **kw):
        warnings.warn("threads=64 is more than the cores", RuntimeWarning)
        raise ValueError("stop here")
    monkeypatch.setattr(epslap, "solve", warn_once)
    code, _, err = run(["solve", "--problem", "random", "--n", "5"], capsys)
    assert code == 2
    assert err.splitlines() == ["epslap solve: threads=64 is more than the cores",
                                "epslap solve: stop here"]


def test_failures_exit_1_with_one_line(tmp_path, capsys):
    code, _, err = run(["solve", str(tmp_path / "missing.npy")], capsys)
    assert code == 1 and "no such file" in one_line(err)
    empty = tmp_path / "empty.npy"
    empty.write_bytes(b"")
    code, _, err = run(["solve", str(empty)], capsys)
    assert code == 1 and "cannot read" in one_line(err) and "empty or cut short" in err
    bad = tmp_path / "bad.npy"
    bad.write_text("not numpy")
    code, _, err = run(["solve", str(bad)], capsys)
    line = one_line(err)
    assert code == 1 and "cannot read" in line and "not a NumPy .npy or .npz file" in line
    assert "allow_pickle" not in line
    infeasible = tmp_path / "inf.npy"
    np.save(infeasible, np.array([[np.inf, np.inf], [1.0, 1.0]]))
    code, _, err = run(["solve", str(infeasible)], capsys)
    line = one_line(err)
    assert code == 1 and line.startswith("epslap solve: cost matrix is infeasible")
    assert line.count("infeasible") == 1
    code, _, err = run(["solve", "--problem", "random", "--n", "5", "--json",
                        str(tmp_path / "no" / "such" / "r.json")], capsys)
    line = one_line(err)
    assert code == 1 and line.startswith("epslap solve: --json") and "does not exist" in line
    code, _, err = run(["solve", "--problem", "random", "--n", "5", "--resume", str(bad)], capsys)
    line = one_line(err)
    assert code == 1 and "damaged or truncated" in line and "allow_pickle" not in line
    code, _, err = run(["emd", str(tmp_path / "missing.png"), str(bad)], capsys)
    assert code == 1 and "image file not found" in one_line(err)


def test_archives_folders_and_checkpoints_into_missing_folders(tmp_path, capsys):
    """A .npz archive (whatever its name) of one array is that matrix; of several, one line
    naming them; a folder given as the matrix or as --json, and --checkpoint into a missing
    folder, fail before any work, in one line."""
    m = np.random.default_rng(2).random((6, 6))
    one = tmp_path / "one.npy"
    with open(one, "wb") as f:
        np.savez(f, cost=m)
    code, out, _ = run(["solve", str(one)], capsys)
    assert code == 0 and repr(float(epslap.solve(m).cost)) in out
    two = tmp_path / "two.npz"
    np.savez(two, a=m, b=m)
    code, _, err = run(["solve", str(two)], capsys)
    assert code == 1 and "a .npz archive of 2 arrays (a, b)" in one_line(err)
    code, _, err = run(["solve", str(tmp_path)], capsys)
    assert code == 1 and "is a folder" in one_line(err)
    code, out, err = run(["solve", "--problem", "random", "--n", "5", "--json", str(tmp_path)],
                         capsys)
    assert code == 1 and "is a folder" in one_line(err) and out == ""
    code, out, err = run(["solve", "--problem", "random", "--n", "50", "--checkpoint",
                          str(tmp_path / "no" / "c.ckpt")], capsys)
    assert code == 2 and "folder" in one_line(err) and "does not exist" in one_line(err)


def test_missing_gpu_exits_1_and_names_both_gpu_backends(capsys):
    try:
        import cupy  # noqa: F401
        pytest.skip("CuPy is installed: the missing-CuPy error cannot occur")
    except ImportError:
        pass
    for backend in ("gpu", "hungarian-gpu"):
        code, _, err = run(["solve", "--problem", "random", "--n", "5", "--backend", backend],
                           capsys)
        line = one_line(err)
        assert code == 1 and "need CuPy" in line and "hungarian-gpu" in line


def test_ctrl_c_exits_130_with_one_line(monkeypatch, capsys):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(epslap, "solve", interrupted)
    code, _, err = run(["solve", "--problem", "random", "--n", "5"], capsys)
    assert code == 130
    assert one_line(err).startswith("epslap solve: interrupted after ")


@pytest.mark.parametrize("cache", ["bogus", "LFU", None, ["lfu"]])
def test_unknown_cache_policy_is_refused_for_every_input(cache):
    inputs = [np.eye(3), np.eye(500, dtype=np.int64), costfns.Geometric(5)]
    for cost in inputs:
        for backend in ("cpu", "gpu"):  # refused before the GPU backend looks for CuPy
            with pytest.raises(ValueError, match="cache must be one of"):
                epslap.solve(cost, cache=cache, backend=backend)
    with pytest.raises(ValueError, match="cache must be one of"):
        epslap.solve(np.eye(3), cache=np.array(["lfu", "slru"]))


def test_on_demand_problem_with_memory_budget(capsys):
    # 80 rows of 640 bytes = 51 KiB dense; a 16 KiB budget holds 25 rows: an SLRU/LFU row cache
    assert main(["solve", "--problem", "geometric", "--n", "80", "--memory", "16KiB"]) == 0
    out = capsys.readouterr().out
    assert "row cache" in out and "misses" in out and "OPTIMAL" in out and "peak RSS" in out


def test_progress_with_a_row_cache(capsys):
    assert main(["solve", "--problem", "random", "--n", "120", "--memory", "20KiB",
                 "--progress"]) == 0
    captured = capsys.readouterr()
    assert "row cache" in captured.out and "OPTIMAL" in captured.out
    assert "Traceback" not in captured.err


def test_checkpoint_and_resume_from_the_command_line(tmp_path, monkeypatch, capsys):
    path = str(tmp_path / "run.ckpt")
    argv = ["solve", "--problem", "geometric", "--n", "1200", "--seed", "3", "--threads", "1"]
    code, out, _ = run(argv + ["--checkpoint", path, "--checkpoint-every", "1h"], capsys)
    assert code == 0 and "checkpoints    1 written to" in out
    cost = [line for line in out.splitlines() if line.startswith("optimal cost")]
    code, out2, _ = run(argv + ["--resume", path], capsys)
    assert code == 0 and "resumed from" in out2 and cost[0] in out2
    code, _, err = run(["solve", "--problem", "geometric", "--n", "1300", "--resume", path],
                       capsys)
    assert code == 1 and "is of a (1200, 1200) problem" in one_line(err)
    code, _, err = run(argv[:-2] + ["--resume", path, "--backend", "hungarian-gpu"], capsys)
    assert code == 2 and "apply to --backend cpu and gpu" in one_line(err)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(epslap, "solve", interrupted)
    code, _, err = run(argv + ["--checkpoint", path], capsys)
    assert code == 130 and one_line(err).endswith(f"resume with --resume {path}")


@pytest.mark.parametrize("text, device", [("0", 0), ("1", 1), ("0,1", [0, 1]),
                                          ("all", "all")])
def test_device_reaches_the_gpu_solve(text, device, monkeypatch):
    """``--device`` is passed to ``epslap.solve`` as an id, or a list of ids to split over."""
    seen = {}

    class Stop(Exception):
        pass

    def fake_solve(cost, **kw):
        seen.update(kw)
        raise Stop

    monkeypatch.setattr(epslap, "solve", fake_solve)
    with pytest.raises(Stop):
        main(["solve", "--problem", "random", "--n", "10", "--backend", "gpu", "--device", text])
    assert seen["device"] == device and seen["backend"] == "gpu"


@pytest.mark.parametrize("device, extra, where", [("1", [], {"backend": "gpu", "device": 1}),
                                                  ("all", [], {"backend": "gpu", "device": 0}),
                                                  ("1", ["--dense"], {})])
def test_a_gpu_solve_of_a_cost_source_is_certified_on_the_gpu(device, extra, where, capsys,
                                                              monkeypatch):
    """``--backend gpu`` with a cost source: the certificate scans every cost on the GPU (the
    solve's device); a matrix (``--dense``) is checked on the host."""
    real_solve, real_verify = epslap.solve, epslap.verify
    seen = {}

    def cpu_solve(cost, **kw):  # the answer of the CPU, standing in for the device's
        kw["backend"] = "cpu"
        kw.pop("device", None)
        return real_solve(cost, **kw)

    def spy_verify(*args, **kw):
        seen.update(kw)
        kw.pop("backend", None), kw.pop("device", None)
        return real_verify(*args, **kw)
    monkeypatch.setattr(epslap, "solve", cpu_solve)
    monkeypatch.setattr(epslap, "verify", spy_verify)
    code, out, _ = run(["solve", "--problem", "geometric", "--n", "200", "--backend", "gpu",
                        "--device", device] + extra, capsys)
    assert code == 0 and "OPTIMAL" in out
    assert {k: seen[k] for k in ("backend", "device") if k in seen} == where


def test_candidates_option(capsys):
    code, out, _ = run(["solve", "--problem", "geometric", "--n", "300", "--candidates", "6"],
                       capsys)
    assert code == 0 and "certificate rounds" in out and "OPTIMAL" in out
    code, out, _ = run(["solve", "--problem", "geometric", "--n", "300", "--candidates", "off"],
                       capsys)
    assert code == 0 and "certificate rounds" not in out and "OPTIMAL" in out
    code, _, err = run(["solve", "--problem", "geometric", "--n", "30", "--candidates", "0"],
                       capsys)
    assert code == 2 and "--candidates" in err and len(err.strip().splitlines()) == 1
