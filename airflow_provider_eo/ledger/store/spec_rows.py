"""SQL of the spec history (``eo.pipeline_specs``): record a reservation's spec, read one back.

Contract: :func:`record_spec` inserts a digest's spec once (a later spec with the same digest
keeps the first row); :func:`fetch_spec` returns a digest's stored ``PipelineSpec.to_dict()``
view, or None. Both run in the caller's transaction.
"""

from __future__ import annotations

import json
from typing import Any


def record_spec(cur: Any, pipeline: str, digest: str, spec: dict[str, Any]) -> None:
    """Record ``spec`` (``PipelineSpec.to_dict()``) under ``digest``, once per digest."""
    cur.execute(
        "INSERT INTO eo.pipeline_specs (digest, pipeline, spec) VALUES (%s, %s, %s)"
        " ON CONFLICT (digest) DO NOTHING",
        (digest, pipeline, json.dumps(spec, sort_keys=True)),
    )


def fetch_spec(cur: Any, digest: str) -> dict[str, Any] | None:
    """The spec stored under ``digest`` (``PipelineSpec.to_dict()``'s view), or None."""
    cur.execute("SELECT spec FROM eo.pipeline_specs WHERE digest = %s", (digest,))
    row = cur.fetchone()
    return None if row is None else dict(row[0])
