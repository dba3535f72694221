-- Stored cursors and the indexes retention and run lookups need (see docs/ledger.md).
-- Applied by airflow_provider_eo.ledger.store.migrate in one transaction holding its
-- advisory lock, so no reservation or commit runs while the cursors are filled.

-- The next stream offset of each pinned partition, kept by the store in the transaction
-- that commits a stream epoch or records a gap (never moved backwards): reading a cursor
-- touches only this row, whatever the epoch history.
ALTER TABLE eo.partitions ADD COLUMN cursor_offset bigint;

-- Filled from history with the definition it replaces: the greatest of the initial
-- offset, the ends of the partition's COMMITTED stream ranges and the ends of its gaps.
UPDATE eo.partitions p
   SET cursor_offset = GREATEST(
           p.initial_offset,
           (SELECT max(r.end_offset)
              FROM eo.epoch_ranges r JOIN eo.epochs e USING (epoch_id)
             WHERE e.pipeline = p.pipeline AND e.kind = 'stream' AND e.state = 'COMMITTED'
               AND r.topic = p.topic AND r."partition" = p."partition"),
           (SELECT max(g.end_offset) FROM eo.gaps g
             WHERE g.pipeline = p.pipeline AND g.topic = p.topic AND g."partition" = p."partition"));

ALTER TABLE eo.partitions
    ALTER COLUMN cursor_offset SET NOT NULL,
    ADD CONSTRAINT partitions_cursor_from_initial CHECK (cursor_offset >= initial_offset);

-- A run's own epochs (a retried or resumed run gets its epoch back) without scanning
-- the pipeline's history.
CREATE INDEX epochs_owner_run ON eo.epochs (pipeline, dag_id, run_id);

-- Settled epochs oldest first per pipeline: what `eo-ledger prune` walks.
CREATE INDEX epochs_settled ON eo.epochs (pipeline, epoch_id) WHERE state IN ('COMMITTED', 'ABORTED');

-- Rows that name an epoch: deleting an epoch checks them (foreign keys), and prune keeps
-- the epochs they name.
CREATE INDEX gaps_epoch ON eo.gaps (epoch_id) WHERE epoch_id IS NOT NULL;
CREATE INDEX dead_letters_epoch ON eo.dead_letters (epoch_id) WHERE epoch_id IS NOT NULL;
