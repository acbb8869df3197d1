-- remd migration 0012_update_judged: whether update detection has judged a memory, and why a
-- REM run flagged what it flagged.
--
-- A memory saved in everyday words may update an older one ("these days I take the U-Bahn"
-- after "I ride my bike to work"). remd/supersede.py judges a new memory against the live ones
-- when its vector is written (remd/backlog.py, in the same transaction), or at save when the
-- engine has no embedder. judged = 0 until then, so a process that stops between the save and
-- its vector leaves the memory to be judged with the embedding backlog. Memories saved before
-- this migration, restored by an import with their status, and REM's syntheses are not judged
-- (1).

ALTER TABLE nodes ADD COLUMN judged INTEGER NOT NULL DEFAULT 1;
CREATE INDEX nodes_unjudged ON nodes (namespace, rid) WHERE judged = 0;
-- Why a REM run left live memories unflagged (too young, important enough, held, ...),
-- as a JSON object of counts: run-rem says why nothing was flagged.
ALTER TABLE rem_runs ADD COLUMN unflagged TEXT
