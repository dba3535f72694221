"""The folders are the architecture's layers (docs/ARCHITECTURE.md, "Layers"): every import
of the package runs down the layers or stays inside one, never up, and a few folder rules
hold (Airflow-free folders import no Airflow; ``hooks/`` holds only Airflow hooks; outside
``ledger/``, the store is reached through ``ledger.store.postgres_ledger`` only).

A module's place is its folder: ``ledger/`` and ``spark/`` by their sub-folder
(``ledger/protocol``, ``spark/task``...), other folders whole, modules at the top by their
name. A new folder or top-level module fails :func:`test_every_place_has_a_layer` until it
is given one here. Every import counts: those inside functions and under
``TYPE_CHECKING`` too."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "airflow_provider_eo"

#: Top to bottom: a module may import its own layer and the layers below it.
LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"dags", "cli", "plugins"}),  # what Airflow and people run
    frozenset({"operators", "triggers"}),  # the protocol's Airflow adapters
    frozenset({"lineage", "observability", "hooks", "assets"}),  # what the adapters report through
    frozenset({"spark/driver", "spark/session", "audit"}),  # the write's drivers (submit, session); the audit
    frozenset({"ledger/protocol", "ledger", "spark/task"}),  # the protocol; a Spark task
    frozenset({"ledger/store", "spark/hbase_sink", "formats"}),  # SQL; Thrift; record formats
    frozenset({"ledger/planning", "clients"}),  # decisions without I/O; Airflow-free clients
    # values, the pipeline spec, the error taxonomy, names:
    frozenset({"ledger/model", "config", "spark", "errors", "protocol_points", "dag_ids"})
    | frozenset({"ui_links", "get_provider_info", "connection_forms"}),
)
#: Folders whose modules import nothing of Airflow (they run on Spark executors, in the
#: CLI without Airflow, or decide without any framework).
AIRFLOW_FREE = (
    "ledger", "clients", "config", "formats", "spark/task", "spark/hbase_sink", "spark/session", "audit"
)  # fmt: skip


def place(module: str) -> str:
    """The layer place of a dotted module name of the package (see the module doc)."""
    parts = module.split(".")[1:]
    if not parts:
        return "<package>"
    if parts[0] in ("ledger", "spark") and len(parts) > 1 and (PACKAGE / parts[0] / parts[1]).is_dir():
        return f"{parts[0]}/{parts[1]}"
    return parts[0]


def layer_of(where: str) -> int:
    """The index in :data:`LAYERS` of ``where``; ``KeyError`` for a place without a layer."""
    for index, places in enumerate(LAYERS):
        if where in places:
            return index
    raise KeyError(where)


def imported_modules(source: str) -> Iterator[str]:
    """Every module name an ``import`` or ``from ... import`` of ``source`` names (absolute
    imports; the package uses no relative ones)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def package_modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts), path


def upward_imports(module: str, source: str) -> list[str]:
    """``module -> target`` for each import of ``source`` that runs up a layer."""
    here = layer_of(place(module))
    found = set()
    for target in imported_modules(source):
        if target.startswith("airflow_provider_eo.") and layer_of(place(target)) < here:
            found.add(f"{module} -> {target}")
    return sorted(found)


def test_every_place_has_a_layer() -> None:
    places = {place(module) for module, _ in package_modules()} - {"<package>"}
    assert sorted(p for p in places if not any(p in layer for layer in LAYERS)) == []


def test_no_import_runs_up_a_layer() -> None:
    offenders = []
    for module, path in package_modules():
        if module != "airflow_provider_eo":
            offenders += upward_imports(module, path.read_text())
    assert offenders == []


def test_airflow_free_folders_import_no_airflow() -> None:
    offenders = [
        f"{module} imports {target}"
        for module, path in package_modules()
        if place(module).startswith(AIRFLOW_FREE) or place(module) in AIRFLOW_FREE
        for target in imported_modules(path.read_text())
        if target == "airflow" or target.startswith("airflow.")
    ]
    assert offenders == []


def test_hooks_holds_only_airflow_hooks() -> None:
    """Each module of ``hooks/`` defines a hook class (a subclass of ``BaseHook`` or of the
    provider's ``EoHook``); clients without Airflow live in ``clients/``."""
    without = []
    for path in sorted((PACKAGE / "hooks").glob("*.py")):
        if path.name == "__init__.py":
            continue
        bases = {
            base.id if isinstance(base, ast.Name) else getattr(base, "attr", "")
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.ClassDef)
            for base in node.bases
        }
        if not bases & {"BaseHook", "EoHook"}:
            without.append(path.name)
    assert without == []


def test_outside_the_ledger_the_store_is_reached_through_its_ledger_class() -> None:
    """The SQL modules of ``ledger/store/`` (transitions, reservations' statements, reads)
    are the ledger's own: adapters use ``ledger.store.postgres_ledger`` (the ``Ledger`` class), and
    change epochs only through the protocol (tests/unit/test_protocol_reach.py)."""
    offenders = sorted(
        f"{module} -> {target}"
        for module, path in package_modules()
        if not module.startswith("airflow_provider_eo.ledger")
        for target in imported_modules(path.read_text())
        if target.startswith("airflow_provider_eo.ledger.store.")
        and not target.startswith("airflow_provider_eo.ledger.store.postgres_ledger")
    )
    assert offenders == []


def test_outside_the_ledger_the_protocol_is_reached_through_its_package() -> None:
    """``ledger/protocol/``'s transaction scripts (reservations, the commit path, seek,
    replay reads, the dead-letter publication) are the protocol's own: everything outside
    ``ledger/`` imports ``airflow_provider_eo.ledger.protocol`` (its ``__init__`` is the
    public surface)."""
    offenders = sorted(
        f"{module} -> {target}"
        for module, path in package_modules()
        if not module.startswith("airflow_provider_eo.ledger")
        for target in imported_modules(path.read_text())
        if target.startswith("airflow_provider_eo.ledger.protocol.")
        and place(target) == "ledger/protocol"
        and target.split(".")[3] in {p.stem for p in (PACKAGE / "ledger" / "protocol").glob("*.py")}
    )
    assert offenders == []


def test_the_rules_see_an_upward_import() -> None:
    source = (
        "from airflow_provider_eo.operators.commit import CommitEpochOperator\n"
        "def f():\n    import airflow_provider_eo.ledger.protocol.commit_path\n"
        "from airflow_provider_eo.ledger.model.epoch import Epoch\n"
    )
    store = "airflow_provider_eo.ledger.store.queries"
    assert upward_imports(store, source) == [
        f"{store} -> airflow_provider_eo.ledger.protocol.commit_path",
        f"{store} -> airflow_provider_eo.operators.commit",
        f"{store} -> airflow_provider_eo.operators.commit.CommitEpochOperator",
    ]
    assert place("airflow_provider_eo.spark.task.mapping.cells") == "spark/task"
    assert place("airflow_provider_eo.spark.records") == "spark"
