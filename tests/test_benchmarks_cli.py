"""The benchmark runner's front door: ``python -m benchmarks`` lists its tables, prints every result
file the results page links as a Markdown table, and refuses the GPU tables in one line where
CuPy is missing. Runs no benchmark (each call only parses arguments or reads JSON)."""
from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS_PAGE = ROOT / "benchmarks" / "README.md"
TABLES = ["cpu", "fidelity", "ondemand", "memory", "gpu", "hungarian", "scale", "emd", "parallel",
          "ab", "table"]


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "benchmarks", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)


def _linked_results() -> list[str]:
    """The result files benchmarks/README.md links, in page order."""
    links = re.findall(r"\]\((results/[^)\s]+\.json)\)", RESULTS_PAGE.read_text())
    return list(dict.fromkeys(links))


def test_help_lists_every_table():
    res = _run("--help")
    assert res.returncode == 0, res.stderr
    listed = set(re.findall(r"^ {4}(\w+)", res.stdout, flags=re.M))
    assert set(TABLES) <= listed, f"missing from --help: {set(TABLES) - listed}"


def test_results_page_links_every_result_file():
    linked = set(_linked_results())
    on_disk = {f"results/{p.name}" for p in (ROOT / "benchmarks" / "results").glob("*.json")}
    assert linked, "benchmarks/README.md links no result file"
    assert linked <= on_disk, f"linked but missing: {linked - on_disk}"
    assert on_disk <= linked, f"result files no table on the page comes from: {on_disk - linked}"


@pytest.mark.parametrize("result", _linked_results())
def test_table_prints_markdown(result):
    res = _run("table", f"benchmarks/{result}")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    heads = [i for i, line in enumerate(lines) if line.startswith("| ")
             and (i == 0 or not lines[i - 1].startswith("|"))]  # each table's first line
    assert heads
    for head in heads:  # (a result may print several tables, each its own columns)
        assert re.fullmatch(r"\|(---\|)+", lines[head + 1]), lines[head + 1]
        body = []
        for line in lines[head + 2:]:
            if not line.startswith("| "):
                break
            body.append(line)
        cols = lines[head].count("|")
        assert body and all(line.count("|") == cols for line in body)


@pytest.mark.skipif(importlib.util.find_spec("cupy") is not None, reason="CuPy is installed")
@pytest.mark.parametrize("table", ["gpu", "hungarian", "scale"])
def test_gpu_tables_refuse_in_one_line_without_cupy(table):
    args = [table, "32000"] if table == "scale" else [table]
    res = _run(*args, "--out", "/nonexistent/never-written.json")
    assert res.returncode != 0
    err = res.stderr.strip().splitlines()
    assert len(err) == 1 and "CuPy" in err[0] and "Traceback" not in res.stderr, res.stderr


def test_the_benchmark_pages_name_only_files_that_exist():
    """Every repository file the benchmark pages link or name (results, scripts, studies,
    docs) exists: a page never points at a script that was removed. Paths outside the
    repository (a command's output on a GPU machine, ``/root/out/…``) are not references."""
    root = ROOT
    bench = root / "benchmarks"
    pattern = re.compile(r"[\w./-]+\.(?:py|json|csv|cu|cuh|md|npy|png|jpg)\b")
    for page in (bench / "README.md", bench / "studies" / "README.md"):
        missing = []
        for ref in set(pattern.findall(page.read_text())):
            if ref.startswith("/") or "://" in ref:
                continue
            here = [root / ref, bench / ref, page.parent / ref]
            if not any(p.exists() for p in here):
                missing.append(ref)
        assert not missing, f"{page.relative_to(root)} names files that do not exist: {missing}"


def test_peers_are_timed_on_their_own_calls():
    """The small table times each peer's call as a user makes it: scipy's is
    ``linear_sum_assignment`` itself (summing the costs its indices pick, about 2 µs on a 5 × 5
    call, is the check's work, outside the timing), and each peer's check reads the optimum."""
    import numpy as np
    from scipy.optimize import linear_sum_assignment

    from benchmarks.small import peers
    c = np.random.default_rng(0).random((6, 6))
    r, k = linear_sum_assignment(c)
    found = peers()
    assert found["scipy"][0] is linear_sum_assignment
    for name, (call, cost_of) in found.items():
        assert abs(cost_of(c, call(c)) - c[r, k].sum()) < 1e-12, name
