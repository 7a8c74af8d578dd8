"""The cost-form registry of ``costfns.rows``: every source's row, row slice and entries agree
exactly (given or derived forms alike); a class without forms is refused; an edited form is not
served from a stale disk cache."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import numba
import numpy as np
import pytest
from numba.core.errors import TypingError

import costfns
import epslap
from costfns.functions import _JitRowState
from costfns.rows import (cost_at, cost_forms, forms_of, get_row, get_row_part, has_part_form,
                          random_access)
from epslap._sources import NegatedState
from epslap.cache import CachedState, JoinedCaches, make_cache


@numba.njit
def _elem(i, j):
    return np.sin(0.1 * i) * (j + 1.5) - 0.25 * i


@numba.njit
def _row_fill(i, out):
    for j in range(out.shape[0]):
        out[j] = np.sin(0.1 * i) * (j + 1.5) - 0.25 * i


def _sources():
    rng = np.random.default_rng(7)
    return {
        "random": costfns.Random(23, seed=4, n2=41),
        "random_int": costfns.RandomInt(23, 90, seed=4, n2=41),
        "geometric": costfns.Geometric(37, seed=4),
        "disjoint": costfns.Disjoint(37, seed=4),
        "sanity": costfns.Sanity(37, seed=4),
        "low_rank": costfns.LowRank(37, 3, seed=4),
        "sq_euclidean": costfns.SqEuclidean(rng.random((23, 5)), rng.random((41, 5))),
        "euclidean": costfns.Euclidean(rng.random((23, 3)), rng.random((41, 3))),
        "jit_element": costfns.from_function(_elem, (23, 41)),
        "dense_f64": costfns.Dense(rng.random((23, 41))),
        "dense_i32": costfns.Dense(rng.integers(-50, 50, (23, 41)).astype(np.int32)),
        "jit_row": costfns.from_function(_row_fill, (23, 41), kind="row"),
        "python_row": costfns.from_function(lambda i: np.arange(41.0) * i, (23, 41), kind="row"),
    }


SOURCES = _sources()
ROW_ONLY = {"jit_row", "python_row"}  # sources without an entry form


@numba.njit(cache=True)
def _rows(state, out):
    buf = np.empty(out.shape[1], out.dtype)
    for i in range(out.shape[0]):
        row = get_row(state, i, buf)
        for j in range(out.shape[1]):
            out[i, j] = row[j]


@numba.njit(cache=True)
def _parts(state, out, lo, hi):
    """Columns [lo, hi) of every row through ``get_row_part``, the rest of ``out`` untouched."""
    buf = np.empty(out.shape[1], out.dtype)
    for i in range(out.shape[0]):
        part = get_row_part(state, i, lo, hi, buf)
        for t in range(hi - lo):
            out[i, lo + t] = part[t]


@numba.njit(cache=True)
def _entries(state, out):
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[i, j] = cost_at(state, i, j)


@numba.njit(cache=True)
def _random_access(state):
    return random_access(state)


def _bits(a):
    """The matrix's bytes: equal arrays and equal signs of zero (bit-identical entries)."""
    return np.ascontiguousarray(a).view(np.uint8)


@pytest.mark.parametrize("name", list(SOURCES))
def test_rows_slices_and_entries_agree_with_dense(name):
    src = SOURCES[name]
    state = src.state()
    dense = src.dense()
    assert dense.shape == src.shape and dense.dtype == src.dtype
    rows = np.empty_like(dense)
    _rows(state, rows)
    np.testing.assert_array_equal(_bits(rows), _bits(dense))
    n2 = src.shape[1]
    for lo, hi in [(0, n2), (0, 1), (3, 17), (n2 - 5, n2), (9, 9)]:
        parts = np.zeros_like(dense)
        _parts(state, parts, lo, hi)
        np.testing.assert_array_equal(_bits(parts[:, lo:hi]), _bits(dense[:, lo:hi]))
    assert _random_access(state) == (name not in ROW_ONLY)
    if name not in ROW_ONLY:
        entries = np.empty_like(dense)
        _entries(state, entries)
        np.testing.assert_array_equal(_bits(entries), _bits(dense))


#: the classes that reach the kernels type-erased (``costfns.rows.erased``)
ERASED = ["random", "random_int", "geometric", "disjoint", "sanity", "low_rank", "sq_euclidean",
          "euclidean"]


@pytest.mark.parametrize("name", ERASED)
def test_erased_states_give_the_values_of_their_own_state(name):
    """Through the trampolines, every row, row slice and entry is bit for bit what the class's
    own state gives (compiled for it alone)."""
    src = SOURCES[name]
    own, erased = src.specialized_state(), src.state()
    assert type(erased).__name__ == "ErasedState"
    for fill in (_rows, _entries):
        want, got = np.empty(src.shape, src.dtype), np.empty(src.shape, src.dtype)
        fill(own, want)
        fill(erased, got)
        np.testing.assert_array_equal(_bits(got), _bits(want))
    want, got = np.zeros(src.shape, src.dtype), np.zeros(src.shape, src.dtype)
    _parts(own, want, 3, 17)
    _parts(erased, got, 3, 17)
    np.testing.assert_array_equal(_bits(got), _bits(want))


def test_erased_integer_class_keeps_keys_and_spans_of_64_bits():
    """A span of 2**63 and more passes the fixed layout's int64 scalars as its bits: the rows
    are the class's own, and the solve refuses them by the range rule, not by an overflow."""
    src = costfns.RandomInt(6, 2**63 - 1, seed=5)
    want = np.empty(src.shape, src.dtype)
    _rows(src.specialized_state(), want)
    np.testing.assert_array_equal(src.dense(), want)
    with pytest.raises(ValueError, match="overflow int64"):
        epslap.solve(src)


@pytest.mark.parametrize("name", ["random", "random_int", "low_rank", "dense_i32"])
def test_erased_state_negates_in_the_same_compiled_type(name):
    """A maximisation negates inside the erased state: its rows, slices and entries are the
    negated costs, and its Numba type (so every kernel compiled for it) is the same."""
    src = SOURCES[name]
    plain = src.state()
    neg = plain._replace(negate=True)
    assert numba.typeof(neg) == numba.typeof(plain)
    dense = src.dense()
    got = np.empty_like(dense)
    _rows(neg, got)
    np.testing.assert_array_equal(got, -dense)
    _entries(neg, got)
    np.testing.assert_array_equal(got, -dense)
    parts = np.zeros_like(dense)
    _parts(neg, parts, 3, 17)
    np.testing.assert_array_equal(parts[:, 3:17], -dense[:, 3:17])


def test_built_in_classes_share_one_kernel_type_per_dtype():
    """Every float64 class gives a state of one Numba type (and the integer class one of
    another): the kernels compiled for one class serve them all, and every wrapper of them."""
    floats = {numba.typeof(SOURCES[k].state()) for k in ERASED if k != "random_int"}
    assert len(floats) == 1
    assert numba.typeof(SOURCES["random_int"].state()) not in floats
    own = {numba.typeof(SOURCES[k].specialized_state()) for k in ERASED}
    assert len(own) == len(ERASED) - 2  # geometric, disjoint and sq_euclidean: SqEuclidean


def test_matrices_and_element_functions_reach_the_kernels_of_the_classes(tmp_path):
    """A matrix in memory or on disk, and a user's jitted element function, are erased states of
    their dtype: float64 ones have the classes' type (their kernels serve them), negated or not;
    the mapped file is not copied."""
    c = np.random.default_rng(3).random((7, 9))
    np.save(tmp_path / "c.npy", c)
    on_disk = costfns.OnDisk(tmp_path / "c.npy")
    dense, mapped = costfns.Dense(c).state(), on_disk.state()
    kernel_type = numba.typeof(SOURCES["geometric"].state())
    for state in (dense, mapped, dense._replace(negate=True), SOURCES["jit_element"].state()):
        assert numba.typeof(state) == kernel_type
    assert np.shares_memory(mapped.m, on_disk.matrix) and not mapped.m.flags.writeable
    got = np.empty_like(c)
    _rows(mapped, got)
    np.testing.assert_array_equal(got, c)
    i32 = costfns.Dense((c * 100).astype(np.int32)).state()
    assert numba.typeof(i32) == numba.typeof(costfns.Dense(np.ones((2, 3), np.int32)).state())
    assert numba.typeof(i32) != kernel_type


@pytest.mark.parametrize("name", ["sanity", "sq_euclidean", "jit_element", "jit_row"])
def test_wrappers_keep_the_forms_of_their_source(name):
    """A row cache and a negation give the inner source's rows, slices and (where it has them)
    entries."""
    src = SOURCES[name]
    dense = src.dense()
    n1, n2 = dense.shape
    cached = make_cache(src.state(), n1, n2, 4, "lfu", dense.dtype)
    for state, sign in ((cached, 1), (NegatedState(src.state()), -1)):
        out = np.empty_like(dense)
        _rows(state, out)
        np.testing.assert_array_equal(out, sign * dense)
        assert _random_access(state) == (name not in ROW_ONLY)
        if name not in ROW_ONLY:
            _entries(state, out)
            np.testing.assert_array_equal(out, sign * dense)
    sliced = make_cache(src.state(), n1, 10, 4, "slru", dense.dtype)  # one thread's columns
    out = np.zeros_like(dense)
    _parts(sliced, out, 5, 15)
    np.testing.assert_array_equal(out[:, 5:15], dense[:, 5:15])


def test_part_form_predicate():
    assert has_part_form(type(SOURCES["random"].state()))       # derived from the entries
    assert has_part_form(type(SOURCES["sq_euclidean"].state()))  # hand-written
    assert has_part_form(type(SOURCES["jit_element"].state()))
    assert has_part_form(CachedState)
    assert has_part_form(NegatedState)
    assert not has_part_form(_JitRowState)   # whole rows only
    assert not has_part_form(JoinedCaches)
    assert not has_part_form(np.ndarray)     # not a registered state class
    assert forms_of(np.ndarray) is None
    assert forms_of(NegatedState).wraps_inner


class _Unregistered(NamedTuple):
    a: np.ndarray


def test_a_class_without_forms_is_refused():
    with pytest.raises(TypeError, match="at least one form"):
        cost_forms()(_Unregistered)
    with pytest.raises(TypeError, match="at least one form"):
        cost_forms(wraps_inner=True)
    with pytest.raises(TypeError, match="typing.NamedTuple state classes"):
        cost_forms(entry=_elem)(dict)
    with pytest.raises(TypeError, match="field 'inner'"):
        cost_forms(entry=_elem, wraps_inner=True)(_Unregistered)
    with pytest.raises(TypeError, match="jitted function"):
        cost_forms(row=3)
    assert forms_of(_Unregistered) is None
    with pytest.raises(TypingError, match="_Unregistered is not a registered cost source"):
        _rows(_Unregistered(np.zeros(3)), np.empty((1, 3)))


def test_a_class_is_registered_once():
    """Numba types the values of a class once per process: forms registered anew could not
    reach kernels compiled already, so a second registration is refused."""
    class Once(NamedTuple):
        a: float

    cost_forms(entry=_elem)(Once)
    with pytest.raises(TypeError, match="registered already"):
        cost_forms(entry=_elem)(Once)


_FORMS_MODULE = """
from typing import NamedTuple
from numba import njit
from costfns.rows import cost_forms

@njit(inline="always")
def _at(s, i, j):
    return s.a * i + j

@cost_forms(entry=_at)
class State(NamedTuple):
    a: float
"""

_KERNEL_MODULE = """
import numpy as np
from numba import njit
from costfns.rows import get_row

@njit(cache=True)
def first_row(state):
    return get_row(state, 2, np.empty(3)).copy()
"""

_RUN = """
import kernel, forms
print(kernel.first_row(forms.State(10.0)).tolist(), sum(kernel.first_row.stats.cache_hits.values()))
"""


def test_an_edited_form_is_not_served_from_a_stale_disk_cache(tmp_path):
    """A kernel cached to disk in one file, its source's forms edited in another: the next process
    recompiles it (Numba alone keys the kernel on its own file and would load the old code)."""
    (tmp_path / "forms.py").write_text(_FORMS_MODULE)
    (tmp_path / "kernel.py").write_text(_KERNEL_MODULE)
    root = Path(__file__).resolve().parents[1]
    # no .pyc files: Python would not see an edit of the same size within the same second
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=os.pathsep.join([str(tmp_path), str(root)]))

    def run() -> str:
        return subprocess.run([sys.executable, "-c", _RUN], env=env, cwd=tmp_path,
                              capture_output=True, text=True, check=True).stdout.strip()

    assert run() == "[20.0, 21.0, 22.0] 0"
    assert run() == "[20.0, 21.0, 22.0] 1"  # from the disk cache
    (tmp_path / "forms.py").write_text(_FORMS_MODULE.replace("s.a * i + j", "s.a * i - j"))
    assert run() == "[20.0, 19.0, 18.0] 0"  # recompiled, not the cached kernel


@numba.njit
def _other_elem(i, j):
    return 0.5 * (i + j)


@numba.njit
def _other_row(i, out):
    for j in range(out.shape[0]):
        out[j] = i - j


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_jitted_functions_share_one_kernel_type(dtype):
    """Two different jitted functions give states of one Numba type (a first-class function of
    the source's signature): kernels compiled for one serve the other, and Numba's disk cache
    serves them to later processes. ``specialize=True`` types the function itself."""
    pairs = [((_elem, _other_elem), "element"), ((_row_fill, _other_row), "row")]
    for (f, g), kind in pairs:
        if kind == "element" and np.dtype(dtype).kind == "i":
            continue
        a = costfns.from_function(f, (4, 5), dtype=dtype, kind=kind)
        b = costfns.from_function(g, (4, 5), dtype=dtype, kind=kind)
        assert numba.typeof(a.state()) == numba.typeof(b.state())
        assert "FunctionType" in str(numba.typeof(a.state()))
        sa = costfns.from_function(f, (4, 5), dtype=dtype, kind=kind, specialize=True)
        sb = costfns.from_function(g, (4, 5), dtype=dtype, kind=kind, specialize=True)
        assert numba.typeof(sa.state()) != numba.typeof(sb.state())


@pytest.mark.slow  # specialize=True compiles the kernels in every process (16-18 s each)
@pytest.mark.parametrize("kind,fn", [("element", _elem), ("row", _row_fill)])
def test_specialized_and_first_class_give_the_same_solve(kind, fn):
    import epslap
    first = epslap.solve(costfns.from_function(fn, (23, 41), kind=kind), memory=41 * 8 * 5)
    inlined = epslap.solve(costfns.from_function(fn, (23, 41), kind=kind, specialize=True),
                           memory=41 * 8 * 5)
    np.testing.assert_array_equal(first.col_ind, inlined.col_ind)
    assert first.cost == inlined.cost
    assert first.stats["rows_evaluated"] == inlined.stats["rows_evaluated"]


@numba.njit
def _tall_elem(i, j):
    return abs(3.0 * i - 2.0 * j) + (i * 7 + j * 3) % 5


@numba.njit
def _tall_int(i, j):
    return (i * 7 + j * 3) % 11 - i


def _tall_python(i, j):
    return abs(3.0 * i - 2.0 * j) + (i * 7 + j * 3) % 5


@pytest.mark.parametrize("shape", [(9, 5), (5, 9), (7, 7), (6, 1), (1, 6)])
@pytest.mark.parametrize("how", ["jit", "jit_int", "python"])
@pytest.mark.parametrize("maximize", [False, True])
@pytest.mark.parametrize("memory", [None, "small"])
def test_element_functions_of_every_shape(shape, how, maximize, memory):
    """An element function is solved in any orientation, jitted or not: n1 > n2 transposed
    (a jitted one through a jitted swap of its arguments), against scipy on its matrix; from a
    table (the default budget) and from a row cache."""
    from scipy.optimize import linear_sum_assignment as scipy_lsa
    fn, dtype = {"jit": (_tall_elem, np.float64), "jit_int": (_tall_int, np.int64),
                 "python": (_tall_python, np.float64)}[how]
    src = costfns.from_function(fn, shape, dtype=dtype)
    dense = np.array([[fn(i, j) for j in range(shape[1])] for i in range(shape[0])], dtype)
    np.testing.assert_array_equal(src.dense(), dense)
    budget = None if memory is None else 2 * max(shape) * 8  # two rows of the oriented problem
    sol = epslap.solve(src, maximize=maximize, memory=budget)
    r, k = scipy_lsa(dense, maximize=maximize)
    assert sol.cost == pytest.approx(dense[r, k].sum(), abs=1e-12)
    assert isinstance(sol.cost, int) == (dtype == np.int64)
    np.testing.assert_array_equal(sol.row_ind, np.sort(sol.row_ind))
    assert epslap.verify(dense, sol.row_ind, sol.col_ind, sol.u, sol.v,
                         maximize=maximize)["optimal"]


def test_transposed_function_sources():
    """The kinds of function and what transposing them gives: an element function its
    arguments swapped (jitted where it was, ``specialize`` kept, made once), a row function a
    clear refusal where its rows would have to be transposed (a table is solved as a matrix),
    jitted or not; a Python function's exception still reaches the caller, and
    a bad value names the user's column, not the transposed problem's row."""
    from costfns.functions import _JitElementState
    jit = costfns.from_function(_tall_elem, (6, 3))
    t = jit.T
    assert isinstance(t.fn, numba.core.registry.CPUDispatcher) and t.shape == (3, 6)
    assert t is jit.T and t.T is jit  # made once; transposing back gives the source itself
    np.testing.assert_array_equal(t.dense(), jit.dense().T)
    assert numba.typeof(t.state()) == numba.typeof(jit.state())  # the shared kernels serve it
    spec = costfns.from_function(_tall_elem, (6, 3), specialize=True).T
    assert spec.specialize and isinstance(spec.state(), _JitElementState)
    py = costfns.from_function(_tall_python, (6, 3))
    np.testing.assert_array_equal(py.T.dense(), py.dense().T)
    for fn in (_row_fill, lambda i: np.arange(3.0) * i):
        tall = costfns.from_function(fn, (6, 3), kind="row")
        with pytest.raises(ValueError, match="a row function with more rows than columns"):
            epslap.solve(tall, memory=100)  # through row caches: the transposed rows
        sol = epslap.solve(tall)  # a table: computed by rows, solved as a matrix
        assert sol.cost == pytest.approx(epslap.solve(tall.dense()).cost, rel=1e-12)
        epslap.solve(costfns.from_function(fn, (3, 3), kind="row"))  # square: no transpose

    def raises(i, j):
        if (i, j) == (4, 1):
            raise KeyError("from the user")
        return float(i + j)
    with pytest.raises(KeyError, match="from the user"):
        epslap.solve(costfns.from_function(raises, (6, 3)), memory=2 * 6 * 8)
    bad = costfns.from_function(lambda i, j: i + 0.5, (6, 3), dtype=np.int64)
    with pytest.raises(ValueError, match="dtype float64 for row 0; expected int64"):
        epslap.solve(bad)  # a table, computed by the user's rows
    with pytest.raises(ValueError, match="dtype float64 for column 0; expected int64"):
        epslap.solve(bad, memory=2 * 6 * 8)  # the transposed problem's rows: user's columns


_USER_DEVICE_COST = """__device__ __forceinline__ double my_cost_fn(double x) { return x * 2.0; }
__device__ __forceinline__ cost_t cost_fn (const CostArgs& a, long long i, long long j) {
    return (cost_t)my_cost_fn((double)(i + j));  /* cost_fn( in a comment */
}"""


def test_a_negated_device_cost_renames_the_token_only():
    """``maximize`` on the GPU wraps the user's ``cost_fn``: the preprocessor renames the token
    (spaces before the parenthesis, helpers whose names end in cost_fn and comments are left as
    written)."""
    from costfns import CudaCost
    from epslap.gpu.api import negated
    code = negated(CudaCost(_USER_DEVICE_COST, [], [], [])).code
    head, rest = code.split("\n", 1)
    assert head == "#define cost_fn cost_fn_inner"
    assert rest.startswith(_USER_DEVICE_COST)
    assert "#undef cost_fn" in rest and "return -cost_fn_inner(a, i, j);" in rest


def _nvcc_targets_hopper() -> bool:
    if shutil.which("nvcc") is None:
        return False
    listed = subprocess.run(["nvcc", "--list-gpu-arch"], capture_output=True, text=True)
    return listed.returncode == 0 and "compute_90" in listed.stdout


@pytest.mark.skipif(not _nvcc_targets_hopper(), reason="no nvcc that builds for sm_90 here")
def test_a_negated_device_cost_compiles_in_both_cost_modes(tmp_path):
    from costfns import CudaCost
    from epslap.gpu.api import negated
    from epslap.gpu.modules import cost_headers
    code = negated(CudaCost(_USER_DEVICE_COST, [], [], [])).code
    for name, text in cost_headers(code).items():  # the headers the module build writes
        (tmp_path / name).write_text(text)
    gpu_dir = Path(epslap.__file__).parent / "gpu"
    for integral in (0, 1):  # to PTX: the C++ front end's checks, without ptxas (3x faster)
        done = subprocess.run(["nvcc", "-arch=sm_90", "-std=c++17", "-ptx", f"-I{gpu_dir}",
                               f"-I{tmp_path}", f"-DCOST_INTEGRAL={integral}", "-DK_MAX=64",
                               str(gpu_dir / "candidates.cu"), "-o", str(tmp_path / "x.ptx")],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr


def test_user_functions_share_the_kernels_of_the_built_in_classes():
    """A plain Python function (element or row), a jitted row function, a jitted element
    function and a built-in class of one dtype have states of one Numba type: the kernels one
    of them compiled solve the others (a jitted row function after a class took 19.7 s of
    compile before, 0.1 s now), and a maximised row function negates inside its state (no
    ``NegatedState`` kernels); every solve gives scipy's optimum."""
    from scipy.optimize import linear_sum_assignment as scipy_lsa

    from epslap._sources import negated, negates_inside
    from epslap.cpu import passes
    from epslap.cpu.estimate import stage_ab
    m = np.random.default_rng(11).random((60, 60)) * 1000

    @numba.njit
    def jitted_row(i, out):
        out[:] = m[i]

    @numba.njit
    def jitted_element(i, j):
        return m[i, j]

    sources = [costfns.from_function(jitted_row, m.shape, kind="row"),
               costfns.from_function(lambda i: m[i], m.shape, kind="row"),
               costfns.from_function(lambda i, j: m[i, j], m.shape),
               costfns.from_function(jitted_element, m.shape),
               costfns.Dense(m)]
    assert len({numba.typeof(s.state()) for s in sources + [costfns.Random(9)]}) == 1
    state = sources[0].state()
    assert negates_inside(state) and type(negated(state)) is type(state)
    rows = np.empty_like(m)
    _rows(negated(state), rows)
    np.testing.assert_array_equal(rows, -m)
    compiled = None
    for src in sources:
        for maximize in (False, True):
            sol = epslap.solve(src, maximize=maximize, memory=20 * 60 * 8, candidates=False)
            r, c = scipy_lsa(m, maximize=maximize)
            assert sol.cost == pytest.approx(m[r, c].sum(), rel=1e-12)
            kernels = (len(passes.pass_worker.signatures), len(stage_ab.ab_worker.signatures))
            assert compiled is None or kernels == compiled
            compiled = kernels


@pytest.mark.parametrize("dtype", [np.float64, np.int32])
def test_a_maximised_python_function_keeps_its_compiled_kernels(dtype):
    """A Python function's state negates its own rows (its ``negate`` field, after the row
    callback): maximize=True solves through the state type the minimisation compiled for, no
    ``NegatedState`` kernels of its own, and gives scipy's optimum."""
    from scipy.optimize import linear_sum_assignment as scipy_lsa

    from epslap._sources import negated, negates_inside
    from epslap.cpu import passes
    m = (np.random.default_rng(8).random((60, 60)) * 1000).astype(dtype)
    src = costfns.from_function(lambda i: m[i], m.shape, dtype=dtype, kind="row")
    state = src.state()
    assert negates_inside(state) and type(negated(state)) is type(state)
    rows = np.empty((60, 60), dtype)
    _rows(negated(state), rows)
    np.testing.assert_array_equal(rows, -m)
    for maximize in (False, True):
        before = len(passes.pass_worker.signatures)
        sol = epslap.solve(src, maximize=maximize, memory=20 * 60 * m.itemsize,
                           candidates=False)
        if maximize:  # the minimisation's kernels serve the maximisation
            assert len(passes.pass_worker.signatures) == before
        r, c = scipy_lsa(m, maximize=maximize)
        assert sol.cost == pytest.approx(m[r, c].astype(np.float64).sum(), rel=1e-12)
    assert not negates_inside(NegatedState(state))
