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
- Processes that start together on a fresh cache (test workers, Dask workers, a pool) each
  compiled every kernel they needed, the same kernels at the same time. A compile of a
  cache-enabled function for a signature now first claims it: a lock on a byte of a file next
  to the function's index, keyed by the signature. A process that finds the claim held waits
  for it (at most ``CLAIM_WAIT_S``) and then loads the kernel the other saved, instead of
  compiling it too. A process that ends, however it ends, lets its claims go.
- Numba keys a saved kernel on its own file alone (its modification time and size): a kernel
  that reads a constant of another module, or inlines a function of another file, kept the
  code of the old one after a change of that file alone (a ``git pull`` that touches only the
  constant). A kernel of this package is keyed here also on the contents of every module of
  the package its module imports, directly or through others (``imports_digest``): a change
  of any of them is a cache miss.
"""
from __future__ import annotations

import contextlib
import hashlib
import time
import importlib.util
import itertools
import os
import pickle
import re
import sys

from numba.core import caching

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: Numba's own saves, unlocked
    fcntl = None

_Index = caching.IndexDataCacheFile
_numba_compile = None
_numba_load_index = _Index._load_index
_numba_save = _Index.save
_numba_cache_init = caching.Cache.__init__

#: the packages whose kernels are keyed on their imports too
_OURS = ("epslap", "costfns")

# `from X import names` (names in brackets may span lines) and `import X`
_FROM = re.compile(r"^[ \t]*from[ \t]+([.\w]+)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)", re.M)
_IMPORT = re.compile(r"^[ \t]*import[ \t]+([\w.]+)", re.M)


def _module_file(name: str) -> str | None:
    """The source file of module ``name`` of this package (None: not ours, or not a file),
    found beside its package's files: nothing is imported to find it."""
    top, *rest = name.split(".")
    if top not in _OURS:
        return None
    path = getattr(sys.modules.get(name), "__file__", None)
    if path is None:
        root = getattr(sys.modules.get(top), "__file__", None)
        if root is None:
            spec = importlib.util.find_spec(top)  # a top-level name: nothing runs
            root = getattr(spec, "origin", None)
        if not root:
            return None
        here = os.path.join(os.path.dirname(root), *rest)
        path = next((p for p in (here + ".py", os.path.join(here, "__init__.py"))
                     if os.path.isfile(p)), None)
    return path if path and path.endswith(".py") and os.path.isfile(path) else None


def _imported(name: str, path: str, text: str) -> set:
    """The modules of this package that module ``name`` (source ``text``) imports."""
    package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
    found = set()
    for target, names in _FROM.findall(text):
        try:
            base = importlib.util.resolve_name(target, package) if target.startswith(".") \
                else target
        except (ImportError, ValueError):
            continue
        found.add(base)
        for word in re.findall(r"\w+", re.sub(r"#[^\n]*", "", names)):
            found.add(f"{base}.{word}")  # a submodule, where it is one (else not a file)
    found.update(_IMPORT.findall(text))
    return {m for m in found if m.split(".")[0] in _OURS}


#: module -> (hash of its source, the modules of this package it imports); None: no file
_READ: dict = {}
_DIGESTS: dict = {}


def _read(module: str):
    if module not in _READ:
        path = _module_file(module)
        if path is None:
            _READ[module] = None
        else:
            with open(path, "rb") as fh:
                data = fh.read()
            _READ[module] = (hashlib.sha256(data).digest(),
                             _imported(module, path, data.decode("utf-8", "replace")))
    return _READ[module]


def imports_digest(name: str) -> str:
    """A hash of the sources of module ``name`` and of every module of this package it
    imports, directly or through others."""
    if name not in _DIGESTS:
        seen, todo = set(), [name]
        while todo:
            module = todo.pop()
            if module not in seen:
                seen.add(module)
                read = _read(module)
                if read is not None:
                    todo.extend(read[1])
        hasher = hashlib.sha256()
        for module in sorted(seen):
            read = _read(module)
            if read is not None:
                hasher.update(module.encode() + b"\0" + read[0])
        _DIGESTS[name] = hasher.hexdigest()
    return _DIGESTS[name]


def _cache_init(self, py_func):
    _numba_cache_init(self, py_func)
    module = getattr(py_func, "__module__", None) or ""
    if module.split(".")[0] in _OURS:
        self._cache_file._epslap_module = module  # stamped at its first use (not at import)


def _stamp_with_imports(index) -> None:
    """Numba's source stamp of ``index`` with its module's ``imports_digest`` beside it."""
    module = getattr(index, "_epslap_module", None)
    if module is not None:
        index._epslap_module = None
        index._source_stamp = (index._source_stamp, imports_digest(module))


def _load_index_or_nothing(self):
    _stamp_with_imports(self)
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
    _stamp_with_imports(self)
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


_numba_enable_caching = None
_WARNED_NO_CACHE: list = []


def _enable_caching_where_possible(self) -> None:
    """Numba's ``enable_caching``, or no disk cache for this function where Numba finds no
    writable place for one (no ``__pycache__`` beside the source, no ``NUMBA_CACHE_DIR``, no
    user cache folder): the package imports and solves, compiling in every process, with one
    warning that says how to give it a cache, instead of a traceback at import."""
    try:
        _numba_enable_caching(self)
    except RuntimeError as exc:
        if "no locator available" not in str(exc):
            raise
        self._cache = caching.NullCache()
        if not _WARNED_NO_CACHE:
            _WARNED_NO_CACHE.append(True)
            import warnings
            warnings.warn("epslap: Numba finds no writable folder for its cache of compiled "
                          "kernels here, so every process compiles them again; set "
                          "NUMBA_CACHE_DIR to a writable folder", RuntimeWarning, stacklevel=2)


#: seconds a compile waits at most for another process's claim on the same kernel (then it
#: compiles it itself: a process stopped in a debugger holds its claim)
CLAIM_WAIT_S = 600.0
#: seconds between two looks at a held claim
_CLAIM_POLL_S = 0.02


def _claim_byte(args) -> int:
    """The byte of the claim file that stands for a signature (its text, which holds every
    type's name: a cost state's names carry the fingerprint of its forms)."""
    digest = hashlib.blake2b(repr(tuple(args)).encode(), digest_size=4).digest()
    return int.from_bytes(digest, "little") & 0x7FFFFFFF


@contextlib.contextmanager
def _claimed(path: str, byte: int):
    """Hold the claim on ``byte`` of ``path`` (a POSIX record lock: released by the system
    when the process ends), waiting while another process holds it; unclaimed where the file
    or the lock cannot be had, or after ``CLAIM_WAIT_S``."""
    try:
        fh = open(path, "a")
    except OSError:
        yield
        return
    with fh:
        held = False
        deadline = time.monotonic() + CLAIM_WAIT_S
        while True:
            try:
                fcntl.lockf(fh, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, byte)
                held = True
                break
            except (BlockingIOError, PermissionError):  # another process holds it
                if time.monotonic() >= deadline:
                    break
                time.sleep(_CLAIM_POLL_S)
            except OSError:  # a file system without record locks: unclaimed
                break
        try:
            yield
        finally:
            if held:
                with contextlib.suppress(OSError):
                    fcntl.lockf(fh, fcntl.LOCK_UN, 1, byte)


def _compile_claimed(self, sig):
    """Numba's ``Dispatcher.compile``, under the claim of ``sig`` where the function has a
    disk cache that could hold it: after a wait for another process's claim, Numba's own
    compile finds that process's kernel in the cache and loads it."""
    cache = getattr(self, "_cache", None)
    index = getattr(getattr(cache, "_cache_file", None), "_index_path", None)
    if index is None or fcntl is None or isinstance(cache, caching.NullCache):
        return _numba_compile(self, sig)
    from numba.core import sigutils
    args, _ = sigutils.normalize_signature(sig)
    args = tuple(args)
    if args in self.overloads or _never_loads((args,)):
        return _numba_compile(self, sig)
    with _claimed(index + ".claim", _claim_byte(args)):
        return _numba_compile(self, sig)


def harden() -> None:
    """Put the locked save, the tolerant index load, the keys on imports and the claimed
    compile in place of Numba's (once per process; ``costfns.rows`` does it on import, before
    anything is compiled)."""
    global _numba_enable_caching, _numba_compile
    if not getattr(_Index, "_epslap_hardened", False):
        _Index._epslap_hardened = True
        caching.Cache.__init__ = _cache_init
        from numba.core.dispatcher import Dispatcher
        _numba_enable_caching = Dispatcher.enable_caching
        Dispatcher.enable_caching = _enable_caching_where_possible
        _numba_compile = Dispatcher.compile
        Dispatcher.compile = _compile_claimed
        _Index._load_index = _load_index_or_nothing
        _Index.save = _save
