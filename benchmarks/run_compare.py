"""Hungarian-GPU vs ε-SSP-GPU vs ε-SSP-CPU vs scipy over problem classes and sizes.

    python benchmarks/run_compare.py OUTDIR [--classes int1n random ...] [--sizes 1000 4000 ...]
        [--backends hungarian-gpu gpu cpu scipy] [--cpu-max 8000] [--scipy-max 4000]
        [--hungarian-float-max 8000] [--budget-s 300] [--seed 1]

Writes ``OUTDIR/compare.md`` (Markdown table), ``OUTDIR/compare.json`` and ``OUTDIR/compare.png``
(log-log time vs n, one panel per class, the published HyLAC/FastHA H200 numbers drawn on the
``int1n`` panel).

Classes: ``int0.1n``, ``int1n``, ``int10n``, ``int1000n`` are the Hungarian papers' uniform
integers in ``[0, f·n)`` (generated with NumPy, int32); any other name is a ``costfns`` class
(random, geometric, disjoint, sanity, rank1, ..., integer), materialised on the device.

Times are solver-only with the matrix already where the solver reads it (compile excluded: a
warm-up solve compiles every kernel first): Hungarian-GPU = its kernel (device events);
ε-SSP-GPU and -CPU = estimate + passes; scipy = the call. Each instance is solved by every
backend; the optimal costs are compared and a mismatch is flagged in the table. Runs stop being
started once ``--budget-s`` seconds have passed (the rest are listed as skipped).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np

import costfns
import epslap

#: published solver-only seconds on an H200, uniform integers in [0, n) (the task's bar)
PUBLISHED = {"HyLAC (H200)": {4000: 0.027, 8000: 0.070, 16000: 0.149, 32000: 0.303},
             "FastHA (H200)": {4000: 0.088, 8000: 0.171, 16000: 0.343, 32000: 0.711}}
INT_CLASSES = {"int0.1n": 0.1, "int1n": 1.0, "int10n": 10.0, "int1000n": 1000.0}
LABELS = {"hungarian-gpu": "Hungarian-GPU", "gpu": "ε-SSP-GPU", "cpu": "ε-SSP-CPU",
          "scipy": "scipy"}


def _instance(cupy, cls, n, seed):
    """The device matrix of one instance (CuPy), and a lazy host copy getter."""
    if cls in INT_CLASSES:
        hi = max(1, int(INT_CLASSES[cls] * n))
        host = np.random.default_rng(seed).integers(0, hi, size=(n, n), dtype=np.int32)
        return cupy.asarray(host), (lambda: host)
    from epslap.gpu.solver import materialise
    dev = materialise(costfns.problem(cls, n, seed))
    return dev, (lambda: cupy.asnumpy(dev))


def _time_backend(backend, dev, host_of):
    """(solver seconds, wall seconds, cost, stats) of one solve."""
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


def _warm_up(cupy, backends):
    rng = np.random.default_rng(0)
    for backend in backends:
        if backend in ("hungarian-gpu", "gpu"):
            for c in (rng.integers(0, 50, (64, 64)).astype(np.int32), rng.random((64, 64)),
                      rng.integers(0, 50, (64, 64)) * 2**25):
                epslap.solve(cupy.asarray(c), backend=backend)
        elif backend == "cpu":
            epslap.precompile()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir")
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
    args = ap.parse_args()
    os.makedirs(args.outdir, exist_ok=True)
    from epslap.gpu.solver import import_cupy
    cupy = import_cupy()
    device = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    print(f"device: {device}", flush=True)
    t_begin = time.perf_counter()
    _warm_up(cupy, args.backends)
    print(f"warm-up (compile) {time.perf_counter() - t_begin:.1f} s", flush=True)

    def cap(backend, cls):
        if backend == "cpu":
            return args.cpu_max
        if backend == "scipy":
            return args.scipy_max
        if backend == "hungarian-gpu" and cls not in INT_CLASSES and cls != "integer":
            return args.hungarian_float_max
        return None

    rows = []
    for n in sorted(args.sizes):
        for cls in args.classes:
            if time.perf_counter() - t_begin > args.budget_s:
                rows.append(dict(cls=cls, n=n, backend="*", skipped="time budget"))
                continue
            dev, host_of = _instance(cupy, cls, n, args.seed)
            costs = {}
            for backend in args.backends:
                limit = cap(backend, cls)
                if limit is not None and n > limit:
                    continue
                if time.perf_counter() - t_begin > args.budget_s:
                    rows.append(dict(cls=cls, n=n, backend=backend, skipped="time budget"))
                    continue
                try:
                    solver_s, wall_s, cost, extra = _time_backend(backend, dev, host_of)
                except Exception as exc:  # recorded in the table: a benchmark must finish
                    rows.append(dict(cls=cls, n=n, backend=backend,
                                     error=f"{type(exc).__name__}: {exc}"))
                    print(f"{cls} n={n} {backend}: {type(exc).__name__}: {exc}", flush=True)
                    continue
                costs[backend] = cost
                rows.append(dict(cls=cls, n=n, backend=backend, solver_s=solver_s,
                                 wall_s=wall_s, cost=cost, **extra))
                print(f"{cls:>9} n={n:>6} {LABELS[backend]:>14}: {solver_s:9.4f} s "
                      f"(wall {wall_s:.3f}) cost {cost:.10g} {extra}", flush=True)
            ref = costs.get("scipy", costs.get("cpu", next(iter(costs.values()), None)))
            for r in rows:
                if r.get("cls") == cls and r.get("n") == n and "cost" in r and ref is not None:
                    r["cost_ok"] = abs(r["cost"] - ref) <= 1e-9 * max(1.0, abs(ref)) * n
            del dev
            cupy.get_default_memory_pool().free_all_blocks()
            _write(rows, args, device)   # after every instance: a killed run keeps its results
    _write(rows, args, device)
    _plot(os.path.join(args.outdir, "compare.png"), rows, args, device)
    print(f"wrote {args.outdir}/compare.md, compare.json, compare.png", flush=True)


def _write(rows, args, device):
    meta = dict(device=device, host=platform.node(), date=time.strftime("%Y-%m-%d %H:%M UTC",
                time.gmtime()), args=vars(args), published_h200_int1n=PUBLISHED)
    with open(os.path.join(args.outdir, "compare.json"), "w") as fh:
        json.dump(dict(meta=meta, rows=rows), fh, indent=1)
    _table(os.path.join(args.outdir, "compare.md"), rows, meta, args)


def _table(path, rows, meta, args):
    lines = [f"# Hungarian-GPU vs ε-SSP vs scipy — {meta['device']}, {meta['date']}", "",
             "Solver-only seconds (matrix already on the solver's side, compile excluded). "
             "`!` marks a cost that differs from the reference (scipy, else ε-SSP-CPU).", ""]
    head = "| class | n | " + " | ".join(LABELS[b] for b in args.backends) + " |"
    lines += [head, "|" + "---|" * (2 + len(args.backends))]
    for n in sorted(args.sizes):
        for cls in args.classes:
            cells = []
            for b in args.backends:
                r = next((r for r in rows if r.get("cls") == cls and r.get("n") == n
                          and r.get("backend") in (b, "*")), None)
                if r is None:
                    cells.append("–")
                elif "solver_s" in r:
                    cells.append(f"{r['solver_s']:.4f}" + ("" if r.get("cost_ok", True) else " !"))
                elif "error" in r:
                    cells.append(r["error"].split(":")[0])
                else:
                    cells.append("skipped")
            lines.append(f"| {cls} | {n} | " + " | ".join(cells) + " |")
    lines += ["", "Published, H200, uniform integers in [0, n) (solver-only s): " +
              "; ".join(f"{k}: " + ", ".join(f"{n}: {t}" for n, t in v.items())
                        for k, v in PUBLISHED.items()), ""]
    with open(path, "w") as fh:
        fh.write("\n".join(lines))


def _plot(path, rows, args, device):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    k = len(args.classes)
    cols = min(k, 3)
    fig, axes = plt.subplots((k + cols - 1) // cols, cols, figsize=(5 * cols, 4 * ((k + cols - 1) // cols)),
                             squeeze=False)
    for ax, cls in zip(axes.flat, args.classes):
        for b in args.backends:
            pts = sorted((r["n"], r["solver_s"]) for r in rows
                         if r.get("cls") == cls and r.get("backend") == b and "solver_s" in r)
            if pts:
                ax.loglog(*zip(*pts), marker="o", label=LABELS[b])
        if cls == "int1n":
            for (name, pub), mk in zip(PUBLISHED.items(), ("s", "^")):
                ax.loglog(list(pub), list(pub.values()), linestyle=":", marker=mk, label=name)
        ax.set_title(cls)
        ax.set_xlabel("n")
        ax.set_ylabel("solver seconds")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[k:]:
        ax.axis("off")
    fig.suptitle(f"time vs n — {device}")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
