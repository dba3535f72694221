-- Each epoch records the mapping it ran (docs/ledger.md, "The mapping an epoch runs").
-- Applied by airflow_provider_eo.ledger.store.migrate in one transaction holding its
-- advisory lock.

-- 1. The spec history: one row per distinct mapping digest (config/spec_digest.py), holding
-- the whole parsed spec as the reservation saw it first (PipelineSpec.to_dict()).
CREATE TABLE eo.pipeline_specs (
    digest      text        PRIMARY KEY CHECK (digest ~ '^[0-9a-f]{64}$'),
    pipeline    text        NOT NULL REFERENCES eo.pipelines (name),
    spec        jsonb       NOT NULL,
    first_seen  timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE INDEX pipeline_specs_pipeline ON eo.pipeline_specs (pipeline, first_seen);

-- 2. The digest each epoch was reserved with; NULL for epochs reserved before this migration
-- (their writers are not checked).
ALTER TABLE eo.epochs ADD COLUMN spec_digest text REFERENCES eo.pipeline_specs (digest);
