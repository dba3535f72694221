"""Epoch transitions are reached only through the protocol, by folder rules:

* outside ``ledger/protocol/`` and ``ledger/store/``, no product code calls a state change of
  the protocol's store: the methods of ``ProtocolStore`` (``ledger/model/ledger_roles.py``)
  that are neither reads (``LedgerReads``) nor who acts nor an observation. The list is
  derived from the interfaces, so a transition added there is guarded at once;
* ``ledger/store/`` runs statements and decides nothing: besides itself it imports only the
  model (``ledger/model/``) and the fencing rule its guarded vote reports with.

Which modules may be imported from where (the protocol from its package, the store through
``ledger/store/postgres_ledger.py``) is tests/unit/test_layers.py's."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from airflow_provider_eo.ledger.model import ledger_roles

PACKAGE = Path(__file__).resolve().parents[2] / "airflow_provider_eo"
#: Members of the protocol's store that change no epoch: who acts, an observation, a read
#: the read model has no use for.
NOT_STATE_CHANGES = frozenset({"actor", "acting_as", "record_lag_sample", "open_epochs"})


def members(interface: type) -> set[str]:
    """The public members an interface declares (its bases' included)."""
    return {name for name, _ in inspect.getmembers(interface) if not name.startswith("_")}


#: ``transaction``, ``vote_written``, ``mark_committed``, ``abort`` (as the interfaces say today).
TRANSITIONS = frozenset(
    members(ledger_roles.ProtocolStore) - members(ledger_roles.LedgerReads) - NOT_STATE_CHANGES
)
#: Names the protocol's own adapters legitimately call on the protocol (``EpochProtocol.abort``,
#: ``OperatorTools.abort``): a call of these counts only on a receiver named for a ledger or store.
PROTOCOL_NAMES = frozenset({"abort"})


def transitions_called(source: str) -> list[str]:
    """The store state changes ``source`` calls (see the module doc)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in TRANSITIONS:
            receiver = ast.unparse(node.value).lower()
            named = isinstance(node.value, (ast.Name, ast.Attribute))  # not OperatorTools(ledger).abort
            if node.attr not in PROTOCOL_NAMES or (named and ("ledger" in receiver or "store" in receiver)):
                found.append(f"{ast.unparse(node.value)}.{node.attr}")
    return found


def test_the_transitions_are_the_interfaces_state_changes() -> None:
    assert {"transaction", "vote_written", "mark_committed", "abort"} == TRANSITIONS


def test_no_product_code_outside_the_protocol_reaches_a_transition() -> None:
    offenders = {
        str(path.relative_to(PACKAGE)): transitions_called(path.read_text())
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).parts[:2] not in (("ledger", "protocol"), ("ledger", "store"))
    }
    assert {path: found for path, found in offenders.items() if found} == {}


def test_the_check_sees_calls_of_transitions() -> None:
    source = (
        "ledger.vote_written(1, 't')\nprotocol.vote(lease, {})\nself._ledger.abort(1, 'r')\n"
        "tools.abort(1, 'r')\nOperatorTools(ledger).abort(1, 'r')\nwith store.transaction() as cur: pass\n"
    )
    assert transitions_called(source) == ["ledger.vote_written", "self._ledger.abort", "store.transaction"]


def test_the_store_runs_statements_and_decides_nothing() -> None:
    """``ledger/store/`` imports, besides itself, only ``ledger/model/`` and the fencing rule."""
    allowed = ("airflow_provider_eo.ledger.store", "airflow_provider_eo.ledger.model")
    decided_elsewhere = {}
    for path in sorted((PACKAGE / "ledger" / "store").rglob("*.py")):
        imported = {
            node.module
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.ImportFrom)
            and node.module
            and node.module.startswith("airflow_provider_eo")
        }
        outside = {
            m
            for m in imported
            if not m.startswith(allowed) and m != "airflow_provider_eo.ledger.planning.fencing"
        }
        if outside:
            decided_elsewhere[path.name] = sorted(outside)
    assert decided_elsewhere == {}
