"""The PySpark audit application (the audit DAG's ``spark-submit`` application file).

Usage (arguments are names and ids only; secrets come from the environment, as for the
write application, :mod:`~airflow_provider_eo.spark.driver.application`)::

    spark-submit [spark options] airflow_provider_eo/spark/driver/audit_application.py \
        --pipeline NAME --epoch-ids 12,13,15 --run-key DAG_ID/RUN_ID [--pipelines-file PATH] \
        [--index-budget-bytes N] \
        [--ledger-conn-id eo_ledger] [--kafka-conn-id eo_kafka] [--hbase-conn-id eo_hbase] \
        [--schema-registry-conn-id schema_registry] [--driver-env-file eo-driver-env.json]

Contract: audits the pipeline's committed epochs ``--epoch-ids`` with
:func:`~airflow_provider_eo.audit.audit_run.audit_window`, its ranges as Spark tasks
(:mod:`~airflow_provider_eo.spark.driver.audit_tasks`), and stores the report in the ledger
(``record_audit``, source ``dag``, under ``--run-key``: a retried run replaces its row). It
reads Kafka, HBase and the ledger and writes only that audit row. Exit codes: ``0`` the
audit is stored (whatever its verdict: the DAG's verdict task reads it); ``2`` refused
before reading Kafka or HBase (a connection or the spec missing, an id that is not one of
the pipeline's committed epochs); ``1`` the audit failed on the driver: nothing stored (a range
whose Spark task fails is a ``range_unreadable`` or ``range_failed`` finding of the stored
report, :mod:`~airflow_provider_eo.spark.driver.audit_tasks`).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from datetime import UTC, datetime

from airflow_provider_eo.audit.range_audit import AuditConnections
from airflow_provider_eo.clients.connection_settings import hbase_connection_kwargs, kafka_client_config
from airflow_provider_eo.clients.connections import (
    DEFAULT_HBASE_CONN_ID,
    DEFAULT_KAFKA_CONN_ID,
    DEFAULT_LEDGER_CONN_ID,
    DEFAULT_SCHEMA_REGISTRY_CONN_ID,
    connection_from_env,
)
from airflow_provider_eo.config.specs import PipelineSpec
from airflow_provider_eo.errors import ConfigError
from airflow_provider_eo.ledger.model.epoch import Epoch
from airflow_provider_eo.ledger.model.ledger_roles import LedgerReads
from airflow_provider_eo.ledger.model.read_model import EpochFilter
from airflow_provider_eo.ledger.model.states import EpochState
from airflow_provider_eo.spark.driver.driver_environment import DRIVER_ENV_ARG, load_driver_environment
from airflow_provider_eo.spark.driver.task_settings import (
    ledger_dsn_from_env,
    run_pipeline_spec,
    schema_registry_from_env,
)
from airflow_provider_eo.spark.logs import configure_logging
from airflow_provider_eo.spark.pyspark_startup import prefer_installed_pyspark, skip_pyspark_testing_import

log = logging.getLogger("airflow_provider_eo.spark.driver.audit_application")


class AuditRefused(ValueError):
    """The window is not the pipeline's committed epochs: nothing read, nothing stored."""


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Command-line arguments (no secrets accepted here)."""
    parser = argparse.ArgumentParser(
        prog="airflow_provider_eo.spark.driver.audit_application", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--pipeline", required=True)
    parser.add_argument("--epoch-ids", required=True, help="the committed epochs to audit: 12-15,18")
    parser.add_argument("--run-key", required=True, help="<dag_id>/<run_id>: the stored audit's run")
    parser.add_argument("--pipelines-file", default=None)
    parser.add_argument(
        "--index-budget-bytes",
        type=int,
        default=None,
        help="the window index's byte budget (default: the pipeline's audit.index_budget_bytes)",
    )
    parser.add_argument("--ledger-conn-id", default=DEFAULT_LEDGER_CONN_ID)
    parser.add_argument("--kafka-conn-id", default=DEFAULT_KAFKA_CONN_ID)
    parser.add_argument("--hbase-conn-id", default=DEFAULT_HBASE_CONN_ID)
    parser.add_argument("--schema-registry-conn-id", default=DEFAULT_SCHEMA_REGISTRY_CONN_ID)
    parser.add_argument(DRIVER_ENV_ARG, dest="driver_env_file", default=None)
    return parser.parse_args(argv)


def epoch_ids(text: str) -> list[int]:
    """``12-15,18`` (runs, :mod:`~airflow_provider_eo.audit.epoch_id_runs`) as ids,
    ascending; :class:`AuditRefused` when not ids or runs."""
    from airflow_provider_eo.audit.epoch_id_runs import parse_runs

    try:
        return parse_runs(text)
    except ValueError as exc:
        raise AuditRefused(f"--epoch-ids: {exc}") from None


def committed_epochs(ledger: LedgerReads, pipeline: str, ids: Sequence[int]) -> list[Epoch]:
    """The pipeline's committed epochs ``ids``, oldest first; :class:`AuditRefused` naming
    every id that is not one."""
    committed = frozenset({EpochState.COMMITTED})
    found = ledger.epochs(EpochFilter(pipeline=pipeline, states=committed, min_id=ids[0], max_id=ids[-1]))
    epochs = [epoch for epoch in found if epoch.epoch_id in set(ids)]
    missing = sorted(set(ids) - {epoch.epoch_id for epoch in epochs})
    if missing:
        raise AuditRefused(f"epochs {missing} are not committed epochs of pipeline {pipeline!r}")
    return epochs


def audit_connections(
    spec: PipelineSpec, kafka_conn_id: str, hbase_conn_id: str, schema_registry_conn_id: str
) -> AuditConnections:
    """What the audit reads through, from the driver's ``AIRFLOW_CONN_*`` environment;
    ``ConfigError`` (a ``ConnectionNotFound``) naming a missing one."""
    kafka = kafka_client_config(connection_from_env(kafka_conn_id))
    return AuditConnections(
        kafka_config=kafka.config,
        read_timeout_s=kafka.timeout_s,
        hbase_kwargs=hbase_connection_kwargs(connection_from_env(hbase_conn_id)),
        hbase_conn_id=hbase_conn_id,
        schema_registry=schema_registry_from_env(spec, schema_registry_conn_id),
    )


def index_budget(args: argparse.Namespace, spec: PipelineSpec) -> int:
    """``--index-budget-bytes``, else the spec's ``audit.index_budget_bytes``;
    :class:`AuditRefused` naming the pipeline when below 1."""
    budget = spec.audit.index_budget_bytes if args.index_budget_bytes is None else args.index_budget_bytes
    if budget < 1:
        raise AuditRefused(f"pipeline {spec.name!r}: --index-budget-bytes must be >= 1, got {budget}")
    return budget


def run_audit(args: argparse.Namespace, ids: Sequence[int]) -> tuple[int, str, int]:
    """Audit the window on Spark and store it; ``(audit_id, verdict, findings_total)``."""
    from airflow_provider_eo.audit.audit_run import audit_window
    from airflow_provider_eo.audit.epoch_spec import spec_for_epoch
    from airflow_provider_eo.clients.kafka_offset_reads import KafkaOffsetReads
    from airflow_provider_eo.ledger import Ledger
    from airflow_provider_eo.ledger.model.actors import Actor
    from airflow_provider_eo.ledger.protocol import EpochProtocol
    from airflow_provider_eo.spark.driver.audit_tasks import run_audit_on_spark

    spec = run_pipeline_spec(args.pipeline, args.pipelines_file)
    dsn = ledger_dsn_from_env(args.ledger_conn_id)
    with Ledger(dsn, conn_id=args.ledger_conn_id, actor=Actor.process()) as ledger:
        epochs = committed_epochs(ledger, spec.name, ids)
        connections = audit_connections(
            spec, args.kafka_conn_id, args.hbase_conn_id, args.schema_registry_conn_id
        )
        started_at = datetime.now(UTC)
        log.info("pipeline=%s: auditing epochs=%s on Spark", spec.name, ",".join(map(str, ids)))
        report = audit_window(
            epochs,
            lambda epoch: spec_for_epoch(epoch, {spec.name: spec}, ledger.pipeline_spec),
            ledger,
            KafkaOffsetReads(kafka_client_config(connection_from_env(args.kafka_conn_id))),
            connections,
            replay_selection=EpochProtocol(ledger).replay_selection,
            run_ranges=run_audit_on_spark,
            index_budget=index_budget(args, spec),
        )
        answer = report.to_json()
        audit_id = ledger.record_audit(answer, run_key=args.run_key, source="dag", started_at=started_at)
    return audit_id, report.verdict, report.findings.total


def main(argv: Sequence[str] | None = None) -> int:
    """Audit the window and store its report; returns the exit code (module contract)."""
    prefer_installed_pyspark()
    skip_pyspark_testing_import()
    args = parse_args(argv)
    try:
        if args.driver_env_file:
            load_driver_environment(args.driver_env_file)
    except ConfigError as exc:
        configure_logging()
        log.error("pipeline=%s: cannot audit: %s", args.pipeline, exc)
        return 2
    configure_logging()
    where = f"pipeline={args.pipeline} epoch_ids={args.epoch_ids} run_key={args.run_key}"
    try:
        audit_id, verdict, findings = run_audit(args, epoch_ids(args.epoch_ids))
    except (ConfigError, AuditRefused) as exc:
        log.error("%s: cannot audit: %s", where, exc)
        return 2
    except Exception as exc:
        log.exception("%s: audit failed, nothing stored: %s: %s", where, type(exc).__name__, exc)
        return 1
    log.info("%s: audit stored audit_id=%d verdict=%s findings=%d", where, audit_id, verdict, findings)
    return 0


if __name__ == "__main__":
    sys.exit(main())
