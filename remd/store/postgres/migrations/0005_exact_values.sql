-- remd migration 0005_exact_values (PostgreSQL): as SQLite's 0013_exact_values. LangGraph store
-- items saved before it (source 'lg:KEY' in the namespace 'lg' or 'lg.*') are kept exact:
-- judged = 2 (remd.models.Judged.EXACT), never judged, superseded or folded by REM.

UPDATE nodes SET judged = 2
WHERE substr(source, 1, 3) = 'lg:' AND (namespace = 'lg' OR substr(namespace, 1, 3) = 'lg.')
  AND kind = 'episodic' AND rem_run IS NULL;
