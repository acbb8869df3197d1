-- remd migration 0002_vec_bit: what inject needs to stay fast whatever the namespace's size.
--
-- 1. node_vec_bit: every embedding again, as 384 sign bits (48 bytes) for a Hamming pre-filter,
--    plus the float32 vector for the exact cosine rerank of the few candidates that survive it.
--    It is a plain table, not vec0, because two reads are measured to matter here (100k rows,
--    this 2-core machine): vec0's bit[384] scan takes ~13 ms for a top-128 (the in-process
--    numpy mirror rebuilt from this table takes ~0.7 ms), and vec0 reads single vectors by
--    rowid at ~0.2 ms each (its 1.5 MB chunk blobs are walked page by page), so a 128-row rerank
--    from node_vec would cost ~28 ms. A rowid table answers both with B-tree seeks.
--    node_vec stays the vec0 source of truth for the other readers (nearest, REM clustering).
-- 2. node_tags_top: the best memories of a tag (highest tag weight, newest first) from one index
--    range scan, so inject reads at most per_tag_cap of them however common the tag is.

CREATE TABLE node_vec_bit (
    rid       INTEGER PRIMARY KEY,   -- nodes.rid (= node_vec rowid)
    namespace TEXT NOT NULL,
    bits      BLOB NOT NULL,         -- 48 bytes: bit i (LSB first) set when dimension i > 0
    vec       BLOB NOT NULL          -- float32[384], the vector node_vec holds
);
-- Covering index: the in-process index loads (rid, bits) of a namespace without touching vec.
CREATE INDEX node_vec_bit_ns ON node_vec_bit (namespace, rid, bits);

INSERT INTO node_vec_bit (rid, namespace, bits, vec)
    SELECT rowid, namespace, vec_quantize_binary(embedding), embedding FROM node_vec;

CREATE INDEX node_tags_top ON node_tags (tid, weight DESC, rid DESC);
