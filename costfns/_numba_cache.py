"""Numba's disk cache, made safe for processes that compile at the same time and kept working
across upgrades of this package.

- Numba files a new compiled signature under the first data-file number its index does not use,
  and writes the index before the data. Two processes compiling different signatures of one
  kernel at once (test workers, Dask workers, parallel jobs on a fresh install) can both take
  number 1: the index one writes may then name the code the other wrote, compiled for other
  argument types, and a later process loads that code for the wrong types (seen as "can't unbox
  array from PyObject"; silently wrong where the layouts agree). Here a save holds an exclusive
  lock on a file next to the index while it reads the index, picks the number, and writes the
  data before the index.
- An index pickles the Numba types of its signatures, with the classes of cost-source states by
  their module paths, and Numba unpickles it before it checks whether it is fresh: an index
  written by an older version whose state class is gone raised inside the first solve instead
  of being the cache miss it is. Such an index is read here as empty (it is rewritten at the
  next save).
- A signature that holds a jitted function's own type (``specialize=True`` sources: the kernels
  compiled for that very function) never matches in a later process, whose function is another
  object: Numba saved it again in every process, under a new data file each time, so the cache
  grew without bound. Such signatures are not saved.
"""
from __future__ import annotations

import contextlib
import itertools
import pickle

from numba.core import caching

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: Numba's own saves, unlocked
    fcntl = None

_Index = caching.IndexDataCacheFile
_numba_load_index = _Index._load_index
_numba_save = _Index.save


def _load_index_or_nothing(self):
    try:
        return _numba_load_index(self)
    except (AttributeError, ImportError, EOFError, pickle.UnpicklingError, TypeError,
            ValueError):
        return {}


@contextlib.contextmanager
def _locked(index_path: str):
    """An exclusive lock for the saves of one index (none where it cannot be taken: the save
    then goes ahead as Numba's own would)."""
    try:
        fh = open(index_path + ".lock", "a")
    except OSError:
        yield
        return
    with fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX)
        except OSError:  # a file system without flock (e.g. some network mounts): unlocked
            yield
            return
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _never_loads(key) -> bool:
    """Whether an index key's signature holds a dispatcher's type (a jitted function itself,
    keyed on this process's object): such an entry would never be loaded."""
    return "Dispatcher(" in str(key[0] if isinstance(key, tuple) and key else key)


def _save(self, key, data):
    if _never_loads(key):
        return
    if fcntl is None:  # not POSIX: Numba's own save, unlocked
        _numba_save(self, key, data)
        return
    with _locked(self._index_path):
        overloads = self._load_index()
        name = overloads.get(key)
        if name is None:
            taken = set(overloads.values())
            name = next(n for n in map(self._data_name, itertools.count(1)) if n not in taken)
        self._save_data(name, data)  # the data first: an index entry always names its code
        if overloads.get(key) != name:
            overloads[key] = name
            self._save_index(overloads)


def harden() -> None:
    """Put the locked save and the tolerant index load in place of Numba's (once per
    process; ``costfns.rows`` does it on import, before anything is compiled)."""
    if not getattr(_Index, "_epslap_hardened", False):
        _Index._epslap_hardened = True
        _Index._load_index = _load_index_or_nothing
        _Index.save = _save
