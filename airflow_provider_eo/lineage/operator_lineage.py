"""What the write and commit tasks report to OpenLineage, and the epoch they report.

The operators' ``get_openlineage_facets_on_complete`` return :func:`epoch_lineage` of the
epoch they handled: the Kafka topics it read as inputs, the pipeline's HBase table as the
output (names: :mod:`airflow_provider_eo.lineage.dataset_names`) and the ``eo_epoch`` run
facet (:mod:`airflow_provider_eo.lineage.epoch_facet`). No epoch (the task reserved or wrote
nothing, or failed before its write): empty lineage, no datasets and no facet.

The OpenLineage listener runs the extraction after the task reported its success, when
the next task may already be running; so the write task reads its epoch right after its
Spark application ended (:func:`epoch_after_write`), and the facet shows the epoch as the
write left it (WRITTEN), never as a commit that raced the extraction did. OpenLineage is
imported only inside :func:`epoch_lineage`, which only the listener calls.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from airflow_provider_eo.config import PipelineSpec
from airflow_provider_eo.hooks.base import EoHook
from airflow_provider_eo.hooks.ledger import EoLedgerHook
from airflow_provider_eo.ledger.model.epoch import Epoch
from airflow_provider_eo.lineage.dataset_names import table_dataset, topic_datasets

if TYPE_CHECKING:
    from airflow.providers.openlineage.extractors import OperatorLineage

log = logging.getLogger(__name__)


def lineage_enabled() -> bool:
    """True when ``apache-airflow-providers-openlineage`` is installed and configured (its
    listener then extracts lineage from every task)."""
    try:
        from airflow.providers.openlineage import conf
    except ImportError:
        return False
    return not conf.is_disabled()


def epoch_after_write(ledger_conn_id: str, epoch_id: int) -> Epoch | None:
    """The epoch as the ledger holds it right after its write, for lineage; None when
    OpenLineage is not enabled (nothing is read) or the read failed (logged: lineage never
    fails a task whose write succeeded)."""
    if not lineage_enabled():
        return None
    try:
        with EoLedgerHook(ledger_conn_id).get_ledger() as ledger:
            return ledger.get_epoch(epoch_id)
    except Exception as exc:  # lineage is best effort, as the OpenLineage listener's own steps
        log.warning("lineage: epoch_id=%s not read after its write, no lineage for it: %s", epoch_id, exc)
        return None


def epoch_lineage(
    epoch: Epoch | None, spec: PipelineSpec, *, kafka_conn_id: str, hbase_conn_id: str
) -> OperatorLineage:
    """The OpenLineage of a task that handled ``epoch`` of ``spec``'s pipeline: inputs, the
    topics of its non-empty ranges on ``kafka_conn_id``; output, the table on ``hbase_conn_id``;
    run facet ``eo_epoch``. ``epoch`` None: empty lineage.

    Raises ``ImportError`` without the OpenLineage provider, and what resolving a connection
    raises (the listener logs it and emits the event without lineage)."""
    from airflow.providers.openlineage.extractors import OperatorLineage
    from openlineage.client.event_v2 import InputDataset, OutputDataset

    from airflow_provider_eo.lineage.epoch_facet import FACET_NAME, epoch_facet

    if epoch is None:
        return OperatorLineage()
    topics = [r.topic for r in epoch.ranges if r.end > r.start]
    inputs = topic_datasets(EoHook.eo_connection(kafka_conn_id), topics)
    table = table_dataset(EoHook.eo_connection(hbase_conn_id), spec.hbase_table)
    return OperatorLineage(
        inputs=[InputDataset(namespace=d.namespace, name=d.name) for d in inputs],
        outputs=[OutputDataset(namespace=table.namespace, name=table.name)],
        run_facets={FACET_NAME: epoch_facet(epoch)},
    )
