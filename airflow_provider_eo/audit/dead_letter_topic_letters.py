"""The dead-letter topic's letters of an audited window, matched against the ledger (no I/O).

Contract of :class:`TopicLetters`: it is given the ledger's dead letters of the window's
ranges (:meth:`~TopicLetters.expect`, each with its ``publish_seq``) and the publication
marker read before the topic, then every record of the topic that names the pipeline and
an offset of the window's ranges (:meth:`~TopicLetters.see`); :meth:`~TopicLetters.findings`
then says, per source offset (topic, partition, offset):

* a letter the marker says was published (``publish_seq`` below it) and absent from the
  topic is ``dead_letter_topic_missing``;
* a second (third, ...) copy is ``dead_letter_topic_duplicate``, naming where each extra
  copy sits in the topic (letters the marker does not cover yet, being published while
  the audit reads, may be there once or not at all);
* a copy whose key, value or headers differ from ``publication.letter_record`` of its
  ledger row is ``dead_letter_topic_record_differs``, naming the first header that
  differs. ``__eo.epoch_id`` may name an older committed epoch over the offset than the
  row does (a backfill re-records a letter under its own epoch, never publishing it again):
  ``epoch_covers`` decides;
* a record for an offset without a ledger row is ``dead_letter_topic_unexpected``, unless
  the offset is in ``known_missing`` (its row's absence is already a ``dead_letter_missing``).

Memory: per expected letter an 8-byte digest of its record and its ``__eo.*`` headers
(the original headers and the bytes are hashed, never kept); per unexpected offset a count.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from airflow_provider_eo.audit.findings import Finding, FindingKind
from airflow_provider_eo.ledger.model.epoch import DeadLetter, SequencedDeadLetter
from airflow_provider_eo.ledger.protocol import dead_letter_headers as publication

#: (source topic, partition, offset)
SourceOffset = tuple[str, int, int]
Headers = Sequence[tuple[str, bytes | None]]


def record_digest(key: bytes | None, value: bytes | None, headers: Headers) -> int:
    """A 64-bit digest of a letter's key, value and headers, ``__eo.epoch_id`` left out."""
    parts: list[bytes | None] = [key, value]
    for name, raw in headers:
        if name != publication.EPOCH_ID:
            parts += [name.encode(), raw]
    digest = hashlib.blake2b(digest_size=8)
    for part in parts:
        digest.update(b"\xff" if part is None else len(part).to_bytes(4, "big") + part)
    return int.from_bytes(digest.digest(), "big")


def eo_headers(headers: Headers) -> dict[str, bytes | None]:
    """The ``__eo.*`` headers of a record (the last of each name)."""
    return {name: raw for name, raw in headers if name.startswith("__eo.")}


@dataclass
class _Letter:
    digest: int
    eo: dict[str, bytes | None]
    epoch_id: int | None
    published: bool
    copies: int = 0


@dataclass
class TopicLetters:
    """The window's letters, expected and seen (see the module contract)."""

    pipeline: str
    topic: str
    marker: int
    epoch_covers: Callable[[int, SourceOffset], bool]
    letters: dict[SourceOffset, _Letter] = field(default_factory=dict)
    unexpected: dict[SourceOffset, int] = field(default_factory=dict)
    found: list[Finding] = field(default_factory=list)

    def expect(self, rows: Iterable[tuple[int | None, DeadLetter]]) -> None:
        """Take the ledger's letters ``(publish_seq or None, row)`` of one audited range."""
        for seq, row in rows:
            record = publication.letter_record(SequencedDeadLetter(seq or 0, row))
            self.letters[(row.topic, row.partition, row.offset)] = _Letter(
                record_digest(record.key, record.value, record.headers),
                eo_headers(record.headers),
                row.epoch_id,
                seq is not None and seq < self.marker,
            )

    def see(
        self, source: SourceOffset, key: bytes | None, value: bytes | None, headers: Headers, where: str
    ) -> None:
        """Take one record of the topic for ``source`` (``where``: its topic partition and offset)."""
        letter = self.letters.get(source)
        if letter is None:
            self.unexpected[source] = self.unexpected.get(source, 0) + 1
            return
        letter.copies += 1
        if letter.copies > 1:
            detail = f"copy {letter.copies} of this letter in dead-letter topic {self.topic!r} at {where}"
            self.found.append(self._finding(FindingKind.DEAD_LETTER_TOPIC_DUPLICATE, detail, source, letter))
        why = self._differs(letter, key, value, headers, source)
        if why is not None:
            detail = f"dead-letter topic {self.topic!r} at {where}: {why}"
            self.found.append(
                self._finding(FindingKind.DEAD_LETTER_TOPIC_RECORD_DIFFERS, detail, source, letter)
            )

    def findings(self, known_missing: Iterable[SourceOffset] = ()) -> list[Finding]:
        """Every finding so far, then the missing letters and the unexpected records."""
        out = list(self.found)
        out += [
            self._finding(
                FindingKind.DEAD_LETTER_TOPIC_MISSING,
                f"published (publish_seq below the marker {self.marker}) but not in dead-letter "
                f"topic {self.topic!r}",
                source,
                letter,
            )
            for source, letter in sorted(self.letters.items())
            if letter.published and letter.copies == 0
        ]
        skip = set(known_missing)
        out += [
            Finding(
                FindingKind.DEAD_LETTER_TOPIC_UNEXPECTED,
                f"{count} record(s) in dead-letter topic {self.topic!r} for an offset without a "
                "dead letter in the ledger",
                None,
                *source,
            )
            for source, count in sorted(self.unexpected.items())
            if source not in skip
        ]
        return out

    @property
    def counts(self) -> dict[str, int]:
        """``{letters, published, seen}``: ledger letters of the window, those the marker
        covers, copies found in the topic."""
        return {
            "letters": len(self.letters),
            "published": sum(letter.published for letter in self.letters.values()),
            "seen": sum(letter.copies for letter in self.letters.values()),
        }

    def _differs(
        self, letter: _Letter, key: bytes | None, value: bytes | None, headers: Headers, source: SourceOffset
    ) -> str | None:
        eo = eo_headers(headers)
        named = eo.get(publication.EPOCH_ID)
        text = named.decode("utf-8", "replace") if named is not None else None
        recorded = None if letter.epoch_id is None else str(letter.epoch_id)
        covering = text is not None and text.isdigit() and self.epoch_covers(int(text), source)
        if text != recorded and not covering:
            return f"header {publication.EPOCH_ID} is {text!r}, not a committed epoch over the offset"
        if record_digest(key, value, headers) == letter.digest:
            return None
        for name in sorted(set(eo) | set(letter.eo)):
            if name != publication.EPOCH_ID and eo.get(name) != letter.eo.get(name):
                return f"header {name} is {_text(eo.get(name))}, the ledger says {_text(letter.eo.get(name))}"
        return "its key, value or original headers differ from the ledger's dead letter"

    def _finding(self, kind: FindingKind, detail: str, source: SourceOffset, letter: _Letter) -> Finding:
        return Finding(kind, detail, letter.epoch_id, *source)


def _text(raw: bytes | None) -> str:
    return "absent" if raw is None else repr(raw.decode("utf-8", "replace"))
