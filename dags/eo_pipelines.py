"""DAG template: every pipeline of pipelines.yaml (or $EO_PIPELINES_FILE) becomes its DAGs.

Drop this file and pipelines.yaml into the Airflow DAG folder. DAG ids:
``eo_stream__<pipeline>``, ``eo_backfill__<pipeline>``, ``eo_audit__<pipeline>`` and
``eo_recovery``.
"""

from __future__ import annotations

from pathlib import Path

from airflow_provider_eo.dags.factory import build_dags

globals().update(build_dags(default_dir=Path(__file__).parent))
