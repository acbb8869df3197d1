-- remd migration 0004_node_tags_live: a tag's best *live* memories from one index range scan.
--
-- node_tags_top ordered a tag's memories by weight, but whether each is live is in nodes: inject
-- and memories_by_tag_cluster skipped the deprecated, superseded and forgotten ones row by row.
-- REM never deletes what it folds, so after months of cycles most rows of a common tag belong
-- to deprecated fragments and "at most per_tag_cap rows per tag" became per_tag_cap divided by
-- the live share. node_tags.live mirrors nodes.status = 'live' (kept by the triggers below,
-- whatever writes the status: REM, rollback, facts, forget, import), and node_tags_live_top
-- serves "the top N live memories of a tag" without reading a single dead row.

ALTER TABLE node_tags ADD COLUMN live INTEGER NOT NULL DEFAULT 1;

UPDATE node_tags SET live = 0
WHERE rid IN (SELECT rid FROM nodes WHERE status != 'live');

DROP INDEX node_tags_top;
CREATE INDEX node_tags_live_top ON node_tags (tid, live, weight DESC, rid DESC);

CREATE TRIGGER node_tags_follow_status AFTER UPDATE OF status ON nodes
WHEN (OLD.status = 'live') != (NEW.status = 'live') BEGIN
    UPDATE node_tags SET live = (NEW.status = 'live') WHERE rid = NEW.rid;
END;

-- A node written already dead (an import of a deprecated memory), before or after its tags.
CREATE TRIGGER node_tags_dead_node AFTER INSERT ON nodes
WHEN NEW.status != 'live' BEGIN
    UPDATE node_tags SET live = 0 WHERE rid = NEW.rid;
END;

CREATE TRIGGER node_tags_dead_row AFTER INSERT ON node_tags
WHEN (SELECT status FROM nodes WHERE rid = NEW.rid) != 'live' BEGIN
    UPDATE node_tags SET live = 0 WHERE tid = NEW.tid AND rid = NEW.rid;
END;
