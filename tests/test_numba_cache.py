"""The hardened Numba disk cache (``costfns._numba_cache``): concurrent saves of different
signatures keep every index entry pointing at its own code, and an index that no longer
unpickles is a miss, not an error."""
from __future__ import annotations

import multiprocessing as mp
import pickle

import pytest

import costfns  # noqa: F401  (installs the hardening)
from numba.core import caching


def _index(tmp_path, stamp=(1.0, 1)):
    return caching.IndexDataCacheFile(str(tmp_path), "fn-1.py311", stamp)


def _save_many(args):
    path, worker = args
    idx = caching.IndexDataCacheFile(path, "fn-1.py311", (1.0, 1))
    for k in range(150):
        key = f"w{worker}-k{k}"
        idx.save(key, key)  # the data is the key itself: a load must give back its own key


def test_concurrent_saves_keep_every_entry_with_its_own_data(tmp_path):
    """Four processes filing 150 signatures each in one index (Numba's own saves, unlocked,
    left 46 of the 600 entries naming another entry's data and lost 171 in this test)."""
    with mp.get_context("spawn").Pool(4) as pool:
        pool.map(_save_many, [(str(tmp_path), w) for w in range(4)])
    idx = _index(tmp_path)
    keys = [f"w{w}-k{k}" for w in range(4) for k in range(150)]
    loaded = {key: idx.load(key) for key in keys}
    assert all(loaded[key] == key for key in keys), "an index entry lost or naming other data"


def test_an_index_that_does_not_unpickle_is_a_miss(tmp_path):
    idx = _index(tmp_path)
    with open(idx._index_path, "wb") as fh:  # an index naming a class that no longer exists
        pickle.dump(idx._version, fh, protocol=-1)
        fh.write(b"\x80\x04\x95\x1c\x00\x00\x00\x00\x00\x00\x00\x8c\x0fcostfns.sources"
                 b"\x94\x8c\x0b_GoneState\x94\x93\x94.")
    assert idx.load("anything") is None
    idx.save("key", "data")  # and the next save rewrites it
    assert idx.load("key") == "data"


def test_a_file_system_without_locks_saves_unlocked(tmp_path, monkeypatch):
    """Where flock fails (some network mounts), a save goes ahead as Numba's own would."""
    import errno

    from costfns import _numba_cache

    def no_flock(fh, op):
        raise OSError(errno.ENOSYS, "Function not implemented")
    monkeypatch.setattr(_numba_cache.fcntl, "flock", no_flock)
    idx = _index(tmp_path)
    idx.save("key", "data")
    assert idx.load("key") == "data"


def test_a_signature_holding_a_jitted_function_is_not_saved(tmp_path):
    """Kernels compiled for a function itself (``specialize=True``) never match in a later
    process; Numba saved them again in every process, each under a new data file."""
    import os
    import subprocess
    import sys
    (tmp_path / "userfns.py").write_text(
        "from numba import njit\n"
        "@njit(cache=True)\n"
        "def inner(x):\n    return x + 1\n"
        "@njit(cache=True)\n"
        "def outer(fn, x):\n    return fn(x) * 2\n")
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(tmp_path), *sys.path]))
    for _ in range(2):
        subprocess.run([sys.executable, "-c", "import costfns, userfns; "
                        "assert userfns.outer(userfns.inner, 3) == 8"], env=env, check=True)
    saved = sorted(p.name for p in (tmp_path / "cache").rglob("*.nbc"))
    assert any(name.startswith("userfns.inner") for name in saved), saved
    assert not any(name.startswith("userfns.outer") for name in saved), saved


def test_kernel_tables_are_readied_once_per_kind_of_arguments():
    """``cpu.host.compile_kernels`` looks a table up by its arguments' kinds (dtype,
    dimensions, layout): a second table of the same kinds returns at once; a new dtype or
    layout compiles its own overload."""
    import numpy as np
    from numba import njit

    from epslap.cpu.host import compile_kernels

    @njit
    def kernel(a, x):
        return a.sum() + x

    assert compile_kernels([(kernel, (np.zeros(3), 1.0))]) > 0.0
    assert compile_kernels([(kernel, (np.ones(5), 2.0))]) == 0.0
    assert len(kernel.overloads) == 1
    compile_kernels([(kernel, (np.zeros(3, np.int64), 1.0))])
    compile_kernels([(kernel, (np.zeros((2, 2))[:, 0], 1.0))])  # a strided view
    assert len(kernel.overloads) == 3
    assert compile_kernels([(kernel, (np.zeros((4, 3))[:, 1], 5.0))]) == 0.0


def test_a_kernel_is_keyed_on_the_modules_its_module_imports(tmp_path, monkeypatch):
    """Numba keys a saved kernel on its own file alone; a kernel of this package also reads
    constants and inlines functions of the modules it imports (``epslap._exact``'s tolerances
    in the small path). A change of such a module's source (here its recorded hash) makes the
    saved kernel a miss; unchanged sources find it."""
    import numba

    from costfns import _numba_cache
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path))
    _numba_cache.imports_digest("epslap.cpu.small")
    assert {"epslap._exact", "epslap.cpu.jv"} <= set(_numba_cache._READ)

    def kernel_of_the_small_path():
        def kernel(x):
            return x + 1
        kernel.__module__ = "epslap.cpu.small"
        return numba.njit(cache=True)(kernel)

    assert kernel_of_the_small_path()(1) == 2  # compiled and saved
    assert kernel_of_the_small_path()._cache._cache_file._load_index()  # found again
    source_hash, imports = _numba_cache._READ["epslap._exact"]
    monkeypatch.setitem(_numba_cache._READ, "epslap._exact", (b"another source", imports))
    monkeypatch.setattr(_numba_cache, "_DIGESTS", {})
    assert kernel_of_the_small_path()._cache._cache_file._load_index() == {}
    monkeypatch.setitem(_numba_cache._READ, "epslap._exact", (source_hash, imports))
    monkeypatch.setattr(_numba_cache, "_DIGESTS", {})
    assert kernel_of_the_small_path()._cache._cache_file._load_index()


def test_no_writable_cache_folder_means_no_disk_cache_not_a_failed_import(monkeypatch):
    """Where Numba finds no writable place for a function's cache (no ``__pycache__`` beside
    the source, ``NUMBA_CACHE_DIR`` and the user's cache folder unwritable) its
    ``enable_caching`` raised at the decorator, and ``import epslap`` failed with a traceback:
    the function now compiles without a disk cache, with one warning naming NUMBA_CACHE_DIR."""
    import warnings

    from numba.core import caching

    import costfns._numba_cache as nc

    def no_locator(self):
        raise RuntimeError("cannot cache function 'f': no locator available for file 'x.py'")
    monkeypatch.setattr(nc, "_numba_enable_caching", no_locator)
    monkeypatch.setattr(nc, "_WARNED_NO_CACHE", [])

    class Dispatcher:
        _cache = None
    first, second = Dispatcher(), Dispatcher()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        nc._enable_caching_where_possible(first)
        nc._enable_caching_where_possible(second)
    assert isinstance(first._cache, caching.NullCache)
    assert isinstance(second._cache, caching.NullCache)
    assert len(seen) == 1 and "NUMBA_CACHE_DIR" in str(seen[0].message)

    def other(self):
        raise RuntimeError("something else")
    monkeypatch.setattr(nc, "_numba_enable_caching", other)
    with pytest.raises(RuntimeError, match="something else"):
        nc._enable_caching_where_possible(Dispatcher())



_CLAIMING = '''
import os, sys, time
import costfns  # the claimed compiles
import costfns._numba_cache as nc
import numba.core.event as ev
hold, nc.CLAIM_WAIT_S = sys.argv[1] == "hold", float(sys.argv[2])
compiled = []
class Listener(ev.Listener):
    def on_start(self, event):
        compiled.append(event.data["dispatcher"].py_func.__name__)
        print("compiling", flush=True)
        while hold and not os.path.exists("release"):  # a long compile, its claim held
            time.sleep(0.01)
    def on_end(self, event):
        pass
ev.register("numba:compile", Listener())
import kernel
kernel.plus_one(1)
print("compiled", compiled, "loaded", sum(kernel.plus_one.stats.cache_hits.values()),
      flush=True)
'''


def _claiming_pair(tmp_path, second_wait_s, release_after_s=None):
    """A first process compiles a cached kernel and holds its compile until the second has
    ended (or, with ``release_after_s``, until the second has run that long without ending);
    the second asks for the same kernel meanwhile. Returns the second's last line."""
    import os
    import subprocess
    import sys
    (tmp_path / "kernel.py").write_text(
        "from numba import njit\n\n@njit(cache=True)\ndef plus_one(x):\n    return x + 1\n")
    (tmp_path / "claiming.py").write_text(_CLAIMING)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path)] + sys.path),
               NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    first = subprocess.Popen([sys.executable, "claiming.py", "hold", "600"], cwd=tmp_path,
                             env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert first.stdout.readline().strip() == "compiling"
        second = subprocess.Popen([sys.executable, "claiming.py", "go", str(second_wait_s)],
                                  cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        try:
            out, err = second.communicate(timeout=release_after_s or 120)
        except subprocess.TimeoutExpired:  # still under way: waiting, as it should
            (tmp_path / "release").touch()
            out, err = second.communicate(timeout=120)
    finally:
        (tmp_path / "release").touch()
        first.wait(60)
    assert second.returncode == 0, err
    assert "compiled ['plus_one']" in first.stdout.read()
    return out.strip().splitlines()[-1]


def test_a_kernel_another_process_is_compiling_is_waited_for_and_loaded(tmp_path):
    """Processes that start together on a fresh cache compiled the same kernels side by side
    (the test workers did, for about a sixth of a cold suite's compile time): the second now
    waits for the first's claim and loads what it saved (without the claim it compiles too:
    "compiled ['plus_one'] loaded 0")."""
    assert _claiming_pair(tmp_path, second_wait_s=600, release_after_s=1.5) == "compiled [] loaded 1"


def test_a_claim_held_too_long_is_not_waited_for(tmp_path):
    """A process that holds its claim longer than ``CLAIM_WAIT_S`` (stopped in a debugger,
    say) delays the others by that much at most: they compile the kernel themselves."""
    assert _claiming_pair(tmp_path, second_wait_s=0.2) == "compiled ['plus_one'] loaded 0"
