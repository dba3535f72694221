"""Shared data and helpers of the "eo" UI plugin tests (``test_epochs_*``).

:func:`ledgered_data` fills a fresh ledger database with two pipelines over real topics:
``orders`` (COMMITTED, ABORTED, open RESERVED stream epochs and a WRITTEN backfill) and
``evil``, whose topic name is hostile HTML. Kafka offsets come from the real
``EoKafkaHook``; :class:`TopicShownAs` is the one stand-in (see its docstring).
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import psycopg2
from psycopg2.extensions import parse_dsn

from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.ledger import Epoch, Ledger
from airflow_provider_eo.ledger.model.epoch import PartitionRange
from eo_devtools.ledger_direct import reserve_backfill_epoch, reserve_stream_epoch
from tests.conftest import StackInfo
from tests.integration.ledger_support import TP, fresh_database, make_spec, run_epoch, stack_kafka_hook
from tests.kafka_helpers import RecordSender

EVIL = "<script>alert(1)</script>"


class TopicShownAs:
    """The real hook serving one real topic under another name (the one stand-in here).

    Kafka accepts only topic names made of ``[a-zA-Z0-9._-]``, so a name carrying markup
    can reach the ledger, and so the page, only through a source that is not a broker.
    Every offset and group commit still goes to the real topic ``real``; any other topic
    is passed through to the real hook unchanged.
    """

    def __init__(self, hook: EoKafkaHook, real: str, shown: str) -> None:
        self.hook, self.real, self.shown = hook, real, shown

    def _to_real(self, tps: Iterable[TP]) -> list[TP]:
        return [(self.real if t == self.shown else t, p) for t, p in tps]

    def _to_shown(self, by_tp: Mapping[TP, Any]) -> dict[TP, Any]:
        return {(self.shown if t == self.real else t, p): v for (t, p), v in by_tp.items()}

    def list_partitions(self, topics: Sequence[str] | None, pattern: str | None) -> list[TP]:
        if pattern is None:  # a reservation names its one topic
            assert list(topics or []) == [self.shown]
            return [(self.shown, p) for _, p in self.hook.list_partitions([self.real], None)]
        assert topics is None  # the UI's lag: which topics matching ``pattern`` exist
        found = self.hook.list_partitions(None, pattern)
        if re.fullmatch(pattern, self.shown):
            found += self.hook.list_partitions(None, re.escape(self.real))
        return sorted(self._to_shown(dict.fromkeys(found)))

    def watermarks(self, tps: Iterable[TP]) -> dict[TP, tuple[int, int]]:
        return self._to_shown(self.hook.watermarks(self._to_real(tps)))

    def offsets_for_timestamp(self, tps: Iterable[TP], ts_ms: int) -> dict[TP, int]:
        return self._to_shown(self.hook.offsets_for_timestamp(self._to_real(tps), ts_ms))

    def committed_offsets(self, group_id: str, tps: Iterable[TP]) -> dict[TP, int | None]:
        return self._to_shown(self.hook.committed_offsets(group_id, self._to_real(tps)))

    def commit_offsets(self, group_id: str, offsets: Mapping[TP, int]) -> None:
        self.hook.commit_offsets(group_id, {(self.real, p): o for (_, p), o in offsets.items()})


@dataclass
class Ledgered:
    dsn: str
    topic: str
    committed: Epoch
    aborted: Epoch
    open: Epoch
    backfill: Epoch
    evil: Epoch
    source: TopicShownAs  # the real hook; shows the evil pipeline's topic under its ledger name
    sender: RecordSender


def detail(epoch: Epoch) -> dict[str, Any]:
    return json.loads(json.dumps(epoch.to_summary()))


def raw_history(dsn: str, epoch_id: int) -> list[dict[str, Any]]:
    """The epoch's rows of ``eo.epoch_transitions`` as the API prints them, read directly."""
    with psycopg2.connect(dsn) as conn, conn.cursor() as cur:
        cur.execute(
            "SELECT from_state, to_state, at, actor_kind, actor, reason FROM eo.epoch_transitions"
            " WHERE epoch_id = %s ORDER BY transition_id",
            (epoch_id,),
        )
        found = cur.fetchall()
    conn.close()
    keys = ("from", "to", "at", "actor_kind", "actor", "reason")
    return [dict(zip(keys, (*row[:2], row[2].isoformat(), *row[3:]), strict=True)) for row in found]


def conn_json(dsn: str) -> str:
    """``AIRFLOW_CONN_*`` JSON form of a libpq DSN."""
    p = parse_dsn(dsn)
    return json.dumps(
        {
            "conn_type": "postgres",
            "host": p["host"],
            "port": int(p.get("port", 5432)),
            "login": p.get("user"),
            "password": p.get("password"),
            "schema": p["dbname"],
        }
    )


@contextmanager
def ledgered_data(stack: StackInfo, kafka_topic_factory: Callable[..., str]) -> Iterator[Ledgered]:
    """orders (a real two-partition topic: 5 records in partition 0, 3 in partition 1):
    COMMITTED [0,5)+[0,0), ABORTED, open RESERVED stream epochs and a WRITTEN backfill
    [1,3) of partition 0; evil (one record): one COMMITTED epoch. Cursors: orders 5 and 0,
    evil 1."""
    hook = stack_kafka_hook(stack)
    topic = kafka_topic_factory(partitions=2, prefix="orders")
    evil_topic = kafka_topic_factory(partitions=1, prefix="evil")
    sender = RecordSender(stack.kafka_bootstrap)
    for i in range(5):
        sender.send(topic, f"k{i}", "{}", partition=0)
    sender.send(evil_topic, "k", "{}", partition=0)
    sender.flush()
    with fresh_database(stack.ledger_dsn) as dsn, Ledger(dsn) as ledger:
        spec = make_spec("orders", topics=[topic])
        committed = run_epoch(ledger, spec, hook, "r1", dag_id="eo_stream__orders")
        for i in range(3):
            sender.send(topic, f"k{i}", "{}", partition=1)
        sender.flush()
        doomed = reserve_stream_epoch(ledger, spec, hook, dag_id="eo_stream__orders", run_id="r2")
        assert committed is not None and doomed is not None
        aborted = ledger.abort(doomed.epoch_id, "worker lost")
        opened = reserve_stream_epoch(ledger, spec, hook, dag_id="eo_stream__orders", run_id="r3")
        assert opened is not None
        back = reserve_backfill_epoch(
            ledger, spec, [PartitionRange(topic, 0, 1, 3)], dag_id="eo_backfill__orders", run_id="b1"
        )
        backfill = ledger.vote_written(back.epoch_id, back.fencing_token, {"records": 2, "cells": 4})
        evil_spec = make_spec("evil", topics=[EVIL])
        evil_source = TopicShownAs(hook, evil_topic, EVIL)
        evil = run_epoch(ledger, evil_spec, evil_source, "r<b>1</b>", dag_id="eo_stream__evil")
        assert evil is not None
        yield Ledgered(dsn, topic, committed, aborted, opened, backfill, evil, evil_source, sender)


def rows(html: str, kind: str) -> list[str]:
    """The inner HTML of the page's ``<tr class="kind">`` rows, in order."""
    return re.findall(rf'<tr class="{kind}"[^>]*>(.*?)</tr>', html)


def partitions_shown(html: str) -> list[tuple[str, int, str]]:
    """``(topic, partition, lag)`` of every partition on the page (lag as shown)."""
    found = re.findall(r'data-topic="([^"]*)" data-partition="(\d+)" data-lag="([^"]*)"', html)
    return [(topic, int(partition), lag) for topic, partition, lag in found]


def http(url: str, token: str | None = None, data: bytes | None = None) -> tuple[int, str]:
    """GET (POST JSON when ``data``) -> (status, body); HTTP errors are answers too."""
    headers = {"Content-Type": "application/json"} if data else {}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=data, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
