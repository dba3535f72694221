"""The dead-letter topic check's matching (``audit/dead_letter_topic_letters.py``): the
ledger's letters against the topic's records, per source offset."""

from __future__ import annotations

from airflow_provider_eo.audit.dead_letter_topic_letters import SourceOffset, TopicLetters
from airflow_provider_eo.ledger.model.epoch import DeadLetter, SequencedDeadLetter
from airflow_provider_eo.ledger.protocol.dead_letter_publication import letter_record

T = "src"


def letter(offset: int, epoch_id: int = 3) -> DeadLetter:
    return DeadLetter(
        pipeline="p", topic=T, partition=0, offset=offset, epoch_id=epoch_id, error="bad",
        key=b"k%d" % offset, value=b"v", headers=[("h", b"x")], error_class="BadRecord",
    )  # fmt: skip


def letters(marker: int = 2, covering: frozenset[int] = frozenset()) -> TopicLetters:
    """Letters 10 (seq 0), 11 (seq 1) and 12 (seq 2: not covered by the marker 2) of epoch 3."""
    found = TopicLetters("p", "dlq", marker, lambda epoch_id, _source: epoch_id in covering)
    found.expect([(0, letter(10)), (1, letter(11)), (2, letter(12))])
    return found


def see(
    found: TopicLetters, offset: int, epoch_id: int = 3, at: int = 0, changes: dict[str, bytes] | None = None
) -> None:
    """The topic's record of ``letter(offset)`` as published under ``epoch_id``; ``changes``
    replace headers by name."""
    record = letter_record(SequencedDeadLetter(0, letter(offset, epoch_id)))
    headers = [(name, (changes or {}).get(name, value)) for name, value in record.headers]
    found.see((T, 0, offset), record.key, record.value, headers, f"partition 0 offset {at}")


def kinds(
    found: TopicLetters, known_missing: list[SourceOffset] | None = None
) -> list[tuple[str, int | None]]:
    return [(f.kind.value, f.offset) for f in found.findings(known_missing or [])]


def test_each_published_letter_once_is_clean_and_unpublished_ones_may_be_absent() -> None:
    found = letters()
    see(found, 10)
    see(found, 11)
    assert (kinds(found), found.counts) == ([], {"letters": 3, "published": 2, "seen": 2})


def test_missing_duplicate_and_unexpected_letters() -> None:
    found = letters()
    see(found, 10, at=0)
    see(found, 10, at=7)
    see(found, 12, at=8)
    see(found, 12, at=9)  # not yet covered by the marker, yet twice: a duplicate too
    found.see((T, 0, 13), b"k", b"v", [], "partition 0 offset 10")  # no ledger row
    found.see((T, 0, 14), b"k", b"v", [], "partition 0 offset 11")  # its row's absence already named
    assert kinds(found, [(T, 0, 14)]) == [
        ("dead_letter_topic_duplicate", 10),
        ("dead_letter_topic_duplicate", 12),
        ("dead_letter_topic_missing", 11),
        ("dead_letter_topic_unexpected", 13),
    ]
    assert (
        found.findings()[0].detail
        == "copy 2 of this letter in dead-letter topic 'dlq' at partition 0 offset 7"
    )


def test_a_changed_header_key_or_epoch_differs_and_names_what() -> None:
    found = letters(covering=frozenset({2}))
    see(found, 10, changes={"__eo.errors.message": b"other"})
    see(found, 11, epoch_id=2)  # a covering older epoch (a backfill re-recorded the letter): fine
    see(found, 12, epoch_id=1)  # an epoch that does not cover the offset
    details = [f.detail for f in found.findings()]
    assert details == [
        "dead-letter topic 'dlq' at partition 0 offset 0: header __eo.errors.message is 'other', "
        "the ledger says 'bad'",
        "dead-letter topic 'dlq' at partition 0 offset 0: header __eo.epoch_id is '1', not a "
        "committed epoch over the offset",
    ]
    found = letters()
    found.see((T, 0, 10), b"other key", b"v", letter_record(SequencedDeadLetter(0, letter(10))).headers, "x")
    assert [f.detail for f in found.findings()] == [
        "dead-letter topic 'dlq' at x: its key, value or original headers differ from the ledger's "
        "dead letter",
        "published (publish_seq below the marker 2) but not in dead-letter topic 'dlq'",
    ]
