"""Small problems, one call at a time: epslap against every CPU peer at n = 5 … 2000.

Per-call time: each solver is called in a loop long enough to time (at least ``--min-time``
seconds), the solvers take turns round by round (so that load from other processes hits all of
them alike), and a cell is the best round. epslap is timed twice: ``epslap.solve`` (the whole
result: duals, stats) and the scipy drop-in ``epslap.linear_sum_assignment``. One thread
everywhere; every peer's optimum is checked against epslap's. Shapes ``n`` (square) and, with
``--rect``, 100x10 and 10x100 (the detection-matching shape).

    python -m benchmarks small --sizes 5 10 20 50 100 200 500 1000 2000
"""
from __future__ import annotations

import argparse
import time
from typing import Callable

import numpy as np

from ._common import Output, markdown, seconds

CLASSES = ["random", "geometric", "sanity"]


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--sizes", type=int, nargs="+", default=[5, 10, 20, 50, 100, 200, 500, 1000])
    ap.add_argument("--classes", nargs="+", default=CLASSES)
    ap.add_argument("--dtypes", nargs="+", default=["float64", "int64"])
    ap.add_argument("--rect", action="store_true", help="add 100x10 and 10x100 random problems")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--min-time", type=float, default=0.02,
                    help="seconds of calls per measurement (default: %(default)s)")
    ap.add_argument("--seed", type=int, default=1)


def peers() -> dict[str, tuple[Callable, Callable]]:
    """name -> ``(call, cost)`` for the peers importable here: ``call(c)`` is the peer's own call
    as a user makes it (what is timed; rectangular input where the peer takes it), ``cost(c,
    result)`` the optimal cost read from its result (checked once, not timed: scipy's call
    returns indices, and summing the costs they pick would add about 2 µs to a 5 × 5 call)."""
    out: dict[str, tuple[Callable, Callable]] = {}
    from scipy.optimize import linear_sum_assignment
    out["scipy"] = (linear_sum_assignment, lambda c, rk: c[rk[0], rk[1]].sum())
    first = (lambda c, res: res[0])
    try:
        import lap
        out["lapx.lapjv"] = (lambda c: lap.lapjv(c, extend_cost=c.shape[0] != c.shape[1]), first)
        out["lapx.lapjvx"] = (lambda c: lap.lapjvx(c, extend_cost=c.shape[0] != c.shape[1]),
                              first)
        if hasattr(lap, "lapjvc"):
            out["lapx.lapjvc"] = (lap.lapjvc, first)
        for name in ("lapjvr", "lapjvh"):  # lapx's fastest variants (rectangular natively)
            if hasattr(lap, name):
                fn = getattr(lap, name)
                out[f"lapx.{name}"] = ((lambda c, fn=fn: fn(c, extend_cost=c.shape[0] != c.shape[1])),
                                       first)
    except ImportError:
        pass
    try:
        import lapcpp
        out["lapcpp"] = (lapcpp.lapjv, first)
    except ImportError:
        pass
    try:
        import fastlap
        out["fastlap"] = (fastlap.lapjvx, first)
    except ImportError:
        pass
    return out


def per_call(fn: Callable[[], object], min_time: float) -> float:
    """Seconds per call of ``fn``, from a loop of at least ``min_time`` seconds."""
    calls = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        elapsed = time.perf_counter() - t0
        if elapsed >= min_time:
            return elapsed / calls
        calls = max(2 * calls, int(calls * 1.2 * min_time / max(elapsed, 1e-9)))


def _problems(args):
    import costfns
    for dtype in args.dtypes:
        for name in args.classes:
            for n in args.sizes:
                c = costfns.generate(name, n, seed=args.seed)
                if dtype == "int64":
                    c = np.round(c * 1000).astype(np.int64)
                yield name, dtype, f"{n}x{n}", np.ascontiguousarray(c)
        if args.rect:
            rng = np.random.default_rng(args.seed)
            for shape in [(100, 10), (10, 100)]:
                c = rng.random(shape)
                if dtype == "int64":
                    c = np.round(c * 1000).astype(np.int64)
                yield "random", dtype, f"{shape[0]}x{shape[1]}", c


def run(args: argparse.Namespace, out: Output) -> None:
    import epslap
    found = peers()
    out.meta["peers"] = list(found)
    for name, dtype, shape, c in _problems(args):
        fns = {"epslap": lambda c=c: epslap.solve(c).cost,
               "epslap lsa": lambda c=c: epslap.linear_sum_assignment(c)}
        usable = {}
        for p, (call, cost_of) in found.items():
            try:  # a peer that refuses this input (a dtype, a shape) is left out of the row
                got = cost_of(c, call(c))
            except Exception:  # noqa: BLE001 - any refusal leaves the cell empty
                continue
            usable[p] = call
            ref = epslap.solve(c).cost
            if abs(float(got) - float(ref)) > 1e-9 * max(1.0, abs(float(ref))):
                raise SystemExit(f"benchmarks small: {p} returned {got}, epslap {ref} "
                                 f"({name} {dtype} {shape})")
        fns.update({p: (lambda fn=fn, c=c: fn(c)) for p, fn in usable.items()})
        for fn in fns.values():
            fn()  # warm: compiled, caches filled
        best = {k: float("inf") for k in fns}
        for _ in range(args.rounds):
            for k, fn in fns.items():
                best[k] = min(best[k], per_call(fn, args.min_time))
        ours = ("epslap", "epslap lsa")
        peer_best = min((t for k, t in best.items() if k not in ours), default=None)
        fastest = min((k for k in best if k not in ours), key=best.get, default=None)
        stats = epslap.solve(c).stats
        out.add(dict(cls=name, dtype=dtype, shape=shape, epslap_s=best["epslap"],
                     epslap_lsa_s=best["epslap lsa"], method=stats.get("method", "eps"),
                     peers={k: t for k, t in best.items() if k not in ours},
                     fastest_peer=fastest,
                     ratio=best["epslap"] / peer_best if peer_best else None,
                     ratio_lsa=best["epslap lsa"] / peer_best if peer_best else None))
        print(f"{name} {dtype} {shape}: epslap {best['epslap'] * 1e6:.1f} us "
              f"(lsa {best['epslap lsa'] * 1e6:.1f}), fastest {fastest} "
              f"{peer_best * 1e6 if peer_best else 0:.1f} us", flush=True)


def render(meta: dict, rows: list[dict]) -> str:
    names = list(meta.get("peers") or sorted({k for r in rows for k in r["peers"]}))
    lsa = any("epslap_lsa_s" in r for r in rows)
    head = (["class", "dtype", "shape", "epslap µs"] + (["epslap lsa µs"] if lsa else [])
            + ["path"] + [f"{p} µs" for p in names] + ["fastest peer", "epslap / fastest"]
            + (["lsa / fastest"] if lsa else []))
    body = []
    for r in rows:
        body.append([r["cls"], r["dtype"], r["shape"], _us(r["epslap_s"])]
                    + ([_us(r.get("epslap_lsa_s"))] if lsa else []) + [r["method"]]
                    + [_us(r["peers"].get(p)) for p in names]
                    + [r["fastest_peer"] or "–", _ratio(r["ratio"])]
                    + ([_ratio(r.get("ratio_lsa"))] if lsa else []))
    return markdown(head, body)


def _ratio(x: float | None) -> str:
    return "–" if x is None else f"{x:.2f}"


def _us(t: float | None) -> str:
    return "–" if t is None else seconds(t * 1e6, 3)
