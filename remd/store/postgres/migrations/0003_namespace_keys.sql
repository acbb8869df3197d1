-- remd migration 0003_namespace_keys (PostgreSQL only; SQLite's keys are unchanged): every
-- primary and unique key of a table that holds memories leads with namespace, so namespace can
-- be the distribution column of a sharded database (Citus: docs/deployment.md, "Distributing
-- with Citus"), whose unique keys must include it. tests/test_pg_keys.py reads the catalog.
--
-- What changes for the engine: a memory's id, and every integer key (rid, tid, eid, sid, seq),
-- is unique within its namespace (the identity sequences still never repeat one, so on one
-- server they stay unique across namespaces too); an import checks ids across namespaces itself
-- (remd/write/exchange.py). Upserts whose SQLite conflict target lacks namespace are sent with
-- it (remd/store/postgres/translate.py). remd_meta and remd_migrations hold no memories: a sharded database
-- keeps them as reference tables.
--
-- Writers are serialised per namespace (remd/store/postgres/locks.py): the change logs' seq grows in
-- commit order within a namespace, which is what a reader of one namespace reads, and their
-- key (namespace, seq) is that order.

-- nodes, tags, packs and rem_runs keep their UNIQUE (namespace, ...) key, which the foreign keys
-- pointing at them hold: it is their key now, their single-column primary key dropped (a
-- new primary key would mean dropping and re-checking those foreign keys).
ALTER TABLE nodes DROP CONSTRAINT nodes_pkey, DROP CONSTRAINT nodes_id_key,
    ADD CONSTRAINT nodes_namespace_id_key UNIQUE (namespace, id);
ALTER TABLE tags DROP CONSTRAINT tags_pkey;
ALTER TABLE packs DROP CONSTRAINT packs_pkey;
ALTER TABLE rem_runs DROP CONSTRAINT rem_runs_pkey;

ALTER TABLE node_tags DROP CONSTRAINT node_tags_pkey, ADD PRIMARY KEY (namespace, tid, rid);
ALTER TABLE tag_edges DROP CONSTRAINT tag_edges_pkey, ADD PRIMARY KEY (namespace, src, dst);
ALTER TABLE tag_parents DROP CONSTRAINT tag_parents_pkey,
    ADD PRIMARY KEY (namespace, child, parent);
ALTER TABLE edges DROP CONSTRAINT edges_pkey, ADD PRIMARY KEY (namespace, eid);
ALTER TABLE node_vec_bit DROP CONSTRAINT node_vec_bit_pkey, ADD PRIMARY KEY (namespace, rid);
ALTER TABLE sentence_vec DROP CONSTRAINT sentence_vec_pkey, ADD PRIMARY KEY (namespace, sid);
ALTER TABLE node_terms_len DROP CONSTRAINT node_terms_len_pkey,
    ADD PRIMARY KEY (namespace, rid);
ALTER TABLE pack_items DROP CONSTRAINT pack_items_pkey, ADD PRIMARY KEY (namespace, pack_id, rank);
ALTER TABLE feedback DROP CONSTRAINT feedback_pkey, ADD PRIMARY KEY (namespace, pack_id);
ALTER TABLE rem_clusters DROP CONSTRAINT rem_clusters_pkey,
    ADD PRIMARY KEY (namespace, run_id, cluster_no);
ALTER TABLE tag_log DROP CONSTRAINT tag_log_pkey, ADD PRIMARY KEY (namespace, seq);
DROP INDEX tag_log_ns;  -- the key is that index now
ALTER TABLE node_log DROP CONSTRAINT node_log_pkey, ADD PRIMARY KEY (namespace, seq);
DROP INDEX node_log_ns;
