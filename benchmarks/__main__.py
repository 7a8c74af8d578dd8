"""``python -m benchmarks <table> [options]``: run one benchmark table, or print a result file.

    python -m benchmarks --help
    python -m benchmarks cpu --sizes 1000 2000 --repeats 3
    python -m benchmarks table benchmarks/results/cpu.json
"""
from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

from ._common import Output, default_path, gpu_name, load, metadata_for, require_gpu, resolve

#: subcommand -> (module, one line)
TABLES = {
    "cpu": ("cpu", "CPU speed: epslap vs every CPU peer installed, per class and size"),
    "small": ("small", "CPU per-call time at n = 5 … 2000: epslap vs every CPU peer installed"),
    "batch": ("batch", "CPU batches of small problems: solve_batch vs lapcpp's lapjv_batch"),
    "rectangular": ("rectangular", "n1 x n2 with few rows to n2/2: epslap vs scipy and lapcpp"),
    "fidelity": ("fidelity", "rows evaluated vs the paper's Table 1"),
    "ondemand": ("ondemand", "costs on demand under a memory budget vs the dense solve"),
    "memory": ("memory", "peak RSS under memory=: what the budget bounds, what the process adds"),
    "gpu": ("gpu", "GPU backend vs the published CUDA implementation (needs a GPU)"),
    "gpubatch": ("gpu_batch", "GPU batches: solve_batch vs torch-linear-assignment (needs a GPU)"),
    "gpusingle": ("gpu_single", "one small problem on the GPU: batch of one vs ε solver (a GPU)"),
    "hungarian": ("hungarian", "GPU Hungarian vs HyLAC/FastHA, ε-SSP and scipy (needs a GPU)"),
    "scale": ("scale", "geometric on demand at large n on one GPU (needs a GPU)"),
    "sparse": ("sparse", "sparse input (k-nearest-neighbour graphs) vs scipy and lapmod"),
    "candidates": ("candidates", "candidates then certify vs the dense method (and POT lazy)"),
    "emd": ("emd", "image EMD: all pairs of ten photographs, time per pair"),
    "parallel": ("parallel", "CPU: 2 threads against 1 per class and size"),
    "ab": ("ab", "A/B of two checkouts: CPU solve times, alternating fresh processes"),
    "resume": ("resume", "CPU: a killed solve resumed from its checkpoint; warm starts"),
    "p2p": ("p2p", "a Dijkstra step's agreement between two GPUs (peer access; needs GPUs)"),
    "split": ("split", "one problem split over two GPUs against one (needs GPUs)"),
    "passes": ("passes", "the candidates' streaming passes on one GPU and on several (GPUs)"),
}

#: what a result file's name says about its table, for files without meta["table"]
_PREFIXES = {"compare": "hungarian", "cache": "ondemand", "trust": "ab"}


def _module(name: str):
    return importlib.import_module(f".{TABLES[name][0]}", __package__)


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run one benchmark table and write benchmarks/results/<table>.json, or print "
                    "a result file as Markdown ('table').",
        epilog="Current results: benchmarks/README.md. Each table's options: "
               "python -m benchmarks <table> --help")
    sub = ap.add_subparsers(dest="table", required=True, metavar="<table>")
    for name, (_, line) in TABLES.items():
        mod = _module(name)
        p = sub.add_parser(name, help=line, description=mod.__doc__,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        mod.add_arguments(p)
        p.add_argument("--out", "--json", dest="out", default=str(default_path(name)),
                       help="the result file (default: %(default)s)")
    t = sub.add_parser("table", help="print result files (JSON) as Markdown tables",
                       description="Print each result file as a Markdown table, after one line "
                                   "with its date, machine and command.")
    t.add_argument("paths", nargs="+", metavar="FILE.json",
                   help="a result file; a path relative to benchmarks/ works too")
    return ap


def table_kind(path: Path, meta: dict) -> str:
    """The table a result file belongs to: ``meta["table"]``, else its name's first word."""
    kind = meta.get("table")
    if kind in TABLES:
        return kind
    stem = path.stem.split("_")[0]
    kind = _PREFIXES.get(stem, stem)
    if kind not in TABLES:
        raise SystemExit(f"benchmarks table: cannot tell which table {path} holds "
                         f"(no meta.table; name not one of {sorted(TABLES)})")
    return kind


def heading(meta: dict) -> str:
    """One line: date, machine (and GPU), command, commit."""
    parts = [str(meta.get("date", "date not recorded"))]
    gpu = meta.get("gpu") or meta.get("device")
    machine = str(meta.get("machine", "machine not recorded"))
    parts.append(machine + (f"; {gpu}" if gpu and gpu not in machine else ""))
    if meta.get("command"):
        parts.append(f"`{meta['command']}`")
    if meta.get("epslap_commit") or meta.get("commit"):
        parts.append(f"epslap {meta.get('epslap_commit') or meta.get('commit')}")
    if meta.get("note"):
        parts.append(str(meta["note"]))
    return ". ".join(parts) + "."


def render_file(path: str) -> str:
    p = resolve(path)
    if not p.exists():
        raise SystemExit(f"benchmarks table: no such file: {path}")
    meta, rows = load(p)
    return heading(meta) + "\n\n" + _module(table_kind(p, meta)).render(meta, rows)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parser().parse_args(argv)
    if args.table == "table":
        print("\n\n".join(render_file(p) for p in args.paths))
        return 0
    mod = _module(args.table)
    # the tables time the compiled kernels: no first calls in NumPy's vector form (the small
    # path's, before its kernel is compiled; timed on its own on the benchmark page)
    from epslap.cpu import jv_numpy
    jv_numpy.compile_from_now()
    gpu = None
    if getattr(mod, "NEEDS_GPU", False):
        gpu = gpu_name(require_gpu(args.table))
    out = Output(args.out, metadata_for(args.table, argv, gpu=gpu))
    status = mod.run(args, out)
    out.save()
    print()
    print(heading(out.meta))
    print()
    print(mod.render(out.meta, out.rows))
    print(f"\nwrote {args.out}")
    return int(status or 0)


if __name__ == "__main__":
    sys.exit(main())
