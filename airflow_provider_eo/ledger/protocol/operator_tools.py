"""What an operator on call does by hand, beside an epoch's life: commit or abort one
epoch, move cursors (seek, reset), plan a replay of dead letters, publish dead letters.

:class:`OperatorTools` is a facade over :class:`~.epoch_protocol.EpochProtocol` (a manual
commit is the protocol's one commit path) and the modules that own the other decisions:
``cursor_seek`` / ``planning/seek_plan``, ``replay_reads`` / ``planning/replay_plan``.
The ``eo-ledger`` commands are its adapters.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from airflow_provider_eo.config.specs import PipelineSpec
from airflow_provider_eo.ledger.model.epoch import Epoch
from airflow_provider_eo.ledger.model.ledger_roles import ProtocolStore
from airflow_provider_eo.ledger.model.offsets import KafkaOffsets, KafkaOnFirstUse, TopicPartition
from airflow_provider_eo.ledger.planning.replay_plan import ReplayFilter, ReplayPlan
from airflow_provider_eo.ledger.planning.seek_plan import SeekTarget
from airflow_provider_eo.ledger.protocol.commit_path import DeadLetterTopics
from airflow_provider_eo.ledger.protocol.cursor_seek import SeekOutcome
from airflow_provider_eo.ledger.protocol.cursor_seek import reset_to_group as reset_cursors_to_group
from airflow_provider_eo.ledger.protocol.cursor_seek import seek as seek_cursors
from airflow_provider_eo.ledger.protocol.dead_letter_publication import DeadLetterPublication
from airflow_provider_eo.ledger.protocol.epoch_protocol import EpochProtocol, PipelineLookup
from airflow_provider_eo.ledger.protocol.outcomes import Committed
from airflow_provider_eo.ledger.protocol.replay_reads import replay_plan

#: The history's reason of an epoch committed by hand (``eo-ledger commit``).
MANUAL_COMMIT_REASON = "committed by operator (eo-ledger)"


class OperatorTools:
    """An operator's acts over ``ledger``; ``kafka`` (a zero-argument factory, called at
    most once, only by an act that needs the broker) and ``dead_letter_topics`` as
    :class:`~.epoch_protocol.EpochProtocol` takes them."""

    def __init__(
        self,
        ledger: ProtocolStore,
        kafka: Callable[[], KafkaOffsets] | None = None,
        dead_letter_topics: DeadLetterTopics | None = None,
    ) -> None:
        self._ledger = ledger
        self._kafka = KafkaOnFirstUse(kafka, "OperatorTools")
        self._protocol = EpochProtocol(ledger, self._kafka, dead_letter_topics)

    # -- one epoch ---------------------------------------------------------------------
    def commit(self, epoch_id: int, *, pipeline: PipelineSpec | PipelineLookup) -> Committed:
        """Commit ``epoch_id`` as the commit task does (:meth:`EpochProtocol.commit`, dead
        letters published), its history saying it was done by hand; raises as that does."""
        return self._protocol.commit(epoch_id, pipeline=pipeline, reason=MANUAL_COMMIT_REASON)

    def abort(self, epoch_id: int, reason: str, *, allow_written: bool = False) -> Epoch:
        """:meth:`EpochProtocol.abort`: RESERVED (WRITTEN with ``allow_written``) -> ABORTED."""
        return self._protocol.abort(epoch_id, reason, allow_written=allow_written)

    # -- moving cursors ----------------------------------------------------------------
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
        ``target``, then publish them to ``group_id`` (``cursor_seek.py``). Raises
        ``SeekRefused`` (nothing changed) on an unknown pipeline, an open epoch, a partition
        not pinned or a target outside the watermarks."""
        return seek_cursors(self._ledger, self._kafka(), pipeline, group_id, target, partitions, reason)

    def reset_to_group(
        self, pipeline: str, *, group_id: str, reason: str, partitions: Sequence[TopicPartition] = ()
    ) -> SeekOutcome:
        """Move ``pipeline``'s stream cursors to ``group_id``'s committed offsets (partitions
        without one are left alone); refuses like :meth:`seek`."""
        return reset_cursors_to_group(self._ledger, self._kafka(), pipeline, group_id, partitions, reason)

    # -- dead letters ------------------------------------------------------------------
    def plan_replay(self, spec: PipelineSpec, wanted: ReplayFilter) -> ReplayPlan:
        """What replaying the dead letters ``wanted`` selects (``ReplayPlan``: chunks,
        selected offsets, matches already resolved and by whom). Reads the ledger only;
        a backfill run over the same filter plans the same chunks."""
        return replay_plan(self._ledger, spec, wanted)

    def publish_dead_letters(self, spec: PipelineSpec) -> DeadLetterPublication:
        """:meth:`EpochProtocol.publish_dead_letters`."""
        return self._protocol.publish_dead_letters(spec)
