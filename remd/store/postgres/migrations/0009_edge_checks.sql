-- remd migration 0009_edge_checks (PostgreSQL): the co-occurrence edges without foreign keys.
--
-- A save upserts ~50 tag_edges rows a memory, and each row's two foreign keys were checked by
-- PostgreSQL's own triggers against tags: ~100 trigger queries a memory, most of what a save
-- cost the server. Every edge is written by one writer (remd.write.graph.GraphWriter), between
-- tags it has just found or created in the same transaction, and the tag tools delete a tag's
-- edges before the tag; tests/test_graph_writer.py checks after every kind of write that no
-- edge names a tag that is not there. SQLite keeps its checks (in-process, cheap).

ALTER TABLE tag_edges DROP CONSTRAINT IF EXISTS tag_edges_namespace_src_fkey,
                      DROP CONSTRAINT IF EXISTS tag_edges_namespace_dst_fkey;
