-- remd migration 0007_synthesis_clauses (PostgreSQL): as SQLite's 0015_synthesis_clauses. A
-- synthesis's dated clauses, JSON (remd.text.clauses); NULL for a memory.

ALTER TABLE nodes ADD COLUMN clauses text;
-- How many recent questions kept their first item after a run (remd.sleep.usefulness), JSON.
ALTER TABLE rem_runs ADD COLUMN usefulness text;
