"""What operators on call ask of the protocol, beside an epoch's life: move cursors (seek,
reset), replay dead letters, publish dead letters to their topic.

:class:`OperatorActions` is a base of
:class:`~airflow_provider_eo.ledger.protocol.epoch_protocol.EpochProtocol`
(callers see one protocol object); each method only hands over to the module that owns the
decision: ``seek`` / ``seek_plan``, ``replay`` / ``replay_plan``, ``dead_letter_publication``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from airflow_provider_eo.config.specs import PipelineSpec
from airflow_provider_eo.ledger.model.offsets import KafkaOffsets, TopicPartition
from airflow_provider_eo.ledger.planning.replay_plan import ReplayFilter, ReplayPlan
from airflow_provider_eo.ledger.planning.seek_plan import SeekTarget
from airflow_provider_eo.ledger.protocol.cursor_seek import SeekOutcome
from airflow_provider_eo.ledger.protocol.cursor_seek import reset_to_group as reset_cursors_to_group
from airflow_provider_eo.ledger.protocol.cursor_seek import seek as seek_cursors
from airflow_provider_eo.ledger.protocol.dead_letter_publication import (
    DeadLetterPublication,
    DeadLetterTopicPort,
    publish_dead_letters,
)
from airflow_provider_eo.ledger.protocol.replay_reads import replay_plan, replay_selection
from airflow_provider_eo.ledger.store.ledger import Ledger

#: Makes a pipeline's dead-letter topic (``hooks.dead_letter_topic.dead_letter_topics``).
DeadLetterTopics = Callable[[PipelineSpec], DeadLetterTopicPort]


class OperatorActions:
    """Seek, reset, replay and dead-letter publication over :attr:`ledger` and :attr:`kafka`
    (both provided by :class:`~airflow_provider_eo.ledger.protocol.epoch_protocol.EpochProtocol`)."""

    ledger: Ledger
    _dead_letter_topics: DeadLetterTopics | None

    @property
    def kafka(self) -> KafkaOffsets:
        """The broker's offsets (``EpochProtocol`` provides them)."""
        raise NotImplementedError

    # -- moving cursors ---------------------------------------------------------------
    def seek(
        self,
        pipeline: str,
        target: SeekTarget,
        *,
        group_id: str,
        reason: str,
        partitions: Sequence[TopicPartition] = (),
    ) -> SeekOutcome:
        """Move ``pipeline``'s stream cursors (of ``partitions``; all pinned when empty) to
        ``target``, then publish them to ``group_id`` (ledger/protocol/cursor_seek.py). Raises
        ``SeekRefused`` (nothing changed) on an unknown pipeline, an open epoch, a partition
        not pinned or a target outside the watermarks."""
        return seek_cursors(self.ledger, self.kafka, pipeline, group_id, target, partitions, reason)

    def reset_to_group(
        self, pipeline: str, *, group_id: str, reason: str, partitions: Sequence[TopicPartition] = ()
    ) -> SeekOutcome:
        """Move ``pipeline``'s stream cursors to ``group_id``'s committed offsets (partitions
        without one are left alone); refuses like :meth:`seek`."""
        return reset_cursors_to_group(self.ledger, self.kafka, pipeline, group_id, partitions, reason)

    # -- dead letters -----------------------------------------------------------------
    def plan_replay(self, spec: PipelineSpec, wanted: ReplayFilter) -> ReplayPlan:
        """What replaying the dead letters ``wanted`` selects (``ReplayPlan``: chunks,
        selected offsets, matches already resolved and by whom). Reads the ledger only;
        a backfill run over the same filter plans the same chunks."""
        return replay_plan(self.ledger, spec, wanted)

    def replay_selection(self, epoch_id: int) -> dict[TopicPartition, tuple[int, ...]] | None:
        """The offsets a replay epoch writes per partition (None: a plain epoch, all of
        its ranges). Read by the Spark driver, once per epoch."""
        return replay_selection(self.ledger, epoch_id)

    def publish_dead_letters(self, spec: PipelineSpec) -> DeadLetterPublication:
        """Publish ``spec``'s committed dead letters its dead-letter topic lacks, exactly once
        (:func:`~airflow_provider_eo.ledger.protocol.dead_letter_publication.publish_dead_letters`).

        No ``dead_letters.topic``: nothing is done (``published`` 0, ``topic`` None).
        Raises ``DeadLetterTopicMissing`` / ``EoKafkaError`` naming pipeline and topic
        (what was published before the failure stays published, once), ``RuntimeError``
        when this protocol was created without ``dead_letter_topics``.
        """
        if spec.dead_letters is None:
            return DeadLetterPublication(spec.name, None, 0, 0, 0)
        if self._dead_letter_topics is None:
            raise RuntimeError("this EpochProtocol was created without dead-letter topics")
        topic = self._dead_letter_topics(spec)
        return publish_dead_letters(self.ledger, spec.name, spec.dead_letters.topic, topic)
