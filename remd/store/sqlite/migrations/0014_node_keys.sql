-- remd migration 0014_node_keys: what a memory is about whatever its words.
--
-- remd.text.frames.subject_keys reads a memory's keys: each attribute that holds one value at a
-- time ("f:boss", "f:rent") and a standing habit's slot ("h:saturday morning"). Update detection
-- judges a new memory against the live memories of its keys (remd.write.supersede), inject
-- reaches the live memories of a question's keys. The rows are derived from the text: the
-- engine fills them for the memories saved before this migration, and again whenever what
-- reads them changes (remd.write.keys, remd_meta 'node_keys').

CREATE TABLE node_keys (
    namespace TEXT NOT NULL,
    key       TEXT NOT NULL,
    rid       INTEGER NOT NULL REFERENCES nodes (rid),
    PRIMARY KEY (namespace, key, rid)
) WITHOUT ROWID;
