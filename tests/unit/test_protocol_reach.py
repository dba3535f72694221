"""Epoch transitions are reached only through the protocol: product code outside ``ledger/``
never imports the transaction modules (the store's transitions, the reservation scripts)
nor calls the ledger's transitions or opens its script transaction."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "airflow_provider_eo"
#: The modules that change an epoch's state, and the ledger methods that do.
STORE_TRANSITION_MODULES = frozenset(
    {
        "airflow_provider_eo.ledger.store.epoch_transitions",
        "airflow_provider_eo.ledger.store.commit_statements",
        "airflow_provider_eo.ledger.protocol.stream_reservation",
        "airflow_provider_eo.ledger.protocol.backfill_reservation",
        "airflow_provider_eo.ledger.protocol.cursor_seek",
        "airflow_provider_eo.ledger.store.cursor_moves",
    }
)
LEDGER_TRANSITIONS = frozenset({"vote_written", "mark_committed", "transaction"})


def reaches(source: str) -> list[str]:
    """The store transition modules ``source`` imports and the ledger transitions it calls."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module:
            modules = {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
            found += sorted(modules & STORE_TRANSITION_MODULES)
        elif isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name in STORE_TRANSITION_MODULES]
        elif isinstance(node, ast.Attribute) and node.attr in LEDGER_TRANSITIONS:
            found.append(node.attr)
    return found


def test_no_product_code_outside_the_ledger_reaches_a_transition() -> None:
    offenders = {
        str(path.relative_to(PACKAGE)): reaches(path.read_text())
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).parts[0] != "ledger"
    }
    assert {path: found for path, found in offenders.items() if found} == {}


def test_the_check_sees_imports_and_calls() -> None:
    source = (
        "from airflow_provider_eo.ledger.store import epoch_transitions\n"
        "import airflow_provider_eo.ledger.protocol.stream_reservation\n"
        "ledger.vote_written(1, 't')\nprotocol.vote(lease, {})\n"
    )
    assert reaches(source) == [
        "airflow_provider_eo.ledger.store.epoch_transitions",
        "airflow_provider_eo.ledger.protocol.stream_reservation",
        "vote_written",
    ]


#: What the store may import from the rest of the package: values (the actor its
#: transactions are labelled with, lag samples and epoch times among them), errors, the state
#: table and the fencing rule its guarded UPDATEs report with; never a planner or the protocol.
STORE_MAY_IMPORT = frozenset(
    {
        "airflow_provider_eo.ledger.model.actors",
        "airflow_provider_eo.ledger.model.refusals",
        "airflow_provider_eo.ledger.planning.fencing",
        "airflow_provider_eo.ledger.model.history",
        "airflow_provider_eo.ledger.model.lag_samples",
        "airflow_provider_eo.ledger.model.epochs",
        "airflow_provider_eo.ledger.model.offsets",
        "airflow_provider_eo.ledger.model.phases",
        "airflow_provider_eo.ledger.model.states",
        "airflow_provider_eo.ledger.model.read_model",
        "airflow_provider_eo.ledger.model.chart_figures",
        "airflow_provider_eo.ledger.model.retention_policy",
    }
)


def test_the_store_runs_statements_and_decides_nothing() -> None:
    """``ledger/store/`` imports no planner, reservation script or protocol module."""
    decided_elsewhere = {}
    for path in sorted((PACKAGE / "ledger" / "store").rglob("*.py")):
        imported = {
            node.module
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.ImportFrom)
            and node.module
            and node.module.startswith("airflow_provider_eo")
        }
        outside = {m for m in imported if not m.startswith("airflow_provider_eo.ledger.store")}
        if outside - STORE_MAY_IMPORT:
            decided_elsewhere[path.name] = sorted(outside - STORE_MAY_IMPORT)
    assert decided_elsewhere == {}
