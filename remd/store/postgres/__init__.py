"""The PostgreSQL store: the pooled store (``store.py``), reaching the server (``connect.py``),
the connection that speaks the engine's SQLite dialect to it (``connection.py``, through the
translator ``translate.py``), the per-namespace write locks (``locks.py``), full text and
vectors in process (``search.py``) and its named migrations (``migrations/``). Only
:mod:`remd.store` imports it."""
