"""CommitEpochOperator: publish a WRITTEN epoch's offsets to the group, then mark it COMMITTED."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow.sdk import Asset, Context

from airflow_provider_eo.clients.connections import DEFAULT_HBASE_CONN_ID
from airflow_provider_eo.ledger.model.epoch import Epoch
from airflow_provider_eo.lineage.operator_lineage import epoch_lineage
from airflow_provider_eo.observability.epoch_metrics import report_committed
from airflow_provider_eo.operators.announce import announce_commit
from airflow_provider_eo.operators.epoch_link import EpochPageLink
from airflow_provider_eo.operators.pipeline_operator import PipelineOperator
from airflow_provider_eo.operators.xcom import commit_summary


class CommitEpochOperator(PipelineOperator):
    """Step 3 of docs/DESIGN.md section 2 for one epoch (:meth:`EpochProtocol.commit`).

    WRITTEN: a stream epoch publishes the end offset of every range to the pipeline's
    consumer group, then the ledger marks it COMMITTED; a backfill epoch publishes
    nothing. COMMITTED: no-op success. RESERVED or ABORTED: ``IllegalTransition``
    naming epoch and state; nothing is published. An epoch of another pipeline:
    ``EpochOfAnotherPipeline``.

    Returns (XCom) the epoch's summary (``Epoch.to_summary``, ``state: "COMMITTED"``) plus
    ``action: "committed" | "noop"``, ``published: [{topic, partition, offset}]`` and
    ``dead_letters``: what the commit's publication to the pipeline's dead-letter topic did
    (``operators/xcom.py``, ``commit_summary``; the protocol publishes after every commit,
    a no-op one too, and raises ``EoKafkaError`` after the commit if the topic is
    unreachable or missing: the retry publishes what is left, once).

    Announces the epoch on ``table_asset`` (when given; it is added to the task's
    outlets): the Asset event Airflow records when this task succeeds carries the epoch
    summary (``airflow_provider_eo.assets.epoch_event_extra``) as its extra, on a no-op
    re-commit too, so no committed epoch goes unannounced (see ``operators/announce.py``).
    An epoch this call committed also sends its metrics (``observability/epoch_metrics.py``:
    counts, duration, per-partition lag from the watermarks the commit read for its lag
    sample); a no-op sends none.

    :param epoch_id: epoch to commit, int or template such as
        ``"{{ ti.xcom_pull(task_ids='reserve')['epoch_id'] }}"`` (templated).
    :param table_asset: the pipeline table's Asset (``airflow_provider_eo.assets.asset_for``),
        known at parse time; None: no Asset event.
    :param hbase_conn_id: the HBase connection the pipeline writes through; only OpenLineage
        reads it, to name the table (``get_openlineage_facets_on_complete``, docs/lineage.md).
    Other parameters: :class:`PipelineOperator` (offsets go through ``kafka_conn_id``).
    """

    template_fields: Sequence[str] = ("pipeline", "epoch_id", "pipelines_file")
    ui_color = "#e6f4ea"
    operator_extra_links = (EpochPageLink(),)  # "Epoch": the epoch's page (operators/epoch_link.py)

    def __init__(
        self,
        *,
        epoch_id: int | str,
        table_asset: Asset | None = None,
        hbase_conn_id: str = DEFAULT_HBASE_CONN_ID,
        **kwargs: Any,
    ) -> None:
        if table_asset is not None:
            kwargs["outlets"] = [*(kwargs.get("outlets") or []), table_asset]
        super().__init__(**kwargs)
        self.epoch_id = epoch_id
        self.table_asset = table_asset
        self.hbase_conn_id = hbase_conn_id
        self.lineage_epoch: Epoch | None = None  # what get_openlineage_facets_on_complete reports

    def execute(self, context: Context) -> dict[str, Any]:
        try:
            epoch_id = int(str(self.epoch_id).strip())
        except ValueError:
            raise ValueError(f"epoch_id must be an integer, got {self.epoch_id!r}") from None
        spec = self.pipeline_spec()
        self.check_kafka_client()  # a client this librdkafka cannot build: refused, epoch unchanged
        with self.epoch_protocol(context) as protocol:
            outcome = protocol.commit(epoch_id, pipeline=spec)
        self.lineage_epoch = outcome.epoch
        report_committed(outcome)
        if self.table_asset is not None:
            announce_commit(context, self.table_asset, outcome.epoch)
        return commit_summary(outcome)

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """OpenLineage (``apache-airflow-providers-openlineage``): the topics the epoch read, the
        table it wrote and its ``eo_epoch`` facet, COMMITTED (docs/lineage.md)."""
        return epoch_lineage(
            self.lineage_epoch,
            self.pipeline_spec(),
            kafka_conn_id=self.kafka_conn_id,
            hbase_conn_id=self.hbase_conn_id,
        )
