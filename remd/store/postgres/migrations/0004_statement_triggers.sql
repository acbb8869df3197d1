-- remd migration 0004_statement_triggers (PostgreSQL only): the change logs (tag_log,
-- node_log) fed by one statement per write statement, not one per row: statement-level
-- triggers reading the statement's transition tables. A save tags a memory with ~8 tags and
-- upserts ~50 co-occurrence edges: ~70 log inserts a memory, now a handful. The entries are the
-- same set of (namespace, id) as the row triggers of 0001_initial wrote (duplicates within a
-- statement written once: a reader re-reads an id once either way).
--
-- Updates of nodes and of node_tags keep row triggers, each only when the columns a reader
-- caches change (WHEN: an access-count or judged update runs no trigger at all). A node_tags
-- row tagged onto a memory that is not live is marked not live after the insert (statement
-- level) rather than before it (row level).

DROP TRIGGER tag_log_tag ON tags;
DROP TRIGGER tag_log_edge ON tag_edges;
DROP TRIGGER tag_log_member ON node_tags;
DROP TRIGGER node_log_node ON nodes;
DROP TRIGGER node_log_tag ON node_tags;
DROP TRIGGER node_tags_dead_row ON node_tags;
DROP FUNCTION remd_tag_log();
DROP FUNCTION remd_node_log();
DROP FUNCTION remd_node_tags_dead_row();

-- tag_log: the tag a row is about (tags: tid; tag_edges: src; node_tags: tid)
CREATE FUNCTION remd_tag_log_new() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'tag_edges' THEN
        INSERT INTO tag_log (namespace, tid) SELECT DISTINCT namespace, src FROM new_rows;
    ELSE
        INSERT INTO tag_log (namespace, tid) SELECT DISTINCT namespace, tid FROM new_rows;
    END IF;
    RETURN NULL;
END $$;
CREATE FUNCTION remd_tag_log_old() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'tag_edges' THEN
        INSERT INTO tag_log (namespace, tid) SELECT DISTINCT namespace, src FROM old_rows;
    ELSE
        INSERT INTO tag_log (namespace, tid) SELECT DISTINCT namespace, tid FROM old_rows;
    END IF;
    RETURN NULL;
END $$;
CREATE FUNCTION remd_tag_log_both() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'tag_edges' THEN
        INSERT INTO tag_log (namespace, tid) SELECT namespace, src FROM new_rows
            UNION SELECT namespace, src FROM old_rows;
    ELSE
        INSERT INTO tag_log (namespace, tid) SELECT namespace, tid FROM new_rows
            UNION SELECT namespace, tid FROM old_rows;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER tag_log_tag_update AFTER UPDATE ON tags REFERENCING OLD TABLE AS old_rows
FOR EACH STATEMENT EXECUTE FUNCTION remd_tag_log_old();
CREATE TRIGGER tag_log_tag_delete AFTER DELETE ON tags REFERENCING OLD TABLE AS old_rows
FOR EACH STATEMENT EXECUTE FUNCTION remd_tag_log_old();
CREATE TRIGGER tag_log_edge_insert AFTER INSERT ON tag_edges REFERENCING NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION remd_tag_log_new();
CREATE TRIGGER tag_log_edge_update AFTER UPDATE ON tag_edges
REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION remd_tag_log_both();
CREATE TRIGGER tag_log_edge_delete AFTER DELETE ON tag_edges REFERENCING OLD TABLE AS old_rows
FOR EACH STATEMENT EXECUTE FUNCTION remd_tag_log_old();
CREATE TRIGGER tag_log_member_insert AFTER INSERT ON node_tags REFERENCING NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION remd_tag_log_new();
CREATE TRIGGER tag_log_member_update AFTER UPDATE ON node_tags
REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION remd_tag_log_both();
CREATE TRIGGER tag_log_member_delete AFTER DELETE ON node_tags REFERENCING OLD TABLE AS old_rows
FOR EACH STATEMENT EXECUTE FUNCTION remd_tag_log_old();

-- node_log: inserted ('i') and deleted ('d') nodes; a node whose cached columns or tags
-- changed ('u')
CREATE FUNCTION remd_node_log_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'nodes' THEN
        IF TG_OP = 'INSERT' THEN
            INSERT INTO node_log (namespace, rid, op) SELECT namespace, rid, 'i' FROM new_rows;
        ELSE
            INSERT INTO node_log (namespace, rid, op) SELECT namespace, rid, 'd' FROM old_rows;
        END IF;
    ELSIF TG_OP = 'INSERT' THEN
        INSERT INTO node_log (namespace, rid, op) SELECT DISTINCT namespace, rid, 'u' FROM new_rows;
    ELSE
        INSERT INTO node_log (namespace, rid, op) SELECT DISTINCT namespace, rid, 'u' FROM old_rows;
    END IF;
    RETURN NULL;
END $$;
CREATE FUNCTION remd_node_log_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO node_log (namespace, rid, op) SELECT NEW.namespace, NEW.rid, 'u'
        UNION SELECT OLD.namespace, OLD.rid, 'u';
    RETURN NULL;
END $$;

CREATE TRIGGER node_log_node_insert AFTER INSERT ON nodes REFERENCING NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION remd_node_log_rows();
CREATE TRIGGER node_log_node_delete AFTER DELETE ON nodes REFERENCING OLD TABLE AS old_rows
FOR EACH STATEMENT EXECUTE FUNCTION remd_node_log_rows();
CREATE TRIGGER node_log_node_update AFTER UPDATE ON nodes FOR EACH ROW
WHEN ((OLD.rid, OLD.namespace, OLD.kind, OLD.status, OLD.created_at, OLD.importance,
       OLD.tokens, OLD.valid_until) IS DISTINCT FROM
      (NEW.rid, NEW.namespace, NEW.kind, NEW.status, NEW.created_at, NEW.importance,
       NEW.tokens, NEW.valid_until))
EXECUTE FUNCTION remd_node_log_update();
CREATE TRIGGER node_log_tag_insert AFTER INSERT ON node_tags REFERENCING NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION remd_node_log_rows();
CREATE TRIGGER node_log_tag_delete AFTER DELETE ON node_tags REFERENCING OLD TABLE AS old_rows
FOR EACH STATEMENT EXECUTE FUNCTION remd_node_log_rows();
CREATE TRIGGER node_log_tag_update AFTER UPDATE ON node_tags FOR EACH ROW
WHEN ((OLD.tid, OLD.rid, OLD.weight) IS DISTINCT FROM (NEW.tid, NEW.rid, NEW.weight))
EXECUTE FUNCTION remd_node_log_update();

-- A tag row of a memory that is not live is not live (node_tags_follow_status keeps it so).
CREATE FUNCTION remd_node_tags_dead_rows() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    ns text;
BEGIN
    FOR ns IN SELECT DISTINCT namespace FROM new_rows LOOP  -- each statement names one
        IF EXISTS (SELECT 1 FROM new_rows n JOIN nodes d ON d.namespace = ns AND d.rid = n.rid
                   WHERE n.namespace = ns AND d.status <> 'live' AND n.live <> 0) THEN
            UPDATE node_tags t SET live = 0 FROM new_rows n, nodes d
                WHERE d.namespace = ns AND d.rid = n.rid
                AND n.namespace = ns AND d.status <> 'live' AND t.namespace = ns
                AND t.tid = n.tid AND t.rid = n.rid AND t.live <> 0;
        END IF;
    END LOOP;
    RETURN NULL;
END $$;
CREATE TRIGGER node_tags_dead_rows AFTER INSERT ON node_tags REFERENCING NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION remd_node_tags_dead_rows();
