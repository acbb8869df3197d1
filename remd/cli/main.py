"""The ``remd`` command: parse, call one library function, print.

Exit codes: 0 success, 1 a RemdError (one line on stderr, no traceback), 2 usage errors,
141 (as if killed by SIGPIPE, silently) when the reader of stdout went away.
"""

from __future__ import annotations

import contextlib
import errno
import math
import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import click

from remd.checks import check_source, check_text, check_time
from remd.cli.backup import backup
from remd.cli.context import Ctx, echo_json, pass_ctx
from remd.cli.reembed import reembed
from remd.cli.rem import rollback, run_rem_cmd, triggers
from remd.cli.tags import tags
from remd.errors import InvalidInput, RemdError, first_line
from remd.logs import configure_logging
from remd.models import MAX_SQL_INTEGER
from remd.query.contradictions import MAX_CONTRADICTIONS
from remd.text.tagnames import check_tags
from remd.wire import node_to_dict, pair_to_dict
from remd.write.exchange import read_lines

F = TypeVar("F", bound=Callable[..., Any])

MAX_INTERVAL = 7 * 86400.0  # seconds: the longest gap between the daemon's trigger checks
SIGPIPE_EXIT = 141  # 128 + SIGPIPE: what a shell reports for a tool whose reader went away


def _quiet_stdout() -> None:
    """Point the stdout descriptor at /dev/null, so the final flush at exit neither fails nor
    prints "Exception ignored ... BrokenPipeError"."""
    with contextlib.suppress(OSError, ValueError):  # no descriptor (a test runner's stream)
        fd = sys.stdout.fileno()
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, fd)
        finally:
            os.close(devnull)


class RemdGroup(click.Group):
    """Turns every RemdError raised by a command into a one-line message and exit 1, and a
    closed stdout (``remd export | head -1``) into a quiet exit 141."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            result = super().invoke(ctx)
            sys.stdout.flush()
            return result
        except RemdError as exc:
            raise click.ClickException(first_line(exc)) from exc
        except OSError as exc:
            if exc.errno != errno.EPIPE:
                raise
            _quiet_stdout()
            raise click.exceptions.Exit(SIGPIPE_EXIT) from exc


# A path, unchecked: that a file is missing, unreadable or a directory is the command's runtime
# error (exit 1, one line), not a usage error.
_PATH = click.Path(readable=False)


def _not_empty(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A path option given as '' is a usage error (it would silently mean the default)."""
    if value is not None and not value.strip():
        raise click.BadParameter("must not be empty")
    return value


def _finite(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    if value is not None and not math.isfinite(value):
        raise click.BadParameter(f"{value} is not a finite number")
    return value


def _line(text: str, width: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


class _Stderr:
    """sys.stderr looked up at each write, so a log call made after a test runner swapped the
    stream (click's CliRunner) never writes to a closed one."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()

    def isatty(self) -> bool:
        return sys.stderr.isatty()


@click.group(cls=RemdGroup)
@click.option("--db", "db", type=_PATH, default=None, callback=_not_empty,
              metavar="FILE|URL",
              help="SQLite file, or a postgresql:// URL (default: $REMD_DB, else ./remd.db).")
@click.option("--namespace", "namespace", default="default", show_default=True,
              envvar="REMD_NAMESPACE", help="Namespace every command works in.")
@click.option("--config", "config_path", type=_PATH, default=None,
              envvar="REMD_CONFIG", callback=_not_empty, help="TOML config file.")
@click.version_option(package_name="remd")
@click.pass_context
def main(ctx: click.Context, db: str | None, namespace: str, config_path: str | None) -> None:
    """remd: long-term memory for LLM agents, in one SQLite file or a PostgreSQL database
    (--db postgresql://...)."""
    ctx.obj = Ctx(db or os.environ.get("REMD_DB") or "remd.db", namespace, config_path)
    if ctx.invoked_subcommand not in ("serve", "mcp"):  # they configure their own logs
        # stdout carries results only: warnings (an embedder down, ...) go to stderr.
        configure_logging("console", "warning", stream=_Stderr())  # type: ignore[arg-type]


@main.command()
@pass_ctx
def init(c: Ctx) -> None:
    """Create (or upgrade) the database file."""
    with c.memory(create=True, embedder=None) as m:
        click.echo(f"{m.store.where}: schema version {m.store.schema_version()}")


@contextlib.contextmanager
def progress(total: int | None, label: str) -> Iterator[Callable[[int], None]]:
    """A progress bar on stderr when it is a terminal; a no-op callback otherwise."""
    if total is None or not sys.stderr.isatty():
        yield lambda n: None
        return
    with click.progressbar(length=total, label=label, file=sys.stderr) as bar:
        yield bar.update


def _stdin_lines(c: Ctx) -> list[str]:
    """The memories of ``save -``: stdin's non-blank lines, each checked. Raises InvalidInput
    naming the line, numbered from 1 over all lines as ``import`` does."""
    limit = c.config.store.max_content_chars
    texts = []
    for number, raw in enumerate(sys.stdin.buffer.read().splitlines(), 1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInput(f"line {number}: not valid UTF-8") from exc
        if not line.strip():
            continue
        try:
            check_text(line, limit)
        except InvalidInput as exc:
            raise InvalidInput(f"line {number}: {exc}") from exc
        texts.append(line)
    return texts


@main.command()
@click.argument("text")
@click.option("--tag", "tags", multiple=True, help="Extra tag (repeatable).")
@click.option("--source", default=None, help="Where the memory came from.")
@click.option("--at", default=None, metavar="ISO8601",
              help="When it was said (as an import line's created_at); default now.")
@pass_ctx
def save(c: Ctx, text: str, tags: tuple[str, ...], source: str | None,
         at: str | None) -> None:
    """Save TEXT and print its id; TEXT '-' reads one memory per line from stdin."""
    tag_list = list(tags) or None
    check_tags(tag_list)  # the input is checked before the file is opened (or created)
    check_source(source)
    check_time(at, "created_at", time.time())
    lines = _stdin_lines(c) if text == "-" else None
    if lines is None:
        check_text(text, c.config.store.max_content_chars)
    with c.memory(create=True) as m:
        if lines is None:
            click.echo(m.save(text, tag_list, source, created_at=at).id)
            return
        with progress(len(lines), "saving") as tick:
            ids = m.save_many(lines, tags=tag_list, source=source, created_at=at, embed=False,
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
        links = m.links(node_id)
    if as_json:  # the fields of export, and the typed edges touching it
        echo_json(node_to_dict(node) | {"links": _link_dicts(links)})
        return
    d = node_to_dict(node)
    for key in ("id", "kind", "status", "created_at", "tags", "confidence", "importance",
                "source", "valid_from", "valid_until", "deprecated_by"):
        value = ", ".join(d[key]) if key == "tags" else d[key]
        if value not in (None, ""):
            click.echo(f"{key}: {value}")
    for line in _link_lines(node_id, links):
        click.echo(line)
    click.echo(node.content)


_LINK_WORDS = {  # (this memory is the edge's source, its target)
    "SUPERSEDES": ("updates", "updated by"),
    "CONTRADICTS": ("probably updates", "probably updated by"),
    "DERIVED_FROM": ("derived from", "folded into"),
}


def _link_dicts(links: list[Any]) -> list[dict[str, Any]]:
    return [{"src": e.src, "dst": e.dst, "type": e.type.value, "weight": e.weight,
             "context": e.context} for e in links]


def _link_lines(node_id: str, links: list[Any]) -> list[str]:
    """What a memory updates, what updated it and what a synthesis came from."""
    out = []
    for e in links:
        words = _LINK_WORDS.get(e.type.value)
        if words is None:
            continue
        mine = e.src == node_id
        other = e.dst if mine else e.src
        why = f" ({e.weight:g}: {e.context})" if e.context else ""
        out.append(f"{words[0] if mine else words[1]}: {other}{why}")
    return out


def _print_nodes(nodes: list[Any], as_json: bool) -> None:
    if as_json:
        echo_json([node_to_dict(n) for n in nodes])
        return
    for n in nodes:
        mark = "" if n.status.value == "live" else f" [{n.status.value}]"
        click.echo(f"{n.id}  {node_to_dict(n)['created_at'][:19]}  {_line(n.content)}{mark}")


@main.command()
@click.option("-n", "n", type=click.IntRange(0, MAX_SQL_INTEGER), default=10, show_default=True)
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
    """The SUPERSEDES chain through a memory, oldest first, and what a synthesis came from."""
    with c.memory(embedder=None) as m:
        nodes = m.history(node_id)
        links = {n.id: m.links(n.id) for n in nodes}
    if as_json:  # the fields of export, and (as get) the typed edges touching each
        echo_json([node_to_dict(n) | {"links": _link_dicts(links[n.id])} for n in nodes])
        return
    _print_nodes(nodes, False)
    for n in nodes:
        for line in _link_lines(n.id, links[n.id]):
            click.echo(f"  {n.id} {line}")


@main.command()
@click.option("--topic", default=None, help="Only pairs about it (a tag of it, or a word).")
@click.option("--id", "memory_id", default=None, help="Only pairs touching this memory.")
@click.option("--limit", type=click.IntRange(1, MAX_CONTRADICTIONS), default=20,
              show_default=True)
@click.option("--json", "as_json", is_flag=True)
@pass_ctx
def contradictions(c: Ctx, topic: str | None, memory_id: str | None, limit: int,
                   as_json: bool) -> None:
    """Live memories that disagree (probably an update), newest first."""
    with c.memory(embedder=None) as m:
        pairs = m.contradictions(memory_id, topic, limit)
    if as_json:  # the shape of GET /v1/contradictions and MCP's find_contradictions
        echo_json({"contradictions": [pair_to_dict(*p) for p in pairs]})
        return
    for newer, older, weight, context in pairs:
        why = f" ({weight:g}: {context})" if context else f" ({weight:g})"
        click.echo(f"{newer.id}  {_line(newer.content)}")
        click.echo(f"  {_LINK_WORDS['CONTRADICTS'][0]} {older.id}{why}  {_line(older.content)}")


@main.command()
@click.argument("node_id")
@pass_ctx
def restore(c: Ctx, node_id: str) -> None:
    """Undo a decision that a memory was updated: live again, never decided again."""
    with c.memory(embedder=None) as m:
        result = m.restore(node_id)
    click.echo(f"restored {result.id} (was {result.status_before}; "
               f"{result.edges_retired} decision(s) undone: {', '.join(result.by) or '-'})")


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
        echo_json(s)
        return
    for key, value in s.items():
        if key != "by_kind":
            click.echo(f"{key}: {value}")


@main.command("export")
@pass_ctx
def export_cmd(c: Ctx) -> None:
    """Write the namespace as JSON lines to stdout."""
    with c.memory(embedder=None) as m:
        for line in m.export_lines():
            click.echo(line)


@main.command("import")
@click.argument("file", type=click.File("r", encoding="utf-8"))
@pass_ctx
def import_cmd(c: Ctx, file: Any) -> None:
    """Read JSON lines (from `remd export`, or your own) from FILE or '-'."""
    # Checked before the database is opened: a refused import leaves no new file behind.
    batch = read_lines(file, c.config, time.time())
    with c.memory(create=True) as m:
        result = m.import_lines(batch)
    click.echo(f"imported {result.imported}, skipped {result.skipped} already present, "
               f"{result.edges} edges")


# -- importance, triggers and REM (remd.cli.rem) -------------------------------------------------
main.add_command(triggers)
main.add_command(run_rem_cmd)
main.add_command(rollback)


# -- long-running front ends (remd.service.daemon, remd.mcp.server) --------------------------------
@main.command()
@click.option("--config", "serve_config", type=_PATH, default=None,
              callback=_not_empty,
              help="TOML config file (overrides the group's --config / $REMD_CONFIG).")
@click.option("--interval", type=click.FloatRange(min=0, max=MAX_INTERVAL, min_open=True),
              default=None, callback=_finite,
              help="Seconds between trigger checks (daemon.interval_seconds, default 60).")
@click.option("--http", "http", default=None, metavar="HOST:PORT",
              help="Also serve the HTTP API here (daemon.http), e.g. 127.0.0.1:8765.")
@pass_ctx
def serve(c: Ctx, serve_config: str | None, interval: float | None, http: str | None) -> None:
    """Run the consolidation daemon (all namespaces) until SIGTERM; SIGHUP reloads config."""
    from remd.http.app import http_server
    from remd.service.daemon import serve as run_daemon

    daemon: dict[str, Any] = {}
    if interval is not None:
        daemon["interval_seconds"] = interval
    if http is not None:
        daemon["http"] = http
    code = run_daemon(c.db, config_path=serve_config or c.config_path,
                      overrides={"daemon": daemon} if daemon else {}, namespace=c.namespace,
                      http=http_server)
    sys.exit(code)


@main.command()
@pass_ctx
def mcp(c: Ctx) -> None:
    """Serve the memory as MCP tools on stdin/stdout (for MCP clients)."""
    from remd.mcp.server import run_stdio

    sys.exit(run_stdio(c.db, c.config, c.namespace))


# -- inject and feedback (remd.query.inject, remd.query.feedback) ----------------------------------
@main.command()
@click.argument("query")
@click.option("--budget", type=int, required=True, help="Hard token limit of the pack.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object (pack_id, items, ...).")
@click.option("--explain", is_flag=True,
              help="Score parts and activation path of each item, and why the pack stopped.")
@click.option("--fill", is_flag=True,
              help="Pack to the budget instead of stopping at the relevance floor.")
@click.option("--dated/--undated", default=None,
              help="Write each item's date before it (relative dates resolved), in the budget; "
                   "default: only when the question asks when.")
@pass_ctx
def inject(c: Ctx, query: str, budget: int, as_json: bool, explain: bool, fill: bool,
           dated: bool | None) -> None:
    """The memories that matter for QUERY, within --budget tokens: best first, stopping where
    relevance falls off (--fill: up to the budget; --dated: with their dates, which a question
    that asks when gets unless --undated)."""
    from remd.query.pack import explain as explain_lines

    with c.memory() as m:
        pack = m.inject(query, budget, fill=fill, dated=dated)
    if as_json:  # --explain adds its lines under "explain"; the default shape is unchanged
        echo_json(pack.to_dict() | ({"explain": list(explain_lines(pack))} if explain else {}))
    elif explain:
        for line in explain_lines(pack):
            click.echo(line)
    else:
        click.echo(f"pack {pack.pack_id}: {len(pack.items)} item(s), "
                   f"{pack.tokens_used}/{pack.budget} tokens", err=True)
        if pack.items:
            click.echo(pack.text)


@main.command()
@click.argument("pack_id")
@click.option("--accept", is_flag=True, help="The pack helped (this or --reject).")
@click.option("--reject", is_flag=True, help="The pack did not help.")
@pass_ctx
def feedback(c: Ctx, pack_id: str, accept: bool, reject: bool) -> None:
    """Learn from a pack: move the tag edges that built it towards accept or reject."""
    if accept == reject:
        raise click.UsageError("--accept and --reject exclude each other" if accept
                               else "give --accept or --reject")
    with c.memory(embedder=None) as m:
        result = m.feedback(pack_id, accept)
    if result.applied:
        click.echo(f"feedback recorded for {pack_id}: {result.edges_updated} tag edge(s) moved")
    else:
        click.echo(f"feedback for {pack_id} was already recorded; nothing changed")


@main.command()
@click.option("--json", "as_json", is_flag=True)
@pass_ctx
def compact(c: Ctx, as_json: bool) -> None:
    """Rewrite the SQLite file packed (VACUUM), e.g. after a bulk import: writers wait."""
    started = time.monotonic()
    with c.memory(embedder=None) as m:
        before, after = m.compact()
    seconds = round(time.monotonic() - started, 3)
    if as_json:
        echo_json({"bytes_before": before, "bytes_after": after, "seconds": seconds})
        return
    click.echo(f"{_size(before)} -> {_size(after)} in {seconds:.1f} s"
               + (" (larger: the query planner's statistics were added to the file)"
                  if after > before else ""))


def _size(n: int) -> str:
    """A file size a person reads right: kB under a megabyte, then MB, then GB."""
    if n < 1_000_000:
        return f"{n / 1e3:.0f} kB"
    return f"{n / 1e6:.1f} MB" if n < 1_000_000_000 else f"{n / 1e9:.2f} GB"


# -- the tag graph (remd.cli.tags) ----------------------------------------------------------------
main.add_command(tags)


# -- online backup (remd.cli.backup) ---------------------------------------------------------------
main.add_command(backup)


# -- moving to another embedder (remd.cli.reembed) -------------------------------------------------
main.add_command(reembed)
