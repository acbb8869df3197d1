-- remd migration 0010_sentence_vectors: one more embedding per sentence of a memory that has
-- several, so a question that matches one sentence of a long memory finds it.
--
-- A memory's vector is the mean of its words; a question about one sentence of a five-sentence
-- turn matches that sentence far better than the whole (on LoCoMo, vector recall@20 goes from
-- .615 to .704 with the best of the whole and its sentences). Rows are written with the
-- memory's own vector (remd/backlog.py) and read like node_vec_bit's: sign bits for the
-- in-process Hamming pre-filter, int8 for the cosine rerank (remd/vectors.py). sid only grows,
-- so an in-process index appends; deleted rows bump vec_generation like node_vec_bit's.

CREATE TABLE sentence_vec (
    sid       INTEGER PRIMARY KEY,   -- only grows: rows are appended in commit order
    rid       INTEGER NOT NULL,      -- nodes.rid of the memory the sentence is in
    namespace TEXT NOT NULL,
    bits      BLOB NOT NULL,         -- 48 bytes, as node_vec_bit.bits
    vec       BLOB NOT NULL          -- int8[384], as node_vec_bit.vec
);
CREATE INDEX sentence_vec_ns ON sentence_vec (namespace, sid, bits);
CREATE INDEX sentence_vec_rid ON sentence_vec (rid);

CREATE TRIGGER sentence_vec_deleted AFTER DELETE ON sentence_vec BEGIN
    UPDATE remd_meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'vec_generation';
END;

-- Memories embedded before this migration have no sentence vectors: the ones that may have
-- several sentences go back to the embedding backlog (their own vector stays in place and
-- searchable meanwhile), so the daemon's backlog batches or `Memory.embed_pending()` add them.
-- A REM synthesis keeps the vector its run gave it.
UPDATE nodes SET embedded = 0
WHERE embedded = 1 AND kind != 'synthesis' AND status IN ('live', 'deprecated')
  AND (instr(content, '. ') > 0 OR instr(content, '? ') > 0 OR instr(content, '! ') > 0
       OR instr(content, '; ') > 0 OR instr(content, char(10)) > 0);
