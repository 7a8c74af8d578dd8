"""The GPU backends' CUDA modules, compiled by NVRTC through CuPy once per configuration and
process.

Every ``.cu`` file compiles on its own: it includes the package's headers (``common.cuh``, ...)
and two headers the host generates per configuration, ``epslap_status.cuh`` (the statuses,
:func:`epslap._status.cuda_defines`) and, for the sources that read a cost source,
``epslap_cost.cuh`` (its ``cost_fn``). Numeric choices (threads, unroll, ...) are ``-D`` options.

The generated headers are written into a directory named by a digest of their text and of the
package's headers, passed with ``-I``. CuPy's disk cache of compiled modules keys on the main
source and the options, not on included files; the digest in the path makes the key cover the
headers too, and a directory that depends only on the content lets other processes reuse what
CuPy cached (a per-process directory would recompile every module in every process).
"""
from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from .._status import cuda_defines
from .device_estimate import LIST_K, SUB_ROWS
from .launch import SLOT_WORDS, THREADS

GPU_DIR = Path(__file__).resolve().parent
EPS_SSP = GPU_DIR / "eps_ssp.cu"
ESTIMATE = GPU_DIR / "estimate.cu"
DIAGNOSTICS = GPU_DIR / "diagnostics.cu"
CANDIDATES = GPU_DIR / "candidates.cu"
VERIFY = GPU_DIR / "verify.cu"
ORIENT = GPU_DIR / "orient.cu"

# NVRTC options of the ε-SSP sources: no fused multiply-add, so that the device's arithmetic is
# the CPU's, operation by operation
EPS_OPTIONS = ("--std=c++17", "--fmad=false")
#: columns per tile of the candidate and certificate passes (candidates.cu, TILE): the unit a
#: warp skips by its box bound, and the unit of ``gpu.candidates.TileBoxes``
CANDIDATE_TILE = 128

_MODULES: dict = {}        # (device, source, headers, defines, options) -> RawModule
_HEADER_DIRS: set = set()  # generated-header directories written (or checked) by this process
_PACKAGE_DIGEST: list = []


def status_header() -> dict[str, str]:
    """The generated header every source includes: the statuses."""
    return {"epslap_status.cuh": cuda_defines()}


def cost_headers(code: str) -> dict[str, str]:
    """The generated headers of a source that reads a cost source: the statuses and ``code``."""
    return {**status_header(), "epslap_cost.cuh": code + "\n"}


def build_module(cupy, source: Path, headers: dict[str, str], defines: dict[str, object],
                 options: tuple[str, ...], cooperative: bool = True):
    """``source`` compiled for the current device with the generated ``headers`` (name ->
    text) and ``defines`` (name -> value; True: defined without a value; None or False: left
    out), with cooperative groups unless ``cooperative`` is False (CuPy then launches every
    kernel of it cooperatively: its grid must fit on the device at once). Memoised per
    process."""
    key = (cupy.cuda.Device().id, str(source), tuple(sorted(headers.items())),
           tuple(defines.items()), options, cooperative)
    mod = _MODULES.get(key)
    if mod is None:
        flags = tuple(f"-D{name}" if value is True else f"-D{name}={value}"
                      for name, value in defines.items()
                      if value is not None and value is not False)
        dirs = dict.fromkeys((source.parent, GPU_DIR, header_dir(headers)))
        include = tuple(f"-I{d}" for d in dirs)
        mod = cupy.RawModule(code=source.read_text(), options=options + include + flags,
                             enable_cooperative_groups=cooperative)
        _MODULES[key] = mod
    return mod


def pass_module(cupy, code: str, integral: bool, threads: int = THREADS, unroll: int = 1,
                smem_state: bool = False, phase_clocks: bool = False):
    """``eps_ssp.cu`` for a cost code: the pass kernel and the cost helper kernels
    (gather_costs, cost_range, fill_row, fill_dense, check_duals)."""
    defines = {"COST_INTEGRAL": int(integral), "THREADS": threads, "UNROLL": unroll,
               "SLOT_WORDS": SLOT_WORDS, "SMEM_STATE": int(smem_state),
               "PHASE_CLOCKS": phase_clocks}
    return build_module(cupy, EPS_SSP, cost_headers(code), defines, EPS_OPTIONS)


def estimate_module(cupy, code: str, integral: bool, threads: int = THREADS):
    """``estimate.cu`` for a cost code: the device estimate's sweeps."""
    defines = {"COST_INTEGRAL": int(integral), "THREADS": threads, "LIST_K": LIST_K,
               "SUB_ROWS": SUB_ROWS}
    return build_module(cupy, ESTIMATE, cost_headers(code), defines, EPS_OPTIONS)


def candidates_module(cupy, code: str, integral: bool, k_max: int, point_dim: int = 0,
                      point_root: bool = False):
    """``candidates.cu`` for a cost code: the candidate and certificate pass (scan_rows) and
    the sparse auction's phase (auction_phase). ``point_dim`` > 0: the cost is a point set's
    squared distance (or, ``point_root``, its distance) in that dimension, and the pass may skip
    tiles of columns by their box bound."""
    defines = {"COST_INTEGRAL": int(integral), "K_MAX": k_max, "POINT_DIM": point_dim,
               "POINT_ROOT": int(point_root), "TILE": CANDIDATE_TILE}
    return build_module(cupy, CANDIDATES, cost_headers(code), defines, EPS_OPTIONS)


def verify_module(cupy, code: str, integral: bool):
    """``verify.cu`` for a cost code: ``epslap.verify``'s scan of every cost (verify_scan) and
    the assigned pairs' costs (pair_costs)."""
    return build_module(cupy, VERIFY, cost_headers(code), {"COST_INTEGRAL": int(integral)},
                        EPS_OPTIONS)


def diagnostics_module(cupy, threads: int = THREADS, integral: bool = False):
    """``diagnostics.cu``: the self-tests of the grid barrier and of the pass kernel's exchange
    (for tests and diagnostics; no solve builds it)."""
    defines = {"COST_INTEGRAL": int(integral), "THREADS": threads, "SLOT_WORDS": SLOT_WORDS}
    return build_module(cupy, DIAGNOSTICS, status_header(), defines, EPS_OPTIONS)


def _package_digest() -> str:
    """Digest of the package's CUDA headers (read once per process)."""
    if not _PACKAGE_DIGEST:
        h = hashlib.sha256()
        for path in sorted(GPU_DIR.rglob("*.cuh")):
            h.update(str(path.relative_to(GPU_DIR)).encode() + b"\0" + path.read_bytes() + b"\0")
        _PACKAGE_DIGEST.append(h.hexdigest())
    return _PACKAGE_DIGEST[0]


def header_dir(headers: dict[str, str]) -> str:
    """The directory holding the generated ``headers``: named by a digest of their text and of
    the package's headers, under a per-user directory of the temporary directory."""
    h = hashlib.sha256(_package_digest().encode())
    for name, text in sorted(headers.items()):
        h.update(b"\0" + name.encode() + b"\0" + text.encode())
    path = os.path.join(_header_root(), h.hexdigest()[:32])
    if path not in _HEADER_DIRS:
        os.makedirs(path, mode=0o700, exist_ok=True)
        for name, text in headers.items():
            _write_if_changed(os.path.join(path, name), text)
        _HEADER_DIRS.add(path)
    return path


def _write_if_changed(path: str, text: str) -> None:
    """Write ``text`` to ``path`` atomically unless it holds exactly that (other processes may
    read it meanwhile)."""
    try:
        with open(path, encoding="utf-8") as fh:
            if fh.read() == text:
                return
    except OSError:
        pass
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)


_ROOT: list = []


def _header_root() -> str:
    """``<tmp>/epslap-cuda-<uid>``, private to this user; where that path is not (another user
    made it), a fresh private directory of this process."""
    if not _ROOT:
        uid = os.getuid() if hasattr(os, "getuid") else None
        root = os.path.join(tempfile.gettempdir(), f"epslap-cuda-{'user' if uid is None else uid}")
        try:
            os.makedirs(root, mode=0o700, exist_ok=True)
            st = os.stat(root)
            private = uid is None or (st.st_uid == uid and not st.st_mode & 0o022)
        except OSError:
            private = False
        if not private:
            root = tempfile.mkdtemp(prefix="epslap-cuda-")
            atexit.register(shutil.rmtree, root, ignore_errors=True)
        _ROOT.append(root)
    return _ROOT[0]
