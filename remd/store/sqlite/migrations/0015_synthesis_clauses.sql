-- remd migration 0015_synthesis_clauses: a synthesis as a bundle of dated clauses.
--
-- A REM synthesis keeps which clause came from which member and when (remd.text.clauses, as
-- JSON): inject packs its subject and the clauses a question needs instead of the whole text,
-- and a later update of one value retires the clause that holds it. NULL for a memory, and for
-- a synthesis written before this migration (packed whole, as before).

ALTER TABLE nodes ADD COLUMN clauses TEXT;
-- After a run that folded something, its namespace's recent questions are asked again: how
-- many kept their first item (remd.sleep.usefulness), as JSON.
ALTER TABLE rem_runs ADD COLUMN usefulness TEXT;
