"""Names other code relies on are written in one place: the default connection ids and the
environment variable that carries a task run's spec to the write application."""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "airflow_provider_eo"
CONNECTION_IDS = ('"eo_ledger"', '"eo_kafka"', '"eo_hbase"', '"spark_default"', '"schema_registry"')


def lines_with(literals: tuple[str, ...]) -> list[str]:
    """``file:line`` of every product line quoting one of ``literals`` (connection types aside:
    a type is another concept that happens to share the name)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if (
                any(literal in line for literal in literals)
                and "conn_type" not in line
                and "connection-type" not in line
            ):
                found.append(f"{path.relative_to(PACKAGE)}:{number}")
    return found


def test_default_connection_ids_are_defined_once() -> None:
    found = lines_with(CONNECTION_IDS)
    assert ({line.split(":")[0] for line in found}, len(found)) == ({"clients/connections.py"}, 5), found


def test_the_pipeline_spec_variable_is_defined_once() -> None:
    assert [line.split(":")[0] for line in lines_with(('"EO_PIPELINE_SPEC"',))] == ["config/loader.py"]
