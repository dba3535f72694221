"""WriteEpochOperator: run the package's PySpark application for one reserved epoch.

A subclass of the Spark provider's ``SparkSubmitOperator`` (and of
:class:`~airflow_provider_eo.operators.epoch_write.EpochWriteOperator`, what it shares with
the session-mode write) whose constructor keeps the settings a DAG gives; ``execute`` never
changes them. It checks where the submission goes (:mod:`.submission_target`; bad settings
are refused before anything is submitted), computes the epoch's submission
(:mod:`.write_submission`), builds a ``SparkSubmitHook`` from the operator's settings and
that submission (:mod:`.submit_hook_arguments`) and calls its ``submit``; the hook is kept
(``submit_hook``) so that ``on_kill`` kills what it started. In YARN cluster deploy mode the
result is the application's final status in the ResourceManager (:mod:`.yarn_tracking`), and
``on_kill`` also kills the application by its tag there. docs/operators.md
("WriteEpochOperator", "YARN cluster deploy mode") tells it all.

Nothing secret is ever on a command line: the connections (``AIRFLOW_CONN_*``, JSON) and
the parsed spec (``EO_PIPELINE_SPEC``: the driver never reads the YAML again) are the
spark-submit process's environment in client deploy mode, and a private file shipped with
the application in YARN cluster deploy mode. The application arguments carry only names
and ids (pipeline, epoch id, the task instance the vote is recorded as).

Only the Spark provider's public API is used: ``SparkSubmitOperator``'s constructor and the
public attributes it keeps, ``SparkSubmitHook``'s constructor, ``submit`` and ``on_kill``.
The pipeline's ``spark.master`` overrides the connection's through a derived connection id
(:func:`~airflow_provider_eo.operators.spark_submission.master_connection_id`, fixed in
``__init__``) that ``execute`` makes resolvable through an ``AIRFLOW_CONN_*`` environment
variable while the hook is built and runs, removed afterwards.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from contextlib import ExitStack
from typing import Any

from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

from airflow_provider_eo.clients.connections import (
    DEFAULT_SPARK_CONN_ID,
)
from airflow_provider_eo.config.specs import PipelineSpec
from airflow_provider_eo.lineage.operator_lineage import epoch_after_write
from airflow_provider_eo.operators.application_connections import check_registered_fields, conn_id_args
from airflow_provider_eo.operators.driver_start import submission_conf
from airflow_provider_eo.operators.epoch_write import EpochWriteOperator
from airflow_provider_eo.operators.run_context import task_actor
from airflow_provider_eo.operators.spark_submission import (
    connection_in_environment,
    is_yarn,
    master_connection,
    master_connection_id,
    process_environment,
    resource_options,
)
from airflow_provider_eo.operators.submission_files import (
    private_environment_file,
    refuse_unreadable_credentials,
    shipped_package,
)
from airflow_provider_eo.operators.submission_target import SubmissionTarget, submission_target
from airflow_provider_eo.operators.submit_hook_arguments import (
    constant_arguments,
    openlineage_options,
    openlineage_properties,
    rendered_arguments,
)
from airflow_provider_eo.operators.write_submission import (
    WriteSubmission,
    application_args,
    write_submission,
)
from airflow_provider_eo.operators.yarn_submission import submit_binary, yarn_submission
from airflow_provider_eo.operators.yarn_tracking import YarnTracking, submit_tracked
from airflow_provider_eo.spark.driver.credential_files import (
    credential_files,
    files_entries,
    shippable,
    shipped_environment,
)


def application_path(module: str = "airflow_provider_eo.spark.driver.application") -> str:
    """Path of a PySpark application file shipped in this package (no import needed);
    ``RuntimeError`` when ``module`` is not installed."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise RuntimeError(f"{module} is not installed with this package")
    return spec.origin


def spark_application_path() -> str:
    """Path of the write step's application (:func:`application_path` of the default)."""
    return application_path()


class WriteEpochOperator(EpochWriteOperator, SparkSubmitOperator):
    """Submit the write step of one epoch: read its ranges, write HBase, vote WRITTEN.

    Parameters: :class:`.EpochWriteOperator`'s (pipeline, epoch, fencing token, spec, the
    connections handed to the application), and:

    :param spec: the pipeline spec; its ``spark`` section sets conf, deploy mode, resources and
        the master (``spark.master`` overrides the connection's). In ``spark.mode: session``
        the epoch is written on the Spark Connect server instead (the stream DAG's write of
        such a pipeline is :class:`.SessionWriteEpochOperator`, which is no
        ``SparkSubmitOperator``).
    :param spark_conn_id: the Spark connection (master), default ``spark_default``. With
        ``spark.master`` set, the hook is given ``submit_conn_id`` instead: this
        connection with the override as its master, resolvable only while ``execute`` runs
        (see the module docstring).

    Any other ``SparkSubmitOperator`` keyword passes through (``conn_id`` excepted;
    ``track_driver_via_k8s_api`` raises ``ValueError``; ``yarn_track_via_rm_api`` is
    accepted in YARN cluster deploy mode, where the step always tracks the application
    through the ResourceManager, and never handed to the hook; ``yarn_rm_auth`` is the
    ResourceManager's auth; ``durable`` has no effect: a retry always submits anew, the
    epoch's fencing token deciding what counts); ``py_files`` and ``files`` given there are
    shipped beside the package zip and the driver's environment file.
    ``execute`` leaves every attribute the constructor set as it was.
    """

    template_fields: Sequence[str] = (*SparkSubmitOperator.template_fields, "epoch_id", "fencing_token")

    def __init__(
        self,
        *,
        pipeline: str,
        epoch_id: str | int | None = None,
        spec: PipelineSpec,
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
            pipeline=pipeline,
            epoch_id=epoch_id,
            spec=spec,  # fencing_token, pipelines_file and the connection ids: EpochWriteOperator's
            application=spark_application_path(),  # the rest is SparkSubmitOperator's
            application_args=["--pipeline", pipeline, "--epoch-id", str(epoch_id)],
            **settings,
            **kwargs,  # a keyword also in settings: TypeError, as for any repeated keyword
        )
        self.hook_settings = constant_arguments({**settings, **kwargs}, self.template_fields)
        self.openlineage_options = openlineage_options(kwargs)
        self.yarn_track_via_rm_api = bool(
            kwargs.get("yarn_track_via_rm_api")
        )  # tracked here, not by the hook
        self.spark_conn_id = spark_conn_id
        self.spark_master = master
        self.submit_conn_id = submit_conn_id
        self.submit_hook: SparkSubmitHook | None = None  # the last submission's (on_kill)
        self.yarn_tracking: YarnTracking | None = None  # its YARN application's (on_kill)

    def conn_id_args(self) -> list[str]:
        """The application's ``--<name>-conn-id`` arguments (ids that are not its defaults)."""
        return conn_id_args(
            self.ledger_conn_id,
            self.kafka_conn_id,
            self.hbase_conn_id,
            self.schema_registry_conn_id,
            self.spec,
        )

    def application_arguments(self, context: Any, epoch_id: str) -> list[str]:
        """The application's arguments for ``epoch_id`` (names and ids only: no secret)."""
        return application_args(
            pipeline=self.pipeline,
            epoch_id=epoch_id,
            fencing_token=self.fencing_token,
            actor=task_actor(context),  # the driver votes as this task (the epoch's history)
            conn_id_args=self.conn_id_args(),
        )

    def hook_arguments(self, submission: WriteSubmission, context: Any) -> dict[str, Any]:
        """``SparkSubmitHook`` keyword arguments of ``submission``: the operator's settings
        (constant and rendered), then the submission's conf (with the OpenLineage properties the
        operator asks for), py_files, files and application arguments."""
        return {
            **self.hook_settings,
            **rendered_arguments(self),
            "conf": openlineage_properties(dict(submission.conf), self.openlineage_options, context),
            "py_files": submission.py_files,
            "files": submission.files,
            "application_args": submission.application_args,
        }

    def submission_target(self, env: dict[str, str]) -> SubmissionTarget:
        """Where the submission goes, checked (:func:`.submission_target`): raises before
        anything is submitted or reserved for a bad master, deploy mode, ``--py-files``,
        ResourceManager, queue or container size, or a credential file of ``env``'s
        connections the driver could not read there (``refuse_unreadable_credentials``)."""
        target = submission_target(
            spec=self.spec,
            spark_conn_id=self.spark_conn_id,
            conf=self.conf or {},
            settings=self.hook_settings,
            py_files=self.py_files,
            track_via_rm_api=self.yarn_track_via_rm_api,
        )
        refuse_unreadable_credentials(
            self.pipeline, env, master=target.master, deploy_mode=target.deploy_mode,
            ledger_conn_id=self.ledger_conn_id,
        )  # fmt: skip
        return target

    def execute(self, context: Any) -> None:
        """Run spark-submit for the epoch through a new ``SparkSubmitHook`` (kept as
        ``submit_hook``); every temporary file and environment variable of the submission is
        gone when it returns or raises, and the operator's attributes are as constructed.

        Raises ``ConfigError`` when no epoch was given, a connection names a credential file
        this machine cannot read (:mod:`.credential_files`), or the target is refused
        (:meth:`submission_target`; nothing submitted), ``ResourceManagerUnavailable`` when
        YARN's RM does not answer, the hook's ``AirflowException`` when the application fails
        or its vote is fenced out, and in YARN cluster deploy mode ``YarnApplicationFailed``
        with the RM's diagnostics. With OpenLineage enabled, then reads the epoch as the
        write left it (``lineage_epoch``, the lineage's).
        """
        if self.spec.spark.mode == "session":  # a job on the Spark Connect server, no spark-submit
            self.write_epoch_on_session(context)
            return
        epoch_id = self.epoch_to_write()
        env = self.application_env()  # the connections first: a missing one fails before any other work
        target = self.submission_target(env)
        self.write(context, target, env)
        self.lineage_epoch = epoch_after_write(self.ledger_conn_id, epoch_id)

    def submission_subject(self) -> tuple[str, str]:
        """What the submission's log line names: what it does, and its epoch (``epoch_id=``)."""
        return "Writing epoch", f"epoch_id={self.epoch_id}"

    def write(self, context: Any, target: SubmissionTarget, env: dict[str, str]) -> None:
        """Submit the epoch ``epoch_id`` to ``target`` with the driver environment ``env``, and
        in YARN cluster deploy mode follow its application to its end (see :meth:`execute`)."""
        unchecked = check_registered_fields(self.spec, self.schema_registry_conn_id)
        if unchecked:
            self.log.info("pipeline=%s: no schema registered yet under %s", self.pipeline, unchecked)
        label, subject = self.submission_subject()
        self.log.info(
            "%s: pipeline=%s %s master=%s deploy_mode=%s spec_from=%s",
            label, self.pipeline, subject, target.master, target.deploy_mode,
            self.spec.source_file or self.pipelines_file,
        )  # fmt: skip
        with ExitStack() as scope:
            submission = self.prepare(scope, context, str(self.epoch_id), env, target)
            self.submit_hook = SparkSubmitHook(**self.hook_arguments(submission, context))
            if target.yarn_cluster and self.yarn_tracking is not None:
                submit_tracked(self.submit_hook, self.application, self.yarn_tracking)
            else:
                self.submit_hook.submit(self.application)

    def prepare(
        self, scope: ExitStack, context: Any, epoch_id: str, env: dict[str, str], target: SubmissionTarget
    ) -> WriteSubmission:
        """``epoch_id``'s submission to ``target``, with what it needs in place until ``scope``
        exits: the submission conf (YARN's tags and settings on a YARN master, and the
        tracking of its application where the RM is known), the master override's
        connection, the shipped package zip, the private environment file (cluster deploy
        mode) with the connections' credential files shipped beside it and renamed in it,
        the driver's environment (client deploy mode)."""
        deploy_mode, master = target.deploy_mode, target.master
        conf = scope.enter_context(submission_conf(self.conf or {}, master=master, deploy_mode=deploy_mode))
        self.yarn_tracking = None
        if is_yarn(master):
            try_number = getattr(context.get("ti") if context else None, "try_number", None)
            conf, self.yarn_tracking = yarn_submission(
                conf,
                pipeline=self.pipeline,
                epoch_id=epoch_id,
                try_number=try_number,
                deploy_mode=deploy_mode,
                rm=target.rm,
                poll_s=float(self.hook_settings.get("status_poll_interval") or 1),
                spark_binary=submit_binary(self.hook_settings, target.connection),
            )
        if self.spark_master:
            override = master_connection(self.submit_conn_id, target.connection, self.spark_master)
            scope.enter_context(connection_in_environment(override))  # the hook resolves it
        args = self.application_arguments(context, epoch_id)
        ships_zip = not master.startswith("local") and self.spec.spark.package == "zip"
        credentials = shippable(credential_files(env)) if deploy_mode == "cluster" else []
        env = shipped_environment(env, credentials)  # the driver's names of the shipped files
        submission = write_submission(
            args=args,
            conf=conf,
            py_files=self.py_files,
            package_zip=scope.enter_context(shipped_package()) if ships_zip else None,
            files=",".join(filter(None, [self.files, *files_entries(credentials)])) or None,
            env=env,
            env_file=scope.enter_context(private_environment_file(env)) if deploy_mode == "cluster" else None,
            deploy_mode=deploy_mode,
        )
        scope.enter_context(process_environment(submission.environment))
        return submission

    def on_kill(self) -> None:
        """Kill the running submission: its YARN application by its tag through the
        ResourceManager (even when spark-submit is gone), then through the hook that started
        it (spark-submit, and the driver or application the hook tracks), then by tag again
        (an application YARN accepted meanwhile). In session mode, the try's Spark Connect
        job by its tag. Nothing when this instance never submitted."""
        super().on_kill()  # the session-mode job's (EpochWriteOperator)
        if self.yarn_tracking is not None:
            self.yarn_tracking.kill()
        if self.submit_hook is not None:
            try:
                self.submit_hook.on_kill()
            except OSError as exc:  # its `yarn application -kill` needs a yarn CLI on PATH
                self.log.warning("spark-submit kill through the Spark provider's hook failed: %s", exc)
        if self.yarn_tracking is not None:
            self.yarn_tracking.kill()
