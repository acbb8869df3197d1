"""Which store a path opens: a SQLite file (:mod:`remd.store.sqlite.store`) or the PostgreSQL
database a ``postgresql://`` URL names (:mod:`remd.store.postgres.store`); both are a
:class:`remd.store.seam.Store`.

Above both stores, so neither imports the other to choose.
"""

from __future__ import annotations

from pathlib import Path

from remd.config import StoreConfig
from remd.store.postgres.store import PgStore
from remd.store.seam import Store
from remd.store.sqlite.store import Store as SqliteStore
from remd.store.where import is_url


def open_store(path: str | Path, config: StoreConfig, *, create: bool = True) -> Store:
    """The store of ``path``: a SQLite file, or the PostgreSQL database a ``postgresql://``
    URL names (remd/store/postgres/store.py)."""
    if is_url(path):
        return PgStore(str(path), config, create=create)
    return SqliteStore(path, config, create=create)
