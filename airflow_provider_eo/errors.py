"""The provider's error taxonomy: one root, a few categories by meaning.

Every error this package raises on purpose is an :class:`EoError`; the same condition
raises the same class on every path (operators, ``eo-ledger``, the Spark driver and its
executors). Classes keep the builtin base they always had (``ValueError``,
``LookupError``, ``RuntimeError``) so ``except ValueError`` callers keep working.
Indentation in the table means "subclass of the row above"; the module is named by its
file (docs/ARCHITECTURE.md gives its folder).

================================  =========================  =================================================
Class                             Module (file)              Meaning
================================  =========================  =================================================
``EoError``                       ``errors``                 root: any error raised on purpose
``ConfigError``                   ``errors``                 invalid configuration; nothing read or written
  ``PipelineConfigError``         ``config_errors``          pipelines file missing, unreadable or invalid
    ``PipelineNotDeclared``       ``config_errors``          no pipeline of that name in the file
  ``ConnectionNotFound``          ``connections``            no definition for a connection id
  ``KafkaFeatureMissing``         ``kafka_client_features``  librdkafka lacks a feature the connection needs
``LedgerError``                   ``refusals``               the ledger refused a change or is unreachable
  ``EpochNotFound`` ...           ``refusals``               one class per refusal (``FencedOut``, ...)
``KafkaAccessError``              ``errors``                 a Kafka call or read did not complete
  ``EoKafkaError``                ``kafka_errors``           metadata, watermark or group-offset call
  ``RangeReadError``              ``range_errors``           a task range could not be read to its end
``RegistryAccessError``           ``errors``                 a Schema Registry call did not complete
  ``RegistryUnavailable``         ``registry_errors``        unreachable, or an answer 5xx/408/429 (retry)
  ``RegistryRefused``             ``registry_errors``        any other refusal (401, 403, ...)
``ClusterAccessError``            ``errors``                 a YARN ResourceManager call did not complete
  ``ResourceManagerUnavailable``  ``yarn_resource_manager``  unreachable, or an answer 5xx (retry)
  ``ResourceManagerRefused``      ``yarn_resource_manager``  any other refusal (401, 403, 404, ...)
``HBaseWriteError``               ``hbase_writer``           a segment could not be written to HBase
  ``UnsafeColumnFamilyError``     ``hbase_writer``           the family is missing or would lose cells
  ``UnwritableTableError``        ``hbase_writer``           table disabled, missing, or its namespace missing
``RecordError``                   ``errors``                 a record cannot be written as declared
  ``BadRecord``                   ``errors``                 undecodable or unmappable record (policy decides)
  ``BadRecordError``              ``bad_records``            a bad record under ``bad_records: fail``
``TaskError``                     ``errors``                 the write step's Spark tasks did not complete
  ``ExecutorTaskError``           ``task_errors``            raised on an executor: its cause as data
  ``TaskFailed``                  ``task_runner``            driver side: a task failed (the decoded cause)
  ``CoverageError``               ``task_plan``              task results do not cover the epoch exactly
  ``YarnApplicationFailed``       ``yarn_tracking``          the write's YARN application ended unsucceeded
================================  =========================  =================================================

An executor's ``EoError`` reaches the driver as data (``spark/task/task_errors.py``), never as a
class name parsed out of Spark's text. This module imports nothing: executors use it.
"""

from __future__ import annotations


class EoError(Exception):
    """Root of every error the provider raises on purpose."""


class ConfigError(EoError):
    """The configuration (pipelines file, pipeline name, connection) is invalid or missing.

    Raised before anything is read or written; fixing the configuration is the remedy.
    """


class KafkaAccessError(EoError):
    """A Kafka call or read did not complete; the message names topic/partition or group."""


class RegistryAccessError(EoError):
    """A Schema Registry call did not complete; the message names the registry call.

    Never a bad record: the task fails (nothing is dead-lettered, nothing skipped) and
    Airflow retries it, like a Kafka or HBase outage.
    """


class ClusterAccessError(EoError):
    """A call to the Spark cluster's manager (YARN's ResourceManager REST API) did not
    complete; the message names the connection, the address and the call.

    Never the epoch's fault: the write step fails before or while it tracks the
    application, and Airflow retries it, like a Kafka or HBase outage.
    """


class RecordError(EoError):
    """A Kafka record cannot be written as the pipeline declares; the message says why."""


class TaskError(EoError):
    """The write step's Spark tasks did not complete (the epoch is not voted)."""


class BadRecord(RecordError):
    """One record that cannot be decoded or mapped; ``reason`` says why (the bad-record
    policy decides: a dead letter, or the task fails). Also importable from
    ``airflow_provider_eo.spark.task.mapping``."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def error_text(exc: BaseException) -> str:
    """``Type: message`` of an error (``Type`` alone when it has no message); Thrift errors
    whose message is bytes (their ``str()`` fails) are decoded."""
    try:
        message = str(exc)
    except Exception:
        raw = getattr(exc, "message", b"")
        message = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else repr(raw)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__
