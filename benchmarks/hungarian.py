"""GPU Hungarian against the published HyLAC and FastHA; and against ε-SSP (GPU, CPU) and scipy.

    python -m benchmarks hungarian --classes int1n int0.1n int10n --sizes 4000 8000 16000 32000 \
        --backends hungarian-gpu gpu --budget-s 100
    python -m benchmarks hungarian --classes int1n int10n random geometric --sizes 1000 2000 4000 \
        --backends hungarian-gpu gpu cpu scipy --cpu-max 4000 --hungarian-float-max 4000 \
        --out benchmarks/results/compare.json [--plot compare.png]

Needs an NVIDIA GPU with CuPy. Classes: ``int0.1n``, ``int1n``, ``int10n``, ``int1000n`` are
the Hungarian papers' uniform integers in ``[0, f·n)`` (generated with NumPy, int32); any other
name is a ``costfns`` class (random, geometric, disjoint, sanity, rank1, ..., integer),
materialised on the device.

Times are solver-only with the matrix already where the solver reads it (compile excluded: a
warm-up solve compiles every kernel first): Hungarian-GPU = its kernel (device events);
ε-SSP-GPU and -CPU = estimate + passes; scipy = the call. Each instance is solved by every
backend; the optimal costs are compared and a mismatch is flagged in the table ("!"). Runs stop
being started once ``--budget-s`` seconds have passed (the rest are listed as skipped). The
published HyLAC and FastHA times (``PUBLISHED``, NVIDIA H200, uniform integers in [0, n)) are
those the papers report; they were not rerun side by side.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from ._common import Output, markdown, require_gpu

NEEDS_GPU = True

#: published solver-only seconds on an H200, uniform integers in [0, n) (the bar)
PUBLISHED = {"HyLAC (H200)": {4000: 0.027, 8000: 0.070, 16000: 0.149, 32000: 0.303},
             "FastHA (H200)": {4000: 0.088, 8000: 0.171, 16000: 0.343, 32000: 0.711}}
INT_CLASSES = {"int0.1n": 0.1, "int1n": 1.0, "int10n": 10.0, "int1000n": 1000.0}
LABELS = {"hungarian-gpu": "Hungarian-GPU", "gpu": "ε-SSP-GPU", "cpu": "ε-SSP-CPU",
          "scipy": "scipy"}


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--classes", nargs="+", default=["int0.1n", "int1n", "int10n", "random"])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 2000, 4000, 8000])
    ap.add_argument("--backends", nargs="+", default=["hungarian-gpu", "gpu", "cpu", "scipy"],
                    choices=list(LABELS))
    ap.add_argument("--cpu-max", type=int, default=8000, help="largest n for ε-SSP-CPU")
    ap.add_argument("--scipy-max", type=int, default=4000, help="largest n for scipy")
    ap.add_argument("--hungarian-float-max", type=int, default=8000,
                    help="largest n for Hungarian-GPU on non-integer classes (O(n^4) worst case)")
    ap.add_argument("--budget-s", type=float, default=300.0,
                    help="start no new run after this many seconds")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--plot", help="also draw time vs n (log-log, one panel per class) here")


def _instance(cupy, cls: str, n: int, seed: int):
    """The device matrix of one instance (CuPy), and a lazy host copy getter."""
    import costfns
    if cls in INT_CLASSES:
        hi = max(1, int(INT_CLASSES[cls] * n))
        host = np.random.default_rng(seed).integers(0, hi, size=(n, n), dtype=np.int32)
        return cupy.asarray(host), (lambda: host)
    from epslap.gpu.solver import materialise
    dev = materialise(costfns.problem(cls, n, seed))
    return dev, (lambda: cupy.asnumpy(dev))


def _time_backend(backend: str, dev, host_of):
    """(solver seconds, wall seconds, cost, stats) of one solve."""
    import epslap
    if backend == "scipy":
        from scipy.optimize import linear_sum_assignment
        c = host_of()
        t = time.perf_counter()
        r, k = linear_sum_assignment(c)
        wall = time.perf_counter() - t
        return wall, wall, float(c[r, k].astype(np.float64).sum()), {}
    cost = host_of() if backend == "cpu" else dev
    t = time.perf_counter()
    sol = epslap.solve(cost, backend=backend)
    wall = time.perf_counter() - t
    st = sol.stats
    solver = st["time_solve_s"] + (0.0 if backend == "hungarian-gpu" else st["time_estimate_s"])
    keep = {k: st[k] for k in ("iterations", "dual_updates", "search_rounds", "initial_matches",
                               "passes", "rows_evaluated", "storage_dtype", "exact")
            if k in st}
    if "paths_per_iteration" in st:
        p = st["paths_per_iteration"]
        keep["paths_mean"] = float(np.mean(p)) if p else 0.0
    return solver, wall, float(sol.cost), keep


def _warm_up(cupy, backends: list[str]) -> None:
    import epslap
    rng = np.random.default_rng(0)
    for backend in backends:
        if backend in ("hungarian-gpu", "gpu"):
            for c in (rng.integers(0, 50, (64, 64)).astype(np.int32), rng.random((64, 64)),
                      rng.integers(0, 50, (64, 64)) * 2**25):
                epslap.solve(cupy.asarray(c), backend=backend)
        elif backend == "cpu":
            epslap.precompile()


def run(args: argparse.Namespace, out: Output) -> None:
    cupy = require_gpu("hungarian")
    # the "gpu" column is the ε solver: keep matrices of at most 1024 columns (the warm-up's
    # and n = 1000) off the batch-of-one route that solve() takes for them by default
    from epslap.gpu import batch
    batch.SINGLE_MAX_SIDE = 0
    out.meta["published_h200_int1n"] = {k: {str(n): t for n, t in v.items()}
                                        for k, v in PUBLISHED.items()}
    out.meta["args"] = {k: v for k, v in vars(args).items() if k not in ("func",)}
    t_begin = time.perf_counter()
    _warm_up(cupy, args.backends)
    print(f"warm-up (compile) {time.perf_counter() - t_begin:.1f} s", flush=True)

    def cap(backend: str, cls: str) -> int | None:
        if backend == "cpu":
            return args.cpu_max
        if backend == "scipy":
            return args.scipy_max
        if backend == "hungarian-gpu" and cls not in INT_CLASSES and cls != "integer":
            return args.hungarian_float_max
        return None

    rows = out.rows
    for n in sorted(args.sizes):
        for cls in args.classes:
            if time.perf_counter() - t_begin > args.budget_s:
                out.add(dict(cls=cls, n=n, backend="*", skipped="time budget"))
                continue
            dev, host_of = _instance(cupy, cls, n, args.seed)
            costs = {}
            for backend in args.backends:
                limit = cap(backend, cls)
                if limit is not None and n > limit:
                    continue
                if time.perf_counter() - t_begin > args.budget_s:
                    out.add(dict(cls=cls, n=n, backend=backend, skipped="time budget"))
                    continue
                try:
                    solver_s, wall_s, cost, extra = _time_backend(backend, dev, host_of)
                except Exception as exc:  # recorded in the table: a benchmark must finish
                    out.add(dict(cls=cls, n=n, backend=backend,
                                 error=f"{type(exc).__name__}: {exc}"))
                    print(f"{cls} n={n} {backend}: {type(exc).__name__}: {exc}", flush=True)
                    continue
                costs[backend] = cost
                out.add(dict(cls=cls, n=n, backend=backend, solver_s=solver_s, wall_s=wall_s,
                             cost=cost, **extra))
                print(f"{cls:>9} n={n:>6} {LABELS[backend]:>14}: {solver_s:9.4f} s "
                      f"(wall {wall_s:.3f}) cost {cost:.10g} {extra}", flush=True)
            ref = costs.get("scipy", costs.get("cpu", next(iter(costs.values()), None)))
            for r in rows:
                if r.get("cls") == cls and r.get("n") == n and "cost" in r and ref is not None:
                    r["cost_ok"] = abs(r["cost"] - ref) <= 1e-9 * max(1.0, abs(ref)) * n
            out.save()
            del dev
            cupy.get_default_memory_pool().free_all_blocks()
    if args.plot:
        plot(args.plot, out.meta, rows)


def _order(meta: dict, rows: list[dict]) -> tuple[list[str], list[str], list[int]]:
    """(backends, classes, sizes) in the run's order."""
    a = meta.get("args", {})
    backends = a.get("backends") or list(dict.fromkeys(r["backend"] for r in rows
                                                       if r["backend"] != "*"))
    classes = a.get("classes") or list(dict.fromkeys(r["cls"] for r in rows))
    sizes = sorted(a.get("sizes") or set(r["n"] for r in rows))
    return backends, classes, sizes


def render(meta: dict, rows: list[dict]) -> str:
    """Solver-only seconds per class and n; for [0, n) integers also the published times and the
    ratio of HyLAC's to Hungarian-GPU's."""
    backends, classes, sizes = _order(meta, rows)
    published = meta.get("published_h200_int1n", {})
    int1n = "int1n" in classes and "hungarian-gpu" in backends
    head = ["class", "n"] + [f"{LABELS[b]} s" for b in backends]
    if int1n:
        head += [f"{name}, published s" for name in published] + ["HyLAC / Hungarian-GPU"]
    body = []
    for n in sizes:
        for cls in classes:
            cells, hung = [], None
            for b in backends:
                r = next((r for r in rows if r.get("cls") == cls and r.get("n") == n
                          and r.get("backend") in (b, "*")), None)
                if r is None:
                    cells.append("–")
                elif "solver_s" in r:
                    cells.append(f"{r['solver_s']:.4f}" + ("" if r.get("cost_ok", True) else " !"))
                    hung = r["solver_s"] if b == "hungarian-gpu" else hung
                elif "error" in r:
                    cells.append(r["error"].split(":")[0])
                else:
                    cells.append("skipped")
            if int1n:
                pub = [v.get(str(n)) if cls == "int1n" else None for v in published.values()]
                cells += ["–" if t is None else f"{t:g}" for t in pub]
                hylac = published.get("HyLAC (H200)", {}).get(str(n)) if cls == "int1n" else None
                cells.append(f"{hylac / hung:.1f}×" if hylac and hung else "–")
            body.append([cls, n] + cells)
    return markdown(head, body)


def plot(path: str, meta: dict, rows: list[dict]) -> None:
    """Log-log time vs n, one panel per class; the published times on the ``int1n`` panel."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    backends, classes, _ = _order(meta, rows)
    k = len(classes)
    cols = min(k, 3)
    nrows = (k + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(5 * cols, 4 * nrows), squeeze=False)
    for ax, cls in zip(axes.flat, classes):
        for b in backends:
            pts = sorted((r["n"], r["solver_s"]) for r in rows
                         if r.get("cls") == cls and r.get("backend") == b and "solver_s" in r)
            if pts:
                ax.loglog(*zip(*pts), marker="o", label=LABELS[b])
        if cls == "int1n":
            for (name, pub), mk in zip(meta.get("published_h200_int1n", {}).items(), "s^"):
                ax.loglog([int(n) for n in pub], list(pub.values()), linestyle=":", marker=mk,
                          label=name)
        ax.set_title(cls)
        ax.set_xlabel("n")
        ax.set_ylabel("solver seconds")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[k:]:
        ax.axis("off")
    fig.suptitle(f"time vs n — {meta.get('gpu') or meta.get('device', '')}")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
