-- remd migration 0006_node_keys (PostgreSQL): as SQLite's 0014_node_keys. What a memory is
-- about whatever its words (remd.text.frames.subject_keys), filled by the engine (remd.write.keys).

CREATE TABLE node_keys (
    namespace text NOT NULL,
    key       text NOT NULL,
    rid       bigint NOT NULL,
    PRIMARY KEY (namespace, key, rid),
    FOREIGN KEY (namespace, rid) REFERENCES nodes (namespace, rid)
);
