"""The SQLite store: one file through apsw with sqlite-vec (``store.py``), its side of the
dialect (``dialect.py``), the WAL's checkpoints and files (``checkpoints.py``, ``walfiles.py``),
resident pages (``resident.py``), the schema and its named migrations (``schema.py``,
``migrations/``) and the online backup (``backup.py``). Only :mod:`remd.store` imports it."""
