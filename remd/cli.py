"""The ``remd`` command: parse, call one library function, print.

Exit codes: 0 success, 1 a RemdError (one line on stderr, no traceback), 2 usage errors.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import click

from remd.config import Config, load_config
from remd.errors import RemdError
from remd.exchange import export_lines, import_lines, node_to_dict
from remd.memory import Memory

F = TypeVar("F", bound=Callable[..., Any])


class RemdGroup(click.Group):
    """Turns every RemdError raised by a command into a one-line message and exit 1."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except RemdError as exc:
            raise click.ClickException(str(exc).splitlines()[0] if str(exc) else
                                       type(exc).__name__) from exc


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

    def memory(self, **kwargs: Any) -> Memory:
        return Memory(self.db, self.namespace, config=self.config, **kwargs)


pass_ctx = click.make_pass_decorator(Ctx)


def _echo_json(obj: Any) -> None:
    click.echo(json.dumps(obj, ensure_ascii=False))


def _line(text: str, width: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


@click.group(cls=RemdGroup)
@click.option("--db", "db", type=click.Path(dir_okay=False), default=None,
              help="Database file (default: $REMD_DB, else ./remd.db).")
@click.option("--namespace", "namespace", default="default", show_default=True,
              envvar="REMD_NAMESPACE", help="Namespace every command works in.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), default=None,
              envvar="REMD_CONFIG", help="TOML config file.")
@click.version_option(package_name="remd")
@click.pass_context
def main(ctx: click.Context, db: str | None, namespace: str, config_path: str | None) -> None:
    """remd: long-term memory for LLM agents in one SQLite file."""
    ctx.obj = Ctx(db or os.environ.get("REMD_DB") or "remd.db", namespace, config_path)


@main.command()
@pass_ctx
def init(c: Ctx) -> None:
    """Create (or upgrade) the database file."""
    with c.memory(embedder=None) as m:
        click.echo(f"{m.store.path}: schema version {m.store.schema_version()}")


@contextlib.contextmanager
def progress(total: int | None, label: str) -> Iterator[Callable[[int], None]]:
    """A progress bar on stderr when it is a terminal; a no-op callback otherwise."""
    if total is None or not sys.stderr.isatty():
        yield lambda n: None
        return
    with click.progressbar(length=total, label=label, file=sys.stderr) as bar:
        yield bar.update


@main.command()
@click.argument("text")
@click.option("--tag", "tags", multiple=True, help="Extra tag (repeatable).")
@click.option("--source", default=None, help="Where the memory came from.")
@pass_ctx
def save(c: Ctx, text: str, tags: tuple[str, ...], source: str | None) -> None:
    """Save TEXT and print its id; TEXT '-' reads one memory per line from stdin."""
    with c.memory() as m:
        if text != "-":
            click.echo(m.save(text, list(tags) or None, source).id)
            return
        lines = [ln for ln in sys.stdin.read().splitlines() if ln.strip()]
        with progress(len(lines), "saving") as tick:
            ids = m.save_many(lines, tags=list(tags) or None, source=source, embed=False,
                              progress=tick)
        with progress(len(ids), "embedding") as tick:
            m.embed_pending(progress=tick)
        for node_id in ids:
            click.echo(node_id)


@main.command()
@click.argument("node_id")
@click.option("--json", "as_json", is_flag=True)
@pass_ctx
def get(c: Ctx, node_id: str, as_json: bool) -> None:
    """Show one memory."""
    with c.memory(embedder=None) as m:
        node = m.get(node_id)
    if as_json:
        _echo_json(node_to_dict(node))
        return
    d = node_to_dict(node)
    for key in ("id", "kind", "status", "created_at", "tags", "confidence", "importance",
                "source", "valid_from", "valid_until", "deprecated_by"):
        value = ", ".join(d[key]) if key == "tags" else d[key]
        if value not in (None, ""):
            click.echo(f"{key}: {value}")
    click.echo(node.content)


def _print_nodes(nodes: list[Any], as_json: bool) -> None:
    if as_json:
        _echo_json([node_to_dict(n) for n in nodes])
        return
    for n in nodes:
        mark = "" if n.status.value == "live" else f" [{n.status.value}]"
        click.echo(f"{n.id}  {node_to_dict(n)['created_at'][:19]}  {_line(n.content)}{mark}")


@main.command()
@click.option("-n", "n", type=click.IntRange(min=0), default=10, show_default=True)
@click.option("--json", "as_json", is_flag=True)
@pass_ctx
def recent(c: Ctx, n: int, as_json: bool) -> None:
    """The most recent live memories."""
    with c.memory(embedder=None) as m:
        _print_nodes(m.recent(n), as_json)


@main.command()
@click.argument("node_id")
@click.option("--json", "as_json", is_flag=True)
@pass_ctx
def history(c: Ctx, node_id: str, as_json: bool) -> None:
    """The SUPERSEDES chain through a memory, oldest first."""
    with c.memory(embedder=None) as m:
        _print_nodes(m.history(node_id), as_json)


@main.command()
@click.argument("node_id")
@pass_ctx
def forget(c: Ctx, node_id: str) -> None:
    """Soft-delete a memory (kept in the file, never injected again)."""
    with c.memory(embedder=None) as m:
        click.echo(m.forget(node_id).id)


@main.command()
@click.option("--json", "as_json", is_flag=True)
@pass_ctx
def stats(c: Ctx, as_json: bool) -> None:
    """Counts for the namespace."""
    from dataclasses import asdict

    with c.memory(embedder=None) as m:
        s = asdict(m.stats())
    if as_json:
        _echo_json(s)
        return
    for key, value in s.items():
        if key != "by_kind":
            click.echo(f"{key}: {value}")


@main.command("export")
@pass_ctx
def export_cmd(c: Ctx) -> None:
    """Write the namespace as JSON lines to stdout."""
    with c.memory(embedder=None) as m:
        for line in export_lines(m):
            click.echo(line)


@main.command("import")
@click.argument("file", type=click.File("r", encoding="utf-8"))
@pass_ctx
def import_cmd(c: Ctx, file: Any) -> None:
    """Read JSON lines (from `remd export`, or your own) from FILE or '-'."""
    with c.memory() as m:
        result = import_lines(m, file)
    click.echo(f"imported {result.imported}, skipped {result.skipped} already present, "
               f"{result.edges} edges")
