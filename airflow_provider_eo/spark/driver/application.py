"""The PySpark write application (the ``spark-submit`` application file).

Usage (arguments are names and ids only; secrets come from the environment)::

    spark-submit [spark options] airflow_provider_eo/spark/driver/application.py \
        --pipeline NAME --epoch-id N [--pipelines-file PATH] [--fencing-token UUID] \
        [--ledger-conn-id eo_ledger] [--kafka-conn-id eo_kafka] [--hbase-conn-id eo_hbase] \
        [--schema-registry-conn-id schema_registry] [--actor-kind task --actor NAME] \
        [--driver-env-file eo-driver-env.json]
    python -m airflow_provider_eo.spark.driver.application --pipeline NAME --epoch-id N
        # the same, Spark from pyspark

Environment: ``AIRFLOW_CONN_EO_LEDGER``, ``AIRFLOW_CONN_EO_KAFKA``,
``AIRFLOW_CONN_EO_HBASE``, ``AIRFLOW_CONN_SCHEMA_REGISTRY`` for registry formats (or the ids
given), and ``EO_PIPELINE_SPEC`` (the parsed spec,
as JSON) or ``EO_PIPELINES_FILE`` unless ``--pipelines-file`` is given. With
``--driver-env-file NAME`` (cluster deploy mode) they come from that file in the working
directory, loaded into the environment before anything else
(:mod:`~airflow_provider_eo.spark.driver.driver_environment`).
``--actor`` names who the vote is recorded as in the epoch's history (``WriteEpochOperator``
passes its task instance); without it, the driver's process.
Exit codes: see :class:`~airflow_provider_eo.spark.driver.write_epoch.ExitCode`.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import airflow_provider_eo
from airflow_provider_eo.clients.connection_settings import kafka_client_config
from airflow_provider_eo.clients.connections import (
    DEFAULT_HBASE_CONN_ID,
    DEFAULT_KAFKA_CONN_ID,
    DEFAULT_LEDGER_CONN_ID,
    DEFAULT_SCHEMA_REGISTRY_CONN_ID,
    connection_from_env,
    env_var_name,
)
from airflow_provider_eo.config.spec_digest import spec_digest
from airflow_provider_eo.errors import ConfigError
from airflow_provider_eo.ledger import EpochNotFound, Ledger
from airflow_provider_eo.ledger.model.actors import Actor
from airflow_provider_eo.spark.driver.credential_files import credential_files, describe
from airflow_provider_eo.spark.driver.driver_environment import DRIVER_ENV_ARG, load_driver_environment
from airflow_provider_eo.spark.driver.driver_jvm import class_archive_in_use
from airflow_provider_eo.spark.driver.task_settings import (
    ledger_dsn_from_env,
    run_pipeline_spec,
    task_settings,
)
from airflow_provider_eo.spark.driver.write_epoch import ExitCode, write_epoch
from airflow_provider_eo.spark.logs import configure_logging
from airflow_provider_eo.spark.pyspark_startup import prefer_installed_pyspark, skip_pyspark_testing_import

log = logging.getLogger("airflow_provider_eo.spark.driver.application")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Command-line arguments (no secrets accepted here)."""
    parser = argparse.ArgumentParser(
        prog="airflow_provider_eo.spark.driver.application", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--pipeline", required=True, help="pipeline name as declared in the pipelines YAML")
    parser.add_argument("--epoch-id", required=True, type=int, help="the RESERVED epoch to write")
    parser.add_argument(
        "--pipelines-file", default=None, help="pipelines YAML (default: see task_settings.py)"
    )
    parser.add_argument(
        "--fencing-token",
        default=None,
        help="token issued at reservation (default: the epoch's current token)",
    )
    parser.add_argument("--ledger-conn-id", default=DEFAULT_LEDGER_CONN_ID)
    parser.add_argument("--kafka-conn-id", default=DEFAULT_KAFKA_CONN_ID)
    parser.add_argument("--hbase-conn-id", default=DEFAULT_HBASE_CONN_ID)
    parser.add_argument(
        "--schema-registry-conn-id",
        default=DEFAULT_SCHEMA_REGISTRY_CONN_ID,
        help="used only when the key or value format is avro, protobuf or json_schema",
    )
    parser.add_argument(
        "--actor-kind",
        default="task",
        choices=["task", "eo-ledger", "recovery", "process"],
        help="kind of --actor (default task)",
    )
    parser.add_argument("--actor", default=None, help="who the vote is recorded as (default: this process)")
    parser.add_argument(
        DRIVER_ENV_ARG,
        dest="driver_env_file",
        default=None,
        help="base name of the environment file in the working directory (cluster deploy mode)",
    )
    return parser.parse_args(argv)


def actor_of(args: argparse.Namespace) -> Actor:
    """The actor the driver's ledger changes are recorded as: ``--actor`` (of
    ``--actor-kind``), else :meth:`Actor.process`."""
    return Actor(args.actor_kind, args.actor) if args.actor else Actor.process()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the write step for one epoch; returns the exit code."""
    prefer_installed_pyspark()  # before anything imports pyspark: no bytecode compiled from Spark's zip
    skip_pyspark_testing_import()  # no pandas/pyarrow import on the first JVM call
    args = parse_args(argv)
    loaded: list[str] | ConfigError = []
    if args.driver_env_file:
        try:  # before anything reads the environment (logging's EO_LOG_LEVEL too)
            loaded = load_driver_environment(args.driver_env_file)
        except ConfigError as exc:
            loaded = exc
    configure_logging()
    where = f"pipeline={args.pipeline} epoch_id={args.epoch_id}"
    if isinstance(loaded, ConfigError):
        log.error("%s: cannot write: %s", where, loaded)
        return int(ExitCode.INVALID)
    package = Path(airflow_provider_eo.__file__).parent
    log.info(
        "%s: driver up class_archive=%s package=%s environment_file=%s",
        where, class_archive_in_use() or "none", package, ",".join(loaded) or "none",
    )  # fmt: skip
    conn_ids = (args.ledger_conn_id, args.kafka_conn_id, args.hbase_conn_id, args.schema_registry_conn_id)
    own = {env_var_name(conn_id) for conn_id in conn_ids}
    connections = {name: value for name, value in os.environ.items() if name in own}
    for credential in credential_files(connections):  # mode and digest, never the content
        log.info("%s: credential file %s", where, describe(credential))
    try:
        spec = run_pipeline_spec(args.pipeline, args.pipelines_file)
        dsn = ledger_dsn_from_env(args.ledger_conn_id)
        # a Kafka client this librdkafka cannot build (KafkaFeatureMissing): exit 2, ledger untouched
        kafka_client_config(connection_from_env(args.kafka_conn_id))
        with Ledger(dsn, conn_id=args.ledger_conn_id, actor=actor_of(args)) as ledger:
            return int(
                write_epoch(
                    ledger,
                    spec.name,
                    args.epoch_id,
                    lambda: task_settings(
                        spec,
                        args.epoch_id,
                        ledger_conn_id=args.ledger_conn_id,
                        kafka_conn_id=args.kafka_conn_id,
                        hbase_conn_id=args.hbase_conn_id,
                        schema_registry_conn_id=args.schema_registry_conn_id,
                    ),
                    spec.spark.split_size,
                    fencing_token=args.fencing_token,
                    spec_digest=spec_digest(spec),
                )
            )
    except (ConfigError, EpochNotFound, ValueError) as exc:
        log.error("%s: cannot write: %s", where, exc)
        return int(ExitCode.INVALID)
    except Exception as exc:
        log.exception("%s: write failed, epoch not voted: %s: %s", where, type(exc).__name__, exc)
        return int(ExitCode.FAILED)


if __name__ == "__main__":
    sys.exit(main())
