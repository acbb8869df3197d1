"""The namespaces of a file with their memory counts (engine level: a store, no facade)."""

from __future__ import annotations

from dataclasses import dataclass

from remd.errors import InvalidInput, quote
from remd.store.seam import Store

__all__ = ["NamespaceCount", "namespace_counts"]


@dataclass(frozen=True, kw_only=True)
class NamespaceCount:
    namespace: str
    memories: int  # every status
    live: int


def namespace_counts(store: Store, limit: int = 1000) -> list[NamespaceCount]:
    """The first ``limit`` namespaces holding memories, by name, with their counts: one scan
    of the ``(namespace, status, rid)`` index. Raises InvalidInput for a bad ``limit``."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 0 <= limit <= 100_000:
        raise InvalidInput(f"limit must be an integer from 0 to 100000, not {quote(limit)}")
    counts: dict[str, list[int]] = {}
    for ns, status, n in store.query(
            "SELECT namespace, status, count(*) FROM nodes WHERE namespace IN "
            "(SELECT DISTINCT namespace FROM nodes ORDER BY namespace LIMIT ?) "
            "GROUP BY namespace, status ORDER BY namespace", (limit,)):
        both = counts.setdefault(str(ns), [0, 0])
        both[0] += int(n)
        if status == "live":
            both[1] += int(n)
    return [NamespaceCount(namespace=ns, memories=m, live=live)
            for ns, (m, live) in counts.items()]
