-- remd migration 0003_vec_generation: tell in-process vector indexes when rows went away.
--
-- remd/vectors.py mirrors node_vec_bit in memory and tops the mirror up by rid. That is only
-- right while rows are appended: a REM rollback deletes synthesis nodes (and their vectors),
-- SQLite may then hand the freed rid to the next memory, and a re-embedded node replaces its
-- row. Any of these bumps vec_generation; an index that sees a new generation reloads in full
-- (rare: rollbacks and re-embeds are not on the hot path, appends do not bump it).

INSERT INTO remd_meta (key, value) VALUES ('vec_generation', '0');

CREATE TRIGGER node_vec_bit_deleted AFTER DELETE ON node_vec_bit BEGIN
    UPDATE remd_meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'vec_generation';
END;

CREATE TRIGGER node_vec_bit_updated AFTER UPDATE ON node_vec_bit BEGIN
    UPDATE remd_meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'vec_generation';
END;

-- INSERT OR REPLACE deletes the old row without firing delete triggers (recursive_triggers is
-- off), so a replace is caught before it happens.
CREATE TRIGGER node_vec_bit_replaced BEFORE INSERT ON node_vec_bit
WHEN EXISTS (SELECT 1 FROM node_vec_bit WHERE rid = NEW.rid) BEGIN
    UPDATE remd_meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'vec_generation';
END;
