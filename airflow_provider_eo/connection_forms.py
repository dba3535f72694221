"""Connection form metadata of this provider's connection types.

The single source is the literal ``connection-types`` list of ``get_provider_info()``
(``ui-field-behaviour`` and ``conn-fields``, the declarative form Airflow >= 3.2 reads
without importing hooks). The hooks' ``get_ui_field_behaviour()`` return the same data
in the classic snake_case shape through :func:`field_behaviour`. Import-light.
"""

from __future__ import annotations

from typing import Any

from airflow_provider_eo.get_provider_info import get_provider_info


def connection_type_info(conn_type: str) -> dict[str, Any]:
    """The ``connection-types`` entry of ``conn_type`` (``KeyError`` if not registered)."""
    for entry in get_provider_info()["connection-types"]:
        if entry["connection-type"] == conn_type:
            return dict(entry)
    raise KeyError(f"connection type {conn_type!r} is not registered by airflow-provider-eo")


def field_behaviour(conn_type: str) -> dict[str, Any]:
    """Classic ``get_ui_field_behaviour()`` dict: hidden_fields, relabeling, placeholders."""
    behaviour = connection_type_info(conn_type).get("ui-field-behaviour", {})
    return {
        "hidden_fields": list(behaviour.get("hidden-fields", [])),
        "relabeling": dict(behaviour.get("relabeling", {})),
        "placeholders": dict(behaviour.get("placeholders", {})),
    }
