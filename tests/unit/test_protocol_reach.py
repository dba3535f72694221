"""Epoch transitions are reached only through the protocol: product code outside ``ledger/``
never imports the store's transaction modules nor calls the ledger's transitions."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "airflow_provider_eo"
#: The store's modules that change an epoch's state, and the ledger methods that do.
STORE_TRANSITION_MODULES = frozenset(
    {
        "airflow_provider_eo.ledger.store.transitions",
        "airflow_provider_eo.ledger.store.stream_reserver",
        "airflow_provider_eo.ledger.store.backfill_reserver",
    }
)
LEDGER_TRANSITIONS = frozenset(
    {
        "vote_written",
        "mark_committed",
        "reserve_stream_epoch",
        "reserve_backfill_epoch",
        "rotate_fencing_token",
    }
)


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
        "from airflow_provider_eo.ledger.store import transitions\n"
        "import airflow_provider_eo.ledger.store.stream_reserver\n"
        "ledger.vote_written(1, 't')\nprotocol.vote(lease, {})\n"
    )
    assert reaches(source) == [
        "airflow_provider_eo.ledger.store.transitions",
        "airflow_provider_eo.ledger.store.stream_reserver",
        "vote_written",
    ]
