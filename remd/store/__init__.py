"""The store: a SQLite file (``sqlite/``) or a PostgreSQL database (``postgres/``) behind one seam
(``seam.py``), with what both share (``base.py``: the flow of connections, transactions,
snapshots and migrations; ``reads.py``, ``quantisation.py``, ``tokenizer.py``, ``where.py``).
Imports only the base layer.

This is its public face: the rest of remd imports ``remd.store`` and ``remd.store.seam`` only,
never a backend or a helper module (tests/suites/test_house.py checks it).
"""

from remd.store.backends import open_store
from remd.store.quantisation import DIM, F32, from_int8, quantise, to_int8, words
from remd.store.reads import in_reads, int_scalar, rows_in
from remd.store.seam import Connection, Match, Read, Store
from remd.store.sqlite.backup import BackupReport, CheckReport, Copy, backup_file, check_backup
from remd.store.where import is_url, shown

__all__ = [
    "DIM", "F32", "BackupReport", "CheckReport", "Connection", "Copy", "Match", "Read", "Store",
    "backup_file", "check_backup", "from_int8", "in_reads", "int_scalar", "is_url",
    "open_store", "quantise", "rows_in", "shown", "to_int8", "words",
]
