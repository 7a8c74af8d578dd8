"""Run ``epslap/gpu/hungarian/hungarian.cu`` itself on the CPU: one OS thread per CUDA thread.

A test-only harness. The kernel source is compiled with g++ after a mechanical rewrite
(``__shared__`` declarations become per-block shared storage; the include of cooperative groups
is dropped, the generated status header's is replaced by its text) against a shim that emulates,
with real threads:

* ``__syncthreads`` (a barrier per block), ``grid.sync()`` (a barrier over the whole grid);
* ``__shfl_xor_sync`` / ``__shfl_sync`` / ``__ballot_sync`` (an exchange buffer and a barrier per
  warp: every lane must take part, as the CUDA rules require for a full mask);
* ``atomicCAS`` / ``atomicAdd`` / ``atomicExch`` / ``__threadfence`` (GCC ``__atomic`` builtins),
  with random yields that perturb the schedule.

So the kernel's exact control flow, indexing, reductions and barrier structure are executed;
what the emulation cannot show is the GPU's weaker memory model (x86 is stronger) and warp
scheduling. A grid whose blocks take different branches deadlocks a barrier here: the launch
then times out and the test fails instead of hanging.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import tempfile

import numpy as np

from epslap._status import cuda_defines

THREADS = 64   # two warps per block: the cross-warp reductions are exercised

_SHIM = r"""
#include <atomic>
#include <barrier>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>
#include <vector>
using std::fmin; using std::fmax;
struct emu_dim3 { unsigned x = 0, y = 1, z = 1; };
static thread_local emu_dim3 threadIdx, blockIdx;
static emu_dim3 gridDim, blockDim;
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
struct EmuWarp { std::barrier<>* bar; long long slot[32]; };
struct EmuBlock { std::barrier<>* bar; std::vector<EmuWarp*> warps; alignas(16) char shm[65536]; };
static thread_local EmuBlock* emu_blk;
static thread_local size_t emu_shm_off;
static thread_local std::minstd_rand emu_rng;
static std::barrier<>* emu_grid_bar;
static inline void* emu_shm(size_t bytes) {
    size_t off = (emu_shm_off + 15) & ~size_t(15);
    emu_shm_off = off + bytes;
    return emu_blk->shm + off;
}
static inline void emu_perturb() { if ((emu_rng() & 7) == 0) std::this_thread::yield(); }
static inline void __syncthreads() { emu_blk->bar->arrive_and_wait(); }
namespace cg {
struct grid_group { void sync() { emu_grid_bar->arrive_and_wait(); } };
static inline grid_group this_grid() { return grid_group{}; }
}
static inline EmuWarp* emu_warp() { return emu_blk->warps[threadIdx.x >> 5]; }
template <class T> static inline T emu_exchange(T x, int src) {
    EmuWarp* w = emu_warp();
    const int lane = threadIdx.x & 31;
    std::memcpy(&w->slot[lane], &x, sizeof(T));
    w->bar->arrive_and_wait();
    T r;
    std::memcpy(&r, &w->slot[src], sizeof(T));
    w->bar->arrive_and_wait();
    return r;
}
template <class T> static inline T __shfl_xor_sync(unsigned, T x, int off) {
    return emu_exchange(x, (int)((threadIdx.x & 31) ^ off));
}
template <class T> static inline T __shfl_sync(unsigned, T x, int src) { return emu_exchange(x, src); }
static inline unsigned __ballot_sync(unsigned, int pred) {
    EmuWarp* w = emu_warp();
    const int lane = threadIdx.x & 31;
    w->slot[lane] = pred ? 1 : 0;
    w->bar->arrive_and_wait();
    unsigned m = 0;
    for (int l = 0; l < 32; ++l) if (w->slot[l]) m |= 1u << l;
    w->bar->arrive_and_wait();
    return m;
}
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline double __longlong_as_double(long long x) { double d; std::memcpy(&d, &x, 8); return d; }
template <class T> static inline T atomicCAS(T* a, T cmp, T val) {
    emu_perturb();
    __atomic_compare_exchange_n(a, &cmp, val, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return cmp;
}
template <class T> static inline T atomicAdd(T* a, T v) { emu_perturb(); return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST); }
template <class T> static inline T atomicExch(T* a, T v) { emu_perturb(); return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST); }
static inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
"""

_RUNNER = r"""
#include <functional>
static int emu_run_grid(int blocks, int threads, double timeout_s, unsigned seed,
                        const std::function<void()>& body) {
    gridDim.x = blocks; blockDim.x = threads;
    emu_grid_bar = new std::barrier<>(blocks * threads);
    std::vector<EmuBlock*> blks;
    for (int b = 0; b < blocks; ++b) {
        EmuBlock* blk = new EmuBlock();
        blk->bar = new std::barrier<>(threads);
        for (int w = 0; w < threads / 32; ++w) { EmuWarp* wp = new EmuWarp(); wp->bar = new std::barrier<>(32); blk->warps.push_back(wp); }
        blks.push_back(blk);
    }
    std::mutex mu; std::condition_variable cv; int done = 0;
    std::vector<std::thread> ts;
    for (int b = 0; b < blocks; ++b)
        for (int t = 0; t < threads; ++t)
            ts.emplace_back([&, b, t] {
                blockIdx.x = b; threadIdx.x = t; emu_blk = blks[b]; emu_shm_off = 0;
                emu_rng.seed(seed * 7919u + b * 131u + t);
                body();
                std::lock_guard<std::mutex> g(mu); ++done; cv.notify_all();
            });
    std::unique_lock<std::mutex> lk(mu);
    bool ok = cv.wait_for(lk, std::chrono::duration<double>(timeout_s),
                          [&] { return done == blocks * threads; });
    lk.unlock();
    if (!ok) { for (auto& t : ts) t.detach(); return -1; }   // deadlock: leak, report
    for (auto& t : ts) t.join();
    for (auto* blk : blks) { for (auto* w : blk->warps) { delete w->bar; delete w; } delete blk->bar; delete blk; }
    delete emu_grid_bar;
    return 0;
}
extern "C" int emu_solve(int blocks, double timeout_s, unsigned seed, const cost_st* C,
        long long n1, long long n, long long R, double tol, long long maxdu, double* u, double* v,
        int* star_col, int* star_row, int* prime_col, int* green_row, int* row_lock,
        unsigned char* cover_row, unsigned char* cover_col, unsigned* zeros, double* bmin,
        long long* bcount, int* paths, long long* ctl) {
    return emu_run_grid(blocks, THREADS, timeout_s, seed, [=] {
        hungarian_solve(C, n1, n, R, tol, maxdu, u, v, star_col, star_row, prime_col, green_row,
                        row_lock, cover_row, cover_col, zeros, bmin, bcount, paths, ctl);
    });
}
extern "C" int emu_check(int blocks, const cost_st* C, long long n1, long long n,
                         const int* star_col, const double* v, double* worst) {
    return emu_run_grid(blocks, THREADS, 60.0, 1, [=] { hungarian_check(C, n1, n, star_col, v, worst); });
}
"""

_CTYPES = {np.dtype(np.float32): "float", np.dtype(np.int32): "int",
           np.dtype(np.float64): "double"}
_LIBS: dict = {}


def compiler_reason():
    """Why the emulator cannot run here (None when it can)."""
    if shutil.which("g++") is None:
        return "g++ is not installed"
    return None


def _rewrite(src: str) -> str:
    """Make the CUDA source plain C++ against the shim (test harness only)."""
    src = src.replace("#include <cooperative_groups.h>", "")
    src = src.replace("namespace cg = cooperative_groups;", "")
    src = src.replace('#include "epslap_status.cuh"', cuda_defines())
    # __shared__ T name[N];  ->  T* name = (T*)emu_shm(sizeof(T) * (N));
    src = re.sub(r"__shared__\s+([\w ]+?)\s+(\w+)\[([^\]]+)\];",
                 r"\1* \2 = (\1*)emu_shm(sizeof(\1) * (\3));", src)
    # __shared__ T name;  ->  T& name = *(T*)emu_shm(sizeof(T));
    src = re.sub(r"__shared__\s+([\w ]+?)\s+(\w+);", r"\1& \2 = *(\1*)emu_shm(sizeof(\1));", src)
    return src


def _library(storage: np.dtype, defines: str = ""):
    storage = np.dtype(storage)
    kernel = os.path.join(os.path.dirname(__file__), "..", "epslap", "gpu", "hungarian",
                          "hungarian.cu")
    with open(kernel) as fh:
        body = _rewrite(fh.read())
    code = (f"#define COST_ST {_CTYPES[storage]}\n#define THREADS {THREADS}\n"
            f"{defines}\n" + _SHIM + body + _RUNNER)
    key = hashlib.sha1(code.encode()).hexdigest()[:16]
    if key in _LIBS:
        return _LIBS[key]
    d = os.path.join(tempfile.gettempdir(), f"epslap_emu_{os.getuid()}")
    os.makedirs(d, exist_ok=True)
    so = os.path.join(d, f"hung_{key}.so")
    if not os.path.exists(so):
        # each process writes and compiles its own files, then renames: test processes building
        # the same library at once never read each other's half-written source
        cpp = os.path.join(d, f"hung_{key}.{os.getpid()}.cpp")
        with open(cpp, "w") as fh:
            fh.write(code)
        tmp = so + f".{os.getpid()}"
        subprocess.run(["g++", "-std=c++20", "-O1", "-shared", "-fPIC", "-pthread", "-w",
                        "-o", tmp, cpp], check=True, capture_output=True, text=True)
        os.remove(cpp)
        os.replace(tmp, so)
    lib = ctypes.CDLL(so)
    lib.emu_solve.restype = ctypes.c_int
    lib.emu_check.restype = ctypes.c_int
    _LIBS[key] = lib
    return lib


def _arg(x):
    if isinstance(x, np.ndarray):
        return ctypes.c_void_p(x.ctypes.data)
    if isinstance(x, (np.floating, float)):
        return ctypes.c_double(float(x))
    return ctypes.c_longlong(int(x))


def solve_emulated(m, integral, *, blocks=3, seed=0, timeout_s=60.0, gather=False):
    """``hungarian.run_kernels`` with NumPy arrays and the emulated kernel.

    ``gather=True`` compiles with ``COL_DIV 1``: step 6 then gathers the uncovered columns from
    shared memory whenever they fit (small test problems otherwise always stream whole rows).

    Returns what ``_solve_canonical`` returns: ``(row_to_col, v, assigned, stats)``.
    """
    from epslap.gpu.hungarian.plan import numeric_plan
    from epslap.gpu.hungarian.solver import run_kernels
    plan = numeric_plan(np, m, integral)
    store = np.ascontiguousarray(m.astype(plan["storage"]))
    lib = _library(plan["storage"], "#define COL_DIV 1" if gather else "")

    def launch_solve(args):
        rc = lib.emu_solve(ctypes.c_int(blocks), ctypes.c_double(timeout_s),
                           ctypes.c_uint(seed), *[_arg(a) for a in args])
        if rc != 0:
            raise TimeoutError("emulated kernel did not finish: a barrier deadlocked "
                               "(blocks took different branches?)")
        return 0.0

    def launch_check(args):
        worst = np.full(blocks, -np.inf)
        rc = lib.emu_check(ctypes.c_int(blocks), *[_arg(a) for a in args], _arg(worst))
        if rc != 0:
            raise TimeoutError("emulated check kernel did not finish")
        return float(worst.max())

    return run_kernels(np, m, store, plan, integral, blocks, launch_solve, launch_check,
                       MemoryError)
