"""Compiling a later step's kernels in a second process (``epslap/cpu/compile_ahead.py``): the
child's kernels are loaded from the disk cache instead of compiled again, the solve compiles a
step from its last kernel while the child goes from the first and stops the child when it has
them all, nothing starts where the feature is off or nothing is missing, and a fresh
environment's solve with a child gives scipy's optimum."""
from __future__ import annotations

import importlib
import os
import pickle
import subprocess
import sys

import numba
import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

import epslap

from epslap.cpu import compile_ahead
from epslap.cpu import sparse as core
from epslap.cpu.host import compile_kernels
from epslap.sparse import kernel_table

_MODULE = """
from numba import njit


@njit(cache=True)
def first(x):
    return x.sum() + 1.0


@njit(cache=True)
def second(x):
    return x.max() * 2.0
"""


@pytest.fixture
def probe_module(tmp_path, monkeypatch):
    """A module of two cached kernels that this process and a child both import by name, with
    an empty Numba cache of its own."""
    (tmp_path / "ahead_probe.py").write_text(_MODULE)
    cache = tmp_path / "cache"
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(cache))
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(cache))
    sys.modules.pop("ahead_probe", None)
    module = importlib.import_module("ahead_probe")
    yield module
    sys.modules.pop("ahead_probe", None)
    compile_ahead.stop_all()


def _child(kernel, args):
    return compile_ahead._PENDING[(kernel, compile_ahead._sig(args))]


def test_a_child_compiles_what_this_process_then_loads(probe_module, monkeypatch):
    monkeypatch.setenv(compile_ahead.ENV, "1")
    args = (np.zeros(4),)
    kernels = [(probe_module.first, args), (probe_module.second, args)]
    assert compile_ahead.start(kernels) == 2
    assert compile_ahead.start(kernels) == 0  # already handed over
    child = _child(probe_module.first, args)
    assert child.proc.wait(120) == 0
    sig = compile_ahead._sig(args)
    assert compile_ahead.on_disk(probe_module.first, sig)
    assert compile_ahead.on_disk(probe_module.second, sig)
    compile_kernels(kernels)
    assert compile_ahead.pending() == 0
    for kernel in (probe_module.first, probe_module.second):
        assert kernel.stats.cache_hits[sig] == 1 and not kernel.stats.cache_misses[sig]
    assert probe_module.first(np.ones(3)) == 4.0
    assert compile_ahead.missing(kernels) == []  # compiled here now


def _fake_child(monkeypatch, kernels, script):
    """A child that runs ``script`` instead of compiling, registered for ``kernels``."""
    keys = [(kernel, compile_ahead._sig(args)) for kernel, args in kernels]
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE)
    child = compile_ahead.Child(proc, keys)
    for key in keys:
        monkeypatch.setitem(compile_ahead._PENDING, key, child)
    return child


def test_the_solve_compiles_from_the_last_kernel_and_stops_the_child(probe_module,
                                                                      monkeypatch):
    """A step reached before its child is done: this process goes from the last kernel (it
    compiles those the child has not started), waits for the one the child is compiling (the
    first: here the child says it is done after a second) and then stops the child."""
    args = (np.zeros(4),)
    kernels = [(probe_module.first, args), (probe_module.second, args)]
    child = _fake_child(monkeypatch, kernels,
                        "import time; time.sleep(1); print(flush=True); time.sleep(60)")
    assert compile_ahead.meet_in_the_middle(kernels) == kernels[::-1]
    compile_kernels(kernels)
    assert child.done == 1  # the first kernel was waited for until the child said it was done
    assert child.proc.poll() is not None  # stopped
    assert compile_ahead.pending() == 0
    assert probe_module.second(np.arange(3.0)) == 4.0
    assert compile_ahead.meet_in_the_middle(kernels) == kernels


def test_a_kernel_the_child_has_not_started_is_not_waited_for(probe_module, monkeypatch):
    import time
    args = (np.zeros(4),)
    kernels = [(probe_module.first, args), (probe_module.second, args)]
    child = _fake_child(monkeypatch, kernels, "import time; time.sleep(60)")
    t0 = time.perf_counter()
    compile_ahead.wait_if_compiling(probe_module.second, compile_ahead._sig(args))
    assert time.perf_counter() - t0 < 5.0
    monkeypatch.setattr(compile_ahead, "WAIT_S", 0.2)  # the first: it is "compiling" it
    t0 = time.perf_counter()
    compile_ahead.wait_if_compiling(probe_module.first, compile_ahead._sig(args))
    assert time.perf_counter() - t0 >= 0.2
    compile_ahead.stop(child)
    assert child.proc.poll() is not None


def test_nothing_starts_where_it_is_off_or_nothing_is_missing(probe_module, monkeypatch):
    args = (np.zeros(4),)
    monkeypatch.setenv(compile_ahead.ENV, "0")
    assert compile_ahead.start([(probe_module.first, args)]) == 0
    monkeypatch.setenv(compile_ahead.ENV, "1")
    probe_module.first(*args)  # compiled here
    assert compile_ahead.start([(probe_module.first, args)]) == 0
    uncached = numba.njit(lambda x: x)  # no disk cache: a child could not hand it over
    assert compile_ahead.missing([(uncached, args)]) == []
    greedy_args = kernel_table(False)[1][1]
    core.greedy.compile(compile_ahead._sig(greedy_args))
    assert compile_ahead.missing([(core.greedy, greedy_args)]) == []


def test_a_child_that_cannot_compile_says_so():
    payload = pickle.dumps([("epslap_no_such_module", "kernel", ()),
                            ("epslap.cpu.sparse", "no_such_kernel", ())])
    assert compile_ahead._compile_all(payload) == 2


_FRESH = """
import numpy as np
from scipy.optimize import linear_sum_assignment
import epslap
from epslap.cpu import compile_ahead
handed = []
start = compile_ahead.start
compile_ahead.start = lambda kernels: handed.append(start(kernels)) or handed[-1]
c = np.random.default_rng(5).random((1100, 1100))
sol = epslap.solve(c)
r, k = linear_sum_assignment(c)
assert sol.stats["method"] == "candidates", sol.stats
assert abs(sol.cost - c[r, k].sum()) <= 1e-9, (sol.cost, c[r, k].sum())
assert compile_ahead.pending() == 0
print(max(handed))
"""


def test_a_fresh_environment_solves_with_a_child(tmp_path):
    """An empty Numba cache: the candidates method's sparse solve goes to a child while the
    scans compile; the answer is scipy's and nothing is left pending."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"),
               **{compile_ahead.ENV: "1"})
    out = subprocess.run([sys.executable, "-c", _FRESH], env=env, text=True,
                         capture_output=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert int(out.stdout.strip()) >= 5  # the sparse solve's kernels and the CSR builder


def test_the_dense_method_hands_its_passes_over_during_the_estimate(monkeypatch):
    """The ε method's first use: the estimate hands the pass loop's kernel (first) and its
    own kernels but stage A/B's worker to a child, with the very types the solve then runs
    them with (a stand-in of another type would have the child compile a version never used)."""
    from epslap.cpu import passes
    from epslap.cpu.estimate import driver
    from epslap.cpu.estimate.stage_ab import ab_worker
    asked = []
    monkeypatch.setattr(driver, "compile_later", lambda kernels: asked.append(kernels))
    c = np.random.default_rng(3).random((1100, 1100))
    sol = epslap.solve(c, candidates=False, threads=1)
    r, k = linear_sum_assignment(c)
    assert sol.stats["method"] == "eps" and abs(sol.cost - c[r, k].sum()) <= 1e-9
    (kernels,) = asked
    assert kernels[0][0] is passes.pass_worker
    assert ab_worker not in [kernel for kernel, _ in kernels]
    for kernel, args in kernels:
        assert compile_ahead._sig(args) in kernel.overloads, kernel


def test_a_child_left_to_itself_is_reaped_when_it_ends(probe_module, monkeypatch):
    """A solve that raises before it reaches the step leaves its child running: the child
    still saves its kernels, and ends reaped (no process left behind)."""
    monkeypatch.setenv(compile_ahead.ENV, "1")
    args = (np.zeros(4),)
    assert compile_ahead.start([(probe_module.first, args)]) == 1
    child = _child(probe_module.first, args)
    with child.changed:
        assert child.changed.wait_for(lambda: child.ended, 120)
    assert child.proc.returncode == 0 and child.done == 1
    assert compile_ahead.on_disk(probe_module.first, compile_ahead._sig(args))


def test_a_declined_sample_looks_at_the_sparse_table_once(monkeypatch):
    """A matrix that "auto"'s sample hands to another method never reaches the sparse step:
    its look at the sparse solve's kernels (about 2 ms, as long as such a solve) is made once
    per process, not at every call."""
    looks = []
    monkeypatch.setattr(compile_ahead, "start", lambda kernels: looks.append(1) or 0)
    n = 1000
    rng = np.random.default_rng(4)
    c = rng.random(n)[:, None] + rng.random(n)[None, :] + 0.1 * (1 - np.eye(n))  # sanity
    from epslap.cpu import host
    monkeypatch.setattr(host, "_LOOKED", set())
    for _ in range(3):
        sol = epslap.solve(c)
        assert "candidates" in sol.stats  # declined by the sample
    assert len(looks) <= 1


def test_a_ctrl_c_stops_the_children(monkeypatch):
    """A KeyboardInterrupt in a solve stops the children compiling its later steps (one went on
    compiling at full speed after a Ctrl-C in a notebook; the solve will not reach them)."""
    import epslap._api as api
    stopped = []
    monkeypatch.setattr(compile_ahead, "stop_all", lambda: stopped.append(True))

    def interrupted(problem, options):
        raise KeyboardInterrupt
    monkeypatch.setattr(api, "solve_on", interrupted)
    with pytest.raises(KeyboardInterrupt):
        epslap.solve(np.random.default_rng(0).random((50, 50)), candidates=False)
    assert stopped == [True]
