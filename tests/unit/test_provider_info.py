"""The provider entry point: schema-valid, installed, and naming only things that exist."""

from __future__ import annotations

import importlib
import json
from importlib.metadata import entry_points, version
from pathlib import Path

import airflow
import jsonschema

from airflow_provider_eo.get_provider_info import get_provider_info

SCHEMA_PATH = Path(airflow.__file__).parent / "provider_info.schema.json"


def _import_object(dotted: str) -> object:
    module_name, _, attr = dotted.rpartition(".")
    return getattr(importlib.import_module(module_name), attr)


def test_provider_info_is_valid_against_airflow_schema() -> None:
    schema = json.loads(SCHEMA_PATH.read_text())
    info = get_provider_info()
    jsonschema.validate(info, schema)
    assert info["package-name"] == "airflow-provider-eo"
    assert info["versions"] == [version("airflow-provider-eo")]


def test_entry_point_resolves_to_get_provider_info() -> None:
    (entry,) = [
        ep
        for ep in entry_points(group="apache_airflow_provider")
        if ep.dist and ep.dist.name == "airflow-provider-eo"
    ]
    assert entry.load() is get_provider_info


def test_every_connection_type_names_an_existing_hook_with_that_conn_type() -> None:
    for item in get_provider_info().get("connection-types", []):
        hook_class = _import_object(item["hook-class-name"])
        assert hook_class.conn_type == item["connection-type"], item["hook-class-name"]


def test_every_listed_module_and_plugin_imports() -> None:
    info = get_provider_info()
    integrations = {i["integration-name"] for i in info.get("integrations", [])}
    for section in ("hooks", "operators", "sensors", "triggers"):
        for group in info.get(section, []):
            assert group["integration-name"] in integrations, (section, group["integration-name"])
            for module in group["python-modules"]:
                assert importlib.import_module(module).__name__ == module
    for plugin in info.get("plugins", []):
        assert isinstance(_import_object(plugin["plugin-class"]), type), plugin["name"]


def test_the_hbase_asset_scheme_is_registered_with_the_product_handler() -> None:
    from airflow.sdk.providers_manager_runtime import ProvidersManagerTaskRuntime

    from airflow_provider_eo.assets import sanitize_uri

    (uris,) = get_provider_info()["asset-uris"]
    assert uris == {"schemes": ["hbase"], "handler": "airflow_provider_eo.assets.sanitize_uri"}
    assert _import_object(uris["handler"]) is sanitize_uri
    assert ProvidersManagerTaskRuntime().asset_uri_handlers["hbase"] is sanitize_uri
