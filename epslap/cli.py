"""The ``epslap`` command. Flags map one-to-one onto :func:`epslap.solve` keywords."""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="epslap", description="Exact linear assignment by ε-pricing "
                                "shortest augmenting paths (Guthe & Thuerck, ACM TOMS 2021).")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("solve", help="solve one assignment problem")
    s.add_argument("matrix", nargs="?", help="cost matrix as a .npy file")
    s.add_argument("--problem", help="generate one of the paper's classes instead of a file")
    s.add_argument("--n", type=int, default=1000, help="size of a generated problem")
    s.add_argument("--seed", type=int, default=0, help="seed of a generated problem")
    s.add_argument("--maximize", action="store_true", help="maximise instead of minimise")
    s.add_argument("--no-epsilon", dest="epsilon", action="store_false",
                   help="plain successive shortest paths (no ε-pricing)")
    s.add_argument("--backend", default="cpu", help="solver backend (default: cpu)")
    s.add_argument("--memory", help="budget for cost rows of an on-demand problem, e.g. 1GiB")
    s.add_argument("--cache", default="auto", choices=["auto", "lfu", "slru"],
                   help="row cache policy when the matrix does not fit the budget")
    s.add_argument("--threads", type=int, default=None,
                   help="CPU threads for the passes (default: all cores at n >= 4000, else 1)")
    s.add_argument("--dense", action="store_true",
                   help="materialise a generated problem as a dense matrix first")
    s.add_argument("--progress", action="store_true", help="show a progress bar")
    s.add_argument("--json", metavar="OUT", help="write the result and statistics as JSON")
    s.add_argument("--no-verify", dest="verify", action="store_false",
                   help="skip the optimality certificate (it reads the whole matrix once)")
    e = sub.add_parser("emd", help="Earth Mover's Distance between images (all pairs)")
    e.add_argument("images", nargs="+", help="image files (PNG, JPEG, PPM/PGM, TIFF, ...)")
    e.add_argument("--size", type=int, help="downscale each image to about this many pixels")
    e.add_argument("--backend", default="cpu", choices=["cpu", "gpu"])
    e.add_argument("--memory", help="row-cache budget per solve, e.g. 1GiB (cpu)")
    e.add_argument("--position-weight", type=float, default=1.0,
                   help="weight of position against colour in the pixel distance (default 1)")
    e.add_argument("--colour", default="rgb", choices=["rgb", "lab"], help="colour space")
    e.add_argument("--out", help="CSV of finished pairs; a rerun resumes from it")
    e.add_argument("--plot", help="save the 2-D MDS of the distances with thumbnails (PNG)")
    e.add_argument("--assignment", help="save the first pair's colour transfer picture (PNG)")
    return p


def _emd(args) -> int:
    from .emd import emd, emd_matrix, plot_assignment, plot_mds
    kw = dict(size=args.size, backend=args.backend, position_weight=args.position_weight,
              colour=args.colour)
    if args.backend == "cpu":
        kw["memory"] = args.memory
    try:
        if len(args.images) == 1:
            raise ValueError("give at least two images")
        dist = emd_matrix(args.images, out=args.out, **kw)
    except (ValueError, TypeError) as exc:
        print(f"epslap emd: {exc}", file=sys.stderr)
        return 2
    names = [a.rsplit("/", 1)[-1] for a in args.images]
    width = max(len(n) for n in names)
    print(" " * width + "".join(f" {n[:10]:>10}" for n in names))
    for name, row in zip(names, dist):
        print(f"{name:>{width}}" + "".join(f" {x:10.5f}" for x in row))
    if args.plot:
        plot_mds(dist, args.images, args.plot)
        print(f"wrote {args.plot}")
    if args.assignment:
        res = emd(args.images[0], args.images[1], **kw)
        plot_assignment(res, args.images[0], args.images[1], args.assignment, size=args.size)
        print(f"wrote {args.assignment}")
    return 0


def _load_cost(args):
    import costfns
    if (args.matrix is None) == (args.problem is None):
        raise SystemExit("epslap solve: give either a .npy matrix file or --problem NAME")
    if args.matrix is not None:
        try:
            return np.load(args.matrix, mmap_mode="r"), args.matrix
        except (OSError, ValueError) as exc:
            raise SystemExit(f"epslap solve: cannot read {args.matrix!r} as a .npy file: {exc}")
    if args.problem not in costfns.PROBLEMS:
        raise SystemExit(f"epslap solve: unknown problem {args.problem!r}; choose one of "
                         f"{', '.join(sorted(costfns.PROBLEMS))}")
    cost = costfns.problem(args.problem, args.n, args.seed)
    if args.dense:
        t0 = time.perf_counter()
        cost = cost.dense()
        print(f"generated {args.problem} n={args.n} seed={args.seed} in "
              f"{time.perf_counter() - t0:.2f}s")
    return cost, f"{args.problem}(n={args.n}, seed={args.seed})"


def _solve(args) -> int:
    import epslap
    cost, label = _load_cost(args)
    try:
        kw = {} if isinstance(cost, np.ndarray) else dict(memory=args.memory, cache=args.cache)
        if args.threads is not None:
            kw["threads"] = args.threads
        sol = epslap.solve(cost, maximize=args.maximize, epsilon=args.epsilon,
                           backend=args.backend, progress=args.progress, **kw)
    except (ValueError, TypeError) as exc:
        print(f"epslap solve: {exc}", file=sys.stderr)
        return 2
    st = sol.stats
    print(f"problem        {label}  ({st['n_rows']} x {st['n_cols']})")
    print(f"optimal cost   {sol.cost!r}")
    print(f"solve time     {st['time_estimate_s'] + st['time_solve_s']:.3f}s "
          f"(estimate {st['time_estimate_s']:.3f}s, passes {st['time_solve_s']:.3f}s, "
          f"compile/load {st['compile_s']:.2f}s)")
    if st.get("rows_evaluated") is not None:
        print(f"rows evaluated {st['rows_evaluated']:,}"
              + (f"  (threads {st['threads']})" if "threads" in st else ""))
        print(f"passes         {st['passes']}  ε: " + ", ".join(f"{e:.3g}" for e in st["epsilons"]))
    else:  # backend="hungarian-gpu": the classical algorithm's own counts
        print(f"iterations     {st['iterations']:,} ({st['dual_updates']:,} dual updates, "
              f"{st['search_rounds']:,} search rounds)")
    if "cache_policy" in st:
        total = st["cache_hits"] + st["cache_misses"]
        rate = st["cache_hits"] / total if total else 0.0
        print(f"row cache      {st['cache_policy']}, {st['cache_rows']:,} rows, "
              f"{st['cache_hits']:,} hits / {st['cache_misses']:,} misses ({rate:.1%} hit rate)")
    import resource
    print(f"peak RSS       {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.2f} GiB")
    result = {"problem": label, "cost": sol.cost, "stats": st}
    if args.verify:
        cert = epslap.verify(cost, sol.row_ind, sol.col_ind, sol.u, sol.v, maximize=args.maximize)
        print(f"certificate    {'OPTIMAL' if cert['optimal'] else 'NOT PROVEN'}: duality gap "
              f"{cert['gap']:.3g}, max dual violation {cert['max_violation']:.3g}"
              + ("" if cert["optimal"] else f" ({cert['reason']})"))
        result["certificate"] = cert
    if args.json:
        result["row_ind"] = sol.row_ind.tolist()
        result["col_ind"] = sol.col_ind.tolist()
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=1, default=float)
        print(f"wrote {args.json}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "solve":
        return _solve(args)
    if args.command == "emd":
        return _emd(args)
    return 1  # pragma: no cover - argparse enforces the sub-command


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
