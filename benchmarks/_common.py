"""What every table's JSON carries, and the helpers the runners share.

A result file is ``{"meta": {...}, "rows": [...]}``. ``meta`` names the table, the date, the
machine, the exact command, the epslap commit and the versions of the solvers and libraries
installed, so that a number on the results page can be traced to the run that produced it. Files
written before the runner existed have other shapes; :func:`load` reads those too.
"""
from __future__ import annotations

import importlib.util
import json
import math
import os
import platform
import shlex
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"

#: distributions whose versions a result records (those installed)
VERSIONED = ("numpy", "numba", "scipy", "lapx", "lap", "lapcpp", "POT", "cupy-cuda12x",
             "cupy-cuda13x", "scikit-image", "pillow", "matplotlib")


def versions() -> dict[str, str]:
    """Installed versions of the distributions in ``VERSIONED``."""
    out = {}
    for name in VERSIONED:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def epslap_tree() -> Path:
    """The directory the epslap package would be imported from (found without importing it)."""
    spec = importlib.util.find_spec("epslap")
    if spec is None or spec.origin is None:
        return ROOT
    return Path(spec.origin).resolve().parent.parent


def commit() -> str | None:
    """The commit of the epslap that runs; ``+modified`` when its epslap/ or costfns/ differ
    from it. A tree exported with ``git archive`` has no git metadata: its commit is read from a
    file named COMMIT at its root, where the exporter put it."""
    tree = epslap_tree()

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=tree, capture_output=True, text=True,
                              check=True).stdout.strip()
    try:
        if git("rev-parse", "--show-toplevel") != str(tree):
            raise subprocess.CalledProcessError(1, "git")
        sha = git("rev-parse", "HEAD")
        changed = git("status", "--porcelain", "--", "epslap", "costfns")
    except (OSError, subprocess.CalledProcessError):
        marker = tree / "COMMIT"
        return marker.read_text().strip() if marker.exists() else None
    return sha + ("+modified" if changed else "")


def machine() -> str:
    """One line: CPU model, cores, memory, OS."""
    model = platform.processor() or platform.machine()
    mem = ""
    try:
        with open("/proc/cpuinfo") as fh:
            model = next((line.split(":", 1)[1].strip() for line in fh
                          if line.startswith("model name")), model)
        with open("/proc/meminfo") as fh:
            kib = next(int(line.split()[1]) for line in fh if line.startswith("MemTotal"))
        mem = f", {kib / 2**20:.0f} GiB"
    except (OSError, StopIteration, ValueError):
        pass
    return f"{os.cpu_count()} vCPU {model}{mem}, {platform.system()} {platform.machine()}"


def metadata_for(table: str, argv: list[str], gpu: str | None = None, **extra: Any) -> dict:
    """The ``meta`` block of a result written now by ``python -m benchmarks <table> ...``."""
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:  # pragma: no cover
        load = None
    meta = {"table": table, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "machine": machine(), "gpu": gpu, "load_average_at_start": load,
            "python": platform.python_version(),
            "command": " ".join(["python -m benchmarks"] + [shlex.quote(a) for a in argv]),
            "epslap_commit": commit(), "versions": versions()}
    if epslap_tree() != ROOT:
        meta["epslap_source"] = "a tree outside this checkout (e.g. a git archive of the commit)"
    meta.update(extra)
    return meta


class Output:
    """Rows of one result file, rewritten after every row so that a run stopped early keeps what
    it measured."""

    def __init__(self, path: str | os.PathLike | None, meta: dict):
        self.path = Path(path) if path else None
        self.meta = meta
        self.rows: list[dict] = []

    def add(self, row: dict) -> None:
        self.rows.append(row)
        self.save()

    def save(self) -> None:
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "w") as fh:
            json.dump({"meta": self.meta, "rows": self.rows}, fh, indent=1)
            fh.write("\n")


def default_path(table: str) -> Path:
    return RESULTS / f"{table}.json"


def resolve(path: str) -> Path:
    """``path`` as given, else relative to benchmarks/ (``results/cpu.json``)."""
    p = Path(path)
    if not p.exists() and (HERE / p).exists():
        return HERE / p
    return p


def load(path: str | os.PathLike) -> tuple[dict, Any]:
    """(meta, rows) of a result file of any vintage.

    Older files keep their metadata at the top level (``date``, ``machine``, ``device``) and
    their rows under ``results``, ``rows`` or ``runs``; a file that is one record (the scale
    run) is one row.
    """
    with open(path) as fh:
        data = json.load(fh)
    meta = dict(data.get("meta", {}))
    for key in ("rows", "results", "runs"):
        if key in data:
            rows = data[key]
            for k, v in data.items():
                if k not in ("meta", key) and not isinstance(v, (list, dict)):
                    meta.setdefault(k, v)
            return meta, rows
    return meta, [{k: v for k, v in data.items() if k != "meta"}]


def markdown(head: list[str], body: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in body]
    return "\n".join(lines)


def seconds(t: float | None, digits: int = 3) -> str:
    """Seconds: ``digits`` decimals from 0.1 s to 10 s, fewer above, two significant digits
    below."""
    if t is None:
        return "–"
    if t >= 100:
        return f"{t:.1f}"
    if t >= 10:
        return f"{t:.2f}"
    if t >= 0.1 or t <= 0:
        return f"{t:.{digits}f}"
    return f"{t:.{1 - math.floor(math.log10(t))}f}"


def require_gpu(table: str) -> Any:
    """CuPy with a usable device, or exit with one line saying what is missing."""
    try:
        import cupy  # noqa: F401
    except ImportError:
        sys.exit(f"benchmarks {table}: needs an NVIDIA GPU with CuPy; CuPy is not installed "
                 "(pip install -e '.[gpu-cuda12]' on a GPU machine)")
    from epslap.errors import GPUUnavailableError
    from epslap.gpu.solver import import_cupy
    try:
        return import_cupy()
    except GPUUnavailableError as exc:
        sys.exit(f"benchmarks {table}: {exc}")


def gpu_name(cupy: Any) -> str:
    """The name of CUDA device 0."""
    return cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()


def device_times(cupy: Any, fn, rounds: int, warmups: int = 1) -> tuple[list[float], Any]:
    """``fn()`` timed ``rounds`` times after ``warmups`` untimed calls (compilation), the device
    synchronised around each call: ``(seconds per call, the last result)``."""
    import time
    for _ in range(warmups):
        out = fn()
    times = []
    for _ in range(rounds):
        cupy.cuda.Device().synchronize()
        t0 = time.perf_counter()
        out = fn()
        cupy.cuda.Device().synchronize()
        times.append(time.perf_counter() - t0)
    return times, out
