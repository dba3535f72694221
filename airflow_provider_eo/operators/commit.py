"""CommitEpochOperator: publish a WRITTEN epoch's offsets to the group, then mark it COMMITTED."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow.sdk import Context

from airflow_provider_eo.operators.pipeline_operator import PipelineOperator
from airflow_provider_eo.operators.xcom import commit_summary


class CommitEpochOperator(PipelineOperator):
    """Step 3 of docs/DESIGN.md section 2 for one epoch (:meth:`EpochProtocol.commit`).

    WRITTEN: a stream epoch publishes the end offset of every range to the pipeline's
    consumer group, then the ledger marks it COMMITTED; a backfill epoch publishes
    nothing. COMMITTED: no-op success. RESERVED or ABORTED: ``IllegalTransition``
    naming epoch and state; nothing is published. An epoch of another pipeline:
    ``EpochOfAnotherPipeline``.

    Returns (XCom) ``{epoch_id, pipeline, kind, state: "COMMITTED", action: "committed" |
    "noop", published: [{topic, partition, offset}], records_total}``.

    :param epoch_id: epoch to commit, int or template such as
        ``"{{ ti.xcom_pull(task_ids='reserve')['epoch_id'] }}"`` (templated).
    Other parameters: :class:`PipelineOperator` (offsets go through ``kafka_conn_id``).
    """

    template_fields: Sequence[str] = ("pipeline", "epoch_id", "pipelines_file")
    ui_color = "#e6f4ea"

    def __init__(self, *, epoch_id: int | str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.epoch_id = epoch_id

    def execute(self, context: Context) -> dict[str, Any]:
        try:
            epoch_id = int(str(self.epoch_id).strip())
        except ValueError:
            raise ValueError(f"epoch_id must be an integer, got {self.epoch_id!r}") from None
        spec = self.pipeline_spec()
        with self.epoch_protocol() as protocol:
            outcome = protocol.commit(epoch_id, group_id=spec.group_id, pipeline=spec.name)
        return commit_summary(outcome)
