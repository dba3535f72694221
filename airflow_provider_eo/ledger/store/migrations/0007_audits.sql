-- The audits' results (docs/audit.md, "Results kept"). Applied by
-- airflow_provider_eo.ledger.store.migrate in one transaction holding its advisory lock.

-- 1. One row per audit: its window, counts (the report's JSON without its findings) and verdict.
-- run_key names the run that made it (an Airflow DAG run, "<dag_id>/<run_id>"): a retried
-- task replaces its run's row instead of adding one. NULL for audits from the CLI.
CREATE TABLE eo.audits (
    audit_id        bigserial   PRIMARY KEY,
    pipeline        text        NOT NULL REFERENCES eo.pipelines (name),
    run_key         text        UNIQUE,
    source          text        NOT NULL CHECK (source IN ('cli', 'dag')),
    epoch_ids       bigint[]    NOT NULL,
    first_epoch     bigint      NOT NULL,
    last_epoch      bigint      NOT NULL,
    verdict         text        NOT NULL CHECK (verdict IN ('clean', 'discrepancies')),
    findings_total  bigint      NOT NULL CHECK (findings_total >= 0),
    summary         jsonb       NOT NULL,
    started_at      timestamptz NOT NULL,
    finished_at     timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE INDEX audits_pipeline ON eo.audits (pipeline, audit_id DESC);
CREATE INDEX audits_epochs ON eo.audits USING gin (epoch_ids);

-- 2. The findings an audit kept (at most audit.findings.MAX_FINDINGS = 1,000 per audit;
-- the rest are only counted in summary), in the order they were found.
CREATE TABLE eo.audit_findings (
    audit_id  bigint  NOT NULL REFERENCES eo.audits (audit_id) ON DELETE CASCADE,
    seq       integer NOT NULL,
    epoch_id  bigint,
    kind      text    NOT NULL,
    finding   jsonb   NOT NULL,
    PRIMARY KEY (audit_id, seq)
);

CREATE INDEX audit_findings_epoch ON eo.audit_findings (audit_id, epoch_id);
