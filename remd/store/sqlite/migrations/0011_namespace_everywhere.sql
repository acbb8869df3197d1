-- 0011: namespace on every table that holds memories and lacked it (node_tags, tag_edges,
-- tag_parents, pack_items, feedback, rem_clusters), copied from the row each belongs to
-- (memory, tag, pack, run), and in the indexes that read them by namespace, so that every
-- statement on them names one namespace: on PostgreSQL it is the distribution column of a
-- sharded database (tests/pg_routing.py checks the statements); SQLite has the same tables
-- and statements. The triggers keeping node_tags.live are rewritten to name it too. (The
-- change logs carry it on PostgreSQL only: remd/changelog.py.)

DROP TRIGGER node_tags_follow_status;
DROP TRIGGER node_tags_dead_node;
DROP TRIGGER node_tags_dead_row;

ALTER TABLE node_tags ADD COLUMN namespace TEXT NOT NULL DEFAULT '';
UPDATE node_tags SET namespace = (SELECT namespace FROM nodes WHERE nodes.rid = node_tags.rid);
ALTER TABLE tag_edges ADD COLUMN namespace TEXT NOT NULL DEFAULT '';
UPDATE tag_edges SET namespace = (SELECT namespace FROM tags WHERE tags.tid = tag_edges.src);
ALTER TABLE tag_parents ADD COLUMN namespace TEXT NOT NULL DEFAULT '';
UPDATE tag_parents SET namespace = (SELECT namespace FROM tags WHERE tags.tid = tag_parents.child);
ALTER TABLE pack_items ADD COLUMN namespace TEXT NOT NULL DEFAULT '';
UPDATE pack_items SET namespace = (SELECT namespace FROM packs WHERE packs.pack_id = pack_items.pack_id);
ALTER TABLE feedback ADD COLUMN namespace TEXT NOT NULL DEFAULT '';
UPDATE feedback SET namespace = (SELECT namespace FROM packs WHERE packs.pack_id = feedback.pack_id);
ALTER TABLE rem_clusters ADD COLUMN namespace TEXT NOT NULL DEFAULT '';
UPDATE rem_clusters SET namespace = (SELECT namespace FROM rem_runs WHERE rem_runs.run_id = rem_clusters.run_id);

DROP INDEX node_tags_live_top;
CREATE INDEX node_tags_live_top ON node_tags (namespace, tid, live, weight DESC, rid DESC);
DROP INDEX node_tags_rid_cover;
CREATE INDEX node_tags_rid_cover ON node_tags (namespace, rid, tid, weight);
DROP INDEX tag_parents_parent;
CREATE INDEX tag_parents_parent ON tag_parents (namespace, parent);

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
