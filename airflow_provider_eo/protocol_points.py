"""Named points of the epoch protocol between two durable effects (placeholder, being reworked)."""

from __future__ import annotations

from airflow_provider_eo.faults import fault_point as passed

__all__ = ["passed"]
