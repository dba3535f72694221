"""WriteEpochOperator: run the package's PySpark application for one reserved epoch.

A thin subclass of the Spark provider's ``SparkSubmitOperator``. What it adds is
how settings reach the Spark application without ever appearing on a command line:

* the ledger, Kafka and HBase connections (and the Schema Registry's, for a pipeline whose
  key or value format needs it) are resolved inside ``execute`` and
  handed over as ``AIRFLOW_CONN_*`` environment variables (JSON form), and the
  pipeline's parsed spec, the one this task run built its Spark options from, as
  ``EO_PIPELINE_SPEC`` (JSON): the driver never reads the YAML again, so a pipelines file
  changed meanwhile cannot give one run two specs, and the driver may run on a machine
  that has no copy of the DAG folder;
* client deploy mode: they are set on the ``spark-submit`` process environment
  (the driver inherits it; executors get settings inside task closures);
* cluster deploy mode on YARN or Kubernetes: they go into a temporary
  ``--properties-file`` (mode 0600, deleted afterwards) as
  ``spark.yarn.appMasterEnv.*`` / ``spark.kubernetes.driverEnv.*``, because the
  Spark hook would otherwise turn ``env_vars`` into ``--conf`` arguments.

The application arguments carry only names and ids (pipeline, epoch id, and the task
instance the vote is recorded as: ``--actor-kind task --actor dag/run/task try N``).

Where the driver and executors run: ``spark.master`` of the pipeline overrides the
Spark connection's master; on any master but
``local`` the package's code travels as a ``--py-files`` zip built for the submission
(``airflow_provider_eo.spark.package_zip``), so executors need its dependencies but not
the package itself. ``spark.resources`` become spark-submit options
(:mod:`airflow_provider_eo.operators.spark_submission`). Keys the pipeline's ``spark.conf``
leaves unset get the start-up settings of :mod:`~airflow_provider_eo.operators.driver_start`
(no UI; the driver JVM's flags and class-data archive; the Python workers' daemon).

Only the Spark provider's public API is used: constructor arguments, the public
attributes they are kept in, ``execute`` and ``on_kill``. The master override is a
connection: with ``spark.master`` set, the operator's ``conn_id`` is a derived id
(:func:`~airflow_provider_eo.operators.spark_submission.master_connection_id`, fixed in
``__init__``) that ``execute`` makes resolvable, as the Spark connection with the override
as its host, through an ``AIRFLOW_CONN_*`` environment variable removed afterwards. The
provider builds its hook once, lazily, in ``execute``: everything the hook reads is set
before ``SparkSubmitOperator.execute`` runs, so one operator instance executes once
(Airflow runs a fresh copy of the task for every try).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

from airflow_provider_eo.clients.connections import (
    DEFAULT_HBASE_CONN_ID,
    DEFAULT_KAFKA_CONN_ID,
    DEFAULT_LEDGER_CONN_ID,
    DEFAULT_SCHEMA_REGISTRY_CONN_ID,
    DEFAULT_SPARK_CONN_ID,
)
from airflow_provider_eo.config.loader import PIPELINE_SPEC_ENV
from airflow_provider_eo.config.specs import PipelineSpec
from airflow_provider_eo.errors import ConfigError
from airflow_provider_eo.ledger.model.epochs import Epoch
from airflow_provider_eo.lineage.operator_lineage import epoch_after_write, epoch_lineage
from airflow_provider_eo.operators.application_connections import (
    check_registered_fields,
    conn_id_args,
    connection_env,
    registry_connection_env,
)
from airflow_provider_eo.operators.driver_start import submission_conf
from airflow_provider_eo.operators.epoch_link import EpochPageLink
from airflow_provider_eo.operators.pipeline_operator import task_actor
from airflow_provider_eo.operators.spark_submission import (
    connection_in_environment,
    connection_master,
    is_standalone,
    master_connection,
    master_connection_id,
    process_environment,
    resource_options,
    spark_connection,
    write_properties_file,
)
from airflow_provider_eo.spark.package_zip import build_zip


def spark_application_path() -> str:
    """Path of the PySpark application file shipped in this package (no import needed)."""
    spec = importlib.util.find_spec("airflow_provider_eo.spark.driver.application")
    if spec is None or spec.origin is None:
        raise RuntimeError("airflow_provider_eo.spark.driver.application is not installed with this package")
    return spec.origin


class WriteEpochOperator(SparkSubmitOperator):
    """Submit the write step of one epoch: read its ranges, write HBase, vote WRITTEN.

    :param pipeline: pipeline name (as declared in the pipelines YAML).
    :param epoch_id: the epoch to write (templated; usually pulled from the reserve task's XCom;
        None only for a subclass that reserves the epoch itself in ``execute``).
    :param fencing_token: the token the reserve task returned (templated); the application
        refuses to write an epoch whose token differs, and treats an epoch already voted
        under this token as done (a retry of this task).
    :param spec: the pipeline spec; its ``spark`` section sets conf, deploy mode, resources and
        the master (``spark.master`` overrides the connection's).
    :param pipelines_file: the YAML the spec came from (None: ``EO_PIPELINES_FILE``), named in
        the log; the application gets ``spec`` itself and never reads the file.
    :param ledger_conn_id / kafka_conn_id / hbase_conn_id: connections handed to the application.
    :param schema_registry_conn_id: the Schema Registry connection, handed to the application
        only when the pipeline's key or value format is avro, protobuf or json_schema.
    :param spark_conn_id: the Spark connection (master), default ``spark_default``. With
        ``spark.master`` set, the provider is given ``submit_conn_id`` instead: this
        connection with the override as its master, resolvable only while ``execute`` runs
        (see the module docstring).

    Any other ``SparkSubmitOperator`` keyword passes through (``conn_id`` excepted);
    ``py_files`` given there are shipped beside the package zip. An instance executes once.
    """

    template_fields: Sequence[str] = (*SparkSubmitOperator.template_fields, "epoch_id", "fencing_token")
    ui_color = "#f0e4ff"
    operator_extra_links = (EpochPageLink(),)  # "Epoch": the epoch's page (operators/epoch_link.py)

    def __init__(
        self,
        *,
        pipeline: str,
        epoch_id: str | int | None = None,
        fencing_token: str | None = None,
        spec: PipelineSpec,
        pipelines_file: str | None = None,
        ledger_conn_id: str = DEFAULT_LEDGER_CONN_ID,
        kafka_conn_id: str = DEFAULT_KAFKA_CONN_ID,
        hbase_conn_id: str = DEFAULT_HBASE_CONN_ID,
        schema_registry_conn_id: str = DEFAULT_SCHEMA_REGISTRY_CONN_ID,
        spark_conn_id: str = DEFAULT_SPARK_CONN_ID,
        **kwargs: Any,
    ) -> None:
        options = resource_options(spec.spark.resources, spec.spark.master)
        master = spec.spark.master
        submit_conn_id = master_connection_id(spark_conn_id, master) if master else spark_conn_id
        super().__init__(
            application=spark_application_path(),
            application_args=["--pipeline", pipeline, "--epoch-id", str(epoch_id)],
            conn_id=submit_conn_id,
            deploy_mode=spec.spark.deploy_mode,
            name=f"eo-write-{pipeline}",
            **{**options, "conf": {**options["conf"], **spec.spark.conf}},
            **kwargs,
        )
        self.spark_conn_id = spark_conn_id
        self.spark_master = master
        self.submit_conn_id = submit_conn_id
        self.pipeline = pipeline
        self.epoch_id = epoch_id
        self.fencing_token = fencing_token
        self.spec = spec
        self.pipelines_file = pipelines_file
        self.ledger_conn_id = ledger_conn_id
        self.kafka_conn_id = kafka_conn_id
        self.hbase_conn_id = hbase_conn_id
        self.schema_registry_conn_id = schema_registry_conn_id
        self._properties_path: str | None = None
        self._zip_dir: str | None = None
        self._submitted = False
        self.lineage_epoch: Epoch | None = None  # what get_openlineage_facets_on_complete reports

    def _ship_package(self, master: str) -> None:
        """On a non-local ``master``, add the package zip to ``py_files`` (temp dir removed after the run).

        Raises :class:`ConfigError` for cluster deploy mode on a standalone master, which
        Spark refuses for Python applications.
        """
        if is_standalone(master) and self.spec.spark.deploy_mode == "cluster":
            raise ConfigError(
                f"pipeline {self.pipeline}: deploy_mode 'cluster' with master {master!r}: Spark runs Python "
                "applications on a standalone cluster in client deploy mode only"
            )
        if master.startswith("local"):
            return
        self._zip_dir = tempfile.mkdtemp(prefix="eo-pyfiles-")
        package = build_zip(Path(self._zip_dir) / "airflow_provider_eo.zip")
        self.py_files = ",".join(filter(None, [self.py_files, str(package)]))

    def application_env(self) -> dict[str, str]:
        """What the application's driver gets in its environment: the connections
        (``AIRFLOW_CONN_*``, secrets) and this run's spec (``EO_PIPELINE_SPEC``)."""
        conn_ids = (self.ledger_conn_id, self.kafka_conn_id, self.hbase_conn_id)
        return {
            **connection_env(conn_ids),
            **registry_connection_env(self.pipeline, self.spec, self.schema_registry_conn_id),
            PIPELINE_SPEC_ENV: json.dumps(self.spec.to_dict()),
        }

    def conn_id_args(self) -> list[str]:
        """The application's ``--<name>-conn-id`` arguments (ids that are not its defaults)."""
        return conn_id_args(
            self.ledger_conn_id,
            self.kafka_conn_id,
            self.hbase_conn_id,
            self.schema_registry_conn_id,
            self.spec,
        )

    def execute(self, context: Any) -> None:
        """Run spark-submit; raises if the application fails or its vote is fenced out,
        ``ConfigError`` when no epoch was given, and ``RuntimeError`` when this instance
        already submitted (the provider's hook, built on the first submission, would replay
        that submission's settings). With OpenLineage enabled, then reads the epoch as the
        write left it (``lineage_epoch``, the lineage's)."""
        if self.epoch_id is None:
            raise ConfigError(f"pipeline {self.pipeline}: no epoch to write (epoch_id is None)")
        if self._submitted:
            raise RuntimeError(
                f"pipeline {self.pipeline}: this WriteEpochOperator instance already submitted; "
                "execute a fresh copy of the task (as Airflow does for every try)"
            )
        self.application_args = ["--pipeline", self.pipeline, "--epoch-id", str(self.epoch_id)]
        if self.fencing_token:
            self.application_args += ["--fencing-token", str(self.fencing_token)]
        actor = task_actor(context)  # the driver votes as this task (the epoch's history)
        self.application_args += ["--actor-kind", actor.kind, "--actor", actor.name]
        self.application_args += self.conn_id_args()
        env = self.application_env()
        unchecked = check_registered_fields(self.spec, self.schema_registry_conn_id)
        if unchecked:
            self.log.info("pipeline=%s: no schema registered yet under %s", self.pipeline, unchecked)
        connection = spark_connection(self.spark_conn_id)
        master = self.spark_master or connection_master(connection)
        self.log.info(
            "Writing epoch: pipeline=%s epoch_id=%s master=%s deploy_mode=%s spec_from=%s",
            self.pipeline,
            self.epoch_id,
            master,
            self.spec.spark.deploy_mode,
            self.spec.source_file or self.pipelines_file,
        )
        py_files = self.py_files
        deploy_mode = self.spec.spark.deploy_mode
        try:
            with ExitStack() as scope:
                self.conf = scope.enter_context(
                    submission_conf(self.conf or {}, master=master, deploy_mode=deploy_mode)
                )
                if self.spark_master:
                    override = master_connection(self.submit_conn_id, connection, self.spark_master)
                    scope.enter_context(connection_in_environment(override))
                self._ship_package(master)
                if deploy_mode == "cluster":
                    self._properties_path = write_properties_file(self.conf or {}, env)
                    self.properties_file = self._properties_path
                    self.conf = {}
                else:  # the process environment: the provider's env_vars become --conf on YARN/k8s
                    scope.enter_context(process_environment(env))
                # the provider builds its hook from the settings above, in its execute
                self._submitted = True
                super().execute(context)
        finally:
            self.py_files = py_files
            if self._properties_path:
                os.unlink(self._properties_path)
                self._properties_path = None
            if self._zip_dir:
                shutil.rmtree(self._zip_dir, ignore_errors=True)
                self._zip_dir = None
        self.lineage_epoch = epoch_after_write(self.ledger_conn_id, int(str(self.epoch_id)))

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """OpenLineage (``apache-airflow-providers-openlineage``): the topics the epoch read, the
        table it wrote and its ``eo_epoch`` facet as the write left it (docs/lineage.md)."""
        return epoch_lineage(
            self.lineage_epoch, self.spec, kafka_conn_id=self.kafka_conn_id, hbase_conn_id=self.hbase_conn_id
        )
