"""Checkpoints, resume and warm starts (docs/algorithm.md §11), on the CPU or (``--backend
gpu``) the GPU.

``resume``: geometric on demand (``--n``, ``--memory``), one thread, each run a fresh process.
The uninterrupted solve; then a solve with checkpoints every ``--interval`` seconds that is
killed (SIGKILL) once half of the uninterrupted process's time has passed (and its first
checkpoint exists), and a process that resumes from its checkpoint. The bar: killed + resumed
wall time <= 1.1 x uninterrupted + interval. Every optimum is compared with the uninterrupted
one.

``warm``: geometric ``--n`` as a matrix, one thread: the solve of the costs, then the costs
times (1 + 0.01 N(0, 1)) solved cold and warm (``init=`` the first solve). The bar: warm rows
evaluated <= 0.3 x cold.

    python -m benchmarks resume --n 16000 --interval 1
    python -m benchmarks resume --backend gpu --what resume --n 64000 --interval 1
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np

from ._common import ROOT, Output, markdown, seconds

_SOLVE = """
import json, sys, time
t0 = time.perf_counter()
import costfns, epslap
src = costfns.problem("geometric", {n}, seed={seed})
kw = dict(threads=1, memory={memory!r}) if "{backend}" == "cpu" else dict(backend="gpu")
kw["candidates"] = False  # the dense method: the one that checkpoints, in every run
if sys.argv[1] == "resume":
    kw["resume"] = sys.argv[2]
elif sys.argv[1] == "checkpoint":
    kw.update(checkpoint=sys.argv[2], checkpoint_every={interval})
sol = epslap.solve(src, **kw)
print(json.dumps(dict(cost=sol.cost, rows=sol.stats["rows_evaluated"],
                      device=sol.stats.get("device"),
                      before=sol.stats.get("rows_evaluated_before_resume"),
                      solve_s=sol.stats["time_estimate_s"] + sol.stats["time_solve_s"],
                      wall_s=time.perf_counter() - t0)))
"""


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--what", nargs="+", default=["resume", "warm"], choices=["resume", "warm"])
    ap.add_argument("--n", type=int, default=16000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--memory", default="1GiB")
    ap.add_argument("--interval", type=float, default=5.0,
                    help="seconds between checkpoints of the killed solve (default %(default)s)")
    ap.add_argument("--backend", default="cpu", choices=["cpu", "gpu"],
                    help="gpu: geometric on demand computed on the device (checkpoints between "
                         "passes), the warm start on a matrix uploaded to it")


def _process(script: str, *argv: str, kill_after: float | None = None) -> tuple[float, dict]:
    """Run ``script`` in a fresh Python; (wall seconds, its JSON line) — or, killed after
    ``kill_after`` seconds and once its checkpoint (``argv[1]``) exists, (those seconds, {})."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT),
                                                        os.environ.get("PYTHONPATH", "")]))
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", script, *argv], stdout=subprocess.PIPE,
                            text=True, env=env)
    if kill_after is not None:
        while proc.poll() is None and (time.perf_counter() - t0 < kill_after
                                       or not os.path.exists(argv[1])):
            time.sleep(0.005)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            return time.perf_counter() - t0, {}
        raise RuntimeError("the solve ended before it was killed: raise --n")
    out, _ = proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"the solve process failed ({proc.returncode})")
    return time.perf_counter() - t0, json.loads(out.strip().splitlines()[-1])


def _resume_row(args) -> dict:
    script = _SOLVE.format(n=args.n, seed=args.seed, memory=args.memory, interval=args.interval,
                           backend=args.backend)
    _process(script, "plain")  # compiles into the disk cache: every timed process loads
    wall, plain = _process(script, "plain")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "run.ckpt")
        killed, _ = _process(script, "checkpoint", path, kill_after=0.5 * wall)
        resumed_wall, resumed = _process(script, "resume", path)
    total = killed + resumed_wall
    return dict(what="resume", backend=args.backend, n=args.n, interval_s=args.interval,
                plain_wall_s=wall,
                plain_rows=plain["rows"], killed_after_s=killed, resumed_wall_s=resumed_wall,
                rows_before_resume=resumed["before"], resumed_rows=resumed["rows"],
                device=plain.get("device"),
                total_s=total, bar_s=1.1 * wall + args.interval,
                optimum_ok=resumed["cost"] == plain["cost"])


def _warm_row(args) -> dict:
    import costfns
    import epslap
    kw = dict(threads=1) if args.backend == "cpu" else dict(backend="gpu")
    c = costfns.generate("geometric", args.n, seed=args.seed)
    first = epslap.solve(c, **kw)
    c *= 1.0 + 0.01 * np.random.default_rng(args.seed).standard_normal(c.shape)
    epslap.solve(c[:200, :200].copy(), init=first.v[:200], **kw)  # compiles the warm path
    t0 = time.perf_counter()
    default = epslap.solve(c, **kw)  # the default route (candidates, then certify, where taken)
    t_default = time.perf_counter() - t0
    t0 = time.perf_counter()
    cold = epslap.solve(c, candidates=False, **kw)  # the dense method, whose exact pass init= runs
    t_cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    warm = epslap.solve(c, init=first, **kw)
    t_warm = time.perf_counter() - t0
    return dict(what="warm", backend=args.backend, n=args.n, cold_s=t_cold, warm_s=t_warm,
                default_s=t_default, default_method=default.stats.get("method"),
                cold_rows=cold.stats["rows_evaluated"], warm_rows=warm.stats["rows_evaluated"],
                device=warm.stats.get("device"),
                warm_start=warm.stats["warm_start"],
                optimum_ok=warm.cost == cold.cost and abs(default.cost - cold.cost)
                <= 1e-9 * abs(cold.cost))


def run(args, out: Output) -> int:
    ok = True
    for what in args.what:
        row = _resume_row(args) if what == "resume" else _warm_row(args)
        out.add(row)
        print(row, flush=True)
        if what == "resume":
            ok &= row["optimum_ok"] and row["total_s"] <= row["bar_s"]
        else:
            ok &= row["optimum_ok"] and row["warm_rows"] <= 0.3 * row["cold_rows"]
    return 0 if ok else 1


def _where(row: dict) -> str:
    """The backend, with the GPU's name."""
    return row.get("backend", "cpu") + (f" ({row['device']})" if row.get("device") else "")


def render(meta: dict, rows: list) -> str:
    parts = []
    res = [r for r in rows if r["what"] == "resume"]
    if res:
        head = ["backend", "n", "uninterrupted", "killed after", "resumed run",
                "killed + resumed", "bar (1.1x + interval)",
                "rows evaluated (resumed / uninterrupted)", "optimum"]
        parts.append(markdown(head, [[
            _where(r), f"{r['n']:,}", seconds(r["plain_wall_s"]),
            seconds(r["killed_after_s"]), seconds(r["resumed_wall_s"]), seconds(r["total_s"]),
            seconds(r["bar_s"]),
            f"{r['resumed_rows']:,} / {r['plain_rows']:,} ({r['rows_before_resume']:,} before "
            "the kill)", "same" if r["optimum_ok"] else "DIFFERS"] for r in res]))
    warm = [r for r in rows if r["what"] == "warm"]
    if warm:
        head = ["backend", "n", "cold", "warm", "time ratio", "rows cold", "rows warm",
                "rows ratio", "optimum"]
        with_default = all("default_s" in r for r in warm)
        if with_default:
            head[4:4] = ["cold, default route"]
        parts.append(markdown(head, [[
            _where(r), f"{r['n']:,}", seconds(r["cold_s"]), seconds(r["warm_s"])]
            + ([f"{seconds(r['default_s'])} ({r['default_method']})"] if with_default else [])
            + [f"{r['warm_s'] / r['cold_s']:.2f}", f"{r['cold_rows']:,}", f"{r['warm_rows']:,}",
               f"{r['warm_rows'] / r['cold_rows']:.2f}", "same" if r["optimum_ok"] else "DIFFERS"]
            for r in warm]))
    return "\n\n".join(parts)
