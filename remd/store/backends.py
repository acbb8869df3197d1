"""Which store a path opens: a SQLite file (:mod:`remd.store.sqlite`) or the PostgreSQL database a
``postgresql://`` URL names (:mod:`remd.store.postgres`, which offers the same interface).

Above both stores, so neither imports the other to choose.
"""

from __future__ import annotations

from pathlib import Path
from typing import cast

from remd.config import StoreConfig
from remd.store.postgres import PgStore, is_url
from remd.store.sqlite import Store


def open_store(path: str | Path, config: StoreConfig, *, create: bool = True) -> Store:
    """The store of ``path``: a SQLite file, or the PostgreSQL database a ``postgresql://``
    URL names (remd/store/postgres.py, which offers the same interface)."""
    if is_url(path):
        return cast(Store, PgStore(str(path), config, create=create))
    return Store(path, config, create=create)
