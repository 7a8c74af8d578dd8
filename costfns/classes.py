"""The paper's problem classes (docs/algorithm.md §6), each a cost source that can regenerate any row.

Guthe & Thuerck, ACM TOMS 47(2), 2021, §5.1. Entries that the paper draws independently per
element (random, integer) come from a counter-based hash of (seed, i, j), so row ``i`` is the same
whether it is computed alone, in a dense matrix, or on another device. Point and weight vectors
(geometric, disjoint, sanity, low rank) are O(n) and drawn once from ``numpy.random.default_rng``.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from ._base import CostSource, CudaCost, check_shape
from .rows import cost_forms, erased
from .sources import SqEuclidean

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_ROW_MUL = np.uint64(0xD1B54A32D192ED03)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


@njit(cache=True, nogil=True, inline="always")
def _mix64(z):
    """SplitMix64's finaliser: a bijective avalanche mix of a uint64."""
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


@njit(cache=True, nogil=True, inline="always")
def _hash_ij(key, i, j):
    """64 random bits for element (i, j) under ``key`` (a mixed seed)."""
    return _mix64(_mix64(key ^ (np.uint64(i) * _ROW_MUL)) + np.uint64(j) * _GOLDEN)


def _key(seed: int) -> np.uint64:
    return np.uint64(int(_mix64(np.uint64(seed & 0xFFFFFFFFFFFFFFFF))))


_CUDA_HASH = """
__device__ __forceinline__ unsigned long long mix64(unsigned long long z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}
__device__ __forceinline__ unsigned long long hash_ij(unsigned long long key, long long i, long long j) {
    return mix64(mix64(key ^ ((unsigned long long)i * 0xD1B54A32D192ED03ULL))
                 + (unsigned long long)j * 0x9E3779B97F4A7C15ULL);
}
"""


@njit(cache=True, nogil=True, inline="always")
def _random_at(s, i, j):
    """Entry (i, j): the top 53 bits of the hash as a float in [0, 1)."""
    return np.float64(_hash_ij(s.key, i, j) >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@cost_forms(entry=_random_at)
class _RandomState(NamedTuple):
    key: np.uint64


@njit(cache=True, nogil=True, inline="always")
def _random_int_at(s, i, j):
    return np.int64(_hash_ij(s.key, i, j) % s.span)


@cost_forms(entry=_random_int_at)
class _RandomIntState(NamedTuple):
    key: np.uint64
    span: np.uint64  # values are uniform in [0, span - 1]


# Trampolines (costfns.rows.erased): each class's state rebuilt from the fixed layout, its forms
# called; a row slice from the entries as costfns.rows derives it.

@njit(cache=True, nogil=True, inline="always")
def _part_from_entries(at, s, i, lo, hi, buf):
    """buf[lo:hi] = entries (i, lo … hi-1) of ``at``: a loop from 0 over the slice, under a
    test that lo >= 0 (an index that may be negative keeps Numba's wraparound in the loop and
    stops it from vectorising)."""
    out = buf[lo:hi]
    if lo >= 0:
        for t in range(hi - lo):
            out[t] = at(s, i, lo + t)


@njit(cache=True, nogil=True)
def _random_entry(a, b, k, i, j):
    return _random_at(_RandomState(np.uint64(k[0])), i, j)


@njit(cache=True, nogil=True)
def _random_part(a, b, k, i, lo, hi, buf):
    _part_from_entries(_random_at, _RandomState(np.uint64(k[0])), i, lo, hi, buf)


@njit(cache=True, nogil=True)
def _random_int_entry(a, b, k, i, j):
    return _random_int_at(_RandomIntState(np.uint64(k[0]), np.uint64(k[1])), i, j)


@njit(cache=True, nogil=True)
def _random_int_part(a, b, k, i, lo, hi, buf):
    _part_from_entries(_random_int_at, _RandomIntState(np.uint64(k[0]), np.uint64(k[1])), i,
                       lo, hi, buf)


def _bits(key: np.uint64) -> int:
    """A uint64 key as the int64 of the same bits (the layout's scalars are int64)."""
    return int(np.array([key], np.uint64).view(np.int64)[0])


def _check_n(n: int, n2: int | None) -> tuple[int, int]:
    return check_shape((n, n if n2 is None else n2))


class Random(CostSource):
    """``c ~ U[0, 1)`` float64, element (i, j) a hash of (seed, i, j): the paper's "random"."""

    def __init__(self, n: int, seed: int = 0, n2: int | None = None):
        self.shape = _check_n(n, n2)
        self.seed = int(seed)
        self.dtype = np.dtype(np.float64)

    def state(self):
        return erased(_random_entry, _random_part, self.dtype, k=[_bits(_key(self.seed))])

    def specialized_state(self):
        """The state the kernels are compiled for on their own (tests, A/B)."""
        return _RandomState(_key(self.seed))

    def cuda_source(self):
        code = _CUDA_HASH + """
__device__ __forceinline__ cost_t cost_fn(const CostArgs& a, long long i, long long j) {
    return (double)(hash_ij((unsigned long long)a.k[0], i, j) >> 11) * (1.0 / 9007199254740992.0);
}"""
        return CudaCost(code, [], [int(_key(self.seed).view(np.int64))], [])


class RandomInt(CostSource):
    """Uniform integers in ``[0, high]`` (int64), hashed per element like :class:`Random`."""

    def __init__(self, n: int, high: int, seed: int = 0, n2: int | None = None):
        self.shape = _check_n(n, n2)
        if int(high) < 0:
            raise ValueError(f"high must be >= 0, got {high}")
        self.high = int(high)
        self.seed = int(seed)
        self.dtype = np.dtype(np.int64)

    def state(self):
        return erased(_random_int_entry, _random_int_part, self.dtype,
                      k=[_bits(_key(self.seed)), _bits(np.uint64(self.high + 1))])

    def specialized_state(self):
        """The state the kernels are compiled for on their own (tests, A/B)."""
        return _RandomIntState(_key(self.seed), np.uint64(self.high + 1))

    def cuda_source(self):
        code = _CUDA_HASH + """
__device__ __forceinline__ cost_t cost_fn(const CostArgs& a, long long i, long long j) {
    return (cost_t)(hash_ij((unsigned long long)a.k[0], i, j) % (unsigned long long)a.k[1]);
}"""
        return CudaCost(code, [], [int(_key(self.seed).view(np.int64)), self.high + 1], [])


def Geometric(n: int, seed: int = 0, dim: int = 2) -> SqEuclidean:
    """Squared distances between n random sources and n random targets in ``[0, 1)^dim``."""
    rng = np.random.default_rng(seed)
    return SqEuclidean(rng.random((n, dim)), rng.random((n, dim)))


def Disjoint(n: int, seed: int = 0) -> SqEuclidean:
    """Like geometric, sources in ``[0,1)² ∪ [1,2)²``, targets in ``[1,2)×[0,1) ∪ [0,1)×[1,2)``."""
    rng = np.random.default_rng(seed)
    x = rng.random((n, 2))
    y = rng.random((n, 2))
    half = n // 2
    x[half:] += 1.0          # second half of the sources in [1,2)^2
    y[:half, 0] += 1.0       # first half of the targets in [1,2)x[0,1)
    y[half:, 1] += 1.0       # second half in [0,1)x[1,2)
    return SqEuclidean(x, y)


@njit(cache=True, nogil=True, inline="always")
def _sanity_at(s, i, j):
    return s.a[i] + s.b[j] + (0.1 if i != j else 0.0)


@cost_forms(entry=_sanity_at)
class _SanityState(NamedTuple):
    a: np.ndarray
    b: np.ndarray


@njit(cache=True, nogil=True)
def _sanity_entry(a, b, k, i, j):
    return _sanity_at(_SanityState(a[0], b[0]), i, j)


@njit(cache=True, nogil=True)
def _sanity_part(a, b, k, i, lo, hi, buf):
    _part_from_entries(_sanity_at, _SanityState(a[0], b[0]), i, lo, hi, buf)


class Sanity(CostSource):
    """``c_ij = a_i + b_j + 0.1·[i ≠ j]``: the identity is the unique optimum."""

    def __init__(self, n: int, seed: int = 0):
        rng = np.random.default_rng(seed)
        self.a = rng.random(n)
        self.b = rng.random(n)
        self.shape = (int(n), int(n))
        self.dtype = np.dtype(np.float64)

    def state(self):
        return erased(_sanity_entry, _sanity_part, self.dtype, a=self.a[None, :],
                      b=self.b[None, :])

    def specialized_state(self):
        """The state the kernels are compiled for on their own (tests, A/B)."""
        return _SanityState(self.a, self.b)

    def cuda_source(self):
        code = """
__device__ __forceinline__ cost_t cost_fn(const CostArgs& a, long long i, long long j) {
    return (((const double*)a.p[0])[i] + ((const double*)a.p[1])[j]) + (i != j ? 0.1 : 0.0);
}"""
        return CudaCost(code, [self.a, self.b], [], [])


@njit(cache=True, nogil=True, inline="always")
def _add_product(acc, u, v):
    """``acc + u·v``: the formula, shared by the entry and the part form (bit-identical)."""
    return acc + u * v


@njit(cache=True, nogil=True, inline="always")
def _low_rank_at(s, i, j):
    acc = 0.0
    for k in range(s.w.shape[0]):
        acc = _add_product(acc, s.w[k, i], s.wt[k, j])
    return acc


@njit(cache=True, nogil=True, inline="always")
def _low_rank_part(s, i, lo, hi, buf):
    """Columns [lo, hi) of row i, factor by factor: the loop over columns vectorises (the
    entries' loop over factors does not: a row derived from them is 4-6x slower)."""
    out = buf[lo:hi]  # slices from 0 (see _sqeuclidean_part)
    m = hi - lo
    for j in range(m):
        out[j] = 0.0
    for k in range(s.w.shape[0]):
        wi = s.w[k, i]
        wtk = s.wt[k, lo:hi]
        for j in range(m):
            out[j] = _add_product(out[j], wi, wtk[j])
    return out


@cost_forms(entry=_low_rank_at, part=_low_rank_part)
class _LowRankState(NamedTuple):
    w: np.ndarray   # (r, n1) row factors
    wt: np.ndarray  # (r, n2) column factors, scaled by 1/r


@njit(cache=True, nogil=True)
def _low_rank_entry(a, b, k, i, j):
    return _low_rank_at(_LowRankState(a, b), i, j)


@njit(cache=True, nogil=True)
def _low_rank_trampoline_part(a, b, k, i, lo, hi, buf):
    _low_rank_part(_LowRankState(a, b), i, lo, hi, buf)


class LowRank(CostSource):
    """``c_ij = (1/r) Σ_k w_k[i] w_k[j]`` with ``w_k ~ U[0,1)^n`` (rank 1 is SSP's worst case)."""

    def __init__(self, n: int, rank: int, seed: int = 0):
        if int(rank) < 1:
            raise ValueError(f"rank must be >= 1, got {rank}")
        rng = np.random.default_rng(seed)
        self.rank = int(rank)
        self.w = rng.random((self.rank, n))
        self.shape = (int(n), int(n))
        self.dtype = np.dtype(np.float64)

    def state(self):
        return erased(_low_rank_entry, _low_rank_trampoline_part, self.dtype, a=self.w,
                      b=self.w / self.rank)

    def specialized_state(self):
        """The state the kernels are compiled for on their own (tests, A/B)."""
        return _LowRankState(self.w, self.w / self.rank)

    def cuda_source(self):
        code = """
__device__ __forceinline__ cost_t cost_fn(const CostArgs& a, long long i, long long j) {
    const double* w = (const double*)a.p[0];
    const double* wt = (const double*)a.p[1];
    double s = 0.0;
    for (long long k = 0; k < a.k[0]; ++k) s += w[k * a.k[1] + i] * wt[k * a.n2 + j];
    return s;
}"""
        return CudaCost(code, [self.w, self.w / self.rank], [self.rank, self.w.shape[1]], [])


#: The paper's classes by name: ``name -> (n, seed) -> CostSource``.
PROBLEMS = {
    "random": lambda n, seed: Random(n, seed),
    "geometric": lambda n, seed: Geometric(n, seed),
    "disjoint": lambda n, seed: Disjoint(n, seed),
    "sanity": lambda n, seed: Sanity(n, seed),
    "rank1": lambda n, seed: LowRank(n, 1, seed),
    "rank2": lambda n, seed: LowRank(n, 2, seed),
    "rank4": lambda n, seed: LowRank(n, 4, seed),
    "rank8": lambda n, seed: LowRank(n, 8, seed),
    "integer": lambda n, seed: RandomInt(n, 10 * n, seed),
    "integer0.1n": lambda n, seed: RandomInt(n, max(n // 10, 1), seed),
    "integer1n": lambda n, seed: RandomInt(n, n, seed),
}


def problem(name: str, n: int, seed: int = 0) -> CostSource:
    """The paper's problem class ``name`` (see ``PROBLEMS``) at size n as an on-demand source."""
    try:
        make = PROBLEMS[name]
    except KeyError:
        raise ValueError(f"unknown problem {name!r}; choose one of {sorted(PROBLEMS)}") from None
    return make(int(n), int(seed))


def generate(name: str, n: int, seed: int = 0) -> np.ndarray:
    """The dense n×n matrix of problem class ``name`` for ``seed``."""
    return problem(name, n, seed).dense()
