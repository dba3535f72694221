"""The one commit path: how an epoch becomes COMMITTED, and what a commit brings with it.

Every way an epoch is committed (the commit task, recovery, a backfill run's release,
``eo-ledger commit``) runs :func:`settle`, through
:class:`~airflow_provider_eo.ledger.protocol.epoch_protocol.EpochProtocol`. Per epoch, in
this order (the protocol's invariant: the group learns offsets only for data already in
HBase, and the ledger says COMMITTED only after the group has them):

1. a WRITTEN stream epoch's range ends are published to the pipeline's consumer group
   (a backfill epoch publishes nothing);
2. the ledger marks it COMMITTED (``store/commit_statements.py``: the stream cursors, the
   replayed dead letters and the dead letters' publish order move in that transaction);
3. its lag sample is stored, from one high-watermarks read (an observation: never raises).

Then, once per call, the pipeline's committed dead letters go to its dead-letter topic,
exactly once (``dead_letter_publication.py``), after a no-op commit too: a retried commit
finishes an interrupted publication. A crash between any two of these leaves a state
recovery resolves: WRITTEN is committed again, a publication resumes from its marker.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence

from airflow_provider_eo import protocol_points
from airflow_provider_eo.config.specs import PipelineSpec
from airflow_provider_eo.ledger.model.epoch import Epoch, offsets_text
from airflow_provider_eo.ledger.model.lag import commit_sample, store_sample
from airflow_provider_eo.ledger.model.ledger_roles import ProtocolStore
from airflow_provider_eo.ledger.model.offsets import KafkaOffsets, TopicPartition
from airflow_provider_eo.ledger.model.states import EpochKind, EpochState, check_transition
from airflow_provider_eo.ledger.planning.recovery_plan import Action, Step
from airflow_provider_eo.ledger.protocol.dead_letter_publication import (
    DeadLetterPublication,
    DeadLetterTopicPort,
    publish_dead_letters,
)
from airflow_provider_eo.ledger.protocol.outcomes import Committed

log = logging.getLogger(__name__)

#: Makes a pipeline's dead-letter topic (``hooks.kafka.EoKafkaHook.dead_letter_topic``).
DeadLetterTopics = Callable[[PipelineSpec], DeadLetterTopicPort]


class CommitPath:
    """Commits and aborts over ``ledger``, publishing through ``kafka`` (a zero-argument
    factory, called only when a stream epoch has offsets to publish or a commit's lag is
    read) and ``dead_letter_topics`` (called only for a pipeline with a dead-letter topic)."""

    def __init__(
        self,
        ledger: ProtocolStore,
        kafka: Callable[[], KafkaOffsets],
        dead_letter_topics: DeadLetterTopics | None,
    ) -> None:
        self._ledger = ledger
        self._kafka = kafka
        self._dead_letter_topics = dead_letter_topics

    def settle(
        self, spec: PipelineSpec, steps: Sequence[Step]
    ) -> tuple[list[Committed], DeadLetterPublication]:
        """Carry ``steps`` out in order (COMMIT: :meth:`commit_one`; ABORT: abort; KEEP:
        nothing), then publish ``spec``'s dead letters. Returns the commits, in step order,
        and the publication.

        A failure stops it with the earlier steps done (every step is idempotent: settling
        again finishes it). Raises what a step raises (``IllegalTransition``, Kafka errors)
        and, after every step succeeded, what the publication raises (``EoKafkaError``,
        ``DeadLetterTopicMissing``): the commits stand, the next commit publishes."""
        committed = []
        for step in steps:
            if step.action is Action.COMMIT:
                committed.append(self.commit_one(spec, step.epoch, step.reason))
            elif step.action is Action.ABORT:
                self._ledger.abort(step.epoch.epoch_id, step.reason)
        return committed, self.publish_dead_letters(spec)

    def commit_one(self, spec: PipelineSpec, epoch: Epoch, reason: str | None) -> Committed:
        """Commit ``epoch`` (as read just before) of ``spec``: publish, mark, sample.

        COMMITTED already: a no-op success (``already_committed``). RESERVED or ABORTED:
        ``IllegalTransition`` before anything is published."""
        began = time.monotonic()
        if epoch.state is EpochState.COMMITTED:
            log.info("epoch already COMMITTED, nothing to do %s", describe(epoch))
            return Committed(epoch, {}, None, already_committed=True)
        check_transition(epoch.epoch_id, epoch.state, EpochState.COMMITTED)
        offsets = epoch.end_offsets if epoch.kind is EpochKind.STREAM else {}
        protocol_points.passed("commit.before_publish")
        group = None
        if offsets:
            group = spec.group_id
            self._kafka().commit_offsets(group, offsets)
            protocol_points.passed("commit.after_publish")
            log.info(
                "published offsets %s group=%s offsets=%s", describe(epoch), group, offsets_text(offsets)
            )
        marked = self._ledger.mark_committed(epoch.epoch_id, reason, step_seconds=time.monotonic() - began)
        highs = self._sample_lag(marked)
        return Committed(marked, offsets, group, already_committed=False, high_watermarks=highs)

    def publish_dead_letters(self, spec: PipelineSpec) -> DeadLetterPublication:
        """Publish ``spec``'s committed dead letters its dead-letter topic lacks, exactly once.

        No ``dead_letters.topic``: nothing is done (``published`` 0, ``topic`` None). Raises
        ``DeadLetterTopicMissing`` / ``EoKafkaError`` naming pipeline and topic (what was
        published before the failure stays published, once), ``RuntimeError`` without
        ``dead_letter_topics``."""
        if spec.dead_letters is None:
            return DeadLetterPublication(spec.name, None, 0, 0, 0)
        if self._dead_letter_topics is None:
            raise RuntimeError("this EpochProtocol was created without dead-letter topics")
        topic = self._dead_letter_topics(spec)
        return publish_dead_letters(self._ledger, spec.name, spec.dead_letters.topic, topic)

    def _sample_lag(self, epoch: Epoch) -> Mapping[TopicPartition, int]:
        """The high watermarks of a just committed stream epoch's partitions, stored as its
        lag sample ({} for other kinds). Never raises: the epoch is committed whatever
        happens here; a failure is a warning and leaves the sample (or the lag) out."""
        if epoch.kind is not EpochKind.STREAM or not epoch.ranges:
            return {}
        where = f"epoch_id={epoch.epoch_id} ranges={epoch.ranges_brief}"
        try:
            marks = self._kafka().watermarks([r.tp for r in epoch.ranges])
        except Exception as exc:
            log.warning(
                "no lag after commit pipeline=%s %s: %s: %s", epoch.pipeline, where, type(exc).__name__, exc
            )
            return {}
        highs = {tp: high for tp, (_, high) in marks.items()}
        store_sample(self._ledger, commit_sample(epoch, highs), where)
        return highs


def describe(epoch: Epoch) -> str:
    """``pipeline=… epoch_id=… kind=… ranges=… records=…``: how log lines name an epoch."""
    return (
        f"pipeline={epoch.pipeline} epoch_id={epoch.epoch_id} kind={epoch.kind.value} "
        f"ranges={epoch.ranges_brief} records={epoch.record_count}"
    )
