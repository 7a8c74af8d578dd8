"""The small path's first calls before its kernel is compiled (``epslap/cpu/jv_numpy.py``): the
vector form gives the optimum with certified duals on every kind of small matrix, hands long
paths to the ε path as the kernel does, and gives way to the kernel once its time reaches a
compile's (the ski rental); a fresh process answers without compiling."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment as scipy_lsa

import epslap
import epslap.cpu.jv as jv
import epslap.cpu.small as small
import epslap.cpu.jv_numpy as jv_numpy


@pytest.fixture
def uncompiled(monkeypatch, tmp_path):
    """This process as a fresh one: no compiled entry, nothing on disk, no time spent (here or
    in the rent file, which lives in ``tmp_path``)."""
    monkeypatch.setattr(small, "_ENTRIES", dict.fromkeys(small._ENTRIES))
    monkeypatch.setattr(small, "_on_disk", lambda dispatcher, sig: False)
    monkeypatch.setattr(jv_numpy, "COMPILE_S", 15.0)  # conftest sets 0: the kernel at once
    monkeypatch.setattr(jv_numpy, "_SPENT", [0.0])
    monkeypatch.setattr(jv_numpy, "_UNSAVED", [0.0])
    monkeypatch.setattr(jv_numpy, "_BEFORE", [None])
    monkeypatch.setattr(jv_numpy, "_rent_path", lambda: str(tmp_path / jv_numpy.RENT_FILE))
    return tmp_path / jv_numpy.RENT_FILE


def _matrices():
    rng = np.random.default_rng(11)
    forbidden = rng.random((40, 50))
    forbidden[rng.random(forbidden.shape) < 0.3] = np.inf
    return [rng.random((60, 60)), rng.random((30, 70)), rng.random((70, 30)),
            rng.random((45, 45)).astype(np.float32),
            rng.integers(-10**12, 10**12, (50, 50)), rng.integers(0, 40, (35, 60)).astype(np.int32),
            forbidden, np.zeros((20, 20)), np.array([[3.5]]), rng.random((1, 9)),
            rng.integers(0, 3, (25, 25)).astype(np.uint8), rng.random((30, 30)) < 0.5]


@pytest.mark.parametrize("maximize", [False, True])
def test_the_vector_form_is_optimal_with_certified_duals(uncompiled, maximize):
    for c in _matrices():
        if maximize and np.isinf(c).any():
            continue  # +inf when maximising is refused, as everywhere
        sol = epslap.solve(c, maximize=maximize)
        assert sol.stats["compiled"] is False and sol.stats["compile_s"] == 0.0
        r, k = scipy_lsa(c, maximize=maximize)
        best = c[r, k].astype(np.float64).sum() if c.dtype.kind == "f" else int(c[r, k].sum())
        if c.dtype.kind == "f":
            assert sol.cost == pytest.approx(best, rel=1e-12, abs=1e-12)
        else:
            assert sol.cost == best
        report = epslap.verify(c, sol.row_ind, sol.col_ind, sol.u, sol.v, maximize=maximize)
        assert report["optimal"], report["reason"]
        rows, cols = epslap.linear_sum_assignment(c, maximize=maximize)
        assert np.array_equal(rows, np.sort(rows)) and rows.size == min(c.shape)
        assert c[rows, cols].sum() == pytest.approx(c[r, k].sum(), rel=1e-12, abs=1e-12)
    assert all(small._ENTRIES[t] is None for t in small._ENTRIES)  # nothing compiled for them


def test_the_vector_form_against_scipy_on_random_small_problems(uncompiled):
    """Shapes 1-24 either way, floats, small integers, many ties, forbidden pairs (infeasible
    ones named as scipy names them), maximised: the optimum and a certificate every time."""
    rng = np.random.default_rng(7)
    for _ in range(300):
        jv_numpy._SPENT[0] = 0.0
        n1, n2 = rng.integers(1, 25, 2)
        kind = rng.integers(0, 4)
        c = (rng.random((n1, n2)), rng.integers(-5, 6, (n1, n2)),
             rng.integers(0, 3, (n1, n2)).astype(np.float64), rng.random((n1, n2)))[kind]
        if kind == 3:
            c[rng.random(c.shape) < 0.4] = np.inf
        maximize = bool(rng.integers(0, 2)) and not np.isinf(c).any()
        try:
            r, k = scipy_lsa(c, maximize=maximize)
        except ValueError:  # scipy: infeasible
            with pytest.raises(epslap.InfeasibleError):
                epslap.solve(c, maximize=maximize)
            continue
        sol = epslap.solve(c, maximize=maximize)
        assert sol.cost == pytest.approx(c[r, k].sum(), rel=1e-12, abs=1e-12)
        assert epslap.verify(c, sol.row_ind, sol.col_ind, sol.u, sol.v,
                             maximize=maximize)["optimal"]


def test_the_vector_form_gives_the_kernels_answer_where_it_is_delicate(monkeypatch, tmp_path):
    """Ties (the column reduction's order), a signed zero total, and rank-one costs whose
    float duals need the polish pass (they went to the ε path, and its compile, before): the
    same assignment, cost and route as the compiled kernel."""
    rng = np.random.default_rng(1)
    cases = [(np.ones((3, 3)), False), (np.array([[-0.0, 0.0], [0.0, -0.0]]), False),
             (np.outer(rng.random(40), rng.random(40)), True)]
    kernel = [epslap.solve(c, maximize=mx) for c, mx in cases]
    monkeypatch.setattr(small, "_ENTRIES", dict.fromkeys(small._ENTRIES))
    monkeypatch.setattr(small, "_on_disk", lambda dispatcher, sig: False)
    monkeypatch.setattr(jv_numpy, "COMPILE_S", 15.0)  # conftest sets 0: the kernel at once
    monkeypatch.setattr(jv_numpy, "_SPENT", [0.0])
    monkeypatch.setattr(jv_numpy, "_UNSAVED", [0.0])
    monkeypatch.setattr(jv_numpy, "_BEFORE", [0.0])
    monkeypatch.setattr(jv_numpy, "_rent_path", lambda: str(tmp_path / "rent"))
    for (c, mx), ref in zip(cases, kernel):
        sol = epslap.solve(c, maximize=mx)
        assert sol.stats["method"] == ref.stats["method"] == "jv"
        assert sol.stats["compiled"] is False
        assert np.array_equal(sol.col_ind, ref.col_ind)
        assert repr(sol.cost) == repr(ref.cost)
        assert epslap.verify(c, sol.row_ind, sol.col_ind, sol.u, sol.v, maximize=mx)["optimal"]
    assert sol.stats["polish_rows"] > 0  # the rank-one problem was polished


def test_the_vector_form_names_an_infeasible_problem(uncompiled):
    c = np.full((3, 3), np.inf)
    c[:, 0] = 1.0  # every row only in column 0 (each row has a finite cost)
    with pytest.raises(epslap.InfeasibleError):
        epslap.solve(c)


def test_long_paths_go_to_the_eps_path_as_from_the_kernel(uncompiled, monkeypatch):
    monkeypatch.setattr(jv_numpy, "ROW_BUDGET", 0)  # 64 rows in all: 120 x 120 needs more
    c = np.random.default_rng(3).random((120, 120))
    sol = epslap.solve(c)
    assert sol.stats["method"] == "eps"
    r, k = scipy_lsa(c)
    assert sol.cost == pytest.approx(c[r, k].sum(), rel=1e-12)


def test_the_kernel_takes_over_once_the_rent_reaches_a_compile(uncompiled):
    c = np.random.default_rng(4).random((30, 30))
    assert epslap.solve(c).stats["compiled"] is False
    jv_numpy._SPENT[0] = jv_numpy.COMPILE_S
    sol = epslap.solve(c)  # compiled (or loaded) now, and kept
    assert sol.stats["compiled"] is True and small._ENTRIES[np.dtype(np.float64)] is not None


def test_the_rent_is_counted_across_processes(uncompiled):
    """Short processes run again and again reach the compile as one long one would: each adds
    its vector-form time to the file beside Numba's cache, and a process that finds the total
    at a compile's cost compiles."""
    c = np.random.default_rng(5).random((40, 40))
    assert epslap.solve(c).stats["compiled"] is False
    jv_numpy._flush_rent()  # as at the process's end (written in batches before)
    spent = float(uncompiled.read_text())
    assert 0.0 < spent == pytest.approx(jv_numpy._SPENT[0], abs=1e-5)
    uncompiled.write_text(f"{jv_numpy.COMPILE_S}\n")  # as left by earlier processes
    jv_numpy._BEFORE[0], jv_numpy._SPENT[0] = None, 0.0  # a new process reads it
    assert epslap.solve(c).stats["compiled"] is True


def test_a_cost_source_table_takes_the_vector_form_first(uncompiled):
    """A small cost source (computed as a table) is solved by the vector form too before the
    kernel is compiled: a user's element function costs no small-path compile."""
    import costfns
    src = costfns.problem("geometric", 200, seed=3)
    sol = epslap.solve(src, candidates=False)
    assert sol.stats["method"] == "jv" and sol.stats["compile_s"] == 0.0
    assert sol.stats["compiled"] is False and sol.stats["cache_policy"] == "table"
    assert all(entry is None for entry in small._ENTRIES.values())
    r, k = scipy_lsa(src.dense())
    assert sol.cost == pytest.approx(src.dense()[r, k].sum(), rel=1e-12)
    assert epslap.verify(src, sol.row_ind, sol.col_ind, sol.u, sol.v)["optimal"]


def test_precompile_compiles_the_small_path_and_ends_the_rental(uncompiled):
    """``epslap.precompile`` (and the benchmarks) want the kernels, not the first calls'
    vector form: the small path's entries are compiled, and later calls use them."""
    epslap.precompile(functions=False, sources=False, candidates=False)
    assert all(small._ENTRIES[t] is not None for t in small._ENTRIES)
    assert not jv_numpy.rent_pays()
    assert epslap.solve(np.random.default_rng(6).random((20, 20))).stats["compiled"] is True


def test_precompile_readies_the_built_in_classes_on_several_threads():
    """After ``precompile(sources=True)`` (one thread) a built-in class solved on 2 and 3
    threads through row caches compiles no new version of the estimate's kernels (the joined
    row caches are one type whatever the thread count), and its answer is scipy's."""
    import costfns
    from epslap.cpu.estimate import stage_ab, stage_cde
    epslap.precompile(functions=False, sources=True, candidates=False)
    kernels = (stage_ab.ab_worker, stage_cde.cde_worker)
    before = [len(k.signatures) for k in kernels]
    src = costfns.Geometric(90, seed=2)
    r, k = scipy_lsa(src.dense())
    for threads in (2, 3):
        sol = epslap.solve(src, memory=20 * 90 * 8, threads=threads, candidates=False)
        assert sol.stats["threads"] == threads
        assert sol.cost == pytest.approx(src.dense()[r, k].sum(), rel=1e-12)
    assert [len(k.signatures) for k in kernels] == before


_RENTER = """
import sys
import epslap.cpu.jv_numpy as j
j._rent_path = lambda: sys.argv[1]
for _ in range(200):
    j._add_rent(0.25)  # one line each (RENT_FLUSH_S)
"""


def test_processes_adding_rent_at_once_keep_every_second(tmp_path, monkeypatch):
    """Four processes append their rent to one file at once: every line is kept (a rewrite of
    the whole file had let one erase another's)."""
    path = str(tmp_path / "rent")
    procs = [subprocess.Popen([sys.executable, "-c", _RENTER, path]) for _ in range(4)]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    monkeypatch.setattr(jv_numpy, "_rent_path", lambda: path)
    assert jv_numpy._read_rent() == pytest.approx(4 * 200 * 0.25)


def test_the_disk_cache_is_read_per_signature():
    """The small path's kernel is on disk here for float64 matrices (this process compiled or
    loaded it), not for a signature never compiled."""
    import numba
    m = np.zeros((3, 3))
    epslap.solve(m)
    assert small._on_disk(jv.solve_small, small._signature(m))
    assert not small._on_disk(jv.solve_small, (numba.types.float64,))


_FRESH = """
import numpy as np, epslap, epslap.cpu.jv as jv
from scipy.optimize import linear_sum_assignment
c = np.random.default_rng(0).random((300, 300))
r, k = epslap.linear_sum_assignment(c)
rs, ks = linear_sum_assignment(c)
assert abs(c[r, k].sum() - c[rs, ks].sum()) < 1e-12
assert epslap.solve(c).stats["compiled"] is False
print(len(jv.solve_small.overloads))
"""


def test_a_fresh_process_answers_without_compiling(tmp_path):
    """An empty Numba cache: the first calls compile nothing (their time is on the benchmark
    page: about a second with the import)."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    out = subprocess.run([sys.executable, "-c", _FRESH], env=env, text=True,
                         capture_output=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "0"


def test_precompile_readies_the_candidates_method_for_a_users_jitted_cost():
    """After ``precompile(candidates=True)`` the candidates method of another jitted cost
    function (its own function, the same kernel type) compiles no new version of the passes'
    or the sparse solve's kernels, and its answer is scipy's; nor do plain Python functions,
    through the candidates or a row cache."""
    from numba import njit

    import costfns
    from epslap.cpu import candidates as passes
    from epslap.cpu import sparse as core
    epslap.precompile(functions=True, sources=False, candidates=True)

    @njit
    def other(i, j):
        return abs(3.0 * i - 2.0 * j) + (i * 7 + j * 3) % 5

    kernels = (passes.candidate_rows, passes.certify_rows, passes.lists_to_csr, core.augment,
               core.auction, core.prepare, core.greedy)
    before = [len(k.overloads) for k in kernels]
    src = costfns.from_function(other, (60, 60))
    sol = epslap.solve(src, candidates=8, threads=1)
    assert [len(k.overloads) for k in kernels] == before
    r, c = scipy_lsa(src.dense())
    assert sol.stats["method"] == "candidates"
    assert abs(sol.cost - src.dense()[r, c].sum()) <= 1e-9 * 60 * 60
    # a plain Python function reaches the kernels of jitted row functions: precompiled too,
    # through the candidates and through a row cache
    from epslap.cpu import passes as eps_passes
    from epslap.cpu.estimate import stage_ab
    kernels += (eps_passes.pass_worker, stage_ab.ab_worker)
    before = [len(k.overloads) for k in kernels]
    m = src.dense()
    for python in (costfns.from_function(lambda i: m[i], m.shape, kind="row"),
                   costfns.from_function(lambda i, j: m[i, j], m.shape)):
        for how in ({"candidates": 8}, {"memory": 20 * 60 * 8, "candidates": False}):
            sol = epslap.solve(python, threads=1, **how)
            assert abs(sol.cost - m[r, c].sum()) <= 1e-9 * 60 * 60
    assert [len(k.overloads) for k in kernels] == before


_COMPILE_S_SCRIPT = """
import numpy as np, costfns, epslap
rng = np.random.default_rng(3)
for src in (np.random.default_rng(1).random((400, 400)),
            costfns.SqEuclidean(rng.random((300, 2)), rng.random((300, 2)))):
    first = epslap.solve(src, candidates=True)
    again = epslap.solve(src, candidates=True)
    assert first.stats["method"] == again.stats["method"] == "candidates"
    print(first.stats["compile_s"], again.stats["compile_s"])
"""


def test_the_candidates_method_reports_its_compile():
    """``stats["compile_s"]`` of a candidates solve counts the passes' and the sparse solve's
    compile (or their load from the disk cache) in a fresh process, and nothing the second time;
    the solve's own times leave it out."""
    out = subprocess.run([sys.executable, "-c", _COMPILE_S_SCRIPT], capture_output=True,
                         text=True, timeout=600, check=True)
    for line in out.stdout.split("\n")[:2]:
        first, again = (float(x) for x in line.split())
        assert first > 0.0 and again == 0.0, line
