"""WriteEpochOperator: run the package's PySpark application for one reserved epoch.

A subclass of the Spark provider's ``SparkSubmitOperator`` whose constructor keeps the
settings a DAG gives (resources, deploy mode, the Spark connection, any other
``SparkSubmitOperator`` keyword). ``execute`` never changes them: it computes the epoch's
submission (:func:`~airflow_provider_eo.operators.write_submission.write_submission`: conf,
``--py-files``, the private properties file's text, application arguments, the driver's
environment), builds a ``SparkSubmitHook`` from the operator's settings and that submission
(:mod:`~airflow_provider_eo.operators.submit_hook_arguments`) and calls its ``submit``; the
hook is kept (``submit_hook``) so that ``on_kill`` kills what it started.

Settings reach the Spark application without ever appearing on a command line: the
ledger, Kafka and HBase connections (and the Schema Registry's, for a pipeline whose key or
value format needs it) are resolved inside ``execute`` and handed over as ``AIRFLOW_CONN_*``
variables (JSON form), and the pipeline's parsed spec, the one this task run built its Spark
options from, as ``EO_PIPELINE_SPEC`` (JSON): the driver never reads the YAML again, so a
pipelines file changed meanwhile cannot give one run two specs. In client deploy mode they
are the spark-submit process's environment; in cluster deploy mode they travel in a private
``--properties-file`` (:mod:`~airflow_provider_eo.operators.write_submission`).

The application arguments carry only names and ids (pipeline, epoch id, and the task
instance the vote is recorded as: ``--actor-kind task --actor dag/run/task try N``).

Where the driver and executors run: ``spark.master`` of the pipeline overrides the Spark
connection's master; on any master but ``local`` the package's code travels as a
``--py-files`` zip built for the submission (``airflow_provider_eo.spark.package_zip``), so
executors need its dependencies but not the package itself. ``spark.resources`` become
spark-submit options (:mod:`airflow_provider_eo.operators.spark_submission`). Keys the
pipeline's ``spark.conf`` leaves unset get the start-up settings of
:mod:`~airflow_provider_eo.operators.driver_start` (no UI; the driver JVM's flags and
class-data archive, settled when the submission ends; the Python workers' daemon).

Only the Spark provider's public API is used: ``SparkSubmitOperator``'s constructor and
the public attributes it keeps, ``SparkSubmitHook``'s constructor, ``submit`` and
``on_kill``. The master override is a connection: with ``spark.master`` set, the hook's
``conn_id`` is a derived id
(:func:`~airflow_provider_eo.operators.spark_submission.master_connection_id`, fixed in
``__init__``) that ``execute`` makes resolvable, as the Spark connection with the override
as its host, through an ``AIRFLOW_CONN_*`` environment variable while the hook is built and
runs, removed afterwards.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Sequence
from contextlib import ExitStack
from typing import Any

from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
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
from airflow_provider_eo.ledger.model.epoch import Epoch
from airflow_provider_eo.lineage.operator_lineage import epoch_after_write, epoch_lineage
from airflow_provider_eo.operators.application_connections import (
    check_registered_fields,
    conn_id_args,
    connection_env,
    registry_connection_env,
)
from airflow_provider_eo.operators.driver_start import submission_conf
from airflow_provider_eo.operators.epoch_link import EpochPageLink
from airflow_provider_eo.operators.run_context import task_actor
from airflow_provider_eo.operators.spark_submission import (
    connection_in_environment,
    connection_master,
    master_connection,
    master_connection_id,
    process_environment,
    resource_options,
    spark_connection,
)
from airflow_provider_eo.operators.submission_files import private_properties_file, shipped_package
from airflow_provider_eo.operators.submit_hook_arguments import (
    constant_arguments,
    openlineage_options,
    openlineage_properties,
    rendered_arguments,
)
from airflow_provider_eo.operators.write_submission import (
    WriteSubmission,
    application_args,
    check_deploy_mode,
    write_submission,
)


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
        ``spark.master`` set, the hook is given ``submit_conn_id`` instead: this
        connection with the override as its master, resolvable only while ``execute`` runs
        (see the module docstring).

    Any other ``SparkSubmitOperator`` keyword passes through (``conn_id`` excepted; the
    detached tracking modes ``track_driver_via_k8s_api`` / ``yarn_track_via_rm_api`` raise
    ``ValueError``); ``py_files`` given there are shipped beside the package zip.
    ``execute`` leaves every attribute the constructor set as it was.
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
        settings = {
            **options,
            "conf": {**options["conf"], **spec.spark.conf},
            "conn_id": submit_conn_id,
            "deploy_mode": spec.spark.deploy_mode,
            "name": f"eo-write-{pipeline}",
        }
        super().__init__(
            application=spark_application_path(),
            application_args=["--pipeline", pipeline, "--epoch-id", str(epoch_id)],
            **settings,
            **kwargs,  # a keyword also in settings: TypeError, as for any repeated keyword
        )
        self.hook_settings = constant_arguments({**settings, **kwargs}, self.template_fields)
        self.openlineage_options = openlineage_options(kwargs)
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
        self.submit_hook: SparkSubmitHook | None = None  # the last submission's (on_kill)
        self.lineage_epoch: Epoch | None = None  # what get_openlineage_facets_on_complete reports

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

    def hook_arguments(
        self, submission: WriteSubmission, properties_file: str | None, context: Any
    ) -> dict[str, Any]:
        """``SparkSubmitHook`` keyword arguments of ``submission``: the operator's settings
        (constant and rendered), then the submission's conf (with the OpenLineage properties the
        operator asks for), py_files, application arguments, and ``properties_file``."""
        return {
            **self.hook_settings,
            **rendered_arguments(self),
            "conf": openlineage_properties(dict(submission.conf), self.openlineage_options, context),
            "py_files": submission.py_files,
            "properties_file": properties_file,
            "application_args": submission.application_args,
        }

    def execute(self, context: Any) -> None:
        """Run spark-submit for the epoch through a new ``SparkSubmitHook`` (kept as
        ``submit_hook``); every temporary file and environment variable of the submission is
        gone when it returns or raises, and the operator's attributes are as constructed.

        Raises ``ConfigError`` when no epoch was given or for cluster deploy mode on a
        standalone master (nothing submitted), and the hook's ``AirflowException`` when the
        application fails or its vote is fenced out. With OpenLineage enabled, then reads the
        epoch as the write left it (``lineage_epoch``, the lineage's).
        """
        if self.epoch_id is None:
            raise ConfigError(f"pipeline {self.pipeline}: no epoch to write (epoch_id is None)")
        env = self.application_env()  # the connections first: a missing one fails before any other work
        unchecked = check_registered_fields(self.spec, self.schema_registry_conn_id)
        if unchecked:
            self.log.info("pipeline=%s: no schema registered yet under %s", self.pipeline, unchecked)
        connection = spark_connection(self.spark_conn_id)
        master = self.spark_master or connection_master(connection)
        check_deploy_mode(self.pipeline, master, self.spec.spark.deploy_mode)
        self.log.info(
            "Writing epoch: pipeline=%s epoch_id=%s master=%s deploy_mode=%s spec_from=%s",
            self.pipeline, self.epoch_id, master, self.spec.spark.deploy_mode,
            self.spec.source_file or self.pipelines_file,
        )  # fmt: skip
        with ExitStack() as scope:
            submission, properties_file = self._prepare(
                scope, context, self.epoch_id, env, connection, master
            )
            self.submit_hook = SparkSubmitHook(**self.hook_arguments(submission, properties_file, context))
            self.submit_hook.submit(self.application)
        self.lineage_epoch = epoch_after_write(self.ledger_conn_id, int(str(self.epoch_id)))

    def _prepare(
        self,
        scope: ExitStack,
        context: Any,
        epoch_id: int | str,
        env: dict[str, str],
        connection: Any,
        master: str,
    ) -> tuple[WriteSubmission, str | None]:
        """``epoch_id``'s submission and its properties file, with what it needs in place until
        ``scope`` exits: the submission conf, the master override's connection, the shipped
        package zip, the private properties file, the driver's environment."""
        deploy_mode = self.spec.spark.deploy_mode
        conf = scope.enter_context(submission_conf(self.conf or {}, master=master, deploy_mode=deploy_mode))
        if self.spark_master:
            override = master_connection(self.submit_conn_id, connection, self.spark_master)
            scope.enter_context(connection_in_environment(override))  # the hook resolves it
        args = application_args(
            pipeline=self.pipeline,
            epoch_id=epoch_id,
            fencing_token=self.fencing_token,
            actor=task_actor(context),  # the driver votes as this task (the epoch's history)
            conn_id_args=self.conn_id_args(),
        )
        submission = write_submission(
            args=args,
            conf=conf,
            py_files=self.py_files,
            package_zip=None if master.startswith("local") else scope.enter_context(shipped_package()),
            env=env,
            deploy_mode=deploy_mode,
        )
        properties_file = self.properties_file
        if submission.properties is not None:
            properties_file = scope.enter_context(private_properties_file(submission.properties))
        scope.enter_context(process_environment(submission.environment))
        return submission, properties_file

    def on_kill(self) -> None:
        """Kill the running submission through the hook that started it (spark-submit, and the
        driver or application the hook tracks); nothing when this instance never submitted."""
        if self.submit_hook is not None:
            self.submit_hook.on_kill()

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """OpenLineage (``apache-airflow-providers-openlineage``): the topics the epoch read, the
        table it wrote and its ``eo_epoch`` facet as the write left it (docs/lineage.md)."""
        return epoch_lineage(
            self.lineage_epoch, self.spec, kafka_conn_id=self.kafka_conn_id, hbase_conn_id=self.hbase_conn_id
        )
