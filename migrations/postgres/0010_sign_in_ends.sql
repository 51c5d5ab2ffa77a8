-- A device sign-in's end in the change feed: the node that removes the grant's row records it in
-- the same statement (op 'sign_in_ended', the failure's code in new_status, empty when the
-- sign-in was authorized), so that the event streams of the nodes that did not poll the grant
-- announce it too.
ALTER TABLE credential_changes DROP CONSTRAINT credential_changes_op_check;
ALTER TABLE credential_changes ADD CONSTRAINT credential_changes_op_check
    CHECK (op IN ('insert', 'update', 'delete', 'sign_in_ended'));

-- Every row of the feed is announced by one trigger on the feed itself, whoever wrote it: the
-- payload's format has one owner. `seq|op|old generation|new generation|old status|new status|
-- failed|node|id` (the id last: it cannot hold `|`).
CREATE FUNCTION tokenvault_announce_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('tokenvault_changes', concat_ws('|', NEW.seq, NEW.op,
        coalesce(NEW.old_generation::TEXT, ''), coalesce(NEW.new_generation::TEXT, ''),
        coalesce(NEW.old_status, ''), coalesce(NEW.new_status, ''), NEW.failed::TEXT,
        coalesce(NEW.node, ''), NEW.credential_id));
    RETURN NULL;
END
$$;
CREATE TRIGGER credential_changes_announce AFTER INSERT ON credential_changes
    FOR EACH ROW EXECUTE FUNCTION tokenvault_announce_change();

-- The credentials' trigger records each change and leaves its announcement to the trigger above.
CREATE OR REPLACE FUNCTION tokenvault_record_change() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    change credential_changes%ROWTYPE;
BEGIN
    change.at := (extract(epoch FROM clock_timestamp()) * 1000)::BIGINT;
    change.node := current_setting('tokenvault.node', true);
    change.failed := false;
    IF TG_OP = 'DELETE' THEN
        change.op := 'delete';
        change.credential_id := OLD.id;
        change.old_generation := OLD.generation;
        change.old_status := OLD.status;
    ELSIF TG_OP = 'INSERT' THEN
        change.op := 'insert';
        change.credential_id := NEW.id;
        change.new_generation := NEW.generation;
        change.new_status := NEW.status;
    ELSE
        change.op := 'update';
        change.credential_id := NEW.id;
        change.old_generation := OLD.generation;
        change.new_generation := NEW.generation;
        change.old_status := OLD.status;
        change.new_status := NEW.status;
        change.failed := NEW.last_error_at IS DISTINCT FROM OLD.last_error_at AND NEW.last_error_at IS NOT NULL;
    END IF;
    INSERT INTO credential_changes (op, credential_id, old_generation, new_generation, old_status, new_status, failed, node, at)
    VALUES (change.op, change.credential_id, change.old_generation, change.new_generation, change.old_status,
            change.new_status, change.failed, change.node, change.at);
    RETURN NULL;
END
$$;
