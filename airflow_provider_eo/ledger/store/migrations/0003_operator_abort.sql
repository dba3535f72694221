-- The state machine's operator-only move enforced by the database too (docs/ledger.md):
-- WRITTEN -> ABORTED throws away data already in HBase, so the trigger accepts it only in a
-- transaction that marked itself an operator action (SET LOCAL eo.operator_action = 'on'),
-- which the ledger's abort does only when the operator allowed it (--allow-written). The
-- moves are those of airflow_provider_eo/ledger/states.py TRANSITIONS
-- (tests/integration/test_transition_table.py proves they agree).
CREATE OR REPLACE FUNCTION eo.check_epoch_transition() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.state = OLD.state THEN
        RETURN NEW;
    END IF;
    IF (OLD.state, NEW.state) IN (('RESERVED', 'WRITTEN'), ('WRITTEN', 'COMMITTED'),
                                  ('RESERVED', 'ABORTED')) THEN
        RETURN NEW;
    END IF;
    IF (OLD.state, NEW.state) = ('WRITTEN', 'ABORTED') THEN
        IF current_setting('eo.operator_action', true) = 'on' THEN
            RETURN NEW;
        END IF;
        RAISE EXCEPTION 'epoch transition % -> % (epoch %) needs an operator action', OLD.state,
            NEW.state, OLD.epoch_id USING ERRCODE = 'check_violation';
    END IF;
    RAISE EXCEPTION 'illegal epoch transition % -> % (epoch %)', OLD.state, NEW.state, OLD.epoch_id
        USING ERRCODE = 'check_violation';
END;
$$;
