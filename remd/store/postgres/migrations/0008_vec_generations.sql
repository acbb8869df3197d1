-- remd migration 0008_vec_generations (PostgreSQL): as SQLite's 0016_smaller_file, the
-- vectors' generation per namespace. A deleted or replaced vector bumps its namespace's row,
-- not one remd_meta row for every namespace: writers of different namespaces no longer wait
-- on each other's row lock, and only that namespace's bit indexes reload.

CREATE TABLE vec_generations (
    namespace  text PRIMARY KEY,
    generation bigint NOT NULL
);

CREATE OR REPLACE FUNCTION remd_vec_generation() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO vec_generations (namespace, generation) VALUES (OLD.namespace, 1)
    ON CONFLICT (namespace) DO UPDATE SET generation = vec_generations.generation + 1;
    IF TG_OP = 'UPDATE' AND NEW.namespace IS DISTINCT FROM OLD.namespace THEN
        INSERT INTO vec_generations (namespace, generation) VALUES (NEW.namespace, 1)
        ON CONFLICT (namespace) DO UPDATE SET generation = vec_generations.generation + 1;
    END IF;
    RETURN NULL;
END $$;

DELETE FROM remd_meta WHERE key = 'vec_generation';
