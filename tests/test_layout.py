"""The package's layering: no import cycle (module-level or deferred into a function), costfns a
leaf that never imports epslap, and ``import epslap`` loading no GPU module."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("epslap", "costfns")


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            out[name] = path
    return out


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package modules ``name`` imports anywhere in its body (a deferred import inside a
    function closes a cycle as surely as one at the top, once that function runs)."""
    is_pkg = path.name == "__init__.py"
    base = name.split(".") if is_pkg else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                mod = ".".join(base[:len(base) - node.level + 1] + ([node.module] if node.module
                                                                    else []))
            else:
                mod = node.module or ""
            subs = [f"{mod}.{a.name}" for a in node.names]
            # ``from pkg import submodule`` needs the submodule, not the package's own names
            targets = subs + ([mod] if any(s not in modules for s in subs) else [])
        else:
            continue
        for t in targets:
            if t in modules and t != name:
                found.add(t)
    return found


def _graph():
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def test_no_import_cycle():
    graph = _graph()
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt):] + [nxt]
                assert False, "import cycle: " + " -> ".join(cycle)
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)


def test_costfns_is_a_leaf():
    graph = _graph()
    reach = {m: deps for m, deps in graph.items() if m.split(".")[0] == "costfns"}
    assert not {d for deps in reach.values() for d in deps if d.split(".")[0] == "epslap"}


def test_import_epslap_loads_no_gpu_module():
    code = ("import sys, epslap, costfns; "
            "print([m for m in sys.modules if m.startswith('epslap.gpu') or m == 'cupy'])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout.strip()
    assert out == "[]"


def test_packaging_metadata():
    """The version comes from the installed distribution; py.typed and LICENSE ship."""
    from importlib import metadata

    import epslap
    root = Path(epslap.__file__).resolve().parent.parent
    try:
        assert epslap.__version__ == metadata.version("epslap")
    except metadata.PackageNotFoundError:  # a source tree without an install
        assert epslap.__version__ == "0+unknown"
    assert (root / "epslap" / "py.typed").exists() and (root / "costfns" / "py.typed").exists()
    assert "MIT License" in (root / "LICENSE").read_text()
    assert 'license = "MIT"' in (root / "pyproject.toml").read_text()


def test_code_speaks_of_the_project_not_of_its_tracker():
    """No "issue N" tags in code, tests or benchmark scripts: a comment says what the code is
    for, not which work item asked for it."""
    import re
    tag = re.compile(r"\bissues? #?\d+", re.IGNORECASE)
    found = []
    for folder in ("epslap", "costfns", "tests", "benchmarks"):
        for path in (ROOT / folder).rglob("*"):
            if path.suffix in (".py", ".cu", ".cuh") and path.name != "test_layout.py":
                for n, line in enumerate(path.read_text().splitlines(), 1):
                    if tag.search(line):
                        found.append(f"{path.relative_to(ROOT)}:{n}")
    assert not found, found
