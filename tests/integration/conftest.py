"""Fixtures shared by the ledger test modules: a fresh ledger database, the Kafka hook."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.ledger import Ledger
from tests.conftest import StackInfo
from tests.integration.ledger_support import fresh_database, stack_kafka_hook


@pytest.fixture(scope="module")
def ledger_dsn(stack: StackInfo) -> Iterator[str]:
    """A fresh ledger database per test module (dropped afterwards)."""
    with fresh_database(stack.ledger_dsn) as dsn:
        yield dsn


@pytest.fixture
def ledger(ledger_dsn: str) -> Iterator[Ledger]:
    """A ledger session on the module's database."""
    with Ledger(ledger_dsn) as instance:
        yield instance


@pytest.fixture(scope="module")
def hook(stack: StackInfo) -> EoKafkaHook:
    """The real ``EoKafkaHook`` on the stack's broker (the ledger's offset source and publisher)."""
    return stack_kafka_hook(stack)
