-- remd migration 0002_update_judged (PostgreSQL): as SQLite's 0012_update_judged. Whether
-- update detection (remd/supersede.py) has judged a memory; 0 until its vector is written.

ALTER TABLE nodes ADD COLUMN judged integer NOT NULL DEFAULT 1;
CREATE INDEX nodes_unjudged ON nodes (namespace, rid) WHERE judged = 0;
-- Why a REM run left live memories unflagged, as a JSON object of counts.
ALTER TABLE rem_runs ADD COLUMN unflagged text;
