"""The ``eo_epoch`` run facet: the epoch a write or commit task handled, as OpenLineage carries it.

A custom run facet the OpenLineage way: an attrs subclass of the client's ``RunFacet``,
with a ``_schemaURL`` naming its JSON schema, which ships beside this module
(``EoEpochRunFacet.json``, whose ``$id`` is :data:`SCHEMA_ID`; the provider publishes no web
copy of it). Imports the OpenLineage client: import this module only where OpenLineage is
installed (the listener's extraction, the tests).

Bounded: a facet lists at most :data:`MAX_FACET_RANGES` ranges (the non-empty ones, in the
ledger's topic and partition order) and counts the rest in ``rangesOmitted``; the totals
always cover every range. An epoch of a 10,000-partition pipeline stays an event of a few
tens of kilobytes, within what HTTP and Kafka transports take.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attr
from openlineage.client.facet_v2 import RunFacet

from airflow_provider_eo.ledger.model.epoch import Epoch

#: The key of the facet in a run's facets.
FACET_NAME = "eo_epoch"
#: The ``$id`` of the facet's JSON schema (``EoEpochRunFacet.json`` beside this module).
SCHEMA_ID = "urn:airflow-provider-eo:openlineage:EoEpochRunFacet:1-0-0"
SCHEMA_FILE = "EoEpochRunFacet.json"
#: Ranges a facet lists at most; the rest are counted in ``rangesOmitted``.
MAX_FACET_RANGES = 1000


@attr.define
class EoEpochRunFacet(RunFacet):
    """One epoch: ``ranges`` ``[{topic, partition, start, end, records}]`` (``[start, end)``,
    ``records`` = offsets in it), the non-empty ones up to :data:`MAX_FACET_RANGES`;
    ``recordsTotal`` the offsets of all ranges; ``records``, ``badRecords``,
    ``skippedOffsets`` the write step's counts from its vote (absent before it). Fields are
    camelCase, as OpenLineage's own facets."""

    pipeline: str
    epochId: int
    kind: str
    state: str
    ranges: list[dict[str, Any]]
    rangesOmitted: int
    recordsTotal: int
    records: int | None = None
    badRecords: int | None = None
    skippedOffsets: int | None = None

    _additional_skip_redact: ClassVar[list[str]] = ["epochId", "kind", "state", "rangesOmitted"]

    @staticmethod
    def _get_schema() -> str:
        return f"{SCHEMA_ID}#/$defs/EoEpochRunFacet"


def epoch_facet(epoch: Epoch) -> EoEpochRunFacet:
    """The facet of ``epoch`` as the ledger holds it (state, ranges, the vote's metrics)."""
    filled = [r for r in epoch.ranges if r.end > r.start]
    metrics = epoch.metrics or {}

    def count(key: str) -> int | None:
        return int(metrics[key]) if key in metrics else None

    return EoEpochRunFacet(
        pipeline=epoch.pipeline,
        epochId=epoch.epoch_id,
        kind=epoch.kind.value,
        state=epoch.state.value,
        ranges=[r.to_summary() for r in filled[:MAX_FACET_RANGES]],
        rangesOmitted=max(0, len(filled) - MAX_FACET_RANGES),
        recordsTotal=epoch.record_count,
        records=count("records"),
        badRecords=count("bad_records"),
        skippedOffsets=count("skipped_offsets"),
    )
