"""The spec an epoch was written under, as far as the audit can know it.

``spec_for_epoch`` is the one place the audit asks for it: today the pipelines YAML's
current spec (an epoch written under an older mapping, ``batch_size``, ``batch_bytes`` or
``spark.split_size`` is then audited against today's: docs/audit.md says so).
"""

from __future__ import annotations

from collections.abc import Mapping

from airflow_provider_eo.config.specs import PipelineSpec
from airflow_provider_eo.ledger.model.epoch import Epoch


def spec_for_epoch(epoch: Epoch, pipelines: Mapping[str, PipelineSpec]) -> PipelineSpec:
    """The spec of ``epoch``'s pipeline; ``KeyError`` when the YAML no longer declares it.

    TODO(digest): once every epoch records its spec digest and the spec history table
    holds the spec of each digest, return the spec recorded for the epoch instead of the
    current one (only this function changes).
    """
    return pipelines[epoch.pipeline]
