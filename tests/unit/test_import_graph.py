"""The import graphs of the provider (``airflow_provider_eo``) and of the devtools
(``eo_devtools``) have no cycle: every ``import`` counts, those under ``TYPE_CHECKING``
and inside functions included."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
PROVIDER = REPO_ROOT / "airflow_provider_eo"
DEVTOOLS = REPO_ROOT / "devtools" / "eo_devtools"


def modules(package: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module of ``package`` (packages by their name)."""
    found = {}
    for path in package.rglob("*.py"):
        parts = path.relative_to(package.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The package's modules that ``name`` imports anywhere in its file."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            wanted = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            wanted = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for dotted in wanted:
            parts = dotted.split(".")
            for end in range(len(parts), 0, -1):  # the longest prefix that is a module
                if ".".join(parts[:end]) in known:
                    targets.add(".".join(parts[:end]))
                    break
    return targets - {name}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def package_graph(package: Path) -> dict[str, set[str]]:
    """Module -> the modules of the same package it imports."""
    known = modules(package)
    # a package's __init__ re-exports its modules: edges into a package are edges to its API,
    # so a package module importing its own package's name is not counted as a cycle
    return {
        name: {t for t in imports(name, path, known) if not name.startswith(f"{t}.")}
        for name, path in known.items()
    }


@pytest.mark.parametrize("package", [PROVIDER, DEVTOOLS], ids=lambda package: package.name)
def test_the_package_has_no_import_cycle(package: Path) -> None:
    assert cycles(package_graph(package)) == []


def test_the_check_finds_cycles_and_sees_imports() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    provider = package_graph(PROVIDER)
    assert "airflow_provider_eo.plugins.access" in provider["airflow_provider_eo.plugins.epochs"]
    devtools = package_graph(DEVTOOLS)
    assert "eo_devtools.stack.hbase_layout" in devtools["eo_devtools.stack.hbase_admin"]
    assert "eo_devtools.stack.ports" in devtools["eo_devtools.stack.hbase"]
