"""The audit's dead-letter topic check on the real stack: two bad records dead-lettered and
published to the pipeline's dead-letter topic (the real transactional publication); the
audit finds each in the topic once with its headers; a copy of one produced into the
topic again is named exactly as a duplicate, nothing else; a copy of the other with
one header changed is a duplicate and a record that differs, naming that header.

Records (``batch_size`` 2, epochs of at most 4 offsets): epoch 1 [0,4) with the bad
record 1, epoch 2 [4,6) with the bad record 5.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from tests.conftest import StackInfo
from tests.integration.dead_letter_support import TopicRecord, World, dead_letter_world
from tests.integration.ledger_support import fresh_database
from tests.integration.test_audit import OPTIONS, audit, pipelines_yaml
from tests.kafka_helpers import produce

pytestmark = pytest.mark.integration

RECORDS: list[tuple[str, bytes | None]] = [
    ("u1", b'{"name":"ann"}'),  # 0
    ("u2", b"not json"),  # 1: a dead letter
    ("u3", b'{"name":"cy"}'),  # 2
    ("u1", b'{"name":"ann2"}'),  # 3
    ("u4", b'{"name":"dee"}'),  # 4
    ("u5", b"{broken"),  # 5: a dead letter
]


@pytest.fixture(scope="module")
def world(stack: StackInfo) -> Iterator[World]:
    with fresh_database(stack.ledger_dsn) as dsn, dead_letter_world(stack, dsn, **OPTIONS) as found:
        produce(stack.kafka_bootstrap, found.source, RECORDS, partition=0)
        assert [found.trip.run_stream_epoch() is None for _ in range(3)] == [False, False, True]
        assert found.publish().published == 2
        yield found


def produce_into_topic(world: World, record: TopicRecord) -> None:
    """``record`` produced into the dead-letter topic by hand (not transactional)."""
    producer = Producer({"bootstrap.servers": world.stack.kafka_bootstrap})
    key, value, headers = record
    producer.produce(world.dlq, key=key, value=value, headers=headers)
    assert producer.flush(15) == 0


def topic_findings(answer: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(f["kind"], f["topic"], f["offset"], f["detail"]) for f in answer["findings"]]


def test_each_letter_once_then_a_duplicate_and_a_changed_header_named(
    world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = pipelines_yaml(world, tmp_path)
    name = world.spec.name
    code, answer = audit(world, file, "--pipeline", name, capsys=capsys)
    assert (code, answer["verdict"], answer["findings"]) == (0, "clean", [])
    assert answer["dead_letter_topic"] == {"letters": 2, "published": 2, "seen": 2}
    assert answer["offsets"]["dead_letters"] == 2

    first, second = world.read()
    assert dict(first[2])["__eo.source.offset"] == b"1"
    produce_into_topic(world, first)  # topic offset 3: 2 letters and their transaction marker before it
    code, answer = audit(world, file, "--pipeline", name, capsys=capsys)
    assert (code, answer["verdict"]) == (1, "discrepancies")
    assert topic_findings(answer) == [
        ("dead_letter_topic_duplicate", world.source, 1,
         f"copy 2 of this letter in dead-letter topic {world.dlq!r} at partition 0 offset 3"),
    ]  # fmt: skip
    assert answer["findings_total"] == 1
    assert answer["dead_letter_topic"] == {"letters": 2, "published": 2, "seen": 3}

    key, value, headers = second
    changed = [(h, b"SomethingElse" if h == "__eo.errors.class" else v) for h, v in headers]
    produce_into_topic(world, (key, value, changed))
    code, answer = audit(world, file, "--pipeline", name, capsys=capsys)
    assert code == 1
    assert sorted(topic_findings(answer)) == [
        ("dead_letter_topic_duplicate", world.source, 1,
         f"copy 2 of this letter in dead-letter topic {world.dlq!r} at partition 0 offset 3"),
        ("dead_letter_topic_duplicate", world.source, 5,
         f"copy 2 of this letter in dead-letter topic {world.dlq!r} at partition 0 offset 4"),
        ("dead_letter_topic_record_differs", world.source, 5,
         f"dead-letter topic {world.dlq!r} at partition 0 offset 4: header __eo.errors.class is "
         "'SomethingElse', the ledger says 'BadRecord'"),
    ]  # fmt: skip
    assert answer["findings_total"] == 3
