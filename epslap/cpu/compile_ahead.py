"""Compile in a second process the kernels a solve needs later, while this process compiles
and runs what it needs first.

Numba compiles on one core, and a solve's first use in a fresh environment compiles its steps
one after another: the candidates method its scans, then the sparse solve (about 6 s of a
first 8000 x 8000 solve on a user's function, each step 1-3 s); the dense ε method the
estimate, then the pass loop (about 35 s for a matrix). Where a core is free,
:func:`start` hands a later step's kernels to a child process (``python -m
epslap.cpu.compile_ahead``), which compiles them into Numba's disk cache, first to last. When
the solve reaches that step, ``host.compile_kernels`` compiles the same kernels from the last
(:func:`meet_in_the_middle`): each kernel the child has finished is loaded from the disk cache,
the one it is compiling at that moment is waited for (:func:`wait_if_compiling`), those it has
not started are compiled here; so the two meet in the middle, and the child is stopped
(:func:`finish`). Only kernels that are neither compiled here nor on disk go, and
nothing goes where the disk cache is off; the cache's saves are locked for processes that
compile at the same time (``costfns._numba_cache``). A child that fails costs nothing but the
core it ran on.

``EPSLAP_COMPILE_AHEAD``: ``0`` never starts a child; ``1`` starts one whenever a kernel is
missing (tests); unset, one starts when this process may run on a core that no other process
holds now (``cores.other_running``).
"""
from __future__ import annotations

import importlib
import os
import pickle
import subprocess
import sys
import threading

import numba
from numba.core.caching import NullCache

from .._sync import available_cores
from .cores import other_running

#: the environment variable that turns the child off ("0") or on whatever the load ("1")
ENV = "EPSLAP_COMPILE_AHEAD"
#: seconds this process waits at most for a child to end the kernel it is compiling
WAIT_S = 120.0
#: (dispatcher, signature) -> the child (:class:`Child`) compiling it
_PENDING: dict = {}


def on_disk(dispatcher, sig) -> bool:
    """Whether Numba's disk cache holds ``dispatcher`` for ``sig``: its index (current for the
    source, else empty) names that signature, for this machine or another. Read through the
    dispatcher's cache object, which Numba does not document: where that fails, True (nothing
    is handed over; the caller compiles as before). About 0.3 ms a look."""
    try:
        return any(key[0] == sig for key in dispatcher._cache._cache_file._load_index())
    except Exception:  # noqa: BLE001 - any change of Numba's internals: the old behaviour
        return True


def missing(kernels) -> list:
    """The ``(dispatcher, signature)`` of the (dispatcher, arguments) in ``kernels`` that this
    process has not compiled, that no child is compiling, and that Numba's disk cache could
    hold but does not."""
    todo = []
    for dispatcher, args in kernels:
        sig = _sig(args)
        if (sig in dispatcher.overloads or (dispatcher, sig) in _PENDING
                or isinstance(dispatcher._cache, NullCache) or on_disk(dispatcher, sig)):
            continue
        todo.append((dispatcher, sig))
    return todo


def _core_free() -> bool:
    """Whether a core is free for a child beside this process's own."""
    return available_cores() - other_running() >= 2


def start(kernels) -> int:
    """Hand the kernels of ``kernels`` (dispatcher, arguments) that are missing (:func:`missing`)
    to a child process where a core is free; the number handed over."""
    mode = os.environ.get(ENV, "")
    if mode == "0" or getattr(sys, "frozen", False):  # (a frozen program's executable is the
        return 0  # program itself, not an interpreter that runs this module)
    todo = missing(kernels)
    if not todo or (mode != "1" and not _core_free()):
        return 0
    try:
        payload = pickle.dumps([(d.py_func.__module__, d.py_func.__qualname__, sig)
                                for d, sig in todo])
    except Exception:  # noqa: BLE001 - a type that does not pickle: compiled here when needed
        return 0
    # the child imports what this process imports (a path added at run time included)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    try:
        proc = subprocess.Popen([sys.executable, "-m", __name__], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                                creationflags=getattr(subprocess, "CREATE_NO_WINDOW", 0))
    except (OSError, ValueError, TypeError):  # no interpreter to start (an embedded Python):
        return 0  # this process compiles them when it needs them
    child = Child(proc, todo)
    try:
        proc.stdin.write(payload)
        proc.stdin.close()
    except OSError:  # the child ended at once
        stop(child)
        return 0
    for key in todo:
        _PENDING[key] = child
    return len(todo)


class Child:
    """A child process that compiles ``keys`` ((dispatcher, signature)) in their order, and
    how far it has come: it prints a line as each kernel is saved (read by a thread here)."""

    def __init__(self, proc, keys):
        self.proc, self.keys = proc, list(keys)
        self.done = 0  # kernels finished, from the first
        self.ended = False
        self.changed = threading.Condition()
        threading.Thread(target=self._follow, name="epslap-compile-ahead", daemon=True).start()

    def _follow(self) -> None:
        for _ in self.proc.stdout:
            with self.changed:
                self.done += 1
                self.changed.notify_all()
        self.proc.wait()  # it has closed its output: reaped as it ends, whoever waits or not
        with self.changed:
            self.ended = True
            self.changed.notify_all()

    def wait_if_compiling(self, key) -> None:
        """Wait while the child compiles ``key`` now (at most WAIT_S): it started it before
        this process would, so it ends it sooner. A kernel it has not started is not waited
        for."""
        at = self.keys.index(key)
        with self.changed:
            self.changed.wait_for(lambda: self.ended or self.done != at, WAIT_S)


def wait_if_compiling(dispatcher, sig) -> None:
    """Before this process compiles ``dispatcher`` for ``sig``: where a child is compiling
    that very kernel now, wait for it (Numba then loads it from the disk cache)."""
    child = _PENDING.get((dispatcher, sig)) if _PENDING else None
    if child is not None:
        child.wait_if_compiling((dispatcher, sig))


def meet_in_the_middle(kernels) -> list:
    """``kernels`` in the order this process should compile them: first those no child
    compiles, then a child's from the last (the child goes from the first; each loads from the
    disk cache what the other has finished), so that a solve that reaches a step before its
    child is done never waits for it; as they are where no child compiles any."""
    if not _PENDING:
        return kernels
    theirs = [(dispatcher, _sig(args)) in _PENDING for dispatcher, args in kernels]
    if not any(theirs):
        return kernels
    return ([kernel for kernel, t in zip(kernels, theirs) if not t]
            + [kernel for kernel, t in zip(kernels[::-1], theirs[::-1]) if t])


def finish(kernels) -> None:
    """This process has compiled or loaded ``kernels``: they are no longer the child's; a
    child left with nothing this process waits for is stopped (what it saved stays saved: each
    save writes its data, then the index, each file whole)."""
    if not _PENDING:
        return
    children = set()
    for dispatcher, args in kernels:
        child = _PENDING.pop((dispatcher, _sig(args)), None)
        if child is not None:
            children.add(child)
    for child in children - set(_PENDING.values()):
        stop(child)


def stop(child: Child) -> None:
    """Stop a child (one already ended is reaped)."""
    proc = child.proc
    if proc.poll() is None:
        proc.terminate()
    try:
        proc.wait(5.0)
    except subprocess.TimeoutExpired:  # pragma: no cover - a child that ignores SIGTERM
        proc.kill()
        proc.wait()


def stop_all() -> None:
    """Stop every child (a solve that will not reach the steps they compile)."""
    children = set(_PENDING.values())
    _PENDING.clear()
    for child in children:
        stop(child)


def _sig(args) -> tuple:
    return tuple(numba.typeof(a) for a in args)


def pending() -> int:
    """Kernels handed to a child that this process has not compiled or loaded yet."""
    return len(_PENDING)


def _compile_all(payload: bytes) -> int:
    """The child's work: compile every (module, name, signature) of ``payload``; the number
    that failed (each is then compiled by the solve itself)."""
    importlib.import_module("costfns.rows")  # the locked disk-cache saves, before any compile
    failed = 0
    for module, qualname, sig in pickle.loads(payload):
        try:
            obj = importlib.import_module(module)
            for part in qualname.split("."):
                obj = getattr(obj, part)
            obj.compile(sig)
        except Exception:  # noqa: BLE001 - the parent compiles what the child could not
            failed += 1
        print(flush=True)  # one line per kernel done (``Child``)
    return failed


if __name__ == "__main__":
    sys.exit(1 if _compile_all(sys.stdin.buffer.read()) else 0)
