-- remd migration 0005_tag_log: which tags changed, so readers can cache the tag graph.
--
-- inject walks the same hot tags query after query: their top-M edges, their best live
-- memories, their names and document frequencies. remd/graphcache.py keeps those rows in
-- process and must never serve a stale one. Every write that can change what it caches (a
-- tag's row, an edge leaving it, a memory gaining, losing or changing the tag, a status flip
-- that moves node_tags.live) appends the tag's id here, whoever writes: the save path, REM,
-- rollback, facts, feedback, tag tools, import. A reader evicts the tags logged since its
-- last look (one range scan of this table per inject) and reloads them from SQLite on use.
-- The write path keeps the table short (remd/graphcache.py:prune); a reader that finds the
-- entries after its last look already pruned drops its whole cache.

CREATE TABLE tag_log (
    seq INTEGER PRIMARY KEY,  -- never reused while the table holds a higher one (pruning
    tid INTEGER NOT NULL      -- removes the oldest rows only)
);

CREATE TRIGGER tag_log_tag_update AFTER UPDATE ON tags BEGIN
    INSERT INTO tag_log (tid) VALUES (OLD.tid);
END;

CREATE TRIGGER tag_log_tag_delete AFTER DELETE ON tags BEGIN
    INSERT INTO tag_log (tid) VALUES (OLD.tid);
END;

CREATE TRIGGER tag_log_edge_insert AFTER INSERT ON tag_edges BEGIN
    INSERT INTO tag_log (tid) VALUES (NEW.src);
END;

CREATE TRIGGER tag_log_edge_update AFTER UPDATE ON tag_edges BEGIN
    INSERT INTO tag_log (tid) SELECT NEW.src UNION SELECT OLD.src;
END;

CREATE TRIGGER tag_log_edge_delete AFTER DELETE ON tag_edges BEGIN
    INSERT INTO tag_log (tid) VALUES (OLD.src);
END;

CREATE TRIGGER tag_log_member_insert AFTER INSERT ON node_tags BEGIN
    INSERT INTO tag_log (tid) VALUES (NEW.tid);
END;

CREATE TRIGGER tag_log_member_update AFTER UPDATE ON node_tags BEGIN
    INSERT INTO tag_log (tid) SELECT NEW.tid UNION SELECT OLD.tid;
END;

CREATE TRIGGER tag_log_member_delete AFTER DELETE ON node_tags BEGIN
    INSERT INTO tag_log (tid) VALUES (OLD.tid);
END;
