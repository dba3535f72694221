"""The spec an epoch was written under, as far as the audit can know it.

``spec_for_epoch`` is the one place the audit asks for it: the spec the ledger recorded under
the epoch's mapping digest (``eo.pipeline_specs``), else -- an epoch reserved before the ledger
recorded digests -- the pipelines YAML's current spec (audited against today's mapping,
``batch_size``, ``batch_bytes`` and ``spark.split_size``: docs/audit.md says so).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from airflow_provider_eo.config.specs import PipelineSpec
from airflow_provider_eo.ledger.model.epoch import Epoch


def spec_for_epoch(
    epoch: Epoch,
    pipelines: Mapping[str, PipelineSpec],
    recorded: Callable[[str], dict[str, Any] | None] = lambda digest: None,
) -> PipelineSpec:
    """The spec ``epoch`` was reserved with (``recorded(digest)``: the ledger's
    ``pipeline_spec``), else its pipeline's current one; ``KeyError`` when neither exists."""
    if epoch.spec_digest is not None:
        stored = recorded(epoch.spec_digest)
        if stored is not None:
            return PipelineSpec.from_dict(stored)
    return pipelines[epoch.pipeline]
