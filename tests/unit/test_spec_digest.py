"""The mapping digest (config/spec_digest.py) and the fencing rule that uses it
(ledger/planning/fencing.py): what changes the digest, what does not, and the refusal."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from datetime import UTC, datetime

from airflow_provider_eo.config.loader import parse_pipelines_text
from airflow_provider_eo.config.spec_digest import mapping_view, spec_digest
from airflow_provider_eo.ledger.model.epoch import Epoch
from airflow_provider_eo.ledger.model.states import EpochKind, EpochState
from airflow_provider_eo.ledger.planning.fencing import Fenced, WriteLease, write_permission

YAML = """\
pipelines:
  # the orders pipeline
  - name: orders
    topics: [orders]
    hbase: {table: orders, column_family: d}
    mapping:
      value_format: json
      columns: {amount: amount, who: customer}
"""
REORDERED = """\
pipelines:
  - hbase: {column_family: d, table: orders}
    mapping:
      columns: {who: customer, amount: amount}
      value_format: json
    topics: [orders]
    name: orders
    schedule: "*/5 * * * *"
    caps: {max_records_per_partition: 1000}
"""


def _spec(text: str):  # type: ignore[no-untyped-def]
    return parse_pipelines_text(text, "p.yaml")["orders"]


def test_the_digest_is_sha256_of_the_canonical_mapping_view() -> None:
    spec = _spec(YAML)
    canonical = json.dumps(mapping_view(spec), sort_keys=True, separators=(",", ":"))
    assert spec_digest(spec) == hashlib.sha256(canonical.encode()).hexdigest()
    assert set(mapping_view(spec)) == {
        "name", "topics", "topic_pattern", "group_id", "hbase_table", "column_family",
        "hbase_keyvalue_maxsize", "mapping", "bad_records", "dead_letters", "batch_size",
        "batch_bytes", "split_size",
    }  # fmt: skip


def test_reordered_keys_comments_and_operational_settings_keep_the_digest() -> None:
    assert spec_digest(_spec(REORDERED)) == spec_digest(_spec(YAML))


def test_any_mapped_change_gives_another_digest() -> None:
    base = spec_digest(_spec(YAML))
    changed = [
        YAML.replace("who: customer", "who: client"),
        YAML.replace("column_family: d", "column_family: e"),
        YAML.replace("value_format: json", "value_format: json\n      row_key: '{id}:{who}'"),
    ]
    spec = _spec(YAML)
    digests = [spec_digest(_spec(text)) for text in changed]
    digests += [spec_digest(replace(spec, batch_size=10)), spec_digest(replace(spec, batch_bytes=1 << 20))]
    digests.append(spec_digest(replace(spec, spark=replace(spec.spark, split_size=7))))
    assert base not in digests and len(set(digests)) == len(digests)


def _epoch(digest: str | None) -> Epoch:
    return Epoch(
        42, "orders", EpochKind.STREAM, EpochState.RESERVED, "tok", "d", "r",
        datetime(2026, 1, 1, tzinfo=UTC), spec_digest=digest,
    )  # fmt: skip


def test_a_writer_of_another_mapping_is_fenced_with_both_digests() -> None:
    verdict = write_permission(_epoch("a1" * 32), "tok", "c3" * 32)
    assert isinstance(verdict, Fenced) and not verdict.token_mismatch
    assert verdict.reason == "epoch 42 was reserved with mapping a1a1a1a1a1a1, this writer runs c3c3c3c3c3c3"


def test_the_same_mapping_an_unrecorded_one_or_an_unnamed_writer_may_write() -> None:
    assert write_permission(_epoch("a1" * 32), "tok", "a1" * 32) == WriteLease(
        _epoch("a1" * 32), "tok", "a1" * 32
    )
    assert isinstance(write_permission(_epoch(None), "tok", "c3" * 32), WriteLease)
    assert isinstance(write_permission(_epoch("a1" * 32), "tok", None), WriteLease)
