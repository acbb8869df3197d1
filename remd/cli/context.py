"""What every ``remd`` command shares: the context of the group's options (:class:`Ctx`, handed
to a command by :data:`pass_ctx`) and how results are printed as JSON."""

from __future__ import annotations

import json
from typing import Any

import click

from remd.config import Config, load_config
from remd.memory import Memory
from remd.wire import iso


class Ctx:
    def __init__(self, db: str, namespace: str, config_path: str | None) -> None:
        self.db = db
        self.namespace = namespace
        self.config_path = config_path
        self._config: Config | None = None

    @property
    def config(self) -> Config:
        if self._config is None:
            self._config = load_config(self.config_path)
        return self._config

    def memory(self, *, create: bool = False, **kwargs: Any) -> Memory:
        """The Memory of the command. Only commands that create the file (``create``) may
        open one that does not exist: a typo in --db is an error, not a new empty file, and
        an empty file stays empty (the store says "no such database", for a missing file, an
        empty one, or a PostgreSQL database without remd's tables). A bad --config is
        reported first."""
        config = self.config
        return Memory(self.db, self.namespace, config=config, create=create, **kwargs)


pass_ctx = click.make_pass_decorator(Ctx)


def echo_json(obj: Any) -> None:
    click.echo(json.dumps(obj, ensure_ascii=False))


def iso_fields(obj: dict[str, Any], *keys: str) -> dict[str, Any]:
    """``obj`` with the POSIX times under ``keys`` as ISO 8601 UTC strings (as export writes)."""
    return obj | {key: iso(obj[key]) for key in keys if key in obj}
