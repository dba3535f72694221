"""``ledger.queries``: the pipeline overview is batched (a fixed number of statements in one
transaction, whatever the number of pipelines) and exact, on ledger rows made through the
Ledger API over a real topic (real PostgreSQL, real broker, a real retention gap).

Statements and commits are counted by a psycopg2 connection/cursor subclass: the real
driver on the real server, with a counter in front of ``execute`` and ``commit``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import psycopg2
import psycopg2.extensions
import pytest
from fastapi.testclient import TestClient

from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.ledger import DeadLetter, EpochKind, EpochState, Ledger, PartitionRange
from airflow_provider_eo.ledger.model.read_model import EpochFilter, Gap, OpenEpoch, PipelineOverview
from airflow_provider_eo.plugins import views
from airflow_provider_eo.plugins.access import EveryPipeline
from airflow_provider_eo.plugins.app import create_app
from eo_devtools.ledger_direct import reserve_backfill_epoch, reserve_stream_epoch
from tests.conftest import StackInfo
from tests.integration.ledger_support import fresh_database, make_spec, ranges_of, run_epoch
from tests.kafka_helpers import delete_records_before, produce

pytestmark = pytest.mark.integration

OVERVIEW_STATEMENTS = 6  # names, counts, open epochs, cursors, dead letters, gaps
SESSION_ACTOR = 1  # a new connection names its actor once (store/connection.py), whatever it reads


class CountingCursor(psycopg2.extensions.cursor):
    """A real psycopg2 cursor that records every statement on its connection."""

    def execute(self, query: Any, vars: Any = None) -> None:
        self.connection.statements.append(query)
        super().execute(query, vars)


class CountingConnection(psycopg2.extensions.connection):
    """A real psycopg2 connection counting statements (of its cursors) and commits."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cursor_factory = CountingCursor
        self.statements: list[Any] = []
        self.commits = 0

    def commit(self) -> None:
        self.commits += 1
        super().commit()

    def reset(self) -> None:
        self.statements.clear()
        self.commits = 0


@dataclass
class Counted:
    """Ledgers on one fresh database whose connections count (the last one opened is ``last``)."""

    dsn: str
    opened: list[CountingConnection] = field(default_factory=list)

    def connect(self) -> CountingConnection:
        conn = psycopg2.connect(self.dsn, connection_factory=CountingConnection)
        self.opened.append(conn)
        return conn

    def ledger(self) -> Ledger:
        return Ledger(self.connect, auto_migrate=False)

    @property
    def last(self) -> CountingConnection:
        return self.opened[-1]


@pytest.fixture
def counted(stack: StackInfo) -> Iterator[Counted]:
    with fresh_database(stack.ledger_dsn) as dsn:
        with Ledger(dsn) as ledger:
            ledger.migrate()
        yield Counted(dsn)


@dataclass
class Built:
    """The ledger rows :class:`PipelineBuilder` made, for exact expectations."""

    topic: str
    epoch_ids: dict[str, int] = field(default_factory=dict)


class PipelineBuilder:
    """Five pipelines over one real two-partition topic (5 records on [0], 2 on [1]), each
    with a different shape of ledger rows; ``first()`` makes one, ``rest()`` the other four."""

    def __init__(self, stack: StackInfo, ledger: Ledger, hook: EoKafkaHook, topic: str) -> None:
        self.stack, self.ledger, self.hook = stack, ledger, hook
        self.built = Built(topic)
        produce(stack.kafka_bootstrap, topic, [(b"k", b"{}")] * 5, partition=0)
        produce(stack.kafka_bootstrap, topic, [(b"k", b"{}")] * 2, partition=1)

    def first(self) -> None:
        """a-committed: one COMMITTED stream epoch and one dead letter of it."""
        epoch = run_epoch(self.ledger, make_spec("a-committed", topics=[self.built.topic]), self.hook, "r1")
        assert epoch is not None
        self.built.epoch_ids["a"] = epoch.epoch_id
        self.ledger.record_dead_letters(
            [DeadLetter("a-committed", self.built.topic, 0, 3, epoch.epoch_id, "bad")]
        )

    def rest(self) -> None:
        """b-open (RESERVED stream + WRITTEN backfill), c-aborted, d-dead-letters (three
        letters, nothing else), e-gap (two COMMITTED epochs around a retention gap)."""
        topic, ids, ledger = self.built.topic, self.built.epoch_ids, self.ledger
        opened = reserve_stream_epoch(
            ledger, make_spec("b-open", topics=[topic]), self.hook, dag_id="d", run_id="r1"
        )
        assert opened is not None
        back = reserve_backfill_epoch(
            ledger, "b-open", [PartitionRange(topic, 0, 1, 3)], dag_id="d", run_id="b1"
        )
        ledger.vote_written(back.epoch_id, back.fencing_token, {})
        ids["b-stream"], ids["b-backfill"] = opened.epoch_id, back.epoch_id
        doomed = reserve_stream_epoch(
            ledger, make_spec("c-aborted", topics=[topic]), self.hook, dag_id="d", run_id="r1"
        )
        assert doomed is not None
        ledger.abort(doomed.epoch_id, "test")
        ledger.record_dead_letters(
            [DeadLetter("d-dead-letters", topic, 1, offset, None, "bad") for offset in (0, 1, 5)]
        )
        gap_spec = make_spec("e-gap", topics=[topic], on_data_loss="record_gap")
        before_gap = run_epoch(ledger, gap_spec, self.hook, "r1")
        assert before_gap is not None
        assert ranges_of(before_gap) == [(topic, 0, 0, 5), (topic, 1, 0, 2)]
        ids["e-before-gap"] = before_gap.epoch_id
        produce(self.stack.kafka_bootstrap, topic, [(b"k", b"{}")] * 5, partition=0)
        assert delete_records_before(self.stack.kafka_bootstrap, topic, 0, 8) == 8
        after_gap = run_epoch(ledger, gap_spec, self.hook, "r2")
        assert ranges_of(after_gap) == [(topic, 0, 8, 10), (topic, 1, 2, 2)]
        assert after_gap is not None
        ids["e-after-gap"] = after_gap.epoch_id


@pytest.fixture
def builder(
    stack: StackInfo, counted: Counted, hook: EoKafkaHook, kafka_topic_factory: Callable[..., str]
) -> Iterator[PipelineBuilder]:
    """A builder writing through its own (uncounted) Ledger on the counted database."""
    with Ledger(counted.dsn) as ledger:
        yield PipelineBuilder(stack, ledger, hook, kafka_topic_factory(partitions=2))


@pytest.fixture
def built(builder: PipelineBuilder) -> PipelineBuilder:
    """All five pipelines built."""
    builder.first()
    builder.rest()
    return builder


def counts(**by_state: int) -> dict[EpochState, int]:
    return {state: by_state.get(state.value, 0) for state in EpochState}


def expected_overviews(built: Built) -> list[PipelineOverview]:
    t, ids = built.topic, built.epoch_ids
    return [
        PipelineOverview("a-committed", counts(COMMITTED=1), (), {(t, 0): 5, (t, 1): 2}, 1, ()),
        PipelineOverview(
            "b-open",
            counts(RESERVED=1, WRITTEN=1),
            (
                OpenEpoch(ids["b-stream"], EpochKind.STREAM, EpochState.RESERVED, "r1"),
                OpenEpoch(ids["b-backfill"], EpochKind.BACKFILL, EpochState.WRITTEN, "b1"),
            ),
            {(t, 0): 0, (t, 1): 0},
            0,
            (),
        ),
        PipelineOverview("c-aborted", counts(ABORTED=1), (), {(t, 0): 0, (t, 1): 0}, 0, ()),
        PipelineOverview("d-dead-letters", counts(), (), {}, 3, ()),
        PipelineOverview(
            "e-gap",
            counts(COMMITTED=2),
            (),
            {(t, 0): 10, (t, 1): 2},
            0,
            (Gap(t, 0, 5, 8, ids["e-after-gap"], "retention"),),
        ),
    ]


def overview_reads(counted: Counted, pipeline: str | None = None) -> tuple[list[PipelineOverview], int, int]:
    """``Ledger.pipeline_overviews(pipeline)`` on a new connection -> (answer, statements
    without the session's actor, commits)."""
    with counted.ledger() as ledger:
        answer = ledger.pipeline_overviews(pipeline)
        return answer, len(counted.last.statements) - SESSION_ACTOR, counted.last.commits


def test_overview_statements_do_not_grow_with_pipelines(counted: Counted, builder: PipelineBuilder) -> None:
    builder.first()
    one, one_statements, one_commits = overview_reads(counted)
    builder.rest()
    five, five_statements, five_commits = overview_reads(counted)
    assert [o.name for o in one] == ["a-committed"]
    assert [o.name for o in five] == ["a-committed", "b-open", "c-aborted", "d-dead-letters", "e-gap"]
    assert (one_statements, one_commits) == (five_statements, five_commits) == (OVERVIEW_STATEMENTS, 1)
    only, statements, commits = overview_reads(counted, "b-open")
    assert ([o.name for o in only], statements, commits) == (["b-open"], OVERVIEW_STATEMENTS, 1)
    assert overview_reads(counted, "unknown")[:2] == ([], OVERVIEW_STATEMENTS)


def test_overviews_are_exact_and_agree_with_the_per_pipeline_methods(built: PipelineBuilder) -> None:
    ledger = built.ledger
    overviews = ledger.pipeline_overviews()
    assert overviews == expected_overviews(built.built)
    assert ledger.pipeline_overviews("e-gap") == overviews[-1:]
    for overview in overviews:  # the same answer as the per-pipeline (one transaction each) methods
        name = overview.name
        assert overview.to_json() == {
            "name": name,
            "epochs": {
                state.value: len(ledger.epochs(EpochFilter(pipeline=name, states=frozenset({state}))))
                for state in EpochState
            },
            "open_epochs": [
                {"epoch_id": e.epoch_id, "kind": e.kind.value, "state": e.state.value, "run_id": e.run_id}
                for e in ledger.open_epochs(name)
            ],
            "cursors": [
                {"topic": t, "partition": p, "cursor": c} for (t, p), c in ledger.cursors(name).items()
            ],
            "dead_letters": ledger.dead_letter_count(name),
            "gaps": ledger.gaps(name),
        }
    assert overviews[-1].to_json()["gaps"] == [
        {
            "topic": built.built.topic,
            "partition": 0,
            "start": 5,
            "end": 8,
            "epoch_id": built.built.epoch_ids["e-after-gap"],
            "reason": "retention",
        }
    ]


def test_epochs_and_the_page_read_in_one_transaction_each(counted: Counted, built: PipelineBuilder) -> None:
    ids = built.built.epoch_ids
    with counted.ledger() as ledger:
        newest = ledger.epochs(
            EpochFilter(states=frozenset({EpochState.COMMITTED}), limit=2)
        )  # the newest 2, oldest first
        assert ([e.epoch_id for e in newest], counted.last.commits) == (
            [ids["e-before-gap"], ids["e-after-gap"]],
            1,
        )
        counted.last.reset()
        data = views.page_data(ledger, EpochFilter(pipeline="b-open", limit=50), EveryPipeline(), None)
        # the overview (6 statements), the epochs with their ranges (2), their histories (1) and
        # their newest audits (1, the badges, whatever the number of epochs): four transactions
        assert (len(counted.last.statements), counted.last.commits) == (OVERVIEW_STATEMENTS + 4, 4)
    assert data["pipeline_names"] == ["a-committed", "b-open", "c-aborted", "d-dead-letters", "e-gap"]
    assert [p["name"] for p in data["pipelines"]] == ["b-open"]
    assert [e["epoch_id"] for e in data["epochs"]] == [ids["b-stream"], ids["b-backfill"]]
    page = TestClient(create_app(counted.ledger)).get("/", params={"pipeline": "b-open"})
    assert page.status_code == 200 and f'id="epoch-{ids["b-backfill"]}"' in page.text
    # a new connection for the request; then the pipeline's charts in one more transaction:
    # the time and whether the pipeline exists, its window's committed epochs (none), its
    # lag samples (none)
    page_statements = SESSION_ACTOR + OVERVIEW_STATEMENTS + 4 + 3
    assert (len(counted.last.statements), counted.last.commits) == (page_statements, 5)
