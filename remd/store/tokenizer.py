"""The lexical index's tokenizer, shared by both stores: SQLite's FTS5 porter over unicode61
(schema.sql's ``node_fts``), which the PostgreSQL store runs in process on an in-memory apsw
connection, so both index and query the same terms."""

from __future__ import annotations

from typing import Any

import apsw

# The lexical index's tokenizer: porter over unicode61, as schema.sql's node_fts. PostgreSQL
# tokenises with the same one (remd/store/postgres/search.py).
TOKENIZER = ("porter", ["unicode61", "remove_diacritics", "2"])


def tokens(owner: apsw.Connection, utf8: bytes, *, query: bool) -> list[tuple[Any, ...]]:
    """The tokens (start, end, stem, ...) of ``utf8`` by :data:`TOKENIZER` of ``owner``."""
    flags = apsw.FTS5_TOKENIZE_QUERY if query else apsw.FTS5_TOKENIZE_DOCUMENT
    found: list[Any] = list(owner.fts5_tokenizer(*TOKENIZER)(utf8, flags, None))
    return found
