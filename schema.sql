-- remd schema: the one schema of a new file, as every migration in remd/migrations/ leaves it.
-- The store applies it to a new file and records every migration as applied, in one
-- transaction; an older file gets the migrations it lacks, by name (remd/store.py). A change is
-- a new migration AND the same change here (tests/test_store.py checks that a new file and a
-- file migrated from 0001_initial have the same schema).
--
-- Times are POSIX seconds (UTC) as REAL. Public ids are TEXT; `rid` is the integer key that
-- joins node_tags and the vec0 tables (vec0 rows are keyed by integer rowid).

CREATE TABLE remd_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE remd_migrations (
    name       TEXT PRIMARY KEY,
    applied_at TEXT NOT NULL
);

CREATE TABLE nodes (
    rid           INTEGER PRIMARY KEY,
    id            TEXT NOT NULL UNIQUE,
    namespace     TEXT NOT NULL,
    kind          TEXT NOT NULL CHECK (kind IN ('episodic', 'fact', 'synthesis')),
    content       TEXT NOT NULL,
    source        TEXT,
    status        TEXT NOT NULL DEFAULT 'live'
                  CHECK (status IN ('live', 'deprecated', 'superseded', 'forgotten')),
    created_at    REAL NOT NULL,
    last_access   REAL NOT NULL,
    access_count  INTEGER NOT NULL DEFAULT 0,
    confidence    REAL NOT NULL DEFAULT 0.5,
    importance    REAL NOT NULL DEFAULT 0.5,
    tokens        INTEGER NOT NULL,
    valid_from    REAL,
    valid_until   REAL,
    deprecated_by TEXT,          -- synthesis node id that absorbed this one (REM)
    fact_key      TEXT,          -- "subject/attribute" for fact nodes
    fact_value    TEXT,
    embedded      INTEGER NOT NULL DEFAULT 0,  -- 0 pending, 1 stored, 2 failed (see embed backlog)
    rem_run       TEXT,          -- the REM run that created this (synthesis) node
    judged        INTEGER NOT NULL DEFAULT 1, -- 0: update detection pending (0012)
    clauses       TEXT           -- a synthesis's dated clauses, JSON (remd.text.clauses, 0015)
);
CREATE INDEX nodes_ns_status_rid ON nodes (namespace, status, rid);
CREATE INDEX nodes_ns_created ON nodes (namespace, created_at);
CREATE INDEX nodes_ns_fact ON nodes (namespace, fact_key, status) WHERE fact_key IS NOT NULL;
CREATE INDEX nodes_pending_embed ON nodes (namespace, rid) WHERE embedded = 0;
CREATE INDEX nodes_deprecated_by ON nodes (deprecated_by) WHERE deprecated_by IS NOT NULL;
CREATE INDEX nodes_rem_run ON nodes (rem_run) WHERE rem_run IS NOT NULL;
-- The idle trigger: each namespace's last save by a person or an agent (not REM's own nodes).
CREATE INDEX nodes_ns_saved ON nodes (namespace, created_at) WHERE rem_run IS NULL;
CREATE INDEX nodes_unjudged ON nodes (namespace, rid) WHERE judged = 0;

-- Tags are first-class nodes of the tag graph (HAS_TAG is the node_tags relation).
CREATE TABLE tags (
    tid        INTEGER PRIMARY KEY,
    namespace  TEXT NOT NULL,
    name       TEXT NOT NULL,
    df         INTEGER NOT NULL DEFAULT 0,   -- memories carrying the tag (for IDF)
    created_at REAL NOT NULL,
    UNIQUE (namespace, name)
);

-- live mirrors nodes.status = 'live' (triggers below), so a tag's best live memories come from
-- one range scan of node_tags_live_top however many dead rows the tag has (0004).
CREATE TABLE node_tags (
    rid    INTEGER NOT NULL REFERENCES nodes (rid),
    tid    INTEGER NOT NULL REFERENCES tags (tid),
    weight REAL NOT NULL DEFAULT 1.0,
    live   INTEGER NOT NULL DEFAULT 1,
    namespace TEXT NOT NULL DEFAULT '',  -- its memory's and tag's (0011)
    PRIMARY KEY (rid, tid)               -- a memory's tags: a range of the table (0016)
) WITHOUT ROWID;
CREATE INDEX node_tags_live_top ON node_tags (namespace, tid, live, weight DESC, rid DESC);

-- What a memory is about whatever its words (remd.text.frames.subject_keys): an attribute that
-- holds one value at a time ("f:boss") or a standing habit's slot ("h:saturday morning"). Update
-- detection judges a new memory against the live ones of its keys, inject reaches the live ones
-- of a question's keys. Derived data, rebuilt when its version changes (remd.write.keys, 0014).
CREATE TABLE node_keys (
    namespace TEXT NOT NULL,
    key       TEXT NOT NULL,
    rid       INTEGER NOT NULL REFERENCES nodes (rid),
    PRIMARY KEY (namespace, key, rid)
) WITHOUT ROWID;

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

-- Co-occurrence edges between tags, stored in both directions so that the top-M edges of a tag
-- come from one index range scan (tag_edges_top), whatever the tag's degree.
CREATE TABLE tag_edges (
    src    INTEGER NOT NULL REFERENCES tags (tid),
    dst    INTEGER NOT NULL REFERENCES tags (tid),
    count  INTEGER NOT NULL DEFAULT 0,   -- memories in which both tags occur
    weight REAL NOT NULL,                -- propagation weight in (0, 1], tuned by feedback (EMA)
    namespace TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (src, dst)
) WITHOUT ROWID;
-- Not (namespace, src, ...): its bytes would come on every edge, and a tag's edges are one
-- namespace's (the table row checks it).
CREATE INDEX tag_edges_top ON tag_edges (src, weight DESC);

-- IS_SUBTYPE_OF hierarchy between tags (kept acyclic by the code that inserts).
CREATE TABLE tag_parents (
    child  INTEGER NOT NULL REFERENCES tags (tid),
    parent INTEGER NOT NULL REFERENCES tags (tid),
    namespace TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (child, parent)
) WITHOUT ROWID;
CREATE INDEX tag_parents_parent ON tag_parents (namespace, parent);

-- Typed memory-to-memory edges. dst may dangle ([[memory:ID]] to an id not saved yet).
-- REM never rewrites an edge in place: re-pointed edges are retired (live = 0, retired_by =
-- run) and new ones inserted (rem_run = run), so a rollback restores them exactly.
CREATE TABLE edges (
    eid        INTEGER PRIMARY KEY,
    namespace  TEXT NOT NULL,
    src        TEXT NOT NULL,
    dst        TEXT NOT NULL,
    type       TEXT NOT NULL CHECK (type IN ('SUPERSEDES', 'EXTENDS', 'CONTRADICTS', 'DEPENDS_ON',
                                             'DERIVED_FROM', 'MENTIONS', 'HAS_TAG',
                                             'IS_SUBTYPE_OF')),
    weight     REAL NOT NULL DEFAULT 1.0,
    context    TEXT,
    created_at REAL NOT NULL,
    live       INTEGER NOT NULL DEFAULT 1,
    rem_run    TEXT,
    retired_by TEXT
);
CREATE INDEX edges_src ON edges (src, type);
CREATE INDEX edges_dst ON edges (dst, type);
CREATE INDEX edges_ns_type ON edges (namespace, type) WHERE live = 1;
CREATE INDEX edges_rem_run ON edges (rem_run) WHERE rem_run IS NOT NULL;
CREATE INDEX edges_retired_by ON edges (retired_by) WHERE retired_by IS NOT NULL;

-- One 384-d embedding per node, stored once (0002, 0008): the sign bits for inject's in-process
-- Hamming pre-filter, the int8 vector (each scaled to ±127, remd/vectors.py to_int8) for the
-- cosine rerank and for sqlite-vec's vec_distance_cosine() (nearest(exact=True)). No space is
-- taken per namespace.
CREATE TABLE node_vec_bit (
    rid       INTEGER PRIMARY KEY,   -- nodes.rid
    namespace TEXT NOT NULL,
    bits      BLOB NOT NULL,         -- 48 bytes: bit i (LSB first) set when dimension i > 0
    vec       BLOB NOT NULL          -- int8[384]
);
-- Covering index: the in-process index loads (rid, bits) of a namespace without touching vec.
CREATE INDEX node_vec_bit_ns ON node_vec_bit (namespace, rid, bits);

-- Deleted or replaced vectors bump their namespace's generation, and that namespace's
-- in-process bit indexes reload (0003, per namespace since 0016).
CREATE TABLE vec_generations (
    namespace  TEXT PRIMARY KEY,
    generation INTEGER NOT NULL
) WITHOUT ROWID;

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

-- One more embedding per sentence of a memory that has several (0010): a question that
-- matches one sentence of a long memory finds it. Read like node_vec_bit; sid only grows.
CREATE TABLE sentence_vec (
    sid       INTEGER PRIMARY KEY,
    rid       INTEGER NOT NULL,      -- nodes.rid
    namespace TEXT NOT NULL,
    bits      BLOB NOT NULL,
    vec       BLOB NOT NULL          -- int8[384]
);
CREATE INDEX sentence_vec_ns ON sentence_vec (namespace, sid, bits);
CREATE INDEX sentence_vec_rid ON sentence_vec (rid);

CREATE TRIGGER sentence_vec_deleted AFTER DELETE ON sentence_vec BEGIN
    INSERT INTO vec_generations (namespace, generation) VALUES (OLD.namespace, 1)
    ON CONFLICT (namespace) DO UPDATE SET generation = generation + 1;
END;

-- Lexical index over node content (external content: rows are written by the store).
CREATE VIRTUAL TABLE node_fts USING fts5 (
    content,
    content = 'nodes',
    content_rowid = 'rid',
    tokenize = 'porter unicode61 remove_diacritics 2'
);

-- Every access (inject) of a node; importance reads a rolling 30-day window of it.
CREATE TABLE access_log (
    rid       INTEGER NOT NULL,
    namespace TEXT NOT NULL,
    at        REAL NOT NULL,
    pack_id   TEXT
);
CREATE INDEX access_log_ns_at ON access_log (namespace, at);

CREATE TABLE packs (
    pack_id     TEXT PRIMARY KEY,
    namespace   TEXT NOT NULL,
    query       TEXT NOT NULL,
    budget      INTEGER NOT NULL,
    tokens_used INTEGER NOT NULL,
    created_at  REAL NOT NULL
);
CREATE INDEX packs_ns_created ON packs (namespace, created_at);

CREATE TABLE pack_items (
    pack_id    TEXT NOT NULL REFERENCES packs (pack_id),
    rank       INTEGER NOT NULL,
    rid        INTEGER NOT NULL,
    score      REAL NOT NULL,
    tokens     INTEGER NOT NULL,
    importance REAL NOT NULL,
    path       TEXT NOT NULL,   -- JSON list of tag ids, seed first, that activated the item
    namespace TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (pack_id, rank)
) WITHOUT ROWID;

CREATE TABLE feedback (
    pack_id  TEXT PRIMARY KEY REFERENCES packs (pack_id),
    accepted REAL NOT NULL,     -- 1.0 accept, 0.0 reject, or a graded value in between
    at       REAL NOT NULL,
    namespace TEXT NOT NULL DEFAULT ''
);

CREATE TABLE rem_runs (
    run_id         TEXT PRIMARY KEY,
    namespace      TEXT NOT NULL,
    status         TEXT NOT NULL
                   CHECK (status IN ('running', 'completed', 'interrupted', 'failed',
                                     'rolled_back')),
    started_at     REAL NOT NULL,
    finished_at    REAL,
    flagged        INTEGER NOT NULL DEFAULT 0,
    clusters       INTEGER NOT NULL DEFAULT 0,
    synthesised    INTEGER NOT NULL DEFAULT 0,
    skipped        INTEGER NOT NULL DEFAULT 0,
    live_before    INTEGER NOT NULL DEFAULT 0,
    live_after     INTEGER NOT NULL DEFAULT 0,
    synthesiser    TEXT NOT NULL,
    model          TEXT NOT NULL,
    prompt_version TEXT NOT NULL,
    timings        TEXT NOT NULL DEFAULT '{}',   -- JSON: seconds per phase
    trigger        TEXT,
    error          TEXT,
    held           INTEGER NOT NULL DEFAULT 0,   -- memories left out for a hold (0009)
    unflagged      TEXT,         -- JSON: why live memories were not flagged (0012)
    usefulness     TEXT          -- JSON: recent questions asked again after the run (0015)
);
CREATE INDEX rem_runs_ns_started ON rem_runs (namespace, started_at);

-- One row per cluster a run handled; members and what they were before, for exact rollback.
CREATE TABLE rem_clusters (
    run_id       TEXT NOT NULL REFERENCES rem_runs (run_id),
    cluster_no   INTEGER NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('committed', 'skipped')),
    synthesis_id TEXT,
    members      TEXT NOT NULL,   -- JSON list of {"id", "status", "importance", "deprecated_by"}
    reason       TEXT,
    namespace TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (run_id, cluster_no)
) WITHOUT ROWID;

-- A rollback holds each member of the run's committed clusters back from later runs for
-- rem.hold_days, or until the member changes (its fingerprint differs; remd/holds.py) (0009).
CREATE TABLE rem_holds (
    namespace   TEXT NOT NULL,
    node_id     TEXT NOT NULL,
    run_id      TEXT NOT NULL,   -- the rolled-back run
    held_at     REAL NOT NULL,
    held_until  REAL NOT NULL,
    fingerprint TEXT NOT NULL,
    PRIMARY KEY (namespace, node_id)
) WITHOUT ROWID;

-- Change logs, filled by triggers whoever writes: in-process caches re-read what changed since
-- their last look, in the reader's own snapshot (remd/graphcache.py, remd/nodemirror.py,
-- remd/lexical.py). Pruned by every write transaction (remd/store.py).

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
