-- What the Epochs page charts (docs/ui.md): lag samples, and the start of each commit step.
-- Applied by airflow_provider_eo.ledger.store.migrate in one transaction holding its
-- advisory lock.

-- 1. Lag samples: each a moment at which a pipeline's cursors were compared with the high
-- watermarks: after a stream epoch's commit (source 'commit', naming the epoch; the
-- cursor is then the committed end) or at a poll of the wait step (source 'wait').
-- One header row per sample, one row per partition (like eo.epochs and eo.epoch_ranges);
-- `eo-ledger prune` deletes them with the epochs (store/lag_samples.py).
CREATE TABLE eo.lag_samples (
    sample_id   bigserial   PRIMARY KEY,
    pipeline    text        NOT NULL REFERENCES eo.pipelines (name),
    sampled_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    source      text        NOT NULL CHECK (source IN ('commit', 'wait')),
    epoch_id    bigint      REFERENCES eo.epochs (epoch_id),
    partitions  integer     NOT NULL CHECK (partitions >= 0),
    total_lag   bigint      NOT NULL CHECK (total_lag >= 0),
    CHECK ((source = 'commit') = (epoch_id IS NOT NULL))
);

-- A pipeline's samples of a time window (the charts), and the samples a prune deletes.
CREATE INDEX lag_samples_pipeline_time ON eo.lag_samples (pipeline, sampled_at);
CREATE INDEX lag_samples_epoch ON eo.lag_samples (epoch_id) WHERE epoch_id IS NOT NULL;

CREATE TABLE eo.lag_sample_partitions (
    sample_id       bigint  NOT NULL REFERENCES eo.lag_samples (sample_id) ON DELETE CASCADE,
    topic           text    NOT NULL,
    "partition"     integer NOT NULL CHECK ("partition" >= 0),
    cursor_offset   bigint  NOT NULL,
    high_watermark  bigint  NOT NULL,
    lag             bigint  NOT NULL CHECK (lag >= 0),
    PRIMARY KEY (sample_id, topic, "partition")
);

-- 2. When the commit step of an epoch began (EpochProtocol.commit, before it published
-- offsets), on the database's clock: committed_at minus the step's own measured duration.
-- NULL for epochs committed before this migration (their commit phase is unknown).
ALTER TABLE eo.epochs
    ADD COLUMN commit_started_at timestamptz,
    ADD CHECK (commit_started_at IS NULL OR committed_at IS NOT NULL);
