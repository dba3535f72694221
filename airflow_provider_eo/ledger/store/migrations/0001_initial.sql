-- Epoch ledger, initial schema (see docs/ledger.md).
-- Applied by airflow_provider_eo.ledger.store.migrate inside one transaction holding an
-- advisory lock; eo.schema_migrations records it.

CREATE TABLE eo.pipelines (
    name        text PRIMARY KEY,
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- The starting offset of every partition, pinned the first time it is seen.
CREATE TABLE eo.partitions (
    pipeline        text        NOT NULL REFERENCES eo.pipelines (name),
    topic           text        NOT NULL,
    "partition"     integer     NOT NULL CHECK ("partition" >= 0),
    initial_offset  bigint      NOT NULL CHECK (initial_offset >= 0),
    initial_source  text        NOT NULL,
    discovered_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (pipeline, topic, "partition")
);

CREATE TABLE eo.epochs (
    epoch_id       bigserial   PRIMARY KEY,
    pipeline       text        NOT NULL REFERENCES eo.pipelines (name),
    kind           text        NOT NULL CHECK (kind IN ('stream', 'backfill')),
    state          text        NOT NULL DEFAULT 'RESERVED'
                               CHECK (state IN ('RESERVED', 'WRITTEN', 'COMMITTED', 'ABORTED')),
    fencing_token  uuid        NOT NULL,
    dag_id         text        NOT NULL,
    run_id         text        NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    written_at     timestamptz,
    committed_at   timestamptz,
    aborted_at     timestamptz,
    metrics        jsonb,
    error          text,
    CHECK ((state IN ('WRITTEN', 'COMMITTED')) = (written_at IS NOT NULL) OR state = 'ABORTED'),
    CHECK ((state = 'COMMITTED') = (committed_at IS NOT NULL)),
    CHECK ((state = 'ABORTED') = (aborted_at IS NOT NULL))
);

-- At most one open stream epoch per pipeline, enforced by the database.
CREATE UNIQUE INDEX epochs_one_open_stream_epoch
    ON eo.epochs (pipeline)
    WHERE kind = 'stream' AND state IN ('RESERVED', 'WRITTEN');

CREATE INDEX epochs_pipeline_state ON eo.epochs (pipeline, state, kind);

CREATE TABLE eo.epoch_ranges (
    epoch_id      bigint  NOT NULL REFERENCES eo.epochs (epoch_id),
    topic         text    NOT NULL,
    "partition"   integer NOT NULL CHECK ("partition" >= 0),
    start_offset  bigint  NOT NULL CHECK (start_offset >= 0),
    end_offset    bigint  NOT NULL,
    PRIMARY KEY (epoch_id, topic, "partition"),
    CHECK (start_offset <= end_offset)
);

CREATE INDEX epoch_ranges_partition ON eo.epoch_ranges (topic, "partition");

-- Data lost to retention, recorded only under on_data_loss: record_gap.
CREATE TABLE eo.gaps (
    pipeline      text        NOT NULL REFERENCES eo.pipelines (name),
    topic         text        NOT NULL,
    "partition"   integer     NOT NULL,
    start_offset  bigint      NOT NULL,
    end_offset    bigint      NOT NULL,
    epoch_id      bigint      REFERENCES eo.epochs (epoch_id),
    recorded_at   timestamptz NOT NULL DEFAULT now(),
    reason        text        NOT NULL,
    PRIMARY KEY (pipeline, topic, "partition", start_offset),
    CHECK (start_offset < end_offset)
);

CREATE TABLE eo.dead_letters (
    pipeline     text        NOT NULL REFERENCES eo.pipelines (name),
    topic        text        NOT NULL,
    "partition"  integer     NOT NULL,
    "offset"     bigint      NOT NULL,
    epoch_id     bigint      REFERENCES eo.epochs (epoch_id),
    error        text        NOT NULL,
    key          bytea,
    value        bytea,
    headers      jsonb,
    recorded_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (pipeline, topic, "partition", "offset")
);

-- Defence in depth: the state machine, enforced even for hand-written UPDATEs.
CREATE FUNCTION eo.check_epoch_transition() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.state = OLD.state THEN
        RETURN NEW;
    END IF;
    IF (OLD.state, NEW.state) IN (('RESERVED', 'WRITTEN'), ('WRITTEN', 'COMMITTED'),
                                  ('RESERVED', 'ABORTED'), ('WRITTEN', 'ABORTED')) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'illegal epoch transition % -> % (epoch %)', OLD.state, NEW.state, OLD.epoch_id
        USING ERRCODE = 'check_violation';
END;
$$;

CREATE TRIGGER epochs_state_machine
    BEFORE UPDATE OF state ON eo.epochs
    FOR EACH ROW EXECUTE FUNCTION eo.check_epoch_transition();
