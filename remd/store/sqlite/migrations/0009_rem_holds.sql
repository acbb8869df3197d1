-- remd migration 0009_rem_holds: a rollback holds its clusters' members back from later runs.
--
-- Without it the daemon redid a rolled-back run at its next tick: the members were weak again,
-- and a trigger (idle, node count) still fired. A hold lasts rem.hold_days from the rollback,
-- or until the member changes: its fingerprint (status, confidence, access count, last access,
-- valid_until: what people and agents change about a memory; content never changes) is
-- recorded after the rollback restored it, and a memory whose fingerprint differs is free
-- again (remd/holds.py). rem_runs.held counts the memories a run left out for a hold.

CREATE TABLE rem_holds (
    namespace   TEXT NOT NULL,
    node_id     TEXT NOT NULL,
    run_id      TEXT NOT NULL,   -- the rolled-back run
    held_at     REAL NOT NULL,
    held_until  REAL NOT NULL,
    fingerprint TEXT NOT NULL,
    PRIMARY KEY (namespace, node_id)
) WITHOUT ROWID;

ALTER TABLE rem_runs ADD COLUMN held INTEGER NOT NULL DEFAULT 0;
