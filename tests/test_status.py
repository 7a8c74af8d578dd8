"""One status table for every backend: the CPU kernels' constants and the CUDA sources' codes come
from ``epslap._status``, and one function maps a status to its exception."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import epslap
from epslap._status import Status, cuda_defines, raise_for_status
from epslap.cpu import passes as ker
from epslap.cpu import estimate
from epslap.cpu.estimate import certify, stage_ab

GPU_SOURCES = sorted(p for p in (Path(epslap.__file__).parent / "gpu").rglob("*.cu*")
                     if p.suffix in (".cu", ".cuh"))


def test_cpu_kernels_use_the_table():
    for name in ("OK", "INFEASIBLE", "INTERRUPTED", "ABORTED"):
        assert getattr(ker, f"STATUS_{name}") == Status[name]
    for module in (estimate, stage_ab, certify):
        names = [n for n in vars(module) if n.startswith("STATUS_")]
        assert names, module.__name__
        for name in names:
            assert getattr(module, name) == Status[name.removeprefix("STATUS_")]


def test_cuda_sources_write_statuses_only_through_the_table():
    assert GPU_SOURCES
    literal = re.compile(r"(out_i64\[0\]|ctl\[CTL_STATUS\])\s*=\s*\d|atomicMax\([^;]*out_i64, \d")
    for path in GPU_SOURCES:
        text = path.read_text()
        assert not literal.search(text), path.name
        assert not re.search(r"#define\s+(ST|STATUS)_", text), path.name  # the host defines them
    lines = cuda_defines().splitlines()
    assert lines == [f"#define STATUS_{s.name} {s.value}" for s in Status]


@pytest.mark.parametrize("status, error, match", [
    (Status.INFEASIBLE, epslap.InfeasibleError, "cost matrix is infeasible"),
    (Status.INVALID, ValueError, "invalid numeric entries"),
    (Status.INTERRUPTED, KeyboardInterrupt, "interrupted"),
    (Status.ABORTED, RuntimeError, "thread ended abnormally"),
    (Status.BROKEN_PATH, RuntimeError, "alternating path did not close"),
    (Status.ITERATION_LIMIT, RuntimeError, "dual updates exceeded"),
    (99, RuntimeError, "unknown kernel status 99"),
])
def test_raise_for_status(status, error, match):
    with pytest.raises(error, match=match):
        raise_for_status(status, "cpu")


def test_ok_and_certified_return():
    raise_for_status(Status.OK, "cpu")
    raise_for_status(Status.CERTIFIED, "gpu")
