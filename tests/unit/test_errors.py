"""The error taxonomy: every provider error has the root, its category and its old builtin base."""

from __future__ import annotations

import pytest

from airflow_provider_eo.clients.connections import ConnectionNotFound
from airflow_provider_eo.config import PipelineConfigError, PipelineNotDeclared
from airflow_provider_eo.errors import (
    ConfigError,
    EoError,
    KafkaAccessError,
    RecordError,
    RegistryAccessError,
    TaskError,
)
from airflow_provider_eo.formats.registry.registry_errors import RegistryRefused, RegistryUnavailable
from airflow_provider_eo.hooks.kafka import EoKafkaError
from airflow_provider_eo.ledger.model import refusals as ledger_errors
from airflow_provider_eo.spark.driver.task_plan import CoverageError
from airflow_provider_eo.spark.driver.task_runner import TaskFailed
from airflow_provider_eo.spark.hbase_sink.hbase_writer import (
    HBaseWriteError,
    UnsafeColumnFamilyError,
    UnwritableTableError,
)
from airflow_provider_eo.spark.task.bad_records import BadRecordError
from airflow_provider_eo.spark.task.mapping import BadRecord
from airflow_provider_eo.spark.task.range_reader import RangeReadError
from airflow_provider_eo.spark.task.task_errors import ExecutorTaskError

LEDGER_ERRORS = [
    cls
    for cls in vars(ledger_errors).values()
    if isinstance(cls, type)
    and cls.__module__ == ledger_errors.__name__
    and cls is not ledger_errors.LedgerError
]


@pytest.mark.parametrize(
    ("error", "category", "builtin"),
    [
        (PipelineConfigError, ConfigError, ValueError),
        (PipelineNotDeclared, PipelineConfigError, LookupError),
        (ConnectionNotFound, ConfigError, LookupError),
        (EoKafkaError, KafkaAccessError, RuntimeError),
        (RangeReadError, KafkaAccessError, RuntimeError),
        (HBaseWriteError, EoError, RuntimeError),
        (UnsafeColumnFamilyError, HBaseWriteError, RuntimeError),
        (UnwritableTableError, HBaseWriteError, RuntimeError),
        (BadRecord, RecordError, Exception),
        (RegistryUnavailable, RegistryAccessError, ConnectionError),
        (RegistryRefused, RegistryAccessError, Exception),
        (BadRecordError, RecordError, RuntimeError),
        (ExecutorTaskError, TaskError, Exception),
        (TaskFailed, TaskError, RuntimeError),
        (CoverageError, TaskError, RuntimeError),
        *[(cls, ledger_errors.LedgerError, Exception) for cls in LEDGER_ERRORS],
        (ledger_errors.LedgerError, EoError, Exception),
    ],
)
def test_each_error_has_the_root_its_category_and_its_builtin_base(
    error: type[Exception], category: type[Exception], builtin: type[Exception]
) -> None:
    assert (issubclass(error, EoError), issubclass(error, category), issubclass(error, builtin)) == (
        True, True, True
    )  # fmt: skip


def test_categories_are_disjoint() -> None:
    categories = [
        ConfigError,
        ledger_errors.LedgerError,
        KafkaAccessError,
        HBaseWriteError,
        RegistryAccessError,
        RecordError,
        TaskError,
    ]
    assert [c for c in categories for d in categories if c is not d and issubclass(c, d)] == []
    assert [c.__bases__ for c in categories] == [
        (EoError,),
        (EoError,),
        (EoError,),
        (EoError, RuntimeError),
        (EoError,),
        (EoError,),
        (EoError,),
    ]


def test_epoch_of_another_pipeline_names_both_pipelines() -> None:
    error = ledger_errors.EpochOfAnotherPipeline(42, "orders", "users")
    assert str(error) == "epoch 42 belongs to pipeline 'orders', not 'users'"
    assert (error.epoch_id, error.pipeline, error.expected) == (42, "orders", "users")
