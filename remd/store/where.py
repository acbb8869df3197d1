"""Where a store is, as a path or URL names it: whether it is a PostgreSQL database's URL
(else a SQLite file's path), and how messages and logs may show it (a URL without its
password). Shared by both stores, the backup and every front end."""

from __future__ import annotations

URL_PREFIXES = ("postgresql://", "postgres://")


def is_url(path: object) -> bool:
    """Whether ``path`` names a PostgreSQL database rather than a SQLite file."""
    return isinstance(path, str) and path.startswith(URL_PREFIXES)


def shown(path: object) -> str:
    """``path`` as messages and logs may show it: a URL without its password."""
    return redact(path) if isinstance(path, str) and is_url(path) else str(path)


def redact(url: str) -> str:
    """The URL without its password, for messages and logs: user, host, port (when the URL
    gives one) and database; a unix socket directory stays a ``host=`` parameter."""
    import psycopg.conninfo

    try:
        params = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.Error:
        return url.split("@")[-1]
    host, port = str(params.get("host", "")), params.get("port")
    if host.startswith("/"):
        where, query = "", f"?host={host}" + (f"&port={port}" if port else "")
    else:
        where, query = host + (f":{port}" if port else ""), ""
    return f"postgresql://{params.get('user', '')}@{where}/{params.get('dbname', '')}{query}"
