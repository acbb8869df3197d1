-- remd migration 0006_node_log: which memories changed, so readers can mirror the nodes table.
--
-- inject scores a few hundred candidates per query from their status, expiry, save time,
-- importance, kind and token count, and looks at the memories saved just before and after the
-- best ones, with their tags. remd/nodemirror.py keeps those columns of a namespace in process
-- (numpy arrays in rid order, and the tags of recently used memories) and must never serve a
-- stale value: every new row, every change to a mirrored column, every change to a memory's
-- tags and every deletion appends the rid here, whoever writes (save, facts, REM, rollback,
-- forget, importance, import, tag merges). Readers apply the entries logged since their last
-- look, in their own read snapshot. Pruned like tag_log (remd/store.py).

CREATE TABLE node_log (
    seq INTEGER PRIMARY KEY,
    rid INTEGER NOT NULL,
    op  TEXT NOT NULL  -- 'i' inserted, 'u' updated (or its tags changed), 'd' deleted: the
);                     -- FTS5 index changes only with 'i' and 'd' (content is never updated)

CREATE TRIGGER node_log_insert AFTER INSERT ON nodes BEGIN
    INSERT INTO node_log (rid, op) VALUES (NEW.rid, 'i');
END;

CREATE TRIGGER node_log_update AFTER UPDATE OF
    rid, namespace, kind, status, created_at, importance, tokens, valid_until ON nodes
WHEN OLD.rid IS NOT NEW.rid OR OLD.namespace IS NOT NEW.namespace OR OLD.kind IS NOT NEW.kind
    OR OLD.status IS NOT NEW.status OR OLD.created_at IS NOT NEW.created_at
    OR OLD.importance IS NOT NEW.importance OR OLD.tokens IS NOT NEW.tokens
    OR OLD.valid_until IS NOT NEW.valid_until
BEGIN
    INSERT INTO node_log (rid, op) SELECT NEW.rid, 'u' UNION SELECT OLD.rid, 'u';
END;

CREATE TRIGGER node_log_delete AFTER DELETE ON nodes BEGIN
    INSERT INTO node_log (rid, op) VALUES (OLD.rid, 'd');
END;

CREATE TRIGGER node_log_tag_insert AFTER INSERT ON node_tags BEGIN
    INSERT INTO node_log (rid, op) VALUES (NEW.rid, 'u');
END;

CREATE TRIGGER node_log_tag_update AFTER UPDATE OF tid, rid, weight ON node_tags BEGIN
    INSERT INTO node_log (rid, op) SELECT NEW.rid, 'u' UNION SELECT OLD.rid, 'u';
END;

CREATE TRIGGER node_log_tag_delete AFTER DELETE ON node_tags BEGIN
    INSERT INTO node_log (rid, op) VALUES (OLD.rid, 'u');
END;
