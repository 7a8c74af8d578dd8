"""Sparse cost input as given: recognising the accepted forms and reading their stored pairs.

The forms (``epslap.sparse`` solves them): a SciPy sparse matrix or array (CSR, CSC, COO or any
other format SciPy converts to CSR), or a tuple of NumPy arrays ``(indptr, indices, data)`` or
``(indptr, indices, data, n_cols)`` in CSR layout. A leaf of the package beside ``_validate``:
``epslap.verify`` reads sparse problems through it without importing the solver.
"""
from __future__ import annotations

import sys
from typing import NamedTuple

import numpy as np


class SparseProblem(NamedTuple):
    """A canonical sparse problem: CSR rows of the shorter side, minimised."""

    indptr: np.ndarray   # int64, n1 + 1
    indices: np.ndarray  # int64, nnz
    data: np.ndarray     # float64 or int64, nnz
    n1: int
    n2: int
    transposed: bool
    integral: bool


def is_sparse(cost) -> bool:
    """Whether ``cost`` is one of the sparse forms of the module docstring. A tuple of three
    1-D arrays of one length is read as CSR only when its first array is a valid indptr for the
    other two (else it is a dense matrix given row by row)."""
    sp = sys.modules.get("scipy.sparse")  # a SciPy object implies SciPy is loaded
    if sp is not None and sp.issparse(cost):
        return True
    if not (type(cost) is tuple and len(cost) in (3, 4)
            and all(type(a) is np.ndarray and a.ndim == 1 for a in cost[:3])):
        return False
    indptr, indices, data = cost[:3]
    if len(cost) == 4 or not indptr.size == indices.size == data.size or not indptr.size:
        return True  # no matrix: its checks say what is wrong with the layout
    return (indptr.dtype.kind in "iu" and int(indptr[0]) == 0
            and int(indptr[-1]) == indices.size and bool((np.diff(indptr) >= 0).all()))


def _parts(cost):
    """(indptr, indices, data, n1, n2) of any accepted form, pairs not yet checked."""
    if type(cost) is tuple:
        indptr, indices, data = cost[:3]
        if indices.dtype.kind not in "iu":
            raise TypeError("sparse cost: indptr and indices must be integer arrays")
        n1 = indptr.size - 1
        if len(cost) == 4:
            n2 = _count("n_cols", cost[3])
        else:
            n2 = int(indices.max()) + 1 if indices.size else 0
        return indptr, indices, data, n1, n2
    if len(cost.shape) != 2:  # a SciPy sparse array may be 1-D
        raise ValueError(f"expected a matrix (2-D sparse array), got a {len(cost.shape)}-D "
                         "sparse array")
    n1, n2 = (int(x) for x in cost.shape)
    if cost.format == "csr":
        csr = cost
    else:
        csr = cost.tocsr()
        if csr.nnz != cost.nnz and cost.format == "dia":
            raise ValueError("sparse cost in DIA format holds zeros on its stored diagonals, "
                             "which DIA cannot tell from absent pairs (SciPy's conversions "
                             "drop them); give it as CSR or COO, storing the zero costs you "
                             "mean")
        if cost.format == "bsr" and cost.nnz and not bool(cost.data.all()):
            raise ValueError("sparse cost in BSR format holds zeros in its stored blocks, "
                             "which BSR cannot tell from absent pairs (a block stores every "
                             "pair it covers); give it as CSR or COO, storing the zero costs "
                             "you mean")
        if csr.nnz != cost.nnz:
            raise ValueError("sparse cost stores a pair more than once (SciPy would add the "
                             "costs up); store one cost per pair")
    return csr.indptr, csr.indices, csr.data, n1, n2


def _count(name, value) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) \
            or value < 0:
        raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
    return int(value)


def stored_pairs(cost) -> SparseProblem:
    """The stored pairs of a sparse cost as given (not oriented, values untouched), in CSR
    with int64 indices, each row's columns in increasing order; the layout is checked and a
    pair stored twice refused. ``transposed``/``integral`` describe the values only."""
    indptr, indices, data, n1, n2 = _parts(cost)
    if indptr.dtype.kind not in "iu" or indices.dtype.kind not in "iu":
        raise TypeError("sparse cost: indptr and indices must be integer arrays")
    if data.dtype.kind not in "biuf":
        raise TypeError(f"sparse cost must be numeric, got dtype {data.dtype}")
    if data.dtype.kind == "f" and data.dtype.itemsize > 8:
        raise TypeError(f"sparse cost: {data.dtype} (extended precision) costs are not solved "
                        "as such: convert them to float64 (or float32)")
    nnz = data.size
    if indptr.size == 0:
        raise ValueError("sparse cost: indptr is empty (a CSR indptr has n_rows + 1 entries)")
    if indptr.size != n1 + 1 or int(indptr[0]) != 0 or int(indptr[-1]) != nnz \
            or indices.size != nnz or (n1 and bool((np.diff(indptr) < 0).any())):
        raise ValueError(f"sparse cost: not a CSR layout (indptr of length {indptr.size} "
                         f"from {int(indptr[0])}, {indices.size} indices, {nnz} costs)")
    if nnz and (int(indices.min()) < 0 or int(indices.max()) >= n2):
        raise ValueError(f"sparse cost: a column index outside 0 … {n2 - 1}")
    indptr = indptr.astype(np.int64, copy=False)
    indices = indices.astype(np.int64, copy=False)
    if nnz:
        rows = np.repeat(np.arange(n1, dtype=np.int64), np.diff(indptr))
        key = rows * max(n2, 1) + indices
        if not bool((key[1:] > key[:-1]).all()):  # unsorted rows, or a pair stored twice
            order = np.argsort(key, kind="stable")
            key, indices, data = key[order], indices[order], data[order]
        if bool((key[1:] == key[:-1]).any()):
            raise ValueError("sparse cost stores a pair more than once; store one cost per pair")
    return SparseProblem(indptr, indices, data, n1, n2, False, data.dtype.kind in "biu")
