"""The ``remd tags`` commands: the tag graph (remd.write.tagtools), registered on the group by
:mod:`remd.cli.main`."""

from __future__ import annotations

import click

from remd.cli.context import Ctx, pass_ctx
from remd.models import MAX_SQL_INTEGER


@click.group()
def tags() -> None:
    """The tag graph: export it, rename, merge and arrange tags."""


@tags.command("export")
@click.option("--format", "fmt", type=click.Choice(["dot", "json"]), default="json",
              show_default=True)
@click.option("--max-edges", type=click.IntRange(0, MAX_SQL_INTEGER), default=None,
              help="Only the strongest N co-occurrence edges.")
@pass_ctx
def tags_export(c: Ctx, fmt: str, max_edges: int | None) -> None:
    """Print the namespace's tag graph (Graphviz DOT or JSON)."""
    with c.memory(embedder=None) as m:
        click.echo(m.export_tag_graph(fmt, max_edges=max_edges), nl=False)  # type: ignore[arg-type]


@tags.command("rename")
@click.argument("old")
@click.argument("new")
@pass_ctx
def tags_rename(c: Ctx, old: str, new: str) -> None:
    """Rename tag OLD to NEW."""
    with c.memory(embedder=None) as m:
        click.echo(m.rename_tag(old, new))


@tags.command("merge")
@click.argument("src")
@click.argument("dst")
@pass_ctx
def tags_merge(c: Ctx, src: str, dst: str) -> None:
    """Fold tag SRC into DST (SRC is deleted)."""
    with c.memory(embedder=None) as m:
        click.echo(m.merge_tags(src, dst))


@tags.command("subtype")
@click.argument("child")
@click.argument("parent")
@pass_ctx
def tags_subtype(c: Ctx, child: str, parent: str) -> None:
    """Record CHILD IS_SUBTYPE_OF PARENT (refused if it makes a cycle)."""
    with c.memory(embedder=None) as m:
        m.add_subtype(child, parent)
        click.echo(f"{child} IS_SUBTYPE_OF {parent}")
