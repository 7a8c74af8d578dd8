"""Row access for the compiled solver: generic ``get_row``, ``get_row_part`` and ``cost_at`` that
every cost source plugs into.

The solver loop is written once and calls ``get_row(src, i, buf)``; Numba specialises it per
source *type* at compile time (no Python round trip, no per-call dispatch). A source is either a
2-D NumPy array (dense, any supported dtype: rows are views ``src[i]``) or the state of a computed
source: a ``typing.NamedTuple`` of arrays and scalars whose class is registered with
:func:`cost_forms`::

    @cost_forms(entry=_my_at)
    class _MyState(NamedTuple):
        ...

with up to three jitted forms of the source's formula:

- ``entry(state, i, j)``: entry (i, j);
- ``row(state, i, buf)``: row ``i``, written into ``buf`` (length n2) and returned;
- ``part(state, i, lo, hi, buf)``: columns ``lo … hi-1`` of row ``i`` as an array of length
  ``hi - lo``, written into ``buf[lo:hi]`` (a view of equal values may be returned instead).

The forms a source leaves out are derived here, inside the overloads:

- row: the ``row`` form; else ``part(state, i, 0, n2, buf)`` (copied into ``buf`` where the part
  is a view); else a loop over the entries;
- row slice: the ``part`` form; else a loop over the slice's entries; else the row, sliced;
- entry (``cost_at``, read without the row): only from an ``entry`` form.

The entry form is what a new source writes (``inline="always"``, so that the derived loops
compile to the same code as a hand-written one). A row or part form is worth writing only where it
is measurably faster than the derived loop (a loop order that vectorises, a view instead of a
copy, a cache, a Python callback); every form of a source must give bit-identical values.
``wraps_inner=True`` marks a wrapper (a row cache, a negation) whose field ``inner`` is another
source: it has random access exactly when ``inner`` has. A class is registered once, before its
first use.

A registered class is compiled into the kernels as its own type. The built-in classes instead
reach them type-erased (:func:`erased`): their data in a fixed layout and their forms behind two
compiled trampolines called through function pointers, so that one set of kernels per cost dtype
serves every one of them, and every row cache or negation around them.

Numba's disk cache files a compiled kernel under the kernel's own source file and its argument
types, so the Numba type of a registered state carries a fingerprint of its forms' source files
(``_fingerprint``): a kernel cached for the old forms is not loaded after a form, a function it
calls or a registration changes in another file; it is compiled anew.
"""
from __future__ import annotations

import hashlib
import marshal
from collections.abc import Callable
from types import CodeType, FunctionType
from typing import Any, NamedTuple

import numpy as np
from numba import njit, typeof, types
from numba.core.datamodel import models
from numba.core.errors import TypingError
from numba.extending import overload, register_model, typeof_impl

from ._numba_cache import harden
from ._python_rows import python_row_fill

harden()  # locked cache saves; obsolete cache indexes read as misses


class CostForms(NamedTuple):
    """The jitted forms registered for one state class (``None``: derived, or absent)."""

    entry: Any
    row: Any
    part: Any
    wraps_inner: bool
    entry_usable: Any = None  # jitted state -> bool: whether ``entry`` serves this state


_FORMS: dict[type, CostForms] = {}
_FINGERPRINTS: dict[type, str] = {}
_FIELD_TYPES: dict[type, Callable] = {}


class _FormedTuple(types.NamedTuple):
    """The Numba type of a registered state (fields of different types): a ``NamedTuple`` type
    whose key also holds the fingerprint of the class's forms (see :func:`_fingerprint`)."""

    def __init__(self, tys, cls, fingerprint: str):
        self.fingerprint = fingerprint
        super().__init__(tys, cls)
        self.name = f"{self.name}[forms {fingerprint}]"

    @property
    def key(self):
        return self.instance_class, self.types, self.fingerprint


class _FormedUniTuple(types.NamedUniTuple):
    """:class:`_FormedTuple` for a state whose fields are all of one type."""

    def __init__(self, dtype, count, cls, fingerprint: str):
        self.fingerprint = fingerprint
        super().__init__(dtype, count, cls)
        self.name = f"{self.name}[forms {fingerprint}]"

    @property
    def key(self):
        return self.instance_class, self.dtype, self.count, self.fingerprint


register_model(_FormedTuple)(models.TupleModel)
register_model(_FormedUniTuple)(models.UniTupleModel)


def _typeof_state(val, c):
    """``numba.typeof`` of a registered state: Numba's type of the named tuple, fingerprinted
    (its fields typed by the class's ``field_types`` where it gives them)."""
    hook = _FIELD_TYPES.get(type(val))
    tys = hook(val) if hook is not None else [typeof_impl(v, c) for v in val]
    if any(t is None for t in tys):
        return None
    tys = [types.unliteral(t) for t in tys]
    cls = type(val)
    if tys and all(t == tys[0] for t in tys):
        return _FormedUniTuple(tys[0], len(tys), cls, _FINGERPRINTS[cls])
    return _FormedTuple(tys, cls, _FINGERPRINTS[cls])


def _fingerprint(cls: type, forms: CostForms) -> str:
    """A hash of everything a compiled use of ``cls`` depends on: this module (the derived forms)
    and every source file defining a form or a function a form names, transitively.

    It is part of the state's Numba type, hence of the key under which Numba's disk cache files a
    kernel compiled for the state: a kernel keys on its own source file only, and would otherwise
    keep running the forms it was compiled with after a form or a registration changes in
    another file. A change of such a file recompiles the kernels that use the state."""
    files: dict[str, bytes] = {}
    seen: set[int] = set()

    def add_file(path: str, code: CodeType | None) -> None:
        if path not in files:
            try:
                with open(path, "rb") as fh:
                    files[path] = fh.read()
            except OSError:  # no source file (an interactive session): the code itself
                files[path] = b"" if code is None else marshal.dumps(code)

    def visit(obj) -> None:
        fn = getattr(obj, "py_func", obj)  # a Numba dispatcher: its Python function
        if not isinstance(fn, FunctionType) or id(fn) in seen:
            return
        seen.add(id(fn))
        add_file(fn.__code__.co_filename, fn.__code__)
        codes = [fn.__code__]
        for code in codes:  # nested functions and comprehensions too
            codes.extend(c for c in code.co_consts if isinstance(c, CodeType))
            for name in code.co_names:
                visit(fn.__globals__.get(name))
        for cell in fn.__closure__ or ():
            visit(cell.cell_contents)

    add_file(__file__, None)
    for form in (forms.entry, forms.row, forms.part, forms.entry_usable):
        visit(form)
    names = [getattr(getattr(f, "py_func", f), "__qualname__", repr(f)) for f in forms]
    h = hashlib.sha256(repr((cls.__module__, cls.__qualname__, names)).encode())
    for path in sorted(files):
        h.update(files[path])
    return h.hexdigest()[:16]


def cost_forms(*, entry: Callable | None = None, row: Callable | None = None,
               part: Callable | None = None, wraps_inner: bool = False,
               field_types: Callable | None = None,
               entry_usable: Callable | None = None) -> Callable[[type], type]:
    """Class decorator: register the jitted forms of a ``typing.NamedTuple`` state class.

    ``field_types(state)``, optional, gives the Numba types of a state's fields instead of
    ``numba.typeof`` of each (e.g. a first-class function type for a field holding a jitted
    function, so that kernels compiled for it do not depend on which function it is).
    ``entry_usable(state)``, optional, jitted: whether the ``entry`` form serves this state, for
    a class whose states of one type differ in that (``random_access`` is then a run-time
    value; a kernel never calls ``entry`` on a state where it is False).

    ``entry(state, i, j)`` returns entry (i, j); ``row(state, i, buf)`` writes row ``i`` into
    ``buf`` (length n2) and returns it (or returns a view of equal values);
    ``part(state, i, lo, hi, buf)`` returns columns ``lo … hi-1`` of row ``i`` as an array of
    length ``hi - lo``, computed into ``buf[lo:hi]`` (or a view). At least one form is required;
    the others are derived (see the module docstring). The class is returned unchanged.
    """
    given = {"entry": entry, "row": row, "part": part}
    if all(form is None for form in given.values()):
        raise TypeError("cost_forms needs at least one form (entry, row or part)")
    for name, form in given.items():
        if form is not None and not callable(form):
            raise TypeError(f"cost_forms: {name} must be a jitted function, got "
                            f"{type(form).__name__}")

    def register(cls: type) -> type:
        if not (isinstance(cls, type) and issubclass(cls, tuple) and hasattr(cls, "_fields")):
            raise TypeError(f"cost_forms registers typing.NamedTuple state classes, got {cls!r}")
        if cls in _FORMS:  # Numba maps a class's values to the type it first saw, in-process
            raise TypeError(f"cost_forms: {cls.__qualname__} is registered already")
        if wraps_inner and "inner" not in cls._fields:
            raise TypeError(f"cost_forms: {cls.__name__} wraps_inner=True needs a field 'inner'")
        forms = CostForms(entry, row, part, bool(wraps_inner), entry_usable)
        _FORMS[cls] = forms
        _FINGERPRINTS[cls] = _fingerprint(cls, forms)
        if field_types is not None:
            _FIELD_TYPES[cls] = field_types
        typeof_impl.register(cls)(_typeof_state)
        return cls
    return register


def forms_of(cls: type) -> CostForms | None:
    """The forms registered for state class ``cls`` (``None`` where it is not registered)."""
    return _FORMS.get(cls)


def has_part_form(cls: type) -> bool:
    """Whether states of ``cls`` compute a row slice without the whole row: a registered class
    with a ``part`` or an ``entry`` form (the slice derived from its entries)."""
    forms = _FORMS.get(cls)
    return forms is not None and (forms.part is not None or forms.entry is not None)


def _forms_for(typ, what: str) -> CostForms:
    """Compile time: the forms of the state type ``typ``, or a typing error naming the fix."""
    forms = _FORMS.get(typ.instance_class)
    if forms is None:
        raise TypingError(f"{what}: {typ.instance_class.__qualname__} is not a registered cost "
                          "source; decorate its state class with costfns.rows.cost_forms")
    return forms


def _is_dense(typ) -> bool:
    return isinstance(typ, types.Array) and typ.ndim == 2


def _row_impl(forms: CostForms):
    """The row form of ``forms``, given or derived (a closure over the registered forms)."""
    row, part, entry = forms.row, forms.part, forms.entry
    if row is not None:
        def given_row(src, i, buf):
            return row(src, i, buf)
        return given_row
    if part is not None:
        def row_from_part(src, i, buf):
            out = part(src, i, 0, buf.shape[0], buf)
            if out.ctypes.data != buf.ctypes.data:  # a view of the source's own data
                for j in range(buf.shape[0]):
                    buf[j] = out[j]
            # buf itself, not the slice buf[0:n2]: a caller's copy of the row into buf is then
            # seen to be a no-op (measured: fill_rows 1.8x faster)
            return buf
        return row_from_part

    def row_from_entries(src, i, buf):
        for j in range(buf.shape[0]):
            buf[j] = entry(src, i, j)
        return buf
    return row_from_entries


def get_row(src, i, buf):  # pragma: no cover - only ever called from compiled code
    """Return row ``i`` of cost source ``src`` (a view, or ``buf`` filled in)."""
    raise NotImplementedError("get_row is only available inside Numba-compiled code")


@overload(get_row, jit_options={"cache": True, "nogil": True})
def _get_row_overload(src, i, buf):
    if _is_dense(src):
        def dense_row(src, i, buf):
            return src[i]
        return dense_row
    if isinstance(src, types.BaseNamedTuple):
        return _row_impl(_forms_for(src, "get_row"))
    return None


def get_row_part(src, i, lo, hi, buf):  # pragma: no cover - only ever called from compiled code
    """Columns ``lo … hi-1`` of row ``i`` as an array of length ``hi - lo``.

    ``buf`` is a full-length (n2) scratch row; a source that computes the part writes it into
    ``buf[lo:hi]``. Used by the column-partitioned kernel: each thread touches only its slice.
    """
    raise NotImplementedError("get_row_part is only available inside Numba-compiled code")


@overload(get_row_part, jit_options={"cache": True, "nogil": True})
def _get_row_part_overload(src, i, lo, hi, buf):
    if _is_dense(src):
        def dense_part(src, i, lo, hi, buf):
            return src[i, lo:hi]
        return dense_part
    if not isinstance(src, types.BaseNamedTuple):
        return None
    forms = _forms_for(src, "get_row_part")
    part, entry = forms.part, forms.entry
    if part is not None:
        def given_part(src, i, lo, hi, buf):
            return part(src, i, lo, hi, buf)
        return given_part
    if entry is not None:
        def part_from_entries(src, i, lo, hi, buf):
            out = buf[lo:hi]
            # lo >= 0 always; the test tells LLVM that lo + t is no negative index, whose
            # wraparound select per entry would stop vectorisation (measured: 4x slower)
            if lo >= 0:
                for t in range(hi - lo):
                    out[t] = entry(src, i, lo + t)
            return out
        return part_from_entries
    row = forms.row  # the only form given

    def whole_then_part(src, i, lo, hi, buf):  # no partial form: the whole row, sliced
        return row(src, i, buf)[lo:hi]
    return whole_then_part


def _has_random_access(typ) -> bool:
    """Compile time: whether single entries of a source of Numba type ``typ`` can be read
    without its row — a dense array; a registered state with an ``entry`` form, unless it wraps
    (``wraps_inner``) a source without random access."""
    if _is_dense(typ):
        return True
    if isinstance(typ, types.BaseNamedTuple):
        forms = _FORMS.get(typ.instance_class)
        if forms is None or forms.entry is None:
            return False
        if forms.wraps_inner:
            return _has_random_access(typ.types[typ.instance_class._fields.index("inner")])
        return True
    return False


def random_access(src):  # pragma: no cover - only ever called from compiled code
    """True where ``cost_at`` reads one entry without a row: a compile-time constant, or a
    run-time value for a class with ``entry_usable`` (an erased state holding a row function). The pass
    kernel then needs no per-column copy of the improving edge's cost (``track``), which halves
    the work of a scanned row (measured: 2.57 vs 1.20 ns per column at n = 32000)."""
    raise NotImplementedError


@overload(random_access, jit_options={"cache": True, "nogil": True})
def _random_access_overload(src):
    if not _has_random_access(src):
        return lambda src: False
    if isinstance(src, types.BaseNamedTuple):
        forms = _FORMS[src.instance_class]
        if forms.wraps_inner:
            return lambda src: random_access(src.inner)
        usable = forms.entry_usable
        if usable is not None:
            return lambda src: usable(src)
    return lambda src: True


def cost_at(src, i, j):  # pragma: no cover - only ever called from compiled code
    """Entry (i, j) of a source with ``random_access``; 0 for any other (never called there)."""
    raise NotImplementedError


@overload(cost_at, jit_options={"cache": True, "nogil": True})
def _cost_at_overload(src, i, j):
    if _is_dense(src):
        return lambda src, i, j: src[i, j]
    if _has_random_access(src):
        entry = _FORMS[src.instance_class].entry

        def given_at(src, i, j):
            return entry(src, i, j)
        return given_at
    return lambda src, i, j: 0


@njit(cache=True, nogil=True)
def fill_rows(state, start, out):
    """out[k] = row ``start + k`` of the source ``state``, serially, for every k < len(out): rows
    copied out of compiled code (a source that returns views of its own rows, too)."""
    for k in range(out.shape[0]):
        row = get_row(state, start + k, out[k])
        for j in range(out.shape[1]):  # a no-op when the source filled out[k] itself
            out[k, j] = row[j]


# ---- type-erased states: one compiled kernel for every built-in class of a dtype ----------------
#
# The kernels are compiled per Numba type of the source state, and a class's state type is its
# own: each class (and each wrapper around it: a row cache, a negation) cost the solver's kernels
# a compile of their own (about 15 s per class for the estimate and the passes). A class that
# packs its data into the fixed layout (``a``, ``b``: 2-D float64 arrays, ``k``: int64 scalars)
# and gives two compiled trampolines of fixed signatures, its entry and its row slice, reaches
# the kernels as an :class:`ErasedState`: a state type that depends only on the cost dtype. The
# kernels call the trampolines through function pointers, once per row slice (the formula's loop
# is compiled inside the trampoline, as before) and once per entry read without its row.
# A matrix (``costfns.Dense``, ``costfns.OnDisk``) reaches the same kernels as an erased state
# whose field ``m`` holds it (2-D, of the cost dtype; empty for a class): entries and row slices
# are then read from ``m`` directly (slices as views), and the trampolines are never called. A
# user's jitted element function fn(i, j) does too, in the field ``user`` (``calls_user``), and
# a user's row function (``calls_row``): a jitted fn(i, row) in the field ``row_fn``, or a plain
# Python function by its ``key`` (object mode). A row function has no entry without its row:
# ``random_access`` is False for such a state, at run time (the kernels hold both paths).

_F2 = types.Array(types.float64, 2, "C")
_K = types.Array(types.int64, 1, "C")


def _cost_type(dtype):
    return types.unliteral(typeof(np.dtype(dtype).type(0)))


def erased_signatures(dtype) -> tuple:
    """(entry, part) signatures of the trampolines for cost ``dtype``: ``entry(a, b, k, i, j)``
    returns entry (i, j); ``part(a, b, k, i, lo, hi, buf)`` writes columns ``lo … hi-1`` of
    row ``i`` into ``buf[lo:hi]``. A trampoline calls only forms of its own file: Numba's disk
    cache keys it on that file alone."""
    ty = _cost_type(dtype)
    buf = types.Array(ty, 1, "C")
    return (ty(_F2, _F2, _K, types.int64, types.int64),
            types.none(_F2, _F2, _K, types.int64, types.int64, types.int64, buf))


def user_entry_signature(dtype):
    """``fn(i, j) -> cost`` of a user's jitted element function for cost ``dtype``."""
    ty = _cost_type(dtype)
    return ty(types.int64, types.int64)


def user_row_signature(dtype):
    """``fn(i, row) -> None`` of a user's jitted row function for cost ``dtype``."""
    return types.none(types.int64, types.Array(_cost_type(dtype), 1, "C"))


def _erased_field_types(state):
    dt = state.zero.dtype
    entry, part = erased_signatures(dt)
    ty = entry.return_type
    return [types.FunctionType(entry), types.FunctionType(part), _F2, _F2, _K,
            types.Array(ty, 2, "C"), types.FunctionType(user_entry_signature(dt)),
            types.FunctionType(user_row_signature(dt)), types.int64, ty, types.boolean,
            types.boolean, types.boolean]


@njit(cache=True, nogil=True, inline="always")
def _erased_at(s, i, j):
    # never reached for a row function (``_erased_has_entries``)
    if s.m.shape[0] > 0:
        x = s.m[i, j]
    elif s.calls_user:
        x = s.user(i, j)
    else:
        x = s.entry(s.a, s.b, s.k, i, j)
    return -x if s.negate else x


@njit(cache=True, nogil=True, inline="always")
def _erased_has_entries(s):
    return not s.calls_row


@njit(cache=True, nogil=True, inline="always")
def _erased_part(s, i, lo, hi, buf):
    if s.m.shape[0] > 0:
        if not s.negate:
            return s.m[i, lo:hi]  # a view: a row cache copies it once
        row = s.m[i, lo:hi]
        out = buf[lo:hi]
        for t in range(hi - lo):  # indices from 0: no wraparound test, the loop vectorises
            out[t] = -row[t]
        return out
    out = buf[lo:hi]
    if s.calls_user:
        if lo >= 0:  # as in the slice derived from a registered entry form
            for t in range(hi - lo):
                out[t] = s.user(i, lo + t)
    elif s.calls_row:  # the whole row (buf is full length), whatever part is asked for
        if s.key != 0:
            python_row_fill(s.key, i, buf)
        else:
            s.row_fn(i, buf)
    else:
        s.part(s.a, s.b, s.k, i, lo, hi, buf)
    if s.negate:
        for t in range(hi - lo):
            out[t] = -out[t]
    return out


@cost_forms(entry=_erased_at, part=_erased_part, field_types=_erased_field_types,
            entry_usable=_erased_has_entries)
class ErasedState(NamedTuple):
    """A built-in class's state behind its trampolines (see :func:`erased`), a matrix, or a
    user's function."""

    entry: Any   # the class's entry trampoline, typed as a first-class function
    part: Any    # its row-slice trampoline
    a: Any       # 2-D float64 data (points, factors, weights), C-contiguous
    b: Any       # 2-D float64 data
    k: Any       # int64 scalars (keys as their bits)
    m: Any       # 2-D matrix of the cost dtype, C-contiguous: the costs themselves; (0, 0) else
    user: Any    # a user's jitted element function fn(i, j), typed as a first-class function
    row_fn: Any  # a user's jitted row function fn(i, row), typed as a first-class function
    key: Any     # int64: a plain Python function's key (``costfns._python_rows``); 0 else
    zero: Any    # a scalar of the cost dtype
    negate: bool = False  # the costs negated (a maximisation), in the same compiled type
    calls_user: bool = False  # the costs are user(i, j)
    calls_row: bool = False   # the costs are rows of row_fn, or of the Python function ``key``


_NO_DATA = np.zeros((0, 0))
_NO_KEYS = np.zeros(0, np.int64)


def erased(entry, part, dtype, a=None, b=None, k=()) -> ErasedState:
    """The :class:`ErasedState` of a class whose trampolines ``entry`` and ``part`` (jitted,
    with the signatures of :func:`erased_signatures`) rebuild its own state from ``a``, ``b``
    and ``k`` and call its forms, so that the values are those of its own state bit for bit."""
    def f2(x):
        return _NO_DATA if x is None else np.ascontiguousarray(x, dtype=np.float64)
    dt = np.dtype(dtype)
    _, _, user, row_fn = _placeholders(dt)
    return ErasedState(entry, part, f2(a), f2(b), np.ascontiguousarray(k, dtype=np.int64),
                       np.zeros((0, 0), dt), user, row_fn, _NO_KEY, dt.type(0))


def _zero_entry(a, b, k, i, j):  # pragma: no cover - never called (a placeholder)
    return 0


def _zero_user(i, j):  # pragma: no cover - never called (a placeholder)
    return 0


def _no_row(i, buf):  # pragma: no cover - never called (a placeholder)
    pass


@njit(cache=True, nogil=True)
def _no_part(a, b, k, i, lo, hi, buf):  # pragma: no cover - never called (a placeholder)
    pass


_PLACEHOLDERS: dict = {}  # dtype -> (entry, part, user, row) placeholders
_NO_KEY = np.int64(0)


def _placeholders(dtype) -> tuple:
    """Placeholders, typed for cost ``dtype``, of the function fields an erased state does not
    call: the trampolines of a matrix or a user function, the user functions of a class. The
    entry forms' arguments do not name the dtype, so each dtype has dispatchers of its own
    (compiled in milliseconds, returning 0 cast to the dtype)."""
    dt = np.dtype(dtype)
    found = _PLACEHOLDERS.get(dt)
    if found is None:
        entry_sig, part_sig = erased_signatures(dt)
        _no_part.compile(part_sig)
        found = _PLACEHOLDERS[dt] = (njit(entry_sig, nogil=True)(_zero_entry), _no_part,
                                     njit(user_entry_signature(dt), nogil=True)(_zero_user),
                                     njit(user_row_signature(dt), nogil=True)(_no_row))
    return found


def matrix_state(matrix) -> ErasedState:
    """The :class:`ErasedState` of a 2-D C-contiguous matrix (any dtype the kernels take;
    read-only and memory-mapped arrays too, not copied): the kernels compiled for the built-in
    classes of its dtype serve it, negated or not. (A matrix without rows leaves ``m`` empty,
    which is right: there is no entry to read.)"""
    if matrix.ndim != 2 or not matrix.flags.c_contiguous:
        raise ValueError(f"matrix_state: expected a C-contiguous 2-D matrix, got "
                         f"{matrix.ndim} dimensions, C-contiguous {matrix.flags.c_contiguous}")
    entry, part, user, row_fn = _placeholders(matrix.dtype)
    return ErasedState(entry, part, _NO_DATA, _NO_DATA, _NO_KEYS, matrix, user, row_fn, _NO_KEY,
                       matrix.dtype.type(0))


def user_element_state(fn, dtype) -> ErasedState:
    """The :class:`ErasedState` of a user's jitted element function ``fn(i, j)`` of cost
    ``dtype``, called through a function pointer: the kernels of the built-in classes of that
    dtype serve it (compiled once, whatever the function), negated or not."""
    dt = np.dtype(dtype)
    entry, part, _, row_fn = _placeholders(dt)
    return ErasedState(entry, part, _NO_DATA, _NO_DATA, _NO_KEYS, np.zeros((0, 0), dt), fn,
                       row_fn, _NO_KEY, dt.type(0), calls_user=True)


def user_row_state(fn, dtype, key: int = 0) -> ErasedState:
    """The :class:`ErasedState` of a user's row function of cost ``dtype``: a jitted
    ``fn(i, row)`` called through a function pointer, or (``fn`` None) the plain Python function
    filed under ``key`` in ``costfns._python_rows``, called from object mode. The kernels of the
    built-in classes of that dtype serve it, negated or not; it has no entry without its row."""
    dt = np.dtype(dtype)
    entry, part, user, placeholder = _placeholders(dt)
    return ErasedState(entry, part, _NO_DATA, _NO_DATA, _NO_KEYS, np.zeros((0, 0), dt), user,
                       placeholder if fn is None else fn, np.int64(key), dt.type(0),
                       calls_row=True)
