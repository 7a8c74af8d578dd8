"""The ``epslap`` command line, run in-process through ``epslap.cli.main``."""
import json

import numpy as np

import costfns
from epslap.cli import main


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
    assert "pass" in captured.err and "rows" in captured.err


def test_bad_inputs(tmp_path, capsys):
    import pytest
    with pytest.raises(SystemExit, match="unknown problem"):
        main(["solve", "--problem", "nope"])
    with pytest.raises(SystemExit, match="give either"):
        main(["solve"])
    bad = tmp_path / "bad.npy"
    bad.write_text("not numpy")
    with pytest.raises(SystemExit, match="cannot read"):
        main(["solve", str(bad)])
    nan = tmp_path / "nan.npy"
    np.save(nan, np.array([[np.nan, 1.0], [1.0, 1.0]]))
    assert main(["solve", str(nan)]) == 2
    assert "invalid numeric entries" in capsys.readouterr().err


def test_on_demand_problem_with_memory_budget(capsys):
    # 80 rows of 640 bytes = 51 KiB dense; a 16 KiB budget holds 25 rows: an SLRU/LFU row cache
    assert main(["solve", "--problem", "geometric", "--n", "80", "--memory", "16KiB"]) == 0
    out = capsys.readouterr().out
    assert "row cache" in out and "misses" in out and "OPTIMAL" in out and "peak RSS" in out


def test_progress_bar_shows_cache_hit_rate(capsys):
    assert main(["solve", "--problem", "random", "--n", "120", "--memory", "20KiB",
                 "--progress"]) == 0
    err = capsys.readouterr().err
    assert "cache hits" in err and "%" in err and "ETA" in err
