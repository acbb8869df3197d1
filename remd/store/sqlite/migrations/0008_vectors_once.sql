-- remd migration 0008_vectors_once: every vector stored once, and no space taken per namespace.
--
-- node_vec (vec0, partitioned by namespace) allocated a chunk of 1,024 float vectors (1.5 MB)
-- for every namespace that had one vector, and held every vector a second time beside
-- node_vec_bit.vec. node_vec_bit (migration 0002) is now the one store of vectors: the sign
-- bits for the in-process Hamming pre-filter, and the vector for the cosine rerank and for
-- sqlite-vec's vec_distance_cosine() (nearest(exact=True)). Rows only vec0 held (none are
-- expected: every writer wrote both tables in one transaction) are copied over first. After
-- this SQL, remd/store.py rewrites every vector in its int8 form (384 bytes, not 1,536).

INSERT INTO node_vec_bit (rid, namespace, bits, vec)
    SELECT rowid, namespace, vec_quantize_binary(embedding), embedding FROM node_vec
    WHERE rowid NOT IN (SELECT rid FROM node_vec_bit);

DROP TABLE node_vec;

-- The idle trigger reads each namespace's last save by a person or an agent (not REM's own
-- nodes) at every daemon tick: from this index alone.
CREATE INDEX nodes_ns_saved ON nodes (namespace, created_at) WHERE rem_run IS NULL;
