-- remd schema (migration 0001_initial). The single source of the schema: the store applies it
-- to a new file inside the same transaction that records the migration. Later changes are
-- further named migrations (see remd/store.py), never edits to tables an old file already has.
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
    rem_run       TEXT           -- the REM run that created this (synthesis) node
);
CREATE INDEX nodes_ns_status_rid ON nodes (namespace, status, rid);
CREATE INDEX nodes_ns_created ON nodes (namespace, created_at);
CREATE INDEX nodes_ns_fact ON nodes (namespace, fact_key, status) WHERE fact_key IS NOT NULL;
CREATE INDEX nodes_pending_embed ON nodes (namespace, rid) WHERE embedded = 0;
CREATE INDEX nodes_deprecated_by ON nodes (deprecated_by) WHERE deprecated_by IS NOT NULL;
CREATE INDEX nodes_rem_run ON nodes (rem_run) WHERE rem_run IS NOT NULL;

-- Tags are first-class nodes of the tag graph (HAS_TAG is the node_tags relation).
CREATE TABLE tags (
    tid        INTEGER PRIMARY KEY,
    namespace  TEXT NOT NULL,
    name       TEXT NOT NULL,
    df         INTEGER NOT NULL DEFAULT 0,   -- memories carrying the tag (for IDF)
    created_at REAL NOT NULL,
    UNIQUE (namespace, name)
);

CREATE TABLE node_tags (
    tid    INTEGER NOT NULL REFERENCES tags (tid),
    rid    INTEGER NOT NULL REFERENCES nodes (rid),
    weight REAL NOT NULL DEFAULT 1.0,
    PRIMARY KEY (tid, rid)
) WITHOUT ROWID;
CREATE INDEX node_tags_rid ON node_tags (rid);

-- Co-occurrence edges between tags, stored in both directions so that the top-M edges of a tag
-- come from one index range scan (tag_edges_top), whatever the tag's degree.
CREATE TABLE tag_edges (
    src    INTEGER NOT NULL REFERENCES tags (tid),
    dst    INTEGER NOT NULL REFERENCES tags (tid),
    count  INTEGER NOT NULL DEFAULT 0,   -- memories in which both tags occur
    weight REAL NOT NULL,                -- propagation weight in (0, 1], tuned by feedback (EMA)
    PRIMARY KEY (src, dst)
) WITHOUT ROWID;
CREATE INDEX tag_edges_top ON tag_edges (src, weight DESC);

-- IS_SUBTYPE_OF hierarchy between tags (kept acyclic by the code that inserts).
CREATE TABLE tag_parents (
    child  INTEGER NOT NULL REFERENCES tags (tid),
    parent INTEGER NOT NULL REFERENCES tags (tid),
    PRIMARY KEY (child, parent)
) WITHOUT ROWID;
CREATE INDEX tag_parents_parent ON tag_parents (parent);

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

-- One 384-d embedding per node, partitioned by namespace; rowid = nodes.rid.
CREATE VIRTUAL TABLE node_vec USING vec0 (
    namespace TEXT PARTITION KEY,
    embedding FLOAT[384] distance_metric=cosine
);

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
    PRIMARY KEY (pack_id, rank)
) WITHOUT ROWID;

CREATE TABLE feedback (
    pack_id  TEXT PRIMARY KEY REFERENCES packs (pack_id),
    accepted REAL NOT NULL,     -- 1.0 accept, 0.0 reject, or a graded value in between
    at       REAL NOT NULL
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
    error          TEXT
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
    PRIMARY KEY (run_id, cluster_no)
) WITHOUT ROWID;
