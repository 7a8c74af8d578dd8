"""The ``epslap`` command. Flags map one-to-one onto :func:`epslap.solve` keywords.

Every mistake ends the command with one line on stderr and no traceback. Exit codes: 0 done,
2 a usage error (a bad argument or value, an option that does not apply to the input), 1 a
failure (an infeasible problem, no GPU or CuPy, a file that cannot be read or written, out of
memory), 130 interrupted (Ctrl-C).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import time
import warnings

import numpy as np

from . import __version__
from .checkpoint import EVERY_DEFAULT as CHECKPOINT_EVERY

USAGE, FAILURE, INTERRUPTED = 2, 1, 130


class UsageError(Exception):
    """A bad argument or value: exit code 2."""


class Failure(Exception):
    """The command could not do its work with valid arguments: exit code 1."""


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors as one line (argparse prints the usage block and the error)."""

    def error(self, message):
        raise UsageError(f"{self.prog}: {message} (see {self.prog} --help)")


def _int_at_least(low: int, what: str):
    """An argparse type: an integer >= ``low``, else one line naming ``what`` it must be."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = low - 1
        if value < low:
            raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
        return value
    return parse


_positive_int = _int_at_least(1, "a positive integer")
_seed = _int_at_least(0, "an integer >= 0")


def _weight(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text!r}")
    return value


def _memory(text: str) -> str:
    """A size such as ``1GiB``, checked here so that a typo is a usage error before any work."""
    from ._validate import parse_memory
    try:
        parse_memory(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _devices(text: str):
    """GPU ids: ``0`` (one device), ``0,1`` (one problem split over several) or ``all``."""
    if text == "all":
        return text
    try:
        ids = [int(t) for t in text.split(",")]
    except ValueError:
        ids = [-1]
    if not ids or min(ids) < 0:
        raise argparse.ArgumentTypeError(f"must be a GPU id, ids separated by commas or all "
                                         f"(0, 0,1 or all), got {text!r}")
    return ids[0] if len(ids) == 1 else ids


def _threads_help() -> str:
    from .cpu.cores import AUTO_MIN_COLS, AUTO_MIN_COLS_FLOAT
    return (f"CPU threads for the passes (default: every free core when the problem has at "
            f"least {AUTO_MIN_COLS_FLOAT} columns for a float matrix in memory (or a problem "
            f"whose matrix fits --memory), {AUTO_MIN_COLS} for integers or costs through row "
            f"caches, else 1)")


def _solve_parser(sub) -> None:
    import costfns
    names = sorted(costfns.PROBLEMS)
    s = sub.add_parser("solve", help="solve one assignment problem",
                       description="Solve one assignment problem exactly and certify the result.")
    s.add_argument("matrix", nargs="?", help="cost matrix as a .npy file")
    s.add_argument("--problem", choices=names, metavar="NAME",
                   help="generate one of the paper's classes instead of reading a file: "
                        + ", ".join(names))
    s.add_argument("--n", type=_positive_int, help="size of a generated problem (default 1000)")
    s.add_argument("--seed", type=_seed, help="seed of a generated problem (default 0)")
    s.add_argument("--maximize", action="store_true", help="maximise instead of minimise")
    s.add_argument("--no-epsilon", dest="epsilon", action="store_false",
                   help="plain successive shortest paths (no ε-pricing)")
    s.add_argument("--backend", default="cpu", choices=["cpu", "gpu", "hungarian-gpu"],
                   help="solver backend (default: cpu)")
    s.add_argument("--memory", type=_memory,
                   help="budget for cost rows computed on demand (--problem), e.g. 1GiB; with "
                        "--backend gpu also for a matrix (streamed through a device row cache). "
                        "Refused where there is nothing to bound (a matrix on the CPU)")
    s.add_argument("--cache", choices=["auto", "lfu", "slru"],
                   help="row cache policy when the rows do not fit --memory (default auto)")
    s.add_argument("--threads", type=_positive_int, help=_threads_help())
    s.add_argument("--candidates", type=_candidates, default="auto", metavar="auto|off|K",
                   help="solve on each row's K cheapest columns, then certify against every "
                        "cost (default auto: where measured to pay; off: the dense method)")
    s.add_argument("--device", type=_devices, metavar="IDS",
                   help="GPU for --backend gpu or hungarian-gpu (default 0); with --backend gpu, "
                        "several ids (0,1) split the problem's passes over those GPUs, and "
                        "'all' splits the candidates' passes over every visible GPU")
    s.add_argument("--dense", action="store_true",
                   help="materialise a generated problem as a dense matrix first")
    s.add_argument("--progress", action="store_true", help="show a progress bar")
    s.add_argument("--json", metavar="OUT", help="write the result and statistics as JSON")
    s.add_argument("--no-verify", dest="verify", action="store_false",
                   help="skip the optimality certificate (it reads the whole matrix once)")
    s.add_argument("--checkpoint", metavar="FILE",
                   help="write the solve's state to FILE after the estimate, every "
                        "--checkpoint-every and on Ctrl-C")
    s.add_argument("--checkpoint-every", metavar="DURATION", default=CHECKPOINT_EVERY,
                   help="time between checkpoints, e.g. 90s, 5min, 1h (default 5min)")
    s.add_argument("--resume", metavar="FILE",
                   help="go on from a checkpoint of the same problem (new checkpoints go to "
                        "--checkpoint, else to FILE)")


def _emd_parser(sub) -> None:
    e = sub.add_parser("emd", help="Earth Mover's Distance between images (all pairs)",
                       description="Exact EMD of every pair of images (uniform mass per pixel).")
    e.add_argument("images", nargs="+", help="two or more image files (PNG, JPEG, PPM/PGM, TIFF)")
    e.add_argument("--size", type=_positive_int,
                   help="pixels per image: both images of a pair are resampled onto one grid of "
                        "at most this many pixels (default: the smaller image's pixel count)")
    e.add_argument("--metric", default="euclidean", choices=["euclidean", "sqeuclidean"],
                   help="ground distance: euclidean gives W1, the EMD of Rubner et al. "
                        "(default); sqeuclidean gives W2² (the paper's cost)")
    e.add_argument("--unmatched", default="resample", choices=["resample", "drop"],
                   help="pairs of different pixel counts: resample onto one grid (default, a "
                        "balanced EMD) or drop the larger image's surplus pixels (partial "
                        "matching)")
    e.add_argument("--backend", default="cpu", choices=["cpu", "gpu"])
    e.add_argument("--memory", type=_memory, help="row-cache budget per solve, e.g. 1GiB")
    e.add_argument("--position-weight", type=_weight, default=1.0,
                   help="weight of position against colour in the pixel distance (default 1)")
    e.add_argument("--colour", default="rgb", choices=["rgb", "lab"], help="colour space")
    e.add_argument("--out", help="CSV of finished pairs; a rerun resumes from it")
    e.add_argument("--plot", help="save the 2-D MDS of the distances with thumbnails (PNG)")
    e.add_argument("--assignment", help="save the first pair's colour transfer picture (PNG)")
    e.add_argument("--no-progress", dest="progress", action="store_false",
                   help="no progress bar of the pairs on stderr")
    e.add_argument("--threads", type=_positive_int,
                   help="CPU threads per solve (default: automatic; with --workers, the cores "
                        "shared among the workers)")
    where = e.add_mutually_exclusive_group()
    where.add_argument("--scheduler", metavar="ADDRESS",
                       help="solve the pairs on the workers of this Dask scheduler (e.g. "
                            "tcp://host:8786); each worker reads the images itself, so the "
                            "paths must be valid there. Needs epslap[dask]")
    where.add_argument("--workers", type=_positive_int, metavar="N",
                       help="solve the pairs on a local Dask cluster of N worker processes "
                            "(one per GPU with --backend gpu, through dask-cuda). Needs "
                            "epslap[dask]")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="epslap", description="Exact linear assignment by ε-pricing shortest "
                "augmenting paths (Guthe & Thuerck, ACM TOMS 2021). Exit codes: 0 done, "
                "1 failure, 2 usage error, 130 interrupted.")
    p.add_argument("--version", action="version", version=f"epslap {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    _solve_parser(sub)
    _emd_parser(sub)
    return p


def _check_size_words(argv: list[str], name: str) -> None:
    """``--memory 1 GiB`` (two words) would make ``GiB`` the matrix or an image: say so."""
    from ._validate import MEMORY_UNITS
    number = re.compile(r"[0-9]*\.?[0-9]+")
    for k, word in enumerate(argv):
        value, rest = None, argv[k + 1:]
        if word == "--memory" and rest:
            value, rest = rest[0], rest[1:]
        elif word.startswith("--memory="):
            value = word.split("=", 1)[1]
        if value is not None and number.fullmatch(value) and rest \
                and rest[0].lower() in MEMORY_UNITS:
            raise UsageError(f"{name}: --memory takes one word: write --memory {value}{rest[0]}"
                             f" (or --memory '{value} {rest[0]}'), not --memory {value} "
                             f"{rest[0]}")


def _check_output(path: str | None, flag: str, name: str) -> None:
    """Fail before the work, not after it, when an output file's folder does not exist."""
    if path is not None:
        from ._validate import output_path_problem
        why = output_path_problem(path)
        if why is not None:
            raise Failure(f"{name}: {flag} {path}: {why}")


def _emd(args) -> int:
    from costfns.images import load_image

    from .emd import emd, emd_matrix, plot_assignment, plot_mds
    if len(args.images) < 2:
        raise UsageError("epslap emd: give at least two images")
    for flag in ("out", "plot", "assignment"):
        _check_output(getattr(args, flag), f"--{flag}", "epslap emd")
    if args.scheduler is None:  # every image readable before the first of k(k-1)/2 solves
        for path in args.images:
            load_image(path)
    client, threads = _emd_client(args)
    kw = {"size": args.size, "metric": args.metric, "unmatched": args.unmatched,
          "backend": args.backend, "position_weight": args.position_weight,
          "colour": args.colour, "memory": args.memory, "threads": args.threads or threads}
    first = {}

    def keep_first(i: int, j: int, res) -> None:  # --assignment draws this pair's matching
        if (i, j) == (0, 1):
            first["res"] = res
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", RuntimeWarning)
            dist = emd_matrix(args.images, out=args.out, progress=args.progress,
                              on_pair=keep_first, client=client, **kw)
    finally:
        if client is not None:
            from ._runner import close_client
            close_client(client)
    _print_matrix(args.images, dist, args.metric)
    for w in caught:
        print(f"epslap emd: {w.message}", file=sys.stderr)
    if np.isnan(dist).any():
        return FAILURE
    if args.plot:
        plot_mds(dist, args.images, args.plot, metric=args.metric)
        print(f"wrote {args.plot}")
    if args.assignment:
        res = first.get("res") or emd(args.images[0], args.images[1], **kw)  # resumed pair
        plot_assignment(res, args.images[0], args.images[1], args.assignment, size=args.size)
        print(f"wrote {args.assignment}")
    return 0


def _emd_client(args) -> tuple:
    """(Dask client or None, threads per solve or None) for --scheduler / --workers."""
    if args.scheduler is None and args.workers is None:
        return None, None
    from ._runner import make_client
    try:
        return make_client(args.scheduler, args.workers, gpu=args.backend == "gpu")
    except ImportError as exc:
        raise Failure(f"epslap emd: {exc}") from None
    except OSError as exc:
        raise Failure(f"epslap emd: cannot reach the Dask scheduler {args.scheduler} "
                      f"({_one_line(exc)})") from None


def _print_matrix(images, dist, metric: str) -> None:
    what = ("W2² (mean squared feature distance)" if metric == "sqeuclidean"
            else "W1 (mean Euclidean feature distance)")
    print(f"EMD, {what}")
    names = [os.path.basename(a) for a in images]
    width = max(len(n) for n in names)
    print(" " * width + "".join(f" {n[:10]:>10}" for n in names))
    for name, row in zip(names, dist):
        print(f"{name:>{width}}" + "".join(f" {x:10.5f}" for x in row))


class Interrupted(KeyboardInterrupt):
    """Ctrl-C after a checkpoint was written: the message says how to go on."""


def _check_solve_options(args) -> None:
    """Refuse options that would be ignored for this input and backend (one line each)."""
    ckpt = [f for f, v in (("--checkpoint", args.checkpoint), ("--resume", args.resume)) if v]
    if ckpt and args.backend == "hungarian-gpu":
        raise UsageError(f"epslap solve: {' and '.join(ckpt)} apply to --backend cpu and gpu")
    if (args.matrix is None) == (args.problem is None):
        raise UsageError("epslap solve: give either a .npy matrix file or --problem NAME"
                         + ("" if args.matrix is None else ", not both"))
    if args.matrix is not None:
        given = [f for f, v in (("--n", args.n), ("--seed", args.seed),
                                ("--dense", args.dense or None)) if v is not None]
        if given:
            raise UsageError(f"epslap solve: {', '.join(given)} appl{'ies' if len(given) == 1 else 'y'}"
                             " to --problem, not to a .npy matrix")
    in_memory = args.matrix is not None or args.dense
    bounded = [f for f, v in (("--memory", args.memory), ("--cache", args.cache)) if v]
    flags, s = " and ".join(bounded), "" if len(bounded) > 1 else "s"
    if bounded and args.backend == "hungarian-gpu":
        raise UsageError(f"epslap solve: {flags} do{'es' if s else ''} not apply to --backend "
                         "hungarian-gpu (it holds the dense matrix on the device)")
    if bounded and in_memory and args.backend == "cpu":
        what = "a .npy matrix is read whole" if args.matrix else "--dense materialises the matrix"
        raise UsageError(f"epslap solve: {flags} bound{s} costs computed on demand, and {what}: "
                         "nothing to bound on the CPU (drop it, or use --backend gpu to stream "
                         "the matrix through a device row cache)")
    if args.threads is not None and args.backend != "cpu":
        raise UsageError("epslap solve: --threads applies to --backend cpu")
    if args.device is not None and args.backend == "cpu":
        raise UsageError("epslap solve: --device applies to --backend gpu and hungarian-gpu")
    if isinstance(args.device, (list, str)) and args.backend != "gpu":
        raise UsageError("epslap solve: several --device ids (one problem split over GPUs) "
                         "apply to --backend gpu")
    if not args.epsilon and args.backend == "hungarian-gpu":
        raise UsageError("epslap solve: --no-epsilon does not apply to --backend hungarian-gpu")
    if args.checkpoint_every != CHECKPOINT_EVERY and not ckpt:
        raise UsageError("epslap solve: --checkpoint-every applies with --checkpoint or --resume")
    if ckpt:
        from .checkpoint import parse_interval
        try:
            parse_interval(args.checkpoint_every)
        except ValueError as exc:  # the flag's name, not the keyword's
            raise UsageError("epslap solve: --checkpoint-every" + str(exc).partition(
                "checkpoint_every")[2]) from None
    if args.json is not None:
        if not args.json.strip():
            raise UsageError("epslap solve: --json needs a file name")
        if (args.matrix is not None and os.path.exists(args.json)
                and os.path.exists(args.matrix) and os.path.samefile(args.json, args.matrix)):
            raise UsageError(f"epslap solve: --json {args.json} is the input matrix file (it "
                             "would be overwritten)")


def _dtype_words(dtype: np.dtype) -> str:
    """A non-numeric dtype as a user reads it: ``strings (<U1)``, ``complex numbers
    (complex128)``."""
    kinds = {"U": "strings", "S": "byte strings", "c": "complex numbers", "M": "dates",
             "m": "time spans", "V": "records"}
    return f"{kinds.get(dtype.kind, 'values')} ({dtype.str if dtype.kind in 'USV' else dtype})"


def _load_cost(args):
    import costfns
    if args.matrix is not None:
        if os.path.isdir(args.matrix):
            raise Failure(f"epslap solve: {args.matrix!r} is a folder, not a .npy file")
        if not os.path.isfile(args.matrix):
            raise Failure(f"epslap solve: no such file: {args.matrix!r}")
        try:
            loaded = np.load(args.matrix, mmap_mode="r")
        except (OSError, ValueError, EOFError) as exc:  # (EOFError: an empty file)
            from .errors import unreadable
            raise Failure(f"epslap solve: cannot read {args.matrix!r}: {unreadable(exc)}")
        if isinstance(loaded, np.lib.npyio.NpzFile):  # a .npz archive, whatever its name
            with loaded:
                names = list(loaded.files)
                if len(names) != 1:
                    raise Failure(f"epslap solve: {args.matrix!r} is a .npz archive of "
                                  f"{len(names)} arrays ({', '.join(names[:5])}): save the "
                                  "cost matrix alone (.npy, or a .npz holding only it)")
                loaded = loaded[names[0]]
        if loaded.dtype.kind not in "biuf":  # (scipy's cast message says less than this)
            raise ValueError(f"{args.matrix} holds {_dtype_words(loaded.dtype)}: the cost "
                             "must be a numeric array (bool, integer or float)")
        return loaded, args.matrix
    n = 1000 if args.n is None else args.n
    seed = 0 if args.seed is None else args.seed
    cost = costfns.problem(args.problem, n, seed)
    if args.dense:
        t0 = time.perf_counter()
        cost = cost.dense()
        print(f"generated {args.problem} n={n} seed={seed} in {time.perf_counter() - t0:.2f}s")
    return cost, f"{args.problem}(n={n}, seed={seed})"


def _solve(args) -> int:
    import epslap
    _check_solve_options(args)
    _check_output(args.json, "--json", "epslap solve")
    cost, label = _load_cost(args)
    kw = {k: v for k, v in (("memory", args.memory), ("cache", args.cache),
                            ("threads", args.threads), ("device", args.device)) if v is not None}
    for flag, value in (("checkpoint", args.checkpoint), ("resume", args.resume)):
        if value is not None:
            kw[flag] = value
    if "checkpoint" in kw or "resume" in kw:
        kw["checkpoint_every"] = args.checkpoint_every
    try:
        sol = epslap.solve(cost, maximize=args.maximize, epsilon=args.epsilon,
                           backend=args.backend, progress=args.progress,
                           candidates=args.candidates, **kw)
    except KeyboardInterrupt:
        saved = args.checkpoint or args.resume
        if saved and os.path.exists(saved):
            raise Interrupted(f"resume with --resume {saved}") from None
        raise
    st = sol.stats
    print(f"problem        {label}  ({st['n_rows']} x {st['n_cols']})")
    print(f"optimal cost   {sol.cost!r}")
    if st.get("method") == "candidates":
        print(f"solve time     {st['time_estimate_s'] + st['time_solve_s']:.3f}s "
              f"(candidates {st['time_candidates_s']:.3f}s, sparse solves "
              f"{st['time_sparse_s']:.3f}s, certificate {st['time_certify_s']:.3f}s)")
        print(f"candidates     {st['candidates_per_row']} per row, {st['rounds']} certificate "
              f"rounds, {st['candidate_edges']:,} pairs + {st['edges_added']:,} added, "
              f"{st['rows_streamed']:,} rows streamed")
    else:
        print(f"solve time     {st['time_estimate_s'] + st['time_solve_s']:.3f}s "
              f"(estimate {st['time_estimate_s']:.3f}s, passes {st['time_solve_s']:.3f}s, "
              f"compile/load {st['compile_s']:.2f}s)")
        if st.get("candidates"):
            print(f"candidates     declined: {st['candidates']}")
        _print_counts(st)
    if "resumed_from" in st:
        print(f"resumed from   {st['resumed_from']} ({st['rows_evaluated_before_resume']:,} "
              "rows evaluated before)")
    if st.get("checkpoints_written"):
        print(f"checkpoints    {st['checkpoints_written']} written to "
              f"{args.checkpoint or args.resume}")
    import resource  # Unix only: the CLI imports everywhere
    print(f"peak RSS       {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.2f} GiB")
    result = {"problem": label, "cost": sol.cost, "stats": st}
    if args.verify:
        # a cost source solved on the GPU is checked there too (every cost computed by its
        # device form); anything else on the host
        from costfns import CostSource
        on_gpu = args.backend == "gpu" and isinstance(cost, CostSource)
        if on_gpu:
            from .gpu.device_costs import device_form
            on_gpu = device_form(cost) is not None
        if args.progress:  # the certificate reads every cost again: say so while it runs
            print(f"certificate: checking the duals against all {st['n_rows']:,} x "
                  f"{st['n_cols']:,} costs{' on the GPU' if on_gpu else ''}", file=sys.stderr,
                  flush=True)
        t_cert = time.perf_counter()
        where = {}
        if on_gpu:
            device = (args.device[0] if isinstance(args.device, list)
                      else 0 if args.device in (None, "all") else args.device)
            where = dict(backend="gpu", device=device)
        cert = epslap.verify(cost, sol.row_ind, sol.col_ind, sol.u, sol.v, maximize=args.maximize,
                             **where)
        if args.progress:
            print(f"certificate: done in {time.perf_counter() - t_cert:.1f} s", file=sys.stderr,
                  flush=True)
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


def _candidates(text: str):
    """``--candidates``: "auto", "off" (the dense method) or a count of columns per row."""
    if text in ("auto", "off"):
        return "auto" if text == "auto" else False
    try:
        k = int(text)
    except ValueError:
        k = 0
    if k < 1:
        raise argparse.ArgumentTypeError(f"expected auto, off or a count >= 1, got {text!r}")
    return k


def _print_counts(st: dict) -> None:
    """Rows evaluated and passes (ε-SSP), or the Hungarian backend's own counts; the cache."""
    if st.get("rows_evaluated") is not None:
        print(f"rows evaluated {st['rows_evaluated']:,}"
              + (f"  (threads {st['threads']})" if "threads" in st else ""))
        print(f"passes         {st['passes']}  ε: "
              + ", ".join(f"{e:.3g}" for e in st["epsilons"]))
    else:  # backend="hungarian-gpu": the classical algorithm's own counts
        print(f"iterations     {st['iterations']:,} ({st['dual_updates']:,} dual updates, "
              f"{st['search_rounds']:,} search rounds)")
    if "cache_policy" in st:
        total = st["cache_hits"] + st["cache_misses"]
        rate = st["cache_hits"] / total if total else 0.0
        print(f"row cache      {st['cache_policy']}, {st['cache_rows']:,} rows, "
              f"{st['cache_hits']:,} hits / {st['cache_misses']:,} misses ({rate:.1%} hit rate)")


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _joined_negatives(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """``--memory -1GiB`` as ``--memory=-1GiB``: argparse takes a value that starts with '-'
    and is not a plain number for an option and says "expected one argument"; joined, the
    value reaches its own check, which names what is wrong with it."""
    takes_value = set()
    for p in [parser, *_subparsers(parser)]:
        for a in p._actions:
            if a.option_strings and a.nargs != 0:
                takes_value.update(a.option_strings)
    out: list[str] = []
    k = 0
    while k < len(argv):
        word = argv[k]
        if word in takes_value and k + 1 < len(argv) and re.match(r"-[0-9.]", argv[k + 1]):
            out.append(f"{word}={argv[k + 1]}")
            k += 2
        else:
            out.append(word)
            k += 1
    return out


def _subparsers(parser: argparse.ArgumentParser) -> list:
    return [p for a in parser._actions if isinstance(a, argparse._SubParsersAction)
            for p in a.choices.values()]


def _run(argv: list[str], name: str) -> int:
    _check_size_words(argv, name)
    parser = _parser()
    args = parser.parse_args(_joined_negatives(parser, argv))
    return _solve(args) if args.command == "solve" else _emd(args)


def main(argv: list[str] | None = None) -> int:
    """Run the command; returns its exit code (see the module docstring)."""
    from costfns.images import ImageReadError

    from .errors import CheckpointError
    from .errors import GPUUnavailableError, InfeasibleError
    t0 = time.perf_counter()
    words = sys.argv[1:] if argv is None else list(argv)
    name = f"epslap {words[0]}" if words and words[0] in ("solve", "emd") else "epslap"

    def one_line_warning(message, category, filename, lineno, file=None, line=None):
        print(f"{name}: {message}", file=sys.stderr)  # as every other message: no source line
    try:
        with warnings.catch_warnings():
            warnings.showwarning = one_line_warning
            return _run(words, name)
    except SystemExit as exc:  # --help, --version
        return exc.code if isinstance(exc.code, int) else 0
    except KeyboardInterrupt as exc:
        message, code = f"{name}: interrupted after {time.perf_counter() - t0:.1f}s", INTERRUPTED
        if isinstance(exc, Interrupted):
            message += f"; {exc}"
    except CheckpointError as exc:
        message, code = f"{name}: {_one_line(exc)}", FAILURE
    except UsageError as exc:
        message, code = _one_line(exc), USAGE
    except Failure as exc:
        message, code = _one_line(exc), FAILURE
    except InfeasibleError as exc:
        text = _one_line(exc)
        message = f"{name}: {text}" if "infeasible" in text else f"{name}: infeasible: {text}"
        code = FAILURE
    except (GPUUnavailableError, ImageReadError) as exc:
        message, code = f"{name}: {_one_line(exc)}", FAILURE
    except ImportError as exc:
        message, code = (f"{name}: {_one_line(exc)} (pip install 'epslap[image]' for images "
                         "and plots)"), FAILURE
    except OSError as exc:
        message, code = f"{name}: {_one_line(exc)}", FAILURE
    except MemoryError as exc:
        message, code = f"{name}: out of memory ({_one_line(exc)})", FAILURE
    except (ValueError, TypeError) as exc:
        message, code = f"{name}: {_one_line(exc)}", USAGE
    except RuntimeError as exc:
        message, code = f"{name}: {_one_line(exc)}", FAILURE
    print(message, file=sys.stderr)
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
