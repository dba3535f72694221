-- Operating pipelines (docs/operations.md): every epoch's history, cursor moves by seek and
-- reset, dead letters published to a topic exactly once, and replays of dead letters.
-- Applied by airflow_provider_eo.ledger.store.migrate in one transaction holding its
-- advisory lock.

-- 1. Every epoch's history: one row per state change (and one for its creation), written
-- by the database itself in the transaction of the change, so no path can skip it. The
-- actor and reason come from transaction-local settings (store/actors.py sets them in
-- every ledger transaction); a change without an actor is refused.
CREATE TABLE eo.epoch_transitions (
    transition_id  bigserial   PRIMARY KEY,
    epoch_id       bigint      NOT NULL REFERENCES eo.epochs (epoch_id),
    pipeline       text        NOT NULL,
    from_state     text,       -- NULL: the epoch's creation
    to_state       text        NOT NULL,
    at             timestamptz NOT NULL DEFAULT clock_timestamp(),
    actor_kind     text        NOT NULL,   -- task | eo-ledger | recovery | migration | process
    actor          text        NOT NULL,   -- dag/run/task/try, or user@host, ...
    reason         text        NOT NULL
);

CREATE INDEX epoch_transitions_epoch ON eo.epoch_transitions (epoch_id, transition_id);
-- A pipeline's newest transitions first (eo-ledger history --pipeline).
CREATE INDEX epoch_transitions_pipeline ON eo.epoch_transitions (pipeline, transition_id);

CREATE FUNCTION eo.record_epoch_transition() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    actor_kind text := NULLIF(current_setting('eo.actor_kind', true), '');
    actor      text := NULLIF(current_setting('eo.actor', true), '');
    reason     text := NULLIF(current_setting('eo.reason', true), '');
    from_state text := NULL;
BEGIN
    IF TG_OP = 'UPDATE' THEN
        IF NEW.state = OLD.state THEN
            RETURN NULL;
        END IF;
        from_state := OLD.state;
    END IF;
    IF actor_kind IS NULL OR actor IS NULL THEN
        RAISE EXCEPTION 'epoch % change % -> % names no actor: set eo.actor_kind and eo.actor in the transaction',
            NEW.epoch_id, coalesce(from_state, '(new)'), NEW.state
            USING ERRCODE = 'check_violation';
    END IF;
    IF reason IS NULL THEN
        reason := CASE NEW.state
            WHEN 'RESERVED'  THEN 'reserved'
            WHEN 'WRITTEN'   THEN 'voted WRITTEN by its writer'
            WHEN 'COMMITTED' THEN 'committed'
            ELSE coalesce(NEW.error, 'aborted')
        END;
    END IF;
    INSERT INTO eo.epoch_transitions (epoch_id, pipeline, from_state, to_state, actor_kind, actor, reason)
    VALUES (NEW.epoch_id, NEW.pipeline, from_state, NEW.state, actor_kind, actor, reason);
    RETURN NULL;
END;
$$;

CREATE TRIGGER epochs_history
    AFTER INSERT OR UPDATE OF state ON eo.epochs
    FOR EACH ROW EXECUTE FUNCTION eo.record_epoch_transition();

-- Epochs that existed before this migration get one row: their state then.
INSERT INTO eo.epoch_transitions (epoch_id, pipeline, from_state, to_state, at, actor_kind, actor, reason)
SELECT epoch_id, pipeline, NULL, state,
       coalesce(committed_at, aborted_at, written_at, created_at),
       'migration', '0004_operations', 'state when the history began (migration 0004)'
  FROM eo.epochs;

-- 2. Cursor moves by an operator (eo-ledger seek / reset). A cursor only moves backwards in
-- a transaction that declared itself a seek or a reset (eo.cursor_move), and every cursor
-- change in such a transaction is recorded here, by the database.
CREATE TABLE eo.cursor_moves (
    move_id      bigserial   PRIMARY KEY,
    pipeline     text        NOT NULL REFERENCES eo.pipelines (name),
    topic        text        NOT NULL,
    "partition"  integer     NOT NULL,
    from_offset  bigint      NOT NULL,
    to_offset    bigint      NOT NULL,
    kind         text        NOT NULL CHECK (kind IN ('seek', 'reset')),
    at           timestamptz NOT NULL DEFAULT clock_timestamp(),
    actor_kind   text        NOT NULL,
    actor        text        NOT NULL,
    reason       text        NOT NULL
);

CREATE INDEX cursor_moves_pipeline ON eo.cursor_moves (pipeline, move_id);

CREATE FUNCTION eo.guard_cursor_move() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    move_kind  text := NULLIF(current_setting('eo.cursor_move', true), '');
    actor_kind text := NULLIF(current_setting('eo.actor_kind', true), '');
    actor      text := NULLIF(current_setting('eo.actor', true), '');
    reason     text := NULLIF(current_setting('eo.reason', true), '');
BEGIN
    IF NEW.cursor_offset = OLD.cursor_offset THEN
        RETURN NEW;
    END IF;
    IF move_kind IS NULL THEN
        IF NEW.cursor_offset < OLD.cursor_offset THEN
            RAISE EXCEPTION 'cursor of %/%[%] moves back from % to % outside a seek or reset',
                NEW.pipeline, NEW.topic, NEW."partition", OLD.cursor_offset, NEW.cursor_offset
                USING ERRCODE = 'check_violation';
        END IF;
        RETURN NEW;
    END IF;
    IF actor_kind IS NULL OR actor IS NULL OR reason IS NULL THEN
        RAISE EXCEPTION 'a % of %/%[%] needs an actor and a reason', move_kind, NEW.pipeline,
            NEW.topic, NEW."partition" USING ERRCODE = 'check_violation';
    END IF;
    INSERT INTO eo.cursor_moves (pipeline, topic, "partition", from_offset, to_offset, kind, actor_kind, actor, reason)
    VALUES (NEW.pipeline, NEW.topic, NEW."partition", OLD.cursor_offset, NEW.cursor_offset, move_kind,
            actor_kind, actor, reason);
    RETURN NEW;
END;
$$;

CREATE TRIGGER partitions_cursor_moves
    BEFORE UPDATE OF cursor_offset ON eo.partitions
    FOR EACH ROW EXECUTE FUNCTION eo.guard_cursor_move();

-- 3. Dead letters: what the dead-letter topic's headers carry, the order they are
-- published in, and their resolution by a replay.
ALTER TABLE eo.dead_letters
    ADD COLUMN error_class       text,
    ADD COLUMN record_timestamp  bigint,        -- the record's Kafka timestamp (ms since epoch)
    ADD COLUMN schema_id         integer,       -- the Schema Registry id, where there is one
    -- Assigned in the transaction that commits the dead letter's epoch, from the pipeline's
    -- counter below: the dead-letter topic receives a pipeline's letters in this order, once.
    ADD COLUMN publish_seq       bigint,
    ADD COLUMN resolved_by_epoch bigint REFERENCES eo.epochs (epoch_id),
    ADD COLUMN resolved_at       timestamptz,
    ADD CHECK ((resolved_by_epoch IS NULL) = (resolved_at IS NULL));

CREATE UNIQUE INDEX dead_letters_publish_order ON eo.dead_letters (pipeline, publish_seq)
    WHERE publish_seq IS NOT NULL;
CREATE INDEX dead_letters_resolved_by ON eo.dead_letters (resolved_by_epoch)
    WHERE resolved_by_epoch IS NOT NULL;

-- The next publish_seq of each pipeline (taken under the pipeline row's lock, so a
-- pipeline's sequence numbers are committed in order).
ALTER TABLE eo.pipelines ADD COLUMN dead_letters_sequenced bigint NOT NULL DEFAULT 0;

-- Dead letters committed before this migration are numbered now, oldest first.
WITH numbered AS (
    SELECT d.pipeline, d.topic, d."partition", d."offset",
           row_number() OVER (PARTITION BY d.pipeline ORDER BY d.epoch_id, d.topic, d."partition", d."offset") - 1 AS seq
      FROM eo.dead_letters d JOIN eo.epochs e USING (epoch_id)
     WHERE e.state = 'COMMITTED'
)
UPDATE eo.dead_letters d SET publish_seq = n.seq
  FROM numbered n
 WHERE (d.pipeline, d.topic, d."partition", d."offset") = (n.pipeline, n.topic, n."partition", n."offset");

UPDATE eo.pipelines p
   SET dead_letters_sequenced = coalesce(
       (SELECT max(publish_seq) + 1 FROM eo.dead_letters d WHERE d.pipeline = p.name), 0);

-- 4. A replay epoch (a backfill epoch over dead letters) writes only the offsets listed here.
CREATE TABLE eo.replay_selections (
    epoch_id     bigint  NOT NULL REFERENCES eo.epochs (epoch_id),
    topic        text    NOT NULL,
    "partition"  integer NOT NULL,
    "offset"     bigint  NOT NULL,
    PRIMARY KEY (epoch_id, topic, "partition", "offset")
);
