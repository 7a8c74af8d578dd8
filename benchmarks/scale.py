"""Scale: geometric on demand at large n on one GPU, with its checks.

    python -m benchmarks scale 512000

Needs an NVIDIA GPU with CuPy (``--devices 0,1``: one problem split over two GPUs). The costs
(2-D squared distances) are computed inside the kernels; nothing n x n is stored. After a
warm-up solve at n = 2000 (compile), one solve per n, timed around the call; the optimal cost is
recomputed on the host from the points and the returned assignment, and the assignment is
checked to be a permutation. The device checks the dual certificate over all n² pairs
(``certificate_max_violation``).

A solve longer than one sitting runs in segments (a GPU machine lent for 10 minutes at a time):

    python -m benchmarks scale 1024000 --checkpoint big.ckpt --stop-after 540

writes a checkpoint every ``--checkpoint-every`` and, ``--stop-after`` seconds after the command
started, stops the solve as Ctrl-C does (a last checkpoint, written between two augmentations).
The same command run again resumes from the checkpoint, on this machine or another one given the
file, until the solve ends. Each segment is logged in ``big.ckpt.segments.json``; the row of the
finished solve gives the total of the segments' wall times and the number of resumes.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import threading
import time
from pathlib import Path

from ._common import Output, gpu_name, markdown, require_gpu

NEEDS_GPU = True

_STATS = ("rows_evaluated", "passes", "epsilons", "time_estimate_s", "time_solve_s", "grid",
          "threads_per_block", "column_state_bytes_shared", "certificate_max_violation",
          "gpu_single_block_rerun", "host_syncs_per_augmentation")


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("n", type=int, nargs="+", help="problem sizes (n x n)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--devices", default="0", metavar="IDS",
                    help="GPU ids separated by commas; several split each pass over them "
                         "(default: %(default)s)")
    ap.add_argument("--checkpoint", metavar="FILE",
                    help="checkpoint file; resumed from where it exists (one n only)")
    ap.add_argument("--checkpoint-every", default="3min", metavar="INTERVAL",
                    help="time between checkpoints (default: %(default)s)")
    ap.add_argument("--stop-after", type=float, metavar="SECONDS",
                    help="stop the solve this long after the command started, as Ctrl-C "
                         "does, leaving the checkpoint; the command run again goes on (needs "
                         "--checkpoint)")


def run(args: argparse.Namespace, out: Output) -> None:
    if args.checkpoint and len(args.n) != 1:
        raise SystemExit("benchmarks scale: --checkpoint takes one n")
    if args.stop_after and not args.checkpoint:
        raise SystemExit("benchmarks scale: --stop-after needs --checkpoint")
    started = time.monotonic()
    cupy = require_gpu("scale")
    import costfns
    import epslap
    from epslap.checkpoint import load as load_checkpoint
    ids = [int(d) for d in args.devices.split(",")]
    on = ids if len(ids) > 1 else ids[0]  # solve's device=
    epslap.solve(costfns.Geometric(2000, seed=2), backend="gpu", device=on)  # compile, warm
    device = gpu_name(cupy) if len(ids) == 1 else f"{len(set(ids))} x {gpu_name(cupy)}"
    for n in args.n:
        src = costfns.Geometric(n, seed=args.seed)
        kw, segments, log = {}, [], None
        if args.checkpoint:
            log = Path(args.checkpoint + ".segments.json")
            segments = json.loads(log.read_text()) if log.exists() else []
            kw = dict(checkpoint=args.checkpoint, checkpoint_every=args.checkpoint_every)
            if os.path.exists(args.checkpoint):
                kw["resume"] = args.checkpoint
        stopper = _interrupt_after(args.stop_after and
                                   max(1.0, args.stop_after - (time.monotonic() - started)))
        t0 = time.perf_counter()
        try:
            sol = epslap.solve(src, backend="gpu", device=on, **kw)
        except KeyboardInterrupt:
            wall = time.perf_counter() - t0
            head = load_checkpoint(args.checkpoint)["header"]
            segments.append(dict(device=device, wall_s=wall, finished=False,
                                 rows_evaluated=head["rows_evaluated"], passes=head["passes"],
                                 checkpoint_reason=head["reason"]))
            log.write_text(json.dumps(segments, indent=1) + "\n")
            print(f"n={n}: stopped after {wall:.1f} s (segment {len(segments)}), "
                  f"{head['rows_evaluated']:,} rows evaluated so far; run the command again "
                  "to go on", flush=True)
            raise SystemExit(3) from None
        finally:
            if stopper is not None:
                stopper.cancel()
        wall = time.perf_counter() - t0
        st = sol.stats
        d = src.X[sol.row_ind] - src.Y[sol.col_ind]
        recomputed = float((d * d).sum(axis=1).sum())
        row = dict(n=n, device=device, wall_s=wall, cost=float(sol.cost),
                   cost_recomputed=recomputed,
                   perm_ok=bool(len(set(sol.col_ind.tolist())) == n),
                   **{k: st[k] for k in _STATS if k in st})
        if log is not None:
            segments.append(dict(device=device, wall_s=wall, finished=True,
                                 rows_evaluated=st["rows_evaluated"], passes=st["passes"]))
            log.write_text(json.dumps(segments, indent=1) + "\n")
            row.update(wall_s=sum(s["wall_s"] for s in segments), resumes=len(segments) - 1,
                       segments=segments,
                       devices=sorted({s["device"] for s in segments}))
        out.add(row)
        print(f"n={n}: {row['wall_s']:.1f} s, {st['rows_evaluated']:,} rows evaluated", flush=True)


def _interrupt_after(seconds: float | None):
    """A timer that sends this process SIGINT (Ctrl-C) after ``seconds``; None for none."""
    if not seconds:
        return None
    timer = threading.Timer(seconds, os.kill, (os.getpid(), signal.SIGINT))
    timer.daemon = True
    timer.start()
    return timer


def render(meta: dict, rows: list[dict]) -> str:
    if rows and all("cost" not in r for r in rows):  # the segments of a solve not finished yet
        return markdown(["GPU", "n", "segment", "wall s", "rows evaluated so far", "finished"],
                        [[r["device"], f"{r['n']:,}", r["segment"], f"{r['wall_s']:.1f}",
                          f"{r['rows_evaluated']:,}", "yes" if r["finished"] else "no"]
                         for r in rows])
    body = []
    for r in rows:
        segmented = "segments" in r  # the estimate and passes times are the last segment's
        per_row = (r["wall_s"] if segmented else r["time_solve_s"]) / r["rows_evaluated"] * 1e6
        same = "yes" if abs(r["cost"] - r.get("cost_recomputed", r["cost"])) <= 1e-9 * r["n"] \
            else "NO"
        gpus = ", ".join(r.get("devices") or [r.get("device") or meta.get("gpu") or "–"])
        body.append([gpus, f"{r['n']:,}", f"{r['wall_s']:.1f}", r.get("resumes", 0),
                     "–" if segmented else f"{r['time_estimate_s']:.1f}",
                     "–" if segmented else f"{r['time_solve_s']:.1f}",
                     f"{r['rows_evaluated']:,}", r["passes"],
                     f"{per_row:.1f}", f"{r['cost']:.10g}", same,
                     f"{r['certificate_max_violation']:.1e}"])
    return markdown(["GPU", "n", "wall s", "resumes", "estimate s", "passes s", "rows evaluated",
                     "passes", "µs per row", "optimal cost", "= cost recomputed on the host",
                     "certificate: max dual violation"], body)
