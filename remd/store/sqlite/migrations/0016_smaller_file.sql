-- remd migration 0016_smaller_file: the same reads from fewer copies of the rows (issue 42).
--
-- 1. node_tags keyed (rid, tid). A memory's tags are a range of the table itself, so
--    node_tags_rid_cover (namespace, rid, tid, weight), a third copy of every row, goes: the
--    reads by memory (inject's candidates' tags, forget, the live-flag triggers) seek the
--    primary key, and the reads by tag keep node_tags_live_top, which covers them. At 1M
--    memories the index was about 7% of the file.
-- 2. The vectors' generation per namespace (vec_generations), not one remd_meta row for the
--    file: a replaced or deleted vector in one namespace no longer reloads every other
--    namespace's bit index, and writers of different namespaces no longer update one row.

DROP TRIGGER node_tags_follow_status;
DROP TRIGGER node_tags_dead_node;
DROP TRIGGER node_tags_dead_row;
DROP TRIGGER tag_log_member_insert;
DROP TRIGGER tag_log_member_update;
DROP TRIGGER tag_log_member_delete;
DROP TRIGGER node_log_tag_insert;
DROP TRIGGER node_log_tag_update;
DROP TRIGGER node_log_tag_delete;

CREATE TABLE node_tags_by_rid (
    rid    INTEGER NOT NULL REFERENCES nodes (rid),
    tid    INTEGER NOT NULL REFERENCES tags (tid),
    weight REAL NOT NULL DEFAULT 1.0,
    live   INTEGER NOT NULL DEFAULT 1,
    namespace TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (rid, tid)
) WITHOUT ROWID;
INSERT INTO node_tags_by_rid (rid, tid, weight, live, namespace)
    SELECT rid, tid, weight, live, namespace FROM node_tags ORDER BY rid, tid;
DROP TABLE node_tags;
ALTER TABLE node_tags_by_rid RENAME TO node_tags;
CREATE INDEX node_tags_live_top ON node_tags (namespace, tid, live, weight DESC, rid DESC);

CREATE TRIGGER node_tags_follow_status AFTER UPDATE OF status ON nodes
WHEN (OLD.status = 'live') != (NEW.status = 'live') BEGIN
    UPDATE node_tags SET live = (NEW.status = 'live') WHERE namespace = NEW.namespace AND rid = NEW.rid;
END;

CREATE TRIGGER node_tags_dead_node AFTER INSERT ON nodes
WHEN NEW.status != 'live' BEGIN
    UPDATE node_tags SET live = 0 WHERE namespace = NEW.namespace AND rid = NEW.rid;
END;

CREATE TRIGGER node_tags_dead_row AFTER INSERT ON node_tags
WHEN (SELECT status FROM nodes WHERE rid = NEW.rid) != 'live' BEGIN
    UPDATE node_tags SET live = 0 WHERE namespace = NEW.namespace AND tid = NEW.tid AND rid = NEW.rid;
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

CREATE TRIGGER node_log_tag_insert AFTER INSERT ON node_tags BEGIN
    INSERT INTO node_log (rid, op) VALUES (NEW.rid, 'u');
END;

CREATE TRIGGER node_log_tag_update AFTER UPDATE OF tid, rid, weight ON node_tags BEGIN
    INSERT INTO node_log (rid, op) SELECT NEW.rid, 'u' UNION SELECT OLD.rid, 'u';
END;

CREATE TRIGGER node_log_tag_delete AFTER DELETE ON node_tags BEGIN
    INSERT INTO node_log (rid, op) VALUES (OLD.rid, 'u');
END;

CREATE TABLE vec_generations (
    namespace  TEXT PRIMARY KEY,
    generation INTEGER NOT NULL
) WITHOUT ROWID;

DROP TRIGGER node_vec_bit_deleted;
DROP TRIGGER node_vec_bit_updated;
DROP TRIGGER node_vec_bit_replaced;
DROP TRIGGER sentence_vec_deleted;
DELETE FROM remd_meta WHERE key = 'vec_generation';

CREATE TRIGGER node_vec_bit_deleted AFTER DELETE ON node_vec_bit BEGIN
    INSERT INTO vec_generations (namespace, generation) VALUES (OLD.namespace, 1)
    ON CONFLICT (namespace) DO UPDATE SET generation = generation + 1;
END;

CREATE TRIGGER node_vec_bit_updated AFTER UPDATE ON node_vec_bit BEGIN
    INSERT INTO vec_generations (namespace, generation)
        SELECT OLD.namespace, 1 UNION SELECT NEW.namespace, 1
    ON CONFLICT (namespace) DO UPDATE SET generation = generation + 1;
END;

CREATE TRIGGER node_vec_bit_replaced BEFORE INSERT ON node_vec_bit
WHEN EXISTS (SELECT 1 FROM node_vec_bit WHERE rid = NEW.rid) BEGIN
    INSERT INTO vec_generations (namespace, generation)
        SELECT namespace, 1 FROM node_vec_bit WHERE rid = NEW.rid
        UNION SELECT NEW.namespace, 1
    ON CONFLICT (namespace) DO UPDATE SET generation = generation + 1;
END;

CREATE TRIGGER sentence_vec_deleted AFTER DELETE ON sentence_vec BEGIN
    INSERT INTO vec_generations (namespace, generation) VALUES (OLD.namespace, 1)
    ON CONFLICT (namespace) DO UPDATE SET generation = generation + 1;
END;
