"""airflow-provider-eo: exactly-once Kafka -> HBase epochs coordinated by Airflow 3."""

from __future__ import annotations

__version__ = "0.1.0"
