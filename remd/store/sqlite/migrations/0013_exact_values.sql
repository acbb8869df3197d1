-- remd migration 0013_exact_values: LangGraph store items saved before it are kept exact.
--
-- A value put through remd.langgraph.RemdStore is returned by get byte for byte, so it is
-- never read as a fact, never an update's older side and never folded by a REM run: it is
-- saved with judged = 2 (remd.models.Judged.EXACT). Items saved before this migration were
-- plain episodic memories (judged = 1): the ones the adapter wrote (source 'lg:KEY' in the
-- namespace 'lg' or 'lg.*', never a synthesis) are marked exact, whatever their status, so an
-- item a run folded and a rollback brings back is not folded again. No schema change.

UPDATE nodes SET judged = 2
WHERE substr(source, 1, 3) = 'lg:' AND (namespace = 'lg' OR substr(namespace, 1, 3) = 'lg.')
  AND kind = 'episodic' AND rem_run IS NULL;
